/*
 * fuzz_demux.c - the exec stream demultiplexer (src/lib/demux.c)
 *
 * The engine's bytes are cut into reads of sizes taken from the input and
 * fed piece by piece; the same bytes fed at once must give the same
 * frames, and no payload byte may come out that did not go in.
 */
#include <string.h>

#include "demux.h"
#include "fuzz.h"

struct seen {
	uint64_t bytes[4];
	uint64_t calls;
};

static int on_frame(int stream, const char *data, size_t len, void *p)
{
	struct seen *s = p;

	FUZZ_CHECK(stream >= 1 && stream <= 3);
	FUZZ_CHECK(len > 0 && data != NULL);
	s->bytes[stream] += len;
	s->calls++;
	return 0;
}

FUZZ_TARGET(demux)
{
	hutch_demux a, b;
	struct seen sa = { { 0 }, 0 }, sb = { { 0 }, 0 };
	size_t at = 0, piece;
	int ra = 0, rb;

	if (size < 1)
		return 0;
	piece = (size_t)data[0] % 23 + 1;
	data++;
	size--;
	hutch__demux_init(&a);
	while (at < size && ra == 0) {
		size_t n = size - at < piece ? size - at : piece;

		ra = hutch__demux_feed(&a, (const char *)data + at, n, on_frame,
				       &sa);
		at += n;
	}
	hutch__demux_init(&b);
	rb = hutch__demux_feed(&b, (const char *)data, size, on_frame, &sb);
	FUZZ_CHECK(ra == rb);
	FUZZ_CHECK(memcmp(sa.bytes, sb.bytes, sizeof(sa.bytes)) == 0);
	FUZZ_CHECK(a.frames == b.frames);
	FUZZ_CHECK(hutch__demux_at_boundary(&a) ==
		   hutch__demux_at_boundary(&b));
	FUZZ_CHECK(sa.bytes[1] + sa.bytes[2] + sa.bytes[3] + 8 * a.frames <=
		   size);
	return 0;
}
