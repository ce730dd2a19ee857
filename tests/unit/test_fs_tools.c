/*
 * Unit tests: the agent's file tools end to end on the host.
 *
 * Runs the built static agent ($HUTCH_BUILDDIR/src/agent/hutch-agent) as
 * "hutch-agent fs --root TMPDIR TOOL ..." against real temp trees and
 * checks the one JSON object it prints, the exit code and the files.
 * write and edit take their texts from stdin ("stdin:LEN", as the library
 * sends the large ones) or the environment ("env:HUTCH_FS_*", the small
 * ones); text() queues the bytes that run() then pipes in.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <json-c/json.h>

#define OUT_CAP (16 << 20)

#define IN_CAP (40 << 20)

static char agent[PATH_MAX], base[256], root[PATH_MAX], outside[PATH_MAX];
static json_object *js; /* the last answer */
/* What text() queued for the next run(): the bytes, and each text's
 * place in them with the source naming it. */
static char *in_buf;
static size_t in_len;
static struct piece {
	const char *src;
	size_t off, len;
} pieces[8];
static size_t npieces;
/* The agent's stdin as run() orders it. */
static char *feed;
static size_t feed_len;

static void find_agent(void)
{
	const char *b = getenv("HUTCH_BUILDDIR");

	snprintf(agent, sizeof(agent), "%s/src/agent/hutch-agent",
		 b && *b ? b : ".");
	cr_assert_eq(access(agent, X_OK), 0,
		     "no agent at %s (set HUTCH_BUILDDIR)", agent);
}

static void put_file(const char *rel, const char *data, size_t n)
{
	char p[PATH_MAX * 2];
	int fd;

	snprintf(p, sizeof(p), "%s/%s", root, rel);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	cr_assert_geq(fd, 0, "%s: %s", p, strerror(errno));
	cr_assert_eq(write(fd, data, n), (ssize_t)n);
	close(fd);
}

#define PUT(rel, s) put_file(rel, s, sizeof(s) - 1)

static void mk(const char *rel)
{
	char p[PATH_MAX * 2];

	snprintf(p, sizeof(p), "%s/%s", root, rel);
	cr_assert_eq(mkdir(p, 0755), 0, "%s: %s", p, strerror(errno));
}

static void ln(const char *target, const char *rel)
{
	char p[PATH_MAX * 2];

	snprintf(p, sizeof(p), "%s/%s", root, rel);
	cr_assert_eq(symlink(target, p), 0);
}

/* Whole file (up to 4 MiB) into a static buffer; NULL when missing. */
static const char *slurp(const char *dir, const char *rel, size_t *len)
{
	static char buf[4 << 20];
	char p[PATH_MAX * 2];
	size_t got = 0;
	ssize_t n;
	int fd;

	snprintf(p, sizeof(p), "%s/%s", dir, rel);
	fd = open(p, O_RDONLY);
	if (fd < 0)
		return NULL;
	while ((n = read(fd, buf + got, sizeof(buf) - 1 - got)) > 0)
		got += (size_t)n;
	close(fd);
	cr_assert_geq(n, 0);
	cr_assert_lt(got, sizeof(buf) - 1, "%s: too big for the test", p);
	buf[got] = '\0';
	if (len)
		*len = got;
	return buf;
}

static void setup(void)
{
	find_agent();
	snprintf(base, sizeof(base), "/tmp/hutch-fstools-XXXXXX");
	cr_assert_not_null(mkdtemp(base));
	snprintf(root, sizeof(root), "%s/ws", base);
	snprintf(outside, sizeof(outside), "%s/outside", base);
	cr_assert_eq(mkdir(root, 0755), 0);
	cr_assert_eq(mkdir(outside, 0755), 0);
	in_buf = malloc(IN_CAP);
	feed = malloc(IN_CAP);
	cr_assert(in_buf && feed);
	in_len = 0;
	npieces = 0;
}

static void teardown(void)
{
	char cmd[600];

	json_object_put(js);
	js = NULL;
	free(in_buf);
	free(feed);
	in_buf = feed = NULL;
	if (base[0]) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
		if (system(cmd) != 0)
			cr_log_warn("could not remove %s", base);
	}
}

TestSuite(fstools, .init = setup, .fini = teardown, .timeout = 60);

/* Append the queued text named by @src, once. */
static void feed_text(const char *src)
{
	for (size_t i = 0; i < npieces; i++) {
		if (pieces[i].src != src)
			continue;
		memcpy(feed + feed_len, in_buf + pieces[i].off, pieces[i].len);
		feed_len += pieces[i].len;
		pieces[i].src = NULL;
	}
}

/* The queued texts in the order the library sends them and the agent
 * reads them (--from, --old-from, --new-from, whatever their place on
 * the command line: the order in which C evaluates run()'s arguments,
 * and so queues them, is unspecified), then those no option names. */
static void order_feed(const char *const *argv, int argc)
{
	static const char *const opts[] = { "--from", "--old-from",
					    "--new-from" };

	feed_len = 0;
	for (size_t k = 0; k < sizeof(opts) / sizeof(*opts); k++)
		for (int i = 0; i + 1 < argc; i++)
			if (!strcmp(argv[i], opts[k]))
				feed_text(argv[i + 1]);
	for (size_t i = 0; i < npieces; i++)
		if (pieces[i].src)
			feed_text(pieces[i].src);
	in_len = 0;
	npieces = 0;
}

/* A writer process that pipes the feed into the agent's stdin (@in) and
 * exits; the agent may stop reading early (EPIPE, ignored). */
static pid_t feed_stdin(int in[2])
{
	pid_t pid = fork();

	cr_assert_geq(pid, 0);
	if (pid == 0) {
		size_t off = 0;
		ssize_t w;

		signal(SIGPIPE, SIG_IGN);
		close(in[0]);
		/* In pieces, so the agent's reads come back short. */
		while (off < feed_len) {
			w = write(in[1], feed + off,
				  feed_len - off < 4099 ? feed_len - off :
							  4099);
			if (w <= 0)
				_exit(1);
			off += (size_t)w;
		}
		_exit(0);
	}
	return pid;
}

/*
 * Run "agent fs --root ROOT ARGS..." with what text() queued on its stdin
 * (else an empty stdin) and parse its stdout, which must be exactly one
 * JSON object and a newline.  Returns the exit code.
 */
static int run(const char *arg, ...)
{
	const char *argv[64];
	char *out;
	size_t len = 0;
	int p[2], in[2], status, argc = 0;
	va_list ap;
	ssize_t n;
	pid_t pid, feeder;

	argv[argc++] = agent;
	argv[argc++] = "fs";
	argv[argc++] = "--root";
	argv[argc++] = root;
	va_start(ap, arg);
	for (; arg && argc < 63; arg = va_arg(ap, const char *))
		argv[argc++] = arg;
	va_end(ap);
	argv[argc] = NULL;
	order_feed(argv, argc);
	cr_assert_eq(pipe(p), 0);
	cr_assert_eq(pipe(in), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		dup2(in[0], 0);
		dup2(p[1], 1);
		close(in[0]);
		close(in[1]);
		close(p[0]);
		close(p[1]);
		execv(agent, (char *const *)argv);
		_exit(127);
	}
	close(p[1]);
	feeder = feed_stdin(in);
	/* The feeder's is the last write end: its exit is the end of the
	 * agent's stdin. */
	close(in[0]);
	close(in[1]);
	/* After the forks: the feeder ends with _exit(), and valgrind would
	 * count a block it inherited as lost. */
	out = malloc(OUT_CAP);
	cr_assert_not_null(out);
	while ((n = read(p[0], out + len, OUT_CAP - 1 - len)) > 0)
		len += (size_t)n;
	close(p[0]);
	cr_assert_eq(waitpid(feeder, NULL, 0), feeder);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status));
	out[len] = '\0';
	cr_assert_gt(len, 1, "no output");
	cr_assert_eq(out[len - 1], '\n', "no final newline: %s", out);
	cr_assert_eq(strchr(out, '\n'), out + len - 1, "more than one line");
	cr_assert_lt(len, 8u << 20, "answer over 8 MiB");
	json_object_put(js);
	js = json_tokener_parse(out);
	cr_assert_not_null(js, "not JSON: %.300s", out);
	cr_assert(json_object_is_type(js, json_type_object));
	free(out);
	return WEXITSTATUS(status);
}

