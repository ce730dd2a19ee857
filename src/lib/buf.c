/*
 * buf.c - capped growable buffers
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"

int hutch__buf_add(hutch_buf *b, const void *data, size_t len)
{
	size_t need, alloc;
	char *p;

	if (len > b->max || b->len > b->max - len)
		return -1;
	need = b->len + len + 1;
	if (need > b->alloc) {
		alloc = b->alloc ? b->alloc : 256;
		while (alloc < need)
			alloc = alloc > ((size_t)-1) / 2 ? need : alloc * 2;
		if (alloc > b->max + 1)
			alloc = b->max + 1;
		p = realloc(b->data, alloc);
		if (!p)
			return -1;
		b->data = p;
		b->alloc = alloc;
	}
	if (len)
		memcpy(b->data + b->len, data, len);
	b->len += len;
	b->data[b->len] = '\0';
	return 0;
}

int hutch__buf_addstr(hutch_buf *b, const char *s)
{
	return hutch__buf_add(b, s, strlen(s));
}

int hutch__buf_printf(hutch_buf *b, const char *fmt, ...)
{
	va_list ap;
	char *s = NULL;
	int n, rc;

	va_start(ap, fmt);
	n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -1;
	rc = hutch__buf_add(b, s, (size_t)n);
	free(s);
	return rc;
}

void hutch__buf_reset(hutch_buf *b)
{
	b->len = 0;
	if (b->data)
		b->data[0] = '\0';
}

char *hutch__buf_detach(hutch_buf *b, size_t *len)
{
	char *p = b->data;

	if (!p)
		p = calloc(1, 1);
	if (len)
		*len = p ? b->len : 0;
	b->data = NULL;
	b->len = b->alloc = 0;
	return p;
}

void hutch__buf_free(hutch_buf *b)
{
	if (!b)
		return;
	free(b->data);
	b->data = NULL;
	b->len = b->alloc = 0;
}
