/*
 * beneath.c - open directories without following symlinks (beneath.h)
 *
 * openat2() does the whole walk in the kernel, atomically with respect to
 * renames: no component can be swapped for a symlink between its check and
 * its use.  Kernels before 5.6 (or a seccomp filter that refuses openat2)
 * get a walk of one openat(O_NOFOLLOW | O_DIRECTORY) per component, each
 * relative to the descriptor of the one before: as safe against symlinks,
 * since no component is ever followed and none is looked up twice.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/openat2.h>

#include "beneath.h"

static int no_openat2;

static int walk(int at, const char *path, int flags)
{
	char comp[256];
	const char *p = path;
	int fd, next, e;

	fd = fcntl(at, F_DUPFD_CLOEXEC, 0);
	while (fd >= 0 && *p) {
		size_t n = strcspn(p, "/");

		if (n >= sizeof(comp)) {
			close(fd);
			errno = ENAMETOOLONG;
			return -1;
		}
		memcpy(comp, p, n);
		comp[n] = '\0';
		p += n;
		while (*p == '/')
			p++;
		/* Only the last component gets the caller's flags; those
		 * before are only passed through. */
		next = openat(fd, n ? comp : ".",
			      (*p ? O_PATH : flags) | O_DIRECTORY | O_NOFOLLOW |
				      O_CLOEXEC);
		if (next < 0 && errno == ENOTDIR) {
			struct stat st;

			/* Say ELOOP for a symlink, as openat2() does. */
			if (fstatat(fd, comp, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
			    S_ISLNK(st.st_mode))
				errno = ELOOP;
			else
				errno = ENOTDIR;
		}
		e = errno;
		close(fd);
		errno = e;
		fd = next;
	}
	return fd;
}

static int open2(int at, const char *path, int flags, uint64_t resolve)
{
	struct open_how how = {
		/* No O_NOFOLLOW: RESOLVE_NO_SYMLINKS refuses a symlink as the
		 * last component too, with ELOOP rather than ENOTDIR. */
		.flags = (uint64_t)(flags | O_DIRECTORY | O_CLOEXEC),
		.resolve = resolve | RESOLVE_NO_SYMLINKS |
			   RESOLVE_NO_MAGICLINKS,
	};
	int fd, root, e;

	if (!__atomic_load_n(&no_openat2, __ATOMIC_RELAXED)) {
		fd = (int)syscall(SYS_openat2, at, path, &how, sizeof(how));
		if (fd >= 0 || (errno != ENOSYS && errno != EPERM))
			return fd;
		__atomic_store_n(&no_openat2, 1, __ATOMIC_RELAXED);
	}
	if (*path != '/' && at != AT_FDCWD)
		return walk(at, path, flags);
	/* Where the walk starts: the root or the working directory, which
	 * the caller's path names relative to; neither is looked up through
	 * anything a sandbox can change. */
	root = open(*path == '/' ? "/" : ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		return -1;
	while (*path == '/')
		path++;
	fd = *path ? walk(root, path, flags) :
		     openat(root, ".", flags | O_DIRECTORY | O_CLOEXEC);
	e = errno;
	close(root);
	errno = e;
	return fd;
}

int hutch__open_beneath(int root, const char *rel, int flags)
{
	/* `rel` has no ".." (the caller's contract), so the walk cannot
	 * leave root either; RESOLVE_BENEATH makes the kernel check it. */
	return open2(root, rel, flags, RESOLVE_BENEATH);
}

int hutch__open_nosymlinks(const char *path, int flags)
{
	return open2(AT_FDCWD, path, flags, 0);
}

int hutch__open_any_nosymlinks(const char *path, int flags)
{
	char *copy, *base;
	struct stat st;
	int dfd, fd, saved;

	fd = hutch__open_nosymlinks(path, flags);
	if (fd >= 0 || errno != ENOTDIR)
		return fd;
	/* Not a directory: its parent held as above, then the name in it,
	 * never followed. */
	if (!(copy = strdup(path)))
		return -1;
	base = strrchr(copy, '/');
	if (base == copy) {
		dfd = hutch__open_nosymlinks("/", O_PATH);
		base++;
	} else if (base) {
		*base++ = '\0';
		dfd = hutch__open_nosymlinks(copy, O_PATH);
	} else {
		dfd = hutch__open_nosymlinks(".", O_PATH);
		base = copy;
	}
	fd = dfd < 0 ? -1 : openat(dfd, base, flags | O_NOFOLLOW | O_CLOEXEC);
	/* O_PATH with O_NOFOLLOW opens a symlink itself: refused the same. */
	if (fd >= 0 && (flags & O_PATH) && fstat(fd, &st) == 0 &&
	    S_ISLNK(st.st_mode)) {
		close(fd);
		fd = -1;
		errno = ELOOP;
	}
	saved = errno;
	if (dfd >= 0)
		close(dfd);
	free(copy);
	errno = saved;
	return fd;
}

void hutch__beneath_force_walk(int on)
{
	__atomic_store_n(&no_openat2, on, __ATOMIC_RELAXED);
}