/* Member by a dotted path: "error.code", "entries.0.path". */
static json_object *get(const char *path)
{
	char buf[256], *tok, *save = NULL;
	json_object *o = js;

	snprintf(buf, sizeof(buf), "%s", path);
	for (tok = strtok_r(buf, ".", &save); tok && o;
	     tok = strtok_r(NULL, ".", &save)) {
		if (json_object_is_type(o, json_type_array))
			o = json_object_array_get_idx(o, (size_t)atoi(tok));
		else if (!json_object_object_get_ex(o, tok, &o))
			o = NULL;
	}
	return o;
}

static const char *str(const char *path)
{
	json_object *o = get(path);

	cr_assert_not_null(o, "no %s in %s", path,
			   json_object_to_json_string(js));
	return json_object_get_string(o);
}

static long long num(const char *path)
{
	json_object *o = get(path);

	cr_assert_not_null(o, "no %s in %s", path,
			   json_object_to_json_string(js));
	cr_assert(json_object_is_type(o, json_type_int));
	return json_object_get_int64(o);
}

static bool flag(const char *path)
{
	json_object *o = get(path);

	cr_assert_not_null(o, "no %s", path);
	cr_assert(json_object_is_type(o, json_type_boolean));
	return json_object_get_boolean(o);
}

static size_t count(const char *path)
{
	json_object *o = get(path);

	cr_assert_not_null(o, "no %s", path);
	cr_assert(json_object_is_type(o, json_type_array));
	return json_object_array_length(o);
}

#define EXPECT_ERROR(rc, want_rc, want_code)                    \
	do {                                                    \
		cr_expect_eq(rc, want_rc, "exit %d: %s", rc,    \
			     json_object_to_json_string(js));   \
		cr_expect_str_eq(str("error.code"), want_code); \
		cr_expect_not_null(get("error.message"));       \
	} while (0)

/*
 * Queue @n bytes of @data for the next run's stdin and return its source,
 * "stdin:N" with N = @n + @extra (@extra > 0: a text cut short in
 * transit).  run() sends the queued texts in the agent's order
 * (order_feed).
 */
static const char *text_n(const char *data, size_t n, size_t extra)
{
	static char srcs[8][48];
	static int next;
	char *src = srcs[next++ % 8];

	cr_assert_leq(n, IN_CAP - in_len);
	cr_assert_lt(npieces, sizeof(pieces) / sizeof(*pieces));
	memcpy(in_buf + in_len, data, n);
	snprintf(src, sizeof(srcs[0]), "stdin:%zu", n + extra);
	pieces[npieces++] = (struct piece){ src, in_len, n };
	in_len += n;
	return src;
}

static const char *text(const char *data)
{
	return text_n(data, strlen(data), 0);
}

/* --- read --------------------------------------------------------------- */

Test(fstools, read_counts_lines_without_final_newline)
{
	PUT("a.txt", "one\ntwo\nthree");
	cr_assert_eq(run("read", "a.txt", NULL), 0);
	cr_expect_str_eq(str("path"), "a.txt");
	cr_expect_str_eq(str("content"), "one\ntwo\nthree");
	cr_expect_eq(num("offset"), 1);
	cr_expect_eq(num("lines"), 3);
	cr_expect_eq(num("total_lines"), 3);
	cr_expect_eq(num("size"), 13);
	cr_expect_not(flag("truncated"));
	cr_expect_null(get("next_offset"));
}

Test(fstools, read_offset_and_limit)
{
	PUT("n.txt", "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n");
	cr_assert_eq(
		run("read", "n.txt", "--offset", "3", "--limit", "2", NULL), 0);
	cr_expect_str_eq(str("content"), "3\n4\n");
	cr_expect_eq(num("offset"), 3);
	cr_expect_eq(num("lines"), 2);
	cr_expect_eq(num("total_lines"), 10);
	cr_expect(flag("truncated"));
	cr_expect_eq(num("next_offset"), 5);
	/* the tail, exactly */
	cr_assert_eq(run("read", "n.txt", "--offset=9", NULL), 0);
	cr_expect_str_eq(str("content"), "9\n10\n");
	cr_expect_not(flag("truncated"));
	/* past the end: empty, not an error */
	cr_assert_eq(run("read", "n.txt", "--offset", "50", NULL), 0);
	cr_expect_str_eq(str("content"), "");
	cr_expect_eq(num("lines"), 0);
	cr_expect_eq(num("total_lines"), 10);
	cr_expect_not(flag("truncated"));
	/* bad values */
	EXPECT_ERROR(run("read", "n.txt", "--offset", "0", NULL), 1, "invalid");
	EXPECT_ERROR(run("read", "n.txt", "--limit", "x", NULL), 1, "invalid");
	EXPECT_ERROR(run("read", "n.txt", "--limit", NULL), 2, "usage");
}

Test(fstools, read_byte_cap_and_long_lines)
{
	char big[3000];

	PUT("ten.txt", "123456789\n123456789\n123456789\n");
	cr_assert_eq(run("read", "ten.txt", "--max-bytes", "25", NULL), 0);
	cr_expect_str_eq(str("content"), "123456789\n123456789\n");
	cr_expect_eq(num("lines"), 2);
	cr_expect(flag("truncated"));
	cr_expect_eq(num("next_offset"), 3);
	/* one line longer than the cap, cut at a UTF-8 boundary: "é" is
	 * two bytes, and a cap of 5 falls inside the third one */
	PUT("u.txt", "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\nnext\n");
	cr_assert_eq(run("read", "u.txt", "--max-bytes", "5", NULL), 0);
	cr_expect_str_eq(str("content"), "\xc3\xa9\xc3\xa9");
	cr_expect_eq(num("lines"), 1);
	cr_expect(flag("truncated"));
	cr_expect_eq(num("next_offset"), 2);
	/* a line over the default cap's chunk size spans several reads */
	memset(big, 'x', sizeof(big));
	big[sizeof(big) - 1] = '\n';
	put_file("big.txt", big, sizeof(big));
	cr_assert_eq(run("read", "big.txt", "--max-bytes", "100", NULL), 0);
	cr_expect_eq(strlen(str("content")), 100);
	cr_expect_eq(num("total_lines"), 1);
}

/* --line-numbers: cat -n's prefix, the file's own numbers from --offset
 * on, counted by --max-bytes like the text. */
