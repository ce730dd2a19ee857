/*
 * hutch/process.h - background processes of a session
 *
 * hutch_process_start runs a command detached: the call returns once the
 * command has been started, with an id, and the command keeps running in
 * the session's container after the call (and the hutch process) ended.
 * Its stdout and stderr are kept inside the container, in the session's
 * system volume, never in the caller's memory: at most
 * HUTCH_PROCESS_LOG_KEEP bytes of each process (both streams together),
 * of which at least the last half; older output is dropped, and the count
 * of dropped bytes is kept.  Offsets into the output count every byte
 * written, dropped ones included.  The records of the 64 most recent
 * ended processes are kept; older ones are removed when a process starts.
 *
 * Each process runs under hutch's in-container agent, as a foreground
 * command does: hutch_process_kill signals the process and every process
 * it started.  The process's standard input is /dev/null.
 *
 * Every call is one exec in the container (hutch_process_logs: two, the
 * first to check the id).  What the container says about
 * its processes (ids, command lines, states, output) is written by the
 * agent into a directory the sandboxed code can also write, so it is
 * checked as untrusted input: an entry that is not well formed is left out
 * (hutch_process_list_skipped counts them), text is repaired to valid
 * UTF-8, and every answer is read under a cap.
 */
#ifndef HUTCH_PROCESS_H
#define HUTCH_PROCESS_H

#include <stddef.h>
#include <stdint.h>
#include <hutch/error.h>
#include <hutch/exec.h>
#include <hutch/session.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The output a process keeps, both streams together: at most this many
 * bytes (in two segments of half of it: when a third begins, the oldest is
 * dropped, and counted). */
#define HUTCH_PROCESS_LOG_KEEP (8u * 1024u * 1024u)

/* An id is 1 to HUTCH_PROCESS_ID_MAX characters of [A-Za-z0-9_-]; hutch
 * makes "p" and 8 hex digits.  A buffer of HUTCH_PROCESS_ID_SIZE holds any
 * id with its NUL. */
#define HUTCH_PROCESS_ID_MAX 64
#define HUTCH_PROCESS_ID_SIZE (HUTCH_PROCESS_ID_MAX + 1)

/* 1 when `id` is a well-formed process id (the charset and length above). */
int hutch_process_id_valid(const char *id);

/* A signal by name ("TERM", "SIGTERM", any case) or number (1-64): its
 * number, or -1.  hutch_process_signal_name gives the name without "SIG"
 * of the common ones, else NULL. */
int hutch_process_signal_parse(const char *name);
const char *hutch_process_signal_name(int signal);

/*
 * Start `opts->argv` in the background and put its id in `id_out`
 * (`id_size` bytes, HUTCH_PROCESS_ID_SIZE is enough).  From `opts`:
 * argv, argc, workdir, env, env_count, user (version 2) and cancel (for
 * the start itself).  The process has no timeout: it runs until it ends or
 * is killed.  A timeout_ms, capture, max_output and on_output are not used.
 * Standard input and a terminal (input, input_fd, on_input, tty) are
 * refused with HUTCH_EINVALID: a background process reads /dev/null.
 *
 * A session handle given secrets (hutch_session_set_secrets) is refused
 * with HUTCH_EINVALID: the process would keep the values in its
 * environment after the call returned, where hutch promises that a command
 * given secrets leaves nothing running.
 *
 * Returns 0, or a negative hutch_errcode: HUTCH_ENOTFOUND when the command
 * was not found in the container, HUTCH_EINVALID when it could not be
 * executed (or a bad argument), or an engine error.  The container is
 * created or started first when needed, as for hutch_exec_run.
 */
int hutch_process_start(char *id_out, size_t id_size, hutch_session *session,
			const hutch_exec_options *opts, hutch_error **err);

