/*
 * fs_path.c - resolve a user path without leaving a root directory
 *
 * See fs_path.h for the rules.  Why not simply realpath() and a prefix
 * check: between the check and the open, anything running in the sandbox
 * can replace a directory by a symlink to "/".  Here no name is ever
 * looked up twice: each step opens beneath an fd we hold, and the only
 * by-name step the caller makes (the final open) uses O_NOFOLLOW and is
 * checked against the inode we resolved.
 *
 * A held directory fd stays valid when the directory is renamed; it could
 * only leave the root if it were moved out of it, which needs a rename
 * across the workspace's mount point (EXDEV) or write access above the
 * root, and then ".." is still answered from our own stack, never by the
 * kernel.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs_path.h"

void (*fsp_test_before_open)(const struct fsp_res *res);

int fsp_root_open(struct fsp_root *root, const char *path)
{
	int fd;

	fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	root->fd = fd;
	root->path = path;
	return 0;
}

void fsp_root_close(struct fsp_root *root)
{
	if (root && root->fd >= 0) {
		close(root->fd);
		root->fd = -1;
	}
}

void fsp_res_close(struct fsp_res *res)
{
	if (!res)
		return;
	if (res->fd >= 0)
		close(res->fd);
	if (res->parent >= 0)
		close(res->parent);
	res->fd = -1;
	res->parent = -1;
}

/*
 * The part of absolute @p below the textual root, or NULL when @p is not
 * the root or under it.  "/workspace/x" and "/workspace" are under
 * "/workspace"; "/workspacex" is not.  Purely textual on purpose: the
 * components left are then walked like any relative path, so
 * "/workspace/../etc" still escapes at "..".
 */
static const char *under_root(const char *rootp, const char *p)
{
	size_t n = strlen(rootp);

	while (n > 1 && rootp[n - 1] == '/')
		n--;
	if (n == 1 && rootp[0] == '/')
		return p;
	if (strncmp(p, rootp, n))
		return NULL;
	if (p[n] == '\0' || p[n] == '/')
		return p + n;
	return NULL;
}

/* Next component at buf[*pos], skipping slashes; false at the end. */
static bool next_comp(const char *buf, size_t *pos, size_t *start, size_t *len)
{
	size_t i = *pos, j;

	while (buf[i] == '/')
		i++;
	if (!buf[i])
		return false;
	for (j = i; buf[j] && buf[j] != '/'; j++)
		;
	*start = i;
	*len = j - i;
	*pos = j;
	return true;
}

static bool is_dot(const char *s, size_t n)
{
	return n == 1 && s[0] == '.';
}

static bool is_dotdot(const char *s, size_t n)
{
	return n == 2 && s[0] == '.' && s[1] == '.';
}

static bool has_dotdot(const char *buf, size_t pos)
{
	size_t s, n;

	while (next_comp(buf, &pos, &s, &n))
		if (is_dotdot(buf + s, n))
			return true;
	return false;
}

/*
 * Put @head in front of buf[rest..] (the path still to walk), in place.
 * @head is a symlink target, at most PATH_MAX bytes.
 */
static int splice_link(char *buf, size_t rest, const char *head, size_t hlen)
{
	size_t tail = strlen(buf + rest);
	size_t sep = tail ? 1 : 0; /* "l" alone must not become "t/" */

	if (hlen + sep + tail + 1 > PATH_MAX)
		return -ENAMETOOLONG;
	memmove(buf + hlen + sep, buf + rest, tail + 1);
	memcpy(buf, head, hlen);
	if (sep)
		buf[hlen] = '/';
	return 0;
}

struct walk {
	int fd[FSP_MAXDEPTH + 1];      /* fd[0] is the root's, not ours */
	size_t rlen[FSP_MAXDEPTH + 1]; /* rel's length at each level */
	int depth;
	char rel[PATH_MAX];
};

static void walk_pop_to(struct walk *w, int depth)
{
	while (w->depth > depth) {
		close(w->fd[w->depth]);
		w->depth--;
	}
	w->rel[w->rlen[w->depth]] = '\0';
}

