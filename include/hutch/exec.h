/*
 * hutch/exec.h - run commands in a session
 *
 * A command runs through the exec API without a shell.  Its stdout and
 * stderr are demultiplexed from the engine's framed stream and handed to a
 * callback as they arrive; they can also be captured, each stream up to a
 * cap past which hutch keeps draining and keeps the head and the tail.
 *
 * When the timeout passes or the caller cancels, the command and every
 * process it started inside the container are killed: each command runs
 * under hutch's in-container agent, a child subreaper that hutch can tell to
 * kill its whole tree.
 *
 * When the engine says the container is gone or stopped before the command
 * started, the container is recreated and the command tried once more
 * (with its input whole: none of it is consumed before the command starts).
 * When the container dies while the command runs, the command is not run
 * again: the result says HUTCH_EXEC_SANDBOX_LOST.
 */
#ifndef HUTCH_EXEC_H
#define HUTCH_EXEC_H

#include <stddef.h>
#include <stdint.h>
#include <hutch/error.h>
#include <hutch/session.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
	HUTCH_STREAM_STDOUT = 1,
	HUTCH_STREAM_STDERR = 2,
} hutch_stream;

/* Called with each piece of output as it arrives, from the calling thread.
 * Return 0 to go on; non-zero cancels the command (it is killed). */
typedef int (*hutch_output_cb)(hutch_stream stream, const char *data,
			       size_t len, void *payload);

/* A cancellation flag that another thread may raise while a command runs. */
typedef struct hutch_cancel hutch_cancel;
int hutch_cancel_new(hutch_cancel **out, hutch_error **err);
/* Async-signal-safe and thread-safe. */
void hutch_cancel_raise(hutch_cancel *cancel);
int hutch_cancel_raised(const hutch_cancel *cancel);
void hutch_cancel_free(hutch_cancel *cancel);

/*
 * Standard input from a callback (hutch_exec_options.on_input): put up to
 * `len` bytes into `buf` and return how many (> 0), 0 at the end of the
 * input, or -1 to cancel the command.  It is called from a thread of
 * hutch's own, so it may block (a read from a terminal, a socket);
 * output keeps flowing meanwhile.  It runs ahead of the command by at
 * most a pipe's capacity.  When the command ends first, it is called no
 * more, but hutch_exec_run returns only once the call in progress has
 * returned: a callback that may block for long should rather be an
 * input_fd, which hutch polls.
 */
typedef long (*hutch_input_cb)(char *buf, size_t len, void *payload);

/*
 * A terminal's size (hutch_exec_options.tty_size): fill *rows and *cols
 * and return 0, or -1 when unknown.  Called when the command starts
 * (before any input is sent to it) and then at most every 50 ms while it
 * runs, from the calling thread; a change is sent on.  The size at the
 * start is set on the terminal by hutch's agent before the command runs
 * (Docker's API 1.41 has no size at creation, and the engine's resize may
 * come after the command first asks).
 */
typedef int (*hutch_tty_size_cb)(unsigned short *rows, unsigned short *cols,
				 void *payload);

#define HUTCH_EXEC_OPTIONS_VERSION 2
#define HUTCH_EXEC_DEFAULT_TIMEOUT_MS 120000
#define HUTCH_EXEC_DEFAULT_MAX_OUTPUT (1024 * 1024)

typedef struct {
	unsigned int version;	 /* HUTCH_EXEC_OPTIONS_VERSION */
	const char *const *argv; /* the command, no shell */
	size_t argc;
	const char *workdir; /* NULL: /workspace; relative: under /workspace */
	const char *const *env; /* extra "K=V" for this command only */
	size_t env_count;
	uint64_t timeout_ms;	   /* 0: no timeout */
	int capture;		   /* 1: keep output in the result */
	size_t max_output;	   /* per stream cap when capturing;
					 0: HUTCH_EXEC_DEFAULT_MAX_OUTPUT */
	hutch_output_cb on_output; /* may be NULL */
	void *payload;
	hutch_cancel *cancel; /* may be NULL; borrowed */
	/* Version 2.  Standard input: at most one of `input`, `input_fd`
	 * and `on_input`; with none of them the command's stdin is
	 * /dev/null.  Input the command does not read before it ends is
	 * dropped without an error, and a command that never reads it does
	 * not hold hutch up.  Memory stays bounded whatever its size. */
	const char *input; /* these bytes, then end of input; may hold NULs;
			      "" with input_len 0: an empty input */
	size_t input_len;
	int input_fd; /* read until end of file (a pipe, socket, file or
			 terminal); -1: none.  Borrowed, not closed, never
			 made non-blocking: read only when poll says it is
			 readable (do not let another reader drain it). */
	hutch_input_cb on_input; /* see hutch_input_cb */
	void *input_payload;
	/* 1: the command gets a terminal for stdin, stdout and stderr; its
	 * output arrives as one stream, HUTCH_STREAM_STDOUT, raw (redacted
	 * as stdout is).  A terminal has no end of input but its own: when
	 * the input ends, nothing more is sent; a ^D (0x04) in it is what a
	 * reading command takes as its end of file.  With no input at all,
	 * a command that reads the terminal waits (until its timeout). */
	int tty;
	hutch_tty_size_cb tty_size; /* may be NULL: 24x80 */
	void *tty_payload;
	/* "USER[:GROUP]", names or numbers: this command runs as that user
	 * instead of the session's (the session's limits and capabilities
	 * still hold).  NULL: the session's user.  Names are looked up in
	 * the session's /etc/passwd and /etc/group by hutch, and the engine
	 * is given numbers; a uid alone gets its passwd entry's group (0
	 * when it has none).  HUTCH_EINVALID for an unknown name and for
	 * uid 65533, which owns hutch's agent in every session. */
	const char *user;
} hutch_exec_options;