Test(fstools, read_numbered_lines)
{
	char line[32], *data = malloc(1000010 * 2 + 1);
	size_t n = 0;

	PUT("n.txt", "alpha\n\n\tgamma\r\nlast");
	cr_assert_eq(run("read", "n.txt", "--line-numbers", NULL), 0);
	cr_expect_str_eq(str("content"), "     1\talpha\n     2\t\n"
					 "     3\t\tgamma\r\n     4\tlast");
	cr_expect_eq(num("lines"), 4);
	cr_expect_eq(num("total_lines"), 4);
	cr_expect(flag("line_numbers"));
	cr_expect(!flag("truncated"));
	/* a range carries the file's numbers */
	cr_assert_eq(run("read", "n.txt", "--line-numbers", "--offset", "2",
			 "--limit", "2", NULL),
		     0);
	cr_expect_str_eq(str("content"), "     2\t\n     3\t\tgamma\r\n");
	cr_expect(flag("truncated"));
	cr_expect_eq(num("next_offset"), 4);
	/* the cap counts the prefix: 13 bytes hold line 1 (13), not 2 */
	cr_assert_eq(run("read", "n.txt", "--line-numbers", "--max-bytes", "20",
			 NULL),
		     0);
	cr_expect_str_eq(str("content"), "     1\talpha\n");
	cr_expect_eq(num("lines"), 1);
	cr_expect(flag("truncated"));
	cr_expect_eq(num("next_offset"), 2);
	/* a cap below one line cuts it, prefix first, and moves on */
	cr_assert_eq(run("read", "n.txt", "--line-numbers", "--max-bytes", "9",
			 NULL),
		     0);
	cr_expect_str_eq(str("content"), "     1\tal");
	cr_expect_eq(num("next_offset"), 2);
	/* without the option nothing changes */
	cr_assert_eq(run("read", "n.txt", "--offset", "4", NULL), 0);
	cr_expect_str_eq(str("content"), "last");
	cr_expect_null(get("line_numbers"));
	/* numbers wider than six columns widen the prefix, as cat -n's */
	cr_assert_not_null(data);
	for (int i = 1; i <= 1000001; i++)
		n += (size_t)snprintf(data + n, 3, "%c\n", 'a' + i % 26);
	put_file("many.txt", data, n);
	free(data);
	cr_assert_eq(run("read", "many.txt", "-n", NULL), 2); /* no -n */
	cr_assert_eq(run("read", "many.txt", "--line-numbers", "--offset",
			 "999999", NULL),
		     0);
	snprintf(line, sizeof(line), "999999\t%c\n1000000\t%c\n1000001\t%c\n",
		 'a' + 999999 % 26, 'a' + 1000000 % 26, 'a' + 1000001 % 26);
	cr_expect_str_eq(str("content"), line);
	/* binary files stay refused, invalid UTF-8 stays repaired */
	put_file("bin", "a\0b\n", 4);
	EXPECT_ERROR(run("read", "bin", "--line-numbers", NULL), 1, "binary");
	PUT("bad.txt", "\xff\n");
	cr_assert_eq(run("read", "bad.txt", "--line-numbers", NULL), 0);
	cr_expect_str_eq(str("content"), "     1\t\xef\xbf\xbd\n");
}

Test(fstools, read_streams_large_files)
{
	size_t n = 300000, i; /* 300k lines, 3 MB: past any buffer */
	char *data = malloc(n * 10);

	for (i = 0; i < n; i++)
		memcpy(data + 10 * i, "abcdefghi\n", 10);
	put_file("large.txt", data, n * 10);
	free(data);
	cr_assert_eq(run("read", "large.txt", NULL), 0);
	cr_expect_eq(num("lines"), 2000);
	cr_expect_eq(num("total_lines"), (long long)n);
	cr_expect_eq(num("size"), (long long)n * 10);
	cr_expect(flag("truncated"));
	cr_expect_eq(num("next_offset"), 2001);
	cr_assert_eq(run("read", "large.txt", "--offset", "299999", NULL), 0);
	cr_expect_eq(num("lines"), 2);
	cr_expect_not(flag("truncated"));
}

Test(fstools, read_errors)
{
	char p[PATH_MAX * 2];

	put_file("bin", "ab\0cd", 5);
	mk("dir");
	EXPECT_ERROR(run("read", "bin", NULL), 1, "binary");
	cr_expect(strstr(str("error.message"), "(5 bytes)"));
	EXPECT_ERROR(run("read", "dir", NULL), 1, "is_dir");
	EXPECT_ERROR(run("read", "nope", NULL), 1, "not_found");
	cr_expect(strstr(str("error.message"), "'nope'"));
	snprintf(p, sizeof(p), "%s/fifo", root);
	cr_assert_eq(mkfifo(p, 0644), 0);
	EXPECT_ERROR(run("read", "fifo", NULL), 1, "not_file");
	ln("/etc/passwd", "pw");
	EXPECT_ERROR(run("read", "pw", NULL), 1, "escape");
	EXPECT_ERROR(run("read", "../outside/x", NULL), 1, "escape");
	EXPECT_ERROR(run("read", "/etc/hostname", NULL), 1, "escape");
	PUT("f", "x\n");
	EXPECT_ERROR(run("read", "f/g", NULL), 1, "not_dir");
}

Test(fstools, read_repairs_invalid_utf8)
{
	PUT("bad.txt", "a\xff"
		       "b\n");
	cr_assert_eq(run("read", "bad.txt", NULL), 0);
	cr_expect_str_eq(str("content"), "a\xef\xbf\xbd"
					 "b\n");
	cr_expect_eq(num("size"), 4);
}

Test(fstools, absolute_path_under_root)
{
	char p[PATH_MAX * 2];

	PUT("abs.txt", "hi\n");
	snprintf(p, sizeof(p), "%s/abs.txt", root);
	cr_assert_eq(run("read", p, NULL), 0);
	cr_expect_str_eq(str("path"), "abs.txt");
}

/* --- write ---------------------------------------------------------------- */

static bool no_temp_files(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	bool clean = true;

	cr_assert_not_null(d);
	while ((de = readdir(d)))
		if (strstr(de->d_name, ".hutch-"))
			clean = false;
	closedir(d);
	return clean;
}

Test(fstools, write_creates_parents_and_file)
{
	char p[PATH_MAX * 2];
	struct stat sb;

	cr_assert_eq(run("write", "a/b/c.txt", "--from", text("hello\n"), NULL),
		     0);
	cr_expect_str_eq(str("path"), "a/b/c.txt");
	cr_expect_eq(num("bytes"), 6);
	cr_expect(flag("created"));
	cr_expect_str_eq(str("mode"), "0644");
	cr_expect_str_eq(slurp(root, "a/b/c.txt", NULL), "hello\n");
	snprintf(p, sizeof(p), "%s/a/b/c.txt", root);
	cr_assert_eq(stat(p, &sb), 0);
	cr_expect_eq(sb.st_mode & 07777, 0644);
	snprintf(p, sizeof(p), "%s/a/b", root);
	cr_expect(no_temp_files(p));
}

Test(fstools, write_replaces_and_keeps_mode)
{
	char p[PATH_MAX * 2];
	struct stat sb;
	ino_t before;

	PUT("x.sh", "old\n");
	snprintf(p, sizeof(p), "%s/x.sh", root);
	cr_assert_eq(chmod(p, 0750), 0);
	cr_assert_eq(stat(p, &sb), 0);
	before = sb.st_ino;
	cr_assert_eq(run("write", "x.sh", "--from", text("new!\n"), NULL), 0);
	cr_expect_not(flag("created"));
	cr_expect_str_eq(str("mode"), "0750");
	cr_assert_eq(stat(p, &sb), 0);
	cr_expect_eq(sb.st_mode & 07777, 0750);
	/* atomic replace: a new inode, never the old one rewritten */
	cr_expect_neq(sb.st_ino, before);
	cr_expect_str_eq(slurp(root, "x.sh", NULL), "new!\n");
	cr_expect(no_temp_files(root));
}

