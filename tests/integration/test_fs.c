/*
 * test_fs.c - the file tools against a real engine, through the CLI
 *
 * Symlinks and files are made by the sandboxed side (hutch exec), as an
 * agent's code would make them, and every escape is checked twice: the tool
 * refuses with the "escape" code, and the thing outside is unchanged.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <json-c/json.h>

#include "harness.h"

#define MAX_TOOL_ARGS 24

/* Run `hutch ARG...` (NULL-terminated) and assert its exit status. */
static it_result run_v(int want, const char *arg, va_list ap)
{
	const char *args[MAX_TOOL_ARGS + 1];
	char what[256];
	size_t n = 0, off = 0;
	it_result r;

	for (const char *a = arg; a; a = va_arg(ap, const char *)) {
		cr_assert_lt(n, MAX_TOOL_ARGS, "too many arguments");
		args[n++] = a;
		off += (size_t)snprintf(
			what + off, off < sizeof(what) ? sizeof(what) - off : 0,
			"%s ", a);
		if (off >= sizeof(what))
			off = sizeof(what) - 1;
	}
	args[n] = NULL;
	r = it_hutch_v(NULL, args);
	IT_ASSERT_EXIT(r, want, what);
	return r;
}

static it_result run(int want, const char *arg, ...) __attribute__((sentinel));
static it_result run(int want, const char *arg, ...)
{
	va_list ap;
	it_result r;

	va_start(ap, arg);
	r = run_v(want, arg, ap);
	va_end(ap);
	return r;
}

/* Run a tool with --json appended and return its parsed object. */
static json_object *run_json(int want, const char *arg, ...)
	__attribute__((sentinel));
static json_object *run_json(int want, const char *arg, ...)
{
	const char *args[MAX_TOOL_ARGS + 2];
	size_t n = 0;
	va_list ap;
	it_result r;
	json_object *doc;

	va_start(ap, arg);
	for (const char *a = arg; a; a = va_arg(ap, const char *)) {
		cr_assert_lt(n, MAX_TOOL_ARGS, "too many arguments");
		args[n++] = a;
	}
	va_end(ap);
	args[n++] = "--json";
	args[n] = NULL;
	r = it_hutch_v(NULL, args);
	IT_ASSERT_EXIT(r, want, args[0]);
	doc = it_json(r.out, r.out_len);
	it_result_free(&r);
	return doc;
}

/* A shell command in the session, as the sandboxed code would run it. */
static void sh(const char *s, const char *cmd)
{
	it_result r = run(0, "exec", s, "--", "sh", "-c", cmd, NULL);

	it_result_free(&r);
}

/* The stdout of a shell command in the session (caller frees). */
static char *sh_out(const char *s, const char *cmd)
{
	it_result r = run(0, "exec", s, "--", "sh", "-c", cmd, NULL);
	char *out = r.out;

	r.out = NULL;
	it_result_free(&r);
	return out;
}

static const char *jstr(json_object *o, const char *key)
{
	json_object *v = it_json_get(o, key);

	cr_assert(json_object_is_type(v, json_type_string),
		  "%s is not a string", key);
	return json_object_get_string(v);
}

static int64_t jint(json_object *o, const char *key)
{
	json_object *v = it_json_get(o, key);

	cr_assert(json_object_is_type(v, json_type_int), "%s is not an integer",
		  key);
	return json_object_get_int64(v);
}

static int jbool(json_object *o, const char *key)
{
	json_object *v = it_json_get(o, key);

	cr_assert(json_object_is_type(v, json_type_boolean),
		  "%s is not a boolean", key);
	return json_object_get_boolean(v);
}

/* The error code of a --json failure (exit 2). */
static void expect_refused(const char *code, const char *arg, ...)
	__attribute__((sentinel));
static void expect_refused(const char *code, const char *arg, ...)
{
	const char *args[MAX_TOOL_ARGS + 2];
	size_t n = 0;
	va_list ap;
	it_result r;
	json_object *doc, *error;

	va_start(ap, arg);
	for (const char *a = arg; a; a = va_arg(ap, const char *)) {
		cr_assert_lt(n, MAX_TOOL_ARGS, "too many arguments");
		args[n++] = a;
	}
	va_end(ap);
	args[n++] = "--json";
	args[n] = NULL;
	r = it_hutch_v(NULL, args);
	IT_ASSERT_EXIT(r, 2, args[0]);
	doc = it_json(r.out, r.out_len);
	error = it_json_get(doc, "error");
	cr_assert_str_eq(jstr(error, "code"), code, "%s %s %s: %s", args[0],
			 args[2], n > 3 ? args[3] : "", r.out);
	cr_assert_gt(strlen(jstr(error, "message")), 0);
	cr_assert_null(strchr(jstr(error, "message"), '\n'), "one line");
	json_object_put(doc);
	it_result_free(&r);
}

/* Lines of entries[].KEY joined with '\n' (caller frees). */
static char *entries(json_object *doc, const char *list, const char *key)
{
	json_object *arr = it_json_get(doc, list);
	size_t n = json_object_array_length(arr), len = 0;
	char *out = calloc(1, 1);

	for (size_t i = 0; i < n; i++) {
		const char *v = jstr(json_object_array_get_idx(arr, i), key);
		char *grown = realloc(out, len + strlen(v) + 2);

		cr_assert_not_null(grown);
		out = grown;
		len += (size_t)sprintf(out + len, "%s\n", v);
	}
	return out;
}

