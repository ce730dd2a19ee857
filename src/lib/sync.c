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
#include <archive.h>
#include <archive_entry.h>
#include <json-c/json.h>

#include <hutch/sync.h>

#include "beneath.h"
#include "common.h"
#include "engine_internal.h"
#include "error.h"
#include "glob.h"
#include "session_internal.h"
#include "sync_internal.h"

#define WORKSPACE "/workspace"
/* How often the progress callback may run. */
#define PROGRESS_EVERY_MS 100
/* Largest /etc/passwd or /etc/group read to resolve the session user. */
#define MAX_ACCOUNT_DB (1024u * 1024u)

/* ---- the pipe -------------------------------------------------------- */

int hutch__pipe_init(struct hutch__pipe *p, size_t cap)
{
	pthread_condattr_t ca;

	memset(p, 0, sizeof(*p));
	p->buf = malloc(cap);
	if (!p->buf)
		return -1;
	p->cap = cap;
	pthread_mutex_init(&p->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&p->cv, &ca);
	pthread_condattr_destroy(&ca);
	return 0;
}

void hutch__pipe_destroy(struct hutch__pipe *p)
{
	if (!p->buf)
		return;
	pthread_cond_destroy(&p->cv);
	pthread_mutex_destroy(&p->mu);
	free(p->buf);
	p->buf = NULL;
}

static void wait_ms(struct hutch__pipe *p, int ms)
{
	struct timespec ts;

	if (ms < 0) {
		pthread_cond_wait(&p->cv, &p->mu);
		return;
	}
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_cond_timedwait(&p->cv, &p->mu, &ts);
}

int hutch__pipe_write(struct hutch__pipe *p, const void *data, size_t len,
		      const volatile int *stop)
{
	const char *d = data;
	int rc = 0;

	pthread_mutex_lock(&p->mu);
	while (len > 0) {
		size_t tail, n;

		if (p->rdiscard) {
			p->total += len;
			break;
		}
		if (p->rgone || p->wdone) {
			rc = -1;
			break;
		}
		if (p->len == p->cap) {
			if (stop && __atomic_load_n(stop, __ATOMIC_RELAXED)) {
				rc = -2;
				break;
			}
			wait_ms(p, stop ? 100 : -1);
			continue;
		}
		tail = (p->head + p->len) % p->cap;
		n = p->cap - p->len;
		if (n > p->cap - tail)
			n = p->cap - tail;
		if (n > len)
			n = len;
		memcpy(p->buf + tail, d, n);
		p->len += n;
		p->total += n;
		d += n;
		len -= n;
		pthread_cond_broadcast(&p->cv);
	}
	pthread_mutex_unlock(&p->mu);
	return rc;
}

ssize_t hutch__pipe_read(struct hutch__pipe *p, void *buf, size_t len,
			 int timeout_ms)
{
	ssize_t rc;
	size_t n;

	pthread_mutex_lock(&p->mu);
	for (;;) {
		if (p->wfailed) {
			rc = -1;
			break;
		}
		if (p->len > 0) {
			n = p->cap - p->head;
			if (n > p->len)
				n = p->len;
			if (n > len)
				n = len;
			memcpy(buf, p->buf + p->head, n);
			p->head = (p->head + n) % p->cap;
			p->len -= n;
			rc = (ssize_t)n;
			pthread_cond_broadcast(&p->cv);
			break;
		}
		if (p->wdone) {
			rc = 0;
			break;
		}
		if (timeout_ms >= 0) {
			wait_ms(p, timeout_ms);
			if (p->len == 0 && !p->wdone && !p->wfailed) {
				rc = -2;
				break;
			}
			continue;
		}
		wait_ms(p, -1);
	}
	pthread_mutex_unlock(&p->mu);
	return rc;
}

void hutch__pipe_close_write(struct hutch__pipe *p, int failed)
{
	pthread_mutex_lock(&p->mu);
	p->wdone = 1;
	if (failed)
		p->wfailed = 1;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
}

void hutch__pipe_close_read(struct hutch__pipe *p, int discard)
{
	pthread_mutex_lock(&p->mu);
	if (discard)
		p->rdiscard = 1;
	else
		p->rgone = 1;
	p->len = 0;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
}

