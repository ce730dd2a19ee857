/*
 * session.c - lazily created, persistent per-session containers
 *
 * The hot path (a command in a running session) never comes here: exec
 * talks to the container by name and only calls hutch_session_ensure()
 * when the engine says the container is missing or stopped.
 *
 * The session's volume ("hutch-NAME") is its record: its labels hold the
 * configuration the session was made with, so a container removed from
 * outside comes back with the same image, workspace and environment.  For a
 * session on a host directory the volume is only that record.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <json-c/json.h>

#include "agent_blob.h"
#include "common.h"
#include "engine_internal.h"
#include "error.h"
#include "session_internal.h"

/* How long a process that lost the creation race waits for the winner to
 * start the container before it finishes the job itself. */
#define RACE_TAKEOVER_MS 10000
#define RACE_GIVEUP_MS 60000

const char *hutch_default_image(void)
{
	return HUTCH_DEFAULT_IMAGE;
}

int hutch_session_name_valid(const char *name)
{
	size_t n;

	if (!name)
		return 0;
	n = strlen(name);
	if (n == 0 || n > 63)
		return 0;
	if (!((name[0] >= 'a' && name[0] <= 'z') || (name[0] >= 'A' && name[0] <= 'Z') ||
	      (name[0] >= '0' && name[0] <= '9')))
		return 0;
	return strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			    "0123456789_.-") == n;
}

static int env_valid(const char *kv)
{
	const char *eq = strchr(kv, '=');

	return eq && eq != kv && strlen(kv) < 65536;
}

void hutch_session_free(hutch_session *s)
{
	if (!s)
		return;
	free(s->name);
	free(s->container);
	free(s->volume);
	free(s->image);
	free(s->workspace);
	for (size_t i = 0; i < s->env_count; i++)
		free(s->env[i]);
	free(s->env);
	free(s);
}

int hutch_session_open(hutch_session **out, hutch_engine *engine,
		       const char *name, const hutch_session_options *opts,
		       hutch_error **err)
{
	hutch_session *s;
	const char *image = NULL;
	char real[PATH_MAX];
	struct stat st;

	if (!hutch_session_name_valid(name))
		return hutch__error_set(err, HUTCH_EINVALID,
			"invalid session name '%.80s': use 1 to 63 letters, digits, '_', '.' "
			"or '-', starting with a letter or digit", name ? name : "");
	if (opts && opts->version != HUTCH_SESSION_OPTIONS_VERSION)
		return hutch__error_set(err, HUTCH_EINVALID,
					"unsupported hutch_session_options version %u",
					opts->version);
	s = calloc(1, sizeof(*s));
	if (!s)
		return hutch__error_oom(err);
	s->engine = engine;
	s->name = strdup(name);
	if (asprintf(&s->container, "hutch-%s", name) < 0)
		s->container = NULL;
	s->volume = s->container ? strdup(s->container) : NULL;

	if (opts && opts->image && *opts->image)
		image = opts->image;
	else if (getenv("HUTCH_IMAGE") && *getenv("HUTCH_IMAGE"))
		image = getenv("HUTCH_IMAGE");
	else
		image = HUTCH_DEFAULT_IMAGE;
	s->image = strdup(image);
	if (!s->name || !s->container || !s->volume || !s->image)
		goto oom;

	if (opts && opts->workspace) {
		/* Resolve now, on the host, so the bind mount names exactly
		 * the directory the user meant and nothing a later symlink
		 * swap could redirect. */
		if (!realpath(opts->workspace, real) || stat(real, &st) < 0 ||
		    !S_ISDIR(st.st_mode)) {
			hutch__error_set(err, HUTCH_EINVALID,
					 "workspace '%.200s' is not a directory: %s",
					 opts->workspace,
					 errno ? strerror(errno) : "not a directory");
			hutch_session_free(s);
			return HUTCH_EINVALID;
		}
		s->workspace = strdup(real);
		if (!s->workspace)
			goto oom;
	}
	if (opts && opts->env_count) {
		s->env = calloc(opts->env_count, sizeof(char *));
		if (!s->env)
			goto oom;
		for (size_t i = 0; i < opts->env_count; i++) {
			if (!env_valid(opts->env[i])) {
				hutch__error_set(err, HUTCH_EINVALID,
						 "invalid environment entry '%.80s': expected K=V",
						 opts->env[i]);
				hutch_session_free(s);
				return HUTCH_EINVALID;
			}
			s->env[i] = strdup(opts->env[i]);
			if (!s->env[i])
				goto oom;
			s->env_count++;
		}
	}
	*out = s;
	return 0;
oom:
	hutch_session_free(s);
	return hutch__error_oom(err);
}

