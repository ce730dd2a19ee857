/*
 * Unit tests: streaming secret redaction (src/lib/redact.c).
 *
 * Encodings are computed here with code of their own (a bit-at-a-time
 * base64), not the library's, so a mistake in one is not hidden by the
 * same mistake in the other.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redact.h"

static hutch__secrets *set_of(const char *a, const char *b)
{
	const char *v[2] = { a, b };
	size_t l[2] = { strlen(a), b ? strlen(b) : 0 };
	hutch__secrets *set = NULL;
	const char *why = NULL;

	cr_assert_eq(hutch__secrets_new(&set, v, l, b ? 2 : 1, &why), 0, "%s",
		     why);
	return set;
}

static char *redact(const hutch__secrets *set, const char *s)
{
	char *out = hutch__redact_buffer(set, s, strlen(s), 0, NULL);

	cr_assert_not_null(out);
	return out;
}

struct sink {
	char buf[1 << 16];
	size_t len;
};

static int to_sink(const char *data, size_t len, void *p)
{
	struct sink *s = p;

	cr_assert_leq(s->len + len, sizeof(s->buf));
	memcpy(s->buf + s->len, data, len);
	s->len += len;
	return 0;
}

/* Bit-at-a-time base64, for comparison. */
static void b64_ref(char *out, const unsigned char *in, size_t len, int url,
		    int pad)
{
	const char *alpha =
		url ? "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_" :
		      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t bits = len * 8, o = 0;

	for (size_t b = 0; b < bits; b += 6) {
		unsigned v = 0;

		for (size_t k = 0; k < 6; k++) {
			size_t bit = b + k;
			unsigned x = bit < bits ?
					     (in[bit / 8] >> (7 - bit % 8)) &
						     1 :
					     0;

			v = v << 1 | x;
		}
		out[o++] = alpha[v];
	}
	while (pad && o % 4)
		out[o++] = '=';
	out[o] = '\0';
}

Test(redact, raw_value_is_replaced)
{
	hutch__secrets *set = set_of("hunter2-token", NULL);
	char *out = redact(set, "pw=hunter2-token; again hunter2-token.");

	cr_assert_str_eq(out, "pw=[REDACTED]; again [REDACTED].");
	free(out);
	hutch__secrets_free(set);
}

Test(redact, nothing_to_hide_passes_through)
{
	hutch__secrets *set = set_of("s3cr3t-value", NULL);
	char *out = redact(set, "s3cr3t-valu and 3cr3t-value and nothing else");

	cr_assert_str_eq(out, "s3cr3t-valu and 3cr3t-value and nothing else");
	free(out);
	out = redact(set, "");
	cr_assert_str_eq(out, "");
	free(out);
	hutch__secrets_free(set);
}

Test(redact, hex_both_cases)
{
	hutch__secrets *set = set_of("Key!\xff", NULL);
	char *out = redact(set, "a 4b657921ff b 4B657921FF c 4b657921FF");

	/* Mixed case is not one of the encodings. */
	cr_assert_str_eq(out, "a [REDACTED] b [REDACTED] c 4b657921FF");
	free(out);
	hutch__secrets_free(set);
}

/* The value after 0, 1 and 2 bytes of something, then more bytes, in both
 * alphabets, padded or not: what is left of the encoding around the mask
 * carries at most the few bits it shares with its neighbours. */
