/*
 * engine_api.c - the engine's calls, typed (engine_api.h)
 *
 * Every URL, query and request body hutch sends for containers, volumes,
 * images and the engine itself is spelled here, and every answer field the
 * callers need is read from where the engines put it.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>

#include "common.h"
#include "engine_api.h"
#include "engine_internal.h"
#include "error.h"
#include "../shared/agent_protocol.h"

/* ---- the generic JSON call ------------------------------------------------ */

int hutch__engine_call(hutch_engine *e, const char *method, const char *path,
		       json_object *body, json_object **out, long *status,
		       const char *what, hutch_error **err)
{
	hutch__request req = { .method = method, .path = path };
	hutch__response resp = HUTCH__RESPONSE_INIT;
	size_t len = 0;
	int rc;

	if (body) {
		req.body = json_object_to_json_string_length(
			body, JSON_C_TO_STRING_PLAIN, &len);
		if (!req.body)
			return hutch__error_oom(err);
		req.body_len = len;
	}
	rc = hutch__http(e, &req, &resp, err);
	if (rc < 0) {
		hutch__error_wrap(err, rc, "%s", what);
		goto out;
	}
	if (status)
		*status = resp.status;
	if (resp.status < 200 || (resp.status >= 300 && resp.status != 304)) {
		rc = hutch__engine_error(err, resp.status, resp.body.data,
					 resp.body.len, what);
		goto out;
	}
	if (out) {
		*out = NULL;
		if (resp.body.len) {
			*out = hutch__json_parse(resp.body.data, resp.body.len);
			if (!*out) {
				rc = hutch__error_set(
					err, HUTCH_EPROTO,
					"%s: the engine's answer is not valid JSON",
					what);
				goto out;
			}
		}
	}
	rc = 0;
out:
	hutch__response_free(&resp);
	return rc;
}

int hutch__engine_get(hutch_engine *e, const char *path, const char *what,
		      json_object **out, hutch_error **err)
{
	long status = 0;
	int rc = hutch__engine_call(e, "GET", path, NULL, out, &status, what,
				    err);

	if (rc == 0)
		return 1;
	if (status == 404) {
		if (err) {
			hutch_error_free(*err);
			*err = NULL;
		}
		if (out)
			*out = NULL;
		return 0;
	}
	return rc;
}

/* A name or id goes into the path as it is: the callers' names are
 * checked (hutch_session_name_valid), ids are the engine's hex. */
static int path_of(char *path, size_t pathsz, hutch_error **err,
		   const char *before, const char *name, const char *after)
{
	int n = snprintf(path, pathsz, "%s%s%s", before, name, after);

	if (n < 0 || (size_t)n >= pathsz)
		return hutch__error_set(err, HUTCH_EINVALID,
					"name too long: '%.80s'", name);
	return 0;
}

/* A path that names one thing, for a call without body or answer. */
static int call_on(hutch_engine *e, const char *method, const char *before,
		   const char *name, const char *after, const char *what,
		   hutch_error **err)
{
	char path[512];
	int rc = path_of(path, sizeof(path), err, before, name, after);

	if (rc < 0)
		return rc;
	return hutch__engine_call(e, method, path, NULL, NULL, NULL, what, err);
}

/* GET a path that names one thing: its JSON in *out (may be NULL).  With
 * `find`, 1 when it is there and 0 for a 404 (hutch__engine_get). */
static int get_on(hutch_engine *e, const char *before, const char *name,
		  const char *after, int find, json_object **out,
		  const char *what, hutch_error **err)
{
	char path[1024];
	int rc = path_of(path, sizeof(path), err, before, name, after);

	if (rc < 0)
		return rc;
	if (find)
		return hutch__engine_get(e, path, what, out, err);
	return hutch__engine_call(e, "GET", path, NULL, out, NULL, what, err);
}

/* ---- containers ------------------------------------------------------- */

static json_object *strings_new(const char *const *v, size_t n)
{
	json_object *arr = json_object_new_array();

	for (size_t i = 0; arr && i < n; i++)
		json_object_array_add(arr, json_object_new_string(v[i]));
	return arr;
}

