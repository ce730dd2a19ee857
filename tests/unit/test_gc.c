/*
 * test_gc.c - the pure parts of hutch gc: durations and the engines' times
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "base64.h"
#include "duration.h"
#include "timestamp.h"

static long long dur(const char *s)
{
	long long v = -12345;

	cr_assert_eq(cli_parse_duration(s, &v), 0, "'%s' refused", s);
	return v;
}

static void dur_bad(const char *s)
{
	long long v = -12345;

	cr_assert_eq(cli_parse_duration(s, &v), -1, "'%s' accepted as %lld", s,
		     v);
	cr_assert_eq(v, -12345, "'%s': output touched on failure", s);
}

Test(duration, units)
{
	cr_assert_eq(dur("90s"), 90);
	cr_assert_eq(dur("30m"), 1800);
	cr_assert_eq(dur("2h"), 7200);
	cr_assert_eq(dur("7d"), 7 * 86400);
	cr_assert_eq(dur("1h30m"), 5400);
	cr_assert_eq(dur("1d2h3m4s"), 86400 + 7200 + 180 + 4);
	cr_assert_eq(dur("90m"), 5400);
	cr_assert_eq(dur("0"), 0);
	cr_assert_eq(dur("0s"), 0);
	cr_assert_eq(dur("007m"), 420);
	cr_assert_eq(dur("36500d"), CLI_DURATION_MAX);
}

Test(duration, refused)
{
	const char *bad[] = {
		"",
		"90",
		"1",
		"-1h",
		"+1h",
		"1.5h",
		"h",
		"1h30",
		"1x",
		"1H",
		"1 h",
		" 1h",
		"1h ",
		"30m1h",
		"1h1h",
		"1s1m",
		"1hh",
		"1d1d",
		"0x",
		"00",
		"36501d",
		"99999999999999999999s",
		"9223372036854775807s",
		"1h-30m",
		"1w",
		"1ms",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		dur_bad(bad[i]);
	cr_assert_eq(cli_parse_duration(NULL, NULL), -1);
}

Test(duration, format_round_trips)
{
	static const struct {
		long long v;
		const char *s;
	} cases[] = {
		{ 0, "0s" },
		{ -5, "0s" },
		{ 45, "45s" },
		{ 60, "1m0s" },
		{ 3599, "59m59s" },
		{ 3600, "1h0m" },
		{ 7500, "2h5m" },
		{ 86400, "1d0h" },
		{ 3 * 86400 + 4 * 3600, "3d4h" },
	};
	char buf[32];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cli_format_duration(buf, sizeof(buf), cases[i].v);
		cr_assert_str_eq(buf, cases[i].s);
		/* What it prints, the parser takes back (whole units). */
		if (cases[i].v >= 0 &&
		    (cases[i].v < 3600 || cases[i].v % 60 == 0))
			cr_assert_eq(dur(buf), cases[i].v, "%s", buf);
	}
}

static long long when(const char *s)
{
	long long v = 0;

	cr_assert_eq(hutch__time_parse(s, &v), 0, "'%s' refused", s);
	return v;
}

Test(enginetime, rfc3339)
{
	cr_assert_eq(when("1970-01-01T00:00:00Z"), 0);
	cr_assert_eq(when("2024-05-01T12:00:00Z"), 1714564800);
	cr_assert_eq(when("2024-05-01T12:00:00.123456789Z"), 1714564800);
	cr_assert_eq(when("2024-05-01T14:00:00+02:00"), 1714564800);
	cr_assert_eq(when("2024-05-01T11:30:00.5-00:30"), 1714564800);
	cr_assert_eq(when("2024-02-29T00:00:00Z"), 1709164800);
	cr_assert_eq(when("1970-01-12T13:46:40Z"), 1000000);
	/* Docker's "never" is far in the past, never newer than a real time. */
	cr_assert_lt(when("0001-01-01T00:00:00Z"), -62000000000LL);
}

