/*
 * jsonw.h - a small JSON writer for the agent's one-object answers
 *
 * Writes into one memory buffer with a hard cap, so that a tool either
 * prints a whole, valid object or an error, never half of one.  Every
 * string goes out as valid UTF-8: bytes that are not are replaced by
 * U+FFFD (src/shared/utf8.c decides), control characters are escaped.
 */
#ifndef HUTCH_AGENT_JSONW_H
#define HUTCH_AGENT_JSONW_H

#include <stdbool.h>
#include <stddef.h>

#define JSONW_DEPTH 8

struct jsonw {
	char *buf;
	size_t len, cap, max;
	bool overflow; /* something did not fit under max */
	int depth;
	bool first[JSONW_DEPTH + 1]; /* no comma before the next member */
};

/* @max bounds the whole document. */
void jsonw_init(struct jsonw *w, size_t max);
/* Frees the buffer; @w may be NULL. */
void jsonw_free(struct jsonw *w);

/* @key is NULL inside arrays and for the top level. */
void jsonw_open(struct jsonw *w, const char *key, char brace);
void jsonw_close(struct jsonw *w, char brace);
void jsonw_str(struct jsonw *w, const char *key, const char *s, size_t n);
void jsonw_strz(struct jsonw *w, const char *key, const char *s);
void jsonw_int(struct jsonw *w, const char *key, long long v);
void jsonw_bool(struct jsonw *w, const char *key, bool v);
void jsonw_null(struct jsonw *w, const char *key);

/* Bytes jsonw_str() would add for s[0..n), quotes included. */
size_t jsonw_str_cost(const char *s, size_t n);

/* Writes the document and "\n" to @fd.  0, or -1 (errno set, or EMSGSIZE
 * after an overflow). */
int jsonw_emit(struct jsonw *w, int fd);

#endif /* HUTCH_AGENT_JSONW_H */
