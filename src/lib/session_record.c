/*
 * session_record.c - a session's recorded configuration
 *
 * The labels on the session's volumes and container: written when they are
 * made (labels_new), read back to bring a session up as it was
 * (adopt_record), and compared with what a caller asks for (mismatch).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>

#include "common.h"
#include "engine_api.h"
#include "error.h"
#include "json.h"
#include "session_internal.h"
#include "timestamp.h"

/* The lockdown settings as label values; `v` holds the text. */
struct lockdown_text {
	char memory[24], cpus[24], pids[24], caps[1024];
	const char *ro;
};

static void lockdown_text(const hutch_session *s, struct lockdown_text *t)
{
	size_t used = 0;

	snprintf(t->memory, sizeof(t->memory), "%lld", (long long)s->memory);
	snprintf(t->cpus, sizeof(t->cpus), "%lld", (long long)s->nano_cpus);
	snprintf(t->pids, sizeof(t->pids), "%lld", (long long)s->pids);
	t->caps[0] = '\0';
	/* Known names only (cap_normalize), at most all of them: fits. */
	for (size_t i = 0; i < s->cap_count; i++)
		used += (size_t)snprintf(t->caps + used, sizeof(t->caps) - used,
					 "%s%s", i ? "," : "", s->caps[i]);
	t->ro = s->read_only ? "1" : "0";
}

static unsigned long long fnv(unsigned long long h, const char *str, int end)
{
	for (const char *c = str; *c; c++)
		h = (h ^ (unsigned char)*c) * 1099511628211ULL;
	return (h ^ (unsigned int)end) * 1099511628211ULL;
}

/* FNV-1a over the configuration: a short, stable fingerprint for the
 * label, so a changed configuration can be told from the same one. */
void hutch__session_config_hash(const hutch_session *s, char out[17])
{
	unsigned long long h = 1469598103934665603ULL;
	struct lockdown_text t;

	lockdown_text(s, &t);
	h = fnv(h, s->image, 0xff);
	h = fnv(h, s->workspace ? s->workspace : "", 0xff);
	for (size_t i = 0; i < s->env_count; i++)
		h = fnv(h, s->env[i], 0xfe);
	h = fnv(h, s->user ? s->user : "", 0xfd);
	h = fnv(h, t.memory, 0xfd);
	h = fnv(h, t.cpus, 0xfd);
	h = fnv(h, t.pids, 0xfd);
	h = fnv(h, t.caps, 0xfd);
	h = fnv(h, s->network ? s->network : "none", 0xfd);
	h = fnv(h, t.ro, 0xfd);
	snprintf(out, 17, "%016llx", h);
}

json_object *hutch__session_labels_new(const hutch_session *s,
				       long long created)
{
	json_object *labels = json_object_new_object(),
		    *env = json_object_new_array();
	char hash[17], when[32];
	struct lockdown_text t;

	if (!labels || !env) {
		json_object_put(labels);
		json_object_put(env);
		return NULL;
	}
	for (size_t i = 0; i < s->env_count; i++)
		json_object_array_add(env, json_object_new_string(s->env[i]));
	hutch__session_config_hash(s, hash);
	lockdown_text(s, &t);
	snprintf(when, sizeof(when), "%lld", created);
	json_object_object_add(labels, HUTCH_LABEL_SESSION,
			       json_object_new_string(s->name));
	json_object_object_add(labels, HUTCH_LABEL_VERSION,
			       json_object_new_string(PACKAGE_VERSION));
	json_object_object_add(labels, HUTCH_LABEL_CREATED,
			       json_object_new_string(when));
	json_object_object_add(labels, HUTCH_LABEL_IMAGE,
			       json_object_new_string(s->image));
	json_object_object_add(
		labels, HUTCH_LABEL_WORKSPACE,
		json_object_new_string(s->workspace ? s->workspace : ""));
	json_object_object_add(
		labels, HUTCH_LABEL_ENV,
		json_object_new_string(json_object_to_json_string_ext(
			env, JSON_C_TO_STRING_PLAIN)));
	/* A volume made before the user is known records none: the
	 * container's record, made after, has it. */
	if (s->user)
		json_object_object_add(labels, HUTCH_LABEL_USER,
				       json_object_new_string(s->user));
	json_object_object_add(labels, HUTCH_LABEL_MEMORY,
			       json_object_new_string(t.memory));
	json_object_object_add(labels, HUTCH_LABEL_CPUS,
			       json_object_new_string(t.cpus));
	json_object_object_add(labels, HUTCH_LABEL_PIDS,
			       json_object_new_string(t.pids));
	json_object_object_add(labels, HUTCH_LABEL_CAPS,
			       json_object_new_string(t.caps));
	json_object_object_add(labels, HUTCH_LABEL_NETWORK,
			       json_object_new_string(s->network ? s->network :
								   "none"));
	json_object_object_add(labels, HUTCH_LABEL_READONLY,
			       json_object_new_string(t.ro));
	json_object_object_add(labels, HUTCH_LABEL_CONFIG,
			       json_object_new_string(hash));
	/* Not part of the configuration: who made this volume or container. */
	if (s->ensure.token[0])
		json_object_object_add(labels, HUTCH_LABEL_CREATION,
				       json_object_new_string(s->ensure.token));
	json_object_put(env);
	return labels;
}

