/*
 * hutch/session.h - named, persistent sandboxes
 *
 * A session is a name.  Its container ("hutch-NAME") is made the first time
 * a command needs it: entry point that sleeps forever under an init, no
 * network, working directory /workspace, and a workspace mounted there.  The
 * workspace is the host directory the caller gave (bind mount) or the
 * session's own volume ("hutch-NAME"), which outlives the container.  The
 * volume also records the session's configuration, so a container removed
 * from outside is recreated as it was.
 *
 * Containers are locked down: no network, every capability dropped,
 * no-new-privileges, hutch's agent as PID 1 (an init that ignores signals
 * sent from inside), and limits on memory, CPU and processes.  Commands run
 * as an unprivileged user: 1000:1000, or the image's "sandbox" user by name
 * when it has other ids (a bind-mounted workspace: its owner, never root).
 * A workspace volume's root is given to that user.  The
 * configuration is recorded on the container (labels "dev.hutch.*") and on
 * the session's volumes.  Settings the caller gives that differ from the
 * record of an existing session are an error (HUTCH_ECONFLICT) unless the
 * caller asks to recreate; settings not given keep the recorded ones.
 *
 * Threads: a hutch_session handle is used by one thread at a time (it
 * adopts the recorded configuration while it recreates a container); open
 * one handle per thread on a shared hutch_engine, which is thread-safe.
 */
#ifndef HUTCH_SESSION_H
#define HUTCH_SESSION_H

#include <stddef.h>
#include <stdint.h>
#include <hutch/engine.h>
#include <hutch/error.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct hutch_session hutch_session;

#define HUTCH_SESSION_OPTIONS_VERSION 1

typedef struct {
	unsigned int version;	/* HUTCH_SESSION_OPTIONS_VERSION */
	const char *image;	/* NULL: $HUTCH_IMAGE, then the default image */
	const char *workspace;	/* host directory to bind mount, or NULL */
	const char *const *env; /* "K=V" strings for the container, or NULL */
	size_t env_count;
	/* Lockdown.  0 / NULL: what the session recorded, else the default. */
	const char *user;  /* "NAME", "UID" or "UID:GID"; "root" allowed */
	int64_t memory;	   /* bytes, at least HUTCH_SESSION_MIN_MEMORY */
	int64_t nano_cpus; /* 1000000000 = one CPU, at least 10000000 */
	int64_t pids;	   /* at least HUTCH_SESSION_MIN_PIDS */
	const char *const *cap_add; /* names ("NET_RAW" or "CAP_NET_RAW");
				       non-NULL with count 0: explicitly none */
	size_t cap_add_count;
	const char *network; /* an engine network; "none" is the default */
	int read_only;	     /* 1: read-only root filesystem (writable /tmp
				    and /workspace), -1: writable, 0: unset */
	int recreate;	     /* 1: an existing container whose record
				    differs from these options is replaced
				    (the workspace is kept) */
	/* Secrets, "NAME=VALUE" (see hutch_session_set_secrets).  Never
	 * recorded: give them to every handle that should use them. */
	const char *const *secrets;
	size_t secret_count;
} hutch_session_options;

#define HUTCH_SESSION_DEFAULT_MEMORY (2LL << 30)     /* 2 GiB */
#define HUTCH_SESSION_DEFAULT_NANO_CPUS 1000000000LL /* one CPU */
#define HUTCH_SESSION_DEFAULT_PIDS 1024
#define HUTCH_SESSION_DEFAULT_USER "1000:1000"
#define HUTCH_SESSION_MIN_MEMORY (6LL << 20) /* Docker's floor */
#define HUTCH_SESSION_MIN_PIDS 16

#define HUTCH_SESSION_OPTIONS_INIT                                           \
	{                                                                    \
		HUTCH_SESSION_OPTIONS_VERSION, NULL, NULL, NULL, 0, NULL, 0, \
			0, 0, NULL, 0, NULL, 0, 0, NULL, 0                   \
	}

/* The default image when neither the options nor $HUTCH_IMAGE name one. */
const char *hutch_default_image(void);

/* 1 when `name` is a valid session name: 1 to 63 characters from
 * [A-Za-z0-9_.-], starting with a letter or digit. */
int hutch_session_name_valid(const char *name);

/*
 * Make a session handle.  No engine request is made: the container is
 * created by the first call that needs it.  `engine` is borrowed and must
 * outlive the session.  `opts` may be NULL; it is copied.  The options only
 * matter when the session does not exist yet.
 * Returns 0 or HUTCH_EINVALID.  `*out` belongs to the caller.
 */
int hutch_session_open(hutch_session **out, hutch_engine *engine,
		       const char *name, const hutch_session_options *opts,
		       hutch_error **err);

