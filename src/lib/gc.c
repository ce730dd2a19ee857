/*
 * gc.c - when sessions were last used, and removing the idle ones
 *
 * The record is the mtime of /.hutch/use/last-used on the session's system
 * volume, kept by the agent (src/agent/main.c) at the start of the
 * container and of every command: the hot path makes no request for it.
 * It is read here with one HEAD of the archive API, whose answer carries
 * the file's stat (X-Docker-Container-Path-Stat): Docker and Podman, on
 * running and stopped containers alike.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <json-c/json.h>

#include "agent_blob.h"
#include "agent_chan.h"
#include "common.h"
#include "engine_api.h"
#include "engine_api_exec.h"
#include "engine_internal.h"
#include "error.h"
#include "glob.h"
#include "session_internal.h"
#include "timestamp.h"

/* A record up to this far ahead of hutch's clock is the engine host's
 * clock being a little ahead; beyond, it was forged from inside. */
#define FUTURE_SLACK_S 300

/* The record's time, 0 with *found = 0 when the file (or the container)
 * is not there. */
static int read_record(hutch_engine *e, const char *container, long long *out,
		       int *found, hutch_error **err)
{
	char stat[1024];
	int rc;

	*found = 0;
	rc = hutch__api_archive_stat(e, container, HUTCH_LAST_USED_PATH, stat,
				     sizeof(stat), err);
	/*
	 * 200: its stat.  404: no record (or no container, which the caller's
	 * inspection tells).  Anything else: the sandbox can put what it
	 * likes in place of the record (a symlink with a 4 KiB target makes
	 * both engines answer 500), so an unreadable record is no record and
	 * the caller falls back to the container's own times; a broken engine
	 * fails that inspection instead.  A sandbox gains nothing by it: the
	 * container's times are never later than its real last use.
	 */
	if (rc == 1)
		*found = hutch__path_stat_mtime(stat, out) == 0;
	return rc < 0 ? rc : 0;
}

static long long json_time(json_object *obj, const char *key)
{
	json_object *v;
	long long t;

	if (obj && json_object_object_get_ex(obj, key, &v) &&
	    json_object_is_type(v, json_type_string) &&
	    hutch__time_parse(json_object_get_string(v), &t) == 0)
		return t;
	return 0;
}

static long long max_ll(long long a, long long b)
{
	return a > b ? a : b;
}

/* The latest of the container's creation, start and stop: a session
 * without a record.  HUTCH_ENOTFOUND when the container is gone. */
static int container_times(hutch_engine *e, const char *container,
			   long long *out, hutch_error **err)
{
	json_object *obj = NULL, *st = NULL;
	int rc;

	rc = hutch__api_container_inspect(
		e, container, &obj, "inspect the session's container", err);
	if (rc < 0)
		return rc;
	json_object_object_get_ex(obj, "State", &st);
	*out = max_ll(json_time(obj, "Created"),
		      max_ll(json_time(st, "StartedAt"),
			     json_time(st, "FinishedAt")));
	json_object_put(obj);
	return 0;
}

/* A volume's creation time; 0 when it is not there. */
static int volume_time(hutch_engine *e, const char *volume, long long *out,
		       hutch_error **err)
{
	json_object *obj = NULL;
	int rc;

	*out = 0;
	rc = hutch__api_volume_find(e, volume, &obj, "inspect a session volume",
				    err);
	if (rc <= 0)
		return rc;
	*out = json_time(obj, "CreatedAt");
	json_object_put(obj);
	return 0;
}

/* hutch_session_last_used; *orphan set when all that is left of the
 * session is its system volume. */