/* Small texts come in the environment, base64-encoded ("env:NAME"). */
Test(fstools, texts_from_the_environment)
{
	/* "h\xc3\xa9\nx": one padding character */
	cr_assert_eq(setenv("HUTCH_FS_TEXT0", "aMOpCng=", 1), 0);
	cr_assert_eq(
		run("write", "e.txt", "--from", "env:HUTCH_FS_TEXT0", NULL), 0);
	cr_expect_eq(num("bytes"), 5);
	{
		char p[PATH_MAX * 2], buf[16];
		FILE *f;
		size_t n;

		snprintf(p, sizeof(p), "%s/e.txt", root);
		f = fopen(p, "rb");
		cr_assert_not_null(f);
		n = fread(buf, 1, sizeof(buf), f);
		fclose(f);
		cr_expect_eq(n, 5);
		cr_expect_eq(memcmp(buf, "h\xc3\xa9\nx", 5), 0);
	}
	cr_assert_eq(setenv("HUTCH_FS_TEXT0", "aMOp", 1), 0);
	cr_assert_eq(setenv("HUTCH_FS_TEXT1", "Ynll", 1), 0);
	cr_assert_eq(run("edit", "e.txt", "--old-from", "env:HUTCH_FS_TEXT0",
			 "--new-from", "env:HUTCH_FS_TEXT1", NULL),
		     0);
	cr_expect_str_eq(slurp(root, "e.txt", NULL), "bye\nx");
	/* only HUTCH_FS_* variables, and only valid base64 */
	EXPECT_ERROR(run("write", "e.txt", "--from", "env:PATH", NULL), 2,
		     "usage");
	cr_assert_eq(setenv("HUTCH_FS_TEXT0", "a!b", 1), 0);
	EXPECT_ERROR(run("write", "e.txt", "--from", "env:HUTCH_FS_TEXT0",
			 NULL),
		     2, "usage");
	cr_expect_str_eq(slurp(root, "e.txt", NULL), "bye\nx");
	unsetenv("HUTCH_FS_TEXT0");
	unsetenv("HUTCH_FS_TEXT1");
}

Test(fstools, write_never_goes_outside)
{
	ln(outside, "out");
	ln("../outside/target", "dangling_out");
	EXPECT_ERROR(run("write", "out/x", "--from", text("evil\n"), NULL), 1,
		     "escape");
	EXPECT_ERROR(run("write", "out/new/dir/x", "--from", text("e"), NULL),
		     1, "escape");
	EXPECT_ERROR(run("write", "dangling_out", "--from", text("e"), NULL), 1,
		     "escape");
	EXPECT_ERROR(run("write", "../outside/y", "--from", text("e"), NULL), 1,
		     "escape");
	EXPECT_ERROR(run("write", "/tmp/zzz-hutch", "--from", text("e"), NULL),
		     1, "escape");
	cr_expect_null(slurp(outside, "x", NULL));
	cr_expect_null(slurp(outside, "new", NULL));
	cr_expect_null(slurp(outside, "target", NULL));
	cr_expect_null(slurp(outside, "y", NULL));
	cr_expect(no_temp_files(outside));
	cr_expect(no_temp_files(root));
}

Test(fstools, write_through_inside_symlink_and_onto_dir)
{
	PUT("real.txt", "r\n");
	ln("real.txt", "link");
	cr_assert_eq(run("write", "link", "--from", text("via link\n"), NULL),
		     0);
	cr_expect_str_eq(str("path"), "real.txt");
	cr_expect_str_eq(slurp(root, "real.txt", NULL), "via link\n");
	mk("d");
	EXPECT_ERROR(run("write", "d", "--from", text("x"), NULL), 1, "is_dir");
	EXPECT_ERROR(run("write", ".", "--from", text("x"), NULL), 1, "is_dir");
}

/* Texts come from stdin:LEN or env:HUTCH_FS_* only: a path is refused
 * (and the file it names left alone), so is a LEN that is not a plain
 * decimal number, and the file to write is not touched. */
Test(fstools, text_sources_are_checked)
{
	static const char *const bad[] = {
		"stdin:",   "stdin:abc", "stdin:-1",	  "stdin:+1",
		"stdin:1x", "stdin: 1",	 "stdin:0x1",	  "STDIN:1",
		"stdin",    "-",	 "/.hutch/req/x", "env:",
	};
	char p[PATH_MAX * 2];

	PUT("t", "keep\n");
	snprintf(p, sizeof(p), "%s/staged", base);
	put_file("../staged", "evil\n", 5);
	EXPECT_ERROR(run("write", "t", "--from", p, NULL), 2, "usage");
	cr_expect_str_eq(slurp(base, "staged", NULL), "evil\n",
			 "the file named as a source was touched");
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		/* Bytes there to be read, had the source been taken. */
		text("x");
		EXPECT_ERROR(run("write", "t", "--from", bad[i], NULL), 2,
			     "usage");
		cr_expect(strstr(str("error.message"), "--from"), "%s: %s",
			  bad[i], str("error.message"));
		EXPECT_ERROR(run("edit", "t", "--old-from", text("kee"),
				 "--new-from", bad[i], NULL),
			     2, "usage");
	}
	EXPECT_ERROR(run("write", "t", NULL), 2, "usage");
	EXPECT_ERROR(run("edit", "t", "--old-from", text("keep"), NULL), 2,
		     "usage");
	cr_expect_str_eq(slurp(root, "t", NULL), "keep\n");
	cr_expect(no_temp_files(root));
}

/* LEN over the tool's cap (write 64 MiB, edit 16 MiB a text) is refused
 * before a byte of stdin is read (an empty stdin here: a read would be
 * the "io" of a short text), and nothing is written. */
Test(fstools, text_over_the_cap_is_refused)
{
	size_t n = 16u << 20;
	char *big;
	int rc;

	PUT("t", "keep\n");
	EXPECT_ERROR(run("write", "t", "--from", "stdin:67108865", NULL), 1,
		     "too_big");
	EXPECT_ERROR(run("write", "new.txt", "--from",
			 "stdin:99999999999999999999999999", NULL),
		     1, "too_big");
	EXPECT_ERROR(run("edit", "t", "--old-from", "stdin:16777217",
			 "--new-from", "stdin:1", NULL),
		     1, "too_big");
	EXPECT_ERROR(run("edit", "t", "--old-from", "stdin:4", "--new-from",
			 "stdin:16777217", NULL),
		     1, "too_big");
	cr_expect_str_eq(slurp(root, "t", NULL), "keep\n");
	cr_expect_null(slurp(root, "new.txt", NULL));
	cr_expect(no_temp_files(root));
	/* 16 MiB itself is within the cap: an edit of a 16 MiB file by a
	 * 16 MiB old text. */
	big = malloc(n);
	cr_assert_not_null(big);
	memset(big, 'a', n);
	big[n - 1] = '\n';
	put_file("big.txt", big, n);
	rc = run("edit", "big.txt", "--old-from", text_n(big, n, 0),
		 "--new-from", text("b\n"), NULL);
	cr_assert_eq(rc, 0, "%s", json_object_to_json_string(js));
	free(big);
	cr_expect_eq(num("replacements"), 1);
	cr_expect_str_eq(slurp(root, "big.txt", NULL), "b\n");
}

