/*
 * sync.c - workspace sync: the HTTP side, the pipe, who owns the files
 *
 * One archive request per sync, on one pooled keep-alive connection.  The
 * calling thread drives the transfer (curl); a worker thread runs
 * libarchive (sync_in.c walks the host tree into a tar, sync_out.c unpacks
 * one); a bounded pipe joins them.  Nothing is buffered beyond the pipe's
 * capacity, whatever the size of the workspace.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <hutch/sync.h>

#include "account.h"
#include "beneath.h"
#include "common.h"
#include "dl.h"
#include "engine_api_exec.h"
#include "engine_internal.h"
#include "error.h"
#include "glob.h"
#include "session_internal.h"
#include "sync_internal.h"

#define WORKSPACE "/workspace"
/* How often the progress callback may run. */
#define PROGRESS_EVERY_MS 100

/* ---- options, paths -------------------------------------------------- */

static int check_opts(const hutch_sync_options *o, hutch_error **err)
{
	if (o && o->version != HUTCH_SYNC_OPTIONS_VERSION)
		return hutch__error_set(
			err, HUTCH_EINVALID,
			"unsupported hutch_sync_options version %u",
			o->version);
	if (o && o->exclude_count && !o->exclude)
		return hutch__error_set(err, HUTCH_EINVALID,
					"exclude_count without exclude");
	for (size_t i = 0; o && i < o->exclude_count; i++)
		if (!o->exclude[i] || !hutch__glob_valid(o->exclude[i]))
			return hutch__error_set(
				err, HUTCH_EINVALID,
				"invalid exclude pattern '%.200s'",
				o->exclude[i] ? o->exclude[i] : "(null)");
	return 0;
}

/*
 * The container path for a PATH argument: "/workspace" or "/workspace/a/b",
 * with "." and empty components dropped and no trailing slash (a trailing
 * slash would make Docker follow a symlink there).  ".." is refused
 * outright rather than resolved: resolving it lexically could still be
 * redirected by a symlink inside the container, and nobody needs it.
 */
static int workspace_path(char **out, const char *path, hutch_error **err)
{
	hutch_buf b = HUTCH_BUF_INIT(PATH_MAX);
	const char *p = path ? path : "";
	char *copy, *tok, *save = NULL;
	int rc = 0;

	if (strcmp(p, WORKSPACE) == 0 ||
	    strncmp(p, WORKSPACE "/", sizeof(WORKSPACE)) == 0)
		p += sizeof(WORKSPACE) - 1;
	else if (p[0] == '/')
		return hutch__error_set(
			err, HUTCH_EINVALID,
			"path '%.200s' is outside the workspace: give a path relative to "
			"/workspace or under it",
			path);
	copy = strdup(p);
	if (!copy || hutch__buf_addstr(&b, WORKSPACE) < 0) {
		free(copy);
		hutch__buf_free(&b);
		return hutch__error_oom(err);
	}
	for (tok = strtok_r(copy, "/", &save); tok;
	     tok = strtok_r(NULL, "/", &save)) {
		if (strcmp(tok, ".") == 0)
			continue;
		if (strcmp(tok, "..") == 0) {
			rc = hutch__error_set(
				err, HUTCH_EINVALID,
				"path '%.200s' must stay under /workspace: '..' is not allowed",
				path);
			break;
		}
		if (hutch__buf_printf(&b, "/%s", tok) < 0) {
			rc = hutch__error_set(err, HUTCH_EINVALID,
					      "path '%.200s' is too long",
					      path);
			break;
		}
	}
	free(copy);
	if (rc < 0) {
		hutch__buf_free(&b);
		return rc;
	}
	*out = hutch__buf_detach(&b, NULL);
	return *out ? 0 : hutch__error_oom(err);
}

/* ---- driving a sync -------------------------------------------------- */

struct driver {
	const hutch_sync_options *opts;
	struct hutch__pipe *pipe;
	hutch_sync_stats *live; /* the worker's counters */
	unsigned long long t0, last_progress;
	int stop; /* cancel or the callback said stop */
	int cancelled;
};

