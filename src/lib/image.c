/*
 * image.c - import a root filesystem as an image (hutch/image.h)
 *
 * A directory is walked by a worker thread into a tar (libarchive) that a
 * bounded pipe hands to curl, which sends it as the body of the engine's
 * import call: nothing is held beyond the pipe's capacity.  A tar file is
 * read straight into the request.
 *
 * The walk is relative to directory fds opened with O_NOFOLLOW, as
 * sync-in's: a symlink in the tree is stored as a symlink and never
 * entered or followed.  Unlike sync-in, it keeps what a root filesystem
 * needs: numeric owners, set-id bits, hard links and device nodes.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <hutch/image.h>

#include "beneath.h"
#include "common.h"
#include "dl.h"
#include "engine_api.h"
#include "engine_internal.h"
#include "error.h"
#include "sync_internal.h"

/* Deepest directory nesting walked; each level holds one open fd. */
#define MAX_DEPTH 256
/* Hard-linked files remembered (their first name each) to link the
 * later names to: the one part of the walk that grows with the tree, so
 * it is bounded in entries and in the bytes of the names kept.  A tree
 * with more (a sandbox can make a million hard links of long names in a
 * directory that is then imported) has its further ones stored as copies:
 * the same content, one more file each.  A power of two: the table is
 * twice this size, open addressing. */
#define MAX_HARDLINKS (1u << 16)
#define MAX_HARDLINK_NAMES (16u << 20)
/* Instructions (ENV, WORKDIR, USER) sent with the import. */
#define MAX_CHANGES 1024
/* How often the progress callback may run. */
#define PROGRESS_EVERY_MS 100

/* ---- references ------------------------------------------------------- */

static int is_lower_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static int is_alnum(char c)
{
	return is_lower_alnum(c) || (c >= 'A' && c <= 'Z');
}

/* One path component of a repository name: [a-z0-9]+ joined by '.', '_',
 * "__" or runs of '-'. */
static int component_valid(const char *s, size_t n)
{
	size_t i = 0;

	if (n == 0 || !is_lower_alnum(s[0]) || !is_lower_alnum(s[n - 1]))
		return 0;
	while (i < n) {
		if (is_lower_alnum(s[i])) {
			i++;
		} else if (s[i] == '.' || s[i] == '_') {
			size_t run = i + 1 < n && s[i] == '_' &&
						     s[i + 1] == '_' ?
					     2 :
					     1;
			i += run;
			if (!is_lower_alnum(s[i]))
				return 0;
		} else if (s[i] == '-') {
			while (i < n && s[i] == '-')
				i++;
			if (!is_lower_alnum(s[i]))
				return 0;
		} else {
			return 0;
		}
	}
	return 1;
}

/* A registry host: DNS labels joined by '.', an optional ":PORT". */
static int domain_valid(const char *s, size_t n)
{
	size_t i = 0, label = 0;

	while (i < n && s[i] != ':') {
		if (is_alnum(s[i])) {
			label++;
		} else if (s[i] == '-' && label > 0) {
			label++;
		} else if (s[i] == '.' && label > 0 && s[i - 1] != '-') {
			label = 0;
		} else {
			return 0;
		}
		i++;
	}
	if (label == 0 || s[i - 1] == '-')
		return 0;
	if (i < n) { /* ":PORT" */
		size_t digits = n - i - 1;

		if (digits == 0 || digits > 5 ||
		    strspn(s + i + 1, "0123456789") < digits)
			return 0;
	}
	return 1;
}

static int tag_valid(const char *s)
{
	size_t n = strlen(s);

	return n >= 1 && n <= 128 && (is_alnum(s[0]) || s[0] == '_') &&
	       strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			 "0123456789_.-") == n;
}

