/*
 * demux.h - the engine's multiplexed exec stream, as a pure state machine
 *
 * A non-TTY exec stream is a sequence of frames: an 8-byte header
 * {stream, 0, 0, 0, size (big-endian u32)} and `size` bytes of payload.
 * Reads split frames anywhere, so the parser keeps its place between calls.
 * Bytes in, callbacks out: no I/O and no allocation, so a frame of any size
 * streams through in constant memory.
 */
#ifndef HUTCH_DEMUX_H
#define HUTCH_DEMUX_H

#include <stddef.h>
#include <stdint.h>

enum {
	HUTCH_DEMUX_STDOUT = 1,
	HUTCH_DEMUX_STDERR = 2,
	HUTCH_DEMUX_SYSTEMERR =
		3, /* Docker's own error text, not the command's */
};

/* Called with payload bytes of one stream; a frame may arrive in several
 * calls.  Non-zero return stops the feed and is returned by it. */
typedef int (*hutch_demux_cb)(int stream, const char *data, size_t len,
			      void *payload);

typedef struct {
	unsigned char header[8];
	size_t header_len;  /* header bytes collected so far */
	uint32_t remaining; /* payload bytes left in the current frame */
	int stream;	    /* stream of the current frame */
	int failed;	    /* a malformed header was seen */
	uint64_t frames;
} hutch_demux;

void hutch__demux_init(hutch_demux *d);

/*
 * Feed `len` bytes.  Returns 0, the callback's non-zero value, or -1 when a
 * header is malformed (unknown stream id, non-zero padding); after that the
 * parser refuses further input.  Stream id 0 (sent by Podman) counts as
 * stdout.  Empty frames are skipped.
 */
int hutch__demux_feed(hutch_demux *d, const char *data, size_t len,
		      hutch_demux_cb cb, void *payload);

/* 1 when the stream ended cleanly, i.e. not inside a frame. */
int hutch__demux_at_boundary(const hutch_demux *d);

#endif