const char *hutch__label_get(json_object *labels, const char *key)
{
	json_object *v;

	if (labels && json_object_is_type(labels, json_type_object) &&
	    json_object_object_get_ex(labels, key, &v) &&
	    json_object_is_type(v, json_type_string))
		return json_object_get_string(v);
	return NULL;
}

int64_t hutch__label_int(json_object *labels, const char *key)
{
	const char *v = hutch__label_get(labels, key);
	char *e;
	long long n;

	if (!v || !*v)
		return -1;
	n = strtoll(v, &e, 10);
	return *e || n < 0 ? -1 : (int64_t)n;
}

/* Whether this ensure made the volume or container of these labels: its
 * token is random and new, so nobody else's record carries it. */
int hutch__session_made_by_me(const hutch_session *s, json_object *labels)
{
	const char *t = hutch__label_get(labels, HUTCH_LABEL_CREATION);

	return s->ensure.token[0] && t && strcmp(t, s->ensure.token) == 0;
}

/* Take the configuration recorded on the volume or the container, so a
 * recreated container is what the session was; settings the caller asked
 * for stay (mismatch() has checked them first, or they replace the
 * record on purpose). */
static int adopt_record(hutch_session *s, json_object *labels)
{
	const char *image = hutch__label_get(labels, HUTCH_LABEL_IMAGE);
	const char *ws = hutch__label_get(labels, HUTCH_LABEL_WORKSPACE);
	const char *envs = hutch__label_get(labels, HUTCH_LABEL_ENV);
	const char *v;
	json_object *arr = NULL;
	char **env = NULL;
	size_t n = 0;
	int64_t num;

	if (!hutch__label_get(labels, HUTCH_LABEL_SESSION))
		return 0;
	if (envs && !(s->set & HUTCH__SET_ENV))
		arr = hutch__json_parse(envs, strlen(envs));
	if (arr && json_object_is_type(arr, json_type_array)) {
		n = json_object_array_length(arr);
		env = calloc(n ? n : 1, sizeof(char *));
		if (!env) {
			json_object_put(arr);
			return -1;
		}
		for (size_t i = 0; i < n; i++) {
			env[i] = strdup(json_object_get_string(
				json_object_array_get_idx(arr, i)));
			if (!env[i]) {
				n = i;
				break;
			}
		}
	}
	json_object_put(arr);
	if (image && *image && !(s->set & HUTCH__SET_IMAGE)) {
		free(s->image);
		s->image = strdup(image);
	}
	if (!(s->set & HUTCH__SET_WORKSPACE)) {
		free(s->workspace);
		s->workspace = ws && *ws ? strdup(ws) : NULL;
	}
	if (env) {
		for (size_t i = 0; i < s->env_count; i++)
			free(s->env[i]);
		free(s->env);
		s->env = env;
		s->env_count = n;
	}
	/* A record from before the lockdown has none of these: the
	 * defaults apply, which is the point of recreating it. */
	if (!(s->set & HUTCH__SET_USER) && !s->user_chosen &&
	    (v = hutch__label_get(labels, HUTCH_LABEL_USER)) &&
	    hutch__session_user_valid(v)) {
		free(s->user);
		if (!(s->user = strdup(v)))
			return -1;
	}
	if (!(s->set & HUTCH__SET_MEMORY) &&
	    (num = hutch__label_int(labels, HUTCH_LABEL_MEMORY)) >=
		    HUTCH_SESSION_MIN_MEMORY)
		s->memory = num;
	if (!(s->set & HUTCH__SET_CPUS) &&
	    (num = hutch__label_int(labels, HUTCH_LABEL_CPUS)) >= 10000000)
		s->nano_cpus = num;
	if (!(s->set & HUTCH__SET_PIDS) &&
	    (num = hutch__label_int(labels, HUTCH_LABEL_PIDS)) >=
		    HUTCH_SESSION_MIN_PIDS)
		s->pids = num;
	if (!(s->set & HUTCH__SET_CAPS) &&
	    (v = hutch__label_get(labels, HUTCH_LABEL_CAPS)) &&
	    hutch__session_caps_from_text(s, v) < 0)
		return -1;
	if (!(s->set & HUTCH__SET_NETWORK) &&
	    (v = hutch__label_get(labels, HUTCH_LABEL_NETWORK)) &&
	    hutch__session_network_valid(v)) {
		free(s->network);
		if (!(s->network = strdup(v)))
			return -1;
	}
	if (!(s->set & HUTCH__SET_READONLY) &&
	    (num = hutch__label_int(labels, HUTCH_LABEL_READONLY)) >= 0)
		s->read_only = num == 1;
	return s->image ? 0 : -1;
}