int hutch_image_ref_valid(const char *ref)
{
	const char *slash, *colon, *p, *name_end;
	size_t len;

	if (!ref)
		return 0;
	len = strlen(ref);
	if (len == 0 || len > 255 + 1 + 128 || strchr(ref, '@'))
		return 0;
	slash = strrchr(ref, '/');
	colon = strrchr(ref, ':');
	/* A ':' after the last '/' starts the tag; one before it belongs to
	 * the registry's port. */
	if (colon && (!slash || colon > slash)) {
		if (!tag_valid(colon + 1))
			return 0;
		name_end = colon;
	} else {
		name_end = ref + len;
	}
	if ((size_t)(name_end - ref) > 255)
		return 0;
	p = ref;
	slash = memchr(ref, '/', (size_t)(name_end - ref));
	/* The first component names a registry when it looks like a host. */
	if (slash) {
		size_t n = (size_t)(slash - ref);

		if (memchr(ref, '.', n) || memchr(ref, ':', n) ||
		    (n == 9 && memcmp(ref, "localhost", 9) == 0)) {
			if (!domain_valid(ref, n))
				return 0;
			p = slash + 1;
		}
	}
	for (;;) {
		const char *end = memchr(p, '/', (size_t)(name_end - p));
		size_t n = (size_t)((end ? end : name_end) - p);

		if (!component_valid(p, n))
			return 0;
		if (!end)
			return 1;
		p = end + 1;
	}
}

/* ---- the walk ------------------------------------------------------------ */

struct hardlink {
	dev_t dev;
	ino_t ino;
	char *path; /* the first name written */
};

struct job {
	int dirfd; /* the root filesystem; owned */
	struct hutch__pipe *pipe;
	int rc;		  /* the worker's result */
	hutch_error *err; /* the worker's error, or NULL */
};

struct walk {
	struct job *job;
	struct archive *a;
	struct archive_entry *entry;
	char path[PATH_MAX];
	char *buf; /* file data, HUTCH_SYNC_BLOCK */
	int reader_gone;
	int cut; /* nothing more reaches the pipe: see the end of the worker */
	struct hardlink *links; /* 2 * MAX_HARDLINKS slots, or NULL */
	size_t nlinks, names;	/* entries, bytes of their names */
};

static la_ssize_t on_write(struct archive *a, void *p, const void *data,
			   size_t len)
{
	struct walk *w = p;

	if (w->cut) {
		archive_set_error(a, ECANCELED, "upload cut");
		return -1;
	}
	if (hutch__pipe_write(w->job->pipe, data, len, NULL) < 0) {
		w->reader_gone = 1;
		archive_set_error(a, ECANCELED, "upload stopped");
		return -1;
	}
	return (la_ssize_t)len;
}

static int archive_fail(struct walk *w, const char *what)
{
	if (w->reader_gone)
		return 1; /* not an error of ours: the transfer ended */
	return hutch__error_set(&w->job->err, HUTCH_EFAILED, "%s '%.300s': %s",
				what, w->path,
				archive_error_string(w->a) ?
					archive_error_string(w->a) :
					"archive error");
}

static int walk_fail(struct walk *w, const char *what)
{
	return hutch__error_set(&w->job->err, HUTCH_EFAILED, "%s '%.300s': %s",
				what, w->path, strerror(errno));
}

/* The header of every entry: the tree's own mode bits (set-id and sticky
 * included) and numeric owner, as the root filesystem has them. */
static void header_common(struct walk *w, const struct stat *st,
			  unsigned int type)
{
	archive_entry_clear(w->entry);
	archive_entry_set_pathname(w->entry, w->path);
	archive_entry_set_filetype(w->entry, type);
	archive_entry_set_perm(w->entry, st->st_mode & 07777);
	archive_entry_set_mtime(w->entry, st->st_mtim.tv_sec,
				st->st_mtim.tv_nsec);
	archive_entry_set_uid(w->entry, st->st_uid);
	archive_entry_set_gid(w->entry, st->st_gid);
}

static int write_header(struct walk *w)
{
	if (archive_write_header(w->a, w->entry) != ARCHIVE_OK)
		return archive_fail(w, "cannot add");
	return 0;
}

/* The slot of (dev, ino): its entry, or the empty one where it goes.
 * Never full: at most MAX_HARDLINKS entries in twice as many slots. */
static struct hardlink *link_slot(struct walk *w, const struct stat *st)
{
	size_t mask = 2 * MAX_HARDLINKS - 1;
	size_t i = ((size_t)st->st_ino * 0x9e3779b97f4a7c15ull ^
		    (size_t)st->st_dev) &
		   mask;

	while (w->links[i].path &&
	       (w->links[i].dev != st->st_dev || w->links[i].ino != st->st_ino))
		i = (i + 1) & mask;
	return &w->links[i];
}