typedef enum {
	HUTCH_PROCESS_RUNNING = 0,
	HUTCH_PROCESS_EXITED, /* ended by itself: see the exit code */
	HUTCH_PROCESS_KILLED, /* ended by a signal: see the signal */
	/* its supervisor is gone without recording an ending (the
	 * container was restarted, or something in it killed the
	 * supervisor) */
	HUTCH_PROCESS_LOST,
} hutch_process_state;

/* "running", "exited", "killed", "lost" (a static string). */
const char *hutch_process_state_name(hutch_process_state state);

/* One process's record.  Strings are borrowed from the record, valid
 * UTF-8, and redacted with the handle's secrets. */
typedef struct hutch_process hutch_process;

const char *hutch_process_id(const hutch_process *p);
size_t hutch_process_argc(const hutch_process *p);
/* Argument `i` (NULL past the end). */
const char *hutch_process_arg(const hutch_process *p, size_t i);
hutch_process_state hutch_process_get_state(const hutch_process *p);
/* EXITED: the exit code (0-255); else -1. */
int hutch_process_exit_code(const hutch_process *p);
/* KILLED: the signal's number; else 0. */
int hutch_process_signal(const hutch_process *p);
/* Unix time in milliseconds; ended: 0 while running (or unknown). */
uint64_t hutch_process_started_ms(const hutch_process *p);
uint64_t hutch_process_ended_ms(const hutch_process *p);
/* Every byte the process wrote to stdout and stderr, and how many of them
 * were dropped (over HUTCH_PROCESS_LOG_KEEP). */
uint64_t hutch_process_output_bytes(const hutch_process *p);
uint64_t hutch_process_dropped_bytes(const hutch_process *p);
/* The uid it runs as. */
uint32_t hutch_process_uid(const hutch_process *p);
/* Accepts NULL.  Only for records the caller owns (hutch_process_wait);
 * a list's records go with the list. */
void hutch_process_free(hutch_process *p);

/* The session's background processes, oldest first: those started as
 * the session's user.  One started as another user (`user` in the start's
 * options) is not listed (its record is that user's, mode 0700). */
typedef struct hutch_process_list hutch_process_list;

int hutch_process_list_get(hutch_process_list **out, hutch_session *session,
			   hutch_error **err);
size_t hutch_process_list_count(const hutch_process_list *list);
/* Borrowed from the list; NULL past the end. */
const hutch_process *hutch_process_list_at(const hutch_process_list *list,
					   size_t i);
/* Entries of the agent's answer that were not well formed, left out. */
size_t hutch_process_list_skipped(const hutch_process_list *list);
/* 1 when the agent listed only the first processes (it lists 1024). */
int hutch_process_list_truncated(const hutch_process_list *list);
/* Accepts NULL. */
void hutch_process_list_free(hutch_process_list *list);

/*
 * JSON renderings (`hutch ps --json`, `hutch wait --json`): a record is
 * {"id","argv":[...],"state","exit_code":N|null,"signal":N|null,"uid",
 * "started_ms","ended_ms":N|null,"output_bytes","dropped_bytes"}; a list
 * is {"processes":[record...],"skipped":N,"truncated":BOOL}.  `*out` is a NUL-terminated
 * string that belongs to the caller (free()).
 */
int hutch_process_to_json(char **out, const hutch_process *p,
			  hutch_error **err);
int hutch_process_list_to_json(char **out, const hutch_process_list *list,
			       hutch_error **err);

/* --- output ---------------------------------------------------------------- */

#define HUTCH_PROCESS_LOGS_OPTIONS_VERSION 1

typedef struct {
	unsigned int version; /* HUTCH_PROCESS_LOGS_OPTIONS_VERSION */
	/* Start at this byte offset of the combined output (stdout and
	 * stderr in the order written, counted from the process's first
	 * byte, dropped bytes included). */
	uint64_t from;
	/* 0: everything from `from`; N: only the last N lines of it. */
	uint64_t tail_lines;
	/* 1: go on until the process has ended and all of its output was
	 * given. */
	int follow;
	/* Where the output goes, from the calling thread, as it comes;
	 * non-zero stops (HUTCH_ECANCELLED). */
	hutch_output_cb on_output;
	void *payload;
	hutch_cancel *cancel; /* may be NULL; borrowed */
} hutch_process_logs_options;