Test(redact, base64_every_alignment)
{
	const char *secret =
		"tok>>>en?~secret-value"; /* has + and / in base64 */
	hutch__secrets *set = set_of(secret, NULL);
	unsigned char in[64];
	char enc[128], text[160], *out;
	size_t slen = strlen(secret);

	for (int url = 0; url < 2; url++)
		for (size_t pre = 0; pre < 6; pre++)
			for (size_t post = 0; post < 4; post++)
				for (int pad = 0; pad < 2; pad++) {
					size_t n = 0, left, right;
					char *m;

					for (size_t i = 0; i < pre; i++)
						in[n++] = (unsigned char)('A' +
									  i);
					memcpy(in + n, secret, slen);
					n += slen;
					for (size_t i = 0; i < post; i++)
						in[n++] = (unsigned char)('z' -
									  i);
					b64_ref(enc, in, n, url, pad);
					snprintf(text, sizeof(text), "<%s>",
						 enc);
					out = redact(set, text);
					m = strstr(out, HUTCH_REDACTED);
					cr_assert_not_null(
						m,
						"url %d pre %zu post %zu: %s",
						url, pre, post, out);
					/* Characters before the mask: those of the
					 * prefix plus at most one shared one. */
					left = (size_t)(m - out) - 1;
					right = strlen(m +
						       strlen(HUTCH_REDACTED)) -
						1;
					cr_assert_leq(left,
						      (pre * 8 + 5) / 6 + 1,
						      "%s -> %s", text, out);
					cr_assert_leq(right,
						      (post * 8 + 5) / 6 + 1 +
							      2,
						      "%s -> %s", text, out);
					free(out);
				}
	hutch__secrets_free(set);
}

/* The value alone, padded: nothing of it is left, not even the '='s. */
Test(redact, base64_whole_value_padded)
{
	hutch__secrets *set = set_of("abcd", NULL);
	char *out = redact(set, "YWJjZA== YWJjZA YWJjZA=");

	cr_assert_str_eq(out, "[REDACTED] [REDACTED] [REDACTED]=");
	free(out);
	hutch__secrets_free(set);
}

Test(redact, overlapping_occurrences_are_one_mask)
{
	hutch__secrets *set = set_of("abab", NULL);
	char *out = redact(set, "xababababy abababab");

	/* "ababab..." overlaps itself: one run.  Two values back to back
	 * that only touch are two. */
	cr_assert_str_eq(out, "x[REDACTED]y [REDACTED]");
	free(out);
	hutch__secrets_free(set);
	set = set_of("wxyz", "zq12");
	out = redact(set, "wxyzq12 wxyzwxyz");
	cr_assert_str_eq(out, "[REDACTED] [REDACTED][REDACTED]");
	free(out);
	hutch__secrets_free(set);
}

/* One secret inside another's encoding, a prefix of another... */
Test(redact, several_secrets)
{
	hutch__secrets *set = set_of("password", "pass-phrase-long");
	char *out =
		redact(set, "password pass-phrase-long pass-phrase passwor");

	cr_assert_str_eq(out, "[REDACTED] [REDACTED] pass-phrase passwor");
	free(out);
	hutch__secrets_free(set);
}

/* Cutting the stream anywhere, into pieces of any size, gives the same
 * output as the whole buffer at once. */
Test(redact, stream_cut_anywhere)
{
	hutch__secrets *set = set_of("S3CRET-abc", "second/secret+");
	char text[4096], *whole;
	size_t len = 0, wlen;
	unsigned seed = 7;

	while (len < sizeof(text) - 64) {
		seed = seed * 1103515245u + 12345u;
		switch ((seed >> 16) % 7) {
		case 0:
			len += (size_t)sprintf(text + len, "S3CRET-abc");
			break;
		case 1:
			len += (size_t)sprintf(text + len, "UzNDUkVULWFiYw==");
			break;
		case 2:
			len += (size_t)sprintf(text + len, "533343524554");
			break;
		case 3:
			len += (size_t)sprintf(text + len, "second/secret+");
			break;
		case 4:
			len += (size_t)sprintf(text + len, "S3CRET-ab");
			break;
		default:
			text[len++] = (char)('a' + (seed >> 20) % 26);
			break;
		}
	}
	whole = hutch__redact_buffer(set, text, len, 0, &wlen);
	cr_assert_not_null(whole);
	cr_assert_null(memmem(whole, wlen, "S3CRET-abc", 10));
	cr_assert_null(memmem(whole, wlen, "second/secret+", 14));
	for (size_t piece = 1; piece < 40; piece += (piece < 12 ? 1 : 7)) {
		hutch__redactor r;
		static struct sink s;

		s.len = 0;
		cr_assert_eq(hutch__redactor_init(&r, set), 0);
		for (size_t at = 0; at < len; at += piece)
			cr_assert_eq(hutch__redact_feed(&r, text + at,
							len - at < piece ?
								len - at :
								piece,
							to_sink, &s),
				     0);
		cr_assert_eq(hutch__redact_flush(&r, 0, to_sink, &s), 0);
		cr_assert_eq(s.len, wlen, "piece %zu", piece);
		cr_assert_eq(memcmp(s.buf, whole, wlen), 0, "piece %zu", piece);
		hutch__redactor_free(&r);
	}
	free(whole);
	hutch__secrets_free(set);
}

