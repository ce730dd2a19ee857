/*
 * engine_api_exec.h - the engine's exec and archive endpoints, typed
 *
 * The one place that knows how Docker and Podman spell an exec (create,
 * start, inspect) and the archive requests of sync and the account lookup
 * (a streamed GET and PUT, one small file): the URLs, the JSON bodies and
 * how their answers read.  The in-memory PUT and the HEAD that sessions
 * and gc make are engine_api.h's.  Callers say what they
 * want; the policy around it (retries, kills, what a lost container
 * means) stays with them (exec.c, sync.c, account.c).
 *
 * An exec with stdin or a terminal starts over an upgraded connection of
 * its own (hutch__http_upgrade); one without starts on the keep-alive
 * pool, as every other request.  Nothing in hutch attaches to a
 * container, so that endpoint has no function here.
 */
#ifndef HUTCH_ENGINE_API_EXEC_H
#define HUTCH_ENGINE_API_EXEC_H

#include <stddef.h>

#include "engine_internal.h"

/* ---- exec ------------------------------------------------------------ */

/* What an exec runs.  Its stdout and stderr come back as one framed
 * stream (demux.h), or with a TTY as the terminal's raw output. */
struct hutch__exec_spec {
	const char *const *argv; /* the command line; argc > 0 */
	size_t argc;
	const char *const *env; /* K=V, on top of the container's */
	size_t env_count;
	const char *workdir; /* NULL: the container's */
	int attach_stdin;    /* AttachStdin: the exec reads a stdin */
	int tty;	     /* Tty: a terminal for stdin, stdout, stderr */
	/* The exec's "User": numeric "UID[:GID]" only (exec.c resolves
	 * names through the container's own files first), NULL: the
	 * container's. */
	const char *user;
};

/*
 * Create an exec in `container` (by name or id: no lookup comes first).
 * Its id, hex digits only (it goes into URL paths), lands in `id`.
 * Returns 0, the engine's typed error (HUTCH_ENOTFOUND, HUTCH_ENOTRUNNING
 * when the container is gone or stopped), or HUTCH_EPROTO when the answer
 * carries no usable id.  Error messages start with `what`.
 */
int hutch__api_exec_create(hutch_engine *e, const char *container,
			   const struct hutch__exec_spec *spec, char *id,
			   size_t idsz, const char *what, hutch_error **err);

/* How to read an exec's output stream (hutch__request's fields), and
 * what to send it.  Zero it, then set input_fd to -1. */
struct hutch__exec_stream {
	hutch__sink_fn sink; /* NULL: collect under the usual cap, drop */
	void *payload;	     /* the sink's, and on_deadline's */
	unsigned long long deadline_ms;
	hutch__deadline_fn on_deadline;
	const hutch_cancel *cancel;
	const hutch_cancel *cancel2; /* a second flag; may be NULL */
	/* Standard input (the exec was created with attach_stdin): these
	 * bytes, or `input_fd` read to its end (borrowed, never made
	 * non-blocking; -1: none), then a half-close of the connection's
	 * write side, which the command reads as its end of file (not with
	 * a TTY: there the input just stops; a ^D in it is the terminal's
	 * end of file).  Input the command does not read is dropped when
	 * its stream ends. */
	const char *input;
	size_t input_len;
	int input_fd;
	/* 1: the exec was created with a TTY.  tty_size (NULL: 24x80) is
	 * asked once the stream began, before any input is sent, then at
	 * most every HUTCH__TICK_MS while it runs; each change is sent on
	 * (hutch__api_exec_resize). */
	int tty;
	hutch_tty_size_cb tty_size;
	void *tty_payload;
	/* Out, may be NULL: bytes of the input consumed (read from
	 * input_fd; all of `input` once it began to be sent). */
	unsigned long long *input_taken;
};

/*
 * Start exec `id` and read its stream to the end (or the deadline).
 * Returns 0 when the stream was read, the engine's error before it
 * started, or HUTCH_ETIMEOUT / HUTCH_ECANCELLED / HUTCH_EFAILED from the
 * transfer.  `*streamed` says whether a stream began (a 2xx answer); it
 * is known even when the transfer broke mid-stream.
 *
 * With input, input_fd >= 0 or tty the start goes over a connection of
 * its own, upgraded (hijacked: "101 UPGRADED"), that carries the stream
 * one way and the input the other; without, over the keep-alive pool.
 */
int hutch__api_exec_start(hutch_engine *e, const char *id,
			  const struct hutch__exec_stream *stream,
			  int *streamed, const char *what, hutch_error **err);

/*
 * Set the terminal size of exec `id` (created with a TTY, started):
 * 0, or the engine's error, starting with `what`.
 */
int hutch__api_exec_resize(hutch_engine *e, const char *id, unsigned short rows,
			   unsigned short cols, const char *what,
			   hutch_error **err);

/* What exec inspect says. */
struct hutch__exec_info {
	int running;
	int has_exit_code; /* exit_code is the engine's */
	int exit_code;
	int pid; /* 0 when the engine gives none */
};

/* Inspect exec `id`: 0 with *out filled, or the engine's error, starting
 * with `what`. */
int hutch__api_exec_inspect(hutch_engine *e, const char *id,
			    struct hutch__exec_info *out, const char *what,
			    hutch_error **err);

/* ---- a container's archive ------------------------------------------ */

/*
 * GET `path` of `container` as a tar stream into `sink`.  Returns 0 when
 * the engine answered 200 (*complete: and the sink took all of it, it did
 * not abort); HUTCH_ENOTFOUND with *path_missing set when the container
 * is there and the path is not (the engine's message kept in the error);
 * otherwise the transfer's or the engine's error, starting with `what`.
 */
int hutch__api_archive_get(hutch_engine *e, const char *container,
			   const char *path, hutch__sink_fn sink, void *payload,
			   int *complete, int *path_missing, const char *what,
			   hutch_error **err);

/*
 * One small regular file of `container`, read through the archive API:
 * its bytes (NUL-terminated; the caller frees), or NULL when it is
 * missing, not a regular file or over `max` bytes.  *status (may be NULL)
 * gets the engine's answer: 404 when the file is not there, 0 when the
 * engine could not be asked.
 */
char *hutch__api_archive_file(hutch_engine *e, const char *container,
			      const char *path, size_t max, long *status,
			      hutch_error **err);

#endif