/* A stdin that ends before LEN bytes is a text cut short in transit: it
 * is refused, never written as if it were whole, and no temporary file
 * stays. */
Test(fstools, short_stdin_writes_nothing)
{
	size_t n = 200000;
	char *big = malloc(n);

	cr_assert_not_null(big);
	memset(big, 'z', n);
	PUT("t", "keep\n");
	EXPECT_ERROR(run("write", "t", "--from", text_n("new tex", 7, 3), NULL),
		     1, "io");
	cr_expect(strstr(str("error.message"), "7 of its 10 bytes"), "%s",
		  str("error.message"));
	/* past the agent's first reads: only the end is missing */
	EXPECT_ERROR(run("write", "t", "--from", text_n(big, n, 1), NULL), 1,
		     "io");
	free(big);
	EXPECT_ERROR(run("write", "n.txt", "--from", "stdin:5", NULL), 1, "io");
	cr_expect_str_eq(slurp(root, "t", NULL), "keep\n");
	cr_expect_null(slurp(root, "n.txt", NULL), "a cut text was written");
	/* edit: the new text short, then the old one */
	PUT("e.txt", "alpha\nbeta\n");
	EXPECT_ERROR(run("edit", "e.txt", "--old-from", text("beta"),
			 "--new-from", text_n("gam", 3, 2), NULL),
		     1, "io");
	EXPECT_ERROR(run("edit", "e.txt", "--old-from", text_n("bet", 3, 1),
			 "--new-from", "stdin:5", NULL),
		     1, "io");
	cr_expect_str_eq(slurp(root, "e.txt", NULL), "alpha\nbeta\n");
	cr_expect(no_temp_files(root));
}

/* A text larger than any of the agent's buffers streams from stdin:
 * exactly LEN bytes, NULs and all; what follows them is not the text. */
Test(fstools, write_one_mebibyte_from_stdin)
{
	size_t n = 1u << 20, len;
	char *data = malloc(n);
	const char *src, *got;
	int rc;

	cr_assert_not_null(data);
	for (size_t i = 0; i < n; i++)
		data[i] = (char)(i * 7 + i / 4096);
	src = text_n(data, n, 0);
	text("NOT THE TEXT");
	rc = run("write", "big.bin", "--from", src, NULL);
	cr_assert_eq(rc, 0, "%s", json_object_to_json_string(js));
	cr_expect_eq(num("bytes"), (long long)n);
	cr_expect(flag("created"));
	got = slurp(root, "big.bin", &len);
	cr_assert_eq(len, n);
	cr_expect_eq(memcmp(got, data, n), 0, "the file is not the text");
	cr_expect(no_temp_files(root));
	free(data);
}

/* Edit texts past the environment's 48 KiB, both on stdin: the old one
 * first, then the new one (longer, then shorter than the other). */
Test(fstools, edit_texts_over_48k_from_stdin)
{
	size_t on = 60000, nn = 100000, len;
	char *o = malloc(on + 1), *n = malloc(nn + 1), *want;
	const char *got;
	int rc;

	cr_assert(o && n);
	for (size_t i = 0; i < on; i++)
		o[i] = i % 61 == 60 ? '\n' : (char)('a' + i % 26);
	for (size_t i = 0; i < nn; i++)
		n[i] = i % 71 == 70 ? '\n' : (char)('A' + i % 26);
	o[on] = n[nn] = '\0';
	want = malloc(nn + 16);
	cr_assert_not_null(want);
	len = (size_t)sprintf(want, "head\n%stail\n", o);
	put_file("e.txt", want, len);
	rc = run("edit", "e.txt", "--old-from", text(o), "--new-from", text(n),
		 NULL);
	cr_assert_eq(rc, 0, "%s", json_object_to_json_string(js));
	cr_expect_eq(num("replacements"), 1);
	len = (size_t)sprintf(want, "head\n%stail\n", n);
	got = slurp(root, "e.txt", NULL);
	cr_expect(strcmp(got, want) == 0, "not the edited text");
	rc = run("edit", "e.txt", "--old-from", text(n), "--new-from", text(o),
		 NULL);
	cr_assert_eq(rc, 0, "%s", json_object_to_json_string(js));
	len = (size_t)sprintf(want, "head\n%stail\n", o);
	got = slurp(root, "e.txt", NULL);
	cr_expect(strcmp(got, want) == 0, "not the edited text back");
	free(o);
	free(n);
	free(want);
}

/* --- edit ----------------------------------------------------------------- */

Test(fstools, edit_exact_and_errors)
{
	const char *o, *n;
	char p[PATH_MAX * 2];
	struct stat sb;

	PUT("e.py", "def f():\n    return 1\n\ndef g():\n    return 1\n");
	snprintf(p, sizeof(p), "%s/e.py", root);
	cr_assert_eq(chmod(p, 0600), 0);
	/* ambiguous */
	o = text("return 1");
	n = text("return 2");
	EXPECT_ERROR(run("edit", "e.py", "--old-from", o, "--new-from", n,
			 NULL),
		     1, "ambiguous");
	cr_expect_eq(num("error.count"), 2);
	cr_expect_eq(count("error.lines"), 2);
	cr_expect_eq(num("error.lines.0"), 2);
	cr_expect_eq(num("error.lines.1"), 5);
	/* unique with context */
	cr_assert_eq(run("edit", "e.py", "--old-from",
			 text("def g():\n    return 1"), "--new-from",
			 text("def g():\n    return 3"), NULL),
		     0);
	cr_expect_str_eq(str("match"), "exact");
	cr_expect_eq(num("replacements"), 1);
	cr_expect_eq(num("lines.0"), 4);
	cr_expect_str_eq(slurp(root, "e.py", NULL),
			 "def f():\n    return 1\n\ndef g():\n    return 3\n");
	cr_assert_eq(stat(p, &sb), 0);
	cr_expect_eq(sb.st_mode & 07777, 0600);
	/* --all */
	cr_assert_eq(run("edit", "e.py", "--all", "--old-from",
			 text("    return"), "--new-from", text("\treturn"),
			 NULL),
		     0);
	cr_expect_eq(num("replacements"), 2);
	cr_expect_str_eq(slurp(root, "e.py", NULL),
			 "def f():\n\treturn 1\n\ndef g():\n\treturn 3\n");
	/* no match: closest region with cat -n numbers */
	EXPECT_ERROR(run("edit", "e.py", "--old-from",
			 text("def g():\n\treturn 4\n"), "--new-from",
			 text("x"), NULL),
		     1, "no_match");
	cr_expect_eq(num("error.closest.line"), 4);
	cr_expect_str_eq(str("error.closest.text"),
			 "     4\tdef g():\n     5\t\treturn 3");
	/* invalid */
	EXPECT_ERROR(run("edit", "e.py", "--old-from", text(""), "--new-from",
			 text("x"), NULL),
		     1, "invalid");
	EXPECT_ERROR(run("edit", "e.py", "--old-from", text("def"),
			 "--new-from", text("def"), NULL),
		     1, "invalid");
}

