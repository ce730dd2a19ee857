/*
 * sync_in.c - walk a host directory into a tar stream
 *
 * The walk is done here with openat/fdopendir rather than by libarchive's
 * archive_read_disk or nftw: every step is relative to a directory fd
 * opened with O_NOFOLLOW, so a symlink in the tree is stored as a symlink
 * and a directory swapped for a symlink while we walk is never entered.
 * Entries are named relative to the host directory ("a", "b/c"), without a
 * "." entry, so the mode and owner of /workspace itself are left alone.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <archive.h>
#include <archive_entry.h>

#include "common.h"
#include "dl.h"
#include "error.h"
#include "glob.h"
#include "sync_internal.h"

/* Deepest directory nesting walked; each level holds one open fd. */
#define MAX_DEPTH 256

struct level {
	DIR *dir;
	size_t pathlen; /* length of the path of this directory */
};

struct walk {
	struct hutch__sync_in *job;
	struct archive *a;
	struct archive_entry *entry;
	char path[PATH_MAX];
	char *buf; /* file data, HUTCH_SYNC_BLOCK */
	int reader_gone;
	int cut; /* nothing more reaches the pipe: see the end of the worker */
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

static int excluded(struct hutch__sync_in *job, const char *rel)
{
	for (size_t i = 0; i < job->exclude_count; i++)
		if (hutch__glob_match(job->exclude[i], rel, false))
			return 1;
	return 0;
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

static void header_common(struct walk *w, const struct stat *st)
{
	archive_entry_clear(w->entry);
	archive_entry_set_pathname(w->entry, w->path);
	archive_entry_set_perm(w->entry, st->st_mode & 07777);
	archive_entry_set_mtime(w->entry, st->st_mtim.tv_sec,
				st->st_mtim.tv_nsec);
	/* No owner: the agent unpacks as the session's user, whose the
	 * files are whatever a header says. */
	archive_entry_set_uid(w->entry, 0);
	archive_entry_set_gid(w->entry, 0);
}

/*
 * One regular file: looked at before it is opened, and streamed block by
 * block.  The name is opened as a bare handle first (O_PATH: no open()
 * of the file itself happens), checked to be a regular file, and only
 * then opened for reading through that handle.  A sandbox that swaps the
 * listed file for a fifo or a device node in between (a bind-mounted
 * tree) gets neither opened: opening a device can have effects of its own
 * on the host, whatever is read.  This is the second half: the file
 * behind the bare handle `pfd` (taken).
 */
static int add_handle(struct walk *w, int pfd)
{
	struct stat st, again;
	la_int64_t left;
	ssize_t n;
	char self[64];
	int fd, rc = 0;

	if (fstat(pfd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(pfd);
		HUTCH__STAT_ADD(w->job->stats.skipped, 1);
		return 0;
	}
	/* The handle pins the inode checked: this opens that very file. */
	snprintf(self, sizeof(self), "/proc/self/fd/%d", pfd);
	fd = open(self, O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	close(pfd);
	if (fd < 0)
		return hutch__error_set(&w->job->err, HUTCH_EFAILED,
					"cannot open '%.300s': %s", w->path,
					strerror(errno));
	if (fstat(fd, &again) < 0 || again.st_ino != st.st_ino ||
	    again.st_dev != st.st_dev || !S_ISREG(again.st_mode)) {
		close(fd);
		HUTCH__STAT_ADD(w->job->stats.skipped, 1);
		return 0;
	}
	st = again;
	header_common(w, &st);
	archive_entry_set_filetype(w->entry, AE_IFREG);
	archive_entry_set_size(w->entry, st.st_size);
	if (archive_write_header(w->a, w->entry) != ARCHIVE_OK) {
		close(fd);
		return archive_fail(w, "cannot add");
	}
	/* Exactly st_size bytes go out: a file that grows is cut, one that
	 * shrinks is padded with zeros by libarchive (finish_entry). */
	for (left = st.st_size; left > 0; left -= n) {
		size_t want = left < HUTCH_SYNC_BLOCK ? (size_t)left :
							HUTCH_SYNC_BLOCK;

		n = read(fd, w->buf, want);
		if (n < 0 && errno == EINTR) {
			n = 0;
			continue;
		}
		if (n < 0) {
			rc = hutch__error_set(&w->job->err, HUTCH_EFAILED,
					      "cannot read '%.300s': %s",
					      w->path, strerror(errno));
			break;
		}
		if (n == 0)
			break;
		if (archive_write_data(w->a, w->buf, (size_t)n) != n) {
			rc = archive_fail(w, "cannot add");
			break;
		}
		HUTCH__STAT_ADD(w->job->stats.bytes, (uint64_t)n);
	}
	close(fd);
	if (rc == 0)
		HUTCH__STAT_ADD(w->job->stats.files, 1);
	return rc;
}

/* The first half: `name` in `dirfd`, as a bare handle. */
static int add_file(struct walk *w, int dirfd, const char *name)
{
	int pfd = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);

	if (pfd < 0)
		return hutch__error_set(&w->job->err, HUTCH_EFAILED,
					"cannot open '%.300s': %s", w->path,
					strerror(errno));
	return add_handle(w, pfd);
}

static int add_symlink(struct walk *w, int dirfd, const char *name,
		       const struct stat *st)
{
	char target[PATH_MAX];
	ssize_t n = readlinkat(dirfd, name, target, sizeof(target) - 1);

	if (n < 0)
		return hutch__error_set(&w->job->err, HUTCH_EFAILED,
					"cannot read link '%.300s': %s",
					w->path, strerror(errno));
	target[n] = '\0';
	header_common(w, st);
	archive_entry_set_filetype(w->entry, AE_IFLNK);
	archive_entry_set_perm(w->entry, 0777);
	archive_entry_set_symlink(w->entry, target);
	if (archive_write_header(w->a, w->entry) != ARCHIVE_OK)
		return archive_fail(w, "cannot add");
	HUTCH__STAT_ADD(w->job->stats.symlinks, 1);
	return 0;
}

static int add_dir(struct walk *w, const struct stat *st)
{
	header_common(w, st);
	archive_entry_set_filetype(w->entry, AE_IFDIR);
	if (archive_write_header(w->a, w->entry) != ARCHIVE_OK)
		return archive_fail(w, "cannot add");
	HUTCH__STAT_ADD(w->job->stats.dirs, 1);
	return 0;
}

/* Directory `name` of dfd, which w->path names (`pathlen` bytes): its
 * header, then its entries on top of the stack.  Opened without
 * following a symlink put in its place since it was looked at. */
static int descend(struct walk *w, struct level *stack, size_t *depth, int dfd,
		   const char *name, size_t pathlen, const struct stat *st)
{
	DIR *sub;
	int sfd, rc;

	if (*depth == MAX_DEPTH)
		return hutch__error_set(
			&w->job->err, HUTCH_EFAILED,
			"'%.300s' is nested deeper than %d directories",
			w->path, MAX_DEPTH);
	rc = add_dir(w, st);
	if (rc)
		return rc;
	sfd = openat(dfd, name,
		     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	sub = sfd >= 0 ? fdopendir(sfd) : NULL;
	if (!sub) {
		rc = hutch__error_set(&w->job->err, HUTCH_EFAILED,
				      "cannot open '%.300s': %s", w->path,
				      strerror(errno));
		if (sfd >= 0)
			close(sfd);
		return rc;
	}
	stack[*depth].dir = sub;
	stack[*depth].pathlen = pathlen;
	(*depth)++;
	return 0;
}

static int walk(struct walk *w)
{
	struct level stack[MAX_DEPTH];
	size_t depth = 0;
	int rc = 0, fd;

	if (w->job->single) {
		/* One file, sent under the name it is to have. */
		snprintf(w->path, sizeof(w->path), "%s", w->job->single);
		fd = dup(w->job->dirfd);
		if (fd < 0)
			return hutch__error_set(&w->job->err, HUTCH_EFAILED,
						"cannot open '%.300s': %s",
						w->path, strerror(errno));
		return add_handle(w, fd);
	}
	fd = dup(w->job->dirfd);
	stack[0].dir = fd >= 0 ? fdopendir(fd) : NULL;
	if (!stack[0].dir) {
		if (fd >= 0)
			close(fd);
		return hutch__error_set(&w->job->err, HUTCH_EFAILED,
					"cannot list the host directory: %s",
					strerror(errno));
	}
	stack[0].pathlen = 0;
	depth = 1;
	while (depth > 0 && rc == 0) {
		struct level *top = &stack[depth - 1];
		struct dirent *de;
		struct stat st;
		size_t nlen;
		int dfd = dirfd(top->dir);

		errno = 0;
		de = readdir(top->dir);
		if (!de) {
			if (errno) {
				w->path[top->pathlen] = '\0';
				rc = hutch__error_set(
					&w->job->err, HUTCH_EFAILED,
					"cannot list '%.300s': %s",
					top->pathlen ? w->path : ".",
					strerror(errno));
			}
			closedir(top->dir);
			depth--;
			continue;
		}
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		nlen = strlen(de->d_name);
		if (top->pathlen + nlen + 2 > sizeof(w->path)) {
			w->path[top->pathlen] = '\0';
			rc = hutch__error_set(&w->job->err, HUTCH_EFAILED,
					      "path too long under '%.300s'",
					      w->path);
			break;
		}
		if (top->pathlen)
			w->path[top->pathlen] = '/';
		memcpy(w->path + top->pathlen + (top->pathlen ? 1 : 0),
		       de->d_name, nlen + 1);
		if (excluded(w->job, w->path)) {
			HUTCH__STAT_ADD(w->job->stats.excluded, 1);
			continue;
		}
		if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno == ENOENT)
				continue; /* removed while we walk */
			rc = hutch__error_set(&w->job->err, HUTCH_EFAILED,
					      "cannot stat '%.300s': %s",
					      w->path, strerror(errno));
			break;
		}
		if (S_ISREG(st.st_mode)) {
			rc = add_file(w, dfd, de->d_name);
		} else if (S_ISLNK(st.st_mode)) {
			rc = add_symlink(w, dfd, de->d_name, &st);
		} else if (S_ISDIR(st.st_mode)) {
			rc = descend(w, stack, &depth, dfd, de->d_name,
				     top->pathlen + (top->pathlen ? 1 : 0) +
					     nlen,
				     &st);
		} else {
			/* Sockets, fifos, devices have no place in a workspace. */
			HUTCH__STAT_ADD(w->job->stats.skipped, 1);
		}
	}
	while (depth > 0)
		closedir(stack[--depth].dir);
	return rc;
}

void *hutch__sync_in_worker(void *p)
{
	struct hutch__sync_in *job = p;
	struct walk w = { .job = job };
	int rc = 0;

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
		rc = archive_fail(&w, "cannot start the archive for");
		goto out;
	}
	rc = walk(&w);
	if (rc == 0 && archive_write_close(w.a) != ARCHIVE_OK)
		rc = archive_fail(&w, "cannot finish the archive of");
out:
	if (rc > 0) /* the reader stopped: its side reports why */
		rc = 0;
	/* On failure no end-of-archive marker may follow: the reader must
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
	/* EOF for curl, or an error that aborts the upload. */
	hutch__pipe_close_write(job->pipe, rc < 0 || w.reader_gone);
	free(w.buf);
	close(job->dirfd);
	return NULL;
}