/*
 * A second name of a file already written: a hard link to the first.
 * Returns 1 when it was one (written), 0 when the file is new (now
 * remembered, unless the bounds above are reached), or an error.
 */
static int as_hardlink(struct walk *w, const struct stat *st)
{
	struct hardlink *l;
	size_t len;

	if (st->st_nlink < 2)
		return 0;
	if (!w->links &&
	    !(w->links = calloc(2 * MAX_HARDLINKS, sizeof(*w->links))))
		return hutch__error_oom(&w->job->err);
	l = link_slot(w, st);
	if (l->path) {
		header_common(w, st, AE_IFREG);
		archive_entry_set_size(w->entry, 0);
		archive_entry_set_hardlink(w->entry, l->path);
		return write_header(w) ?: 1;
	}
	len = strlen(w->path) + 1;
	if (w->nlinks == MAX_HARDLINKS || len > MAX_HARDLINK_NAMES - w->names)
		return 0; /* stored as a file of its own */
	if (!(l->path = strdup(w->path)))
		return hutch__error_oom(&w->job->err);
	l->dev = st->st_dev;
	l->ino = st->st_ino;
	w->nlinks++;
	w->names += len;
	return 0;
}

/*
 * One regular file, streamed block by block.  Opened through a bare
 * handle (O_PATH) checked to be the regular file looked at, so a file
 * swapped for a fifo or a device since is not opened: opening a device
 * can have effects of its own.
 */
