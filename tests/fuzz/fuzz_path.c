/*
 * fuzz_path.c - path confinement (src/agent/fs_path.c) on a real tree
 *
 * The tree, made once under a temporary directory, has what sandboxed code
 * could leave in a workspace: directories, a file, symlinks that stay
 * inside (relative and absolute), symlinks that lead out (to "..", to an
 * absolute path outside, to the host's /), a symlink loop, and a file
 * beside the root that must never be reached.  The input is a path; when
 * it resolves, whatever it resolved to must be the root or under it.
 */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs_path.h"
#include "fuzz.h"

/* Short enough that every path made from them fits PATH_MAX. */
static char base[PATH_MAX / 4], rootpath[PATH_MAX / 2];
static struct fsp_root root = { -1, NULL };

static void mk(const char *kind, const char *rel, const char *target)
{
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s/%s", base, rel);
	if (kind[0] == 'd')
		FUZZ_CHECK(mkdir(p, 0755) == 0);
	else if (kind[0] == 'f')
		FUZZ_CHECK(close(open(p, O_WRONLY | O_CREAT | O_EXCL, 0644)) ==
			   0);
	else
		FUZZ_CHECK(symlink(target, p) == 0);
}

FUZZ_INIT(path)
{
	char t[PATH_MAX];

	snprintf(base, sizeof(base), "%s/hutch-fuzz-path-XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(base))
		return -1;
	snprintf(rootpath, sizeof(rootpath), "%s/ws", base);
	mk("d", "ws", NULL);
	mk("f", "outside", NULL);
	mk("d", "ws/a", NULL);
	mk("d", "ws/a/b", NULL);
	mk("f", "ws/a/f", NULL);
	mk("l", "ws/in", "a/b");
	snprintf(t, sizeof(t), "%s/a", rootpath);
	mk("l", "ws/abs_in", t);
	mk("l", "ws/up", "..");
	mk("l", "ws/a/upup", "../../outside");
	snprintf(t, sizeof(t), "%s/outside", base);
	mk("l", "ws/abs_out", t);
	mk("l", "ws/a/b/root", "/");
	mk("l", "ws/loop", "loop");
	mk("l", "ws/a/chain", "../in/../../a");
	if (fsp_root_open(&root, rootpath) < 0)
		return -1;
	root.path = rootpath;
	return 0;
}

/* The object behind an fd is the root or under it. */
static void inside(int fd)
{
	char link[64], real[PATH_MAX];
	ssize_t n;
	size_t rl = strlen(rootpath);

	if (fd < 0)
		return;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, real, sizeof(real) - 1);
	FUZZ_CHECK(n > 0);
	real[n] = '\0';
	FUZZ_CHECK(strncmp(real, rootpath, rl) == 0 &&
		   (real[rl] == '\0' || real[rl] == '/'));
}

FUZZ_TARGET(path)
{
	char path[1024];
	struct fsp_res res;
	int rc, fd = -1;

	if (root.fd < 0 || size >= sizeof(path))
		return 0;
	memcpy(path, data, size);
	path[size] = '\0';

	rc = fsp_resolve(&root, path, 0, &res);
	if (rc == 0) {
		FUZZ_CHECK(res.rel[0] != '/');
		FUZZ_CHECK(strcmp(res.rel, "..") != 0 &&
			   strncmp(res.rel, "../", 3) != 0);
		inside(res.parent);
		inside(res.fd);
		fsp_res_close(&res);
	} else {
		FUZZ_CHECK(rc == FSP_ESCAPE || rc < 0);
	}
	rc = fsp_open(&root, path, O_RDONLY, &res, &fd);
	if (rc == 0) {
		inside(fd);
		close(fd);
		fsp_res_close(&res);
	}
	/* delete's and move's entry: held inside, a plain name in it. */
	{
		struct fsp_entry e;

		rc = fsp_resolve_entry(&root, path, 0, &e);
		if (rc == 0) {
			inside(e.dir);
			FUZZ_CHECK(e.name[0] && !strchr(e.name, '/') &&
				   strcmp(e.name, ".") != 0 &&
				   strcmp(e.name, "..") != 0);
			FUZZ_CHECK(e.rel[0] != '/' &&
				   strncmp(e.rel, "../", 3) != 0);
			fsp_entry_close(&e);
		} else {
			FUZZ_CHECK(e.dir == -1);
		}
	}
	return 0;
}
