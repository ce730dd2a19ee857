/*
 * Unit tests: the agent's "untar" (sync-in's unpacking) on the host.
 *
 * Runs the built static agent ($HUTCH_BUILDDIR/src/agent/hutch-agent) as
 * "hutch-agent untar --root TMPDIR [DEST]" with an archive on stdin that
 * the test writes header by header (so it can write what hutch's own
 * writer never would: "..", absolute names, devices, cut archives), and
 * checks the answer, the exit code and the files, inside the root and
 * beside it.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <json-c/json.h>

#define TAR_CAP (4 << 20)

static char agent[PATH_MAX], base[256], root[PATH_MAX], outside[PATH_MAX];
static char *tar;
static size_t tlen;
static json_object *js;
static int status;

static void setup(void)
{
	const char *b = getenv("HUTCH_BUILDDIR");

	snprintf(agent, sizeof(agent), "%s/src/agent/hutch-agent",
		 b && *b ? b : ".");
	cr_assert_eq(access(agent, X_OK), 0,
		     "no agent at %s (set HUTCH_BUILDDIR)", agent);
	snprintf(base, sizeof(base), "/tmp/hutch-untar-XXXXXX");
	cr_assert_not_null(mkdtemp(base));
	snprintf(root, sizeof(root), "%s/root", base);
	snprintf(outside, sizeof(outside), "%s/outside", base);
	cr_assert_eq(mkdir(root, 0755), 0);
	cr_assert_eq(mkdir(outside, 0755), 0);
	tar = calloc(1, TAR_CAP);
	cr_assert_not_null(tar);
	tlen = 0;
	js = NULL;
}

static void teardown(void)
{
	char cmd[1024];

	json_object_put(js);
	free(tar);
	snprintf(cmd, sizeof(cmd), "chmod -R u+rwx '%s'; rm -rf '%s'", base,
		 base);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(untar, .init = setup, .fini = teardown, .timeout = 60);

/* ---- writing an archive ------------------------------------------------ */

/* `v` in octal, zero-padded to fill `n` - 1 digits and a NUL. */
static void octal(char *f, size_t n, unsigned long long v)
{
	for (size_t i = n - 1; i-- > 0; v >>= 3)
		f[i] = (char)('0' + (v & 7));
	f[n - 1] = '\0';
}

static void header(char type, const char *name, unsigned mode,
		   unsigned long long size, const char *link)
{
	char *h = tar + tlen;
	unsigned sum = 0;

	cr_assert_lt(tlen + 512, TAR_CAP);
	memset(h, 0, 512);
	strncpy(h, name, 100);
	octal(h + 100, 8, mode);
	octal(h + 108, 8, 0);
	octal(h + 116, 8, 0);
	octal(h + 124, 12, size);
	octal(h + 136, 12, 1500000000ULL);
	h[156] = type;
	if (link)
		strncpy(h + 157, link, 100);
	memcpy(h + 257, "ustar", 6);
	memcpy(h + 263, "00", 2);
	memset(h + 148, ' ', 8);
	for (int i = 0; i < 512; i++)
		sum += (unsigned char)h[i];
	snprintf(h + 148, 8, "%06o", sum);
	tlen += 512;
}

static void data(const char *d, size_t n)
{
	cr_assert_lt(tlen + n + 512, TAR_CAP);
	memcpy(tar + tlen, d, n);
	tlen += (n + 511) / 512 * 512;
}

static void add_file(const char *name, unsigned mode, const char *d)
{
	header('0', name, mode, strlen(d), NULL);
	data(d, strlen(d));
}

/* A pax header giving `name` (any length) to the next entry. */
static void pax_name(const char *name)
{
	char rec[8192];
	size_t n = strlen(name) + strlen(" path=\n"), len = n;

	/* The record's length counts its own digits. */
	for (int i = 0; i < 3; i++)
		len = n + (size_t)snprintf(NULL, 0, "%zu", len);
	snprintf(rec, sizeof(rec), "%zu path=%s\n", len, name);
	header('x', "PaxHeader", 0644, strlen(rec), NULL);
	data(rec, strlen(rec));
}

static void end(void)
{
	tlen += 1024; /* two zero blocks (calloc'ed) */
}

/* ---- running the agent ------------------------------------------------- */