const char *hutch_session_name(const hutch_session *s)
{
	return s->name;
}

hutch_engine *hutch_session_engine(const hutch_session *s)
{
	return s->engine;
}

const char *hutch__session_container(const hutch_session *s)
{
	return s->container;
}

/* FNV-1a over the configuration: a short, stable fingerprint for the
 * label, so a changed configuration can be told from the same one. */
static void config_hash(const hutch_session *s, char out[17])
{
	unsigned long long h = 1469598103934665603ULL;
	const char *parts[3] = { s->image, s->workspace ? s->workspace : "", "" };

	for (size_t p = 0; p < 2; p++) {
		for (const char *c = parts[p]; *c; c++)
			h = (h ^ (unsigned char)*c) * 1099511628211ULL;
		h = (h ^ 0xff) * 1099511628211ULL;
	}
	for (size_t i = 0; i < s->env_count; i++) {
		for (const char *c = s->env[i]; *c; c++)
			h = (h ^ (unsigned char)*c) * 1099511628211ULL;
		h = (h ^ 0xfe) * 1099511628211ULL;
	}
	snprintf(out, 17, "%016llx", h);
}

static json_object *labels_new(const hutch_session *s, long long created)
{
	json_object *labels = json_object_new_object(), *env = json_object_new_array();
	char hash[17], when[32];

	if (!labels || !env) {
		json_object_put(labels);
		json_object_put(env);
		return NULL;
	}
	for (size_t i = 0; i < s->env_count; i++)
		json_object_array_add(env, json_object_new_string(s->env[i]));
	config_hash(s, hash);
	snprintf(when, sizeof(when), "%lld", created);
	json_object_object_add(labels, HUTCH_LABEL_SESSION, json_object_new_string(s->name));
	json_object_object_add(labels, HUTCH_LABEL_VERSION, json_object_new_string(PACKAGE_VERSION));
	json_object_object_add(labels, HUTCH_LABEL_CREATED, json_object_new_string(when));
	json_object_object_add(labels, HUTCH_LABEL_IMAGE, json_object_new_string(s->image));
	json_object_object_add(labels, HUTCH_LABEL_WORKSPACE,
			       json_object_new_string(s->workspace ? s->workspace : ""));
	json_object_object_add(labels, HUTCH_LABEL_ENV,
			       json_object_new_string(json_object_to_json_string_ext(env, JSON_C_TO_STRING_PLAIN)));
	json_object_object_add(labels, HUTCH_LABEL_CONFIG, json_object_new_string(hash));
	json_object_put(env);
	return labels;
}

static const char *label_get(json_object *labels, const char *key)
{
	json_object *v;

	if (labels && json_object_is_type(labels, json_type_object) &&
	    json_object_object_get_ex(labels, key, &v) &&
	    json_object_is_type(v, json_type_string))
		return json_object_get_string(v);
	return NULL;
}

/* Take the configuration recorded on the volume, so a recreated container
 * is what the session was, not what this particular call asked for. */