/* Accepts NULL.  Does not touch the container. */
void hutch_session_free(hutch_session *session);

/*
 * Give the handle secrets, "NAME=VALUE" each (NAME as for an environment
 * variable, VALUE 4 to 4096 bytes; at most 32, 16 KiB in all), replacing
 * the ones it had (count 0: none).  They are copied.
 *
 * Each secret is put in the environment of every command hutch_exec_run
 * runs on this handle, for that command only: never in the container's
 * configuration, so inspecting the container or reading its PID 1's
 * environment does not show it.  (The file tools get none.)
 *
 * Everything the handle returns has each secret's value replaced by
 * "[REDACTED]": exec output as it streams (also when the value is cut
 * across reads, frames or the capture's cap), the file tools' results
 * (contents, grep lines, paths) and error messages; so are the value's hex
 * encoding (lower or upper case) and base64 encodings (standard or URL
 * alphabet, padded or not, at any alignment).  Output that transforms the
 * value otherwise (reversed, split by other bytes, base64 wrapped across
 * lines) is not caught: redaction stops accidents, not a hostile command.
 *
 * Returns 0 or HUTCH_EINVALID (the message names the secret, never shows
 * its value), leaving the handle as it was.
 */
int hutch_session_set_secrets(hutch_session *session,
			      const char *const *secrets, size_t count,
			      hutch_error **err);

/*
 * Whether calls on this handle may make the session when it does not exist
 * (1, the default: `exec` and the first tool call create it lazily).  With
 * 0 they fail with HUTCH_ENOTFOUND, "no session 'NAME'" naming the
 * sessions there are, and make nothing; a session that exists still gets
 * its container back when it was removed.  For callers where a mistyped
 * name must not become a new, empty session (hutch's file tools,
 * sync-out, exec --no-create).
 */
void hutch_session_set_create(hutch_session *session, int allow);

/*
 * 1 when the last call on this handle that brought the session up made
 * it: it did not exist before (its first container and volumes), as
 * opposed to finding it or bringing back a removed container.
 */
int hutch_session_was_created(const hutch_session *session);

/* Borrowed. */
const char *hutch_session_name(const hutch_session *session);
hutch_engine *hutch_session_engine(const hutch_session *session);

/*
 * Make sure the session's container exists and runs: create it (and its
 * volume) when missing, start it when stopped.  Safe against other processes
 * doing the same at the same moment, with the same settings or others:
 * exactly one container results, and each call either returns 0 with a
 * container that has every setting it asked for, or HUTCH_ECONFLICT naming
 * the ones that differ.  A call removes only what it made itself.  One
 * whose own settings cannot work (an image the engine lacks, a user the
 * image lacks) fails alone.  `*created` (may be NULL) is set to 1 when
 * this call created the container.
 * HUTCH_ECONFLICT, with the differing settings named, when the session
 * exists with another configuration than the options given to
 * hutch_session_open asked for (unless they set `recreate`); HUTCH_EINVALID
 * when a bind-mounted workspace belongs to root and no user was chosen;
 * HUTCH_ENOTFOUND when a new session's image is not on the engine.
 */
int hutch_session_ensure(hutch_session *session, int *created,
			 hutch_error **err);

typedef struct {
	char *name;	 /* session name */
	char *container; /* container name, or NULL when there is none */
	char *id;	 /* container id, or NULL */
	char *image;
	char *state;	 /* "running", "exited", ..., or "absent" */
	char *workspace; /* host directory, or "volume:NAME" */
	char *hutch_version;
	long long created; /* unix seconds the session was created */
	/* The recorded lockdown; NULL / -1 for a session made before it. */
	char *user; /* as the container was created with it */
	int64_t memory, nano_cpus, pids;
	char *cap_add; /* comma-separated, "" for none */
	char *network;
	int read_only; /* 1, 0, or -1 */
	/* When the session was last used, unix seconds: 0 from
	 * hutch_session_list and hutch_session_inspect (it costs requests
	 * of its own), set by hutch_session_last_used. */
	long long last_used;
} hutch_session_info;

/* Describe one session.  HUTCH_ENOTFOUND when neither its container nor its
 * volume exists.  `*out` belongs to the caller. */
int hutch_session_inspect(hutch_session_info **out, hutch_session *session,
			  hutch_error **err);

/*
 * Whether commands in `session` take the fast path now: the session agent's
 * own socket on the session's system volume, reached on the engine's host
 * (see HUTCH_FAST_PATH in hutch(1)).  1 when the socket was found and its
 * listener checked to be the container's PID 1 (the agent said HELLO); 0
 * when not, with the reason in `why` (the fast path is off, the engine is
 * not on a unix socket, the container does not run, no socket: an agent of
 * an older hutch, or the check that failed).  Runs nothing, makes nothing.
 */