/* Run "untar --root ROOT [dest]" on the first `n` bytes of the archive. */
static void run_n(const char *dest, size_t n)
{
	static char out[1 << 16];
	int in[2], op[2];
	size_t got = 0;
	ssize_t r;
	pid_t pid;

	json_object_put(js);
	js = NULL;
	cr_assert_eq(pipe(in), 0);
	cr_assert_eq(pipe(op), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		dup2(in[0], 0);
		dup2(op[1], 1);
		close(in[0]);
		close(in[1]);
		close(op[0]);
		close(op[1]);
		if (dest)
			execl(agent, agent, "untar", "--root", root, "--", dest,
			      (char *)NULL);
		else
			execl(agent, agent, "untar", "--root", root,
			      (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(op[1]);
	/* Archives here are small next to a pipe's buffer plus what the
	 * agent reads as it goes; a write error is the agent having quit
	 * (it fails at a bad entry): what it said is checked. */
	signal(SIGPIPE, SIG_IGN);
	for (size_t off = 0; off < n;) {
		r = write(in[1], tar + off, n - off);
		if (r <= 0)
			break;
		off += (size_t)r;
	}
	close(in[1]);
	while ((r = read(op[0], out + got, sizeof(out) - 1 - got)) > 0)
		got += (size_t)r;
	close(op[0]);
	out[got] = '\0';
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status), "the agent died: %d", status);
	status = WEXITSTATUS(status);
	js = json_tokener_parse(out);
	cr_assert_not_null(js, "not JSON: %s", out);
}

static void run(const char *dest)
{
	run_n(dest, tlen);
}

static long long num(const char *key)
{
	json_object *v;

	cr_assert(json_object_object_get_ex(js, key, &v), "no %s in %s", key,
		  json_object_to_json_string(js));
	return json_object_get_int64(v);
}

static const char *error_code(void)
{
	json_object *e, *c;

	if (!json_object_object_get_ex(js, "error", &e) ||
	    !json_object_object_get_ex(e, "code", &c))
		return NULL;
	return json_object_get_string(c);
}

static int exists_at(const char *dir, const char *rel, struct stat *st)
{
	char p[PATH_MAX * 2];
	struct stat tmp;

	snprintf(p, sizeof(p), "%s/%s", dir, rel);
	return lstat(p, st ? st : &tmp) == 0;
}

static char *content(const char *rel)
{
	static char buf[4096];
	char p[PATH_MAX * 2];
	ssize_t n;
	int fd;

	snprintf(p, sizeof(p), "%s/%s", root, rel);
	fd = open(p, O_RDONLY | O_NOFOLLOW);
	if (fd < 0)
		return NULL;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n < 0 ? 0 : n] = '\0';
	return buf;
}

/* The names in `dir` but `.`, `..` and `except` (may be NULL), counted;
 * the first one in `first`.  In C, not through ls and grep: valgrind
 * (CI) follows the test's children, and grep's own leaks would count. */
static int others(const char *dir, const char *except1, const char *except2,
		  char *first, size_t firstsz)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	cr_assert_not_null(d, "%s: %s", dir, strerror(errno));
	while ((de = readdir(d)) != NULL) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		    (except1 && !strcmp(de->d_name, except1)) ||
		    (except2 && !strcmp(de->d_name, except2)))
			continue;
		if (!n++)
			snprintf(first, firstsz, "%s", de->d_name);
	}
	closedir(d);
	return n;
}

/* Nothing was made beside the root. */
static void outside_untouched(void)
{
	char name[256];

	cr_assert_eq(others(outside, NULL, NULL, name, sizeof(name)), 0,
		     "'%s' was made in %s", name, outside);
	cr_assert_eq(others(base, "root", "outside", name, sizeof(name)), 0,
		     "'%s' was made beside the root", name);
}

/* No temp file of the agent's stayed anywhere under the root. */
static void no_temp_left(void)
{
	char cmd[PATH_MAX + 64];

	snprintf(cmd, sizeof(cmd),
		 "test -z \"$(find '%s' -name '.*.hutch-*')\"", root);
	cr_assert_eq(system(cmd), 0, "a temp file was left");
}

/* ---- tests --------------------------------------------------------------- */

Test(untar, tree_with_modes_times_links_and_long_names)
{
	char longname[400];
	struct stat st;

	/* Over ustar's 100 + 155 bytes: a pax header's. */
	memset(longname, 'n', 301);
	longname[150] = '/';
	longname[301] = '\0';
	header('5', "d/", 0750, 0, NULL);
	add_file("d/f", 0640, "hello\n");
	header('2', "d/l", 0777, 0, "/etc/passwd");
	header('5', "ro/", 0555, 0, NULL);
	add_file("ro/inside", 0444, "x");
	pax_name(longname);
	add_file("ignored-name", 0600, "long");
	end();
	run("sub/dest");
	cr_assert_eq(status, 0, "%s", json_object_to_json_string(js));
	cr_assert_eq(num("files"), 3);
	cr_assert_eq(num("dirs"), 2);
	cr_assert_eq(num("symlinks"), 1);
	cr_assert_str_eq(content("sub/dest/d/f"), "hello\n");
	cr_assert(exists_at(root, "sub/dest/d/f", &st));
	cr_assert_eq(st.st_mode & 07777, 0640);
	cr_assert_eq(st.st_mtime, 1500000000);
	cr_assert(exists_at(root, "sub/dest/d/l", &st) && S_ISLNK(st.st_mode));
	cr_assert(exists_at(root, "sub/dest/ro", &st));
	cr_assert_eq(st.st_mode & 07777, 0555,
		     "a read-only directory gets its mode after its contents");
	cr_assert_eq(st.st_mtime, 1500000000, "directory time kept");
	cr_assert_str_eq(content("sub/dest/ro/inside"), "x");
	{
		char rel[512];

		snprintf(rel, sizeof(rel), "sub/dest/%s", longname);
		cr_assert_str_eq(content(rel), "long");
	}
	no_temp_left();
	outside_untouched();
}