static int adopt_record(hutch_session *s, json_object *labels)
{
	const char *image = label_get(labels, HUTCH_LABEL_IMAGE);
	const char *ws = label_get(labels, HUTCH_LABEL_WORKSPACE);
	const char *envs = label_get(labels, HUTCH_LABEL_ENV);
	json_object *arr = NULL;
	char **env = NULL;
	size_t n = 0;

	if (!label_get(labels, HUTCH_LABEL_SESSION))
		return 0;
	if (envs)
		arr = hutch__json_parse(envs, strlen(envs));
	if (arr && json_object_is_type(arr, json_type_array)) {
		n = json_object_array_length(arr);
		env = calloc(n ? n : 1, sizeof(char *));
		if (!env) {
			json_object_put(arr);
			return -1;
		}
		for (size_t i = 0; i < n; i++) {
			env[i] = strdup(json_object_get_string(json_object_array_get_idx(arr, i)));
			if (!env[i]) {
				n = i;
				break;
			}
		}
	}
	json_object_put(arr);
	if (image && *image) {
		free(s->image);
		s->image = strdup(image);
	}
	free(s->workspace);
	s->workspace = ws && *ws ? strdup(ws) : NULL;
	if (env) {
		for (size_t i = 0; i < s->env_count; i++)
			free(s->env[i]);
		free(s->env);
		s->env = env;
		s->env_count = n;
	}
	return s->image ? 0 : -1;
}

/* Find or make the session's volume, and adopt its record. */
static int ensure_volume(hutch_session *s, hutch_error **err)
{
	json_object *vol = NULL, *body, *labels;
	char path[256];
	int rc, attempt;

	snprintf(path, sizeof(path), "/volumes/%s", s->volume);
	for (attempt = 0; attempt < 2; attempt++) {
		hutch_error *lerr = NULL;

		rc = hutch__engine_call(s->engine, "GET", path, NULL, &vol, NULL,
					"session volume", &lerr);
		if (rc == 0) {
			labels = NULL;
			json_object_object_get_ex(vol, "Labels", &labels);
			if (!label_get(labels, HUTCH_LABEL_SESSION)) {
				json_object_put(vol);
				return hutch__error_set(err, HUTCH_ECONFLICT,
					"volume '%s' exists but was not made by hutch; "
					"remove it or pick another session name", s->volume);
			}
			rc = adopt_record(s, labels);
			json_object_put(vol);
			return rc < 0 ? hutch__error_oom(err) : 0;
		}
		if (rc != HUTCH_ENOTFOUND) {
			if (err)
				*err = lerr;
			else
				hutch_error_free(lerr);
			return rc;
		}
		hutch_error_free(lerr);

		body = json_object_new_object();
		labels = labels_new(s, (long long)time(NULL));
		if (!body || !labels) {
			json_object_put(body);
			json_object_put(labels);
			return hutch__error_oom(err);
		}
		json_object_object_add(body, "Name", json_object_new_string(s->volume));
		json_object_object_add(body, "Labels", labels);
		lerr = NULL;
		rc = hutch__engine_call(s->engine, "POST", "/volumes/create", body,
					NULL, NULL, "create session volume", &lerr);
		json_object_put(body);
		/* Losing a creation race is fine: read the winner's record. */
		if (rc == 0 || rc == HUTCH_ECONFLICT) {
			s->new_record = 1;
			hutch_error_free(lerr);
			continue;
		}
		if (err)
			*err = lerr;
		else
			hutch_error_free(lerr);
		return rc;
	}
	return hutch__error_set(err, HUTCH_EFAILED,
				"session volume '%s' vanished while it was created", s->volume);
}

static json_object *create_body(const hutch_session *s)
{
	json_object *body = json_object_new_object(), *host = json_object_new_object();
	json_object *entry = json_object_new_array(), *env = json_object_new_array();
	json_object *mounts = json_object_new_array(), *mount = json_object_new_object();
	json_object *labels = labels_new(s, (long long)time(NULL));

	if (!body || !host || !entry || !env || !mounts || !mount || !labels) {
		json_object_put(body);
		json_object_put(host);
		json_object_put(entry);
		json_object_put(env);
		json_object_put(mounts);
		json_object_put(mount);
		json_object_put(labels);
		return NULL;
	}
	/* The agent sleeps forever as the entry point: it is in the
	 * container whatever the image holds (no shell, no sleep needed). */
	json_object_array_add(entry, json_object_new_string(HUTCH_AGENT_PATH));
	json_object_array_add(entry, json_object_new_string("sleep"));
	for (size_t i = 0; i < s->env_count; i++)
		json_object_array_add(env, json_object_new_string(s->env[i]));

	json_object_object_add(mount, "Type", json_object_new_string(s->workspace ? "bind" : "volume"));
	json_object_object_add(mount, "Source", json_object_new_string(s->workspace ? s->workspace : s->volume));
	json_object_object_add(mount, "Target", json_object_new_string("/workspace"));
	json_object_array_add(mounts, mount);

	json_object_object_add(host, "NetworkMode", json_object_new_string("none"));
	/* An init as PID 1 reaps the orphans that commands leave behind. */
	json_object_object_add(host, "Init", json_object_new_boolean(1));
	json_object_object_add(host, "Mounts", mounts);

	json_object_object_add(body, "Image", json_object_new_string(s->image));
	json_object_object_add(body, "Entrypoint", entry);
	json_object_object_add(body, "Cmd", json_object_new_array());
	json_object_object_add(body, "WorkingDir", json_object_new_string("/workspace"));
	json_object_object_add(body, "Env", env);
	json_object_object_add(body, "Labels", labels);
	json_object_object_add(body, "NetworkDisabled", json_object_new_boolean(1));
	json_object_object_add(body, "StopTimeout", json_object_new_int(2));
	json_object_object_add(body, "HostConfig", host);
	return body;
}

