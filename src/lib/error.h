/*
 * error.h - building hutch_error objects inside the library
 */
#ifndef HUTCH_ERROR_INTERNAL_H
#define HUTCH_ERROR_INTERNAL_H

#include <hutch/error.h>

struct hutch_error {
	int code;
	int http_status;
	char *message;	      /* one line */
	char *engine_message; /* the engine's words, verbatim, or NULL */
	char *detail;	      /* several lines, or NULL */
};

/* Store a new error in *err (when err is non-NULL) and return `code`.  The
 * message is printf-formatted and folded onto one line. */
int hutch__error_set(hutch_error **err, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Same, keeping the engine's HTTP status and message. */
int hutch__error_set_engine(hutch_error **err, int code, int http_status,
			    const char *engine_message, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

/* Put "context: " in front of an existing error's message, as the error
 * travels up.  Returns the error's code (or `code` when *err is NULL, so
 * callers can `return hutch__error_wrap(err, rc, ...)`). */
int hutch__error_wrap(hutch_error **err, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

int hutch__error_oom(hutch_error **err);

/* Hand an error made locally up: into *err when the caller wants one and
 * rc is a failure (negative), freed otherwise.  Returns rc. */
int hutch__error_pass(hutch_error **err, hutch_error *lerr, int rc);

/*
 * 0 when s[0..len) is valid UTF-8.  Else HUTCH_EINVALID, with a message
 * naming `what` and quoting (up to 200 bytes of) `s` with the bad bytes
 * written as \xNN.  Engines decode their JSON requests leniently: an
 * invalid byte becomes U+FFFD there, so a different command would run or a
 * different file be written; hutch refuses instead.
 */
int hutch__error_if_not_utf8(hutch_error **err, const char *what, const char *s,
			     size_t len);

/* Attach a copy of `detail` (may span lines) to an existing error. */
void hutch__error_set_detail(hutch_error *err, const char *detail);

#endif