Test(untar, names_that_leave_are_refused_whole)
{
	static const char *const bad[] = { "../x", "/abs", "a/../../x", "a//b",
					   "./.." };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		tlen = 0;
		memset(tar, 0, TAR_CAP);
		add_file(bad[i], 0644, "evil");
		end();
		run(NULL);
		cr_assert_eq(status, 1, "%s: exit %d", bad[i], status);
		cr_assert_str_eq(error_code(), "invalid", "%s: %s", bad[i],
				 json_object_to_json_string(js));
	}
	outside_untouched();
	cr_assert(!exists_at(base, "x", NULL));
}

Test(untar, a_planted_directory_symlink_is_replaced_not_followed)
{
	char p[PATH_MAX * 2];

	snprintf(p, sizeof(p), "%s/sub", root);
	cr_assert_eq(symlink(outside, p), 0);
	header('5', "sub/", 0755, 0, NULL);
	add_file("sub/f", 0644, "mine");
	end();
	run(NULL);
	cr_assert_eq(status, 0, "%s", json_object_to_json_string(js));
	cr_assert_str_eq(content("sub/f"), "mine");
	outside_untouched();
}

Test(untar, a_symlink_on_the_way_without_its_entry_fails_the_entry)
{
	char p[PATH_MAX * 2];

	snprintf(p, sizeof(p), "%s/sub", root);
	cr_assert_eq(symlink(outside, p), 0);
	add_file("sub/f", 0644, "mine");
	end();
	run(NULL);
	cr_assert_eq(status, 1);
	cr_assert_str_eq(error_code(), "not_dir", "%s",
			 json_object_to_json_string(js));
	outside_untouched();
}

Test(untar, a_file_replaces_a_planted_symlink_without_writing_its_target)
{
	char p[PATH_MAX * 2], t[PATH_MAX * 2];

	snprintf(t, sizeof(t), "%s/target", outside);
	snprintf(p, sizeof(p), "%s/f", root);
	cr_assert_eq(symlink(t, p), 0);
	add_file("f", 0644, "mine");
	end();
	run(NULL);
	cr_assert_eq(status, 0, "%s", json_object_to_json_string(js));
	cr_assert_str_eq(content("f"), "mine");
	outside_untouched();
}

Test(untar, a_destination_through_a_symlink_out_of_the_root_is_refused)
{
	char p[PATH_MAX * 2];

	snprintf(p, sizeof(p), "%s/esc", root);
	cr_assert_eq(symlink(outside, p), 0);
	add_file("f", 0644, "mine");
	end();
	run("esc/deeper");
	cr_assert_eq(status, 1);
	cr_assert_str_eq(error_code(), "escape", "%s",
			 json_object_to_json_string(js));
	outside_untouched();
}

Test(untar, a_cut_archive_is_an_error_and_leaves_no_part)
{
	add_file("whole", 0644, "whole");
	header('0', "cut", 0644, 100000, NULL);
	data("only the start", 14);
	run(NULL); /* no data past the header's first block, no end */
	cr_assert_eq(status, 1);
	cr_assert_str_eq(error_code(), "invalid");
	cr_assert_str_eq(content("whole"), "whole");
	cr_assert(!exists_at(root, "cut", NULL));
	no_temp_left();

	/* Cut between two entries: no end marker. */
	tlen = 0;
	memset(tar, 0, TAR_CAP);
	add_file("second", 0644, "2");
	run(NULL);
	cr_assert_eq(status, 1, "an archive without its end passed");
	cr_assert_str_eq(error_code(), "invalid");
}

Test(untar, set_id_bits_are_dropped_and_devices_skipped)
{
	struct stat st;

	add_file("suid", 06755, "#!/bin/sh\n");
	header('3', "tty", 0666, 0, NULL);
	header('6', "fifo", 0666, 0, NULL);
	header('1', "hard", 0644, 0, "suid");
	end();
	run(NULL);
	cr_assert_eq(status, 0, "%s", json_object_to_json_string(js));
	cr_assert(exists_at(root, "suid", &st));
	cr_assert_eq(st.st_mode & 07777, 0755);
	cr_assert_eq(num("skipped"), 3);
	cr_assert(!exists_at(root, "tty", NULL));
	cr_assert(!exists_at(root, "fifo", NULL));
	cr_assert(!exists_at(root, "hard", NULL));
}

Test(untar, input_that_is_not_tar_is_refused)
{
	memcpy(tar, "this is not a tar archive at all", 32);
	tlen = 1024;
	run(NULL);
	cr_assert_eq(status, 1);
	cr_assert_str_eq(error_code(), "invalid");
	outside_untouched();
}

Test(untar, a_directory_in_the_way_of_a_file_is_kept)
{
	char p[PATH_MAX * 2];

	snprintf(p, sizeof(p), "%s/d", root);
	cr_assert_eq(mkdir(p, 0755), 0);
	add_file("d", 0644, "file");
	end();
	run(NULL);
	cr_assert_eq(status, 1);
	cr_assert_str_eq(error_code(), "is_dir");
	cr_assert(exists_at(root, "d", NULL));
	no_temp_left();
}