struct blob_reader {
	const char *data;
	size_t len, pos;
};

static size_t blob_read(char *buf, size_t len, void *p)
{
	struct blob_reader *r = p;
	size_t n = r->len - r->pos;

	if (n > len)
		n = len;
	memcpy(buf, r->data + r->pos, n);
	r->pos += n;
	return n;
}

int hutch__session_put_tar(hutch_session *s, const char *data, size_t len,
			   const char *what, hutch_error **err)
{
	struct blob_reader r = { data, len, 0 };
	hutch__request req = { .method = "PUT", .source = blob_read,
			       .source_payload = &r,
			       .content_type = "application/x-tar" };
	hutch__response resp = HUTCH__RESPONSE_INIT;
	char path[256];
	int rc;

	snprintf(path, sizeof(path), "/containers/%s/archive?path=%%2F", s->container);
	req.path = path;
	rc = hutch__http(s->engine, &req, &resp, err);
	if (rc == 0 && resp.status != 200)
		rc = hutch__engine_error(err, resp.status, resp.body.data,
					 resp.body.len, what);
	hutch__response_free(&resp);
	return rc;
}

/* Copy the agent into a created container, before it starts. */
static int put_agent(hutch_session *s, hutch_error **err)
{
	const char *data;
	size_t len;

	if (hutch__agent_tar(&data, &len) < 0)
		return hutch__error_oom(err);
	return hutch__session_put_tar(s, data, len,
				      "copy the agent into the container", err);
}

static int start(hutch_session *s, hutch_error **err)
{
	char path[256];

	snprintf(path, sizeof(path), "/containers/%s/start", s->container);
	return hutch__engine_call(s->engine, "POST", path, NULL, NULL, NULL,
				  "start the session's container", err);
}

int hutch__session_state(hutch_session *s, char *state, size_t statesz,
			 hutch_error **err)
{
	json_object *obj = NULL, *st, *v, *labels, *cfg;
	char path[256];
	int rc;

	snprintf(path, sizeof(path), "/containers/%s/json", s->container);
	rc = hutch__engine_call(s->engine, "GET", path, NULL, &obj, NULL,
				"inspect the session's container", err);
	if (rc < 0)
		return rc;
	if (json_object_object_get_ex(obj, "Config", &cfg) &&
	    json_object_object_get_ex(cfg, "Labels", &labels) &&
	    !label_get(labels, HUTCH_LABEL_SESSION)) {
		json_object_put(obj);
		return hutch__error_set(err, HUTCH_ECONFLICT,
			"container '%s' exists but was not made by hutch; remove it "
			"or pick another session name", s->container);
	}
	rc = 0;
	snprintf(state, statesz, "unknown");
	if (json_object_object_get_ex(obj, "State", &st)) {
		if (json_object_object_get_ex(st, "Status", &v) &&
		    json_object_is_type(v, json_type_string))
			snprintf(state, statesz, "%s", json_object_get_string(v));
		if (json_object_object_get_ex(st, "Running", &v) &&
		    json_object_get_boolean(v) && strcmp(state, "paused") != 0)
			rc = 1;
	}
	json_object_put(obj);
	return rc;
}