int hutch_session_fast_path(hutch_session *session, char *why, size_t whysz,
			    hutch_error **err);

/* Every session on the engine, sorted by name.  `*out` is an array of
 * `*count` entries belonging to the caller (hutch_session_info_array_free). */
int hutch_session_list(hutch_session_info **out, size_t *count,
		       hutch_engine *engine, hutch_error **err);

/* Remove the session's container and its volume.  A host workspace is never
 * touched.  HUTCH_ENOTFOUND when there was nothing to remove. */
int hutch_session_remove(hutch_engine *engine, const char *name,
			 hutch_error **err);

/*
 * When the session described by `info` (from hutch_session_list or
 * hutch_session_inspect) was last used, into info->last_used (unix
 * seconds).  Its start, every command and file tool, and sync-in and
 * sync-out count: hutch's agent keeps the time on the session's own volume
 * (/.hutch/use/last-used), and this reads it through the engine, running
 * or stopped, with one request.  Sessions without that record (made by an
 * older hutch, or never started) count from their container's creation,
 * last start or stop; a session whose container is gone (only its volumes
 * are left) from its volumes' creation.  A record dated in the future is
 * ignored.  The record lives inside the sandbox: what runs there can keep
 * its own session looking used.
 *
 * Returns 0, or an error of the engine (HUTCH_ENOTFOUND when the session
 * went away meanwhile).
 */
int hutch_session_last_used(hutch_engine *engine, hutch_session_info *info,
			    hutch_error **err);

/* ---- removing idle sessions ------------------------------------------ */

#define HUTCH_GC_OPTIONS_VERSION 1

typedef struct {
	unsigned int version; /* HUTCH_GC_OPTIONS_VERSION */
	long long idle;	      /* seconds: sessions unused for longer go;
				    0: every session not in use right now */
	const char *match;    /* glob over session names ("ci-*"), or
				    NULL for every session on the engine */
	int dry_run;	      /* 1: say what would go, remove nothing */
} hutch_gc_options;

#define HUTCH_GC_OPTIONS_INIT                        \
	{                                            \
		HUTCH_GC_OPTIONS_VERSION, 0, NULL, 0 \
	}

typedef enum {
	HUTCH_GC_KEPT,	       /* used more recently than `idle` */
	HUTCH_GC_REMOVED,      /* removed (container and owned volumes) */
	HUTCH_GC_WOULD_REMOVE, /* dry run: would have been removed */
	HUTCH_GC_BUSY,	       /* idle, but a command runs in it: kept */
	HUTCH_GC_FAILED,       /* could not be checked or removed */
} hutch_gc_action;

typedef struct {
	const char *name;    /* the session's name */
	const char *kind;    /* "session", or "agent-volume" for a left-over
				    system volume ("hutch_NAME") whose session
				    is gone */
	long long last_used; /* unix seconds */
	long long idle;	     /* seconds since then */
	hutch_gc_action action;
	const hutch_error *error; /* HUTCH_GC_FAILED: why; else NULL */
} hutch_gc_entry;

/* Told about each session `match` selects, in name order.  `entry` and
 * what it points to are borrowed for the call. */
typedef void (*hutch_gc_cb)(const hutch_gc_entry *entry, void *payload);

/*
 * Remove the sessions (selected by `opts->match`) not used for longer than
 * `opts->idle` seconds (see hutch_session_last_used), as
 * hutch_session_remove does: the container, forcibly, and the session's
 * volumes; a host workspace is never touched.  A session with a command
 * running right now is kept (HUTCH_GC_BUSY), however long it has run.
 * System volumes left without their session are removed by the same rule
 * (they only hold the agent), counting from their creation.
 *
 * A command started in the instant between the check and the removal is
 * stopped with its session: there is no lock across processes.
 *
 * `cb` (may be NULL) is called for every selected session.  Returns 0
 * when every idle session was removed (or would be), HUTCH_EINVALID for
 * bad options, the engine's error when it could not be listed, or
 * HUTCH_EFAILED when some sessions could not be checked or removed (each
 * was reported to `cb` as HUTCH_GC_FAILED; the others were still done).
 */
int hutch_session_gc(hutch_engine *engine, const hutch_gc_options *opts,
		     hutch_gc_cb cb, void *payload, hutch_error **err);

/* Accept NULL. */
void hutch_session_info_free(hutch_session_info *info);
void hutch_session_info_array_free(hutch_session_info *infos, size_t count);

#ifdef __cplusplus
}
#endif
#endif