static int add_file(struct walk *w, int dirfd, const char *name,
		    const struct stat *seen)
{
	struct stat st;
	la_int64_t left;
	ssize_t n;
	char self[64];
	int fd, pfd, rc;

	pfd = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (pfd < 0)
		return walk_fail(w, "cannot open");
	/* The handle is checked before anything is opened through it: what
	 * it names cannot change, and a device swapped in since the
	 * listing is never opened. */
	if (fstat(pfd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    st.st_ino != seen->st_ino || st.st_dev != seen->st_dev) {
		close(pfd);
		errno = EAGAIN;
		return walk_fail(w, "changed while read");
	}
	snprintf(self, sizeof(self), "/proc/self/fd/%d", pfd);
	fd = open(self, O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	close(pfd);
	if (fd < 0)
		return walk_fail(w, "cannot open");
	rc = as_hardlink(w, &st);
	if (rc != 0) {
		close(fd);
		return rc > 0 ? 0 : rc;
	}
	header_common(w, &st, AE_IFREG);
	archive_entry_set_size(w->entry, st.st_size);
	if ((rc = write_header(w)) != 0) {
		close(fd);
		return rc;
	}
	/* Exactly st_size bytes go out: a file that grows is cut, one that
	 * shrinks is padded with zeros by libarchive. */
	for (left = st.st_size; left > 0; left -= n) {
		size_t want = left < HUTCH_SYNC_BLOCK ? (size_t)left :
							HUTCH_SYNC_BLOCK;

		n = read(fd, w->buf, want);
		if (n < 0 && errno == EINTR) {
			n = 0;
			continue;
		}
		if (n < 0) {
			rc = walk_fail(w, "cannot read");
			break;
		}
		if (n == 0)
			break;
		if (archive_write_data(w->a, w->buf, (size_t)n) != n) {
			rc = archive_fail(w, "cannot add");
			break;
		}
	}
	close(fd);
	return rc;
}

static int add_symlink(struct walk *w, int dirfd, const char *name,
		       const struct stat *st)
{
	char target[PATH_MAX];
	ssize_t n = readlinkat(dirfd, name, target, sizeof(target) - 1);

	if (n < 0)
		return walk_fail(w, "cannot read link");
	target[n] = '\0';
	header_common(w, st, AE_IFLNK);
	archive_entry_set_perm(w->entry, 0777);
	archive_entry_set_symlink(w->entry, target);
	return write_header(w);
}

/* Device nodes and fifos: a header only (a root filesystem's /dev). */
static int add_special(struct walk *w, const struct stat *st)
{
	int rc = as_hardlink(w, st);

	if (rc != 0)
		return rc > 0 ? 0 : rc;
	header_common(w, st,
		      S_ISCHR(st->st_mode) ? AE_IFCHR :
		      S_ISBLK(st->st_mode) ? AE_IFBLK :
					     AE_IFIFO);
	if (!S_ISFIFO(st->st_mode)) {
		archive_entry_set_rdevmajor(w->entry, major(st->st_rdev));
		archive_entry_set_rdevminor(w->entry, minor(st->st_rdev));
	}
	return write_header(w);
}

static int descend(struct walk *w, DIR **stack, size_t *lens, size_t *depth,
		   int dfd, const char *name, size_t pathlen,
		   const struct stat *st)
{
	DIR *sub;
	int sfd, rc;

	if (*depth == MAX_DEPTH)
		return hutch__error_set(
			&w->job->err, HUTCH_EFAILED,
			"'%.300s' is nested deeper than %d directories",
			w->path, MAX_DEPTH);
	header_common(w, st, AE_IFDIR);
	if ((rc = write_header(w)) != 0)
		return rc;
	sfd = openat(dfd, name,
		     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	sub = sfd >= 0 ? fdopendir(sfd) : NULL;
	if (!sub) {
		rc = walk_fail(w, "cannot open");
		if (sfd >= 0)
			close(sfd);
		return rc;
	}
	stack[*depth] = sub;
	lens[*depth] = pathlen;
	(*depth)++;
	return 0;
}

static int walk(struct walk *w)
{
	DIR *stack[MAX_DEPTH];
	size_t lens[MAX_DEPTH];
	size_t depth = 0;
	int rc = 0, fd;

	fd = dup(w->job->dirfd);
	stack[0] = fd >= 0 ? fdopendir(fd) : NULL;
	if (!stack[0]) {
		if (fd >= 0)
			close(fd);
		return hutch__error_set(&w->job->err, HUTCH_EFAILED,
					"cannot list the root filesystem: %s",
					strerror(errno));
	}
	lens[0] = 0;
	depth = 1;
	while (depth > 0 && rc == 0) {
		size_t top = lens[depth - 1], nlen;
		int dfd = dirfd(stack[depth - 1]);
		struct dirent *de;
		struct stat st;

		errno = 0;
		de = readdir(stack[depth - 1]);
		if (!de) {
			if (errno) {
				w->path[top] = '\0';
				rc = walk_fail(w, "cannot list");
			}
			closedir(stack[--depth]);
			continue;
		}
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		nlen = strlen(de->d_name);
		if (top + nlen + 2 > sizeof(w->path)) {
			w->path[top] = '\0';
			rc = hutch__error_set(&w->job->err, HUTCH_EFAILED,
					      "path too long under '%.300s'",
					      w->path);
			break;
		}
		if (top)
			w->path[top] = '/';
		memcpy(w->path + top + (top ? 1 : 0), de->d_name, nlen + 1);
		if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno == ENOENT)
				continue; /* removed while we walk */
			rc = walk_fail(w, "cannot stat");
			break;
		}
		if (S_ISREG(st.st_mode))
			rc = add_file(w, dfd, de->d_name, &st);
		else if (S_ISLNK(st.st_mode))
			rc = add_symlink(w, dfd, de->d_name, &st);
		else if (S_ISDIR(st.st_mode))
			rc = descend(w, stack, lens, &depth, dfd, de->d_name,
				     top + (top ? 1 : 0) + nlen, &st);
		else if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ||
			 S_ISFIFO(st.st_mode))
			rc = add_special(w, &st);
		/* Sockets are made by the programs that listen on them. */
	}
	while (depth > 0)
		closedir(stack[--depth]);
	return rc;
}