IT_TEST(fs, write_read_round_trip)
{
	const char *s = it_session();
	json_object *doc;
	it_result r;
	char *out;

	/* File tools never make a session (fs::no_such_session). */
	r = it_hutch("up", s, NULL);
	IT_ASSERT_EXIT(r, 0, "up");
	it_result_free(&r);
	doc = run_json(0, "write", s, "dir/sub/a.txt", "--content",
		       "h\xc3\xa9llo\nw\xc3\xb6rld\n", NULL);
	cr_assert_str_eq(jstr(doc, "path"), "dir/sub/a.txt");
	cr_assert_eq(jint(doc, "bytes"), 14);
	cr_assert_eq(jbool(doc, "created"), 1);
	json_object_put(doc);

	doc = run_json(0, "read", s, "/workspace/dir/sub/a.txt", NULL);
	cr_assert_str_eq(jstr(doc, "content"), "h\xc3\xa9llo\nw\xc3\xb6rld\n");
	cr_assert_eq(jint(doc, "total_lines"), 2);
	cr_assert_eq(jint(doc, "lines"), 2);
	cr_assert_eq(jbool(doc, "truncated"), 0);
	json_object_put(doc);

	/* The mode of an existing file survives a rewrite; the write is a
	 * new inode (atomic rename), not an in-place truncation. */
	sh(s,
	   "chmod 751 dir/sub/a.txt && stat -c %i dir/sub/a.txt > /tmp/inode");
	doc = run_json(0, "write", s, "dir/sub/a.txt", "--content", "new\n",
		       NULL);
	cr_assert_eq(jbool(doc, "created"), 0);
	json_object_put(doc);
	out = sh_out(
		s,
		"stat -c %a dir/sub/a.txt; cat dir/sub/a.txt; "
		"[ \"$(stat -c %i dir/sub/a.txt)\" != \"$(cat /tmp/inode)\" ] && echo renamed; "
		"ls -a dir/sub");
	cr_assert_str_eq(out, "751\nnew\nrenamed\n.\n..\na.txt\n", "got %s",
			 out);
	free(out);

	/* stdin when there is no --content; text output */
	{
		const char *args[] = { "write", s, "from-stdin.txt", NULL };

		r = it_hutch_v(NULL, args); /* stdin is /dev/null */

		IT_ASSERT_EXIT(r, 0, "write from stdin");
		cr_assert(strstr(r.out,
				 "from-stdin.txt: 0 bytes written (new file)"),
			  "%s", r.out);
		it_result_free(&r);
	}
	out = sh_out(s, "wc -c < from-stdin.txt");
	cr_assert_eq(atoi(out), 0);
	free(out);

	/* Texts past 48 KiB go on the agent's stdin instead of the
	 * environment; nothing is uploaded into the container for them
	 * (fs::big_texts_on_stdin_both_paths goes further). */
	{
		size_t n = 100 * 1024; /* one argument is at most 128 KiB */
		char *big = malloc(n + 1);

		cr_assert_not_null(big);
		for (size_t i = 0; i < n; i++)
			big[i] = (char)('a' + i % 23);
		big[n - 1] = '\n';
		big[n] = '\0';
		doc = run_json(0, "write", s, "big.txt", "--content", big,
			       NULL);
		cr_assert_eq(jint(doc, "bytes"), (int64_t)n);
		json_object_put(doc);
		doc = run_json(0, "edit", s, "big.txt", "--old", big, "--new",
			       "small\n", NULL);
		cr_assert_eq(jint(doc, "replacements"), 1);
		json_object_put(doc);
		free(big);
	}
	out = sh_out(s, "cat big.txt; test ! -e /.hutch/req");
	cr_assert_str_eq(out, "small\n", "got %.200s", out);
	free(out);
}

/* The sha256 of `len` bytes at `data`, by the host's sha256sum (caller
 * frees). */
static char *host_sha(const char *data, size_t len)
{
	char path[] = "/tmp/hutch-it-fs-XXXXXX", cmd[64], buf[128];
	int fd = mkstemp(path);
	FILE *f;

	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, data, len), (ssize_t)len);
	close(fd);
	snprintf(cmd, sizeof(cmd), "sha256sum '%s'", path);
	f = popen(cmd, "r");
	cr_assert_not_null(f);
	cr_assert_not_null(fgets(buf, sizeof(buf), f));
	pclose(f);
	unlink(path);
	buf[64] = '\0';
	return strdup(buf);
}

/* `sha256sum FILE` in the session is `sha` (freed). */
static void expect_sha(const char *s, const char *file, char *sha)
{
	char cmd[128], want[128];
	char *out;

	snprintf(cmd, sizeof(cmd), "sha256sum '%s'", file);
	snprintf(want, sizeof(want), "%s  %s\n", sha, file);
	out = sh_out(s, cmd);
	cr_assert_str_eq(out, want, "%s is not the text", file);
	free(out);
	free(sha);
}

/*
 * Texts past 48 KiB go on the agent's stdin ("stdin:LEN"), and do so on
 * both paths a command takes: the agent's channel (the default, on a
 * local engine) and the engine's exec (HUTCH_FAST_PATH=0).  A 3 MiB write
 * from hutch's stdin and an edit whose old and new texts are both over
 * 48 KiB arrive byte-exact, and nothing is put in the container for them
 * (the archive API's uploads went to /.hutch/req).
 */
