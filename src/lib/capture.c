/*
 * capture.c - bounded head+tail capture
 */
#include <stdlib.h>
#include <string.h>

#include "capture.h"

void hutch__capture_init(hutch_capture *c, size_t cap)
{
	memset(c, 0, sizeof(*c));
	c->ring_max = cap / 2;
	c->head = (hutch_buf)HUTCH_BUF_INIT(cap - c->ring_max);
}

static void ring_add(hutch_capture *c, const char *data, size_t len)
{
	size_t n;

	/* Only the last ring_max bytes of this piece can survive. */
	if (len > c->ring_max) {
		data += len - c->ring_max;
		len = c->ring_max;
	}
	while (len > 0) {
		n = c->ring_max - c->ring_pos;
		if (n > len)
			n = len;
		memcpy(c->ring + c->ring_pos, data, n);
		c->ring_pos = (c->ring_pos + n) % c->ring_max;
		c->ring_len += n;
		if (c->ring_len > c->ring_max)
			c->ring_len = c->ring_max;
		data += n;
		len -= n;
	}
}

int hutch__capture_add(hutch_capture *c, const char *data, size_t len)
{
	size_t n;

	c->total += len;
	if (c->head.len < c->head.max) {
		n = c->head.max - c->head.len;
		if (n > len)
			n = len;
		/* The buffer doubles as it fills, so small outputs stay small. */
		if (hutch__buf_add(&c->head, data, n) < 0)
			return -1;
		data += n;
		len -= n;
	}
	if (len == 0 || c->ring_max == 0)
		return 0;
	if (!c->ring) {
		c->ring = malloc(c->ring_max);
		if (!c->ring)
			return -1;
	}
	ring_add(c, data, len);
	return 0;
}

char *hutch__capture_take(hutch_capture *c, size_t *len, size_t *head_len,
			  uint64_t *omitted)
{
	size_t tail = c->ring_len, start, first;
	char *out = malloc(c->head.len + tail + 1);

	if (!out)
		return NULL;
	if (c->head.len)
		memcpy(out, c->head.data, c->head.len);
	/* The oldest byte of a full ring sits at ring_pos. */
	start = tail == c->ring_max ? c->ring_pos : 0;
	first = tail < c->ring_max - start ? tail : c->ring_max - start;
	if (tail) {
		memcpy(out + c->head.len, c->ring + start, first);
		memcpy(out + c->head.len + first, c->ring, tail - first);
	}
	out[c->head.len + tail] = '\0';
	*len = c->head.len + tail;
	*head_len = c->head.len;
	*omitted = c->total - c->head.len - tail;
	return out;
}

void hutch__capture_free(hutch_capture *c)
{
	hutch__buf_free(&c->head);
	free(c->ring);
	memset(c, 0, sizeof(*c));
}
