/*
 * jsonw.c - a small JSON writer for the agent's one-object answers
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jsonw.h"
#include "utf8.h"

void jsonw_init(struct jsonw *w, size_t max)
{
	memset(w, 0, sizeof(*w));
	w->max = max;
	w->first[0] = true;
}

void jsonw_free(struct jsonw *w)
{
	if (!w)
		return;
	free(w->buf);
	w->buf = NULL;
	w->len = w->cap = 0;
}

static void put(struct jsonw *w, const char *s, size_t n)
{
	size_t ncap;
	char *nb;

	if (w->overflow)
		return;
	if (n > w->max - w->len) {
		w->overflow = true;
		return;
	}
	if (w->len + n > w->cap) {
		ncap = w->cap ? w->cap : 4096;
		while (ncap < w->len + n)
			ncap *= 2;
		nb = realloc(w->buf, ncap);
		if (!nb) {
			w->overflow = true;
			return;
		}
		w->buf = nb;
		w->cap = ncap;
	}
	memcpy(w->buf + w->len, s, n);
	w->len += n;
}

/* One step of the encoding: what s[0..n) starts with, as JSON text. */
static size_t enc_step(const unsigned char *s, size_t n, char out[8],
		       size_t *used)
{
	size_t k;

	if (s[0] >= 0x80) {
		k = hutch__utf8_seq_len(s, n);
		if (k == 0) {
			*used = 1;
			memcpy(out, "\xef\xbf\xbd", 3);
			return 3;
		}
		*used = k;
		memcpy(out, s, k);
		return k;
	}
	*used = 1;
	switch (s[0]) {
	case '"':
		memcpy(out, "\\\"", 2);
		return 2;
	case '\\':
		memcpy(out, "\\\\", 2);
		return 2;
	case '\n':
		memcpy(out, "\\n", 2);
		return 2;
	case '\t':
		memcpy(out, "\\t", 2);
		return 2;
	case '\r':
		memcpy(out, "\\r", 2);
		return 2;
	default:
		if (s[0] < 0x20) {
			snprintf(out, 8, "\\u%04x", s[0]);
			return 6;
		}
		out[0] = (char)s[0];
		return 1;
	}
}

size_t jsonw_str_cost(const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, used, cost = 2;
	char tmp[8];

	while (i < n) {
		cost += enc_step(u + i, n - i, tmp, &used);
		i += used;
	}
	return cost;
}

static void put_string(struct jsonw *w, const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, run = 0, used, k;
	char tmp[8];

	put(w, "\"", 1);
	/* Copy plain runs in one go; escape the rest one step at a time. */
	while (i < n) {
		if (u[i] >= 0x20 && u[i] < 0x80 && u[i] != '"' &&
		    u[i] != '\\') {
			run++;
			i++;
			continue;
		}
		put(w, s + i - run, run);
		run = 0;
		k = enc_step(u + i, n - i, tmp, &used);
		put(w, tmp, k);
		i += used;
	}
	put(w, s + i - run, run);
	put(w, "\"", 1);
}

static void member(struct jsonw *w, const char *key)
{
	if (!w->first[w->depth])
		put(w, ",", 1);
	w->first[w->depth] = false;
	if (key) {
		put_string(w, key, strlen(key));
		put(w, ":", 1);
	}
}

void jsonw_open(struct jsonw *w, const char *key, char brace)
{
	member(w, key);
	put(w, &brace, 1);
	if (w->depth < JSONW_DEPTH)
		w->depth++;
	else
		w->overflow = true; /* a bug of ours, not input */
	w->first[w->depth] = true;
}

void jsonw_close(struct jsonw *w, char brace)
{
	if (w->depth > 0)
		w->depth--;
	put(w, &brace, 1);
}

void jsonw_str(struct jsonw *w, const char *key, const char *s, size_t n)
{
	member(w, key);
	put_string(w, s, n);
}

void jsonw_strz(struct jsonw *w, const char *key, const char *s)
{
	jsonw_str(w, key, s, strlen(s));
}

void jsonw_int(struct jsonw *w, const char *key, long long v)
{
	char num[32];
	int n = snprintf(num, sizeof(num), "%lld", v);

	member(w, key);
	put(w, num, (size_t)n);
}

void jsonw_bool(struct jsonw *w, const char *key, bool v)
{
	member(w, key);
	put(w, v ? "true" : "false", v ? 4 : 5);
}

void jsonw_null(struct jsonw *w, const char *key)
{
	member(w, key);
	put(w, "null", 4);
}

int jsonw_emit(struct jsonw *w, int fd)
{
	size_t off = 0;
	ssize_t n;

	if (w->overflow) {
		errno = EMSGSIZE;
		return -1;
	}
	put(w, "\n", 1);
	while (off < w->len) {
		n = write(fd, w->buf + off, w->len - off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		off += (size_t)n;
	}
	return 0;
}