IT_TEST(fs, big_texts_on_stdin_both_paths)
{
	const char *s = it_session();
	size_t n = 3u << 20, on = 60000, nn = 100000;
	char *data = malloc(n), *o = malloc(on + 1), *nw = malloc(nn + 1);
	char *file = malloc(nn + 16), *out;
	char path[] = "/tmp/hutch-it-fs-XXXXXX";
	json_object *doc;
	it_opts opts = { 0 };
	it_result r;
	int fd;

	cr_assert(data && o && nw && file);
	/* NULs and every other byte: write takes any bytes */
	for (size_t i = 0; i < n; i++)
		data[i] = (char)(i * 131 + i / 1000);
	for (size_t i = 0; i < on; i++)
		o[i] = i % 61 == 60 ? '\n' : (char)('a' + i % 26);
	for (size_t i = 0; i < nn; i++)
		nw[i] = i % 71 == 70 ? '\n' : (char)('A' + i % 26);
	o[on] = nw[nn] = '\0';
	fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	unlink(path);
	cr_assert_eq(write(fd, data, n), (ssize_t)n);
	r = it_hutch("up", s, NULL);
	IT_ASSERT_EXIT(r, 0, "up");
	it_result_free(&r);
	for (int i = 0; i < 2; i++) {
		const char *name = i ? "big-engine.bin" : "big-default.bin";
		const char *args[] = { "write", s, name, "--json", NULL };
		size_t len;

		if (i == 1)
			cr_assert_eq(setenv("HUTCH_FAST_PATH", "0", 1), 0);
		/* The child shares the file's offset: from its start. */
		cr_assert_eq(lseek(fd, 0, SEEK_SET), 0);
		opts.in_fd = fd;
		r = it_hutch_v(&opts, args);
		IT_ASSERT_EXIT(r, 0, "hutch write S FILE < 3 MiB");
		doc = it_json(r.out, r.out_len);
		cr_assert_eq(jint(doc, "bytes"), (int64_t)n, "%s", r.out);
		json_object_put(doc);
		it_result_free(&r);
		expect_sha(s, name, host_sha(data, n));

		len = (size_t)sprintf(file, "head\n%stail\n", o);
		doc = run_json(0, "write", s, "e.txt", "--content", file, NULL);
		cr_assert_eq(jint(doc, "bytes"), (int64_t)len);
		json_object_put(doc);
		doc = run_json(0, "edit", s, "e.txt", "--old", o, "--new", nw,
			       NULL);
		cr_assert_eq(jint(doc, "replacements"), 1);
		json_object_put(doc);
		len = (size_t)sprintf(file, "head\n%stail\n", nw);
		expect_sha(s, "e.txt", host_sha(file, len));
		/* and back: the longer text is now the old one */
		doc = run_json(0, "edit", s, "e.txt", "--old", nw, "--new", o,
			       NULL);
		cr_assert_eq(jint(doc, "replacements"), 1);
		json_object_put(doc);
		len = (size_t)sprintf(file, "head\n%stail\n", o);
		expect_sha(s, "e.txt", host_sha(file, len));
	}
	cr_assert_eq(unsetenv("HUTCH_FAST_PATH"), 0);
	close(fd);
	out = sh_out(s, "test ! -e /.hutch/req && echo none");
	cr_assert_str_eq(out, "none\n", "got %.200s", out);
	free(out);
	free(data);
	free(o);
	free(nw);
	free(file);
}

/*
 * A container killed from outside comes back for the next call, which
 * runs once more when its container was gone before it started (exec.c,
 * run_with_one_retry): the texts on stdin must then arrive whole, the
 * write's buffer sent again, the edit's two texts read from their start.
 */
IT_TEST(fs, big_texts_whole_after_the_container_was_killed)
{
	const char *s = it_session();
	size_t n = 100000, on = 60000, nn = 70000, len;
	char *data = malloc(n + 1), *o = malloc(on + 1), *nw = malloc(nn + 1);
	char *file = malloc(nn + 16);
	json_object *doc;
	it_result r;

	cr_assert(data && o && nw && file);
	for (size_t i = 0; i < n; i++)
		data[i] = i % 50 == 49 ? '\n' : (char)('0' + i % 10);
	for (size_t i = 0; i < on; i++)
		o[i] = i % 61 == 60 ? '\n' : (char)('a' + i % 26);
	for (size_t i = 0; i < nn; i++)
		nw[i] = i % 71 == 70 ? '\n' : (char)('A' + i % 26);
	data[n] = o[on] = nw[nn] = '\0';
	r = it_hutch("up", s, NULL);
	IT_ASSERT_EXIT(r, 0, "up");
	it_result_free(&r);
	len = (size_t)sprintf(file, "head\n%stail\n", o);
	r = it_hutch("write", s, "e.txt", "--content", file, NULL);
	IT_ASSERT_EXIT(r, 0, "hutch write S e.txt");
	it_result_free(&r);

	it_container_kill(s);
	doc = run_json(0, "write", s, "big.txt", "--content", data, NULL);
	cr_assert_eq(jint(doc, "bytes"), (int64_t)n);
	json_object_put(doc);
	expect_sha(s, "big.txt", host_sha(data, n));

	it_container_kill(s);
	doc = run_json(0, "edit", s, "e.txt", "--old", o, "--new", nw, NULL);
	cr_assert_eq(jint(doc, "replacements"), 1);
	json_object_put(doc);
	len = (size_t)sprintf(file, "head\n%stail\n", nw);
	expect_sha(s, "e.txt", host_sha(file, len));
	free(data);
	free(o);
	free(nw);
	free(file);
}