Test(fstools, edit_crlf_and_binary)
{
	size_t len;
	const char *got;

	PUT("w.txt", "a\r\nb  \r\nc\r\n");
	cr_assert_eq(run("edit", "w.txt", "--old-from", text("a\nb\n"),
			 "--new-from", text("A\nB\nB2\n"), NULL),
		     0);
	cr_expect_str_eq(str("match"), "whitespace");
	got = slurp(root, "w.txt", &len);
	cr_expect_str_eq(got, "A\r\nB\r\nB2\r\nc\r\n");
	put_file("b.bin", "x\0y", 3);
	EXPECT_ERROR(run("edit", "b.bin", "--old-from", text("x"), "--new-from",
			 text("z"), NULL),
		     1, "binary");
	ln("/etc/hostname", "h");
	EXPECT_ERROR(run("edit", "h", "--old-from", text("x"), "--new-from",
			 text("z"), NULL),
		     1, "escape");
}

/* --- grep ----------------------------------------------------------------- */

static void grep_tree(void)
{
	mk("src");
	mk("src/deep");
	mk(".git");
	PUT("src/a.c", "int main(void)\n{\n\treturn 0;\n}\n");
	PUT("src/b.h", "/* MAIN header */\n");
	PUT("src/deep/c.c", "x\nvoid main2(void);\n");
	PUT(".git/config", "main = yes\n");
	put_file("src/bin.o", "main\0\0\0", 7);
	PUT("z.txt", "no match here\r\nmain at end\r\n");
	ln("src/a.c", "alink");
}

Test(fstools, grep_walks_sorted_and_skips)
{
	grep_tree();
	cr_assert_eq(run("grep", "main", NULL), 0);
	cr_expect_not(flag("truncated"));
	cr_assert_eq(count("matches"), 3, "%s", json_object_to_json_string(js));
	cr_expect_str_eq(str("matches.0.path"), "src/a.c");
	cr_expect_eq(num("matches.0.line"), 1);
	cr_expect_str_eq(str("matches.0.text"), "int main(void)");
	cr_expect_str_eq(str("matches.1.path"), "src/deep/c.c");
	cr_expect_eq(num("matches.1.line"), 2);
	cr_expect_str_eq(str("matches.2.path"), "z.txt");
	cr_expect_str_eq(str("matches.2.text"), "main at end");
	/* a.c, b.h, deep/c.c, z.txt: not .git, not the binary, not links */
	cr_expect_eq(num("files_scanned"), 4);
	/* CRLF lines still match "$" */
	cr_assert_eq(run("grep", "end$", NULL), 0);
	cr_expect_eq(count("matches"), 1);
}

Test(fstools, grep_options)
{
	grep_tree();
	cr_assert_eq(run("grep", "-i", "MAIN", "src", NULL), 0);
	cr_expect_eq(count("matches"), 3);
	cr_expect_str_eq(str("matches.1.path"), "src/b.h");
	cr_assert_eq(run("grep", "main", "--include", "*.c", NULL), 0);
	cr_expect_eq(count("matches"), 2);
	cr_assert_eq(run("grep", "main", "--include", "src/deep/*", "--include",
			 "*.txt", NULL),
		     0);
	cr_expect_eq(count("matches"), 2);
	cr_expect_str_eq(str("matches.0.path"), "src/deep/c.c");
	cr_assert_eq(run("grep", "main", "--max", "1", NULL), 0);
	cr_expect_eq(count("matches"), 1);
	cr_expect(flag("truncated"));
	/* a file as PATH, through a symlink */
	cr_assert_eq(run("grep", "return", "alink", NULL), 0);
	cr_expect_eq(count("matches"), 1);
	cr_expect_str_eq(str("matches.0.path"), "src/a.c");
	cr_expect_eq(num("matches.0.line"), 3);
	/* no match is success */
	cr_assert_eq(run("grep", "nothing-like-this", NULL), 0);
	cr_expect_eq(count("matches"), 0);
	/* a pattern that starts with '-' after "--" */
	cr_assert_eq(run("grep", "--", "-x", NULL), 0);
	EXPECT_ERROR(run("grep", "(unclosed", NULL), 1, "invalid");
	EXPECT_ERROR(run("grep", "x", "--include", "[bad", NULL), 1, "invalid");
	EXPECT_ERROR(run("grep", "x", "../outside", NULL), 1, "escape");
}

Test(fstools, grep_cuts_long_lines)
{
	static char line[200000];

	memset(line, 'a', sizeof(line));
	memcpy(line + 150000, "NEEDLE", 6);
	line[sizeof(line) - 1] = '\n';
	put_file("long.txt", line, sizeof(line));
	cr_assert_eq(run("grep", "NEEDLE", NULL), 0);
	cr_assert_eq(count("matches"), 1);
	cr_expect_eq(num("matches.0.line"), 1);
	/* 500 bytes and "..." as one character */
	cr_expect_eq(strlen(str("matches.0.text")), 503);
}

/* The syntax agents write, as for ripgrep: PCRE2, not POSIX ERE (where
 * "\\d" is a literal 'd' and "(?i)" an error). */
Test(fstools, grep_speaks_pcre2)
{
	PUT("digits.txt", "abc d\nx 123\n");
	PUT("words.txt", "the cat sat\nconcatenate\ncat\n");
	PUT("lazy.txt", "abcb\nxyz\n");
	PUT("caps.txt", "int MAIN\n");

	cr_assert_eq(run("grep", "\\d", NULL), 0);
	cr_assert_eq(count("matches"), 1, "%s", json_object_to_json_string(js));
	cr_expect_str_eq(str("matches.0.path"), "digits.txt");
	cr_expect_eq(num("matches.0.line"), 2);
	cr_expect_str_eq(str("matches.0.text"), "x 123");

	cr_assert_eq(run("grep", "\\bcat\\b", "words.txt", NULL), 0);
	cr_assert_eq(count("matches"), 2);
	cr_expect_eq(num("matches.0.line"), 1);
	cr_expect_eq(num("matches.1.line"), 3);

	cr_assert_eq(run("grep", "^\\w+\\s\\w+$", NULL), 0);
	cr_assert_eq(count("matches"), 3);
	cr_expect_str_eq(str("matches.0.text"), "int MAIN");
	cr_expect_str_eq(str("matches.1.text"), "abc d");
	cr_expect_str_eq(str("matches.2.text"), "x 123");

	cr_assert_eq(run("grep", "(?i)main", NULL), 0);
	cr_assert_eq(count("matches"), 1);
	cr_expect_str_eq(str("matches.0.path"), "caps.txt");
	cr_expect_str_eq(str("matches.0.text"), "int MAIN");

	/* Lazy: a.*?b stops at the first b.  Whether a line matches does not
	 * show it; an atomic group, which never gives back what it took,
	 * does: the lazy one took "ab" and "c" follows, the greedy one took
	 * "abcb" and nothing follows. */
	cr_assert_eq(run("grep", "a.*?b", "lazy.txt", NULL), 0);
	cr_assert_eq(count("matches"), 1);
	cr_expect_str_eq(str("matches.0.text"), "abcb");
	cr_assert_eq(run("grep", "(?>a.*?b)c", "lazy.txt", NULL), 0);
	cr_expect_eq(count("matches"), 1);
	cr_assert_eq(run("grep", "(?>a.*b)c", "lazy.txt", NULL), 0);
	cr_expect_eq(count("matches"), 0);
}

/* -i is PCRE2_CASELESS, Unicode-aware; bytes that are not UTF-8 do not stop
 * a search and match nothing, not even '.'. */