static int rel_append(char *rel, const char *name, size_t n)
{
	size_t len = strlen(rel);
	size_t sep = len ? 1 : 0;

	if (len + sep + n + 1 > PATH_MAX)
		return -ENAMETOOLONG;
	if (sep)
		rel[len] = '/';
	memcpy(rel + len + sep, name, n);
	rel[len + sep + n] = '\0';
	return 0;
}

/* Hand the directory on top of the stack to @res as the parent. */
static int take_top(struct walk *w, const struct fsp_root *root,
		    struct fsp_res *res)
{
	int fd;

	if (w->depth == 0) {
		fd = fcntl(root->fd, F_DUPFD_CLOEXEC, 3);
		if (fd < 0)
			return -errno;
	} else {
		fd = w->fd[w->depth];
		w->depth--;
	}
	res->parent = fd;
	return 0;
}

/* The path to walk, relative to the root, into @buf (PATH_MAX bytes). */
static int start_path(const struct fsp_root *root, const char *path, char *buf)
{
	const char *p;

	if (!path || !*path)
		path = ".";
	p = path;
	if (p[0] == '/') {
		p = under_root(root->path, path);
		if (!p)
			return FSP_ESCAPE;
	}
	if (strlen(p) + 1 > PATH_MAX)
		return -ENAMETOOLONG;
	strcpy(buf, p);
	return 0;
}

/* The walk ended on a directory we hold: root, "x/..", "x/". */
static int end_on_dir(const struct walk *w, const struct fsp_root *root,
		      struct fsp_res *res)
{
	int fd;

	fd = w->depth ? fcntl(w->fd[w->depth], F_DUPFD_CLOEXEC, 3) :
			fcntl(root->fd, F_DUPFD_CLOEXEC, 3);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &res->st) < 0) {
		int rc = -errno;

		close(fd);
		return rc;
	}
	res->fd = fd;
	return 0;
}

/*
 * @fd (taken) is a symlink met at buf[..after): put its target in front
 * of the rest of the path, to be walked from the start of @buf.  An
 * absolute target restarts from the root.
 */
static int follow_link(struct walk *w, const struct fsp_root *root, int fd,
		       char *buf, size_t after)
{
	char target[PATH_MAX];
	const char *p;
	ssize_t tl;
	int rc;

	/* Read the very link we opened, not the name again. */
	tl = readlinkat(fd, "", target, sizeof(target));
	rc = tl < 0 ? -errno : 0;
	close(fd);
	if (rc)
		return rc;
	if ((size_t)tl >= sizeof(target))
		return -ENAMETOOLONG;
	if (tl == 0)
		return -ENOENT;
	target[tl] = '\0';
	if (target[0] == '/') {
		p = under_root(root->path, target);
		if (!p)
			return FSP_ESCAPE;
		walk_pop_to(w, 0);
		return splice_link(buf, after, p, strlen(p));
	}
	return splice_link(buf, after, target, (size_t)tl);
}

/* Hold the directory @fd (taken on success), named comp[0..n), as the
 * next level of the walk. */
static int descend(struct walk *w, int fd, const char *comp, size_t n)
{
	int rc;

	if (w->depth == FSP_MAXDEPTH)
		return -ENAMETOOLONG;
	rc = rel_append(w->rel, comp, n);
	if (rc)
		return rc;
	w->depth++;
	w->fd[w->depth] = fd;
	w->rlen[w->depth] = strlen(w->rel);
	return 0;
}

/*
 * A missing parent with FSP_MKDIR: 1 when it was made (or appeared
 * meanwhile), 0 when it may not be made, or -errno.
 */
static int make_parent(struct walk *w, const char *comp, const char *buf,
		       size_t s, int *mkdirs)
{
	/*
	 * Create a missing parent only when nothing after it
	 * can climb back out: below a new directory every
	 * name is new, so ".." is the only way up.
	 */
	if (*mkdirs >= 2 * FSP_MAXDEPTH || has_dotdot(buf, s))
		return 0;
	if (mkdirat(w->fd[w->depth], comp, 0755) < 0 && errno != EEXIST)
		return -errno;
	(*mkdirs)++;
	return 1;
}

/* End a walk with @rc: the relative path on success, no fds in @res on
 * failure; @fd (or -1) and the walk's own fds are closed. */
