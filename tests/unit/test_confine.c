/*
 * Unit tests: path confinement (src/agent/fs_path.c) on real trees.
 *
 * Each test builds a root and, beside it, an "outside" directory holding
 * a secret, then checks that no path - through "..", absolute paths,
 * symlinks, symlinked parents or a swap during the call - reaches it.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../src/agent/fs_path.h"

static char base[256], root_path[PATH_MAX], outside[PATH_MAX];
static struct fsp_root root = { .fd = -1 };

static void mkfile(const char *rel, const char *content)
{
	char p[PATH_MAX * 2];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", root_path, rel);
	f = fopen(p, "w");
	cr_assert_not_null(f, "%s: %s", p, strerror(errno));
	fputs(content, f);
	fclose(f);
}

static void mkdir_in(const char *rel)
{
	char p[PATH_MAX * 2];

	snprintf(p, sizeof(p), "%s/%s", root_path, rel);
	cr_assert_eq(mkdir(p, 0755), 0, "%s: %s", p, strerror(errno));
}

static void link_in(const char *target, const char *rel)
{
	char p[PATH_MAX * 2];

	snprintf(p, sizeof(p), "%s/%s", root_path, rel);
	cr_assert_eq(symlink(target, p), 0, "%s: %s", p, strerror(errno));
}

static bool exists_in(const char *dir, const char *rel)
{
	char p[PATH_MAX * 2];
	struct stat st;

	snprintf(p, sizeof(p), "%s/%s", dir, rel);
	return lstat(p, &st) == 0;
}

static void setup(void)
{
	char p[PATH_MAX * 2];
	FILE *f;

	snprintf(base, sizeof(base), "/tmp/hutch-confine-XXXXXX");
	cr_assert_not_null(mkdtemp(base));
	snprintf(root_path, sizeof(root_path), "%s/root", base);
	snprintf(outside, sizeof(outside), "%s/outside", base);
	cr_assert_eq(mkdir(root_path, 0755), 0);
	cr_assert_eq(mkdir(outside, 0755), 0);
	snprintf(p, sizeof(p), "%s/secret", outside);
	f = fopen(p, "w");
	cr_assert_not_null(f);
	fputs("secret\n", f);
	fclose(f);
	cr_assert_eq(fsp_root_open(&root, root_path), 0);
	mkdir_in("sub");
	mkfile("sub/f", "inside\n");
	mkfile("top", "top\n");
}

static void teardown(void)
{
	char cmd[PATH_MAX + 32];

	fsp_test_before_open = NULL;
	fsp_root_close(&root);
	if (base[0]) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
		if (system(cmd) != 0)
			cr_log_warn("could not remove %s", base);
	}
}

TestSuite(confine, .init = setup, .fini = teardown);

/* Resolve and return the code; on success also check rel. */
static int resolve(const char *path, unsigned int flags, const char *want_rel)
{
	struct fsp_res res;
	int rc = fsp_resolve(&root, path, flags, &res);

	if (rc == 0) {
		if (want_rel)
			cr_expect_str_eq(res.rel, want_rel, "path '%s'", path);
		fsp_res_close(&res);
	} else {
		cr_expect_eq(res.fd, -1);
		cr_expect_eq(res.parent, -1);
	}
	return rc;
}

Test(confine, dotdot_never_climbs_above_the_root)
{
	cr_expect_eq(resolve("..", 0, NULL), FSP_ESCAPE);
	cr_expect_eq(resolve("../outside/secret", 0, NULL), FSP_ESCAPE);
	cr_expect_eq(resolve("sub/../../outside/secret", 0, NULL), FSP_ESCAPE);
	cr_expect_eq(resolve("sub/../sub/./f", 0, "sub/f"), 0);
	cr_expect_eq(resolve("sub/..", 0, "."), 0);
	cr_expect_eq(resolve(".", 0, "."), 0);
	cr_expect_eq(resolve("", 0, "."), 0);
}

Test(confine, absolute_paths_are_checked_textually)
{
	char p[PATH_MAX * 2];

	cr_expect_eq(resolve("/etc/passwd", 0, NULL), FSP_ESCAPE);
	cr_expect_eq(resolve(outside, 0, NULL), FSP_ESCAPE);
	snprintf(p, sizeof(p), "%s/sub/f", root_path);
	cr_expect_eq(resolve(p, 0, "sub/f"), 0);
	cr_expect_eq(resolve(root_path, 0, "."), 0);
	/* a sibling whose name starts like the root is not under it */
	snprintf(p, sizeof(p), "%sx/f", root_path);
	cr_expect_eq(resolve(p, 0, NULL), FSP_ESCAPE);
	snprintf(p, sizeof(p), "%s/../outside/secret", root_path);
	cr_expect_eq(resolve(p, 0, NULL), FSP_ESCAPE);
}