static json_object *mount_new(const struct hutch__mount *m)
{
	json_object *o = json_object_new_object();

	if (!o)
		return NULL;
	json_object_object_add(o, "Type", json_object_new_string(m->type));
	json_object_object_add(o, "Source", json_object_new_string(m->source));
	json_object_object_add(o, "Target", json_object_new_string(m->target));
	return o;
}

/* Add `v` under `key`; a NULL `v` (out of memory) sets *oom. */
static void put(json_object *obj, const char *key, json_object *v, int *oom)
{
	if (!v) {
		*oom = 1;
		return;
	}
	json_object_object_add(obj, key, v);
}

/* HostConfig's lockdown fields. */
static void host_lockdown(json_object *host,
			  const struct hutch__container_spec *sp, int *oom)
{
	static const char *const all[] = { "ALL" };
	static const char *const nnp[] = { "no-new-privileges" };

	put(host, "Init", json_object_new_boolean(sp->init), oom);
	put(host, "CapDrop", strings_new(all, sp->cap_drop_all ? 1 : 0), oom);
	put(host, "CapAdd",
	    strings_new((const char *const *)sp->cap_add, sp->cap_add_count),
	    oom);
	put(host, "SecurityOpt",
	    strings_new(nnp, sp->no_new_privileges ? 1 : 0), oom);
	put(host, "PidsLimit", json_object_new_int64(sp->pids_limit), oom);
	put(host, "Memory", json_object_new_int64(sp->memory), oom);
	put(host, "MemorySwap", json_object_new_int64(sp->memory_swap), oom);
	put(host, "NanoCpus", json_object_new_int64(sp->nano_cpus), oom);
	if (sp->read_only_rootfs)
		put(host, "ReadonlyRootfs", json_object_new_boolean(1), oom);
	if (sp->tmpfs_target) {
		json_object *tmpfs = json_object_new_object();

		if (tmpfs)
			put(tmpfs, sp->tmpfs_target,
			    json_object_new_string(sp->tmpfs_options), oom);
		put(host, "Tmpfs", tmpfs, oom);
	}
}

static json_object *host_config(const struct hutch__container_spec *sp,
				int *oom)
{
	json_object *host = json_object_new_object(), *mounts;

	if (!host)
		return NULL;
	if (sp->bind)
		put(host, "Binds", strings_new(&sp->bind, 1), oom);
	if (sp->network_mode)
		put(host, "NetworkMode",
		    json_object_new_string(sp->network_mode), oom);
	mounts = json_object_new_array();
	for (size_t i = 0; mounts && i < sp->mount_count; i++) {
		json_object *m = mount_new(&sp->mounts[i]);

		if (!m)
			*oom = 1;
		else
			json_object_array_add(mounts, m);
	}
	put(host, "Mounts", mounts, oom);
	if (sp->lockdown)
		host_lockdown(host, sp, oom);
	return host;
}

/* The body of POST /containers/create. */
static json_object *create_body(const struct hutch__container_spec *sp)
{
	json_object *body = json_object_new_object();
	int oom = 0;

	if (!body)
		return NULL;
	put(body, "Image", json_object_new_string(sp->image), &oom);
	put(body, "Entrypoint",
	    strings_new(sp->entrypoint, sp->entrypoint_count), &oom);
	if (sp->empty_cmd)
		put(body, "Cmd", json_object_new_array(), &oom);
	if (sp->working_dir)
		put(body, "WorkingDir", json_object_new_string(sp->working_dir),
		    &oom);
	if (sp->user)
		put(body, "User", json_object_new_string(sp->user), &oom);
	if (sp->env || sp->lockdown)
		put(body, "Env",
		    strings_new((const char *const *)sp->env, sp->env_count),
		    &oom);
	if (sp->labels)
		put(body, "Labels", json_object_get(sp->labels), &oom);
	put(body, "NetworkDisabled",
	    json_object_new_boolean(sp->network_disabled), &oom);
	if (sp->stop_timeout)
		put(body, "StopTimeout", json_object_new_int(sp->stop_timeout),
		    &oom);
	put(body, "HostConfig", host_config(sp, &oom), &oom);
	if (oom) {
		json_object_put(body);
		return NULL;
	}
	return body;
}