IT_TEST(fs, read_windows_binary_and_bad_utf8)
{
	const char *s = it_session();
	json_object *doc;
	it_result r;

	sh(s,
	   "seq 1 5000 > big.txt; printf 'a\\nb\\nc' > nonl.txt; "
	   "printf 'ab\\000cd\\n' > bin.dat; printf '\\377ok\\n' > latin.txt; mkdir d");

	doc = run_json(0, "read", s, "big.txt", NULL);
	cr_assert_eq(jint(doc, "lines"), 2000);
	cr_assert_eq(jint(doc, "total_lines"), 5000);
	cr_assert_eq(jbool(doc, "truncated"), 1);
	cr_assert_eq(jint(doc, "next_offset"), 2001);
	cr_assert(strncmp(jstr(doc, "content"), "1\n2\n3\n", 6) == 0);
	json_object_put(doc);

	doc = run_json(0, "read", s, "big.txt", "--offset", "4999", "--limit",
		       "10", NULL);
	cr_assert_str_eq(jstr(doc, "content"), "4999\n5000\n");
	cr_assert_eq(jint(doc, "offset"), 4999);
	cr_assert_eq(jbool(doc, "truncated"), 0);
	json_object_put(doc);

	/* text mode says where to go on */
	r = run(0, "read", s, "big.txt", "--limit", "3", NULL);
	cr_assert_str_eq(r.out, "1\n2\n3\n");
	cr_assert(strstr(r.err, "--offset 4"), "%s", r.err);
	it_result_free(&r);

	doc = run_json(0, "read", s, "nonl.txt", NULL);
	cr_assert_eq(jint(doc, "total_lines"), 3);
	cr_assert_str_eq(jstr(doc, "content"), "a\nb\nc");
	json_object_put(doc);

	doc = run_json(0, "read", s, "latin.txt", NULL);
	cr_assert_str_eq(jstr(doc, "content"), "\xef\xbf\xbdok\n");
	json_object_put(doc);

	expect_refused("invalid", "read", s, "bin.dat", NULL);
	expect_refused("invalid", "read", s, "d", NULL);
	expect_refused("not_found", "read", s, "nope.txt", NULL);
}

IT_TEST(fs, edit_exact_ambiguous_whitespace_crlf)
{
	const char *s = it_session();
	json_object *doc;
	it_result r;
	char *out;

	sh(s, "printf 'one\\ntwo\\none\\nthree   \\n  four\\n' > f.txt; "
	      "printf 'x\\r\\ny\\r\\nz\\r\\n' > crlf.txt");

	doc = run_json(0, "edit", s, "f.txt", "--old", "two", "--new", "TWO",
		       NULL);
	cr_assert_str_eq(jstr(doc, "match"), "exact");
	cr_assert_eq(jint(doc, "replacements"), 1);
	json_object_put(doc);

	/* "one" is on lines 1 and 3: refused, and the lines are named */
	r = run(2, "edit", s, "f.txt", "--old", "one", "--new", "ONE", NULL);
	cr_assert(strstr(r.err, "1") && strstr(r.err, "3"), "%s", r.err);
	it_result_free(&r);
	expect_refused("ambiguous", "edit", s, "f.txt", "--old", "one", "--new",
		       "ONE", NULL);

	doc = run_json(0, "edit", s, "f.txt", "--old", "one", "--new", "1",
		       "--all", NULL);
	cr_assert_eq(jint(doc, "replacements"), 2);
	json_object_put(doc);

	/* trailing blanks in the file, none in the old text */
	doc = run_json(0, "edit", s, "f.txt", "--old", "three\n  four", "--new",
		       "3\n  4", NULL);
	cr_assert_str_eq(jstr(doc, "match"), "whitespace");
	json_object_put(doc);
	out = sh_out(s, "cat f.txt");
	cr_assert_str_eq(out, "1\nTWO\n1\n3\n  4\n", "got %s", out);
	free(out);

	/* a CRLF file stays CRLF, byte for byte */
	doc = run_json(0, "edit", s, "crlf.txt", "--old", "x\ny", "--new",
		       "X\nY", NULL);
	json_object_put(doc);
	doc = run_json(0, "read", s, "crlf.txt", NULL);
	cr_assert_str_eq(jstr(doc, "content"), "X\r\nY\r\nz\r\n");
	json_object_put(doc);

	/* no match: the closest region comes back, with line numbers */
	r = run(2, "edit", s, "f.txt", "--old", "TWO\n1\nthree", "--new", "x",
		NULL);
	cr_assert(strstr(r.err, "TWO"), "closest region missing: %s", r.err);
	it_result_free(&r);
	expect_refused("no_match", "edit", s, "f.txt", "--old", "absent text",
		       "--new", "x", NULL);
	out = sh_out(s, "cat f.txt");
	cr_assert_str_eq(out, "1\nTWO\n1\n3\n  4\n",
			 "a failed edit changed the file: %s", out);
	free(out);
}

