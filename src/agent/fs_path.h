/*
 * fs_path.h - resolve a user path without leaving a root directory
 *
 * The file tools take paths from a model or a user, and the workspace may
 * hold symlinks planted by whatever ran in it.  Every path is therefore
 * walked one component at a time from a held fd of the root, like the
 * kernel's RESOLVE_BENEATH but in user space (openat2() may be missing or
 * filtered by seccomp):
 *
 *  - each component is opened with O_PATH|O_NOFOLLOW beneath the previous
 *    one's fd, so a rename elsewhere cannot redirect the walk;
 *  - ".." pops a stack of held ancestor fds and never goes above the root
 *    (the kernel's ".." is never used: it would escape through a directory
 *    moved out of the root);
 *  - a symlink is read from the fd it was opened as (readlinkat(fd, "")),
 *    and its target replaces it in front of the rest of the path; an
 *    absolute target must be textually the root or under it, and restarts
 *    from the root fd;
 *  - the caller opens the final object with O_NOFOLLOW, and
 *    fsp_open() checks it is the object resolved, retrying when a
 *    symlink or another file was swapped in meanwhile.
 *
 * Pure: system calls only, no globals beyond a test hook, so it is built
 * into the host unit tests as well as the agent.
 */
#ifndef HUTCH_AGENT_FS_PATH_H
#define HUTCH_AGENT_FS_PATH_H

#include <limits.h>
#include <stdbool.h>
#include <sys/stat.h>

/* Return codes besides 0 and -errno (-ENOENT, -ENOTDIR, -ELOOP for too
 * many symlinks, -ENAMETOOLONG, ...). */
#define FSP_ESCAPE (-100000)  /* resolves outside the root */
#define FSP_NOTFILE (-100001) /* fsp_open(): neither file nor dir */
#define FSP_ROOT (-100002)    /* fsp_resolve_entry(): names the root */

#define FSP_MAXSYMLINKS 40
#define FSP_MAXDEPTH 256 /* held ancestor fds */
#define FSP_RETRIES 4	 /* whole resolutions when a swap is seen */

/* Flags for fsp_resolve(). */
#define FSP_MKDIR 0x1 /* create missing parent directories (0755) */

struct fsp_root {
	int fd;		  /* O_PATH|O_DIRECTORY fd of the root */
	const char *path; /* textual root, e.g. "/workspace" */
};

struct fsp_res {
	/* O_PATH fd of the directory holding `name`; -1 when the path ended
	 * on a directory reached without a name (the root, "x/.."): then
	 * `fd` is that directory. */
	int parent;
	/* O_PATH|O_NOFOLLOW fd of the final object, -1 when it does not
	 * exist (only its parent does).  Never a symlink. */
	int fd;
	struct stat st;		 /* of `fd`, when fd >= 0 */
	char name[NAME_MAX + 1]; /* last component, "" with parent == -1 */
	char rel[PATH_MAX];	 /* relative to the root, "." for the root */
};

/* Opens the root directory for @path (following symlinks: the root is
 * hutch's configuration, not user input).  0 or -errno. */
int fsp_root_open(struct fsp_root *root, const char *path);
void fsp_root_close(struct fsp_root *root);

/*
 * Resolve @path (relative to the root, or absolute and then textually the
 * root or under it) beneath @root, following symlinks - the last one too -
 * without leaving the root.  On success fills @res, which the caller
 * releases with fsp_res_close(); on failure @res holds no fds.  A missing
 * final component is not an error (res->fd == -1); a missing parent is
 * -ENOENT unless FSP_MKDIR is given, which creates it - but only when the
 * rest of the path has no ".." component, so that a path which will turn
 * out to escape never creates anything.
 * Returns 0, FSP_ESCAPE or -errno.
 */
int fsp_resolve(const struct fsp_root *root, const char *path,
		unsigned int flags, struct fsp_res *res);

/* Closes res's fds (res may be NULL or half-filled with -1s). */
void fsp_res_close(struct fsp_res *res);

/*
 * Resolve @path and open it with @oflags (O_NOFOLLOW|O_CLOEXEC added) as
 * the same object that was resolved: the final open goes by name through
 * the held parent, so when a symlink or another file is swapped in between
 * the two steps it is detected (ELOOP, or a different dev/inode) and the
 * whole resolution is retried, FSP_RETRIES times, then FSP_ESCAPE.
 * Directories are reopened through their own fd.  Anything that is neither
 * a regular file nor a directory (fifo, device, socket) is never opened:
 * FSP_NOTFILE.  On success *out_fd is the open fd and res is filled as by fsp_resolve();
 * -ENOENT when the final object does not exist.
 */
int fsp_open(const struct fsp_root *root, const char *path, int oflags,
	     struct fsp_res *res, int *out_fd);

/* An entry named by a path, for the tools that remove or rename the
 * entry itself (delete, move) rather than what it leads to. */
struct fsp_entry {
	int dir;		 /* O_PATH fd of the directory holding `name` */
	char name[NAME_MAX + 1]; /* the last component, as given */
	bool exists;
	struct stat st;	    /* lstat of `name` in `dir`, when it exists */
	char rel[PATH_MAX]; /* relative to the root */
};

/*
 * Resolve every component of @path but the last as fsp_resolve() does
 * (symlinks followed, never out of the root; FSP_MKDIR creates missing
 * directories), and take the last one as a name in that directory, never
 * followed: a symlink there is the entry, not what it points to.  The
 * caller then acts on it with *at() calls relative to e->dir and
 * e->name, so nothing is looked up by a path string again.  Trailing
 * slashes are ignored.  FSP_ROOT when the path names the root itself
 * ("", ".", the root's absolute path, "x/.."), -EINVAL when it ends in
 * "." or ".." elsewhere, FSP_ESCAPE, or -errno (-ENOTDIR, -ENOENT for a
 * missing directory on the way).  A missing last component is not an
 * error: e->exists is false.  On success the caller releases @e with
 * fsp_entry_close(); on failure it holds no fd.
 */
int fsp_resolve_entry(const struct fsp_root *root, const char *path,
		      unsigned int flags, struct fsp_entry *e);

/* Closes e's fd (e may be NULL or hold -1). */
void fsp_entry_close(struct fsp_entry *e);

/* Test hook: called by fsp_open() between resolving and opening. */
extern void (*fsp_test_before_open)(const struct fsp_res *res);

#endif /* HUTCH_AGENT_FS_PATH_H */
