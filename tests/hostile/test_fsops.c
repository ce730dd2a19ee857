/*
 * test_fsops.c - rm-file and mv-file against the sandbox's own symlinks
 * (doc/threat-model.md, "the file tools stay in /workspace")
 *
 * The sandboxed code plants symlinks to /tmp/target, outside the
 * workspace: as a parent directory, as the last component, under a tree
 * that is then deleted or moved.  Every call must act inside /workspace
 * or be refused, and /tmp/target must come out as it went in: one file,
 * "secret", holding "OUTSIDE".
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hostile.h"

/* `hutch ARG...` must exit `want`; with 2, its --json error code must
 * be `code`. */
static void expect(int want, const char *code, const char *arg, ...)
	__attribute__((sentinel));
static void expect(int want, const char *code, const char *arg, ...)
{
	const char *args[16];
	char what[256] = "";
	size_t n = 0, off = 0;
	va_list ap;
	it_result r;

	va_start(ap, arg);
	for (const char *a = arg; a && n < 14; a = va_arg(ap, const char *)) {
		args[n++] = a;
		off += (size_t)snprintf(what + off, sizeof(what) - off, "%s ",
					a);
		if (off >= sizeof(what))
			off = sizeof(what) - 1;
	}
	va_end(ap);
	args[n++] = "--json";
	args[n] = NULL;
	r = it_hutch_v(NULL, args);
	IT_ASSERT_EXIT(r, want, what);
	if (code) {
		char want_code[64];

		snprintf(want_code, sizeof(want_code), "\"code\":\"%s\"", code);
		cr_assert(strstr(r.out, want_code), "%s: %s", what, r.out);
	}
	it_result_free(&r);
}

/* The stdout of a shell command in the session (caller frees). */
static char *sh_out(const char *s, const char *cmd)
{
	it_result r = it_hutch("exec", s, "--", "sh", "-c", cmd, NULL);
	char *out;

	IT_ASSERT_EXIT(r, 0, cmd);
	out = r.out;
	r.out = NULL;
	it_result_free(&r);
	return out;
}

static void target_intact(const char *s)
{
	char *out = sh_out(s, "ls -A /tmp/target; cat /tmp/target/secret");

	cr_assert_str_eq(out, "secret\nOUTSIDE\n",
			 "/tmp/target was reached: %s", out);
	free(out);
}

IT_TEST(fsops, delete_and_move_stay_in_the_workspace)
{
	const char *s = it_session();
	char *out;

	free(sh_out(s, "mkdir -p /tmp/target d tree/sub && "
		       "echo OUTSIDE > /tmp/target/secret && "
		       "echo inside > f.txt && echo inside > d/g.txt && "
		       "ln -s /tmp/target out && ln -s ../tmp/target rel && "
		       "ln -s /tmp/target/secret slink && ln -s ../.. up && "
		       "ln -s /tmp/target tree/sub/out && "
		       "ln -s /tmp/target/secret tree/slink"));

	/* through a symlinked parent directory: refused */
	expect(2, "escape", "rm-file", s, "out/secret", NULL);
	expect(2, "escape", "rm-file", s, "-r", "rel/secret", NULL);
	expect(2, "escape", "mv-file", s, "out/secret", "stolen", NULL);
	expect(2, "escape", "mv-file", s, "f.txt", "out/f.txt", NULL);
	expect(2, "escape", "mv-file", s, "--overwrite", "f.txt", "out/secret",
	       NULL);
	expect(2, "escape", "mv-file", s, "f.txt", "out/new/dir/f.txt", NULL);
	/* "..", absolute paths, the root */
	expect(2, "escape", "rm-file", s, "../tmp/target/secret", NULL);
	expect(2, "escape", "rm-file", s, "-r", "up/tmp/target", NULL);
	expect(2, "escape", "rm-file", s, "/tmp/target/secret", NULL);
	expect(2, "escape", "rm-file", s, "/workspace/../tmp/target", NULL);
	expect(2, "escape", "mv-file", s, "f.txt", "../f.txt", NULL);
	expect(2, "escape", "mv-file", s, "f.txt", "/tmp/target/f.txt", NULL);
	expect(2, "escape", "mv-file", s, "/tmp/target/secret", "x", NULL);
	expect(2, "invalid", "rm-file", s, "-r", "/workspace", NULL);
	expect(2, "invalid", "rm-file", s, "-r", "d/..", NULL);
	expect(2, "invalid", "mv-file", s, ".", "elsewhere", NULL);
	expect(2, "invalid", "mv-file", s, "--overwrite", "d", "/workspace/",
	       NULL);
	target_intact(s);
	out = sh_out(s, "test ! -e stolen && test ! -e /tmp/f.txt && "
			"test ! -e ../f.txt && cat f.txt");
	cr_assert_str_eq(out, "inside\n");
	free(out);

	/* a symlink as the last component is the entry: removed or moved
	 * as a link, and the one replaced by --overwrite is the link */
	expect(0, NULL, "rm-file", s, "slink", NULL);
	expect(0, NULL, "mv-file", s, "out", "d/out-moved", NULL);
	expect(0, NULL, "mv-file", s, "--overwrite", "f.txt", "rel", NULL);
	target_intact(s);
	out = sh_out(s, "test ! -L slink && test -L d/out-moved && "
			"test -f rel && ! test -L rel && cat rel");
	cr_assert_str_eq(out, "inside\n");
	free(out);

	/* a tree holding links out: deleted whole, the links as links */
	expect(0, NULL, "mv-file", s, "tree", "d/tree", NULL);
	expect(2, "conflict", "rm-file", s, "d", NULL);
	expect(0, NULL, "rm-file", s, "--recursive", "d", NULL);
	target_intact(s);
	out = sh_out(s, "ls -A");
	cr_assert_str_eq(out, "rel\nup\n", "left: %s", out);
	free(out);
}
