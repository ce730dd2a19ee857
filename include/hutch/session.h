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
 * Threads: a hutch_session handle is used by one thread at a time (it
 * adopts the recorded configuration while it recreates a container); open
 * one handle per thread on a shared hutch_engine, which is thread-safe.
 */
#ifndef HUTCH_SESSION_H
#define HUTCH_SESSION_H

#include <stddef.h>
#include <hutch/engine.h>
#include <hutch/error.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct hutch_session hutch_session;

#define HUTCH_SESSION_OPTIONS_VERSION 1

typedef struct {
	unsigned int version;    /* HUTCH_SESSION_OPTIONS_VERSION */
	const char *image;       /* NULL: $HUTCH_IMAGE, then the default image */
	const char *workspace;   /* host directory to bind mount, or NULL */
	const char *const *env;  /* "K=V" strings for the container, or NULL */
	size_t env_count;
} hutch_session_options;

#define HUTCH_SESSION_OPTIONS_INIT { HUTCH_SESSION_OPTIONS_VERSION, NULL, NULL, NULL, 0 }

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

/* Borrowed. */
const char *hutch_session_name(const hutch_session *session);
hutch_engine *hutch_session_engine(const hutch_session *session);

/*
 * Make sure the session's container exists and runs: create it (and its
 * volume) when missing, start it when stopped.  Safe against other processes
 * doing the same at the same moment: exactly one container results.
 * `*created` (may be NULL) is set to 1 when this call created the container.
 */
int hutch_session_ensure(hutch_session *session, int *created,
			 hutch_error **err);

typedef struct {
	char *name;         /* session name */
	char *container;    /* container name, or NULL when there is none */
	char *id;           /* container id, or NULL */
	char *image;
	char *state;        /* "running", "exited", ..., or "absent" */
	char *workspace;    /* host directory, or "volume:NAME" */
	char *hutch_version;
	long long created;  /* unix seconds the session was created */
} hutch_session_info;

/* Describe one session.  HUTCH_ENOTFOUND when neither its container nor its
 * volume exists.  `*out` belongs to the caller. */
int hutch_session_inspect(hutch_session_info **out, hutch_session *session,
			  hutch_error **err);

/* Every session on the engine, sorted by name.  `*out` is an array of
 * `*count` entries belonging to the caller (hutch_session_info_array_free). */
int hutch_session_list(hutch_session_info **out, size_t *count,
		       hutch_engine *engine, hutch_error **err);

/* Remove the session's container and its volume.  A host workspace is never
 * touched.  HUTCH_ENOTFOUND when there was nothing to remove. */
int hutch_session_remove(hutch_engine *engine, const char *name,
			 hutch_error **err);

/* Accept NULL. */
void hutch_session_info_free(hutch_session_info *info);
void hutch_session_info_array_free(hutch_session_info *infos, size_t count);

#ifdef __cplusplus
}
#endif
#endif