static int driver_check(struct driver *d, int force)
{
	const hutch_sync_options *o = d->opts;
	unsigned long long now;
	hutch_sync_stats snap;

	if (o && o->cancel && hutch_cancel_raised(o->cancel))
		d->cancelled = 1;
	if (!d->cancelled && o && o->progress) {
		now = hutch__now_ms();
		if (force || now - d->last_progress >= PROGRESS_EVERY_MS) {
			d->last_progress = now;
			snap.files = HUTCH__STAT_GET(d->live->files);
			snap.dirs = HUTCH__STAT_GET(d->live->dirs);
			snap.symlinks = HUTCH__STAT_GET(d->live->symlinks);
			snap.hardlinks = HUTCH__STAT_GET(d->live->hardlinks);
			snap.skipped = HUTCH__STAT_GET(d->live->skipped);
			snap.excluded = HUTCH__STAT_GET(d->live->excluded);
			snap.bytes = HUTCH__STAT_GET(d->live->bytes);
			snap.archive_bytes = hutch__pipe_total(d->pipe);
			snap.duration_ms = now - d->t0;
			if (o->progress(&snap, o->payload))
				d->cancelled = 1;
		}
	}
	if (d->cancelled)
		__atomic_store_n(&d->stop, 1, __ATOMIC_RELAXED);
	return d->cancelled ? -1 : 0;
}

/* curl pulls the request body from the pipe. */
static size_t source(char *buf, size_t len, void *payload)
{
	struct driver *d = payload;

	for (;;) {
		ssize_t n = hutch__pipe_read(d->pipe, buf, len, 100);

		if (driver_check(d, 0) < 0)
			return (size_t)-1;
		if (n >= 0)
			return (size_t)n;
		if (n == -1)
			return (size_t)-1; /* the walker failed */
	}
}

/* curl pushes the answer into the pipe. */
static int sink(const char *data, size_t len, void *payload)
{
	struct driver *d = payload;
	int rc = hutch__pipe_write(d->pipe, data, len, &d->stop);

	if (driver_check(d, 0) < 0)
		return 1;
	return rc < 0;
}

static void finish_stats(hutch_sync_stats *out, const hutch_sync_stats *w,
			 struct hutch__pipe *p, unsigned long long t0)
{
	if (!out)
		return;
	*out = *w;
	out->archive_bytes = hutch__pipe_total(p);
	out->duration_ms = hutch__now_ms() - t0;
}

/*
 * The host directory, opened once; every later operation is relative to
 * this descriptor.  No symlink is followed anywhere on its path: when the
 * host directory lies in a tree a sandbox can write (a bind-mounted
 * workspace), the sandbox could otherwise swap a component for a symlink
 * just before it is opened and have sync-out write, or sync-in read, any
 * directory of the host.  A user whose path goes through a symlink gives
 * its real path instead; the message says so.
 */
static int open_hostdir(const char *hostdir, int create, hutch_error **err)
{
	int fd;

	if (!hostdir || !*hostdir)
		return hutch__error_set(err, HUTCH_EINVALID,
					"no host directory given");
	fd = hutch__open_nosymlinks(hostdir, O_RDONLY);
	if (fd < 0 && errno == ENOENT && create) {
		/* Made in its parent, held the same way: a parent swapped
		 * for a symlink makes no directory elsewhere. */
		char *copy = strdup(hostdir), *base;
		const char *parent;
		int pfd = -1;

		if (!copy)
			return hutch__error_oom(err);
		for (size_t n = strlen(copy); n > 1 && copy[n - 1] == '/'; n--)
			copy[n - 1] = '\0';
		base = strrchr(copy, '/');
		if (base) {
			*base++ = '\0';
			parent = *copy ? copy : "/";
		} else {
			base = copy;
			parent = ".";
		}
		pfd = hutch__open_nosymlinks(parent, O_PATH);
		if (pfd >= 0 &&
		    (mkdirat(pfd, base, 0777) == 0 || errno == EEXIST))
			fd = hutch__open_beneath(pfd, base, O_RDONLY);
		else if (pfd >= 0)
			fd = -1;
		int e = errno;
		if (pfd >= 0)
			close(pfd);
		free(copy);
		errno = e;
	}
	if (fd < 0 && errno == ELOOP)
		return hutch__error_set(
			err, HUTCH_EINVALID,
			"host directory '%.200s' goes through a symlink, which hutch "
			"does not follow (a sandbox could have put it there): give "
			"its real path, as `realpath` prints it",
			hostdir);
	if (fd < 0)
		return hutch__error_set(
			err, HUTCH_EINVALID, "%s host directory '%.200s': %s",
			create && errno != ENOTDIR ? "cannot create or open" :
						     "cannot open",
			hostdir,
			errno == ENOTDIR ? "not a directory" : strerror(errno));
	return fd;
}