/* Symlinks made by the sandboxed code must not lead any tool outside. */
IT_TEST(fs, symlink_escapes_refused)
{
	const char *s = it_session();
	char *before, *after;
	json_object *doc;
	it_result r;

	sh(s, "echo inside > real.txt && mkdir d && "
	      "ln -s /etc etc && ln -s /etc/passwd pw && ln -s ../.. up && "
	      "ln -s /etc d/sub && ln -s real.txt alias && "
	      "ln -s /workspace/real.txt absalias && ln -s ../real.txt d/rel");
	before = sh_out(s, "md5sum /etc/passwd; ls /etc");

	expect_refused("escape", "read", s, "etc/passwd", NULL);
	expect_refused("escape", "read", s, "pw", NULL);
	expect_refused("escape", "read", s, "../etc/passwd", NULL);
	expect_refused("escape", "read", s, "/etc/passwd", NULL);
	expect_refused("escape", "read", s, "/workspace/../etc/passwd", NULL);
	expect_refused("escape", "read", s, "up/etc/passwd", NULL);
	expect_refused("escape", "read", s, "d/sub/passwd", NULL);
	expect_refused("escape", "write", s, "etc/hutch-escape", "--content",
		       "x", NULL);
	expect_refused("escape", "write", s, "d/sub/new/deeper", "--content",
		       "x", NULL);
	expect_refused("escape", "write", s, "pw", "--content", "x", NULL);
	expect_refused("escape", "write", s, "../escape", "--content", "x",
		       NULL);
	expect_refused("escape", "edit", s, "pw", "--old", "root", "--new",
		       "toor", NULL);
	expect_refused("escape", "ls", s, "etc", NULL);
	expect_refused("escape", "ls", s, "d/sub", NULL);
	expect_refused("escape", "grep", s, "root", "etc", NULL);
	expect_refused("escape", "find", s, "*", "up", NULL);

	after = sh_out(s, "md5sum /etc/passwd; ls /etc");
	cr_assert_str_eq(before, after, "something outside changed");
	free(before);
	free(after);
	r = run(1, "exec", s, "--", "test", "-e", "/etc/hutch-escape", NULL);
	it_result_free(&r);
	r = run(1, "exec", s, "--", "test", "-e", "/escape", NULL);
	it_result_free(&r);

	/* Symlinks that stay inside are followed. */
	doc = run_json(0, "read", s, "alias", NULL);
	cr_assert_str_eq(jstr(doc, "content"), "inside\n");
	json_object_put(doc);
	doc = run_json(0, "read", s, "absalias", NULL);
	cr_assert_str_eq(jstr(doc, "content"), "inside\n");
	json_object_put(doc);
	doc = run_json(0, "read", s, "d/rel", NULL);
	cr_assert_str_eq(jstr(doc, "content"), "inside\n");
	json_object_put(doc);
	doc = run_json(0, "write", s, "alias", "--content", "via link\n", NULL);
	json_object_put(doc);
	before = sh_out(s, "cat real.txt; test -L alias && echo still-a-link");
	cr_assert_str_eq(before, "via link\nstill-a-link\n");
	free(before);

	/* Searches do not follow symlinks: /etc/passwd's "root" is not found
	 * through etc/ or pw. */
	r = run(1, "grep", s, "root", NULL);
	cr_assert_eq(r.out_len, 0, "%s", r.out);
	it_result_free(&r);
	doc = run_json(0, "find", s, "passwd", NULL);
	cr_assert_eq(json_object_array_length(it_json_get(doc, "entries")), 0);
	json_object_put(doc);
}

IT_TEST(fs, grep_find_ls)
{
	const char *s = it_session();
	json_object *doc;
	char *lines;
	it_result r;

	sh(s,
	   "mkdir -p src docs .git && printf 'int main(void)\\n{\\n}\\n' > src/a.c && "
	   "printf '#define MAIN 1\\n' > src/b.h && printf 'main\\n' > .git/config && "
	   "printf 'main\\000\\n' > bin.dat && printf 'intro\\nMain thing\\n' > docs/x.md && "
	   "ln -s src/a.c link.c");

	r = run(0, "grep", s, "main", NULL);
	cr_assert_str_eq(r.out, "src/a.c:1:int main(void)\n");
	it_result_free(&r);

	doc = run_json(0, "grep", s, "main", "-i", NULL);
	lines = entries(doc, "matches", "path");
	cr_assert_str_eq(lines, "docs/x.md\nsrc/a.c\nsrc/b.h\n");
	free(lines);
	json_object_put(doc);

	doc = run_json(0, "grep", s, "-i", "main", "--include", "*.md", NULL);
	lines = entries(doc, "matches", "text");
	cr_assert_str_eq(lines, "Main thing\n");
	cr_assert_eq(
		jint(json_object_array_get_idx(it_json_get(doc, "matches"), 0),
		     "line"),
		2);
	free(lines);
	json_object_put(doc);

	doc = run_json(0, "grep", s, "-i", "main", "--max", "1", NULL);
	cr_assert_eq(json_object_array_length(it_json_get(doc, "matches")), 1);
	cr_assert_eq(jbool(doc, "truncated"), 1);
	json_object_put(doc);

	doc = run_json(0, "grep", s, "^[{}]$", "src/a.c", NULL);
	cr_assert_eq(json_object_array_length(it_json_get(doc, "matches")), 2);
	json_object_put(doc);

	r = run(1, "grep", s, "nothing-like-this", NULL);
	it_result_free(&r);
	expect_refused("invalid", "grep", s, "a(", NULL);

	doc = run_json(0, "find", s, "*.c", NULL);
	lines = entries(doc, "entries", "path");
	cr_assert_str_eq(lines, "link.c\nsrc/a.c\n");
	free(lines);
	json_object_put(doc);

	doc = run_json(0, "find", s, "*", "--type", "d", NULL);
	lines = entries(doc, "entries", "path");
	cr_assert_str_eq(lines, "docs\nsrc\n");
	free(lines);
	json_object_put(doc);

	doc = run_json(0, "ls", s, NULL);
	lines = entries(doc, "entries", "name");
	cr_assert_str_eq(lines, ".git\nbin.dat\ndocs\nlink.c\nsrc\n");
	free(lines);
	lines = entries(doc, "entries", "type");
	cr_assert_str_eq(lines, "dir\nfile\ndir\nsymlink\ndir\n");
	free(lines);
	cr_assert_str_eq(
		jstr(json_object_array_get_idx(it_json_get(doc, "entries"), 3),
		     "target"),
		"src/a.c");
	cr_assert_eq(
		jint(json_object_array_get_idx(it_json_get(doc, "entries"), 1),
		     "size"),
		6);
	json_object_put(doc);

	r = run(0, "ls", s, "src", NULL);
	cr_assert(strstr(r.out, "a.c") && strstr(r.out, "b.h"), "%s", r.out);
	it_result_free(&r);
}

