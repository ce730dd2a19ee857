/*
 * test_fsops.c - the file tools against the sandbox's own symlinks
 * (doc/threat-model.md, "the file tools stay in /workspace")
 *
 * The sandboxed code plants symlinks to /tmp/target, outside the
 * workspace: as a parent directory, as the last component, under a tree
 * that is then deleted or moved.  Every call of rm-file and mv-file must
 * act inside /workspace or be refused, and /tmp/target must come out as
 * it went in: one file, "secret", holding "OUTSIDE".  And big texts of
 * write and edit must not pass through any place the sandbox can reach
 * outside the workspace.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/*
 * Texts past 48 KiB reach the agent on its stdin; nothing is put in the
 * container for them.  They used to be a tar PUT into /.hutch/req, a
 * directory every user of the session could write, which the engine
 * extracted as root, setting each file's mode and times by path after
 * creating it: a process of the session that swapped a new file for a
 * symlink had root chmod whatever the link named (the agent, to 0644, and
 * every later exec failed).  An attacker in the session does just that to
 * whatever appears in /.hutch/req, and says what it saw, while big writes
 * and edits run; then no file outside the workspace holds their texts, and
 * the agent's files keep their mode.
 */
IT_TEST(fsops, big_texts_pass_through_nothing_the_session_reaches)
{
	static const char attacker[] =
		"echo started; seen=; "
		"while [ ! -e /workspace/stop ]; do "
		"  [ -e /.hutch/req ] || continue; "
		"  [ -n \"$seen\" ] || echo '/.hutch/req exists'; seen=1; "
		"  for f in /.hutch/req/*; do "
		"    [ -f \"$f\" ] && [ ! -L \"$f\" ] || continue; "
		"    echo \"saw $f\"; "
		"    rm -f \"$f\" && ln -s /.hutch/hutch-agent \"$f\"; "
		"  done; "
		"done; true";
	const char *s = it_session();
	const char *args[] = { "exec", s, "--", "sh", "-c", attacker, NULL };
	size_t n = 512 * 1024, on = 60000, nn = 70000;
	char marker[64], path[] = "/tmp/hutch-hostile-fsops-XXXXXX";
	char *data = malloc(n), *o = malloc(on + 1), *nw = malloc(nn + 1);
	char *before, *after, grep[512], started[8];
	it_opts bg = { .limit = 200 }, in = { 0 };
	size_t got = 0;
	it_proc watch;
	it_result r;
	int race, fd;

	cr_assert(data && o && nw);
	snprintf(marker, sizeof(marker), "HUTCH-FSOPS-MARKER-%d",
		 (int)getpid());
	for (size_t i = 0; i < n; i++)
		data[i] = (char)('a' + i % 26);
	memset(o, 'o', on);
	memset(nw, 'n', nn);
	o[on] = nw[nn] = '\0';
	/* The marker in every text, to look for afterwards. */
	memcpy(data + n / 2, marker, strlen(marker));
	memcpy(o + on / 2, marker, strlen(marker));
	memcpy(nw + nn / 2, marker, strlen(marker));
	fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	unlink(path);
	cr_assert_eq(write(fd, data, n), (ssize_t)n);

	before = sh_out(s, "ls -A /.hutch; stat -c '%a %n' /.hutch/hutch-agent "
			   "/.hutch/bin/*");
	race = hostile_race_begin();
	it_spawn(&watch, &bg, args);
	/* Under way before the first write. */
	while (got < sizeof(started)) {
		ssize_t k = read(watch.out_fd, started + got,
				 sizeof(started) - got);

		cr_assert_gt(k, 0, "the attacker did not start");
		got += (size_t)k;
	}
	cr_assert_eq(memcmp(started, "started\n", 8), 0);
	for (int i = 0; i < 4; i++) {
		const char *w[] = { "write", s, "big.txt", NULL };

		cr_assert_eq(lseek(fd, 0, SEEK_SET), 0);
		in.in_fd = fd;
		r = it_hutch_v(&in, w);
		IT_ASSERT_EXIT(r, 0, "hutch write S big.txt < 512 KiB");
		it_result_free(&r);
	}
	close(fd);
	r = it_hutch("write", s, "e.txt", "--content", o, NULL);
	IT_ASSERT_EXIT(r, 0, "hutch write S e.txt (60 KB)");
	it_result_free(&r);
	for (int i = 0; i < 2; i++) {
		r = it_hutch("edit", s, "e.txt", "--old", i ? nw : o, "--new",
			     i ? o : nw, NULL);
		IT_ASSERT_EXIT(r, 0, "hutch edit S e.txt (60 and 70 KB)");
		it_result_free(&r);
	}
	r = it_hutch("write", s, "stop", "--content", "", NULL);
	IT_ASSERT_EXIT(r, 0, "stop the attacker");
	it_result_free(&r);
	r = it_wait(&watch);
	hostile_race_end(race);
	IT_ASSERT_EXIT(r, 0, "the attacker");
	cr_assert_str_eq(r.out, "", "the session reached a text's upload: %s",
			 r.out);
	it_result_free(&r);

	/* The texts arrived, and only in the workspace. */
	after = sh_out(s, "wc -c < big.txt; cat e.txt | wc -c");
	cr_assert_str_eq(after, "524288\n60000\n");
	free(after);
	/* The places the session writes, its home too unless that is the
	 * workspace. */
	snprintf(grep, sizeof(grep),
		 "case \"$HOME\" in /workspace*) h=/tmp;; *) h=$HOME;; esac; "
		 "grep -rlF '%s' /.hutch /tmp /var/tmp /dev/shm /run /root "
		 "/home \"$h\" 2>/dev/null; true",
		 marker);
	after = sh_out(s, grep);
	cr_assert_str_eq(after, "", "a text outside the workspace: %s", after);
	free(after);
	after = sh_out(s, "ls -A /.hutch; stat -c '%a %n' /.hutch/hutch-agent "
			  "/.hutch/bin/*");
	cr_assert_str_eq(after, before, "/.hutch changed: %s", after);
	free(after);
	free(before);
	free(data);
	free(o);
	free(nw);
}