static void *worker(void *p)
{
	struct job *job = p;
	struct walk w = { .job = job };
	int rc;

	w.buf = malloc(HUTCH_SYNC_BLOCK);
	w.a = archive_write_new();
	w.entry = archive_entry_new();
	if (!w.buf || !w.a || !w.entry) {
		rc = hutch__error_oom(&job->err);
		goto out;
	}
	/* pax only where ustar cannot say it (long names, big files).
	 * Names go as the bytes they are: libarchive would otherwise
	 * translate them to UTF-8 from the locale, which is "C" unless the
	 * program set one (a library must not), and refuse every name that
	 * is not ASCII. */
	if (archive_write_set_format_pax_restricted(w.a) != ARCHIVE_OK ||
	    archive_write_set_format_option(w.a, "pax", "hdrcharset",
					    "BINARY") != ARCHIVE_OK ||
	    archive_write_set_bytes_per_block(w.a, HUTCH_SYNC_BLOCK) !=
		    ARCHIVE_OK ||
	    archive_write_set_bytes_in_last_block(w.a, 1) != ARCHIVE_OK ||
	    archive_write_open(w.a, &w, NULL, on_write, NULL) != ARCHIVE_OK) {
		rc = archive_fail(&w, "cannot start the archive of");
		goto out;
	}
	rc = walk(&w);
	if (rc == 0 && archive_write_close(w.a) != ARCHIVE_OK)
		rc = archive_fail(&w, "cannot finish the archive of");
out:
	if (rc > 0) /* the reader stopped: its side reports why */
		rc = 0;
	/* On failure no end-of-archive marker may follow: the engine must
	 * see a cut upload, not a shorter but complete tree.  on_write
	 * refuses every byte from here, and the archive is still closed:
	 * libarchive 3.6's archive_write_fail() skips the close, which is
	 * what frees the block buffer of the write callback's filter. */
	if (w.a && (rc != 0 || w.reader_gone)) {
		w.cut = 1;
		archive_write_close(w.a);
	}
	archive_write_free(w.a);
	archive_entry_free(w.entry);
	job->rc = rc;
	hutch__pipe_close_write(job->pipe, rc < 0 || w.reader_gone);
	for (size_t i = 0; w.links && i < 2 * MAX_HARDLINKS; i++)
		free(w.links[i].path);
	free(w.links);
	free(w.buf);
	return NULL;
}

/* ---- the transfer -------------------------------------------------------- */

struct driver {
	const hutch_image_import_options *opts;
	struct hutch__pipe *pipe; /* a directory's walk; NULL for a file */
	int fd;			  /* a tar file */
	uint64_t sent;
	unsigned long long t0, last;
	int cancelled;
	int read_errno; /* reading the tar file failed */
};

static int driver_check(struct driver *d, int force)
{
	const hutch_image_import_options *o = d->opts;
	unsigned long long now;

	if (o && o->cancel && hutch_cancel_raised(o->cancel))
		d->cancelled = 1;
	if (!d->cancelled && o && o->progress) {
		now = hutch__now_ms();
		if (force || now - d->last >= PROGRESS_EVERY_MS) {
			d->last = now;
			if (o->progress(d->sent, now - d->t0, o->payload))
				d->cancelled = 1;
		}
	}
	return d->cancelled ? -1 : 0;
}

/* curl pulls the request body: from the walk's pipe, or the file. */
static size_t source(char *buf, size_t len, void *payload)
{
	struct driver *d = payload;
	ssize_t n;

	for (;;) {
		if (d->pipe) {
			n = hutch__pipe_read(d->pipe, buf, len, 100);
			if (n == -1)
				return (size_t)-1; /* the walk failed */
		} else {
			n = read(d->fd, buf, len);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0) {
				d->read_errno = errno;
				return (size_t)-1;
			}
		}
		if (n > 0)
			d->sent += (uint64_t)n;
		if (driver_check(d, 0) < 0)
			return (size_t)-1;
		if (n >= 0)
			return (size_t)n;
	}
}

/* Whether the first bytes of a file are those of a tar, plain or in one
 * of the compressions the engines unpack. */
static int looks_like_tar(int fd)
{
	static const struct {
		const char *magic;
		size_t len;
	} z[] = {
		{ "\x1f\x8b", 2 }, /* gzip */
		{ "BZh", 3 },	   /* bzip2 */
		{ "\xfd"
		  "7zXZ\0",
		  6 },			   /* xz */
		{ "\x28\xb5\x2f\xfd", 4 }, /* zstd */
	};
	char head[512];
	ssize_t n = pread(fd, head, sizeof(head), 0);

	if (n < 6)
		return 0;
	for (size_t i = 0; i < sizeof(z) / sizeof(z[0]); i++)
		if (memcmp(head, z[i].magic, z[i].len) == 0)
			return 1;
	/* ustar and GNU tar both have "ustar" at 257 of the first header. */
	return n == sizeof(head) && memcmp(head + 257, "ustar", 5) == 0;
}