static int finish(struct walk *w, struct fsp_res *res, int fd, int rc)
{
	if (rc == 0) {
		strcpy(res->rel, w->rel[0] ? w->rel : ".");
	} else {
		if (res->fd >= 0)
			close(res->fd);
		res->fd = -1;
		res->parent = -1;
		res->name[0] = '\0';
	}
	if (fd >= 0)
		close(fd);
	walk_pop_to(w, 0);
	free(w);
	return rc;
}

/*
 * One component at a time from the root's fd (fs_path.h says why); the
 * steps that have names are above, what stays here is the loop's control
 * flow: which component ends the walk, which restarts it.
 */
int fsp_resolve(const struct fsp_root *root, const char *path,
		unsigned int flags, struct fsp_res *res)
{
	struct walk *w;
	char buf[PATH_MAX], comp[NAME_MAX + 1];
	size_t pos = 0, s, n, after, peek, ps, pn;
	int links = 0, mkdirs = 0, fd = -1, rc, made;
	bool last, trailing;
	struct stat st;

	res->parent = -1;
	res->fd = -1;
	res->name[0] = '\0';
	res->rel[0] = '\0';
	rc = start_path(root, path, buf);
	if (rc)
		return rc;

	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->fd[0] = root->fd;

	for (;;) {
		if (!next_comp(buf, &pos, &s, &n)) {
			rc = end_on_dir(w, root, res);
			goto out;
		}
		after = pos;
		peek = pos;
		last = !next_comp(buf, &peek, &ps, &pn);
		trailing = last && buf[after] == '/';
		if (is_dot(buf + s, n))
			continue;
		if (is_dotdot(buf + s, n)) {
			if (w->depth == 0) {
				rc = FSP_ESCAPE;
				goto out;
			}
			walk_pop_to(w, w->depth - 1);
			continue;
		}
		if (n > NAME_MAX) {
			rc = -ENAMETOOLONG;
			goto out;
		}
		memcpy(comp, buf + s, n);
		comp[n] = '\0';
		fd = openat(w->fd[w->depth], comp,
			    O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0) {
			rc = -errno;
			if (rc == -ENOENT && last && !trailing) {
				memcpy(res->name, comp, n + 1);
				break;
			}
			if (rc == -ENOENT && (flags & FSP_MKDIR) && !last) {
				made = make_parent(w, comp, buf, s, &mkdirs);
				if (made < 0)
					rc = made;
				if (made > 0) {
					pos = s; /* walk it again, like any other */
					continue;
				}
			}
			goto out;
		}
		if (fstat(fd, &st) < 0) {
			rc = -errno;
			goto out;
		}
		if (S_ISLNK(st.st_mode)) {
			if (++links > FSP_MAXSYMLINKS) {
				rc = -ELOOP;
				goto out;
			}
			rc = follow_link(w, root, fd, buf, after);
			fd = -1;
			if (rc)
				goto out;
			pos = 0;
			continue;
		}
		if (last && !(trailing && !S_ISDIR(st.st_mode))) {
			memcpy(res->name, comp, n + 1);
			res->fd = fd;
			res->st = st;
			fd = -1;
			break;
		}
		if (!S_ISDIR(st.st_mode)) {
			rc = -ENOTDIR;
			goto out;
		}
		rc = descend(w, fd, comp, n);
		if (rc)
			goto out;
		fd = -1;
	}

	/* Named final component: found (res->fd) or missing (-1). */
	rc = rel_append(w->rel, res->name, strlen(res->name));
	if (!rc)
		rc = take_top(w, root, res);
out:
	return finish(w, res, fd, rc);
}

int fsp_open(const struct fsp_root *root, const char *path, int oflags,
	     struct fsp_res *res, int *out_fd)
{
	struct stat st;
	int attempt, rc, fd;

