/*
 * Unit tests: shell-style path patterns (src/shared/glob.c).
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "glob.h"

#define M(p, s) cr_assert(hutch__glob_match(p, s, false), "%s ~ %s", p, s)
#define N(p, s) cr_assert_not(hutch__glob_match(p, s, false), "%s !~ %s", p, s)

Test(glob, star_and_question_stay_in_one_component)
{
	M("*.c", "a.c");
	M("*.c", "src/deep/a.c"); /* no '/': basename */
	N("*.c", "a.h");
	N("*.c", "a.c/x");
	M("a?c", "abc");
	N("a?c", "ac");
	N("src/*.c", "src/sub/a.c");
	M("src/*.c", "src/a.c");
	N("src/*.c", "lib/src/a.c"); /* with '/': whole path */
	N("s?c/a.c", "s/c/a.c");
	M("*", ".env");
	M("*", "x");
	N("a*", "a/b"); /* the basename is "b" */
	M("a*", "b/abc");
}

Test(glob, globstar_spans_components)
{
	M("**/*.c", "a.c");
	M("**/*.c", "x/y/z/a.c");
	M("src/**/*.c", "src/a.c");
	M("src/**/*.c", "src/x/y/a.c");
	N("src/**/*.c", "lib/x/a.c");
	M("src/**", "src/x/y");
	M("a/**/b/**/c", "a/b/c");
	M("a/**/b/**/c", "a/x/b/y/z/c");
	N("a/**/b/**/c", "a/x/c/y/b");
	M("**", "anything/at/all");
	/* "**" inside a component is just a star */
	M("a**b", "axxb");
	N("x/a**b", "x/a/b");
}

Test(glob, anchoring_and_slashes)
{
	M("/build", "build");
	N("/build", "src/build");
	M("build", "src/build");
	M("build/", "src/build");
	M("build/out", "build/out");
	N("build/out", "x/build/out");
	M("a//b", "a/b");
}

Test(glob, classes_and_escapes)
{
	M("[abc].c", "b.c");
	N("[abc].c", "d.c");
	M("[a-c]x", "bx");
	N("[!a-c]x", "bx");
	M("[^a-c]x", "dx");
	M("[]]", "]");
	M("[!]]", "a");
	N("[!]]", "]");
	M("[a-]", "-");
	M("\\*", "*");
	N("\\*", "a");
	M("a\\?b", "a?b");
	N("a\\?b", "axb");
	M("[", "["); /* unterminated: literal */
	M("[\\]]", "]");
}

Test(glob, icase_is_ascii_only)
{
	cr_assert(hutch__glob_match("*.C", "a.c", true));
	cr_assert_not(hutch__glob_match("*.C", "a.c", false));
	cr_assert(hutch__glob_match("[A-C]x", "bX", true));
	cr_assert(hutch__glob_match("[a-c]x", "BX", true));
	cr_assert_not(hutch__glob_match("[a-c]x", "BX", false));
	/* bytes >= 0x80 are never folded */
	cr_assert_not(hutch__glob_match("\xc3\x89", "\xc3\xa9", true));
	cr_assert(hutch__glob_match("caf\xc3\xa9.*", "caf\xc3\xa9.txt", false));
	cr_assert(hutch__glob_match("caf?\xa9.txt", "caf\xc3\xa9.txt", false));
}

Test(glob, validity)
{
	cr_assert(hutch__glob_valid("*.c"));
	cr_assert(hutch__glob_valid("src/**/[a-z]*.c"));
	cr_assert(hutch__glob_valid("[]]"));
	cr_assert_not(hutch__glob_valid(""));
	cr_assert_not(hutch__glob_valid(NULL));
	cr_assert_not(hutch__glob_valid("/"));
	cr_assert_not(hutch__glob_valid("[abc"));
	cr_assert_not(hutch__glob_valid("a[b/c]")); /* class cannot hold '/' */
	cr_assert_not(hutch__glob_valid("abc\\"));
	cr_assert_not(hutch__glob_match(NULL, "a", false));
	cr_assert_not(hutch__glob_match("a", NULL, false));
	cr_assert_not(hutch__glob_match("", "", false));
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Naive backtracking takes ages here; ours must be near-instant. */
Test(glob, no_exponential_blowup)
{
	size_t n = 20000;
	char *s = malloc(n + 1), *deep = malloc(4 * 400 + 1);
	double t0 = now();

	memset(s, 'a', n);
	s[n] = '\0';
	cr_assert_not(hutch__glob_match("*a*a*a*a*a*a*a*a*a*a*b", s, false));
	s[n - 1] = 'b';
	cr_assert(hutch__glob_match("*a*a*a*a*a*a*a*a*a*a*b", s, false));
	for (size_t i = 0; i < 400; i++)
		memcpy(deep + 4 * i, "aaa/", 4);
	deep[4 * 400 - 1] = '\0';
	cr_assert_not(hutch__glob_match("**/a*/**/a*/**/a*/**/b", deep, false));
	cr_assert(hutch__glob_match("**/a*/**/a*/**/a*/**/aaa", deep, false));
	cr_assert_lt(now() - t0, 2.0, "took %.2fs", now() - t0);
	free(s);
	free(deep);
}