static int last_used(hutch_engine *e, hutch_session_info *info, int *orphan,
		     hutch_error **err)
{
	long long t = 0, rec = 0, ws = 0, sys = 0, best = info->created;
	char name[128];
	int rc, found = 0;
	const char *container = info->id ? info->id : info->container;

	*orphan = 0;

	if (!hutch_session_name_valid(info->name))
		return hutch__error_set(err, HUTCH_EINVALID,
					"invalid session name '%.80s'",
					info->name ? info->name : "");
	if (container) {
		rc = read_record(e, container, &rec, &found, err);
		if (rc < 0)
			goto fail;
		/* A record from the future was written from inside, not by
		 * the agent: it does not count. */
		if (found && rec <= (long long)time(NULL) + FUTURE_SLACK_S) {
			/* The record alone: the container's start made it. */
			info->last_used = rec;
			return 0;
		}
		rc = container_times(e, container, &t, err);
		if (rc == 0) {
			info->last_used = max_ll(t, best);
			return 0;
		}
		if (rc != HUTCH_ENOTFOUND)
			goto fail;
		/* Removed meanwhile: what is left are the volumes. */
		hutch_error_free(err ? *err : NULL);
		if (err)
			*err = NULL;
	}
	snprintf(name, sizeof(name), "hutch-%s", info->name);
	if ((rc = volume_time(e, name, &ws, err)) < 0)
		goto fail;
	snprintf(name, sizeof(name), "hutch_%s", info->name);
	if ((rc = volume_time(e, name, &sys, err)) < 0)
		goto fail;
	if (!ws && !sys) {
		rc = hutch__error_set(err, HUTCH_ENOTFOUND, "no session '%s'",
				      info->name);
		goto fail;
	}
	info->last_used = max_ll(best, max_ll(ws, sys));
	*orphan = !ws;
	return 0;
fail:
	return hutch__error_wrap(err, rc, "session '%s'", info->name);
}

int hutch_session_last_used(hutch_engine *e, hutch_session_info *info,
			    hutch_error **err)
{
	int orphan;

	return last_used(e, info, &orphan, err);
}

/*
 * 1 when a command runs in the container now (an exec whose inspection
 * says Running), 0 when none does or the container does not run.  One
 * request per exec the engine remembers, until a running one: Docker
 * forgets finished execs within minutes, Podman keeps them until the
 * container stops.  Only sessions already found idle are checked, and
 * the check ends in their removal; no cap, since "busy" past a cap would
 * keep a busy-looking session forever.
 */
static int busy(hutch_engine *e, const char *container, hutch_error **err)
{
	json_object *obj = NULL, *st, *v, *ids = NULL;
	size_t n;
	int rc, running = 0;

	rc = hutch__api_container_find(e, container, &obj,
				       "inspect the session's container", err);
	if (rc <= 0)
		return rc;
	if (!json_object_object_get_ex(obj, "State", &st) ||
	    !json_object_object_get_ex(st, "Running", &v) ||
	    !json_object_get_boolean(v)) {
		json_object_put(obj);
		return 0;
	}
	json_object_object_get_ex(obj, "ExecIDs", &ids);
	n = json_object_is_type(ids, json_type_array) ?
		    json_object_array_length(ids) :
		    0;
	for (size_t i = 0; i < n && !running; i++) {
		struct hutch__exec_info ex;
		const char *id = json_object_get_string(
			json_object_array_get_idx(ids, i));
		hutch_error *lerr = NULL;

		if (!id || strspn(id, "0123456789abcdefABCDEF") != strlen(id) ||
		    !*id || strlen(id) > 128)
			continue;
		rc = hutch__api_exec_inspect(
			e, id, &ex, "inspect a command of the session", &lerr);
		if (rc == HUTCH_ENOTFOUND) {
			/* Finished and forgotten since the container's
			 * inspection. */
			hutch_error_free(lerr);
			continue;
		}
		if (rc < 0) {
			json_object_put(obj);
			return hutch__error_pass(err, lerr, rc);
		}
		running = ex.running;
	}
	json_object_put(obj);
	/* A command that took the agent's channel is no engine exec: its
	 * agent says how many requests it serves (HELLO's busy, counted by
	 * PID 1, which only hutch's connections reach).  No channel (an
	 * older session, a remote engine): the execs above were all. */
	if (!running) {
		unsigned int serving = 0;
		char why[256];

		if (hutch__chan_probe(e, container, &serving, why, sizeof(why),
				      NULL) == 1)
			running = serving > 0;
	}
	return running;
}