Test(confine, relative_symlinks_inside_are_followed)
{
	link_in("sub/f", "l");
	link_in("../top", "sub/up");
	link_in("f", "sub/same");
	cr_expect_eq(resolve("l", 0, "sub/f"), 0);
	cr_expect_eq(resolve("sub/up", 0, "top"), 0);
	cr_expect_eq(resolve("sub/same", 0, "sub/f"), 0);
	/* a chain */
	link_in("l", "l2");
	link_in("l2", "l3");
	cr_expect_eq(resolve("l3", 0, "sub/f"), 0);
	/* a symlinked directory inside */
	link_in("sub", "subl");
	cr_expect_eq(resolve("subl/f", 0, "sub/f"), 0);
	cr_expect_eq(resolve("subl/../top", 0, "top"), 0);
}

Test(confine, symlinks_out_are_refused)
{
	char t[PATH_MAX * 2];

	link_in("/etc", "etc");
	link_in("/etc/passwd", "passwd");
	link_in(outside, "out");
	link_in("../outside/secret", "rel_out");
	link_in("../../outside", "sub/rel_out_dir");
	cr_expect_eq(resolve("etc", 0, NULL), FSP_ESCAPE);
	cr_expect_eq(resolve("etc/passwd", 0, NULL), FSP_ESCAPE);
	cr_expect_eq(resolve("passwd", 0, NULL), FSP_ESCAPE);
	cr_expect_eq(resolve("out/secret", 0, NULL), FSP_ESCAPE);
	cr_expect_eq(resolve("rel_out", 0, NULL), FSP_ESCAPE);
	cr_expect_eq(resolve("sub/rel_out_dir/secret", 0, NULL), FSP_ESCAPE);
	/* creating parents below a symlinked parent that points out */
	cr_expect_eq(resolve("out/new/x", FSP_MKDIR, NULL), FSP_ESCAPE);
	cr_expect_not(exists_in(outside, "new"));
	/* an absolute target inside the root is fine */
	snprintf(t, sizeof(t), "%s/sub/f", root_path);
	link_in(t, "abs_in");
	cr_expect_eq(resolve("abs_in", 0, "sub/f"), 0);
}

Test(confine, loops_and_dangling_links)
{
	struct fsp_res res;

	link_in("loop2", "loop1");
	link_in("loop1", "loop2");
	cr_expect_eq(resolve("loop1", 0, NULL), -ELOOP);
	cr_expect_eq(resolve("loop1/x", 0, NULL), -ELOOP);
	link_in("self", "self");
	cr_expect_eq(resolve("self", 0, NULL), -ELOOP);

	/* dangling inside: resolves to the missing target's name */
	link_in("sub/nothere", "dangling");
	cr_assert_eq(fsp_resolve(&root, "dangling", 0, &res), 0);
	cr_expect_eq(res.fd, -1);
	cr_expect_geq(res.parent, 0);
	cr_expect_str_eq(res.name, "nothere");
	cr_expect_str_eq(res.rel, "sub/nothere");
	fsp_res_close(&res);
	/* dangling out: refused before anything could be created there */
	link_in("../outside/newfile", "dangling_out");
	cr_expect_eq(resolve("dangling_out", 0, NULL), FSP_ESCAPE);
	cr_expect_not(exists_in(outside, "newfile"));
}

Test(confine, missing_and_wrong_types)
{
	cr_expect_eq(resolve("nope/x", 0, NULL), -ENOENT);
	cr_expect_eq(resolve("top/x", 0, NULL), -ENOTDIR);
	cr_expect_eq(resolve("top/", 0, NULL), -ENOTDIR);
	cr_expect_eq(resolve("sub/", 0, "sub"), 0);
	/* a missing final component is fine: it may be created */
	cr_expect_eq(resolve("sub/new", 0, "sub/new"), 0);
}

