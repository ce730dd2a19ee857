/*
 * Unit tests: JSON from engines and JSON made of untrusted bytes.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>

#include "buf.h"
#include "engine_internal.h"
#include "utf8.h"

Test(json, parse_takes_exactly_one_document)
{
	json_object *o;

	o = hutch__json_parse("{\"Id\":\"ab\"}", 11);
	cr_assert_not_null(o);
	json_object_put(o);
	cr_assert_null(hutch__json_parse("{\"Id\":\"ab\"} trailing", 20));
	cr_assert_null(hutch__json_parse("{\"Id\":\"ab\"", 10));
	cr_assert_null(hutch__json_parse("", 0));
	cr_assert_null(hutch__json_parse(NULL, 5));
	cr_assert_null(hutch__json_parse("\xff\xfe", 2));
}

Test(json, deep_nesting_is_refused_not_crashing)
{
	size_t n = 100000;
	char *deep = malloc(n);

	memset(deep, '[', n);
	cr_assert_null(hutch__json_parse(deep, n));
	free(deep);
}

Test(json, error_message_from_non_object_bodies)
{
	char *m;

	cr_assert_null(hutch__engine_error_message("[1,2]", 5));
	cr_assert_null(hutch__engine_error_message("{\"message\":7}", 13));
	m = hutch__engine_error_message("{\"cause\":\"only cause\"}", 22);
	cr_assert_str_eq(m, "only cause");
	free(m);
	/* control bytes in a non-JSON body are not passed on */
	m = hutch__engine_error_message("bad\x01\x1b[31mred", 12);
	cr_assert_str_eq(m, "bad [31mred");
	free(m);
}

static int valid_json_string(const char *s, size_t len)
{
	json_object *str = json_object_new_string_len(s, (int)len), *back;
	const char *doc =
		json_object_to_json_string_ext(str, JSON_C_TO_STRING_PLAIN);
	int ok;

	back = json_tokener_parse(doc);
	ok = back && json_object_get_string_len(back) == (int)len &&
	     memcmp(json_object_get_string(back), s, len) == 0;
	json_object_put(back);
	json_object_put(str);
	return ok;
}

Test(json, repair_makes_invalid_utf8_valid)
{
	static const struct {
		const char *in;
		size_t len;
		const char *out;
	} cases[] = {
		{ "plain", 5, "plain" },
		{ "caf\xc3\xa9", 5, "caf\xc3\xa9" },
		{ "\xff", 1, "\xef\xbf\xbd" },
		{ "a\xc3", 2, "a\xef\xbf\xbd" }, /* truncated sequence */
		{ "\xc0\xaf", 2,
		  "\xef\xbf\xbd\xef\xbf\xbd" }, /* overlong '/' */
		{ "\xed\xa0\x80", 3,
		  "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" }, /* surrogate */
		{ "\xf4\x90\x80\x80", 4,
		  "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" },
		{ "\xf0\x9f\x98\x80", 4, "\xf0\x9f\x98\x80" }, /* emoji */
		{ "a\0b", 3, "a\0b" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t n;
		char *r = hutch__utf8_repair(cases[i].in, cases[i].len, &n);
		/* the last case holds a NUL byte: its length is known */
		size_t want = i == 8 ? 3 : strlen(cases[i].out);

		cr_assert_not_null(r);
		cr_assert_eq(n, want, "case %zu: length %zu, want %zu", i, n,
			     want);
		cr_assert_eq(memcmp(r, cases[i].out, n), 0, "case %zu", i);
		cr_assert(valid_json_string(r, n), "case %zu", i);
		free(r);
	}
}

/* Every byte value, and random bytes, come out as valid UTF-8. */
Test(json, repair_all_bytes)
{
	unsigned char all[256 * 3];
	size_t n;
	char *r;

	for (size_t i = 0; i < sizeof(all); i++)
		all[i] = (unsigned char)(i * 37 + i / 256);
	r = hutch__utf8_repair((char *)all, sizeof(all), &n);
	cr_assert_not_null(r);
	for (size_t i = 0; i < n;) {
		size_t k = hutch__utf8_seq_len((unsigned char *)r + i, n - i);

		cr_assert_gt(k, 0, "invalid byte left at %zu", i);
		i += k;
	}
	cr_assert(valid_json_string(r, n));
	free(r);
}

Test(json, buf_refuses_to_grow_past_its_max)
{
	hutch_buf b = HUTCH_BUF_INIT(10);
	size_t len;
	char *s;

	cr_assert_eq(hutch__buf_add(&b, "12345", 5), 0);
	cr_assert_eq(hutch__buf_add(&b, "67890", 5), 0);
	cr_assert_eq(hutch__buf_add(&b, "x", 1), -1);
	cr_assert_eq(b.len, 10);
	cr_assert_str_eq(b.data, "1234567890");
	cr_assert_eq(hutch__buf_add(&b, "x", (size_t)-1), -1);
	s = hutch__buf_detach(&b, &len);
	cr_assert_eq(len, 10);
	free(s);
	cr_assert_null(b.data);
	hutch__buf_free(&b);
}

/* An engine's message is capped: an error is one readable line. */
Test(json, long_engine_message_is_capped)
{
	size_t n = 100000;
	char *body = malloc(n + 32), *m;

	memcpy(body, "{\"message\":\"", 12);
	memset(body + 12, 'x', n);
	memcpy(body + 12 + n, "\"}", 3);
	m = hutch__engine_error_message(body, n + 14);
	cr_assert_not_null(m);
	cr_assert_eq(strlen(m), 1024);
	cr_assert_str_eq(m + 1021, "...");
	free(m);
	free(body);
}
