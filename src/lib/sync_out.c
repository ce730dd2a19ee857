/*
 * sync_out.c - unpack the engine's tar of the workspace into a host directory
 *
 * The archive comes from the container: whoever controls the container
 * controls every name, type and link in it.  It is unpacked with
 * libarchive's secure extraction, which checks paths relative to the
 * current working directory.  A library must not chdir() its host
 * process, so the extraction runs on a thread of its own that first
 * unshares its filesystem context (unshare(CLONE_FS): cwd, root and umask
 * become private to the thread, no privilege needed) and then fchdir()s
 * into the host directory.  From there every path libarchive sees is
 * relative and the SECURE_* flags confine it: no absolute names, no "..",
 * no symlink in the way of a path (also one an earlier sync-out left).
 * Around that, hutch refuses device nodes, fifos and sockets, drops
 * setuid/setgid bits, restores no owner, xattr, ACL or file flag, and
 * checks that a hard link only ever joins a regular file inside the host
 * directory, reached without a symlink.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <archive.h>
#include <archive_entry.h>

#include "common.h"
#include "error.h"
#include "sync_internal.h"

#define EXTRACT_FLAGS                                                           \
	(ARCHIVE_EXTRACT_SECURE_NODOTDOT | ARCHIVE_EXTRACT_SECURE_SYMLINKS |    \
	 ARCHIVE_EXTRACT_SECURE_NOABSOLUTEPATHS | ARCHIVE_EXTRACT_PERM |        \
	 ARCHIVE_EXTRACT_TIME | ARCHIVE_EXTRACT_UNLINK)

struct unpack {
	struct hutch__sync_out *job;
	char *buf;
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
	ssize_t n = hutch__pipe_read(u->job->pipe, u->buf, HUTCH_SYNC_BLOCK, -1);

	*out = u->buf;
	if (n < 0) {
		archive_set_error(a, ECANCELED, "transfer stopped");
		return -1;
	}
	return n;
}

static void refuse(struct hutch__sync_out *job, const char *name, const char *why)
{
	if (job->refused++ == 0)
		snprintf(job->first_refused, sizeof(job->first_refused), "'%.200s': %.250s",
			 name ? name : "(unnamed)", why);
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

/* 1 when `path` (relative to the cwd) is a regular file reached through
 * real directories only. */