/* grep takes the syntax agents write, as for ripgrep: PCRE2, where POSIX
 * ERE read "\\d" as a literal 'd' and refused "(?i)". */
IT_TEST(fs, grep_pcre2)
{
	const char *s = it_session();
	json_object *doc, *error;
	it_result r;

	sh(s,
	   "printf 'abc d\\nx 123\\n' > digits.txt && "
	   "printf 'the cat sat\\nconcatenate\\n' > words.txt && "
	   "printf 'int MAIN\\n' > caps.txt && "
	   "printf 'abcb\\n' > lazy.txt && "
	   "printf 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab\\n' > evil.txt");

	r = run(0, "grep", s, "\\d", NULL);
	cr_assert_str_eq(r.out, "digits.txt:2:x 123\n");
	it_result_free(&r);

	r = run(0, "grep", s, "\\bcat\\b", NULL);
	cr_assert_str_eq(r.out, "words.txt:1:the cat sat\n");
	it_result_free(&r);

	r = run(0, "grep", s, "(?i)main", NULL);
	cr_assert_str_eq(r.out, "caps.txt:1:int MAIN\n");
	it_result_free(&r);

	r = run(0, "grep", s, "a.*?b", "lazy.txt", NULL);
	cr_assert_str_eq(r.out, "lazy.txt:1:abcb\n");
	it_result_free(&r);
	/* The lazy a.*?b took "ab", so "c" follows the atomic group; the
	 * greedy a.*b took "abcb" and never gives it back. */
	doc = run_json(0, "grep", s, "(?>a.*?b)c", "lazy.txt", NULL);
	cr_assert_eq(json_object_array_length(it_json_get(doc, "matches")), 1);
	json_object_put(doc);
	r = run(1, "grep", s, "(?>a.*b)c", "lazy.txt", NULL);
	it_result_free(&r);

	expect_refused("invalid", "grep", s, "a(", NULL);
	doc = run_json(2, "grep", s, "a(", NULL);
	error = it_json_get(doc, "error");
	cr_assert_str_eq(
		jstr(error, "message"),
		"grep: bad regex 'a(': missing closing parenthesis at offset 2");
	json_object_put(doc);

	/* (a+)+$ against 39 a's and a b: 2^39 ways to fail, stopped by the
	 * match limit with an error that names the file and line. */
	expect_refused("invalid", "grep", s, "(a+)+$", NULL);
	doc = run_json(2, "grep", s, "(a+)+$", NULL);
	error = it_json_get(doc, "error");
	cr_assert(strstr(jstr(error, "message"), "pattern too complex"), "%s",
		  jstr(error, "message"));
	cr_assert(strstr(jstr(error, "message"), "evil.txt line 1"), "%s",
		  jstr(error, "message"));
	json_object_put(doc);
	/* The other files alone: no error, no match */
	r = run(1, "grep", s, "(a+)+$", "words.txt", NULL);
	it_result_free(&r);
}

/* Nothing in the image is needed: no shell, no libc, no /etc. */
IT_TEST(fs, tools_on_an_empty_image)
{
	const char *s = it_session();
	json_object *doc;
	it_result r;

	r = run(0, "up", s, "--image", "hutch-bare:latest", NULL);
	it_result_free(&r);
	doc = run_json(0, "write", s, "src/m.txt", "--content", "alpha\nbeta\n",
		       NULL);
	json_object_put(doc);
	doc = run_json(0, "edit", s, "src/m.txt", "--old", "beta", "--new",
		       "gamma", NULL);
	json_object_put(doc);
	doc = run_json(0, "read", s, "src/m.txt", NULL);
	cr_assert_str_eq(jstr(doc, "content"), "alpha\ngamma\n");
	json_object_put(doc);
	r = run(0, "grep", s, "gam+a", NULL);
	cr_assert_str_eq(r.out, "src/m.txt:2:gamma\n");
	it_result_free(&r);
	r = run(0, "find", s, "*.txt", NULL);
	cr_assert_str_eq(r.out, "src/m.txt\n");
	it_result_free(&r);
	doc = run_json(0, "ls", s, "src", NULL);
	cr_assert_eq(json_object_array_length(it_json_get(doc, "entries")), 1);
	json_object_put(doc);
	/* and the image really has no shell */
	r = it_hutch("exec", s, "--", "sh", "-c", "true", NULL);
	cr_assert_eq(r.status, 127, "sh ran in the empty image: %d", r.status);
	it_result_free(&r);
}