uint64_t hutch__pipe_total(struct hutch__pipe *p)
{
	uint64_t t;

	pthread_mutex_lock(&p->mu);
	t = p->total;
	pthread_mutex_unlock(&p->mu);
	return t;
}

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

/* ---- who owns what sync-in writes ------------------------------------ */

/* Look NAME (or a numeric id) up in a passwd or group file; `field` 2 is
 * the id, 3 the passwd entry's group.  -1 when it is not there. */
static long account_lookup(const char *db, const char *name, int field)
{
	const char *line = db;

	while (line && *line) {
		const char *end = strchr(line, '\n'), *f[5] = { line };
		size_t len = end ? (size_t)(end - line) : strlen(line);
		int k = 1;

		for (size_t i = 0; i < len && k < 5; i++)
			if (line[i] == ':')
				f[k++] = line + i + 1;
		if (k >= 4 && (size_t)(f[1] - f[0] - 1) == strlen(name) &&
		    strncmp(f[0], name, strlen(name)) == 0) {
			char *e;
			long v = strtol(f[field], &e, 10);

			if (e != f[field] && *e == ':' && v >= 0)
				return v;
		}
		line = end ? end + 1 : NULL;
	}
	return -1;
}

/* One small file from the container, via the archive API: NULL when
 * missing (then *status, when given, is the engine's answer: 404 when the
 * file is not there, 0 when the engine could not be asked). */
static char *container_file_status(hutch_session *s, const char *path,
				   long *status, hutch_error **err)
{
	hutch__request req = { .method = "GET" };
	hutch__response resp = HUTCH__RESPONSE_INIT;
	struct archive *a = NULL;
	struct archive_entry *entry;
	char url[512], *esc = hutch__url_escape(path), *data = NULL;
	la_int64_t size;

	if (!esc) {
		hutch__error_oom(err);
		return NULL;
	}
	snprintf(url, sizeof(url), "/containers/%s/archive?path=%s",
		 hutch__session_container(s), esc);
	free(esc);
	req.path = url;
	if (hutch__http(s->engine, &req, &resp, err) < 0)
		resp.status = 0;
	if (status)
		*status = resp.status;
	if (resp.status != 200)
		goto out;
	a = archive_read_new();
	if (!a || archive_read_support_format_tar(a) != ARCHIVE_OK ||
	    archive_read_open_memory(a, resp.body.data, resp.body.len) !=
		    ARCHIVE_OK ||
	    archive_read_next_header(a, &entry) != ARCHIVE_OK ||
	    archive_entry_filetype(entry) != AE_IFREG)
		goto out;
	size = archive_entry_size(entry);
	if (size < 0 || size > (la_int64_t)MAX_ACCOUNT_DB)
		goto out;
	data = calloc(1, (size_t)size + 1);
	if (data &&
	    archive_read_data(a, data, (size_t)size) != (la_ssize_t)size) {
		free(data);
		data = NULL;
	}
out:
	archive_read_free(a);
	hutch__response_free(&resp);
	return data;
}

static char *container_file(hutch_session *s, const char *path,
			    hutch_error **err)
{
	return container_file_status(s, path, NULL, err);
}

/*
 * The uid and gid that sync-in writes into every tar header: the session
 * user's.  This is the one place that decides it.
 *
 * Both engines honour the numeric uid/gid of the headers on PUT (Docker
 * 20.10 and Podman 4.3.1, measured).  Their own "copyUIDGID=1" is not
 * used: Docker 20.10 resolves a named user with the host's getent and
 * fails ("getent unable to find entry"), and with no user it keeps the
 * headers anyway; Podman chowns to the container's user.  So hutch
 * resolves the user itself, from the container's Config.User and its
 * /etc/passwd and /etc/group, and writes the numbers.  The session user
 * is the one hutch created the container with (session.c: the image's
 * "sandbox" user, 1000:1000, a bind mount's owner, or --user).
 */