Test(fstools, grep_unicode_and_invalid_utf8)
{
	PUT("u.txt", "CAF\xc3\x89 \xd9\xa3\n");
	PUT("bad.txt", "caf\xff 42\nfine\n");

	cr_assert_eq(run("grep", "-i", "caf\xc3\xa9", NULL), 0);
	cr_assert_eq(count("matches"), 1);
	cr_expect_str_eq(str("matches.0.path"), "u.txt");
	/* \d is Unicode's: ARABIC-INDIC DIGIT THREE, as ripgrep has it */
	cr_assert_eq(run("grep", "\\s\\d$", "u.txt", NULL), 0);
	cr_expect_eq(count("matches"), 1);

	cr_assert_eq(run("grep", "\\d\\d", "bad.txt", NULL), 0);
	cr_assert_eq(count("matches"), 1);
	cr_expect_eq(num("matches.0.line"), 1);
	cr_assert_eq(run("grep", "caf.", "bad.txt", NULL), 0);
	cr_expect_eq(count("matches"), 0);
	cr_assert_eq(run("grep", "^fine$", "bad.txt", NULL), 0);
	cr_expect_eq(count("matches"), 1);
}

Test(fstools, grep_refuses_bad_patterns)
{
	PUT("a.txt", "a\n");
	EXPECT_ERROR(run("grep", "a(", NULL), 1, "invalid");
	cr_expect_str_eq(
		str("error.message"),
		"bad regex 'a(': missing closing parenthesis at offset 2");
	EXPECT_ERROR(run("grep", "x{2,1}", NULL), 1, "invalid");
	cr_expect(strstr(str("error.message"), "at offset 5"), "%s",
		  str("error.message"));
	/* \C could step into the middle of a UTF-8 character */
	EXPECT_ERROR(run("grep", "\\C", NULL), 1, "invalid");
	/* the pattern itself must be UTF-8 */
	EXPECT_ERROR(run("grep", "\xff", NULL), 1, "invalid");
	cr_expect(strstr(str("error.message"), "UTF-8"), "%s",
		  str("error.message"));
}

/* (a+)+$ against a's and a final b backtracks 2^N ways: the match limit
 * ends it with an error that names where, not a search that never ends,
 * and the matches already found in other files are not passed off as the
 * whole answer. */
Test(fstools, grep_stops_catastrophic_backtracking)
{
	char line[42];

	memset(line, 'a', 39);
	line[39] = 'b';
	line[40] = '\n';
	PUT("a.txt", "aaaa\n");
	put_file("z.txt", line, 41);
	cr_assert_eq(run("grep", "(a+)+$", "a.txt", NULL), 0);
	cr_expect_eq(count("matches"), 1);
	EXPECT_ERROR(run("grep", "(a+)+$", NULL), 1, "invalid");
	cr_expect_null(get("matches"));
	cr_expect(strstr(str("error.message"), "pattern too complex"), "%s",
		  str("error.message"));
	cr_expect(strstr(str("error.message"), "z.txt line 1"), "%s",
		  str("error.message"));
	cr_expect_null(strchr(str("error.message"), '\n'));
	/* The same file with a pattern that cannot backtrack that way. */
	cr_assert_eq(run("grep", "^a+$", "z.txt", NULL), 0);
	cr_expect_eq(count("matches"), 0);
}

/* A line longer than a piece is matched in pieces: "^" only at the
 * line's start, "$" only at its end, \b and \d as in a short line. */
Test(fstools, grep_long_line_pieces)
{
	static char line[70002];

	memset(line, 'x', sizeof(line));
	memcpy(line, "start", 5);
	memcpy(line + 66000, " 42 ", 4);
	memcpy(line + sizeof(line) - 4, "end", 3);
	line[sizeof(line) - 1] = '\n';
	put_file("long.txt", line, sizeof(line));
	cr_assert_eq(run("grep", "^start", NULL), 0);
	cr_expect_eq(count("matches"), 1);
	cr_assert_eq(run("grep", "\\b\\d+\\b", NULL), 0);
	cr_expect_eq(count("matches"), 1);
	cr_assert_eq(run("grep", "end$", NULL), 0);
	cr_expect_eq(count("matches"), 1);
	/* 65536 is in the middle of the x's: neither end is there */
	cr_assert_eq(run("grep", "^x", NULL), 0);
	cr_expect_eq(count("matches"), 0);
	cr_assert_eq(run("grep", "x$", NULL), 0);
	cr_expect_eq(count("matches"), 0);
}

/* --- find ----------------------------------------------------------------- */

Test(fstools, find_globs_and_types)
{
	grep_tree();
	cr_assert_eq(run("find", "*.c", NULL), 0);
	cr_assert_eq(count("entries"), 2);
	cr_expect_str_eq(str("entries.0.path"), "src/a.c");
	cr_expect_str_eq(str("entries.0.type"), "file");
	cr_expect_str_eq(str("entries.1.path"), "src/deep/c.c");
	cr_assert_eq(run("find", "src/*.c", NULL), 0);
	cr_expect_eq(count("entries"), 1);
	cr_assert_eq(run("find", "*.c", "src/deep", NULL), 0);
	cr_expect_eq(count("entries"), 1);
	cr_expect_str_eq(str("entries.0.path"), "src/deep/c.c");
	cr_assert_eq(run("find", "*", "--type", "d", NULL), 0);
	cr_expect_eq(count("entries"), 2); /* src, src/deep; not .git */
	cr_expect_str_eq(str("entries.1.path"), "src/deep");
	cr_assert_eq(run("find", "alink", NULL), 0);
	cr_expect_str_eq(str("entries.0.type"), "symlink");
	cr_assert_eq(run("find", "alink", "--type", "f", NULL), 0);
	cr_expect_eq(count("entries"), 0);
	cr_assert_eq(run("find", "**", "--max", "3", NULL), 0);
	cr_expect_eq(count("entries"), 3);
	cr_expect(flag("truncated"));
	EXPECT_ERROR(run("find", "[x", NULL), 1, "invalid");
	EXPECT_ERROR(run("find", "*", "--type", "l", NULL), 1, "invalid");
}

/* --- ls --------------------------------------------------------------------- */

Test(fstools, ls_lists_one_directory)
{
	grep_tree();
	cr_assert_eq(run("ls", NULL), 0);
	cr_expect_str_eq(str("path"), ".");
	cr_assert_eq(count("entries"), 4);
	cr_expect_str_eq(str("entries.0.name"), ".git");
	cr_expect_str_eq(str("entries.1.name"), "alink");
	cr_expect_str_eq(str("entries.1.type"), "symlink");
	cr_expect_str_eq(str("entries.1.target"), "src/a.c");
	cr_expect_str_eq(str("entries.2.path"), "src");
	cr_expect_str_eq(str("entries.2.type"), "dir");
	cr_expect_str_eq(str("entries.3.name"), "z.txt");
	cr_expect_eq(num("entries.3.size"), 28);
	cr_assert_eq(run("ls", "src", "--max", "2", NULL), 0);
	cr_expect_eq(count("entries"), 2);
	cr_expect_str_eq(str("entries.0.path"), "src/a.c");
	cr_expect(flag("truncated"));
	cr_assert_eq(run("ls", "src/a.c", NULL), 0);
	cr_assert_eq(count("entries"), 1);
	cr_expect_str_eq(str("entries.0.name"), "a.c");
	cr_expect_eq(num("entries.0.size"), 30);
	EXPECT_ERROR(run("ls", "missing", NULL), 1, "not_found");
	EXPECT_ERROR(run("ls", "..", NULL), 1, "escape");
}

