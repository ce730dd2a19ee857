/*
 * beneath.h - open directories without following symlinks
 *
 * Host-side file operations on trees a sandbox can write (a host directory
 * inside a bind-mounted workspace) must never be redirected by a symlink
 * the sandbox puts in place between a check and a use.  These open a
 * directory once, with the kernel refusing every symlink on the way
 * (openat2() RESOLVE_NO_SYMLINKS); everything after that is an *at() call
 * relative to the descriptor, never a path resolved again.
 */
#ifndef HUTCH_BENEATH_H
#define HUTCH_BENEATH_H

/*
 * The directory `rel` below the directory `root`, without following any
 * symlink and without leaving `root` (RESOLVE_BENEATH).  `rel` holds no
 * empty, "." or ".." component and does not start with '/'.  `flags` adds
 * to O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC (O_RDONLY or O_PATH).  A new
 * descriptor, or -1 with errno (ELOOP or ENOTDIR: a symlink or a file is
 * on the way).
 */
int hutch__open_beneath(int root, const char *rel, int flags);

/*
 * The directory `path` (absolute, or relative to the working directory;
 * ".." allowed) without following any symlink on the whole path.  As
 * hutch__open_beneath otherwise.
 */
int hutch__open_nosymlinks(const char *path, int flags);

/*
 * The same for a path that may also name a file: a directory as above;
 * anything else opened with `flags` | O_NOFOLLOW | O_CLOEXEC in its
 * parent, held as above.  -1 with ELOOP when the last component is a
 * symlink (also with O_PATH).
 */
int hutch__open_any_nosymlinks(const char *path, int flags);

/* Tests only: walk one component at a time as on kernels without
 * openat2(), to test that path too. */
void hutch__beneath_force_walk(int on);

#endif