static int sync_owner(hutch_session *s, unsigned int *uid, unsigned int *gid,
		      hutch_error **err)
{
	json_object *obj = NULL, *cfg, *v;
	char path[256], user[256] = "", *grp, *passwd = NULL, *group = NULL, *e;
	long u = 0, g = -1;
	int rc;

	snprintf(path, sizeof(path), "/containers/%s/json",
		 hutch__session_container(s));
	rc = hutch__engine_call(s->engine, "GET", path, NULL, &obj, NULL,
				"inspect the session's container", err);
	if (rc < 0)
		return rc;
	if (json_object_object_get_ex(obj, "Config", &cfg) &&
	    json_object_object_get_ex(cfg, "User", &v) &&
	    json_object_is_type(v, json_type_string))
		snprintf(user, sizeof(user), "%s", json_object_get_string(v));
	json_object_put(obj);
	*uid = 0;
	*gid = 0;
	if (!user[0])
		return 0; /* the engine runs as root */
	grp = strchr(user, ':');
	if (grp)
		*grp++ = '\0';
	u = strtol(user, &e, 10);
	if (!user[0] || *e || u < 0) {
		passwd = container_file(s, "/etc/passwd", NULL);
		u = passwd ? account_lookup(passwd, user, 2) : -1;
		if (u < 0) {
			free(passwd);
			return hutch__error_set(
				err, HUTCH_EFAILED,
				"session user '%.100s' is not in the container's /etc/passwd",
				user);
		}
	}
	if (grp && *grp) {
		g = strtol(grp, &e, 10);
		if (*e || g < 0) {
			group = container_file(s, "/etc/group", NULL);
			g = group ? account_lookup(group, grp, 2) : -1;
			free(group);
			if (g < 0) {
				free(passwd);
				return hutch__error_set(
					err, HUTCH_EFAILED,
					"session group '%.100s' is not in the container's /etc/group",
					grp);
			}
		}
	} else {
		/* A user without a group gets its passwd entry's group, as
		 * the engines do for processes; 0 when there is none. */
		char id[32];

		if (!passwd)
			passwd = container_file(s, "/etc/passwd", NULL);
		if (passwd) {
			const char *line = passwd;

			/* Find the entry by uid when the user was numeric. */
			snprintf(id, sizeof(id), "%ld", u);
			g = account_lookup(passwd, user, 3);
			while (g < 0 && line && *line) {
				const char *f2 = strchr(line, ':');

				f2 = f2 ? strchr(f2 + 1, ':') : NULL;
				if (f2 &&
				    strncmp(f2 + 1, id, strlen(id)) == 0 &&
				    f2[1 + strlen(id)] == ':')
					g = strtol(f2 + 2 + strlen(id), NULL,
						   10);
				line = strchr(line, '\n');
				line = line ? line + 1 : NULL;
			}
		}
		if (g < 0)
			g = 0;
	}
	free(passwd);
	*uid = (unsigned int)u;
	*gid = (unsigned int)g;
	return 0;
}

int hutch__session_owner(hutch_session *s, unsigned int *uid, unsigned int *gid,
			 hutch_error **err)
{
	return sync_owner(s, uid, gid, err);
}

