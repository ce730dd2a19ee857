/*
 * sync_out.c - unpack the engine's tar of the workspace into a host directory
 *
 * The archive comes from the container, and so may the host directory:
 * whoever controls the container controls every name, type and link in the
 * archive, and when the host directory lies inside a bind-mounted
 * workspace (of this session or another), a process in the sandbox can
 * rename, swap and replace anything below it *while* the extraction runs.
 * Checking a path and then using it by name loses that race: the
 * directory checked is not the directory written.
 *
 * So nothing below the host directory is ever resolved by name from the
 * process's point of view.  The extraction holds a descriptor of the host
 * directory and reaches every parent directory with openat2() and
 * RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS (or, on kernels without openat2(),
 * one openat(O_NOFOLLOW | O_DIRECTORY) per component: as safe, since names
 * hold no "." or ".." and each step is relative to the directory just
 * opened).  Every change is then one *at() call on the parent's
 * descriptor with a single component:
 *   - a file is written into a new name made with O_CREAT | O_EXCL (never an
 *     existing file, never through a symlink) and renamed over the entry's
 *     name: rename replaces a file or symlink and never follows one;
 *   - a directory is made with mkdirat(); a file or symlink in its way is
 *     unlinked (unlinkat() removes the link itself, never its target);
 *   - a symlink is made with symlinkat() and never followed afterwards;
 *   - a hard link joins only a regular file already below the host
 *     directory: linkat() without AT_SYMLINK_FOLLOW on held parents, and
 *     the new link is checked to be that same inode before it is renamed
 *     into place.
 * A directory swapped for a symlink in between makes the next openat2()
 * fail (the entry is refused); a directory moved away while held only
 * sends writes to where the sandbox put it, which it could write anyway.
 * No descriptor is ever opened on a path outside the host directory, so no
 * host file outside it can be created, changed, linked, read or removed.
 *
 * Device nodes, fifos and sockets are never made; setuid and setgid bits
 * are dropped; no owner, xattr, ACL or file flag is restored.  Modes and
 * times of directories are set at the end, through a descriptor opened the
 * same way, so that a read-only directory can still be filled.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <archive.h>
#include <archive_entry.h>

#include "beneath.h"
#include "common.h"
#include "dl.h"
#include "error.h"
#include "sync_internal.h"

/* Pending directory modes and times take at most this much memory; past
 * it a directory gets its mode at once and keeps the time of extraction. */
#define FIXUP_MAX_BYTES (32u * 1024u * 1024u)

struct fixup {
	struct fixup *next;
	dev_t dev; /* the directory made, so that another one */
	ino_t ino; /* moved into its place is left alone */
	mode_t mode;
	struct timespec mtime;
	char name[];
};

struct unpack {
	struct hutch__sync_out *job;
	char *buf;
	int root;	      /* the host directory (borrowed from job) */
	char parent[4096];    /* the cached parent, relative to root */
	int parent_fd;	      /* its descriptor, or -1 */
	struct fixup *fixups; /* newest first */
	size_t fixup_bytes;
	unsigned int tmp_seq;
};

const char *hutch__sync_strip_top(const char *name, const char *top)
{
	size_t n = strlen(top);

	/* Docker names the top "workspace/" (or "./" for "/workspace/."),
	 * Podman "workspace"; both put it in front of every other entry. */
	while (name[0] == '.' && name[1] == '/')
		name += 2;
	if (strncmp(name, top, n) != 0)
		return NULL;
	name += n;
	if (*name == '\0')
		return "";
	if (*name != '/')
		return NULL;
	while (*name == '/')
		name++;
	return name;
}

static la_ssize_t on_read(struct archive *a, void *p, const void **out)
{
	struct unpack *u = p;
	ssize_t n =
		hutch__pipe_read(u->job->pipe, u->buf, HUTCH_SYNC_BLOCK, -1);

	*out = u->buf;
	if (n < 0) {
		archive_set_error(a, ECANCELED, "transfer stopped");
		return -1;
	}
	return n;
}