static int safe_regular(const char *path)
{
	char copy[4096], *p, *slash;
	struct stat st;
	int dfd, next, ok = 0;

	if (!plain_relative(path) || strlen(path) >= sizeof(copy))
		return 0;
	strcpy(copy, path);
	dfd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return 0;
	for (p = copy; (slash = strchr(p, '/')); p = slash + 1) {
		*slash = '\0';
		next = openat(dfd, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		close(dfd);
		if (next < 0)
			return 0;
		dfd = next;
	}
	if (fstatat(dfd, p, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
		ok = 1;
	close(dfd);
	return ok;
}

/* Copy the entry's data to disk.  0, or -1 with the error said. */
static int copy_data(struct hutch__sync_out *job, struct archive *rd,
		     struct archive *disk, const char *name)
{
	const void *buf;
	size_t size;
	la_int64_t off;
	int r;

	for (;;) {
		r = archive_read_data_block(rd, &buf, &size, &off);
		if (r == ARCHIVE_EOF)
			return 0;
		if (r < ARCHIVE_WARN)
			return hutch__error_set(&job->err, HUTCH_EFAILED,
				"cannot read '%.300s' from the engine's archive: %s", name,
				archive_error_string(rd));
		if (archive_write_data_block(disk, buf, size, off) < ARCHIVE_WARN)
			return hutch__error_set(&job->err, HUTCH_EFAILED,
				"cannot write '%.300s': %s", name,
				archive_error_string(disk));
		HUTCH__STAT_ADD(job->stats.bytes, size);
	}
}

static int unpack(struct hutch__sync_out *job, struct archive *rd, struct archive *disk)
{
	struct archive_entry *e;
	char name[4096], link[4096];
	int r, single = 0, first = 1;

	for (;;) {
		const char *raw, *mapped, *hl;
		mode_t type;

		r = archive_read_next_header(rd, &e);
		if (r == ARCHIVE_EOF)
			return 0;
		if (r < ARCHIVE_WARN)
			return hutch__error_set(&job->err, HUTCH_EFAILED,
				"the engine's archive is damaged: %s", archive_error_string(rd));
		raw = archive_entry_pathname(e);
		type = archive_entry_filetype(e);
		hl = archive_entry_hardlink(e);
		mapped = raw ? hutch__sync_strip_top(raw, job->top) : NULL;
		if (!mapped || strlen(mapped) >= sizeof(name)) {
			refuse(job, raw, "not under the requested path");
			continue;
		}
		if (!*mapped) {
			if (type == AE_IFDIR && !hl)
				goto next; /* the top directory is the host directory */
			if (!first) {
				refuse(job, raw, "a second top entry");
				continue;
			}
			/* A single file lands as HOSTDIR/BASENAME. */
			mapped = job->top;
			single = 1;
		} else if (single) {
			refuse(job, raw, "an entry under a file");
			continue;
		}
		snprintf(name, sizeof(name), "%s", mapped);
		first = 0;

		if (hl) {
			const char *t = hutch__sync_strip_top(hl, job->top);

			if (t && !*t && single)
				t = job->top;
			if (!t || strlen(t) >= sizeof(link)) {
				refuse(job, raw, "hard link to outside the requested path");
				continue;
			}
			snprintf(link, sizeof(link), "%s", t);
			/* Only ever to a regular file already extracted here,
			 * never through a symlink: a link to anything else
			 * could be written through or point out. */
			if (!safe_regular(link)) {
				refuse(job, raw, "hard link to something that is not a regular "
					    "file inside the host directory");
				continue;
			}
			archive_entry_set_hardlink(e, link);
			archive_entry_set_size(e, 0);
		} else if (type != AE_IFREG && type != AE_IFDIR && type != AE_IFLNK) {
			/* Devices, fifos, sockets: never made on the host. */
			HUTCH__STAT_ADD(job->stats.skipped, 1);
			goto next;
		}
		archive_entry_set_pathname(e, name);
		archive_entry_set_perm(e, archive_entry_perm(e) & ~(mode_t)(S_ISUID | S_ISGID));
		archive_entry_xattr_clear(e);
		archive_entry_acl_clear(e);
		archive_entry_set_fflags(e, 0, 0);

		r = archive_write_header(disk, e);
		if (r == ARCHIVE_FATAL)
			return hutch__error_set(&job->err, HUTCH_EFAILED,
				"cannot write '%.300s': %s", name, archive_error_string(disk));
		if (r < ARCHIVE_WARN) {
			/* What the SECURE_* checks refuse lands here. */
			refuse(job, raw, archive_error_string(disk));
			continue;
		}
		if (hl)
			HUTCH__STAT_ADD(job->stats.hardlinks, 1);
		else if (type == AE_IFREG)
			HUTCH__STAT_ADD(job->stats.files, 1);
		else if (type == AE_IFDIR)
			HUTCH__STAT_ADD(job->stats.dirs, 1);
		else
			HUTCH__STAT_ADD(job->stats.symlinks, 1);
		if (!hl && type == AE_IFREG && copy_data(job, rd, disk, name) < 0)
			return -1;
		r = archive_write_finish_entry(disk);
		if (r == ARCHIVE_FATAL)
			return hutch__error_set(&job->err, HUTCH_EFAILED,
				"cannot write '%.300s': %s", name, archive_error_string(disk));
		if (r < ARCHIVE_WARN)
			refuse(job, raw, archive_error_string(disk));
		continue;
next:
		/* Skip the data of an entry that is not extracted. */
		if (archive_read_data_skip(rd) < ARCHIVE_WARN)
			return hutch__error_set(&job->err, HUTCH_EFAILED,
				"the engine's archive is damaged: %s", archive_error_string(rd));
	}
}

void *hutch__sync_out_worker(void *p)
{
	struct hutch__sync_out *job = p;
	struct unpack u = { .job = job };
	struct archive *rd = NULL, *disk = NULL;
	int rc;

	if (unshare(CLONE_FS) < 0 || fchdir(job->dirfd) < 0) {
		rc = hutch__error_set(&job->err, HUTCH_EFAILED,
				      "cannot give the extraction its own directory: %s",
				      strerror(errno));
		goto out;
	}
	u.buf = malloc(HUTCH_SYNC_BLOCK);
	rd = archive_read_new();
	disk = archive_write_disk_new();
	if (!u.buf || !rd || !disk) {
		rc = hutch__error_oom(&job->err);
		goto out;
	}
	/* Plain tar only: the engines send it uncompressed. */
	if (archive_read_support_format_tar(rd) != ARCHIVE_OK ||
	    archive_write_disk_set_options(disk, EXTRACT_FLAGS) != ARCHIVE_OK ||
	    archive_read_open(rd, &u, NULL, on_read, NULL) != ARCHIVE_OK) {
		rc = hutch__error_set(&job->err, HUTCH_EFAILED,
				      "cannot read the engine's archive: %s",
				      archive_error_string(rd));
		goto out;
	}
	rc = unpack(job, rd, disk);
	/* Directory modes and times are set last, when nothing more will be
	 * written into them. */
	if (archive_write_close(disk) < ARCHIVE_WARN && rc == 0)
		rc = hutch__error_set(&job->err, HUTCH_EFAILED,
				      "cannot finish the extraction: %s",
				      archive_error_string(disk));
out:
	job->rc = rc;
	/* Done and content: drop the padding that follows the archive;
	 * otherwise stop the transfer. */
	hutch__pipe_close_read(job->pipe, rc == 0);
	archive_read_free(rd);
	archive_write_free(disk);
	free(u.buf);
	close(job->dirfd);
	job->dirfd = -1;
	return NULL;
}
