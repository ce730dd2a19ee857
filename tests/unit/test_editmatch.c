/*
 * Unit tests: the edit matcher (src/agent/editmatch.c).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../src/agent/editmatch.h"

static struct em_result res;

static int edit(const char *file, const char *old, const char *new_text,
		bool all)
{
	em_result_free(&res);
	return em_edit(file, strlen(file), old, strlen(old), new_text,
		       strlen(new_text), all, &res);
}

static void fini(void)
{
	em_result_free(&res);
}

TestSuite(editmatch, .fini = fini, .timeout = 120);

#define OUT_EQ(want)                                                     \
	do {                                                             \
		cr_assert_not_null(res.out);                             \
		cr_expect_eq(res.out_len, strlen(want), "len %zu: [%s]", \
			     res.out_len, res.out);                      \
		cr_expect_str_eq(res.out, want);                         \
	} while (0)

Test(editmatch, exact_unique)
{
	cr_assert_eq(edit("a\nfoo(1);\nb\n", "foo(1);", "foo(2);", false),
		     EM_OK);
	OUT_EQ("a\nfoo(2);\nb\n");
	cr_expect_eq(res.match, EM_MATCH_EXACT);
	cr_expect_eq(res.count, 1);
	cr_expect_eq(res.nlines, 1);
	cr_expect_eq(res.lines[0], 2);
	cr_expect_str_eq(em_match_name(res.match), "exact");
}

Test(editmatch, ambiguous_lists_every_line)
{
	cr_assert_eq(edit("x\ny\nx\nz\nx", "x", "w", false), EM_AMBIGUOUS);
	cr_expect_eq(res.count, 3);
	cr_expect_eq(res.nlines, 3);
	cr_expect_eq(res.lines[0], 1);
	cr_expect_eq(res.lines[1], 3);
	cr_expect_eq(res.lines[2], 5);
	cr_expect_null(res.out);
}

Test(editmatch, ambiguous_line_list_is_capped)
{
	size_t n = 250;
	char *f = malloc(n * 2 + 1);

	for (size_t i = 0; i < n; i++)
		memcpy(f + 2 * i, "k\n", 2);
	f[2 * n] = '\0';
	cr_assert_eq(edit(f, "k", "K", false), EM_AMBIGUOUS);
	cr_expect_eq(res.count, n);
	cr_expect_eq(res.nlines, EM_MAX_LINES);
	cr_expect_eq(res.lines[EM_MAX_LINES - 1], EM_MAX_LINES);
	free(f);
}

Test(editmatch, all_replaces_every_match)
{
	cr_assert_eq(edit("x\ny\nx\nz\nx", "x", "w", true), EM_OK);
	OUT_EQ("w\ny\nw\nz\nw");
	cr_expect_eq(res.count, 3);
	cr_expect_eq(res.nlines, 3);
	cr_expect_eq(res.lines[2], 5);
}

Test(editmatch, replacement_containing_old_does_not_loop)
{
	cr_assert_eq(edit("a a a", "a", "aa", true), EM_OK);
	OUT_EQ("aa aa aa");
	cr_assert_eq(edit("ab\n", "ab", "xabx", false), EM_OK);
	OUT_EQ("xabx\n");
	/* overlapping candidates are counted left to right */
	cr_assert_eq(edit("aaaa", "aa", "b", true), EM_OK);
	OUT_EQ("bb");
}

Test(editmatch, empty_or_identical_old_is_invalid)
{
	cr_expect_eq(edit("abc", "", "x", false), EM_INVALID);
	cr_expect_eq(edit("abc", "b", "b", false), EM_INVALID);
}

Test(editmatch, old_at_eof_without_newline)
{
	cr_assert_eq(edit("one\ntwo", "two", "2", false), EM_OK);
	OUT_EQ("one\n2");
	cr_expect_eq(res.lines[0], 2);
	/* OLD with a newline the file's last line lacks: still found, and
	 * the file still ends without one */
	cr_assert_eq(edit("one\ntwo  ", "two\n", "2\n", false), EM_OK);
	cr_expect_eq(res.match, EM_MATCH_WHITESPACE);
	OUT_EQ("one\n2");
}