	for (attempt = 0; attempt < FSP_RETRIES; attempt++) {
		rc = fsp_resolve(root, path, 0, res);
		if (rc)
			return rc;
		if (res->fd < 0) {
			fsp_res_close(res);
			return -ENOENT;
		}
		if (!S_ISREG(res->st.st_mode) && !S_ISDIR(res->st.st_mode)) {
			fsp_res_close(res);
			return FSP_NOTFILE;
		}
		if (fsp_test_before_open)
			fsp_test_before_open(res);
		if (res->parent < 0 || S_ISDIR(res->st.st_mode)) {
			/* A directory reopens through its own fd: no name. */
			fd = openat(res->fd, ".", oflags | O_CLOEXEC);
		} else {
			fd = openat(res->parent, res->name,
				    oflags | O_NOFOLLOW | O_CLOEXEC);
		}
		if (fd < 0) {
			rc = -errno;
			/* A symlink swapped in (ELOOP) or the name moved
			 * away: resolve again from scratch. */
			if (rc == -ELOOP || rc == -ENOENT) {
				fsp_res_close(res);
				continue;
			}
			fsp_res_close(res);
			return rc;
		}
		if (fstat(fd, &st) < 0) {
			rc = -errno;
			close(fd);
			fsp_res_close(res);
			return rc;
		}
		if (st.st_dev != res->st.st_dev ||
		    st.st_ino != res->st.st_ino) {
			close(fd);
			fsp_res_close(res);
			continue;
		}
		*out_fd = fd;
		return 0;
	}
	return FSP_ESCAPE;
}

void fsp_entry_close(struct fsp_entry *e)
{
	if (e && e->dir >= 0) {
		close(e->dir);
		e->dir = -1;
	}
}

/* A path that ends without a name ("", ".", "x/.."): FSP_ROOT when it
 * leads to the root, -EINVAL when elsewhere, or why it leads nowhere. */
static int no_name(const struct fsp_root *root, const char *path)
{
	struct fsp_res res;
	bool at_root;
	int rc;

	rc = fsp_resolve(root, path, 0, &res);
	if (rc)
		return rc;
	at_root = res.parent < 0 && strcmp(res.rel, ".") == 0;
	fsp_res_close(&res);
	return at_root ? FSP_ROOT : -EINVAL;
}

int fsp_resolve_entry(const struct fsp_root *root, const char *path,
		      unsigned int flags, struct fsp_entry *e)
{
	char buf[PATH_MAX];
	struct fsp_res res;
	size_t len, s;
	bool top;
	int rc, n;

	e->dir = -1;
	e->exists = false;
	e->name[0] = '\0';
	e->rel[0] = '\0';
	rc = start_path(root, path, buf);
	if (rc)
		return rc;
	/* What is left of an absolute path ("/sub/f" of "/workspace/sub/f")
	 * goes to fsp_resolve() again, relative to the root. */
	for (s = 0; buf[s] == '/'; s++)
		;
	len = strlen(buf + s);
	memmove(buf, buf + s, len + 1);
	while (len > 0 && buf[len - 1] == '/')
		len--;
	buf[len] = '\0';
	for (s = len; s > 0 && buf[s - 1] != '/'; s--)
		;
	/* buf[s..len) is the last component, buf[0..s) its directory. */
	if (s == len || is_dot(buf + s, len - s) || is_dotdot(buf + s, len - s))
		return no_name(root, buf);
	if (len - s > NAME_MAX)
		return -ENAMETOOLONG;
	memcpy(e->name, buf + s, len - s + 1);
	/*
	 * The directory is resolved as "DIR/.": the walk ends on it as on a
	 * directory reached without a name, held in res.fd, and FSP_MKDIR
	 * makes DIR itself as well as its parents.  The name is never part
	 * of the walk, so a symlink there is never followed.
	 */
	buf[s] = '\0';
	if (s + 2 > sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf + s, ".", 2);
	rc = fsp_resolve(root, buf, flags, &res);
	if (rc)
		return rc;
	e->dir = res.fd;
	res.fd = -1;
	top = strcmp(res.rel, ".") == 0;
	n = snprintf(e->rel, sizeof(e->rel), "%s%s%s", top ? "" : res.rel,
		     top ? "" : "/", e->name);
	fsp_res_close(&res);
	if (n < 0 || (size_t)n >= sizeof(e->rel)) {
		fsp_entry_close(e);
		return -ENAMETOOLONG;
	}
	if (fstatat(e->dir, e->name, &e->st, AT_SYMLINK_NOFOLLOW) == 0) {
		e->exists = true;
	} else if (errno != ENOENT) {
		rc = -errno;
		fsp_entry_close(e);
		return rc;
	}
	return 0;
}