/* The held-back bytes are bounded by the longest pattern, and the rest
 * leaves at once: a stream that stops short of a flush has shown all but
 * that much. */
Test(redact, holds_back_at_most_the_longest_pattern)
{
	hutch__secrets *set = set_of("0123456789", NULL);
	hutch__redactor r;
	static struct sink s;
	char text[1000];

	/* every byte percent-encoded */
	cr_assert_eq(hutch__secrets_max_pattern(set), 30);
	memset(text, '.', sizeof(text));
	cr_assert_eq(hutch__redactor_init(&r, set), 0);
	s.len = 0;
	cr_assert_eq(hutch__redact_feed(&r, text, sizeof(text), to_sink, &s),
		     0);
	cr_assert_eq(s.len, sizeof(text) - 29);
	cr_assert_eq(hutch__redact_flush(&r, 0, to_sink, &s), 0);
	cr_assert_eq(s.len, sizeof(text));
	hutch__redactor_free(&r);
	hutch__secrets_free(set);
}

/* A sink that asks to stop stops the feed with its value. */
static int stop_sink(const char *data, size_t len, void *p)
{
	(void)data;
	(void)len;
	(void)p;
	return 7;
}

Test(redact, sink_stops_the_feed)
{
	hutch__secrets *set = set_of("abcdef", NULL);
	hutch__redactor r;
	char text[10000];

	memset(text, 'x', sizeof(text));
	cr_assert_eq(hutch__redactor_init(&r, set), 0);
	cr_assert_eq(
		hutch__redact_feed(&r, text, sizeof(text), stop_sink, NULL), 7);
	hutch__redactor_free(&r);
	hutch__secrets_free(set);
	/* Without secrets the bytes pass straight through. */
	cr_assert_eq(hutch__redactor_init(&r, NULL), 0);
	cr_assert_eq(hutch__redact_feed(&r, "abc", 3, stop_sink, NULL), 7);
	cr_assert_eq(hutch__redact_flush(&r, 0, stop_sink, NULL), 0);
	hutch__redactor_free(&r);
}

Test(redact, limits)
{
	const char *v[33];
	size_t l[33];
	hutch__secrets *set = NULL;
	const char *why = NULL;
	static char big[HUTCH_SECRET_MAX_LEN + 2];

	v[0] = "abc";
	l[0] = 3;
	cr_assert_eq(hutch__secrets_new(&set, v, l, 1, &why), -1);
	cr_assert_not_null(strstr(why, "shorter than 4"));
	memset(big, 'x', sizeof(big) - 1);
	v[0] = big;
	l[0] = HUTCH_SECRET_MAX_LEN + 1;
	cr_assert_eq(hutch__secrets_new(&set, v, l, 1, &why), -1);
	for (int i = 0; i < 33; i++) {
		v[i] = "abcd";
		l[i] = 4;
	}
	cr_assert_eq(hutch__secrets_new(&set, v, l, 33, &why), -1);
	for (int i = 0; i < 5; i++) {
		v[i] = big;
		l[i] = HUTCH_SECRET_MAX_LEN;
	}
	cr_assert_eq(hutch__secrets_new(&set, v, l, 5, &why), -1);
	cr_assert_null(set);
	/* The largest allowed set builds. */
	cr_assert_eq(hutch__secrets_new(&set, v, l, 4, &why), 0);
	hutch__secrets_free(set);
}

