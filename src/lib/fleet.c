/*
 * fleet.c - sessions spread over several engines
 *
 * Locating a session asks every engine at once, one thread each, whether
 * there is a container or a workspace volume of that name: one round trip
 * of the slowest engine, not the sum.  Only when it is nowhere and is to
 * be placed does a second round ask how many hutch sessions run on each.
 */
#include <ctype.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>

#include <hutch/fleet.h>
#include <hutch/session.h>

#include "common.h"
#include "engine_api.h"
#include "engine_internal.h"
#include "error.h"
#include "session_internal.h"

#define FLEET_MAX 64

struct member {
	hutch_engine *engine;
	atomic_long placed; /* sessions this fleet put here */
	atomic_int down;    /* did not answer the last locate */
};

struct hutch_fleet {
	struct member *m;
	size_t n;
};

static int add_engine(hutch_fleet *f, const char *url, const char *source,
		      hutch_error **err)
{
	hutch_engine *e;
	int rc;

	for (size_t i = 0; i < f->n; i++)
		if (url && strcmp(hutch_engine_url(f->m[i].engine), url) == 0)
			return hutch__error_set(err, HUTCH_EINVALID,
						"engine '%s' is given twice",
						url);
	if (f->n == FLEET_MAX)
		return hutch__error_set(err, HUTCH_EINVALID,
					"more than %d engines", FLEET_MAX);
	rc = hutch_engine_open(&e, url, err);
	if (rc < 0)
		return rc;
	/* Two spellings of one socket ("/x" and "unix:///x"). */
	for (size_t i = 0; url && i < f->n; i++)
		if (strcmp(hutch_engine_url(f->m[i].engine),
			   hutch_engine_url(e)) == 0) {
			hutch_engine_free(e);
			return hutch__error_set(err, HUTCH_EINVALID,
						"engine '%s' is given twice",
						url);
		}
	if (source)
		e->source = source;
	f->m[f->n].engine = e;
	atomic_init(&f->m[f->n].placed, 0);
	atomic_init(&f->m[f->n].down, 0);
	f->n++;
	return 0;
}

/* HUTCH_ENGINES: URLs separated by commas or white space. */
static int add_from_env(hutch_fleet *f, const char *list, hutch_error **err)
{
	char *copy = strdup(list), *p, *start;
	int rc = 0;

	if (!copy)
		return hutch__error_oom(err);
	for (p = copy; rc == 0 && *p;) {
		while (*p == ',' || isspace((unsigned char)*p))
			p++;
		if (!*p)
			break;
		start = p;
		while (*p && *p != ',' && !isspace((unsigned char)*p))
			p++;
		if (*p)
			*p++ = '\0';
		rc = add_engine(f, start, "HUTCH_ENGINES", err);
	}
	free(copy);
	if (rc < 0)
		return hutch__error_wrap(err, rc, "HUTCH_ENGINES");
	return rc;
}

int hutch_fleet_open(hutch_fleet **out, const char *const *urls, size_t n,
		     hutch_error **err)
{
	hutch_fleet *f = calloc(1, sizeof(*f));
	const char *env = getenv("HUTCH_ENGINES");
	int rc = 0;

	if (f)
		f->m = calloc(FLEET_MAX, sizeof(*f->m));
	if (!f || !f->m) {
		free(f);
		return hutch__error_oom(err);
	}
	if (n > 0) {
		for (size_t i = 0; rc == 0 && i < n; i++) {
			if (!urls[i] || !*urls[i])
				rc = hutch__error_set(err, HUTCH_EINVALID,
						      "empty engine URL");
			else
				rc = add_engine(f, urls[i], NULL, err);
		}
	} else if (env && strspn(env, ", \t\n") < strlen(env)) {
		rc = add_from_env(f, env, err);
	} else {
		rc = add_engine(f, NULL, NULL, err);
	}
	if (rc < 0) {
		hutch_fleet_free(f);
		return rc;
	}
	*out = f;
	return 0;
}