static int check_opts(const hutch_image_import_options *o, const char *ref,
		      hutch_error **err)
{
	if (!hutch_image_ref_valid(ref))
		return hutch__error_set(
			err, HUTCH_EINVALID,
			"invalid image name '%.200s': give NAME or NAME:TAG "
			"(lowercase NAME, e.g. my-rootfs:1.0)",
			ref ? ref : "");
	if (!o)
		return 0;
	if (o->version != 1 && o->version != 2)
		return hutch__error_set(
			err, HUTCH_EINVALID,
			"unsupported hutch_image_import_options version %u "
			"(1 or 2)",
			o->version);
	if (o->env_count > MAX_CHANGES - 2 || (o->env_count && !o->env))
		return hutch__error_set(err, HUTCH_EINVALID,
					"bad environment list");
	for (size_t i = 0; i < o->env_count; i++) {
		const char *eq = o->env[i] ? strchr(o->env[i], '=') : NULL;

		/* The name unquoted in the instruction: nothing either
		 * engine reads as syntax (the value is quoted for it). */
		if (!eq || eq == o->env[i] || strchr(o->env[i], '\n') ||
		    strspn(o->env[i],
			   "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
			   "abcdefghijklmnopqrstuvwxyz"
			   "0123456789_.-") != (size_t)(eq - o->env[i]))
			return hutch__error_set(
				err, HUTCH_EINVALID,
				"environment '%.100s' is not KEY=VALUE (a KEY "
				"of letters, digits and _.-)",
				o->env[i] ? o->env[i] : "(null)");
	}
	/* One instruction each: a newline would start another. */
	if (o->workdir && (o->workdir[0] != '/' || strchr(o->workdir, '\n')))
		return hutch__error_set(
			err, HUTCH_EINVALID,
			"workdir '%.200s' is not an absolute path", o->workdir);
	if (o->user && (!*o->user || strpbrk(o->user, "\n \t")))
		return hutch__error_set(err, HUTCH_EINVALID,
					"invalid user '%.100s'", o->user);
	if (o->label_count > MAX_CHANGES - 2 - o->env_count ||
	    (o->label_count && !o->labels))
		return hutch__error_set(err, HUTCH_EINVALID, "bad label list");
	for (size_t i = 0; i < o->label_count; i++) {
		const char *l = o->labels[i];
		size_t klen = l ? strspn(l, "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
					    "abcdefghijklmnopqrstuvwxyz"
					    "0123456789._/-") :
				  0;

		/* Unquoted in the instruction, so nothing the Dockerfile
		 * parser reads as syntax: no space, quote, '$' or '\\'. */
		if (!klen || klen > 128 || l[klen] != '=' ||
		    strlen(l + klen + 1) > 256 ||
		    strspn(l + klen + 1,
			   "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
			   "abcdefghijklmnopqrstuvwxyz"
			   "0123456789._/:@+,=-") != strlen(l + klen + 1))
			return hutch__error_set(
				err, HUTCH_EINVALID,
				"label '%.100s' is not KEY=VALUE of letters, "
				"digits and ._/:@+,=-",
				l ? l : "(null)");
	}
	if (o->if_changed && !o->label_count)
		return hutch__error_set(err, HUTCH_EINVALID,
					"if_changed needs a label to compare");
	return 0;
}

static void free_changes(char **c, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(c[i]);
	free(c);
}

/* The Dockerfile instructions of the options, in the engine's dialect
 * (hutch__api_image_change). */
static int make_changes(hutch_engine *e, const hutch_image_import_options *o,
			char ***out, size_t *n, hutch_error **err)
{
	size_t max = (o ? o->env_count + o->label_count : 0) + 2, k = 0;
	char **c = calloc(max, sizeof(*c));
	int bad = !c, podman = 0;

	if (o && (o->env_count || o->workdir || o->user)) {
		podman = hutch__api_is_podman(e, err);
		if (podman < 0) {
			free(c);
			return podman;
		}
	}
	/* k counts the instructions made: a failed one leaves its slot
	 * NULL (or undefined, asprintf) and uncounted. */
	for (size_t i = 0; !bad && o && i < o->env_count; i++) {
		const char *eq = strchr(o->env[i], '='); /* check_opts */

		bad = hutch__api_image_change(podman, "ENV", o->env[i],
					      (size_t)(eq - o->env[i]), eq + 1,
					      &c[k]) < 0;
		k += !bad;
	}
	if (!bad && o && o->workdir) {
		bad = hutch__api_image_change(podman, "WORKDIR", NULL, 0,
					      o->workdir, &c[k]) < 0;
		k += !bad;
	}
	if (!bad && o && o->user) {
		bad = hutch__api_image_change(podman, "USER", NULL, 0, o->user,
					      &c[k]) < 0;
		k += !bad;
	}
	/* Labels are of characters neither engine reads as syntax. */
	for (size_t i = 0; !bad && o && i < o->label_count; i++) {
		bad = asprintf(&c[k], "LABEL %s", o->labels[i]) < 0;
		k += !bad;
	}
	if (bad) {
		free_changes(c, k);
		return hutch__error_oom(err);
	}
	*out = c;
	*n = k;
	return 0;
}