static int spawn(pthread_t *t, void *(*fn)(void *), void *job,
		 hutch_error **err)
{
	int e = pthread_create(t, NULL, fn, job);

	if (e)
		return hutch__error_set(err, HUTCH_EFAILED,
					"cannot start a thread: %s",
					strerror(e));
	return 0;
}

int hutch_sync_in(hutch_sync_stats *out, hutch_session *s, const char *hostdir,
		  const hutch_sync_options *opts, hutch_error **err)
{
	struct hutch__pipe pipe;
	struct hutch__sync_in job;
	struct driver d = { .opts = opts, .pipe = &pipe, .live = &job.stats };
	hutch_error *herr = NULL;
	pthread_t t;
	int rc, fd;

	d.t0 = hutch__now_ms();
	memset(&job, 0, sizeof(job));
	if ((rc = check_opts(opts, err)) < 0 ||
	    (rc = hutch__dl_archive(err)) < 0)
		return rc;
	fd = open_hostdir(hostdir, 0, err);
	if (fd < 0)
		return fd;
	job.dirfd = fd;
	if (opts) {
		job.exclude = opts->exclude;
		job.exclude_count = opts->exclude_count;
	}
	if ((rc = hutch_session_ensure(s, NULL, err)) < 0 ||
	    (rc = hutch__session_owner(s, &job.uid, &job.gid, err)) < 0) {
		close(fd);
		return rc;
	}
	if (hutch__pipe_init(&pipe, HUTCH_SYNC_PIPE_CAP) < 0) {
		close(fd);
		return hutch__error_oom(err);
	}
	job.pipe = &pipe;
	if ((rc = spawn(&t, hutch__sync_in_worker, &job, err)) < 0) {
		close(fd);
		hutch__pipe_destroy(&pipe);
		return rc;
	}
	/* noOverwriteDirNonDir is left off: what the host has replaces what
	 * the workspace had, as docker cp does. */
	rc = hutch__api_archive_put_stream(s->engine,
					   hutch__session_container(s),
					   WORKSPACE, source, &d,
					   "copy into the workspace", &herr);
	/* Whatever happened, the walker must stop writing now. */
	hutch__pipe_close_read(&pipe, 0);
	pthread_join(t, NULL);
	if (job.rc < 0) {
		/* The walker's failure is the cause of an aborted upload:
		 * report it, not curl's "aborted". */
		hutch_error_free(herr);
		rc = hutch__error_pass(err, job.err, job.rc);
		job.err = NULL;
	} else if (d.cancelled) {
		hutch_error_free(herr);
		rc = hutch__error_set(err, HUTCH_ECANCELLED,
				      "sync-in cancelled");
	} else if (rc < 0) {
		hutch__error_pass(err, herr, rc);
	}
	if (rc < 0) {
		hutch__error_wrap(err, rc, "sync-in '%.200s' to session '%s'",
				  hostdir, hutch_session_name(s));
	} else {
		driver_check(&d, 1);
		finish_stats(out, &job.stats, &pipe, d.t0);
		hutch__session_mark_used(s, job.uid, job.gid);
	}
	hutch_error_free(job.err);
	hutch__pipe_destroy(&pipe);
	return rc;
}