Test(editmatch, trailing_whitespace_is_ignored)
{
	const char *file = "def f():   \n    return 1\t\n\nend\n";

	cr_assert_eq(edit(file, "def f():\n    return 1\n",
			  "def f():\n    return 2\n", false),
		     EM_OK);
	cr_expect_eq(res.match, EM_MATCH_WHITESPACE);
	cr_expect_str_eq(em_match_name(res.match), "whitespace");
	OUT_EQ("def f():\n    return 2\n\nend\n");
	cr_expect_eq(res.lines[0], 1);
	/* the same at a later line, without a final newline in OLD */
	cr_assert_eq(edit("x\ny  \nz\n", "y", "Y", false), EM_OK);
	cr_expect_eq(res.match, EM_MATCH_EXACT);
	OUT_EQ("x\nY  \nz\n");
	cr_assert_eq(edit("x\na b  \nc\nz\n", "a b\nc", "A\nC", false), EM_OK);
	cr_expect_eq(res.match, EM_MATCH_WHITESPACE);
	OUT_EQ("x\nA\nC\nz\n");
	cr_expect_eq(res.lines[0], 2);
}

Test(editmatch, crlf_file_stays_crlf_byte_for_byte)
{
	const char *file = "head\r\nif (x) {\r\n\tgo();\r\n}\r\ntail\r\n";

	cr_assert_eq(edit(file, "if (x) {\n\tgo();\n}\n",
			  "if (y) {\n\tstop();\n}\n", false),
		     EM_OK);
	cr_expect_eq(res.match, EM_MATCH_WHITESPACE);
	OUT_EQ("head\r\nif (y) {\r\n\tstop();\r\n}\r\ntail\r\n");
	cr_expect_eq(res.lines[0], 2);
	/* a one-line exact match inside a CRLF file: new lines get CRLF */
	cr_assert_eq(edit("a\r\nb\r\n", "b", "b1\nb2", false), EM_OK);
	cr_expect_eq(res.match, EM_MATCH_EXACT);
	OUT_EQ("a\r\nb1\r\nb2\r\n");
	/* NEW already in CRLF is not doubled */
	cr_assert_eq(edit("a\r\nb\r\n", "b", "b1\r\nb2", false), EM_OK);
	OUT_EQ("a\r\nb1\r\nb2\r\n");
	/* an LF file is left LF */
	cr_assert_eq(edit("a\nb\n", "b", "b1\nb2", false), EM_OK);
	OUT_EQ("a\nb1\nb2\n");
}

Test(editmatch, indentation_tabs_vs_spaces_reindents)
{
	const char *file =
		"class A:\n\tdef f(self):\n\t\treturn 1\n\tdef g(self):\n\t\tpass\n";

	cr_assert_eq(edit(file, "def f(self):\n    return 1\n",
			  "def f(self):\n    x = 1\n    return x\n", false),
		     EM_OK);
	cr_expect_eq(res.match, EM_MATCH_INDENTATION);
	cr_expect_str_eq(em_match_name(res.match), "indentation");
	OUT_EQ("class A:\n\tdef f(self):\n\t\tx = 1\n\t\treturn x\n\tdef g(self):\n\t\tpass\n");
	cr_expect_eq(res.lines[0], 2);
}

Test(editmatch, indentation_shifted_block)
{
	const char *file =
		"fn main() {\n        if a {\n            b();\n        }\n}\n";

	cr_assert_eq(edit(file, "if a {\n    b();\n}",
			  "if a {\n    c();\n    d();\n}", false),
		     EM_OK);
	cr_expect_eq(res.match, EM_MATCH_INDENTATION);
	OUT_EQ("fn main() {\n        if a {\n            c();\n            d();\n        }\n}\n");
}

