/*
 * Unit tests: bounded head+tail capture of command output.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "capture.h"

static char *take(hutch_capture *c, size_t *len, size_t *head,
		  uint64_t *omitted)
{
	char *s = hutch__capture_take(c, len, head, omitted);

	cr_assert_not_null(s);
	return s;
}

Test(capture, small_output_is_kept_whole)
{
	hutch_capture c;
	size_t len, head;
	uint64_t omitted;
	char *s;

	hutch__capture_init(&c, 100);
	cr_assert_eq(hutch__capture_add(&c, "hello ", 6), 0);
	cr_assert_eq(hutch__capture_add(&c, "world", 5), 0);
	s = take(&c, &len, &head, &omitted);
	cr_assert_str_eq(s, "hello world");
	cr_assert_eq(len, 11);
	cr_assert_eq(head, 11);
	cr_assert_eq(omitted, 0);
	free(s);
	hutch__capture_free(&c);
}

/* Feed 0..N-1 as bytes in pieces of every size; the capture keeps the
 * first cap/2 and the last cap/2 bytes and counts the rest. */
Test(capture, keeps_head_and_tail)
{
	for (size_t piece = 1; piece <= 40; piece++) {
		hutch_capture c;
		unsigned char data[1000];
		size_t len, head;
		uint64_t omitted;
		char *s;

		for (size_t i = 0; i < sizeof(data); i++)
			data[i] = (unsigned char)(i * 7);
		hutch__capture_init(&c, 64);
		for (size_t at = 0; at < sizeof(data); at += piece) {
			size_t n = sizeof(data) - at < piece ?
					   sizeof(data) - at :
					   piece;

			cr_assert_eq(hutch__capture_add(&c, (char *)data + at,
							n),
				     0);
		}
		s = take(&c, &len, &head, &omitted);
		cr_assert_eq(len, 64, "piece %zu", piece);
		cr_assert_eq(head, 32);
		cr_assert_eq(omitted, 1000 - 64);
		cr_assert_eq(c.total, 1000);
		cr_assert_eq(memcmp(s, data, 32), 0, "head, piece %zu", piece);
		cr_assert_eq(memcmp(s + 32, data + 1000 - 32, 32), 0,
			     "tail, piece %zu", piece);
		free(s);
		hutch__capture_free(&c);
	}
}

Test(capture, exactly_at_cap_omits_nothing)
{
	hutch_capture c;
	char data[64];
	size_t len, head;
	uint64_t omitted;
	char *s;

	memset(data, 'q', sizeof(data));
	hutch__capture_init(&c, 64);
	cr_assert_eq(hutch__capture_add(&c, data, 64), 0);
	s = take(&c, &len, &head, &omitted);
	cr_assert_eq(len, 64);
	cr_assert_eq(omitted, 0);
	free(s);
	hutch__capture_free(&c);
}

/* Memory stays at the cap however much is written. */
Test(capture, memory_is_bounded)
{
	hutch_capture c;
	static char chunk[65536];
	size_t len, head;
	uint64_t omitted;
	char *s;

	memset(chunk, 'x', sizeof(chunk));
	hutch__capture_init(&c, 1024);
	for (int i = 0; i < 2048; i++) /* 128 MiB */
		cr_assert_eq(hutch__capture_add(&c, chunk, sizeof(chunk)), 0);
	/* The head holds its 512 bytes and the buffer's NUL. */
	cr_assert_eq(c.head.max, 512);
	cr_assert_leq(c.head.alloc, 512 + 1);
	cr_assert_eq(c.ring_max, 512);
	s = take(&c, &len, &head, &omitted);
	cr_assert_eq(len, 1024);
	cr_assert_eq(omitted, 2048ULL * 65536 - 1024);
	free(s);
	hutch__capture_free(&c);
}

Test(capture, keeps_nul_bytes)
{
	hutch_capture c;
	size_t len, head;
	uint64_t omitted;
	char *s;

	hutch__capture_init(&c, 16);
	cr_assert_eq(hutch__capture_add(&c, "a\0b", 3), 0);
	s = take(&c, &len, &head, &omitted);
	cr_assert_eq(len, 3);
	cr_assert_eq(memcmp(s, "a\0b", 3), 0);
	free(s);
	hutch__capture_free(&c);
}