static int remove_container(hutch_session *s, hutch_error **err)
{
	char path[256];
	int rc;

	snprintf(path, sizeof(path), "/containers/%s?force=1", s->container);
	rc = hutch__engine_call(s->engine, "DELETE", path, NULL, NULL, NULL,
				"remove the session's container", err);
	return rc == HUTCH_ENOTFOUND ? 0 : rc;
}

static int create(hutch_session *s, hutch_error **err)
{
	json_object *body;
	char path[256];
	int rc;

	rc = ensure_volume(s, err);
	if (rc < 0)
		return rc;
	body = create_body(s);
	if (!body)
		return hutch__error_oom(err);
	snprintf(path, sizeof(path), "/containers/create?name=%s", s->container);
	rc = hutch__engine_call(s->engine, "POST", path, body, NULL, NULL,
				"create the session's container", err);
	json_object_put(body);
	if (rc == HUTCH_ENOTFOUND)
		hutch__error_wrap(err, rc, "image '%s' is not on the engine (build the "
				  "default one with images/offline/build.sh, or choose "
				  "another with --image or HUTCH_IMAGE)", s->image);
	return rc;
}

static void sleep_ms(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

int hutch_session_ensure(hutch_session *s, int *created, hutch_error **err)
{
	unsigned long long since = 0, now;
	char state[32];
	int rc, made = 0, waited = 0;

	if (created)
		*created = 0;
	s->new_record = 0;
	for (;;) {
		hutch_error *lerr = NULL;

		rc = hutch__session_state(s, state, sizeof(state), &lerr);
		if (rc == 1)
			break;
		if (rc == HUTCH_ENOTFOUND) {
			hutch_error_free(lerr);
			lerr = NULL;
			rc = create(s, &lerr);
			if (rc == HUTCH_ECONFLICT && !made) {
				/* Another process created it a moment ago:
				 * wait for it to be started below. */
				hutch_error_free(lerr);
				continue;
			}
			if (rc < 0)
				goto fail;
			made = 1;
			rc = put_agent(s, &lerr);
			if (rc == 0)
				rc = start(s, &lerr);
			if (rc < 0)
				goto fail;
			continue;
		}
		if (rc < 0)
			goto fail;

		/* It exists and is not running. */
		now = hutch__now_ms();
		if (!since)
			since = now;
		if (strcmp(state, "created") == 0 && !made &&
		    now - since < RACE_TAKEOVER_MS) {
			/* Someone else is between create and start. */
			sleep_ms(waited++ < 20 ? 25 : 100);
			continue;
		}
		if (strcmp(state, "paused") == 0) {
			char path[256];

			snprintf(path, sizeof(path), "/containers/%s/unpause", s->container);
			rc = hutch__engine_call(s->engine, "POST", path, NULL, NULL, NULL,
						"unpause the session's container", &lerr);
		} else if (strcmp(state, "dead") == 0 || strcmp(state, "removing") == 0) {
			rc = remove_container(s, &lerr);
		} else {
			if (strcmp(state, "created") == 0)
				rc = put_agent(s, &lerr);
			if (rc >= 0)
				rc = start(s, &lerr);
		}
		if (rc < 0 && rc != HUTCH_ECONFLICT && rc != HUTCH_ENOTFOUND)
			goto fail;
		hutch_error_free(lerr);
		if (now - since > RACE_GIVEUP_MS)
			goto stuck;
		if (rc < 0)
			sleep_ms(50);
		continue;
fail:
		hutch__error_wrap(&lerr, rc, "session '%s'", s->name);
		if (err)
			*err = lerr;
		else
			hutch_error_free(lerr);
		return rc;
	}
	if (created)
		*created = made;
	return 0;
stuck:
	return hutch__error_set(err, HUTCH_ETIMEOUT,
				"session '%s': the container did not come up within %d s",
				s->name, RACE_GIVEUP_MS / 1000);
}

/* ---- describing and removing sessions ------------------------------- */

void hutch_session_info_free(hutch_session_info *info)
{
	if (!info)
		return;
	hutch_session_info_array_free(info, 1);
}

static void info_clear(hutch_session_info *i)
{
	free(i->name);
	free(i->container);
	free(i->id);
	free(i->image);
	free(i->state);
	free(i->workspace);
	free(i->hutch_version);
}

void hutch_session_info_array_free(hutch_session_info *infos, size_t count)
{
	if (!infos)
		return;
	for (size_t i = 0; i < count; i++)
		info_clear(&infos[i]);
	free(infos);
}

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

static void info_from_labels(hutch_session_info *i, json_object *labels)
{
	const char *ws = label_get(labels, HUTCH_LABEL_WORKSPACE);
	const char *created = label_get(labels, HUTCH_LABEL_CREATED);

	if (!i->name)
		i->name = dup_or_null(label_get(labels, HUTCH_LABEL_SESSION));
	if (!i->image)
		i->image = dup_or_null(label_get(labels, HUTCH_LABEL_IMAGE));
	if (!i->hutch_version)
		i->hutch_version = dup_or_null(label_get(labels, HUTCH_LABEL_VERSION));
	if (!i->workspace && i->name) {
		if (ws && *ws)
			i->workspace = strdup(ws);
		else if (asprintf(&i->workspace, "volume:hutch-%s", i->name) < 0)
			i->workspace = NULL;
	}
	if (!i->created && created)
		i->created = strtoll(created, NULL, 10);
}

struct list {
	hutch_session_info *v;
	size_t n, alloc;
};

static hutch_session_info *list_find(struct list *l, const char *name)
{
	for (size_t i = 0; i < l->n; i++)
		if (strcmp(l->v[i].name, name) == 0)
			return &l->v[i];
	if (l->n == l->alloc) {
		size_t alloc = l->alloc ? l->alloc * 2 : 16;
		hutch_session_info *v = realloc(l->v, alloc * sizeof(*v));

		if (!v)
			return NULL;
		l->v = v;
		l->alloc = alloc;
	}
	memset(&l->v[l->n], 0, sizeof(l->v[0]));
	l->v[l->n].name = strdup(name);
	if (!l->v[l->n].name)
		return NULL;
	return &l->v[l->n++];
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const hutch_session_info *)a)->name,
		      ((const hutch_session_info *)b)->name);
}