Test(fstools, usage_errors)
{
	EXPECT_ERROR(run(NULL), 2, "usage");
	EXPECT_ERROR(run("frob", NULL), 2, "usage");
	EXPECT_ERROR(run("ls", "--bogus", NULL), 2, "usage");
	EXPECT_ERROR(run("ls", "--limit", "3", NULL), 2, "usage");
	EXPECT_ERROR(run("read", NULL), 2, "usage");
	EXPECT_ERROR(run("ls", "a", "b", NULL), 2, "usage");
}

/* --- delete and move ------------------------------------------------------ */

static bool exists(const char *dir, const char *rel)
{
	char p[PATH_MAX * 2];
	struct stat st;

	snprintf(p, sizeof(p), "%s/%s", dir, rel);
	return lstat(p, &st) == 0;
}

Test(fstools, delete_files_links_and_directories)
{
	PUT("f.txt", "x\n");
	mk("empty");
	mk("full");
	mk("full/sub");
	PUT("full/sub/a", "a\n");
	PUT("full/b", "b\n");
	ln("../outside", "full/out"); /* a link out, inside the tree */
	put_file("../outside/keep", "keep\n", 5);

	cr_assert_eq(run("delete", "f.txt", NULL), 0);
	cr_expect_str_eq(str("path"), "f.txt");
	cr_expect_str_eq(str("type"), "file");
	cr_expect_eq(num("removed"), 1);
	cr_expect(!exists(root, "f.txt"));
	EXPECT_ERROR(run("delete", "f.txt", NULL), 1, "not_found");

	cr_assert_eq(run("delete", "empty/", NULL), 0);
	cr_expect_str_eq(str("type"), "dir");
	cr_expect(!exists(root, "empty"));

	/* not empty: refused and untouched without --recursive */
	EXPECT_ERROR(run("delete", "full", NULL), 1, "not_empty");
	cr_expect(exists(root, "full/sub/a"));
	/* with it, everything goes; the link is removed, not followed */
	cr_assert_eq(run("delete", "--recursive", "full", NULL), 0);
	cr_expect_eq(num("removed"), 5); /* full, sub, a, b, out */
	cr_expect(!exists(root, "full"));
	cr_expect(exists(outside, "keep"));
	EXPECT_ERROR(run("delete", "--recursive", "f", "g", NULL), 2, "usage");
	EXPECT_ERROR(run("read", "--recursive", "f", NULL), 2, "usage");
}

Test(fstools, delete_stays_inside)
{
	mk("d");
	ln("../outside", "up");
	ln("../outside/keep", "d/keeplink");
	put_file("../outside/keep", "keep\n", 5);

	/* the workspace itself, however it is spelt */
	EXPECT_ERROR(run("delete", ".", NULL), 1, "invalid");
	EXPECT_ERROR(run("delete", "--recursive", root, NULL), 1, "invalid");
	EXPECT_ERROR(run("delete", "--recursive", "d/..", NULL), 1, "invalid");
	EXPECT_ERROR(run("delete", "d/.", NULL), 1, "invalid");
	/* escapes: "..", absolute, through a symlinked directory */
	EXPECT_ERROR(run("delete", "../outside/keep", NULL), 1, "escape");
	EXPECT_ERROR(run("delete", "..", NULL), 1, "escape");
	EXPECT_ERROR(run("delete", "/etc/hostname", NULL), 1, "escape");
	EXPECT_ERROR(run("delete", "--recursive", "up/keep", NULL), 1,
		     "escape");
	cr_expect(exists(outside, "keep"));
	/* a symlink as the last component: the link goes, the target stays */
	cr_assert_eq(run("delete", "up", NULL), 0);
	cr_expect_str_eq(str("type"), "symlink");
	cr_assert_eq(run("delete", "--recursive", "d/keeplink", NULL), 0);
	cr_expect(!exists(root, "up") && !exists(root, "d/keeplink"));
	cr_expect(exists(outside, "keep"));
	cr_expect(exists(root, "d"));
}

Test(fstools, move_renames_without_following)
{
	size_t len;

	PUT("a.txt", "A\n");
	PUT("b.txt", "B\n");
	mk("dir");
	mk("full");
	PUT("full/x", "x\n");
	ln("../outside", "up");
	ln("../outside/keep", "link");
	put_file("../outside/keep", "keep\n", 5);

	/* into a directory that is not there yet */
	cr_assert_eq(run("move", "a.txt", "new/sub/a.txt", NULL), 0);
	cr_expect_str_eq(str("path"), "new/sub/a.txt");
	cr_expect_str_eq(str("from"), "a.txt");
	cr_expect_str_eq(str("type"), "file");
	cr_expect(!flag("replaced"));
	cr_expect_str_eq(slurp(root, "new/sub/a.txt", &len), "A\n");
	cr_expect(!exists(root, "a.txt"));
	/* an existing destination is kept unless --overwrite */
	EXPECT_ERROR(run("move", "b.txt", "new/sub/a.txt", NULL), 1, "exists");
	cr_expect_str_eq(slurp(root, "new/sub/a.txt", &len), "A\n");
	cr_assert_eq(run("move", "--overwrite", "b.txt", "new/sub/a.txt", NULL),
		     0);
	cr_expect(flag("replaced"));
	cr_expect_str_eq(slurp(root, "new/sub/a.txt", &len), "B\n");
	/* directories: renamed whole; never over a non-empty one */
	cr_assert_eq(run("move", "dir", "new/dir2", NULL), 0);
	cr_expect_str_eq(str("type"), "dir");
	EXPECT_ERROR(run("move", "--overwrite", "new/dir2", "full", NULL), 1,
		     "not_empty");
	EXPECT_ERROR(run("move", "new", "new/sub/inner", NULL), 1, "invalid");
	/* a symlink moves as a link; one at TO is replaced, not written
	 * through */
	cr_assert_eq(run("move", "link", "link2", NULL), 0);
	cr_expect_str_eq(str("type"), "symlink");
	cr_assert_eq(run("move", "--overwrite", "new/sub/a.txt", "link2", NULL),
		     0);
	cr_expect_str_eq(slurp(root, "link2", &len), "B\n");
	cr_expect_str_eq(slurp(outside, "keep", &len), "keep\n");
	/* escapes, either side, and the root */
	EXPECT_ERROR(run("move", "new", "../outside/new", NULL), 1, "escape");
	EXPECT_ERROR(run("move", "new", "up/new", NULL), 1, "escape");
	EXPECT_ERROR(run("move", "--overwrite", "link2", "up/keep", NULL), 1,
		     "escape");
	EXPECT_ERROR(run("move", "up/keep", "stolen", NULL), 1, "escape");
	EXPECT_ERROR(run("move", "/etc/hostname", "h", NULL), 1, "escape");
	EXPECT_ERROR(run("move", ".", "elsewhere", NULL), 1, "invalid");
	EXPECT_ERROR(run("move", "--overwrite", "new", ".", NULL), 1,
		     "invalid");
	cr_expect(!exists(outside, "new") && !exists(root, "stolen"));
	cr_expect_str_eq(slurp(outside, "keep", &len), "keep\n");
	EXPECT_ERROR(run("move", "new", NULL), 2, "usage");
	EXPECT_ERROR(run("move", "--overwrite", "new", "x", "y", NULL), 2,
		     "usage");
}