void hutch_fleet_free(hutch_fleet *f)
{
	if (!f)
		return;
	for (size_t i = 0; i < f->n; i++)
		hutch_engine_free(f->m[i].engine);
	free(f->m);
	free(f);
}

size_t hutch_fleet_size(const hutch_fleet *f)
{
	return f->n;
}

hutch_engine *hutch_fleet_engine(hutch_fleet *f, size_t i)
{
	return i < f->n ? f->m[i].engine : NULL;
}

int hutch_fleet_engine_down(const hutch_fleet *f, size_t i)
{
	return i < f->n ? atomic_load(&f->m[i].down) : 0;
}

hutch_engine *hutch_fleet_detach(hutch_fleet *f, hutch_engine *e)
{
	for (size_t i = 0; i < f->n; i++) {
		if (f->m[i].engine != e)
			continue;
		f->m[i].engine = NULL;
		memmove(&f->m[i], &f->m[i + 1],
			(f->n - i - 1) * sizeof(f->m[0]));
		f->n--;
		return e;
	}
	return NULL;
}

/* ---- locate ---------------------------------------------------------- */

struct probe {
	hutch_engine *engine;
	const char *name;
	int count;	  /* count the running sessions instead */
	int has;	  /* 1: container or workspace volume there */
	long running;	  /* hutch sessions running there */
	hutch_error *err; /* set when the engine did not answer */
};

/* Is there a container or a workspace volume of the session? */
static void probe_where(struct probe *p)
{
	char *esc = hutch__url_escape(p->name);
	char name[512];
	int rc;

	if (!esc) {
		hutch__error_oom(&p->err);
		return;
	}
	snprintf(name, sizeof(name), "hutch-%s", esc);
	rc = hutch__api_container_find(p->engine, name, NULL,
				       "inspect container", &p->err);
	if (rc == 0)
		rc = hutch__api_volume_find(p->engine, name, NULL,
					    "inspect volume", &p->err);
	free(esc);
	if (rc >= 0)
		p->has = rc;
}

/* How many hutch sessions run there? */
static void probe_load(struct probe *p)
{
	json_object *list = NULL;

	if (hutch__api_container_list(p->engine, HUTCH_LABEL_SESSION, 0, &list,
				      "list containers", &p->err) == 0) {
		if (json_object_is_type(list, json_type_array))
			p->running = (long)json_object_array_length(list);
		else
			hutch__error_set(
				&p->err, HUTCH_EPROTO,
				"list containers: the engine answered no list");
	}
	json_object_put(list);
}

static void *probe_run(void *arg)
{
	struct probe *p = arg;

	if (p->count)
		probe_load(p);
	else
		probe_where(p);
	return NULL;
}

