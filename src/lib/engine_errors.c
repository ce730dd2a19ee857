/*
 * engine_errors.c - engine error answers become typed hutch errors
 *
 * Docker and Podman report the same situations with different statuses and
 * words (a name clash is 409 on Docker and 500 on Podman; a stopped
 * container is 409 "is not running" on one and 500 "container state
 * improper" on the other).  Callers act on the code, so the mapping lives
 * here, in one place, and keeps the engine's own message for people.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>

#include "common.h"
#include "engine_internal.h"
#include "error.h"
#include "json.h"

#define HUTCH_MAX_ENGINE_MESSAGE 1024

/* Engines put newlines and padding in messages; a hutch error is one
 * line, so fold control characters and runs of blanks into one space. */
static void fold(char *s)
{
	char *w = s;
	int blank = 1;

	for (char *r = s; *r; r++) {
		unsigned char c = (unsigned char)*r;

		if (c < 0x20 || c == 0x7f || c == ' ') {
			if (!blank)
				*w++ = ' ';
			blank = 1;
			continue;
		}
		*w++ = (char)c;
		blank = 0;
	}
	while (w > s && w[-1] == ' ')
		w--;
	*w = '\0';
}

char *hutch__engine_error_message(const char *body, size_t len)
{
	json_object *obj, *msg = NULL;
	char *out = NULL;
	size_t n;

	obj = hutch__json_parse(body, len);
	if (obj && json_object_is_type(obj, json_type_object) &&
	    json_object_object_get_ex(obj, "message", &msg) &&
	    json_object_is_type(msg, json_type_string)) {
		out = strdup(json_object_get_string(msg));
	} else if (obj && json_object_is_type(obj, json_type_object) &&
		   json_object_object_get_ex(obj, "cause", &msg) &&
		   json_object_is_type(msg, json_type_string)) {
		out = strdup(json_object_get_string(msg));
	} else if (!obj && body && len > 0) {
		/* Not JSON (a proxy's page, plain text): keep its start. */
		n = len < 200 ? len : 200;
		out = malloc(n + 1);
		if (out) {
			for (size_t i = 0; i < n; i++)
				out[i] = isprint((unsigned char)body[i]) ?
						 body[i] :
						 ' ';
			out[n] = '\0';
		}
		/* Some engine's or proxy's page, not JSON: a status line is
		 * all it is worth. */
	}
	json_object_put(obj);
	if (out)
		fold(out);
	/* An error message is read by people on one line: a megabyte of it
	 * (the answer cap) helps nobody. */
	if (out && strlen(out) > HUTCH_MAX_ENGINE_MESSAGE)
		memcpy(out + HUTCH_MAX_ENGINE_MESSAGE - 3, "...", 4);
	if (out && out[0] == '\0') {
		free(out);
		out = NULL;
	}
	return out;
}

static int has(const char *haystack, const char *needle)
{
	return haystack && strcasestr(haystack, needle) != NULL;
}

int hutch__engine_error_code(long status, const char *m)
{
	/* Words first: they tell the situation apart where statuses do not. */
	if (has(m, "not running") || has(m, "state improper") ||
	    has(m, "is paused") || has(m, "is restarting"))
		return HUTCH_ENOTRUNNING;
	if (has(m, "already in use") || has(m, "already exists"))
		return HUTCH_ECONFLICT;
	if (has(m, "no such container") || has(m, "no such exec") ||
	    has(m, "no such image") || has(m, "no such volume") ||
	    has(m, "no container with"))
		return HUTCH_ENOTFOUND;
	switch (status) {
	case 400:
		return HUTCH_EINVALID;
	case 404:
		return HUTCH_ENOTFOUND;
	case 409:
		return HUTCH_ECONFLICT;
	default:
		return HUTCH_EFAILED;
	}
}

int hutch__engine_error(hutch_error **err, long status, const char *body,
			size_t len, const char *what)
{
	char *msg = hutch__engine_error_message(body, len);
	int code = hutch__engine_error_code(status, msg);

	hutch__error_set_engine(err, code, (int)status, msg,
				"%s: %s (HTTP %ld)", what,
				msg ? msg : "the engine gave no reason",
				status);
	free(msg);
	return code;
}
