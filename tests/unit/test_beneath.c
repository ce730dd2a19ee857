/*
 * test_beneath.c - opening directories without following symlinks
 * (src/lib/beneath.c), with openat2() and with the walk older kernels get
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include <criterion/criterion.h>

#include "beneath.h"

static char top[64];

static void mk(const char *rel)
{
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s/%s", top, rel);
	cr_assert_eq(mkdir(p, 0755), 0, "mkdir %s", p);
}

static void ln(const char *target, const char *rel)
{
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s/%s", top, rel);
	cr_assert_eq(symlink(target, p), 0, "symlink %s", p);
}

static void setup(void)
{
	snprintf(top, sizeof(top), "/tmp/hutch-beneath-XXXXXX");
	cr_assert_not_null(mkdtemp(top));
	mk("a");
	mk("a/b");
	ln("b", "a/lb");
	ln("/", "a/root");
	ln("/tmp", "ltmp");
}

static void teardown(void)
{
	char cmd[128];

	hutch__beneath_force_walk(0);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", top);
	cr_assert_eq(system(cmd), 0);
}

/* Same inode as the path opened by name. */
static void same_dir(int fd, const char *rel)
{
	char p[PATH_MAX];
	struct stat a, b;

	snprintf(p, sizeof(p), "%s/%s", top, rel);
	cr_assert(fd >= 0, "%s: %s", rel, strerror(errno));
	cr_assert_eq(fstat(fd, &a), 0);
	cr_assert_eq(stat(p, &b), 0);
	cr_assert(a.st_ino == b.st_ino && a.st_dev == b.st_dev,
		  "%s: another directory", rel);
	close(fd);
}

static void beneath_cases(void)
{
	int root = open(top, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	cr_assert(root >= 0);
	same_dir(hutch__open_beneath(root, "a", O_RDONLY), "a");
	same_dir(hutch__open_beneath(root, "a/b", O_PATH), "a/b");
	/* A symlink anywhere on the way, last or not, to inside or out. */
	cr_assert_eq(hutch__open_beneath(root, "a/lb", O_RDONLY), -1);
	cr_assert_eq(errno, ELOOP);
	cr_assert_eq(hutch__open_beneath(root, "a/root/tmp", O_RDONLY), -1);
	cr_assert_eq(errno, ELOOP);
	cr_assert_eq(hutch__open_beneath(root, "ltmp", O_RDONLY), -1);
	cr_assert_eq(errno, ELOOP);
	cr_assert_eq(hutch__open_beneath(root, "nothing/here", O_RDONLY), -1);
	cr_assert_eq(errno, ENOENT);
	close(root);
}

Test(beneath, below_a_held_directory, .init = setup, .fini = teardown)
{
	beneath_cases();
	/* The same on the walk older kernels get. */
	hutch__beneath_force_walk(1);
	beneath_cases();
}

static void nosymlinks_cases(void)
{
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s/a/b", top);
	same_dir(hutch__open_nosymlinks(p, O_RDONLY), "a/b");
	snprintf(p, sizeof(p), "%s/a/b/../b", top);
	same_dir(hutch__open_nosymlinks(p, O_RDONLY), "a/b");
	snprintf(p, sizeof(p), "%s/a/lb", top);
	cr_assert_eq(hutch__open_nosymlinks(p, O_RDONLY), -1);
	cr_assert_eq(errno, ELOOP);
	snprintf(p, sizeof(p), "%s/ltmp/x", top);
	cr_assert_eq(hutch__open_nosymlinks(p, O_RDONLY), -1);
	cr_assert_eq(errno, ELOOP);
}

Test(beneath, a_whole_path_without_symlinks, .init = setup, .fini = teardown)
{
	nosymlinks_cases();
	hutch__beneath_force_walk(1);
	nosymlinks_cases();
}
