/*
 * capture.h - keep the head and the tail of a stream of any size
 *
 * A capture holds at most `cap` bytes: the first half of the cap as it
 * arrives, then a ring of the most recent bytes for the second half.  It
 * never refuses input, so the command writing into it never blocks, and
 * its memory stays bounded whatever the command prints.
 */
#ifndef HUTCH_CAPTURE_H
#define HUTCH_CAPTURE_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"

typedef struct {
	hutch_buf head; /* the first bytes, up to head.max */
	char *ring;
	size_t ring_max, ring_pos, ring_len;
	uint64_t total;
} hutch_capture;

void hutch__capture_init(hutch_capture *c, size_t cap);
/* 0, or -1 when out of memory. */
int hutch__capture_add(hutch_capture *c, const char *data, size_t len);
/* Head then tail as one NUL-terminated string, which the caller frees.
 * `*head_len` is where the head ends; `*omitted` how many bytes between
 * head and tail were dropped.  NULL when out of memory. */
char *hutch__capture_take(hutch_capture *c, size_t *len, size_t *head_len,
			  uint64_t *omitted);
void hutch__capture_free(hutch_capture *c);

#endif