static void refuse(struct hutch__sync_out *job, const char *name,
		   const char *why)
{
	if (job->refused++ == 0)
		snprintf(job->first_refused, sizeof(job->first_refused),
			 "'%.200s': %.250s", name ? name : "(unnamed)", why);
}

/* A relative name with no "..", "." or empty component. */
static int plain_relative(const char *p)
{
	if (!*p || *p == '/')
		return 0;
	while (*p) {
		const char *end = strchr(p, '/');
		size_t n = end ? (size_t)(end - p) : strlen(p);

		if (n == 0 || (n == 1 && p[0] == '.') ||
		    (n == 2 && p[0] == '.' && p[1] == '.'))
			return 0;
		p += n;
		if (*p == '/')
			p++;
	}
	return 1;
}

/*
 * The directory `name` in `dfd` (one component), made with `mode` when
 * absent; a file or symlink in its way is removed first (unlinkat()
 * removes the name itself, whatever it points to).  Whatever is there is
 * checked as it is opened: a symlink a racer puts in place in between is
 * refused (ELOOP), never followed.  A new descriptor, or -1 with errno;
 * *made: whether this call made it.
 */
static int enter_dir(int dfd, const char *name, mode_t mode, int *made)
{
	struct stat st;

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    !S_ISDIR(st.st_mode) && unlinkat(dfd, name, 0) < 0)
		return -1;
	*made = mkdirat(dfd, name, mode) == 0;
	if (!*made && errno != EEXIST)
		return -1;
	return hutch__open_beneath(dfd, name, O_RDONLY);
}

/*
 * The descriptor of directory `rel` (below root; "" is root itself), made
 * with its missing parents when absent.  Borrowed: the last one is cached,
 * since the engines send a directory's entries together.  -1 with errno.
 */
