/*
 * Unit tests: the exec stream demultiplexer.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "demux.h"

struct sink {
	char out[2][4096];
	size_t len[2];
	int calls;
	int stop_after; /* 0: never */
};

static int collect(int stream, const char *data, size_t len, void *p)
{
	struct sink *s = p;
	int i = stream == HUTCH_DEMUX_STDOUT ? 0 : 1;

	cr_assert(stream >= 1 && stream <= 3, "stream id %d handed out",
		  stream);
	cr_assert(s->len[i] + len <= sizeof(s->out[i]));
	memcpy(s->out[i] + s->len[i], data, len);
	s->len[i] += len;
	s->calls++;
	return s->stop_after && s->calls >= s->stop_after ? 42 : 0;
}

/* Append one frame to buf; returns new length. */
static size_t frame(unsigned char *buf, size_t at, int stream,
		    const char *payload, size_t len)
{
	buf[at] = (unsigned char)stream;
	buf[at + 1] = buf[at + 2] = buf[at + 3] = 0;
	buf[at + 4] = (unsigned char)(len >> 24);
	buf[at + 5] = (unsigned char)(len >> 16);
	buf[at + 6] = (unsigned char)(len >> 8);
	buf[at + 7] = (unsigned char)len;
	memcpy(buf + at + 8, payload, len);
	return at + 8 + len;
}

static size_t sample(unsigned char *buf)
{
	size_t n = 0;

	n = frame(buf, n, 1, "hello ", 6);
	n = frame(buf, n, 2, "oops\n", 5);
	n = frame(buf, n, 1, "", 0);
	n = frame(buf, n, 0, "world\n", 6); /* Podman's stream id 0 */
	n = frame(buf, n, 2, "bye\n", 4);
	return n;
}

Test(demux, whole_buffer)
{
	unsigned char buf[256];
	size_t n = sample(buf);
	struct sink s = { 0 };
	hutch_demux d;

	hutch__demux_init(&d);
	cr_assert_eq(hutch__demux_feed(&d, (char *)buf, n, collect, &s), 0);
	cr_assert_eq(s.len[0], 12);
	cr_assert_eq(memcmp(s.out[0], "hello world\n", 12), 0);
	cr_assert_eq(s.len[1], 9);
	cr_assert_eq(memcmp(s.out[1], "oops\nbye\n", 9), 0);
	cr_assert(hutch__demux_at_boundary(&d));
	cr_assert_eq(d.frames, 5);
}

/* Every way of cutting the stream in two, and byte by byte, gives the
 * same result: reads split frames and headers anywhere. */
Test(demux, split_anywhere)
{
	unsigned char buf[256];
	size_t n = sample(buf);

	for (size_t cut = 0; cut <= n; cut++) {
		struct sink s = { 0 };
		hutch_demux d;

		hutch__demux_init(&d);
		cr_assert_eq(hutch__demux_feed(&d, (char *)buf, cut, collect,
					       &s),
			     0);
		cr_assert_eq(hutch__demux_at_boundary(&d),
			     cut == 0 || cut == 14 || cut == 27 || cut == 35 ||
				     cut == 49 || cut == n,
			     "cut at %zu", cut);
		cr_assert_eq(hutch__demux_feed(&d, (char *)buf + cut, n - cut,
					       collect, &s),
			     0);
		cr_assert_eq(s.len[0], 12, "cut at %zu", cut);
		cr_assert_eq(memcmp(s.out[0], "hello world\n", 12), 0);
		cr_assert_eq(memcmp(s.out[1], "oops\nbye\n", 9), 0);
		cr_assert(hutch__demux_at_boundary(&d));
	}
	{
		struct sink s = { 0 };
		hutch_demux d;

		hutch__demux_init(&d);
		for (size_t i = 0; i < n; i++)
			cr_assert_eq(hutch__demux_feed(&d, (char *)buf + i, 1,
						       collect, &s),
				     0);
		cr_assert_eq(memcmp(s.out[0], "hello world\n", 12), 0);
		cr_assert_eq(s.len[1], 9);
	}
}

Test(demux, truncated_stream_is_not_at_boundary)
{
	unsigned char buf[64];
	size_t n = frame(buf, 0, 1, "abcdef", 6);
	struct sink s = { 0 };
	hutch_demux d;

	hutch__demux_init(&d);
	cr_assert_eq(hutch__demux_feed(&d, (char *)buf, n - 2, collect, &s), 0);
	cr_assert_not(hutch__demux_at_boundary(&d));
	cr_assert_eq(s.len[0], 4);
}

Test(demux, garbage_header_is_refused)
{
	static const char *bad[] = {
		"\x04\0\0\0\0\0\0\x01x",   /* unknown stream id */
		"\x01\x01\0\0\0\0\0\x01x", /* non-zero padding */
		"\x01\0\0\x05\0\0\0\x01x",
		"HTTP/1.1 200 OK\r\n", /* not a framed stream at all */
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct sink s = { 0 };
		hutch_demux d;

		hutch__demux_init(&d);
		cr_assert_eq(hutch__demux_feed(&d, bad[i], 9, collect, &s), -1,
			     "case %zu", i);
		cr_assert_eq(s.calls, 0);
		cr_assert_not(hutch__demux_at_boundary(&d));
		/* and it stays refused */
		cr_assert_eq(hutch__demux_feed(&d, "\x01\0\0\0\0\0\0\0", 8,
					       collect, &s),
			     -1);
	}
}

Test(demux, systemerr_stream_is_passed_on)
{
	unsigned char buf[64];
	size_t n = frame(buf, 0, 3, "exec failed", 11);
	struct sink s = { 0 };
	hutch_demux d;

	hutch__demux_init(&d);
	cr_assert_eq(hutch__demux_feed(&d, (char *)buf, n, collect, &s), 0);
	cr_assert_eq(s.len[1], 11);
}

Test(demux, callback_can_stop)
{
	unsigned char buf[256];
	size_t n = sample(buf);
	struct sink s = { .stop_after = 2 };
	hutch_demux d;

	hutch__demux_init(&d);
	cr_assert_eq(hutch__demux_feed(&d, (char *)buf, n, collect, &s), 42);
	cr_assert_eq(s.calls, 2);
}

/* A frame announcing 4 GiB streams through without being buffered. */
Test(demux, huge_frame_streams)
{
	unsigned char hdr[8] = { 1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff };
	char chunk[4096];
	struct sink s = { 0 };
	hutch_demux d;

	memset(chunk, 'z', sizeof(chunk));
	hutch__demux_init(&d);
	cr_assert_eq(hutch__demux_feed(&d, (char *)hdr, 8, collect, &s), 0);
	cr_assert_eq(d.remaining, 0xffffffffu);
	s.len[0] = 0;
	cr_assert_eq(hutch__demux_feed(&d, chunk, 1000, collect, &s), 0);
	cr_assert_eq(d.remaining, 0xffffffffu - 1000);
	cr_assert_eq(s.len[0], 1000);
}