/*
 * A mistyped name must not quietly become a new, empty session: the file
 * tools and sync-out refuse a session that does not exist, and make
 * nothing; exec does with --no-create or HUTCH_NO_CREATE=1, and without
 * them still makes it lazily.
 */
IT_TEST(fs, no_such_session)
{
	const char *s = it_session();
	static const char *const tools[][4] = {
		{ "read", "f.txt", NULL },
		{ "write", "f.txt", "--content" },
		{ "ls", NULL },
		{ "find", "*", NULL },
	};
	char dir[] = "/tmp/hutch-it-nosession-XXXXXX";
	it_result r;

	for (size_t i = 0; i < sizeof(tools) / sizeof(tools[0]); i++) {
		const char *args[8] = { tools[i][0], s };
		size_t n = 2;

		for (size_t k = 1; k < 4 && tools[i][k]; k++)
			args[n++] = tools[i][k];
		if (tools[i][2])
			args[n++] = "x";
		args[n] = NULL;
		r = it_hutch_v(NULL, args);
		IT_ASSERT_EXIT(r, 2, tools[i][0]);
		cr_assert(strstr(r.err, "no such session"), "%s: %s",
			  tools[i][0], r.err);
		it_result_free(&r);
	}
	cr_assert_not_null(mkdtemp(dir));
	r = it_hutch("sync-out", s, dir, NULL);
	IT_ASSERT_EXIT(r, 125, "sync-out");
	cr_assert(strstr(r.err, "no such session"), "%s", r.err);
	it_result_free(&r);
	rmdir(dir);

	r = it_hutch("exec", "--no-create", s, "--", "true", NULL);
	IT_ASSERT_EXIT(r, 125, "exec --no-create");
	cr_assert(strstr(r.err, "no such session"), "%s", r.err);
	it_result_free(&r);
	/* Each test runs in a process of its own: the variable goes with
	 * it. */
	cr_assert_eq(setenv("HUTCH_NO_CREATE", "1", 1), 0);
	r = it_hutch("exec", s, "--", "true", NULL);
	IT_ASSERT_EXIT(r, 125, "HUTCH_NO_CREATE=1 exec");
	it_result_free(&r);
	cr_assert_eq(unsetenv("HUTCH_NO_CREATE"), 0);
	cr_assert_eq(it_count_containers(s) + it_count_volumes(s), 0,
		     "a refused call made something");

	/* Without them, exec still makes it. */
	r = it_hutch("exec", s, "--", "true", NULL);
	IT_ASSERT_EXIT(r, 0, "exec");
	it_result_free(&r);
	r = it_hutch("read", s, "f.txt", NULL);
	IT_ASSERT_EXIT(r, 2, "read of a missing file");
	cr_assert(strstr(r.err, "no such file"), "%s", r.err);
	it_result_free(&r);
}

/* read -n: cat -n's numbers, the file's own in a range, and the truncation
 * still said. */
IT_TEST(fs, numbered_reads)
{
	const char *s = it_session();
	json_object *doc;
	it_result r;

	sh(s,
	   "printf 'alpha\\n\\nbeta\\ngamma\\n' > n.txt; seq 1 3000 > big.txt");
	doc = run_json(0, "read", s, "n.txt", "-n", NULL);
	cr_assert_str_eq(
		jstr(doc, "content"),
		"     1\talpha\n     2\t\n     3\tbeta\n     4\tgamma\n");
	cr_assert_eq(jbool(doc, "line_numbers"), 1);
	cr_assert_eq(jint(doc, "total_lines"), 4);
	json_object_put(doc);

	/* a range: the numbers are the file's */
	doc = run_json(0, "read", s, "big.txt", "--line-numbers", "--offset",
		       "2999", "--limit", "5", NULL);
	cr_assert_str_eq(jstr(doc, "content"), "  2999\t2999\n  3000\t3000\n");
	cr_assert_eq(jint(doc, "offset"), 2999);
	cr_assert_eq(jbool(doc, "truncated"), 0);
	json_object_put(doc);

	/* text mode, cut by --limit: stderr says where to go on */
	r = run(0, "read", s, "big.txt", "-n", "--offset", "10", "--limit", "2",
		NULL);
	cr_assert_str_eq(r.out, "    10\t10\n    11\t11\n");
	cr_assert(strstr(r.err, "--offset 12"), "%s", r.err);
	it_result_free(&r);

	/* the default 2000 lines, numbered, still truncated honestly */
	doc = run_json(0, "read", s, "big.txt", "-n", NULL);
	cr_assert_eq(jint(doc, "lines"), 2000);
	cr_assert_eq(jbool(doc, "truncated"), 1);
	cr_assert_eq(jint(doc, "next_offset"), 2001);
	cr_assert(strstr(jstr(doc, "content"), "  2000\t2000\n") != NULL);
	json_object_put(doc);

	/* without -n, the text alone */
	doc = run_json(0, "read", s, "n.txt", "--offset", "3", NULL);
	cr_assert_str_eq(jstr(doc, "content"), "beta\ngamma\n");
	json_object_put(doc);
}

/* The code and message of a --json refusal (caller frees the message). */
static char *refusal(const char *code, const char *arg, ...)
	__attribute__((sentinel));