Test(editmatch, normalised_match_must_be_unique)
{
	cr_assert_eq(edit("  x = 1 \nz\n    x = 1 \n", "x = 1\n", "x = 2\n",
			  false),
		     EM_AMBIGUOUS);
	cr_expect_eq(res.match, EM_MATCH_INDENTATION);
	cr_expect_eq(res.count, 2);
	cr_expect_eq(res.lines[0], 1);
	cr_expect_eq(res.lines[1], 3);
	cr_assert_eq(edit("  x = 1 \nz\n    x = 1 \n", "x = 1\n", "x = 2\n",
			  true),
		     EM_OK);
	OUT_EQ("  x = 2\nz\n    x = 2\n");
}

Test(editmatch, unicode_bytes)
{
	cr_assert_eq(edit("caf\xc3\xa9 \xe2\x86\x92 na\xc3\xafve\n",
			  "\xe2\x86\x92 na\xc3\xafve", "\xf0\x9f\x98\x80",
			  false),
		     EM_OK);
	OUT_EQ("caf\xc3\xa9 \xf0\x9f\x98\x80\n");
	cr_assert_eq(edit("  \xc3\xa9t\xc3\xa9\n", "\xc3\xa9t\xc3\xa9\n",
			  "\xc3\xa9\n", false),
		     EM_OK);
}

Test(editmatch, closest_region_on_no_match)
{
	const char *file =
		"line one\nline two\nint compute(int a) {\n\treturn a + 1;\n}\nlast\n";

	cr_assert_eq(edit(file, "int compute(int a) {\n\treturn a + 2;\n}\n",
			  "x", false),
		     EM_NOMATCH);
	cr_assert_not_null(res.closest);
	cr_expect_eq(res.closest_line, 3);
	cr_expect_str_eq(res.closest, "     3\tint compute(int a) {\n"
				      "     4\t\treturn a + 1;\n"
				      "     5\t}");
	/* nothing alike at all: no closest */
	cr_assert_eq(edit(file, "zzzzzzzzzzzzzzzzzz qqqqqqq", "x", false),
		     EM_NOMATCH);
	cr_expect_null(res.closest);
	cr_expect_eq(res.closest_line, 0);
}

Test(editmatch, closest_shows_at_most_ten_lines)
{
	char file[4096] = "", old[4096] = "", line[64];
	char *nl;
	int i, n = 0;

	for (i = 1; i <= 30; i++) {
		snprintf(line, sizeof(line), "statement_%d();\n", i);
		strcat(file, line);
		if (i >= 5 && i < 25) {
			snprintf(line, sizeof(line), "statement_%d();%s\n", i,
				 i == 12 ? " /* typo */" : "");
			strcat(old, line);
		}
	}
	cr_assert_eq(edit(file, old, "x", false), EM_NOMATCH);
	cr_assert_not_null(res.closest);
	cr_expect_eq(res.closest_line, 5);
	for (nl = res.closest; nl; nl = strchr(nl + 1, '\n'))
		n++;
	cr_expect_eq(n, EM_CLOSEST_MAX);
}

/* Large inputs end: the closest-region search has a work budget (a hang
 * would hit the suite's timeout; speed is for benchmarks, not asserted). */
Test(editmatch, large_inputs_are_bounded)
{
	size_t lines = 200000, i, olines = 2000;
	char *file = malloc(lines * 8 + 1), *old = malloc(olines * 8 + 2);

	for (i = 0; i < lines; i++)
		memcpy(file + 8 * i, "aaaaaaa\n", 8);
	file[lines * 8] = '\0';
	for (i = 0; i < olines; i++)
		memcpy(old + 8 * i, "aaaaaaa\n", 8);
	memcpy(old + 8 * olines, "b", 2);
	cr_expect_eq(edit(file, old, "x", false), EM_NOMATCH);
	free(file);
	free(old);
}