/*
 * Back to the settings the caller asked for, and the defaults for the
 * rest: before each attempt at making the session's container, so what was
 * adopted from a record that has gone since (a racer's, whose creation
 * failed) is not carried into a record of our own.  -1 when out of memory.
 */
int hutch__session_reset_unasked(hutch_session *s)
{
	if (!(s->set & HUTCH__SET_IMAGE)) {
		char *image = strdup(hutch__session_unasked_image());

		if (!image)
			return -1;
		free(s->image);
		s->image = image;
	}
	if (!(s->set & HUTCH__SET_NETWORK)) {
		char *net = strdup("none");

		if (!net)
			return -1;
		free(s->network);
		s->network = net;
	}
	if (!(s->set & HUTCH__SET_WORKSPACE)) {
		free(s->workspace);
		s->workspace = NULL;
	}
	if (!(s->set & HUTCH__SET_ENV)) {
		for (size_t i = 0; i < s->env_count; i++)
			free(s->env[i]);
		free(s->env);
		s->env = NULL;
		s->env_count = 0;
	}
	/* A user found in the image (wants_sandbox_user) stays. */
	if (!(s->set & HUTCH__SET_USER) && !s->user_chosen) {
		free(s->user);
		s->user = NULL;
	}
	if (!(s->set & HUTCH__SET_CAPS)) {
		for (size_t i = 0; i < s->cap_count; i++)
			free(s->caps[i]);
		free(s->caps);
		s->caps = NULL;
		s->cap_count = 0;
	}
	if (!(s->set & HUTCH__SET_MEMORY))
		s->memory = HUTCH_SESSION_DEFAULT_MEMORY;
	if (!(s->set & HUTCH__SET_CPUS))
		s->nano_cpus = HUTCH_SESSION_DEFAULT_NANO_CPUS;
	if (!(s->set & HUTCH__SET_PIDS))
		s->pids = HUTCH_SESSION_DEFAULT_PIDS;
	if (!(s->set & HUTCH__SET_READONLY))
		s->read_only = 0;
	return 0;
}

/* "2g", "64m", "1536k" or bytes: how a limit was most likely written. */
static void fmt_size(char *out, size_t outsz, int64_t v)
{
	if (v < 0)
		snprintf(out, outsz, "none");
	else if (v && v % (1LL << 30) == 0)
		snprintf(out, outsz, "%lldg", (long long)(v >> 30));
	else if (v && v % (1LL << 20) == 0)
		snprintf(out, outsz, "%lldm", (long long)(v >> 20));
	else if (v && v % 1024 == 0)
		snprintf(out, outsz, "%lldk", (long long)(v >> 10));
	else
		snprintf(out, outsz, "%lld", (long long)v);
}