static void report(hutch_gc_cb cb, void *payload, const char *name,
		   const char *kind, long long last_used, long long now,
		   hutch_gc_action action, const hutch_error *error)
{
	hutch_gc_entry entry = {
		name,	kind, last_used, now > last_used ? now - last_used : 0,
		action, error
	};

	if (cb)
		cb(&entry, payload);
}

struct gc_run {
	hutch_engine *e;
	const hutch_gc_options *o;
	hutch_gc_cb cb;
	void *payload;
	long long now;
	size_t failed;
	hutch_error *first; /* the first failure, for the summary */
};

static void failed(struct gc_run *g, const char *name, const char *kind,
		   long long last_used, hutch_error *lerr)
{
	report(g->cb, g->payload, name, kind, last_used, g->now,
	       HUTCH_GC_FAILED, lerr);
	g->failed++;
	if (!g->first)
		g->first = lerr;
	else
		hutch_error_free(lerr);
}

static void gc_session(struct gc_run *g, hutch_session_info *info)
{
	hutch_error *lerr = NULL;
	const char *kind = "session";
	int rc, orphan = 0;

	rc = last_used(g->e, info, &orphan, &lerr);
	if (orphan)
		kind = "agent-volume";
	if (rc == HUTCH_ENOTFOUND) {
		/* Removed by someone else since the listing. */
		hutch_error_free(lerr);
		return;
	}
	if (rc < 0) {
		failed(g, info->name, kind, info->created, lerr);
		return;
	}
	if (g->now - info->last_used < g->o->idle) {
		report(g->cb, g->payload, info->name, kind, info->last_used,
		       g->now, HUTCH_GC_KEPT, NULL);
		return;
	}
	if (info->id || info->container) {
		rc = busy(g->e, info->id ? info->id : info->container, &lerr);
		if (rc < 0) {
			failed(g, info->name, kind, info->last_used, lerr);
			return;
		}
		if (rc == 1) {
			report(g->cb, g->payload, info->name, kind,
			       info->last_used, g->now, HUTCH_GC_BUSY, NULL);
			return;
		}
	}
	if (!g->o->dry_run) {
		rc = hutch_session_remove(g->e, info->name, &lerr);
		if (rc < 0 && rc != HUTCH_ENOTFOUND) {
			failed(g, info->name, kind, info->last_used, lerr);
			return;
		}
		hutch_error_free(lerr);
	}
	report(g->cb, g->payload, info->name, kind, info->last_used, g->now,
	       g->o->dry_run ? HUTCH_GC_WOULD_REMOVE : HUTCH_GC_REMOVED, NULL);
}

int hutch_session_gc(hutch_engine *e, const hutch_gc_options *o, hutch_gc_cb cb,
		     void *payload, hutch_error **err)
{
	struct gc_run g = { e, o, cb, payload, 0, 0, NULL };
	hutch_session_info *infos = NULL;
	size_t n = 0;
	int rc;

	if (!o || o->version != HUTCH_GC_OPTIONS_VERSION)
		return hutch__error_set(
			err, HUTCH_EINVALID,
			"unsupported hutch_gc_options version %u",
			o ? o->version : 0);
	if (o->idle < 0)
		return hutch__error_set(err, HUTCH_EINVALID,
					"idle time %lld s is negative",
					o->idle);
	if (o->match && !hutch__glob_valid(o->match))
		return hutch__error_set(err, HUTCH_EINVALID,
					"invalid pattern '%.80s'", o->match);
	/* A system volume left without its session is listed as a session
	 * of its own (it carries the session label): it goes by the same
	 * rule, from its creation. */
	rc = hutch_session_list(&infos, &n, e, err);
	if (rc < 0)
		return rc;
	g.now = (long long)time(NULL);
	for (size_t i = 0; i < n; i++)
		if (!o->match ||
		    hutch__glob_match(o->match, infos[i].name, false))
			gc_session(&g, &infos[i]);
	hutch_session_info_array_free(infos, n);
	if (g.failed) {
		rc = hutch__error_set(
			err, HUTCH_EFAILED,
			"%zu session%s could not be removed; the first: %s",
			g.failed, g.failed == 1 ? "" : "s",
			hutch_error_message(g.first));
		hutch_error_free(g.first);
		return rc;
	}
	return 0;
}