Test(confine, mkdir_creates_parents_only_inside)
{
	struct fsp_res res;

	cr_assert_eq(fsp_resolve(&root, "a/b/c/file", FSP_MKDIR, &res), 0);
	cr_expect_str_eq(res.rel, "a/b/c/file");
	cr_expect_eq(res.fd, -1);
	fsp_res_close(&res);
	cr_expect(exists_in(root_path, "a/b/c"));
	cr_expect_not(exists_in(root_path, "a/b/c/file"));
	/* without FSP_MKDIR a missing parent is an error */
	cr_expect_eq(resolve("x/y", 0, NULL), -ENOENT);
	cr_expect_not(exists_in(root_path, "x"));
	/* a path that would climb out after the new directory creates
	 * nothing at all */
	cr_expect_neq(resolve("n1/../../outside/n2/f", FSP_MKDIR, NULL), 0);
	cr_expect_not(exists_in(root_path, "n1"));
	cr_expect_not(exists_in(outside, "n2"));
}

Test(confine, fsp_open_refuses_non_files)
{
	char p[PATH_MAX * 2];
	struct fsp_res res;
	int fd = -1;

	snprintf(p, sizeof(p), "%s/fifo", root_path);
	cr_assert_eq(mkfifo(p, 0644), 0);
	/* would block forever if it were opened for reading */
	cr_expect_eq(fsp_open(&root, "fifo", O_RDONLY, &res, &fd), FSP_NOTFILE);
	cr_expect_eq(fd, -1);
	cr_expect_eq(fsp_open(&root, "sub", O_RDONLY, &res, &fd), 0);
	cr_expect(S_ISDIR(res.st.st_mode));
	close(fd);
	fsp_res_close(&res);
	cr_expect_eq(fsp_open(&root, "missing", O_RDONLY, &res, &fd), -ENOENT);
}

/* --- a swap between resolving and opening ----------------------------- */

static int swaps;

/* Replace sub/f by a symlink to the secret, as an attacker would. */
static void swap_to_symlink(const struct fsp_res *res)
{
	char p[PATH_MAX * 2], t[PATH_MAX * 2];

	swaps++;
	snprintf(p, sizeof(p), "%s/sub/f", root_path);
	snprintf(t, sizeof(t), "%s/secret", outside);
	unlink(p);
	cr_assert_eq(symlink(t, p), 0);
}

Test(confine, symlink_swapped_in_before_open_is_refused)
{
	struct fsp_res res;
	char buf[32] = "";
	int fd = -1, rc;

	fsp_test_before_open = swap_to_symlink;
	rc = fsp_open(&root, "sub/f", O_RDONLY, &res, &fd);
	cr_expect_eq(rc, FSP_ESCAPE);
	if (rc == 0) {
		cr_expect_lt(read(fd, buf, sizeof(buf) - 1), 1, "read '%s'",
			     buf);
		close(fd);
		fsp_res_close(&res);
	}
	cr_expect_eq(swaps, 1, "the retry must see the symlink and stop");
}

/* Replace sub/f by another regular file, every time. */
static void swap_file(const struct fsp_res *res)
{
	char p[PATH_MAX * 2], q[PATH_MAX * 2];
	FILE *f;

	swaps++;
	snprintf(p, sizeof(p), "%s/sub/f", root_path);
	snprintf(q, sizeof(q), "%s/sub/f.new", root_path);
	f = fopen(q, "w");
	cr_assert_not_null(f);
	fputs("swapped\n", f);
	fclose(f);
	cr_assert_eq(rename(q, p), 0);
}

static void swap_file_once(const struct fsp_res *res)
{
	if (swaps == 0)
		swap_file(res);
}

Test(confine, other_file_swapped_in_is_detected_and_retried)
{
	struct fsp_res res;
	char buf[32] = "";
	int fd = -1;
	ssize_t n;

	fsp_test_before_open = swap_file_once;
	cr_assert_eq(fsp_open(&root, "sub/f", O_RDONLY, &res, &fd), 0);
	n = read(fd, buf, sizeof(buf) - 1);
	cr_expect_eq(n, 8);
	cr_expect_str_eq(buf, "swapped\n");
	cr_expect_eq(swaps, 1);
	close(fd);
	fsp_res_close(&res);

	/* a swap on every attempt: give up as an escape */
	swaps = 0;
	fsp_test_before_open = swap_file;
	cr_expect_eq(fsp_open(&root, "sub/f", O_RDONLY, &res, &fd), FSP_ESCAPE);
	cr_expect_eq(swaps, FSP_RETRIES);
}

/* fsp_resolve_entry(): the code, and on success the entry's rel, whether
 * it exists, and whether it is a symlink. */