int hutch__api_container_create(hutch_engine *e, const char *name,
				const struct hutch__container_spec *spec,
				char *id, size_t idsz, const char *what,
				hutch_error **err)
{
	json_object *body, *out = NULL, *v;
	char path[512];
	int rc;

	if (id && idsz)
		id[0] = '\0';
	/* Fail closed: a session's container without these two is not a
	 * sandbox, whatever else its spec says (session_create.c sets them,
	 * each under its reason). */
	if (spec->lockdown && (!spec->cap_drop_all || !spec->no_new_privileges))
		return hutch__error_set(
			err, HUTCH_EINVALID,
			"%s: refused, a session's container must drop every "
			"capability and set no-new-privileges",
			what);
	rc = path_of(path, sizeof(path), err, "/containers/create?name=", name,
		     "");
	if (rc < 0)
		return rc;
	body = create_body(spec);
	if (!body)
		return hutch__error_oom(err);
	rc = hutch__engine_call(e, "POST", path, body, &out, NULL, what, err);
	json_object_put(body);
	if (rc == 0 && id && json_object_object_get_ex(out, "Id", &v) &&
	    json_object_is_type(v, json_type_string))
		snprintf(id, idsz, "%s", json_object_get_string(v));
	json_object_put(out);
	return rc;
}

int hutch__api_container_start(hutch_engine *e, const char *container,
			       const char *what, hutch_error **err)
{
	return call_on(e, "POST", "/containers/", container, "/start", what,
		       err);
}

int hutch__api_container_unpause(hutch_engine *e, const char *container,
				 const char *what, hutch_error **err)
{
	return call_on(e, "POST", "/containers/", container, "/unpause", what,
		       err);
}

int hutch__api_container_remove(hutch_engine *e, const char *container,
				int force, const char *what, hutch_error **err)
{
	return call_on(e, "DELETE", "/containers/", container,
		       force ? "?force=1" : "", what, err);
}

int hutch__api_container_inspect(hutch_engine *e, const char *container,
				 json_object **out, const char *what,
				 hutch_error **err)
{
	return get_on(e, "/containers/", container, "/json", 0, out, what, err);
}

int hutch__api_container_find(hutch_engine *e, const char *container,
			      json_object **out, const char *what,
			      hutch_error **err)
{
	return get_on(e, "/containers/", container, "/json", 1, out, what, err);
}