/* FNV-1a of the name and the engine's URL: the tie-break. */
static unsigned long long name_hash(const char *name, const char *url)
{
	unsigned long long h = 1469598103934665603ULL;

	for (const char *s = name; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	h = (h ^ '\n') * 1099511628211ULL;
	for (const char *s = url; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

static int choose(hutch_fleet *f, struct probe *p, const char *name)
{
	int best = -1;
	long best_load = 0;
	unsigned long long best_hash = 0;

	for (size_t i = 0; i < f->n; i++) {
		long load;
		unsigned long long h;

		if (p[i].err)
			continue;
		/* Placed by us but not yet running there, or running: the
		 * larger, so a placement is not counted twice. */
		load = atomic_load(&f->m[i].placed);
		if (p[i].running > load)
			load = p[i].running;
		h = name_hash(name, hutch_engine_url(f->m[i].engine));
		if (best < 0 || load < best_load ||
		    (load == best_load && h > best_hash)) {
			best = (int)i;
			best_load = load;
			best_hash = h;
		}
	}
	return best;
}

static int locate_error(hutch_fleet *f, struct probe *p, int code,
			const char *name, hutch_error **err)
{
	char msg[1024];
	size_t used;

	used = (size_t)snprintf(msg, sizeof(msg), "session '%s': ", name);
	if (code == HUTCH_EUNREACHABLE && used < sizeof(msg))
		used += (size_t)snprintf(msg + used, sizeof(msg) - used,
					 "not on an engine that answers;");
	for (size_t i = 0; i < f->n && used < sizeof(msg); i++) {
		if (!p[i].err)
			continue;
		used += (size_t)snprintf(msg + used, sizeof(msg) - used,
					 " %s: %s;",
					 hutch_engine_url(f->m[i].engine),
					 hutch_error_message(p[i].err));
	}
	if (used > sizeof(msg) - 1)
		used = sizeof(msg) - 1;
	if (used && msg[used - 1] == ';')
		msg[used - 1] = '\0';
	return hutch__error_set(err, code, "%s", msg);
}

/* Run probe_run on every engine that has not failed yet, a thread each,
 * and note which did not answer. */
static void probe_all(hutch_fleet *f, struct probe *p, pthread_t *t)
{
	for (size_t i = 0; i < f->n; i++) {
		t[i] = 0;
		if (p[i].err)
			continue;
		if (pthread_create(&t[i], NULL, probe_run, &p[i]) != 0) {
			t[i] = 0;
			probe_run(&p[i]);
		}
	}
	for (size_t i = 0; i < f->n; i++) {
		if (t[i])
			pthread_join(t[i], NULL);
		atomic_store(&f->m[i].down, p[i].err != NULL);
	}
}

int hutch_fleet_locate(hutch_fleet *f, const char *name, int flags,
		       hutch_engine **engine, int *found, hutch_error **err)
{
	struct probe *p;
	pthread_t *t;
	int rc = 0, at = -1, answered = 0;

	if (!hutch_session_name_valid(name))
		return hutch__error_set(err, HUTCH_EINVALID,
					"invalid session name '%s'", name);
	if (f->n == 1) {
		*engine = f->m[0].engine;
		if (found)
			*found = -1;
		return 0;
	}
	p = calloc(f->n, sizeof(*p));
	t = calloc(f->n, sizeof(*t));
	if (!p || !t) {
		free(p);
		free(t);
		return hutch__error_oom(err);
	}
	for (size_t i = 0; i < f->n; i++) {
		p[i].engine = f->m[i].engine;
		p[i].name = name;
	}
	probe_all(f, p, t);
	for (size_t i = 0; i < f->n; i++)
		if (!p[i].err)
			answered++;

	for (size_t i = 0; i < f->n; i++) {
		if (p[i].err || !p[i].has)
			continue;
		if (at >= 0) {
			rc = hutch__error_set(
				err, HUTCH_EAMBIGUOUS,
				"session '%s' exists on two engines, %s and %s;"
				" remove one with 'hutch --engine URL rm %s'",
				name, hutch_engine_url(f->m[at].engine),
				hutch_engine_url(f->m[i].engine), name);
			goto out;
		}
		at = (int)i;
	}
	if (at >= 0) {
		if (found)
			*found = 1;
	} else if (answered == 0) {
		rc = locate_error(f, p, HUTCH_EUNREACHABLE, name, err);
		goto out;
	} else if (!(flags & HUTCH_FLEET_CREATE)) {
		if (answered < (int)f->n)
			rc = locate_error(f, p, HUTCH_EUNREACHABLE, name, err);
		else
			rc = hutch__error_set(
				err, HUTCH_ENOTFOUND,
				"no session '%s' on any of the %zu engines",
				name, f->n);
		goto out;
	} else {
		/* Nowhere: how loaded is each engine that answered? */
		for (size_t i = 0; i < f->n; i++)
			p[i].count = 1;
		probe_all(f, p, t);
		at = choose(f, p, name);
		if (at < 0) {
			rc = locate_error(f, p, HUTCH_EUNREACHABLE, name, err);
			goto out;
		}
		atomic_fetch_add(&f->m[at].placed, 1);
		if (found)
			*found = 0;
	}
	*engine = f->m[at].engine;
out:
	for (size_t i = 0; i < f->n; i++)
		hutch_error_free(p[i].err);
	free(p);
	free(t);
	return rc;
}
