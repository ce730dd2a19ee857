/*
 * buf.h - growable byte buffers with a hard maximum (curl's dynbuf idea)
 *
 * Every buffer that input can grow says how large it may get; appending
 * past that fails instead of eating the machine's memory.
 */
#ifndef HUTCH_BUF_H
#define HUTCH_BUF_H

#include <stddef.h>

typedef struct {
	char *data; /* always NUL-terminated when non-NULL */
	size_t len;
	size_t alloc;
	size_t max; /* len never exceeds this */
} hutch_buf;

#define HUTCH_BUF_INIT(maxlen)       \
	{                            \
		NULL, 0, 0, (maxlen) \
	}

/* 0, or -1 when the buffer would exceed its maximum or memory ran out
 * (the buffer is unchanged then). */
int hutch__buf_add(hutch_buf *b, const void *data, size_t len);
int hutch__buf_addstr(hutch_buf *b, const char *s);
int hutch__buf_printf(hutch_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void hutch__buf_reset(hutch_buf *b);
/* Hand the data over to the caller (NUL-terminated, possibly "" when
 * empty); the buffer is empty afterwards.  NULL when out of memory. */
char *hutch__buf_detach(hutch_buf *b, size_t *len);
void hutch__buf_free(hutch_buf *b);

#endif