/* The string at obj.a.b, or NULL. */
static const char *string_at(json_object *obj, const char *a, const char *b)
{
	json_object *v;

	if (!obj || !json_object_object_get_ex(obj, a, &v) ||
	    (b && !json_object_object_get_ex(v, b, &v)) ||
	    !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

int hutch__api_container_agent_info(hutch_engine *e, const char *container,
				    struct hutch__container_agent_info *out,
				    const char *what, hutch_error **err)
{
	json_object *obj = NULL, *state, *v, *mounts;
	const char *s;
	int rc;

	rc = get_on(e, "/containers/", container, "/json", 0, &obj, what, err);
	if (rc < 0)
		return rc;
	memset(out, 0, sizeof(*out));
	if (obj && json_object_object_get_ex(obj, "State", &state)) {
		out->running =
			json_object_object_get_ex(state, "Running", &v) &&
			json_object_is_type(v, json_type_boolean) &&
			json_object_get_boolean(v);
		if (json_object_object_get_ex(state, "Pid", &v) &&
		    json_object_is_type(v, json_type_int) &&
		    json_object_get_int64(v) > 0 &&
		    json_object_get_int64(v) <= INT32_MAX)
			out->pid = (long)json_object_get_int64(v);
	}
	s = string_at(obj, "Config", "Hostname");
	if (s && strlen(s) < sizeof(out->hostname))
		snprintf(out->hostname, sizeof(out->hostname), "%s", s);
	/* The volume at HUTCH_AGENT_DIR: Docker and Podman both list it in
	 * Mounts with its host path as Source. */
	if (obj && json_object_object_get_ex(obj, "Mounts", &mounts) &&
	    json_object_is_type(mounts, json_type_array)) {
		size_t n = json_object_array_length(mounts);

		for (size_t i = 0; i < n; i++) {
			json_object *m = json_object_array_get_idx(mounts, i);
			const char *dst = string_at(m, "Destination", NULL),
				   *type = string_at(m, "Type", NULL),
				   *src = string_at(m, "Source", NULL);

			if (!dst || strcmp(dst, HUTCH_AGENT_DIR) != 0 ||
			    !type || strcmp(type, "volume") != 0 || !src ||
			    src[0] != '/' ||
			    strlen(src) >= sizeof(out->agent_source))
				continue;
			snprintf(out->agent_source, sizeof(out->agent_source),
				 "%s", src);
			break;
		}
	}
	json_object_put(obj);
	return 0;
}

/* `filters` as the engines take it, URL-escaped: {"label":[LABEL]} and,
 * with `running`, "status":["running"]. */
static char *label_filter(const char *label, int running)
{
	json_object *f = json_object_new_object(), *l = json_object_new_array();
	char *esc = NULL;

	if (f && l) {
		json_object_array_add(l, json_object_new_string(label));
		json_object_object_add(f, "label", l);
		l = NULL;
		if (running) {
			static const char *const st[] = { "running" };

			json_object_object_add(f, "status", strings_new(st, 1));
		}
		esc = hutch__url_escape(json_object_to_json_string_ext(
			f, JSON_C_TO_STRING_PLAIN |
				   JSON_C_TO_STRING_NOSLASHESCAPE));
	}
	json_object_put(l);
	json_object_put(f);
	return esc;
}

/* GET `prefix` with the label filter (see label_filter) appended. */
static int list_call(hutch_engine *e, const char *prefix, const char *label,
		     int running, json_object **out, const char *what,
		     hutch_error **err)
{
	char *esc = label_filter(label, running), *path = NULL;
	int rc;

	if (!esc || asprintf(&path, "%sfilters=%s", prefix, esc) < 0) {
		free(esc);
		return hutch__error_oom(err);
	}
	rc = hutch__engine_call(e, "GET", path, NULL, out, NULL, what, err);
	free(path);
	free(esc);
	return rc;
}

int hutch__api_container_list(hutch_engine *e, const char *label, int all,
			      json_object **out, const char *what,
			      hutch_error **err)
{
	return list_call(e,
			 all ? "/containers/json?all=1&" : "/containers/json?",
			 label, !all, out, what, err);
}

/* ---- archives ---------------------------------------------------------- */

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

/* "/containers/C/archive?path=ESCAPED" and `query`; caller frees. */
static char *archive_path(const char *container, const char *path,
			  const char *query)
{
	char *esc = hutch__url_escape(path), *url = NULL;

	if (esc && asprintf(&url, "/containers/%s/archive?path=%s%s", container,
			    esc, query) < 0)
		url = NULL;
	free(esc);
	return url;
}

int hutch__api_archive_put(hutch_engine *e, const char *container,
			   const char *dir, int copy_uidgid, const char *data,
			   size_t len, const char *what, hutch_error **err)
{
	struct blob_reader r = { data, len, 0 };
	hutch__request req = { .method = "PUT",
			       .source = blob_read,
			       .source_payload = &r,
			       .content_type = "application/x-tar" };
	hutch__response resp = HUTCH__RESPONSE_INIT;
	char *path = archive_path(container, dir,
				  copy_uidgid ? "&copyUIDGID=1" : "");
	int rc;

	if (!path)
		return hutch__error_oom(err);
	req.path = path;
	rc = hutch__http(e, &req, &resp, err);
	if (rc == 0 && resp.status != 200)
		rc = hutch__engine_error(err, resp.status, resp.body.data,
					 resp.body.len, what);
	hutch__response_free(&resp);
	free(path);
	return rc;
}

int hutch__api_archive_stat(hutch_engine *e, const char *container,
			    const char *path, char *stat, size_t statsz,
			    hutch_error **err)
{
	hutch__request req = { .method = "HEAD",
			       .header = "X-Docker-Container-Path-Stat" };
	hutch__response resp = HUTCH__RESPONSE_INIT;
	char *url = archive_path(container, path, "");
	int rc;

	if (!url)
		return hutch__error_oom(err);
	req.path = url;
	rc = hutch__http(e, &req, &resp, err);
	if (rc == 0 && resp.status == 200) {
		snprintf(stat, statsz, "%s", resp.header);
		rc = 1;
	}
	hutch__response_free(&resp);
	free(url);
	return rc;
}

int hutch__api_archive_exists(hutch_engine *e, const char *container,
			      const char *path, const char *what,
			      hutch_error **err)
{
	hutch__request req = { .method = "HEAD" };
	hutch__response resp = HUTCH__RESPONSE_INIT;
	char *url = archive_path(container, path, "");
	int rc;

	if (!url)
		return hutch__error_oom(err);
	req.path = url;
	rc = hutch__http(e, &req, &resp, err);
	if (rc == 0 && resp.status == 200)
		rc = 1;
	else if (rc == 0 && resp.status != 404)
		/* A HEAD answer has no body to quote. */
		rc = hutch__engine_error(err, resp.status, NULL, 0, what);
	hutch__response_free(&resp);
	free(url);
	return rc;
}

/* ---- volumes ------------------------------------------------------------- */

int hutch__api_volume_create(hutch_engine *e, const char *name,
			     json_object *labels, const char *driver_opt_o,
			     const char *what, hutch_error **err)
{
	json_object *body = json_object_new_object(), *opts = NULL;
	int rc, oom = 0;

	if (!body)
		return hutch__error_oom(err);
	put(body, "Name", json_object_new_string(name), &oom);
	if (labels)
		put(body, "Labels", json_object_get(labels), &oom);
	if (driver_opt_o) {
		opts = json_object_new_object();
		if (opts)
			put(opts, "o", json_object_new_string(driver_opt_o),
			    &oom);
		put(body, "DriverOpts", opts, &oom);
	}
	if (oom) {
		json_object_put(body);
		return hutch__error_oom(err);
	}
	rc = hutch__engine_call(e, "POST", "/volumes/create", body, NULL, NULL,
				what, err);
	json_object_put(body);
	return rc;
}

int hutch__api_volume_inspect(hutch_engine *e, const char *name,
			      json_object **out, const char *what,
			      hutch_error **err)
{
	return get_on(e, "/volumes/", name, "", 0, out, what, err);
}

int hutch__api_volume_find(hutch_engine *e, const char *name, json_object **out,
			   const char *what, hutch_error **err)
{
	return get_on(e, "/volumes/", name, "", 1, out, what, err);
}

int hutch__api_volume_remove(hutch_engine *e, const char *name,
			     const char *what, hutch_error **err)
{
	return call_on(e, "DELETE", "/volumes/", name, "", what, err);
}

int hutch__api_volume_list(hutch_engine *e, const char *label,
			   json_object **out, const char *what,
			   hutch_error **err)
{
	return list_call(e, "/volumes?", label, 0, out, what, err);
}

/* ---- images and the engine ------------------------------------------------ */

int hutch__api_image_inspect(hutch_engine *e, const char *image,
			     json_object **out, const char *what,
			     hutch_error **err)
{
	return get_on(e, "/images/", image, "/json", 0, out, what, err);
}

int hutch__api_image_facts(hutch_engine *e, const char *image, char *id,
			   size_t idsz, const char *const *labels,
			   size_t nlabels, int *match, int *named,
			   const char *what, hutch_error **err)
{
	json_object *img = NULL, *v, *cfg, *have = NULL;
	const char *s;
	int rc;

	if (id && idsz)
		id[0] = '\0';
	if (match)
		*match = 0;
	if (named)
		*named = 0;
	rc = hutch__api_image_inspect(e, image, &img, what, err);
	if (rc < 0)
		return rc;
	/* Only an ID of the form the engines give, whole: it goes into
	 * DELETE /images/ID as it is. */
	if (id && json_object_object_get_ex(img, "Id", &v) &&
	    json_object_is_type(v, json_type_string) &&
	    (s = json_object_get_string(v)) && strlen(s) == 71 &&
	    strncmp(s, "sha256:", 7) == 0 &&
	    strspn(s + 7, "0123456789abcdef") == 64 && idsz > 71)
		snprintf(id, idsz, "%s", s);
	/* Any name but Docker's "<none>:<none>" for a nameless image. */
	if (named && json_object_object_get_ex(img, "RepoTags", &v) &&
	    json_object_is_type(v, json_type_array))
		for (size_t i = 0; i < json_object_array_length(v); i++) {
			json_object *t = json_object_array_get_idx(v, i);

			if (json_object_is_type(t, json_type_string) &&
			    strcmp(json_object_get_string(t),
				   "<none>:<none>") != 0)
				*named = 1;
		}
	if (json_object_object_get_ex(img, "Config", &cfg))
		json_object_object_get_ex(cfg, "Labels", &have);
	/* Every label asked for, with its value; none asked: no match. */
	if (match && nlabels && json_object_is_type(have, json_type_object)) {
		*match = 1;
		for (size_t i = 0; *match && i < nlabels; i++) {
			const char *eq = strchr(labels[i], '=');
			char key[256];

			if (!eq || (size_t)(eq - labels[i]) >= sizeof(key)) {
				*match = 0;
				break;
			}
			memcpy(key, labels[i], (size_t)(eq - labels[i]));
			key[eq - labels[i]] = '\0';
			*match = json_object_object_get_ex(have, key, &v) &&
				 json_object_is_type(v, json_type_string) &&
				 strcmp(json_object_get_string(v), eq + 1) == 0;
		}
	}
	json_object_put(img);
	return 0;
}

/* The first error in an import's answer, a stream of JSON messages
 * ({"status"}, {"error", "errorDetail"}), newly allocated; NULL when
 * there is none (or no memory to say it). */
static char *stream_error(const char *data, size_t len)
{
	json_tokener *tok = json_tokener_new();
	char *msg = NULL;
	size_t pos = 0;

	if (!tok)
		return NULL;
	while (pos < len && !msg) {
		json_object *o, *v;
		size_t used;

		/* Skip the newlines between messages. */
		if (data[pos] == '\r' || data[pos] == '\n' ||
		    data[pos] == ' ') {
			pos++;
			continue;
		}
		o = json_tokener_parse_ex(tok, data + pos, (int)(len - pos));
		used = (size_t)json_tokener_get_parse_end(tok);
		if (!o || used == 0)
			break; /* not JSON: the status said enough */
		pos += used;
		json_tokener_reset(tok);
		if (json_object_object_get_ex(o, "error", &v) &&
		    json_object_is_type(v, json_type_string))
			msg = strdup(json_object_get_string(v));
		json_object_put(o);
	}
	json_tokener_free(tok);
	return msg;
}

int hutch__api_image_import(hutch_engine *e, const char *ref,
			    const char *const *changes, size_t nchanges,
			    hutch__source_fn source, void *payload,
			    const hutch_cancel *cancel, const char *what,
			    hutch_error **err)
{
	hutch__request req = { .method = "POST",
			       .source = source,
			       .source_payload = payload,
			       .content_type = "application/x-tar",
			       .cancel = cancel };
	hutch__response resp = HUTCH__RESPONSE_INIT;
	/* The reference as repo=NAME:TAG, no tag=: Podman's compat API
	 * drops `tag` for fromSrc and tags "latest", both take this. */
	hutch_buf q = HUTCH_BUF_INIT(64 * 1024);
	char *esc = hutch__url_escape(ref), *msg;
	int rc = 0;

	if (!esc ||
	    hutch__buf_printf(&q, "/images/create?fromSrc=-&repo=%s", esc) < 0)
		rc = hutch__error_oom(err);
	free(esc);
	for (size_t i = 0; rc == 0 && i < nchanges; i++) {
		esc = hutch__url_escape(changes[i]);
		if (!esc || hutch__buf_printf(&q, "&changes=%s", esc) < 0)
			rc = hutch__error_set(
				err, HUTCH_EINVALID,
				"%s: the image's settings are too long", what);
		free(esc);
	}
	req.path = q.data; /* set: the first printf succeeded */
	if (rc == 0)
		rc = hutch__http(e, &req, &resp, err);
	if (rc < 0) {
		hutch__error_wrap(err, rc, "%s", what);
	} else if (resp.status != 200) {
		rc = hutch__engine_error(err, resp.status, resp.body.data,
					 resp.body.len, what);
	} else if ((msg = stream_error(resp.body.data, resp.body.len))) {
		rc = hutch__error_set(err, hutch__engine_error_code(500, msg),
				      "%s: %.500s", what, msg);
		free(msg);
	}
	hutch__response_free(&resp);
	hutch__buf_free(&q);
	return rc;
}

int hutch__api_image_change(int podman, const char *instr, const char *key,
			    size_t keylen, const char *value, char **out)
{
	hutch_buf b = HUTCH_BUF_INIT(1u << 20);
	int bad;

	bad = hutch__buf_printf(&b, "%s %.*s%s", instr, key ? (int)keylen : 0,
				key ? key : "", key ? "=" : "") < 0;
	if (podman) {
		/* Measured with Podman 4.3: ENV K="V" gives V whatever it
		 * holds (quotes, backslashes and '$' kept); WORKDIR and USER
		 * are taken as they come, quotes included. */
		bad = bad || (key && hutch__buf_addstr(&b, "\"") < 0) ||
		      hutch__buf_addstr(&b, value) < 0 ||
		      (key && hutch__buf_addstr(&b, "\"") < 0);
	} else {
		/* Docker: inside double quotes a backslash makes the next
		 * character literal; '"', '\\' and '$' (expansion) need
		 * one. */
		bad = bad || hutch__buf_addstr(&b, "\"") < 0;
		for (const char *p = value; !bad && *p; p++)
			bad = (strchr("\"\\$", *p) &&
			       hutch__buf_addstr(&b, "\\") < 0) ||
			      hutch__buf_add(&b, p, 1) < 0;
		bad = bad || hutch__buf_addstr(&b, "\"") < 0;
	}
	if (bad || !(*out = hutch__buf_detach(&b, NULL))) {
		hutch__buf_free(&b);
		return -1;
	}
	return 0;
}

int hutch__api_image_remove(hutch_engine *e, const char *image, int force,
			    const char *what, hutch_error **err)
{
	return call_on(e, "DELETE", "/images/", image, force ? "?force=1" : "",
		       what, err);
}

int hutch__api_ping(hutch_engine *e, hutch_error **err)
{
	hutch__request req = { .method = "GET",
			       .path = "/_ping",
			       .unversioned = 1 };
	hutch__response resp = HUTCH__RESPONSE_INIT;
	int rc;

	rc = hutch__http(e, &req, &resp, err);
	if (rc == 0 && resp.status != 200)
		rc = hutch__engine_error(err, resp.status, resp.body.data,
					 resp.body.len, "ping");
	hutch__response_free(&resp);
	return rc;
}

int hutch__api_version(hutch_engine *e, json_object **out, hutch_error **err)
{
	hutch__request req = { .method = "GET",
			       .path = "/version",
			       .unversioned = 1 };
	hutch__response resp = HUTCH__RESPONSE_INIT;
	int rc;

	*out = NULL;
	rc = hutch__http(e, &req, &resp, err);
	if (rc < 0)
		goto out;
	if (resp.status != 200) {
		rc = hutch__engine_error(err, resp.status, resp.body.data,
					 resp.body.len, "engine version");
		goto out;
	}
	*out = hutch__json_parse(resp.body.data, resp.body.len);
	if (!*out || !json_object_is_type(*out, json_type_object)) {
		json_object_put(*out);
		*out = NULL;
		rc = hutch__error_set(
			err, HUTCH_EPROTO,
			"engine version: the answer is not a JSON object");
	}
out:
	hutch__response_free(&resp);
	return rc;
}

int hutch__api_negotiate(hutch_engine *e, hutch_error **err)
{
	json_object *obj = NULL, *v;
	int rc;

	rc = hutch__api_version(e, &obj, err);
	if (rc < 0)
		return rc;
	if (json_object_object_get_ex(obj, "ApiVersion", &v) &&
	    json_object_is_type(v, json_type_string) &&
	    hutch__http_use_api_version(e, json_object_get_string(v)) == 0)
		rc = 0;
	else
		rc = hutch__error_set(
			err, HUTCH_EPROTO,
			"engine at %s did not say its API version",
			hutch_engine_url(e));
	json_object_put(obj);
	return rc;
}

int hutch__api_is_podman(hutch_engine *e, hutch_error **err)
{
	hutch_error *lerr = NULL;
	long status = 0;
	int rc;

	rc = hutch__engine_call(e, "GET", "/libpod/_ping", NULL, NULL, &status,
				"ask which engine this is", &lerr);
	if (rc == 0)
		return 1;
	if (rc == HUTCH_ENOTFOUND || status == 404) {
		hutch_error_free(lerr);
		return 0;
	}
	return hutch__error_pass(err, lerr, rc);
}