#define HUTCH_EXEC_OPTIONS_INIT                                                \
	{                                                                      \
		HUTCH_EXEC_OPTIONS_VERSION, NULL, 0, NULL, NULL, 0,            \
			HUTCH_EXEC_DEFAULT_TIMEOUT_MS, 0, 0, NULL, NULL, NULL, \
			NULL, 0, -1, NULL, NULL, 0, NULL, NULL, NULL           \
	}

typedef enum {
	HUTCH_EXEC_OK = 0,	 /* the command ran; see the exit code */
	HUTCH_EXEC_TIMEOUT,	 /* killed when the timeout passed */
	HUTCH_EXEC_SANDBOX_LOST, /* the container died under it */
	HUTCH_EXEC_CANCELLED,	 /* killed on the caller's request */
} hutch_exec_status;

typedef struct hutch_exec_result hutch_exec_result;

/*
 * Run a command.  Returns 0 when the command ran, whatever its exit code and
 * also when it timed out, was cancelled or lost its container (see
 * hutch_exec_result_status); a negative hutch_errcode when it could not be
 * run at all.  `*out` belongs to the caller (hutch_exec_result_free).
 */
int hutch_exec_run(hutch_exec_result **out, hutch_session *session,
		   const hutch_exec_options *opts, hutch_error **err);

hutch_exec_status hutch_exec_result_status(const hutch_exec_result *res);
/* "ok", "timeout", "sandbox_lost", "cancelled". */
const char *hutch_exec_status_name(hutch_exec_status status);
/* The command's exit code; -1 when it has none (timeout, lost). */
int hutch_exec_result_exit_code(const hutch_exec_result *res);
uint64_t hutch_exec_result_duration_ms(const hutch_exec_result *res);
/* 1 when the session's container was gone or stopped, was brought back, and
 * the command was tried again (not for the lazy creation of a new session). */
int hutch_exec_result_retried(const hutch_exec_result *res);
/*
 * 1 when the kernel's OOM killer acted in the session while the command
 * ran (it reached the session's memory limit): usually the command itself
 * or one of its processes was killed (exit code 137 when it was the
 * command).  hutch's agent reads the memory cgroup's oom_kill count before
 * and after the command and says so on stderr ("hutch: out of memory:
 * ..."); that line is what this reports.  The count is the container's, so
 * a command running beside the one that was killed may see it too, and a
 * command that prints the line itself mislabels only its own result.
 */
int hutch_exec_result_oom(const hutch_exec_result *res);
/*
 * How the command went: "agent" when it ran through the session agent's
 * own channel (its socket on the session's system volume, reached on the
 * engine's host: local engines only), "engine" when through the engine's
 * exec API, which every command falls back to when the channel cannot be
 * had (HUTCH_FAST_PATH=0 in the environment turns it off).  A static
 * string.
 */
const char *hutch_exec_result_path(const hutch_exec_result *res);

/*
 * Captured output of one stream.  `*data` is borrowed (NUL-terminated for
 * convenience, but may contain NUL bytes); `*len` its length.  When the
 * stream exceeded the cap, the data is the head, then the tail, and
 * `*omitted` says how many bytes between them were left out.  `*total` is
 * every byte the stream carried.
 */
void hutch_exec_result_output(const hutch_exec_result *res, hutch_stream stream,
			      const char **data, size_t *len, uint64_t *total,
			      uint64_t *omitted);
/* Where the head ends in the data above (equal to len when nothing was
 * omitted). */
size_t hutch_exec_result_head_len(const hutch_exec_result *res,
				  hutch_stream stream);

/* Accepts NULL. */
void hutch_exec_result_free(hutch_exec_result *res);

/*
 * Render the result as one JSON object: session, argv, exit_code, status,
 * stdout, stderr, stdout_bytes, stderr_bytes, stdout_truncated,
 * stderr_truncated, stdout_omitted_bytes, stderr_omitted_bytes, oom,
 * retried, duration_ms.  Output that is not valid UTF-8 is repaired (U+FFFD) so the
 * document is always valid JSON.  `*out` is a NUL-terminated string that
 * belongs to the caller (free()).
 */
int hutch_exec_result_to_json(char **out, const hutch_exec_result *res,
			      const char *session, const char *const *argv,
			      size_t argc, hutch_error **err);

#ifdef __cplusplus
}
#endif
#endif
