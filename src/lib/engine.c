/*
 * engine.c - finding an engine and asking it about itself
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"
#include "engine_internal.h"
#include "error.h"
#include "http.h"

/* Docker 20.10 and Podman 4 both speak 1.41; older engines say so and
 * hutch falls back to the version they name (see http.c). */
#define HUTCH_PINNED_API "1.41"

static int set_url(hutch_engine *e, const char *url, hutch_error **err)
{
	const char *rest;

	if (!url || !*url)
		return hutch__error_set(err, HUTCH_EINVALID, "empty engine URL");
	if (strncmp(url, "unix://", 7) == 0 || url[0] == '/') {
		rest = url[0] == '/' ? url : url + 7;
		if (rest[0] != '/')
			return hutch__error_set(err, HUTCH_EINVALID,
				"engine URL '%s': a unix socket needs an absolute path", url);
		e->socket_path = strdup(rest);
		e->base = strdup("http://localhost");
		if (asprintf(&e->url, "unix://%s", rest) < 0)
			e->url = NULL;
	} else if (strncmp(url, "tcp://", 6) == 0 || strncmp(url, "http://", 7) == 0) {
		rest = strstr(url, "://") + 3;
		if (!*rest || strchr(rest, '/') || strchr(rest, '?'))
			return hutch__error_set(err, HUTCH_EINVALID,
				"engine URL '%s': expected tcp://HOST:PORT", url);
		if (asprintf(&e->base, "http://%s", rest) < 0)
			e->base = NULL;
		e->url = strdup(url);
	} else {
		return hutch__error_set(err, HUTCH_EINVALID,
			"engine URL '%s' is not supported: use unix:///PATH or tcp://HOST:PORT", url);
	}
	if (!e->url || !e->base || (url[0] != 't' && url[0] != 'h' && !e->socket_path))
		return hutch__error_oom(err);
	return 0;
}

static int is_socket(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISSOCK(st.st_mode);
}

/* The usual places, rootful first: a root user's Docker or Podman, then
 * the current user's rootless ones. */
static int discover(hutch_engine *e, hutch_error **err)
{
	const char *xdg = getenv("XDG_RUNTIME_DIR"), *home = getenv("HOME");
	char paths[6][512], tried[1536] = "";
	size_t n = 0, len = 0;

	snprintf(paths[n++], sizeof(paths[0]), "/var/run/docker.sock");
	snprintf(paths[n++], sizeof(paths[0]), "/run/podman/podman.sock");
	if (xdg && *xdg) {
		snprintf(paths[n++], sizeof(paths[0]), "%s/podman/podman.sock", xdg);
		snprintf(paths[n++], sizeof(paths[0]), "%s/docker.sock", xdg);
	} else {
		snprintf(paths[n++], sizeof(paths[0]), "/run/user/%u/podman/podman.sock",
			 (unsigned)getuid());
	}
	if (home && *home)
		snprintf(paths[n++], sizeof(paths[0]), "%s/.docker/run/docker.sock", home);

	e->candidates = calloc(n, sizeof(char *));
	if (!e->candidates)
		return hutch__error_oom(err);
	for (size_t i = 0; i < n; i++) {
		if (is_socket(paths[i])) {
			e->candidates[e->ncandidates] = strdup(paths[i]);
			if (!e->candidates[e->ncandidates])
				return hutch__error_oom(err);
			e->ncandidates++;
		}
		if (len < sizeof(tried))
			len += (size_t)snprintf(tried + len, sizeof(tried) - len, "%s%s",
						i ? ", " : "", paths[i]);
	}
	if (e->ncandidates == 0)
		return hutch__error_set(err, HUTCH_EUNREACHABLE,
			"no container engine found: HUTCH_ENGINE, DOCKER_HOST and "
			"CONTAINER_HOST are unset and none of %s exists; start Docker "
			"('dockerd') or Podman ('podman system service --time=0'), or "
			"name one with --engine or HUTCH_ENGINE", tried);
	e->source = "default socket";
	return set_url(e, e->candidates[0], err);
}

int hutch_engine_open(hutch_engine **out, const char *url, hutch_error **err)
{
	static const char *const vars[] = { "HUTCH_ENGINE", "DOCKER_HOST", "CONTAINER_HOST" };
	hutch_engine *e;
	const char *v;
	int rc = 0;

	if (hutch__http_global_init() < 0)
		return hutch__error_set(err, HUTCH_EFAILED, "libcurl failed to initialise");
	e = calloc(1, sizeof(*e));
	if (!e)
		return hutch__error_oom(err);
	pthread_mutex_init(&e->lock, NULL);
	snprintf(e->api_version, sizeof(e->api_version), "%s", HUTCH_PINNED_API);

	if (url) {
		e->source = "--engine";
		rc = set_url(e, url, err);
		goto done;
	}
	for (size_t i = 0; i < HUTCH_ARRAY_SIZE(vars); i++) {
		v = getenv(vars[i]);
		if (v && *v) {
			e->source = vars[i];
			rc = set_url(e, v, err);
			if (rc < 0)
				hutch__error_wrap(err, rc, "%s", vars[i]);
			goto done;
		}
	}
	rc = discover(e, err);
done:
	if (rc < 0) {
		hutch_engine_free(e);
		return rc;
	}
	*out = e;
	return 0;
}