static int entry(const char *path, unsigned int flags, const char *want_rel,
		 int want_exists, int want_link)
{
	struct fsp_entry e;
	int rc = fsp_resolve_entry(&root, path, flags, &e);

	if (rc == 0) {
		cr_expect_geq(e.dir, 0, "path '%s'", path);
		if (want_rel)
			cr_expect_str_eq(e.rel, want_rel, "path '%s'", path);
		cr_expect_eq(e.exists, want_exists, "path '%s'", path);
		if (e.exists)
			cr_expect_eq(S_ISLNK(e.st.st_mode) != 0, want_link,
				     "path '%s'", path);
		fsp_entry_close(&e);
	} else {
		cr_expect_eq(e.dir, -1, "path '%s' failed but holds an fd",
			     path);
	}
	return rc;
}

Test(confine, entries_are_names_never_followed)
{
	char abs[PATH_MAX * 2];

	link_in(outside, "out");
	link_in("../outside/secret", "secret_link");
	link_in("sub", "subl");
	/* the last component is the entry itself, even a link out */
	cr_expect_eq(entry("out", 0, "out", 1, 1), 0);
	cr_expect_eq(entry("secret_link", 0, "secret_link", 1, 1), 0);
	cr_expect_eq(entry("subl", 0, "subl", 1, 1), 0);
	cr_expect_eq(entry("subl/", 0, "subl", 1, 1), 0);
	/* directories on the way are followed, inside only */
	cr_expect_eq(entry("subl/f", 0, "sub/f", 1, 0), 0);
	cr_expect_eq(entry("sub/../top", 0, "top", 1, 0), 0);
	cr_expect_eq(entry("sub/nothere", 0, "sub/nothere", 0, 0), 0);
	cr_expect_eq(entry("out/secret", 0, NULL, 0, 0), FSP_ESCAPE);
	cr_expect_eq(entry("../outside/secret", 0, NULL, 0, 0), FSP_ESCAPE);
	cr_expect_eq(entry("..", 0, NULL, 0, 0), FSP_ESCAPE);
	cr_expect_eq(entry("/etc/passwd", 0, NULL, 0, 0), FSP_ESCAPE);
	cr_expect_eq(entry("top/x", 0, NULL, 0, 0), -ENOTDIR);
	cr_expect_eq(entry("nope/x", 0, NULL, 0, 0), -ENOENT);
	/* the root itself has no name to act on */
	cr_expect_eq(entry("", 0, NULL, 0, 0), FSP_ROOT);
	cr_expect_eq(entry(".", 0, NULL, 0, 0), FSP_ROOT);
	cr_expect_eq(entry("sub/..", 0, NULL, 0, 0), FSP_ROOT);
	cr_expect_eq(entry(root_path, 0, NULL, 0, 0), FSP_ROOT);
	snprintf(abs, sizeof(abs), "%s/", root_path);
	cr_expect_eq(entry(abs, 0, NULL, 0, 0), FSP_ROOT);
	cr_expect_eq(entry("sub/.", 0, NULL, 0, 0), -EINVAL);
	cr_expect_eq(entry("sub/sub/..", FSP_MKDIR, NULL, 0, 0), -ENOENT);
	snprintf(abs, sizeof(abs), "%s/sub/f", root_path);
	cr_expect_eq(entry(abs, 0, "sub/f", 1, 0), 0);
	/* FSP_MKDIR makes the entry's directory too, never outside */
	cr_expect_eq(entry("m1/m2/new", FSP_MKDIR, "m1/m2/new", 0, 0), 0);
	cr_expect(exists_in(root_path, "m1/m2"));
	cr_expect_not(exists_in(root_path, "m1/m2/new"));
	cr_expect_eq(entry("out/m3/new", FSP_MKDIR, NULL, 0, 0), FSP_ESCAPE);
	cr_expect_not(exists_in(outside, "m3"));
}

Test(confine, absolute_entries_are_relative_to_the_root)
{
	char abs[PATH_MAX * 2];

	snprintf(abs, sizeof(abs), "%s/sub/..", root_path);
	cr_expect_eq(entry(abs, 0, NULL, 0, 0), FSP_ROOT);
	snprintf(abs, sizeof(abs), "%s//sub//f//", root_path);
	cr_expect_eq(entry(abs, 0, "sub/f", 1, 0), 0);
	snprintf(abs, sizeof(abs), "%s/../outside/secret", root_path);
	cr_expect_eq(entry(abs, 0, NULL, 0, 0), FSP_ESCAPE);
}
