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
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include <hutch/sync.h>

#include "agent_blob.h"
#include "beneath.h"
#include "common.h"
#include "dl.h"
#include "engine_api_exec.h"
#include "engine_internal.h"
#include "error.h"
#include "exec_internal.h"
#include "glob.h"
#include "json.h"
#include "secrets.h"
#include "session_internal.h"
#include "sync_internal.h"

#define WORKSPACE "/workspace"
/* How often the progress callback may run. */
#define PROGRESS_EVERY_MS 100
/* The agent's answer to an untar: a few counts, or one error. */
#define UNTAR_ANSWER_MAX (64u * 1024u)
/* sync-in: how long the agent may leave its input unread, or take to
 * end once it has it all; and to end after a cancel. */
#define SYNC_IN_STALL_MS 120000
#define SYNC_IN_CANCEL_GRACE_MS 2000
/* A run of the agent that only marks a use of the session. */
#define MARK_USED_TIMEOUT_MS 10000

/* ---- options, paths -------------------------------------------------- */

/* The caller's options as version 2 in `o` (a version-1 caller's end
 * before `dest`: the rest get their defaults), checked. */
static int take_opts(hutch_sync_options *o, const hutch_sync_options *in,
		     hutch_error **err)
{
	static const hutch_sync_options defaults = HUTCH_SYNC_OPTIONS_INIT;

	*o = defaults;
	if (in && in->version != 1 && in->version != 2)
		return hutch__error_set(
			err, HUTCH_EINVALID,
			"unsupported hutch_sync_options version %u (1 or 2)",
			in->version);
	if (in && in->version == 1)
		memcpy(o, in, offsetof(hutch_sync_options, dest));
	else if (in)
		*o = *in;
	o->version = HUTCH_SYNC_OPTIONS_VERSION;
	if (o->exclude_count && !o->exclude)
		return hutch__error_set(err, HUTCH_EINVALID,
					"exclude_count without exclude");
	for (size_t i = 0; i < o->exclude_count; i++)
		if (!o->exclude[i] || !hutch__glob_valid(o->exclude[i]))
			return hutch__error_set(
				err, HUTCH_EINVALID,
				"invalid exclude pattern '%.200s'",
				o->exclude[i] ? o->exclude[i] : "(null)");
	/* One plain component: AS is made relative to the held host
	 * directory, and a '/' or ".." would reach past it. */
	if (o->as &&
	    (!*o->as || strchr(o->as, '/') || strcmp(o->as, ".") == 0 ||
	     strcmp(o->as, "..") == 0 || strlen(o->as) > NAME_MAX))
		return hutch__error_set(
			err, HUTCH_EINVALID,
			"the name to copy as, '%.200s', must be one file name "
			"(no '/', not '.' or '..')",
			o->as);
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
	/* sync-in: when the agent last asked for input, and when its input
	 * ended; read by the watchdog (atomics). */
	unsigned long long asked_at, ended_at;
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

/*
 * The exec's input (the agent's stdin): the walker's archive, from the
 * pipe.  A failed walk or a cancel ends the input rather than the
 * command: the archive then has no end marker (the walker writes none
 * after a failure), so the agent says it was cut and removes the file it
 * was writing, which a kill would leave.  The watchdog kills an agent
 * that does not end soon after.
 */
static long feed(char *buf, size_t len, void *payload)
{
	struct driver *d = payload;
	ssize_t n;

	for (;;) {
		__atomic_store_n(&d->asked_at, hutch__now_ms(),
				 __ATOMIC_RELAXED);
		n = hutch__pipe_read(d->pipe, buf, len, 100);
		if (driver_check(d, 0) < 0 || n == -1)
			n = 0;
		if (n >= 0)
			break;
	}
	if (n == 0)
		__atomic_store_n(&d->ended_at, hutch__now_ms(),
				 __ATOMIC_RELAXED);
	return (long)n;
}

/* The agent unpacking, watched from a thread of its own. */
struct watchdog {
	struct driver *d;
	hutch_cancel *kill; /* the exec's cancel */
	pthread_t thread;
	int done;    /* the exec returned (atomic) */
	int stalled; /* killed for not reading (atomic) */
};

/*
 * Kill the unpacking when the agent leaves its input unread for
 * SYNC_IN_STALL_MS (a session can stop its own processes: SIGSTOP, a
 * frozen cgroup) or does not end within SYNC_IN_STALL_MS of its input's
 * end, or within SYNC_IN_CANCEL_GRACE_MS of a cancel: without
 * it, a session could hold the caller's sync-in for ever.
 */
static void *watch(void *p)
{
	struct watchdog *w = p;
	const hutch_sync_options *o = w->d->opts;
	unsigned long long cancel_seen = 0;

	while (!__atomic_load_n(&w->done, __ATOMIC_ACQUIRE)) {
		unsigned long long now = hutch__now_ms();
		unsigned long long asked =
			__atomic_load_n(&w->d->asked_at, __ATOMIC_RELAXED);
		unsigned long long ended =
			__atomic_load_n(&w->d->ended_at, __ATOMIC_RELAXED);
		unsigned long long since = ended ? ended : asked;

		/* A cancel ends the input (feed); the agent then ends by
		 * itself, or is killed. */
		if (!cancel_seen && o->cancel && hutch_cancel_raised(o->cancel))
			cancel_seen = now;
		if (cancel_seen &&
		    now - cancel_seen > SYNC_IN_CANCEL_GRACE_MS) {
			hutch_cancel_raise(w->kill);
			break;
		}
		if (now - since > SYNC_IN_STALL_MS) {
			__atomic_store_n(&w->stalled, 1, __ATOMIC_RELAXED);
			hutch_cancel_raise(w->kill);
			break;
		}
		hutch__sleep_ms(100);
	}
	return NULL;
}

/* The agent's error code in an answer, as hutch's. */
static int agent_code(const char *code)
{
#define ROW(word, legacy, hutch_code) { word, hutch_code },
	static const struct {
		const char *name;
		int code;
	} map[] = { HUTCH_AGENT_ERRORS(ROW) };
#undef ROW

	for (size_t i = 0; code && i < HUTCH_ARRAY_SIZE(map); i++)
		if (strcmp(code, map[i].name) == 0)
			return map[i].code;
	return HUTCH_EFAILED;
}

/*
 * Unpack the archive the walker writes into /workspace/`dest` ("." for
 * the workspace itself) by the agent's "untar", which runs as the
 * session's user (src/agent/untar.c says why not the engine's archive
 * PUT: the engine extracts as root through what the session made of its
 * workspace).  0, or the agent's error as hutch's.
 */
static int unpack_in_session(hutch_session *s, const char *dest,
			     struct driver *d, hutch_error **err)
{
	const char *argv[] = { HUTCH_AGENT_RUN_PATH, HUTCH_AGENT_CMD_UNTAR,
			       "--", dest, NULL };
	hutch_exec_options eo = HUTCH_EXEC_OPTIONS_INIT;
	const hutch__secrets *secrets = hutch__session_redaction(s);
	hutch_exec_result *res = NULL;
	json_object *doc = NULL, *error = NULL, *v;
	const char *data, *errdata, *code = NULL, *msg = NULL;
	size_t len, errlen;
	struct watchdog w = { .d = d };
	int rc, status, e;

	eo.argv = argv;
	eo.argc = 4;
	eo.capture = 1;
	eo.max_output = UNTAR_ANSWER_MAX;
	eo.timeout_ms = 0; /* as long as the host tree takes: watched */
	eo.on_input = feed;
	eo.input_payload = d;
	if ((rc = hutch_cancel_new(&w.kill, err)) < 0)
		return rc;
	eo.cancel = w.kill;
	__atomic_store_n(&d->asked_at, hutch__now_ms(), __ATOMIC_RELAXED);
	if ((e = pthread_create(&w.thread, NULL, watch, &w)) != 0) {
		hutch_cancel_free(w.kill);
		return hutch__error_set(err, HUTCH_EFAILED,
					"cannot start a thread: %s",
					strerror(e));
	}
	rc = hutch__exec_run(&res, s, &eo, HUTCH__EXEC_RAW, err);
	__atomic_store_n(&w.done, 1, __ATOMIC_RELEASE);
	pthread_join(w.thread, NULL);
	hutch_cancel_free(w.kill);
	if (rc < 0)
		return rc;
	if (__atomic_load_n(&w.stalled, __ATOMIC_RELAXED)) {
		rc = hutch__error_set(
			err, HUTCH_ETIMEOUT,
			"the agent in the session left the copy unread for %d s "
			"(a process of the session stopped it?): the copy was "
			"ended",
			SYNC_IN_STALL_MS / 1000);
		goto out;
	}
	if ((rc = hutch__exec_failure(res, "copy into the workspace", 0, err)) <
	    0)
		goto out;
	status = hutch_exec_result_exit_code(res);
	hutch_exec_result_output(res, HUTCH_STREAM_STDOUT, &data, &len, NULL,
				 NULL);
	hutch_exec_result_output(res, HUTCH_STREAM_STDERR, &errdata, &errlen,
				 NULL, NULL);
	doc = hutch__json_parse(data, len);
	if (doc && json_object_object_get_ex(doc, "error", &error)) {
		if (json_object_object_get_ex(error, "code", &v) &&
		    json_object_is_type(v, json_type_string))
			code = json_object_get_string(v);
		if (json_object_object_get_ex(error, "message", &v) &&
		    json_object_is_type(v, json_type_string))
			msg = json_object_get_string(v);
	}
	if (status == HUTCH_AGENT_EXIT_OK && doc && !error) {
		rc = 0;
	} else if (msg) {
		rc = hutch__error_set(err, agent_code(code), "%s", msg);
	} else {
		rc = hutch__error_set(
			err, HUTCH_EPROTO,
			"the agent's unpacking ended with exit %d and no "
			"answer: %.200s",
			status, errlen ? errdata : data);
	}
	/* Messages quote names of the caller's files. */
	if (rc < 0)
		hutch__error_redact(err ? *err : NULL, secrets);
out:
	json_object_put(doc);
	hutch_exec_result_free(res);
	return rc;
}

/*
 * The host path to copy in: a directory (an fd to list it, *single
 * NULL) or a regular file (a bare handle, *single its name), opened once
 * without following a symlink anywhere on its path (open_hostdir says
 * why).
 */
static int open_source(const char *path, const char **single, hutch_error **err)
{
	struct stat st;
	int fd, dfd;

	*single = NULL;
	if (!path || !*path)
		return hutch__error_set(err, HUTCH_EINVALID,
					"no host path given");
	fd = hutch__open_any_nosymlinks(path, O_PATH);
	if (fd < 0 && errno == ELOOP)
		return hutch__error_set(
			err, HUTCH_EINVALID,
			"host path '%.200s' goes through a symlink, which hutch "
			"does not follow (a sandbox could have put it there): give "
			"its real path, as `realpath` prints it",
			path);
	if (fd < 0)
		return hutch__error_set(err, HUTCH_EINVALID,
					"cannot open host path '%.200s': %s",
					path, strerror(errno));
	if (fstat(fd, &st) < 0) {
		int e = errno;

		close(fd);
		return hutch__error_set(err, HUTCH_EINVALID,
					"cannot open host path '%.200s': %s",
					path, strerror(e));
	}
	if (S_ISREG(st.st_mode)) {
		const char *base = strrchr(path, '/');

		/* The handle is what is read (add_handle checks it). */
		*single = base ? base + 1 : path;
		return fd;
	}
	if (!S_ISDIR(st.st_mode)) {
		close(fd);
		return hutch__error_set(
			err, HUTCH_EINVALID,
			"host path '%.200s' is neither a directory nor a "
			"regular file",
			path);
	}
	/* This very directory, opened for listing. */
	dfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	close(fd);
	if (dfd < 0)
		return hutch__error_set(
			err, HUTCH_EINVALID,
			"cannot open host directory '%.200s': %s", path,
			strerror(errno));
	return dfd;
}

int hutch_sync_in(hutch_sync_stats *out, hutch_session *s, const char *hostdir,
		  const hutch_sync_options *opts, hutch_error **err)
{
	hutch_sync_options o;
	struct hutch__pipe pipe;
	struct hutch__sync_in job;
	struct driver d = { .opts = &o, .pipe = &pipe, .live = &job.stats };
	char *cpath = NULL, *rel, *slash, name[NAME_MAX + 1];
	const char *dest;
	pthread_t t;
	int rc, fd;

	d.t0 = hutch__now_ms();
	memset(&job, 0, sizeof(job));
	if ((rc = take_opts(&o, opts, err)) < 0 ||
	    (rc = hutch__dl_archive(err)) < 0 ||
	    (rc = workspace_path(&cpath, o.dest, err)) < 0)
		return rc;
	/* "/workspace[/a/b]": the agent takes it relative. */
	rel = cpath + sizeof(WORKSPACE) - 1;
	dest = *rel ? rel + 1 : ".";
	fd = open_source(hostdir, &job.single, err);
	if (fd < 0) {
		free(cpath);
		return fd;
	}
	job.dirfd = fd;
	if (job.single && strcmp(dest, ".") != 0) {
		/* A file given a destination is written as it: the agent
		 * unpacks into its directory, under its name. */
		slash = strrchr(rel + 1, '/');
		if (strlen(slash ? slash + 1 : rel + 1) >= sizeof(name)) {
			rc = hutch__error_set(
				err, HUTCH_EINVALID,
				"the name '%.200s...' is longer than %d bytes",
				slash ? slash + 1 : rel + 1, NAME_MAX);
			goto early;
		}
		snprintf(name, sizeof(name), "%s", slash ? slash + 1 : rel + 1);
		if (slash)
			*slash = '\0';
		else
			dest = ".";
		job.single = name;
	}
	if (job.single && strlen(job.single) > NAME_MAX) {
		rc = hutch__error_set(err, HUTCH_EINVALID,
				      "the name '%.200s' is too long",
				      job.single);
		goto early;
	}
	job.exclude = o.exclude;
	job.exclude_count = o.exclude_count;
	if ((rc = hutch_session_ensure(s, NULL, err)) < 0)
		goto early;
	if (hutch__pipe_init(&pipe, HUTCH_SYNC_PIPE_CAP) < 0) {
		rc = hutch__error_oom(err);
		goto early;
	}
	job.pipe = &pipe;
	if ((rc = spawn(&t, hutch__sync_in_worker, &job, err)) < 0) {
		hutch__pipe_destroy(&pipe);
		goto early;
	}
	/* The worker owns job.dirfd now. */
	fd = -1;
	{
		hutch_error *herr = NULL;

		rc = unpack_in_session(s, dest, &d, &herr);
		/* Whatever happened, the walker must stop writing now. */
		hutch__pipe_close_read(&pipe, 0);
		pthread_join(t, NULL);
		if (job.rc < 0) {
			/* The walker's failure is the cause of a stopped
			 * upload: report it, not the cut archive. */
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
	}
	if (rc < 0) {
		hutch__error_wrap(err, rc, "sync-in '%.200s' to session '%s'",
				  hostdir, hutch_session_name(s));
	} else {
		driver_check(&d, 1);
		finish_stats(out, &job.stats, &pipe, d.t0);
	}
	hutch_error_free(job.err);
	hutch__pipe_destroy(&pipe);
	free(cpath);
	return rc;
early:
	if (fd >= 0)
		close(fd);
	free(cpath);
	return rc;
}

/*
 * A sync-out counts as a use of the session (hutch gc): the agent's "used"
 * marks it as every command does, as the session's user.  Not a PUT of
 * the record: the engine would write it as root in a directory every
 * user of the session can write, and follow a symlink put there in time.
 * Best effort: a failure here does not fail the copy.
 */
static void mark_used(hutch_session *s)
{
	const char *argv[] = { HUTCH_AGENT_RUN_PATH, HUTCH_AGENT_CMD_USED,
			       NULL };
	hutch_exec_options eo = HUTCH_EXEC_OPTIONS_INIT;
	hutch_exec_result *res = NULL;

	eo.argv = argv;
	eo.argc = 2;
	eo.timeout_ms = MARK_USED_TIMEOUT_MS;
	if (hutch__exec_run(&res, s, &eo, HUTCH__EXEC_RAW, NULL) == 0)
		hutch_exec_result_free(res);
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
	hutch_sync_options o;
	struct hutch__pipe pipe;
	struct hutch__sync_out job;
	struct driver d = { .opts = &o, .pipe = &pipe, .live = &job.stats };
	hutch_error *herr = NULL;
	char *cpath = NULL;
	const char *shown;
	pthread_t t;
	int rc, fd = -1, complete, path_missing;

	d.t0 = hutch__now_ms();
	memset(&job, 0, sizeof(job));
	if ((rc = take_opts(&o, opts, err)) < 0 ||
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
	job.as = o.as;
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
		driver_check(&d, 1);
		finish_stats(out, &job.stats, &pipe, d.t0);
		mark_used(s);
	}
	hutch_error_free(job.err);
	hutch__pipe_destroy(&pipe);
early:
	if (job.dirfd >= 0)
		close(job.dirfd);
	free(cpath);
	return rc;
}