static int send_import(hutch_engine *e, const char *ref, char **changes,
		       size_t nchanges, struct driver *d, const char *what,
		       hutch_error **err)
{
	return hutch__api_image_import(e, ref, (const char *const *)changes,
				       nchanges, source, d,
				       d->opts ? d->opts->cancel : NULL, what,
				       err);
}

static int import_dir(hutch_engine *e, int fd, const char *ref, char **changes,
		      size_t nchanges, struct driver *d, const char *what,
		      hutch_error **err)
{
	struct hutch__pipe pipe;
	struct job job = { .dirfd = fd };
	hutch_error *herr = NULL;
	pthread_t t;
	int rc, te;

	if (hutch__pipe_init(&pipe, HUTCH_SYNC_PIPE_CAP) < 0)
		return hutch__error_oom(err);
	job.pipe = &pipe;
	d->pipe = &pipe;
	te = pthread_create(&t, NULL, worker, &job);
	if (te) {
		hutch__pipe_destroy(&pipe);
		return hutch__error_set(err, HUTCH_EFAILED,
					"cannot start a thread: %s",
					strerror(te));
	}
	rc = send_import(e, ref, changes, nchanges, d, what, &herr);
	/* Whatever happened, the walker must stop writing now. */
	hutch__pipe_close_read(&pipe, 0);
	pthread_join(t, NULL);
	if (job.rc < 0) {
		/* The walk's failure is the cause of an aborted upload:
		 * report it, not curl's "aborted". */
		hutch_error_free(herr);
		rc = hutch__error_pass(err, job.err, job.rc);
		job.err = NULL;
		hutch__error_wrap(err, rc, "%s", what);
	} else if (rc < 0) {
		hutch__error_pass(err, herr, rc);
	}
	hutch_error_free(job.err);
	hutch__pipe_destroy(&pipe);
	return rc;
}