Test(enginetime, refused)
{
	const char *bad[] = {
		"",
		"2024-05-01",
		"2024-05-01T12:00:00",
		"2024-05-01T12:00:00+0200",
		"2024-13-01T12:00:00Z",
		"2023-02-29T00:00:00Z",
		"2024-05-01T24:00:00Z",
		"2024-05-01T12:00:00.Z",
		"2024-05-01T12:00:00Zjunk",
		"x024-05-01T12:00:00Z",
		"0000-01-01T00:00:00Z",
	};
	long long v;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_eq(hutch__time_parse(bad[i], &v), -1, "'%s' accepted",
			     bad[i]);
}

Test(enginetime, path_stat_header)
{
	long long v = 0;

	/* Docker 20.10 and Podman 4.3 as they answered a HEAD. */
	cr_assert_eq(
		hutch__path_stat_mtime(
			"eyJuYW1lIjoibGFzdC11c2VkIiwic2l6ZSI6MCwibW9kZSI6NDIwLCJtdGltZSI6IjE5NzAtMDEtMTJUMTM6NDY6NDBaIiwibGlua1RhcmdldCI6IiJ9",
			&v),
		0);
	cr_assert_eq(v, 1000000);
	v = 0;
	cr_assert_eq(
		hutch__path_stat_mtime(
			"eyJuYW1lIjoibGFzdC11c2VkIiwic2l6ZSI6MCwibW9kZSI6NDIwLCJtdGltZSI6IjE5NzAtMDEtMTJUMTM6NDY6NDBaIiwiaXNEaXIiOmZhbHNlLCJsaW5rVGFyZ2V0IjoiLy5odXRjaC91c2UvbGFzdC11c2VkIn0=",
			&v),
		0);
	cr_assert_eq(v, 1000000);
	cr_assert_eq(hutch__path_stat_mtime("", &v), -1);
	cr_assert_eq(hutch__path_stat_mtime(NULL, &v), -1);
	cr_assert_eq(hutch__path_stat_mtime("not base64!", &v), -1);
	/* {"name":"x"}: no mtime */
	cr_assert_eq(hutch__path_stat_mtime("eyJuYW1lIjoieCJ9", &v), -1);
	/* {"mtime":5} */
	cr_assert_eq(hutch__path_stat_mtime("eyJtdGltZSI6NX0=", &v), -1);
}

/* The one encoder the library has (environment texts for the agent,
 * redaction patterns): RFC 4648's vectors, both alphabets, and a round
 * trip through the decoder the agent and the header parser use. */
Test(enginetime, base64_encode_vectors_and_round_trip)
{
	static const char *const plain[] = { "",     "f",     "fo",    "foo",
					     "foob", "fooba", "foobar" };
	static const char *const padded[] = {
		"", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"
	};
	static const unsigned char high[] = { 0xfb, 0xff, 0xbf };
	char out[64];
	size_t n;

	for (size_t i = 0; i < sizeof(plain) / sizeof(*plain); i++) {
		size_t len = strlen(plain[i]);

		n = hutch__b64_encode(out, (const unsigned char *)plain[i], len,
				      HUTCH__B64_PAD);
		cr_assert_str_eq(out, padded[i]);
		cr_assert_eq(n, strlen(padded[i]));
		n = hutch__b64_encode(out, (const unsigned char *)plain[i], len,
				      0);
		cr_assert_eq(n, strcspn(padded[i], "="));
		cr_assert_eq(strncmp(out, padded[i], n), 0);
	}
	hutch__b64_encode(out, high, sizeof(high), 0);
	cr_assert_str_eq(out, "+/+/");
	hutch__b64_encode(out, high, sizeof(high), HUTCH__B64_URL);
	cr_assert_str_eq(out, "-_-_");

	{
		hutch__b64 dec = HUTCH__B64_INIT;
		unsigned char back[8];
		size_t m = 0;
		int d;

		hutch__b64_encode(out, (const unsigned char *)"foobar", 6, 0);
		for (const char *p = out; *p; p++) {
			d = hutch__b64_feed(&dec, (unsigned char)*p, &back[m]);
			cr_assert_geq(d, 0);
			m += (size_t)d;
		}
		cr_assert_eq(m, 6);
		cr_assert_eq(memcmp(back, "foobar", 6), 0);
	}
}