/* The list entry for a container or volume that carries hutch's session
 * label (*out NULL when the item is not one of ours). */
static int labelled_entry(struct list *l, json_object *item,
			  hutch_session_info **out, json_object **labels,
			  hutch_error **err)
{
	const char *name;

	*out = NULL;
	if (!json_object_object_get_ex(item, "Labels", labels) ||
	    !(name = label_get(*labels, HUTCH_LABEL_SESSION)) ||
	    !hutch_session_name_valid(name))
		return 0;
	*out = list_find(l, name);
	return *out ? 0 : hutch__error_oom(err);
}

/* Add what the engine says about containers and volumes labelled as
 * hutch's; `only` limits the listing to one session. */
static int collect(struct list *l, hutch_engine *e, const char *only,
		   hutch_error **err)
{
	json_object *arr = NULL, *vols = NULL, *varr, *item, *labels, *v, *names;
	char filter[256], *esc, path[512];
	hutch_session_info *i;
	int rc;

	if (only)
		snprintf(filter, sizeof(filter), "{\"label\":[\"%s=%s\"]}",
			 HUTCH_LABEL_SESSION, only);
	else
		snprintf(filter, sizeof(filter), "{\"label\":[\"%s\"]}", HUTCH_LABEL_SESSION);
	esc = hutch__url_escape(filter);
	if (!esc)
		return hutch__error_oom(err);

	snprintf(path, sizeof(path), "/containers/json?all=1&filters=%s", esc);
	rc = hutch__engine_call(e, "GET", path, NULL, &arr, NULL, "list containers", err);
	if (rc < 0)
		goto out;
	for (size_t k = 0; json_object_is_type(arr, json_type_array) && k < json_object_array_length(arr); k++) {
		item = json_object_array_get_idx(arr, k);
		rc = labelled_entry(l, item, &i, &labels, err);
		if (rc < 0)
			goto out;
		if (!i)
			continue;
		if (json_object_object_get_ex(item, "Names", &names) &&
		    json_object_is_type(names, json_type_array) &&
		    json_object_array_length(names) > 0) {
			const char *cn = json_object_get_string(json_object_array_get_idx(names, 0));

			free(i->container);
			i->container = dup_or_null(cn && cn[0] == '/' ? cn + 1 : cn);
		}
		if (json_object_object_get_ex(item, "Id", &v)) {
			free(i->id);
			i->id = dup_or_null(json_object_get_string(v));
		}
		if (json_object_object_get_ex(item, "State", &v) &&
		    json_object_is_type(v, json_type_string)) {
			free(i->state);
			i->state = strdup(json_object_get_string(v));
		}
		info_from_labels(i, labels);
	}

	snprintf(path, sizeof(path), "/volumes?filters=%s", esc);
	rc = hutch__engine_call(e, "GET", path, NULL, &vols, NULL, "list volumes", err);
	if (rc < 0)
		goto out;
	if (vols && json_object_object_get_ex(vols, "Volumes", &varr) &&
	    json_object_is_type(varr, json_type_array)) {
		for (size_t k = 0; k < json_object_array_length(varr); k++) {
			item = json_object_array_get_idx(varr, k);
			rc = labelled_entry(l, item, &i, &labels, err);
			if (rc < 0)
				goto out;
			if (i)
				info_from_labels(i, labels);
		}
	}
	for (size_t k = 0; k < l->n; k++)
		if (!l->v[k].state && !(l->v[k].state = strdup("absent"))) {
			rc = hutch__error_oom(err);
			goto out;
		}
	rc = 0;
out:
	json_object_put(vols);
	json_object_put(arr);
	free(esc);
	return rc;
}

