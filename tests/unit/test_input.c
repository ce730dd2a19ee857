/*
 * Unit tests: hostile input at hutch's edges - timeouts below the
 * resolution, bytes that are not UTF-8, names with control characters
 * (src/cli/duration.c, src/shared/utf8.c, src/lib/error.c).
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "duration.h"
#include "error.h"
#include "utf8.h"

Test(input, timeout_below_a_millisecond_is_not_none)
{
	uint64_t ms = 99;

	cr_assert_eq(cli_seconds_to_ms(0.0004, &ms), 0);
	cr_assert_eq(ms, 1, "0.0004 s became %llu ms", (unsigned long long)ms);
	cr_assert_eq(cli_seconds_to_ms(1e-300, &ms), 0);
	cr_assert_eq(ms, 1);
	cr_assert_eq(cli_seconds_to_ms(0.0015, &ms), 0);
	cr_assert_eq(ms, 2);
	cr_assert_eq(cli_seconds_to_ms(30, &ms), 0);
	cr_assert_eq(ms, 30000);
	/* Only a real 0 is "none". */
	cr_assert_eq(cli_seconds_to_ms(0, &ms), 0);
	cr_assert_eq(ms, 0);
	ms = 7;
	cr_assert_eq(cli_seconds_to_ms(-0.5, &ms), -1);
	cr_assert_eq(cli_seconds_to_ms(1e8, &ms), -1);
	cr_assert_eq(cli_seconds_to_ms(0.0 / 0.0, &ms), -1);
	cr_assert_eq(ms, 7, "untouched on failure");
}

Test(input, valid_len_stops_at_the_first_bad_byte)
{
	cr_assert_eq(hutch__utf8_valid_len("caf\xc3\xa9", 5), 5);
	cr_assert_eq(hutch__utf8_valid_len("caf\xe9", 4), 3);
	cr_assert_eq(hutch__utf8_valid_len("ab\xc0\xafz", 5), 2); /* overlong */
	cr_assert_eq(hutch__utf8_valid_len("\xed\xa0\x80", 3),
		     0); /* surrogate */
	cr_assert_eq(hutch__utf8_valid_len("x\xf0\x9f\x94", 4),
		     1); /* truncated */
	cr_assert_eq(hutch__utf8_valid_len("", 0), 0);
}

Test(input, escape_makes_one_visible_line)
{
	const char *in = "a\nb\x1b[31m\\c\xe9\xc2\x9b\xc3\xa9\t";
	char *s = hutch__utf8_escape(in, strlen(in), 100, 0);

	cr_assert_str_eq(s,
			 "a\\x0ab\\x1b[31m\\\\c\\xe9\\xc2\\x9b\xc3\xa9\\x09");
	free(s);
	/* A line of text keeps tabs and backslashes, not the rest. */
	in = "\tx = \"\\n\";\r\x1b]0;t\x07";
	s = hutch__utf8_escape(in, strlen(in), 100, HUTCH__ESC_TEXT);
	cr_assert_str_eq(s, "\tx = \"\\n\";\\x0d\\x1b]0;t\\x07");
	free(s);
	/* Cut, never inside a character. */
	s = hutch__utf8_escape("ab\xc3\xa9zz", 6, 3, 0);
	cr_assert_str_eq(s, "ab...");
	free(s);
	s = hutch__utf8_escape("abc", 3, 3, 0);
	cr_assert_str_eq(s, "abc");
	free(s);
}

Test(input, shown_copies_only_when_needed)
{
	char *own = (char *)1;
	const char *s = hutch__utf8_shown("plain \xc3\xa9", 0, &own);

	cr_assert_null(own);
	cr_assert_str_eq(s, "plain \xc3\xa9");
	s = hutch__utf8_shown("two\nlines", 0, &own);
	cr_assert_not_null(own);
	cr_assert_str_eq(s, "two\\x0alines");
	free(own);
	cr_assert_eq(hutch__utf8_needs_escape("a\\b", 3, 0), 1);
	cr_assert_eq(hutch__utf8_needs_escape("a\\b\t", 4, HUTCH__ESC_TEXT), 0);
}

Test(input, not_utf8_is_refused_with_the_byte_escaped)
{
	hutch_error *err = NULL;

	cr_assert_eq(hutch__error_if_not_utf8(&err, "argument 1", "ok \xc3\xa9",
					      5),
		     0);
	cr_assert_null(err);
	cr_assert_eq(hutch__error_if_not_utf8(&err, "argument 1", "caf\xe9\n",
					      5),
		     HUTCH_EINVALID);
	cr_assert_str_eq(
		hutch_error_message(err),
		"argument 1 'caf\\xe9\\x0a' is not valid UTF-8 (byte 0xe9 at "
		"offset 3): the engine would replace it, so it is refused");
	hutch_error_free(err);
}

/* Whatever a message quotes, it is valid UTF-8 (it goes out as JSON). */
Test(input, error_messages_are_valid_utf8)
{
	hutch_error *err = NULL;
	const char *m;

	hutch__error_set(&err, HUTCH_EINVALID, "bad '%.3s'", "ab\xc3\xa9");
	m = hutch_error_message(err);
	cr_assert_eq(hutch__utf8_valid_len(m, strlen(m)), strlen(m), "%s", m);
	cr_assert_str_eq(m, "bad 'ab\xef\xbf\xbd'");
	hutch__error_wrap(&err, HUTCH_EINVALID, "ctx \xff");
	m = hutch_error_message(err);
	cr_assert_eq(hutch__utf8_valid_len(m, strlen(m)), strlen(m), "%s", m);
	hutch_error_free(err);
}