static int parent_dir(struct unpack *u, const char *rel)
{
	char path[sizeof(u->parent)];
	char *slash;
	int fd;

	if (!*rel)
		return u->root;
	if (u->parent_fd >= 0 && strcmp(rel, u->parent) == 0)
		return u->parent_fd;
	if (strlen(rel) >= sizeof(path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	fd = hutch__open_beneath(u->root, rel, O_PATH);
	if (fd < 0 && (errno == ENOENT || errno == ELOOP || errno == ENOTDIR)) {
		/* Missing (the archive named no directory entry for it), or a
		 * file or symlink in the way (replaced by a directory, as a
		 * later directory entry would be): one component at a time,
		 * each in its held parent. */
		int at = u->root;

		strcpy(path, rel);
		for (char *c = path; c && at >= 0;
		     c = slash ? slash + 1 : NULL) {
			int next, made;

			slash = strchr(c, '/');
			if (slash)
				*slash = '\0';
			next = enter_dir(at, c, 0755, &made);
			if (at != u->root) {
				int e = errno;

				close(at);
				errno = e;
			}
			at = next;
		}
		fd = at;
	}
	if (fd < 0)
		return -1;
	if (u->parent_fd >= 0)
		close(u->parent_fd);
	u->parent_fd = fd;
	strcpy(u->parent, rel);
	return fd;
}

/* Split `name` at its last '/': *dir is the parent ("" at the top), the
 * return value the last component.  `name` is modified. */
static char *split(char *name, const char **dir)
{
	char *slash = strrchr(name, '/');

	if (!slash) {
		*dir = "";
		return name;
	}
	*slash = '\0';
	*dir = name;
	return slash + 1;
}

/* A fresh name in `dfd` for a file being made, never an existing one. */
static void tmp_name(struct unpack *u, char *out, size_t outsz)
{
	snprintf(out, outsz, ".hutch-sync-%ld-%u", (long)getpid(),
		 u->tmp_seq++);
}

/* Put the new entry `tmp` in place of `base` (both in `dfd`).  rename()
 * replaces a file or a symlink itself, never what it points to.  0 or -1
 * with errno; `tmp` is gone either way. */
static int put_in_place(int dfd, const char *tmp, const char *base)
{
	if (renameat(dfd, tmp, dfd, base) == 0)
		return 0;
	int e = errno;
	unlinkat(dfd, tmp, 0);
	errno = e;
	return -1;
}

static int write_all_at(int fd, const void *buf, size_t size, off_t off)
{
	const char *p = buf;

	while (size) {
		ssize_t n = pwrite(fd, p, size, off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		off += n;
		size -= (size_t)n;
	}
	return 0;
}

static struct timespec entry_mtime(struct archive_entry *e)
{
	struct timespec t = { .tv_nsec = UTIME_OMIT };

	if (archive_entry_mtime_is_set(e)) {
		t.tv_sec = archive_entry_mtime(e);
		t.tv_nsec = archive_entry_mtime_nsec(e);
	}
	return t;
}

/* What a mode keeps: permissions and the sticky bit, never setuid/setgid. */
static mode_t safe_mode(struct archive_entry *e)
{
	return archive_entry_perm(e) & (S_IRWXU | S_IRWXG | S_IRWXO | S_ISVTX);
}

/*
 * A regular file: its data goes into a new file that only this call has
 * opened (O_EXCL: not one the sandbox made or linked in), which then
 * replaces the entry's name.  0; 1 when refused (said); -1 on a failure
 * of the archive (error set).
 */
static int make_file(struct unpack *u, struct archive *rd,
		     struct archive_entry *e, int dfd, const char *base,
		     const char *raw)
{
	struct timespec times[2] = { { .tv_nsec = UTIME_OMIT },
				     entry_mtime(e) };
	char tmp[64];
	const void *buf;
	size_t size;
	la_int64_t off;
	int fd, r;

	tmp_name(u, tmp, sizeof(tmp));
	fd = openat(dfd, tmp,
		    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		refuse(u->job, raw, strerror(errno));
		return 1;
	}
	for (;;) {
		r = archive_read_data_block(rd, &buf, &size, &off);
		if (r == ARCHIVE_EOF)
			break;
		if (r < ARCHIVE_WARN) {
			close(fd);
			unlinkat(dfd, tmp, 0);
			return hutch__error_set(
				&u->job->err, HUTCH_EFAILED,
				"cannot read '%.300s' from the engine's archive: %s",
				raw, archive_error_string(rd));
		}
		if (write_all_at(fd, buf, size, (off_t)off) < 0) {
			int e2 = errno;

			close(fd);
			unlinkat(dfd, tmp, 0);
			return hutch__error_set(&u->job->err, HUTCH_EFAILED,
						"cannot write '%.300s': %s",
						raw, strerror(e2));
		}
		HUTCH__STAT_ADD(u->job->stats.bytes, size);
	}
	/* Modes on the descriptor, so neither the umask nor a swapped
	 * name can change what is set.  No ftruncate() to the header's
	 * size: the engines send no sparse files, and a size the data does
	 * not fill could only make a huge file of holes on the host. */
	if (fchmod(fd, safe_mode(e)) < 0 || futimens(fd, times) < 0) {
		refuse(u->job, raw, strerror(errno));
		close(fd);
		unlinkat(dfd, tmp, 0);
		return 1;
	}
	if (close(fd) < 0 || put_in_place(dfd, tmp, base) < 0) {
		refuse(u->job, raw,
		       errno == EISDIR || errno == ENOTEMPTY ||
				       errno == EEXIST ?
			       "a directory is in its place" :
			       strerror(errno));
		unlinkat(dfd, tmp, 0);
		return 1;
	}
	HUTCH__STAT_ADD(u->job->stats.files, 1);
	return 0;
}

static int make_symlink(struct unpack *u, struct archive_entry *e, int dfd,
			const char *base, const char *raw)
{
	struct timespec times[2] = { { .tv_nsec = UTIME_OMIT },
				     entry_mtime(e) };
	const char *target = archive_entry_symlink(e);
	char tmp[64];

	if (!target || !*target) {
		refuse(u->job, raw, "a symlink without a target");
		return 1;
	}
	/* The link is stored, never followed by hutch: every later open
	 * below the host directory refuses symlinks. */
	tmp_name(u, tmp, sizeof(tmp));
	if (symlinkat(target, dfd, tmp) < 0) {
		refuse(u->job, raw, strerror(errno));
		return 1;
	}
	utimensat(dfd, tmp, times, AT_SYMLINK_NOFOLLOW);
	if (put_in_place(dfd, tmp, base) < 0) {
		refuse(u->job, raw,
		       errno == EISDIR || errno == ENOTEMPTY ||
				       errno == EEXIST ?
			       "a directory is in its place" :
			       strerror(errno));
		return 1;
	}
	HUTCH__STAT_ADD(u->job->stats.symlinks, 1);
	return 0;
}

static void add_fixup(struct unpack *u, const char *name, int dfd, mode_t mode,
		      struct timespec mtime)
{
	size_t len = strlen(name) + 1;
	struct fixup *f = NULL;
	struct stat st;

	if (fstat(dfd, &st) == 0 &&
	    u->fixup_bytes + sizeof(*f) + len <= FIXUP_MAX_BYTES)
		f = malloc(sizeof(*f) + len);
	if (!f) {
		/* Over the bound: the mode now, through the held descriptor
		 * of this very directory. */
		fchmod(dfd, mode);
		return;
	}
	f->dev = st.st_dev;
	f->ino = st.st_ino;
	f->mode = mode;
	f->mtime = mtime;
	memcpy(f->name, name, len);
	f->next = u->fixups;
	u->fixups = f;
	u->fixup_bytes += sizeof(*f) + len;
}

static int make_dir(struct unpack *u, struct archive_entry *e, int dfd,
		    const char *base, const char *name, const char *raw)
{
	int made = 0, fd = enter_dir(dfd, base, 0700, &made);
	mode_t mode = safe_mode(e);
	struct stat st;

	if (fd < 0) {
		refuse(u->job, raw,
		       errno == ELOOP || errno == ENOTDIR ?
			       "not a directory (a symlink or file took its place)" :
			       strerror(errno));
		return 1;
	}
	/* A directory that was there keeps its mode: the session does not
	 * choose the modes of the host's own directories (`hutch cp
	 * S:.ssh ~` must not make ~/.ssh writable by others). */
	if (!made && fstat(fd, &st) == 0)
		mode = st.st_mode & (S_IRWXU | S_IRWXG | S_IRWXO | S_ISVTX);
	/* Owner access until the end, so entries can go in. */
	fchmod(fd, mode | S_IRWXU);
	add_fixup(u, name, fd, mode, entry_mtime(e));
	close(fd);
	HUTCH__STAT_ADD(u->job->stats.dirs, 1);
	return 0;
}

/*
 * A hard link to `target`, a regular file already below the host
 * directory.  The source's parent is held like any other; linkat()
 * without AT_SYMLINK_FOLLOW never follows a symlink put in its place; and
 * the link made must be the inode checked, or it is removed.
 */
static int make_hardlink(struct unpack *u, char *target, int dfd,
			 const char *base, const char *raw)
{
	const char *sdir;
	char *sbase = split(target, &sdir);
	char tmp[64];
	struct stat want, got;
	int sfd, own = 0;

	if (strcmp(sdir, u->parent) == 0 && u->parent_fd >= 0)
		sfd = u->parent_fd;
	else if (!*sdir)
		sfd = u->root;
	else {
		sfd = hutch__open_beneath(u->root, sdir, O_PATH);
		own = 1;
	}
	if (sfd < 0 || fstatat(sfd, sbase, &want, AT_SYMLINK_NOFOLLOW) < 0 ||
	    !S_ISREG(want.st_mode)) {
		if (own && sfd >= 0)
			close(sfd);
		refuse(u->job, raw,
		       "hard link to something that is not a regular file "
		       "inside the host directory");
		return 1;
	}
	tmp_name(u, tmp, sizeof(tmp));
	if (linkat(sfd, sbase, dfd, tmp, 0) < 0) {
		refuse(u->job, raw, strerror(errno));
		if (own)
			close(sfd);
		return 1;
	}
	if (own)
		close(sfd);
	if (fstatat(dfd, tmp, &got, AT_SYMLINK_NOFOLLOW) < 0 ||
	    !S_ISREG(got.st_mode) || got.st_ino != want.st_ino ||
	    got.st_dev != want.st_dev) {
		unlinkat(dfd, tmp, 0);
		refuse(u->job, raw,
		       "hard link target changed while it was linked");
		return 1;
	}
	if (put_in_place(dfd, tmp, base) < 0) {
		refuse(u->job, raw, strerror(errno));
		return 1;
	}
	HUTCH__STAT_ADD(u->job->stats.hardlinks, 1);
	return 0;
}

/* Directory modes and times, last: nothing more goes into them.  The
 * name is opened again, never following a symlink; a directory that is
 * not the one made (the sandbox moved another into its place) or no
 * longer a directory below root is left alone. */
static void apply_fixups(struct unpack *u)
{
	while (u->fixups) {
		struct fixup *f = u->fixups;
		struct timespec times[2] = { { .tv_nsec = UTIME_OMIT },
					     f->mtime };
		int fd = hutch__open_beneath(u->root, f->name, O_RDONLY);
		struct stat st;

		if (fd >= 0 && fstat(fd, &st) == 0 && st.st_dev == f->dev &&
		    st.st_ino == f->ino) {
			fchmod(fd, f->mode);
			futimens(fd, times);
		}
		if (fd >= 0)
			close(fd);
		u->fixups = f->next;
		free(f);
	}
	u->fixup_bytes = 0;
}

static int skip_data(struct hutch__sync_out *job, struct archive *rd)
{
	if (archive_read_data_skip(rd) < ARCHIVE_WARN)
		return hutch__error_set(&job->err, HUTCH_EFAILED,
					"the engine's archive is damaged: %s",
					archive_error_string(rd));
	return 0;
}

/* One pass over the engine's archive.  It stays one function on purpose:
 * every check an entry must pass before anything is made on the host
 * (under the requested path, one top entry, plain relative names, hard
 * links inside) reads top to bottom in one place, each next to its
 * refusal. */
static int unpack(struct unpack *u, struct archive *rd)
{
	struct hutch__sync_out *job = u->job;
	struct archive_entry *e;
	char name[4096], link[4096];
	int r, single = 0, first = 1;

	for (;;) {
		const char *raw, *mapped, *hl, *dir;
		char *base;
		mode_t type;
		int dfd, is_top = 0;

		r = archive_read_next_header(rd, &e);
		if (r == ARCHIVE_EOF)
			return 0;
		if (r < ARCHIVE_WARN)
			return hutch__error_set(
				&job->err, HUTCH_EFAILED,
				"the engine's archive is damaged: %s",
				archive_error_string(rd));
		raw = archive_entry_pathname(e);
		type = archive_entry_filetype(e);
		hl = archive_entry_hardlink(e);
		mapped = raw ? hutch__sync_strip_top(raw, job->top) : NULL;
		if (!mapped || strlen(mapped) >= sizeof(name)) {
			refuse(job, raw, "not under the requested path");
			goto next;
		}
		if (!*mapped) {
			if (type == AE_IFDIR && !hl && !job->as)
				goto next; /* the top directory is the host directory */
			if (!first) {
				refuse(job, raw, "a second top entry");
				goto next;
			}
			/* A single file lands as HOSTDIR/BASENAME, or as
			 * HOSTDIR/AS; given AS, the top directory is made as
			 * HOSTDIR/AS and the rest goes below it. */
			single = !(type == AE_IFDIR && !hl);
			mapped = job->as ? job->as : job->top;
			is_top = 1;
		} else if (single) {
			refuse(job, raw, "an entry under a file");
			goto next;
		}
		/* Trailing slashes of directory names aside, every component
		 * is a real name: no "", ".", "..", no leading "/". */
		if (job->as && !is_top)
			r = snprintf(name, sizeof(name), "%s/%s", job->as,
				     mapped);
		else
			r = snprintf(name, sizeof(name), "%s", mapped);
		first = 0;
		if (r < 0 || (size_t)r >= sizeof(name)) {
			refuse(job, raw, "a name too long");
			goto next;
		}
		for (size_t n = strlen(name); n > 1 && name[n - 1] == '/'; n--)
			name[n - 1] = '\0';
		if (!plain_relative(name)) {
			refuse(job, raw, "not a plain relative name");
			goto next;
		}
		if (hl) {
			const char *t = hutch__sync_strip_top(hl, job->top);
			int n = -1;

			if (t && !*t && single)
				n = snprintf(link, sizeof(link), "%s",
					     job->as ? job->as : job->top);
			else if (t && *t && job->as)
				n = snprintf(link, sizeof(link), "%s/%s",
					     job->as, t);
			else if (t && *t)
				n = snprintf(link, sizeof(link), "%s", t);
			if (n < 0 || (size_t)n >= sizeof(link) ||
			    !plain_relative(link)) {
				refuse(job, raw,
				       "hard link to outside the requested path");
				goto next;
			}
		} else if (type != AE_IFREG && type != AE_IFDIR &&
			   type != AE_IFLNK) {
			/* Devices, fifos, sockets: never made on the host. */
			HUTCH__STAT_ADD(job->stats.skipped, 1);
			goto next;
		}

		{
			char whole[sizeof(name)];

			memcpy(whole, name, sizeof(name));
			base = split(name, &dir);
			dfd = parent_dir(u, dir);
			if (dfd < 0) {
				refuse(job, raw,
				       errno == ELOOP || errno == ENOTDIR ?
					       "a parent is not a directory (a symlink or file)" :
					       strerror(errno));
				goto next;
			}
			if (hl)
				r = make_hardlink(u, link, dfd, base, raw);
			else if (type == AE_IFREG)
				r = make_file(u, rd, e, dfd, base, raw);
			else if (type == AE_IFLNK)
				r = make_symlink(u, e, dfd, base, raw);
			else
				r = make_dir(u, e, dfd, base, whole, raw);
		}
		if (r < 0)
			return -1;
		if (!hl && type == AE_IFREG)
			continue; /* make_file read the data */
next:
		if (skip_data(job, rd) < 0)
			return -1;
	}
}

void *hutch__sync_out_worker(void *p)
{
	struct hutch__sync_out *job = p;
	struct unpack u = { .job = job, .root = job->dirfd, .parent_fd = -1 };
	struct archive *rd = NULL;
	int rc;

	u.buf = malloc(HUTCH_SYNC_BLOCK);
	rd = archive_read_new();
	if (!u.buf || !rd) {
		rc = hutch__error_oom(&job->err);
		goto out;
	}
	/* Plain tar only: the engines send it uncompressed. */
	if (archive_read_support_format_tar(rd) != ARCHIVE_OK ||
	    archive_read_open(rd, &u, NULL, on_read, NULL) != ARCHIVE_OK) {
		rc = hutch__error_set(&job->err, HUTCH_EFAILED,
				      "cannot read the engine's archive: %s",
				      archive_error_string(rd));
		goto out;
	}
	rc = unpack(&u, rd);
out:
	apply_fixups(&u);
	if (u.parent_fd >= 0)
		close(u.parent_fd);
	job->rc = rc;
	/* Done and content: drop the padding that follows the archive;
	 * otherwise stop the transfer. */
	hutch__pipe_close_read(job->pipe, rc == 0);
	archive_read_free(rd);
	free(u.buf);
	close(job->dirfd);
	job->dirfd = -1;
	return NULL;
}