void hutch_engine_free(hutch_engine *e)
{
	if (!e)
		return;
	hutch__http_pool_free(e);
	for (size_t i = 0; i < e->ncandidates; i++)
		free(e->candidates[i]);
	free(e->candidates);
	free(e->url);
	free(e->socket_path);
	free(e->base);
	pthread_mutex_destroy(&e->lock);
	free(e);
}

const char *hutch_engine_url(const hutch_engine *e)
{
	return e->url;
}

const char *hutch_engine_source(const hutch_engine *e)
{
	return e->source;
}

const char *hutch_engine_api_version(const hutch_engine *e)
{
	return e->api_version;
}

int hutch_engine_ping(hutch_engine *e, hutch_error **err)
{
	hutch__request req = { .method = "GET", .path = "/_ping", .unversioned = 1 };
	hutch__response resp = HUTCH__RESPONSE_INIT;
	int rc;

	rc = hutch__http(e, &req, &resp, err);
	if (rc == 0 && resp.status != 200)
		rc = hutch__engine_error(err, resp.status, resp.body.data,
					 resp.body.len, "ping");
	hutch__response_free(&resp);
	return rc;
}

static char *get_str(json_object *obj, const char *key)
{
	json_object *v;

	if (obj && json_object_object_get_ex(obj, key, &v) &&
	    json_object_is_type(v, json_type_string))
		return strdup(json_object_get_string(v));
	return NULL;
}

void hutch_engine_info_free(hutch_engine_info *info)
{
	if (!info)
		return;
	free(info->name);
	free(info->version);
	free(info->api_version);
	free(info->min_api_version);
	free(info->os);
	free(info->arch);
	free(info);
}

int hutch_engine_info_get(hutch_engine_info **out, hutch_engine *e,
			  hutch_error **err)
{
	hutch__request req = { .method = "GET", .path = "/version", .unversioned = 1 };
	hutch__response resp = HUTCH__RESPONSE_INIT;
	hutch_engine_info *info = NULL;
	json_object *obj = NULL, *comps, *c;
	char *name;
	int rc;

	rc = hutch__http(e, &req, &resp, err);
	if (rc < 0)
		goto out;
	if (resp.status != 200) {
		rc = hutch__engine_error(err, resp.status, resp.body.data,
					 resp.body.len, "engine version");
		goto out;
	}
	obj = hutch__json_parse(resp.body.data, resp.body.len);
	info = calloc(1, sizeof(*info));
	if (!info) {
		rc = hutch__error_oom(err);
		goto out;
	}
	if (!obj || !json_object_is_type(obj, json_type_object)) {
		rc = hutch__error_set(err, HUTCH_EPROTO,
				      "engine version: the answer is not a JSON object");
		goto out;
	}
	info->version = get_str(obj, "Version");
	info->api_version = get_str(obj, "ApiVersion");
	info->min_api_version = get_str(obj, "MinAPIVersion");
	info->os = get_str(obj, "Os");
	info->arch = get_str(obj, "Arch");
	/* Both engines list components; Podman names itself there. */
	info->kind = HUTCH_ENGINE_DOCKER;
	if (json_object_object_get_ex(obj, "Components", &comps) &&
	    json_object_is_type(comps, json_type_array)) {
		for (size_t i = 0; i < json_object_array_length(comps); i++) {
			c = json_object_array_get_idx(comps, i);
			name = get_str(c, "Name");
			if (name && strcasestr(name, "podman"))
				info->kind = HUTCH_ENGINE_PODMAN;
			free(name);
		}
	}
	info->name = strdup(info->kind == HUTCH_ENGINE_PODMAN ? "Podman" : "Docker Engine");
	*out = info;
	info = NULL;
	rc = 0;
out:
	hutch_engine_info_free(info);
	json_object_put(obj);
	hutch__response_free(&resp);
	return rc;
}

int hutch_engine_image_exists(hutch_engine *e, const char *image, hutch_error **err)
{
	char path[1024];
	hutch_error *lerr = NULL;
	int rc;

	/* Image references go into the path as they are ('/' and ':' are
	 * part of them), so only the characters a reference may hold pass. */
	if (!image || !*image || strlen(image) > 512 ||
	    strspn(image, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			  "0123456789._-/:@") != strlen(image))
		return hutch__error_set(err, HUTCH_EINVALID,
					"invalid image name '%.100s'", image ? image : "");
	snprintf(path, sizeof(path), "/images/%s/json", image);
	rc = hutch__engine_call(e, "GET", path, NULL, NULL, NULL, "image", &lerr);
	if (rc == HUTCH_ENOTFOUND) {
		hutch_error_free(lerr);
		return 0;
	}
	if (rc < 0) {
		if (err)
			*err = lerr;
		else
			hutch_error_free(lerr);
		return rc;
	}
	return 1;
}