long hutch__account_id(hutch_session *s, const char *name, long *gid)
{
	long status = 0;
	char *passwd = container_file_status(s, "/etc/passwd", &status, NULL);
	long u = passwd ? account_lookup(passwd, name, 2) : -1;

	if (gid)
		*gid = passwd ? account_lookup(passwd, name, 3) : -1;
	free(passwd);
	/* Not read, and not because it is missing: nobody knows. */
	return !passwd && status != 404 && status != 200 ? -2 : u;
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
	hutch__request req = { .method = "PUT",
			       .source = source,
			       .source_payload = &d,
			       .content_type = "application/x-tar" };
	hutch__response resp = HUTCH__RESPONSE_INIT;
	char path[256];
	pthread_t t;
	int rc, fd;

	d.t0 = hutch__now_ms();
	memset(&job, 0, sizeof(job));
	if ((rc = check_opts(opts, err)) < 0)
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
	    (rc = sync_owner(s, &job.uid, &job.gid, err)) < 0) {
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
	snprintf(path, sizeof(path),
		 "/containers/%s/archive?path=%%2Fworkspace",
		 hutch__session_container(s));
	req.path = path;
	{
		hutch_error *herr = NULL;

		rc = hutch__http(s->engine, &req, &resp, &herr);
		/* Whatever happened, the walker must stop writing now. */
		hutch__pipe_close_read(&pipe, 0);
		pthread_join(t, NULL);
		if (job.rc < 0) {
			/* The walker's failure is the cause of an aborted
			 * upload: report it, not curl's "aborted". */
			hutch_error_free(herr);
			rc = job.rc;
			if (err)
				*err = job.err;
			else
				hutch_error_free(job.err);
			job.err = NULL;
		} else if (d.cancelled) {
			hutch_error_free(herr);
			rc = hutch__error_set(err, HUTCH_ECANCELLED,
					      "sync-in cancelled");
		} else if (rc < 0) {
			if (err)
				*err = herr;
			else
				hutch_error_free(herr);
		} else if (resp.status != 200) {
			rc = hutch__engine_error(err, resp.status,
						 resp.body.data, resp.body.len,
						 "copy into the workspace");
		}
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
	hutch__response_free(&resp);
	hutch__pipe_destroy(&pipe);
	return rc;
}

/* Docker says 404 both for a missing container and a missing path; its
 * message tells them apart (Podman: "no container with name or ID"). */
static int container_missing(const char *body, size_t len)
{
	char *msg = hutch__engine_error_message(body, len);
	int missing = msg && (strstr(msg, "No such container") ||
			      strstr(msg, "no container with"));

	free(msg);
	return missing;
}

int hutch_sync_out(hutch_sync_stats *out, hutch_session *s, const char *hostdir,
		   const char *wpath, const hutch_sync_options *opts,
		   hutch_error **err)
{
	struct hutch__pipe pipe;
	struct hutch__sync_out job;
	struct driver d = { .opts = opts, .pipe = &pipe, .live = &job.stats };
	hutch__request req = { .method = "GET",
			       .sink = sink,
			       .sink_payload = &d };
	hutch__response resp = HUTCH__RESPONSE_INIT;
	char *cpath = NULL, *esc = NULL, *url = NULL;
	const char *shown;
	pthread_t t;
	int rc, fd = -1;

	d.t0 = hutch__now_ms();
	memset(&job, 0, sizeof(job));
	if ((rc = check_opts(opts, err)) < 0)
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
	esc = hutch__url_escape(cpath);
	if (!esc || asprintf(&url, "/containers/%s/archive?path=%s",
			     hutch__session_container(s), esc) < 0) {
		url = NULL;
		rc = hutch__error_oom(err);
		goto early;
	}
	req.path = url;
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
	{
		hutch_error *herr = NULL;
		int ok;

		rc = hutch__http(s->engine, &req, &resp, &herr);
		ok = rc == 0 && resp.status == 200 && !resp.sink_aborted &&
		     !d.cancelled;
		hutch__pipe_close_write(&pipe, !ok);
		pthread_join(t, NULL);
		if (d.cancelled) {
			rc = hutch__error_set(err, HUTCH_ECANCELLED,
					      "sync-out cancelled");
		} else if (rc < 0) {
			if (err)
				*err = herr;
			else
				hutch_error_free(herr);
			herr = NULL;
		} else if (resp.status == 404 &&
			   !container_missing(resp.body.data, resp.body.len)) {
			char *m = hutch__engine_error_message(resp.body.data,
							      resp.body.len);

			rc = hutch__error_set_engine(
				err, HUTCH_ENOTFOUND, 404, m,
				"'%.200s' not found in the workspace", shown);
			free(m);
		} else if (resp.status != 200) {
			rc = hutch__engine_error(err, resp.status,
						 resp.body.data, resp.body.len,
						 "copy out of the workspace");
		} else if (job.rc < 0) {
			rc = job.rc;
			if (err)
				*err = job.err;
			else
				hutch_error_free(job.err);
			job.err = NULL;
		} else if (job.refused) {
			rc = hutch__error_set(
				err, HUTCH_EFAILED,
				"refused %llu unsafe %s from the container (%s); the rest "
				"was extracted",
				(unsigned long long)job.refused,
				job.refused == 1 ? "entry" : "entries",
				job.first_refused);
		}
		hutch_error_free(herr);
	}
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
		if (sync_owner(s, &uid, &gid, NULL) == 0)
			hutch__session_mark_used(s, uid, gid);
	}
	hutch_error_free(job.err);
	hutch__pipe_destroy(&pipe);
early:
	if (job.dirfd >= 0)
		close(job.dirfd);
	hutch__response_free(&resp);
	free(url);
	free(esc);
	free(cpath);
	return rc;
}
