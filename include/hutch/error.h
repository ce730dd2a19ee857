/*
 * hutch/error.h - error objects shared by every libhutch call
 *
 * Functions that can fail return 0 on success or one of the negative
 * hutch_errcode values below, and, when the caller passed a non-NULL
 * `err`, store a newly allocated error object there.  The caller owns that
 * object and releases it with hutch_error_free().  On success `*err` is left
 * untouched.
 */
#ifndef HUTCH_ERROR_H
#define HUTCH_ERROR_H

#ifdef __cplusplus
extern "C" {
#endif

/* The few failures a caller can act on; everything else is HUTCH_EFAILED. */
typedef enum {
	HUTCH_OK = 0,
	HUTCH_EFAILED = -1,	 /* anything not listed below */
	HUTCH_ENOTFOUND = -2,	 /* container, exec, image or volume is gone */
	HUTCH_ECONFLICT = -3,	 /* name already in use */
	HUTCH_ETIMEOUT = -4,	 /* a deadline passed */
	HUTCH_EUNREACHABLE = -5, /* no engine answered */
	HUTCH_EINVALID = -6,	 /* bad input from the caller */
	HUTCH_ETOOBIG = -7,	 /* a response or input exceeded its cap */
	HUTCH_ENOTRUNNING = -8,	 /* the container exists but is not running */
	HUTCH_ENOMEM = -9,
	HUTCH_ECANCELLED = -10, /* the caller cancelled the operation */
	HUTCH_EPROTO = -11,	/* the engine said something we cannot parse */
	HUTCH_EESCAPE = -12,	/* a workspace path resolves outside it */
	HUTCH_ENOMATCH = -13,	/* edit: the old text is not in the file */
	HUTCH_EAMBIGUOUS = -14, /* edit: the old text is there more than once;
				    a session exists on two engines */
} hutch_errcode;

typedef struct hutch_error hutch_error;

/* One line, no trailing newline.  Borrowed; valid until hutch_error_free(). */
const char *hutch_error_message(const hutch_error *err);

/* The hutch_errcode of the failure. */
int hutch_error_code(const hutch_error *err);

/* HTTP status the engine answered with, or 0 when the failure was not an
 * engine answer. */
int hutch_error_http_status(const hutch_error *err);

/* The engine's own message, verbatim, or NULL.  Borrowed. */
const char *hutch_error_engine_message(const hutch_error *err);

/* More than a line can hold, or NULL: for HUTCH_ENOMATCH the region of the
 * file closest to the old text, with line numbers.  Borrowed. */
const char *hutch_error_detail(const hutch_error *err);

/* Accepts NULL. */
void hutch_error_free(hutch_error *err);

/* Short constant name of a code, e.g. "not found". */
const char *hutch_error_code_name(int code);

#ifdef __cplusplus
}
#endif
#endif
