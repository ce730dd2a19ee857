/*
 * error.c - one-line error objects
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common.h"
#include "error.h"
#include "utf8.h"

/* Statically allocated so that running out of memory can still be told. */
static struct hutch_error oom_error = { HUTCH_ENOMEM, 0,
					(char *)"out of memory", NULL, NULL };

/* Errors are shown as one line: fold control characters (an engine message
 * may carry newlines) into spaces, and trim trailing blanks. */
static void one_line(char *s)
{
	size_t n;

	for (char *p = s; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = ' ';
	n = strlen(s);
	while (n > 0 && s[n - 1] == ' ')
		s[--n] = '\0';
}

/* Messages are shown as JSON too (--json, MCP): bytes that are not UTF-8
 * (quoted input, a cut in the middle of a character) become U+FFFD.
 * Returns the string to keep: `s`, or its repaired copy (s is freed). */
static char *valid_utf8(char *s)
{
	size_t len = strlen(s);
	char *fixed;

	if (hutch__utf8_valid_len(s, len) == len)
		return s;
	fixed = hutch__utf8_repair(s, len, NULL);
	if (!fixed)
		return s; /* out of memory: keep the bytes rather than nothing */
	free(s);
	return fixed;
}

static int set_va(hutch_error **err, int code, int http_status,
		  const char *engine_message, const char *fmt, va_list ap)
{
	struct hutch_error *e;

	if (!err)
		return code;
	e = calloc(1, sizeof(*e));
	if (!e) {
		*err = &oom_error;
		return code;
	}
	if (vasprintf(&e->message, fmt, ap) < 0) {
		free(e);
		*err = &oom_error;
		return code;
	}
	one_line(e->message);
	e->message = valid_utf8(e->message);
	if (engine_message) {
		e->engine_message = strdup(engine_message);
		if (e->engine_message) {
			one_line(e->engine_message);
			e->engine_message = valid_utf8(e->engine_message);
		}
	}
	e->code = code;
	e->http_status = http_status;
	*err = e;
	return code;
}

int hutch__error_set(hutch_error **err, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	set_va(err, code, 0, NULL, fmt, ap);
	va_end(ap);
	return code;
}

int hutch__error_set_engine(hutch_error **err, int code, int http_status,
			    const char *engine_message, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	set_va(err, code, http_status, engine_message, fmt, ap);
	va_end(ap);
	return code;
}

static int already_prefixed(const char *message, const char *prefix)
{
	size_t n = strlen(prefix);

	return message && strncmp(message, prefix, n) == 0 &&
	       message[n] == ':' && message[n + 1] == ' ';
}

int hutch__error_wrap(hutch_error **err, int code, const char *fmt, ...)
{
	struct hutch_error *e;
	char *prefix = NULL, *joined = NULL;
	va_list ap;

	if (!err || !*err || *err == &oom_error)
		return code;
	e = *err;
	va_start(ap, fmt);
	if (vasprintf(&prefix, fmt, ap) < 0)
		prefix = NULL;
	va_end(ap);
	/* Layers that each name the session (ensure, then exec or a file
	 * tool) say so once. */
	if (prefix && already_prefixed(e->message, prefix)) {
		free(prefix);
		return e->code;
	}
	if (prefix && asprintf(&joined, "%s: %s", prefix, e->message) >= 0) {
		one_line(joined);
		joined = valid_utf8(joined);
		free(e->message);
		e->message = joined;
	}
	free(prefix);
	return e->code;
}

int hutch__error_pass(hutch_error **err, hutch_error *lerr, int rc)
{
	/* A failure the caller turned into success (a 404 on a removal)
	 * leaves no error behind. */
	if (rc >= 0) {
		hutch_error_free(lerr);
		return rc;
	}
	if (err)
		*err = lerr;
	else
		hutch_error_free(lerr);
	return rc;
}

int hutch__error_oom(hutch_error **err)
{
	if (err)
		*err = &oom_error;
	return HUTCH_ENOMEM;
}

const char *hutch_error_message(const hutch_error *err)
{
	return err ? err->message : "no error";
}

int hutch_error_code(const hutch_error *err)
{
	return err ? err->code : HUTCH_OK;
}

int hutch_error_http_status(const hutch_error *err)
{
	return err ? err->http_status : 0;
}

const char *hutch_error_engine_message(const hutch_error *err)
{
	return err ? err->engine_message : NULL;
}

const char *hutch_error_detail(const hutch_error *err)
{
	return err ? err->detail : NULL;
}

void hutch__error_set_detail(hutch_error *err, const char *detail)
{
	/* Best effort: the one-line message already says what went wrong. */
	if (!err || err == &oom_error || !detail)
		return;
	free(err->detail);
	err->detail = strdup(detail);
	if (err->detail)
		err->detail = valid_utf8(err->detail);
}

void hutch_error_free(hutch_error *err)
{
	if (!err || err == &oom_error)
		return;
	free(err->message);
	free(err->engine_message);
	free(err->detail);
	free(err);
}

const char *hutch_error_code_name(int code)
{
	switch (code) {
	case HUTCH_OK:
		return "ok";
	case HUTCH_ENOTFOUND:
		return "not found";
	case HUTCH_ECONFLICT:
		return "conflict";
	case HUTCH_ETIMEOUT:
		return "timeout";
	case HUTCH_EUNREACHABLE:
		return "engine unreachable";
	case HUTCH_EINVALID:
		return "invalid input";
	case HUTCH_ETOOBIG:
		return "too big";
	case HUTCH_ENOTRUNNING:
		return "not running";
	case HUTCH_ENOMEM:
		return "out of memory";
	case HUTCH_ECANCELLED:
		return "cancelled";
	case HUTCH_EPROTO:
		return "protocol error";
	case HUTCH_EESCAPE:
		return "outside the workspace";
	case HUTCH_ENOMATCH:
		return "no match";
	case HUTCH_EAMBIGUOUS:
		return "ambiguous";
	default:
		return "failed";
	}
}

int hutch__error_if_not_utf8(hutch_error **err, const char *what, const char *s,
			     size_t len)
{
	size_t bad = hutch__utf8_valid_len(s, len);
	char *quoted;

	if (bad == len)
		return 0;
	quoted = hutch__utf8_escape(s, len, 200, 0);
	if (!quoted)
		return hutch__error_oom(err);
	hutch__error_set(
		err, HUTCH_EINVALID,
		"%s '%s' is not valid UTF-8 (byte 0x%02x at offset %zu): the "
		"engine would replace it, so it is refused",
		what, quoted, (unsigned char)s[bad], bad);
	free(quoted);
	return HUTCH_EINVALID;
}