#define HUTCH_PROCESS_LOGS_OPTIONS_INIT                                       \
	{                                                                     \
		HUTCH_PROCESS_LOGS_OPTIONS_VERSION, 0, 0, 0, NULL, NULL, NULL \
	}

/*
 * Stream a process's output to `opts->on_output`.  Returns 0 when all of
 * it was given (with `follow`: once the process has ended), or a negative
 * hutch_errcode: HUTCH_ENOTFOUND for an unknown id, HUTCH_ECANCELLED when
 * the cancel was raised or the callback returned non-zero (only the reader
 * is stopped, never the process).
 */
int hutch_process_logs(hutch_session *session, const char *id,
		       const hutch_process_logs_options *opts,
		       hutch_error **err);

/* A piece of a process's output read by offset (hutch_process_read). */
typedef struct hutch_process_output hutch_process_output;

/* The largest piece hutch_process_read returns. */
#define HUTCH_PROCESS_READ_MAX (1024u * 1024u)
#define HUTCH_PROCESS_READ_DEFAULT (256u * 1024u)

/*
 * Read at most `max` bytes (0: HUTCH_PROCESS_READ_DEFAULT; at most
 * HUTCH_PROCESS_READ_MAX) of a process's output from offset `from`, without
 * waiting.  Bytes before `from` that were dropped are skipped and counted.
 */
int hutch_process_read(hutch_process_output **out, hutch_session *session,
		       const char *id, uint64_t from, size_t max,
		       hutch_error **err);
/* The text of one stream in this piece (valid UTF-8, redacted). */
void hutch_process_output_text(const hutch_process_output *o,
			       hutch_stream stream, const char **data,
			       size_t *len);
/* The offset read from (past any dropped bytes) and where to go on. */
uint64_t hutch_process_output_from(const hutch_process_output *o);
uint64_t hutch_process_output_next(const hutch_process_output *o);
/* Bytes between the asked offset and `from` that were dropped. */
uint64_t hutch_process_output_dropped(const hutch_process_output *o);
/* The process's record when the piece was read. */
const hutch_process *
hutch_process_output_process(const hutch_process_output *o);
/* {"id","from","next","dropped","stdout","stderr","process":record}. */
int hutch_process_output_to_json(char **out, const hutch_process_output *o,
				 hutch_error **err);
/* Accepts NULL. */
void hutch_process_output_free(hutch_process_output *o);

/* --- ending ---------------------------------------------------------------- */

/*
 * Send `signal` (0: SIGKILL) to the process and every process it started.
 * SIGKILL is sent until none of them is left; another signal is sent once
 * to each.  Returns 0 (also when the process had already ended),
 * HUTCH_ENOTFOUND for an unknown id, HUTCH_EINVALID for a signal outside
 * 1-64, HUTCH_EFAILED when a process survived SIGKILL (one the session's
 * user may not signal).
 */
int hutch_process_kill(hutch_session *session, const char *id, int signal,
		       hutch_error **err);

/*
 * Wait until the process has ended (`timeout_ms` 0: as long as it takes),
 * and give its record (hutch_process_free).  HUTCH_ETIMEOUT when it still
 * runs at the timeout, HUTCH_ECANCELLED when `cancel` (may be NULL) was
 * raised, HUTCH_ENOTFOUND for an unknown id.
 */
int hutch_process_wait(hutch_process **out, hutch_session *session,
		       const char *id, uint64_t timeout_ms,
		       hutch_cancel *cancel, hutch_error **err);

#ifdef __cplusplus
}
#endif
#endif