/* A stream cut short in the middle of a secret: the start that made it
 * out is masked when it is long enough to mean anything. */
Test(redact, cut_stream_masks_a_started_secret)
{
	hutch__secrets *set = set_of("correct-horse", NULL);
	char *out = hutch__redact_buffer(set, "x correct-ho", 12, 1, NULL);

	cr_assert_str_eq(out, "x [REDACTED]");
	free(out);
	out = hutch__redact_buffer(set, "x correct-ho", 12, 0, NULL);
	cr_assert_str_eq(out, "x correct-ho");
	free(out);
	out = hutch__redact_buffer(set, "x cor", 5, 1, NULL);
	cr_assert_str_eq(out, "x cor");
	free(out);
	hutch__secrets_free(set);
}

/* Percent-encodings as the usual encoders write them (the expected texts
 * are written out by hand, as Python's quote/quote_plus and JavaScript's
 * encodeURIComponent give them). */
Test(redact, percent_encoded_forms)
{
	hutch__secrets *set = set_of("p@ss/w rd!é", NULL);
	static const char *const forms[] = {
		"p%40ss%2Fw%20rd%21%C3%A9", /* RFC 3986, quote(safe='') */
		"p%40ss%2fw%20rd%21%c3%a9", /* lower-case hex */
		"p%40ss%2Fw%20rd!%C3%A9",   /* encodeURIComponent */
		"p%40ss/w%20rd%21%C3%A9",   /* Python's quote() */
		"p%40ss%2Fw+rd%21%C3%A9",   /* quote_plus, forms */
		"%70%40%73%73%2F%77%20%72%64%21%C3%A9", /* every byte */
	};

	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
		char in[128], *out;

		snprintf(in, sizeof(in), "url=%s&x=1", forms[i]);
		out = redact(set, in);
		cr_assert_str_eq(out, "url=[REDACTED]&x=1", "form %zu: %s", i,
				 out);
		free(out);
	}
	hutch__secrets_free(set);
}

/* JSON string escapes: what json.dumps (ensure_ascii), JSON.stringify,
 * json-c, PHP and Go write for the value. */
Test(redact, json_escaped_forms)
{
	hutch__secrets *set = set_of("a\"b\\c/d<é\n\xf0\x9f\x94\x91", NULL);
	static const char *const forms[] = {
		"a\\\"b\\\\c/d<\xc3\xa9\\n\xf0\x9f\x94\x91", /* JSON.stringify */
		"a\\\"b\\\\c\\/d<\xc3\xa9\\n\xf0\x9f\x94\x91", /* json-c */
		"a\\\"b\\\\c/d<\\u00e9\\n\\ud83d\\udd11",      /* json.dumps */
		"a\\\"b\\\\c\\/d<\\u00e9\\n\\ud83d\\udd11",    /* PHP */
		"a\\\"b\\\\c/d\\u003c\xc3\xa9\\n\xf0\x9f\x94\x91", /* Go */
		"a\\\"b\\\\c/d<\\u00E9\\n\\uD83D\\uDD11", /* upper-case */
	};

	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
		char in[128], *out;

		snprintf(in, sizeof(in), "{\"k\":\"%s\"}", forms[i]);
		out = redact(set, in);
		cr_assert_str_eq(out, "{\"k\":\"[REDACTED]\"}", "form %zu: %s",
				 i, out);
		free(out);
	}
	hutch__secrets_free(set);
}

/* A result keeps its set alive after the session dropped it. */
Test(redact, reference_outlives_the_first_owner)
{
	hutch__secrets *set = set_of("hunter2-token", NULL);
	hutch__secrets *mine = hutch__secrets_ref(set);
	char *out;

	hutch__secrets_free(set);
	out = redact(mine, "x hunter2-token y");
	cr_assert_str_eq(out, "x [REDACTED] y");
	free(out);
	hutch__secrets_free(mine);
	hutch__secrets_free(NULL);
	cr_assert_null(hutch__secrets_ref(NULL));
}