static void fmt_cpus(char *out, size_t outsz, int64_t nano)
{
	if (nano < 0)
		snprintf(out, outsz, "none");
	else if (nano % 1000000000 == 0)
		snprintf(out, outsz, "%lld", (long long)(nano / 1000000000));
	else
		snprintf(out, outsz, "%.2f", (double)nano / 1e9);
}

static void add_diff(char *out, size_t outsz, const char *what, const char *had,
		     const char *asked)
{
	size_t used = strlen(out);

	if (used < outsz)
		snprintf(out + used, outsz - used, "%s%s %s (asked %s)",
			 used ? ", " : "", what, had && *had ? had : "none",
			 asked && *asked ? asked : "none");
}

/*
 * The settings the caller asked for that differ from a record (a
 * container's labels, or a volume's): "memory 2g (asked 1g), user 1000:1000
 * (asked root)".  Empty when they agree.  Only what was asked for counts:
 * a command that names no settings uses the session as it is.
 */
void hutch__session_mismatch(const hutch_session *s, json_object *labels,
			     char *out, size_t outsz)
{
	struct lockdown_text t;
	char a[64], b[64];
	const char *v;

	out[0] = '\0';
	if (!hutch__label_get(labels, HUTCH_LABEL_SESSION))
		return;
	lockdown_text(s, &t);
	if ((s->set & HUTCH__SET_IMAGE) &&
	    strcmp(s->image, (v = hutch__label_get(labels, HUTCH_LABEL_IMAGE)) ?
				     v :
				     "") != 0)
		add_diff(out, outsz, "image", v, s->image);
	if (s->set & HUTCH__SET_WORKSPACE) {
		v = hutch__label_get(labels, HUTCH_LABEL_WORKSPACE);
		if (strcmp(s->workspace, v ? v : "") != 0)
			add_diff(out, outsz, "workspace",
				 v && *v ? v : "its volume", s->workspace);
	}
	if (s->set & HUTCH__SET_ENV) {
		json_object *env = json_object_new_array();
		const char *want;

		for (size_t i = 0; env && i < s->env_count; i++)
			json_object_array_add(
				env, json_object_new_string(s->env[i]));
		want = env ? json_object_to_json_string_ext(
				     env, JSON_C_TO_STRING_PLAIN) :
			     "";
		v = hutch__label_get(labels, HUTCH_LABEL_ENV);
		if (strcmp(want, v ? v : "[]") != 0)
			add_diff(out, outsz, "environment", "other",
				 "different");
		json_object_put(env);
	}
	if ((s->set & HUTCH__SET_USER) &&
	    strcmp(s->user,
		   (v = hutch__label_get(labels, HUTCH_LABEL_USER)) ? v : "") !=
		    0)
		add_diff(out, outsz, "user", v ? v : "the image's", s->user);
	if ((s->set & HUTCH__SET_MEMORY) &&
	    hutch__label_int(labels, HUTCH_LABEL_MEMORY) != s->memory) {
		fmt_size(a, sizeof(a),
			 hutch__label_int(labels, HUTCH_LABEL_MEMORY));
		fmt_size(b, sizeof(b), s->memory);
		add_diff(out, outsz, "memory", a, b);
	}
	if ((s->set & HUTCH__SET_CPUS) &&
	    hutch__label_int(labels, HUTCH_LABEL_CPUS) != s->nano_cpus) {
		fmt_cpus(a, sizeof(a),
			 hutch__label_int(labels, HUTCH_LABEL_CPUS));
		fmt_cpus(b, sizeof(b), s->nano_cpus);
		add_diff(out, outsz, "cpus", a, b);
	}
	if ((s->set & HUTCH__SET_PIDS) &&
	    hutch__label_int(labels, HUTCH_LABEL_PIDS) != s->pids) {
		snprintf(a, sizeof(a), "%lld",
			 (long long)hutch__label_int(labels, HUTCH_LABEL_PIDS));
		add_diff(out, outsz, "pids",
			 hutch__label_int(labels, HUTCH_LABEL_PIDS) < 0 ?
				 "none" :
				 a,
			 t.pids);
	}
	if ((s->set & HUTCH__SET_CAPS) &&
	    strcmp(t.caps, (v = hutch__label_get(labels, HUTCH_LABEL_CAPS)) ?
				   v :
				   "(unknown)") != 0)
		add_diff(out, outsz, "cap-add", v, t.caps);
	if ((s->set & HUTCH__SET_NETWORK) &&
	    strcmp(s->network,
		   (v = hutch__label_get(labels, HUTCH_LABEL_NETWORK)) ?
			   v :
			   "") != 0)
		add_diff(out, outsz, "network", v ? v : "the engine's default",
			 s->network);
	if ((s->set & HUTCH__SET_READONLY) &&
	    hutch__label_int(labels, HUTCH_LABEL_READONLY) !=
		    (int64_t)s->read_only)
		add_diff(out, outsz, "read-only",
			 hutch__label_int(labels, HUTCH_LABEL_READONLY) == 1 ?
				 "yes" :
				 "no",
			 s->read_only ? "yes" : "no");
}