/* What a sync-out came to, once the transfer and the unpacking worker are
 * both done: in this order, a cancel, the transfer's or the engine's
 * error (`herr`, taken), the worker's error, entries it refused. */
static int sync_out_result(const struct driver *d, struct hutch__sync_out *job,
			   int rc, hutch_error *herr, int path_missing,
			   const char *shown, hutch_error **err)
{
	if (d->cancelled) {
		hutch_error_free(herr);
		return hutch__error_set(err, HUTCH_ECANCELLED,
					"sync-out cancelled");
	}
	if (path_missing) {
		rc = hutch__error_set_engine(
			err, HUTCH_ENOTFOUND, 404, herr->engine_message,
			"'%.200s' not found in the workspace", shown);
		hutch_error_free(herr);
		return rc;
	}
	if (rc < 0)
		return hutch__error_pass(err, herr, rc);
	if (job->rc < 0) {
		rc = hutch__error_pass(err, job->err, job->rc);
		job->err = NULL;
		return rc;
	}
	if (job->refused)
		return hutch__error_set(
			err, HUTCH_EFAILED,
			"refused %llu unsafe %s from the container (%s); the rest "
			"was extracted",
			(unsigned long long)job->refused,
			job->refused == 1 ? "entry" : "entries",
			job->first_refused);
	return 0;
}

int hutch_sync_out(hutch_sync_stats *out, hutch_session *s, const char *hostdir,
		   const char *wpath, const hutch_sync_options *opts,
		   hutch_error **err)
{
	struct hutch__pipe pipe;
	struct hutch__sync_out job;
	struct driver d = { .opts = opts, .pipe = &pipe, .live = &job.stats };
	hutch_error *herr = NULL;
	char *cpath = NULL;
	const char *shown;
	pthread_t t;
	int rc, fd = -1, complete, path_missing;

	d.t0 = hutch__now_ms();
	memset(&job, 0, sizeof(job));
	if ((rc = check_opts(opts, err)) < 0 ||
	    (rc = hutch__dl_archive(err)) < 0)
		return rc;
	if ((rc = workspace_path(&cpath, wpath, err)) < 0)
		return rc;
	shown = cpath + sizeof(WORKSPACE) - 1;
	shown = *shown ? shown + 1 : ".";
	fd = open_hostdir(hostdir, 1, err);
	if (fd < 0) {
		free(cpath);
		return fd;
	}
	job.dirfd = fd;
	job.top = strrchr(cpath, '/') + 1;
	if ((rc = hutch_session_ensure(s, NULL, err)) < 0)
		goto early;
	if (hutch__pipe_init(&pipe, HUTCH_SYNC_PIPE_CAP) < 0) {
		rc = hutch__error_oom(err);
		goto early;
	}
	job.pipe = &pipe;
	if ((rc = spawn(&t, hutch__sync_out_worker, &job, err)) < 0) {
		hutch__pipe_destroy(&pipe);
		goto early;
	}
	/* The worker owns job.dirfd now and sets it to -1 when closed. */
	rc = hutch__api_archive_get(s->engine, hutch__session_container(s),
				    cpath, sink, &d, &complete, &path_missing,
				    "copy out of the workspace", &herr);
	hutch__pipe_close_write(&pipe, !(complete && !d.cancelled));
	pthread_join(t, NULL);
	rc = sync_out_result(&d, &job, rc, herr, path_missing, shown, err);
	if (rc < 0) {
		hutch__error_wrap(err, rc,
				  "sync-out of '%.200s' from session '%s'",
				  shown, hutch_session_name(s));
	} else {
		unsigned int uid, gid;

		driver_check(&d, 1);
		finish_stats(out, &job.stats, &pipe, d.t0);
		/* Counts as a use of the session; the record stays its
		 * user's (one inspection more, on a call that moves files). */
		if (hutch__session_owner(s, &uid, &gid, NULL) == 0)
			hutch__session_mark_used(s, uid, gid);
	}
	hutch_error_free(job.err);
	hutch__pipe_destroy(&pipe);
early:
	if (job.dirfd >= 0)
		close(job.dirfd);
	free(cpath);
	return rc;
}