static char *refusal(const char *code, const char *arg, ...)
{
	const char *args[MAX_TOOL_ARGS + 2];
	size_t n = 0;
	va_list ap;
	it_result r;
	json_object *doc;
	char *msg;

	va_start(ap, arg);
	for (const char *a = arg; a; a = va_arg(ap, const char *))
		args[n++] = a;
	va_end(ap);
	args[n++] = "--json";
	args[n] = NULL;
	r = it_hutch_v(NULL, args);
	IT_ASSERT_EXIT(r, 2, args[0]);
	doc = it_json(r.out, r.out_len);
	cr_assert_str_eq(jstr(it_json_get(doc, "error"), "code"), code, "%s",
			 r.out);
	msg = strdup(jstr(it_json_get(doc, "error"), "message"));
	json_object_put(doc);
	it_result_free(&r);
	return msg;
}

IT_TEST(fs, rm_file)
{
	const char *s = it_session();
	json_object *doc;
	it_result r;
	char *out;

	sh(s, "echo x > f.txt && mkdir -p empty full/sub && echo a > full/a && "
	      "echo b > full/sub/b && ln -s full/a link");

	doc = run_json(0, "rm-file", s, "f.txt", NULL);
	cr_assert_str_eq(jstr(doc, "path"), "f.txt");
	cr_assert_str_eq(jstr(doc, "type"), "file");
	cr_assert_eq(jint(doc, "removed"), 1);
	json_object_put(doc);
	expect_refused("not_found", "rm-file", s, "f.txt", NULL);

	r = run(0, "rm-file", s, "empty", NULL);
	cr_assert_str_eq(r.out, "empty: directory deleted (1 entry)\n");
	it_result_free(&r);

	/* a symlink goes, not what it points to */
	doc = run_json(0, "rm-file", s, "link", NULL);
	cr_assert_str_eq(jstr(doc, "type"), "symlink");
	json_object_put(doc);

	/* not empty: refused, said in the CLI's words, nothing removed */
	out = refusal("conflict", "rm-file", s, "full", NULL);
	cr_assert(strstr(out, "rm-file: 'full' is a directory that is not "
			      "empty; with --recursive") == out,
		  "%s", out);
	free(out);
	doc = run_json(0, "rm-file", s, "-r", "full", NULL);
	cr_assert_eq(jint(doc, "removed"), 4);
	json_object_put(doc);
	out = sh_out(s, "ls -A");
	cr_assert_str_eq(out, "", "left: %s", out);
	free(out);
	expect_refused("invalid", "rm-file", s, "-r", ".", NULL);
	expect_refused("invalid", "rm-file", s, "--recursive", "/workspace",
		       NULL);
}

IT_TEST(fs, mv_file)
{
	const char *s = it_session();
	json_object *doc;
	it_result r;
	char *out;

	sh(s,
	   "echo A > a.txt && echo B > b.txt && mkdir -p d/e && echo x > d/e/x");

	/* across directories, making the missing ones */
	doc = run_json(0, "mv-file", s, "a.txt", "new/dir/a.txt", NULL);
	cr_assert_str_eq(jstr(doc, "path"), "new/dir/a.txt");
	cr_assert_str_eq(jstr(doc, "from"), "a.txt");
	cr_assert_eq(jbool(doc, "replaced"), 0);
	json_object_put(doc);

	/* an existing destination is kept without --overwrite */
	out = refusal("conflict", "mv-file", s, "b.txt", "new/dir/a.txt", NULL);
	cr_assert(strstr(out, "mv-file: 'new/dir/a.txt' exists; with "
			      "--overwrite it is replaced") == out,
		  "%s", out);
	free(out);
	out = sh_out(s, "cat new/dir/a.txt b.txt");
	cr_assert_str_eq(out, "A\nB\n");
	free(out);
	r = run(0, "mv-file", s, "b.txt", "new/dir/a.txt", "--overwrite", NULL);
	cr_assert_str_eq(r.out, "b.txt -> new/dir/a.txt (replaced what was "
				"there)\n");
	it_result_free(&r);
	out = sh_out(s, "cat new/dir/a.txt; test -e b.txt || echo gone");
	cr_assert_str_eq(out, "B\ngone\n");
	free(out);

	/* a directory moves whole, not into itself */
	doc = run_json(0, "mv-file", s, "d", "new/d2", NULL);
	cr_assert_str_eq(jstr(doc, "type"), "dir");
	json_object_put(doc);
	expect_refused("invalid", "mv-file", s, "new", "new/d2/inner", NULL);
	out = sh_out(s, "cat new/d2/e/x");
	cr_assert_str_eq(out, "x\n");
	free(out);

	/* Commands may rename and link across directories too (their
	 * Landlock domain once refused it with EXDEV). */
	sh(s, "mkdir p q && echo l > p/f && ln p/f q/hard && mv p/f q/f");
	out = sh_out(s, "cat q/hard q/f; ls p");
	cr_assert_str_eq(out, "l\nl\n");
	free(out);

	/* Two names of one file: rename(2) would do nothing and leave the
	 * first, so the move is refused rather than said to be done. */
	out = refusal("invalid", "mv-file", s, "q/f", "q/hard", "--overwrite",
		      NULL);
	cr_assert(strstr(out, "are the same file"), "%s", out);
	free(out);
	out = sh_out(s, "ls q");
	cr_assert_str_eq(out, "f\nhard\n");
	free(out);
}