int hutch__session_mismatch_error(const char *diff, hutch_error **err)
{
	return hutch__error_set(
		err, HUTCH_ECONFLICT,
		"it exists with another configuration: %s; use it as it is "
		"(leave those settings out), or recreate its container with them "
		"(hutch up --recreate; the workspace is kept)",
		diff);
}

/* GET a volume: 0 with *out, HUTCH_ENOTFOUND, or another error. */
int hutch__session_volume_get(hutch_session *s, const char *name,
			      json_object **out, hutch_error **err)
{
	return hutch__api_volume_inspect(s->engine, name, out,
					 "inspect a session volume", err);
}

/*
 * The system volume's labels when it is this session's record (the volume
 * in *vol).  *stale: it is this session's, but was made beside another
 * workspace volume than the one there now (one a failed call was removing
 * when a racer made the next), so its record is not this one's.  Volumes
 * from a hutch without HUTCH_LABEL_VOLUME_OF are taken as they are.
 */
json_object *hutch__session_sysvol_labels(hutch_session *s, json_object **vol,
					  int *stale)
{
	json_object *labels = NULL;
	const char *of, *beside;

	*vol = NULL;
	*stale = 0;
	if (hutch__session_volume_get(s, s->sysvol, vol, NULL) < 0)
		return NULL;
	json_object_object_get_ex(*vol, "Labels", &labels);
	of = hutch__label_get(labels, HUTCH_LABEL_SYSTEM);
	if (!of || strcmp(of, s->name) != 0)
		return NULL;
	beside = hutch__label_get(labels, HUTCH_LABEL_VOLUME_OF);
	if (beside && s->ensure.vol_token[0] &&
	    strcmp(beside, s->ensure.vol_token) != 0) {
		*stale = 1;
		return NULL;
	}
	return labels;
}

/* When the engine made volume `vol`, unix seconds; 0 when it does not say. */
static long long volume_made(json_object *vol)
{
	json_object *v;
	long long made;

	if (!json_object_object_get_ex(vol, "CreatedAt", &v) ||
	    !json_object_is_type(v, json_type_string) ||
	    hutch__time_parse(json_object_get_string(v), &made) < 0)
		return 0;
	return made;
}

/*
 * The session exists (its volume does) but its container does not: take
 * the latest record, the system volume's (the last container's settings,
 * written again by --recreate), else the workspace volume's (the first
 * ones).  Settings the caller asked for must agree with it, unless this
 * call made the record (`mine`) or replaces the container anyway.
 * *latest: when the newer of the two volumes was made.
 */
int hutch__session_adopt_volume_record(hutch_session *s, json_object *vol,
				       json_object *vlabels, int mine,
				       long long *latest, hutch_error **err)
{
	json_object *sys = NULL, *labels;
	char diff[1024];
	int rc, stale;

	labels = hutch__session_sysvol_labels(s, &sys, &stale);
	*latest = volume_made(vol);
	if (labels && volume_made(sys) > *latest)
		*latest = volume_made(sys);
	if (!labels)
		labels = vlabels;
	if (!mine && !s->recreate) {
		hutch__session_mismatch(s, labels, diff, sizeof(diff));
		if (diff[0]) {
			json_object_put(sys);
			s->ensure.refused = 1;
			return hutch__session_mismatch_error(diff, err);
		}
	}
	rc = adopt_record(s, labels);
	json_object_put(sys);
	return rc < 0 ? hutch__error_oom(err) : 0;
}