int hutch_image_import(hutch_engine *e, const char *src, const char *ref,
		       const hutch_image_import_options *given, char **id,
		       hutch_error **err)
{
	static const hutch_image_import_options defaults =
		HUTCH_IMAGE_IMPORT_OPTIONS_INIT;
	hutch_image_import_options o2;
	const hutch_image_import_options *opts = NULL;
	struct driver d = { .opts = opts, .fd = -1 };
	char **changes = NULL, what[512], before[128] = "", now[128];
	hutch_error *herr = NULL;
	size_t nchanges = 0;
	struct stat st;
	int rc, fd, same = 0, named = 1;

	if (id)
		*id = NULL;
	/* A version-1 caller's struct ends before the labels: they get
	 * their defaults. */
	if (given && given->version == 1) {
		o2 = defaults;
		memcpy(&o2, given,
		       offsetof(hutch_image_import_options, labels));
		o2.version = HUTCH_IMAGE_IMPORT_OPTIONS_VERSION;
		opts = &o2;
	} else {
		opts = given;
	}
	if ((rc = check_opts(opts, ref, err)) < 0)
		return rc;
	if (!src || !*src)
		return hutch__error_set(err, HUTCH_EINVALID,
					"no root filesystem given");
	snprintf(what, sizeof(what), "import '%.200s' as image '%.200s'", src,
		 ref);
	/* What `ref` names before: the same build (if_changed), or the
	 * image it will no longer name (prune). */
	if (opts && (opts->if_changed || opts->prune)) {
		rc = hutch__api_image_facts(e, ref, before, sizeof(before),
					    opts->labels, opts->label_count,
					    &same, NULL, what, &herr);
		if (rc < 0 && rc != HUTCH_ENOTFOUND)
			return hutch__error_pass(err, herr, rc);
		hutch_error_free(herr);
		herr = NULL;
		if (rc == 0 && opts->if_changed && same) {
			if (id && before[0] && !(*id = strdup(before)))
				return hutch__error_oom(err);
			return 1;
		}
	}
	/* The source, through no symlink anywhere on its path, as sync's
	 * host directory: a root filesystem may be a tree a session can
	 * write (one built in a bind-mounted workspace), which could
	 * otherwise swap it, or a directory on its path, for a symlink to
	 * the user's home just before it is opened, and have it sent into
	 * an image its next session reads.  What lies inside a directory is
	 * never followed either (the walk). */
	fd = hutch__open_any_nosymlinks(src, O_RDONLY | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return hutch__error_set(
			err, errno == ENOENT ? HUTCH_ENOTFOUND : HUTCH_EINVALID,
			"cannot open '%.300s': %s", src,
			errno == ELOOP ? "it goes through a symlink (give its "
					 "real path)" :
					 strerror(errno));
	if (fstat(fd, &st) < 0 ||
	    (!S_ISDIR(st.st_mode) &&
	     !(S_ISREG(st.st_mode) && looks_like_tar(fd)))) {
		close(fd);
		return hutch__error_set(
			err, HUTCH_EINVALID,
			"'%.300s' is neither a directory nor a tar archive",
			src);
	}
	if ((rc = hutch__dl_archive(err)) < 0 ||
	    (rc = make_changes(e, opts, &changes, &nchanges, err)) < 0) {
		close(fd);
		return rc;
	}
	d.t0 = d.last = hutch__now_ms();
	if (S_ISDIR(st.st_mode)) {
		rc = import_dir(e, fd, ref, changes, nchanges, &d, what, &herr);
	} else {
		d.fd = fd;
		rc = send_import(e, ref, changes, nchanges, &d, what, &herr);
		if (rc < 0 && d.read_errno) {
			hutch_error_free(herr);
			herr = NULL;
			rc = hutch__error_set(err, HUTCH_EFAILED,
					      "%s: cannot read it: %s", what,
					      strerror(d.read_errno));
		}
	}
	close(fd);
	free_changes(changes, nchanges);
	if (rc < 0 && d.cancelled) {
		hutch_error_free(herr);
		return hutch__error_set(err, HUTCH_ECANCELLED, "%s: cancelled",
					what);
	}
	if (rc < 0)
		return herr ? hutch__error_pass(err, herr, rc) : rc;
	driver_check(&d, 1);
	/* The ID as the engine has it now under that name. */
	rc = hutch__api_image_facts(e, ref, now, sizeof(now), NULL, 0, NULL,
				    NULL, what, err);
	if (rc < 0)
		return rc;
	/* Only when the name was all it had: removed by its ID, an image
	 * with another name would lose that name and go (the engines untag
	 * a single other reference and delete).  Refused (409) while a
	 * container uses it: then it stays. */
	if (opts && opts->prune && before[0] && strcmp(before, now) != 0 &&
	    hutch__api_image_facts(e, before, NULL, 0, NULL, 0, NULL, &named,
				   what, NULL) == 0 &&
	    !named)
		hutch__api_image_remove(e, before, 0,
					"remove the image it replaced", NULL);
	/* No ID the engine gave in full: the caller prints the name. */
	if (id && now[0] && !(*id = strdup(now)))
		return hutch__error_oom(err);
	return 0;
}

int hutch_image_remove(hutch_engine *e, const char *ref, int force,
		       hutch_error **err)
{
	char what[256];

	/* Into the path as it is: a reference, or an engine ID. */
	if (!hutch_image_ref_valid(ref) &&
	    !(ref && strncmp(ref, "sha256:", 7) == 0 && strlen(ref) == 71 &&
	      strspn(ref + 7, "0123456789abcdef") == 64))
		return hutch__error_set(err, HUTCH_EINVALID,
					"invalid image name '%.200s'",
					ref ? ref : "");
	snprintf(what, sizeof(what), "remove image '%.200s'", ref);
	return hutch__api_image_remove(e, ref, force, what, err);
}