int hutch_session_list(hutch_session_info **out, size_t *count,
		       hutch_engine *e, hutch_error **err)
{
	struct list l = { NULL, 0, 0 };
	int rc = collect(&l, e, NULL, err);

	if (rc < 0) {
		hutch_session_info_array_free(l.v, l.n);
		return rc;
	}
	if (l.n)
		qsort(l.v, l.n, sizeof(l.v[0]), by_name);
	*out = l.v;
	*count = l.n;
	return 0;
}

int hutch_session_inspect(hutch_session_info **out, hutch_session *s,
			  hutch_error **err)
{
	struct list l = { NULL, 0, 0 };
	int rc = collect(&l, s->engine, s->name, err);

	if (rc < 0) {
		hutch_session_info_array_free(l.v, l.n);
		return rc;
	}
	if (l.n == 0) {
		free(l.v);
		return hutch__error_set(err, HUTCH_ENOTFOUND, "no session '%s'", s->name);
	}
	for (size_t k = 1; k < l.n; k++)
		info_clear(&l.v[k]);
	*out = l.v;
	return 0;
}

int hutch_session_remove(hutch_engine *e, const char *name, hutch_error **err)
{
	hutch_session_info *info = NULL;
	hutch_session *s = NULL;
	char path[256];
	int rc, removed = 0;

	rc = hutch_session_open(&s, e, name, NULL, err);
	if (rc < 0)
		return rc;
	/* Only what carries hutch's label for this session is removed: a
	 * container that merely has a matching name is left alone. */
	rc = hutch_session_inspect(&info, s, err);
	if (rc < 0)
		goto out;
	if (info->container) {
		rc = remove_container(s, err);
		if (rc < 0)
			goto out;
		removed = 1;
	}
	snprintf(path, sizeof(path), "/volumes/%s", s->volume);
	{
		hutch_error *lerr = NULL;

		rc = hutch__engine_call(e, "DELETE", path, NULL, NULL, NULL,
					"remove the session's volume", &lerr);
		if (rc == HUTCH_ENOTFOUND && removed) {
			hutch_error_free(lerr);
			rc = 0;
		} else if (rc < 0) {
			if (err)
				*err = lerr;
			else
				hutch_error_free(lerr);
		}
	}
out:
	if (rc < 0)
		hutch__error_wrap(err, rc, "remove session '%s'", name);
	hutch_session_info_free(info);
	hutch_session_free(s);
	return rc;
}
