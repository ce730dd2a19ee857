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
#include "agent_chan.h"
#include "engine_api.h"
#include "engine_internal.h"
#include "error.h"
#include "http.h"

/* Docker 20.10 and Podman 4 both speak 1.41; older engines say so and
 * hutch falls back to the version they name (see http.c). */
#define HUTCH_PINNED_API "1.41"

/* Add one candidate: its URL as shown to the user and its socket path
 * (NULL for tcp). */
static int add_candidate(hutch_engine *e, char *url, char *sock)
{
	if (!url || (sock == NULL) != (strncmp(url, "unix://", 7) != 0)) {
		free(url);
		free(sock);
		return -1;
	}
	e->urls[e->ncandidates] = url;
	e->sockets[e->ncandidates] = sock;
	e->ncandidates++;
	return 0;
}

static char *cert_file(const char *dir, const char *name)
{
	char *path;

	if (asprintf(&path, "%s/%s", dir, name) < 0)
		return NULL;
	return path;
}

static int readable(const char *path)
{
	return access(path, R_OK) == 0;
}

/*
 * TLS the way the docker client reads its environment: DOCKER_TLS_VERIFY
 * (any non-empty value, as docker) or DOCKER_TLS turns it on for tcp://,
 * and DOCKER_CERT_PATH (default ~/.docker) holds ca.pem, cert.pem and
 * key.pem.  https:// always means TLS, http:// never.
 *
 * Unlike docker with DOCKER_TLS alone, hutch never skips verifying the
 * engine's certificate: whoever sits between hutch and the engine could
 * otherwise run anything in every sandbox, and read what comes out.
 * Without ca.pem the system's CAs vouch for the engine.
 */
static int tls_setup(hutch_engine *e, const char *url, int scheme_tls,
		     hutch_error **err)
{
	const char *verify = getenv("DOCKER_TLS_VERIFY"),
		   *tls = getenv("DOCKER_TLS");
	const char *dir = getenv("DOCKER_CERT_PATH"), *home = getenv("HOME");
	char *ca = NULL, *cert = NULL, *key = NULL, *homedir = NULL;
	int explicit_dir = dir && *dir, want_verify = verify && *verify;
	int rc = 0;

	if (scheme_tls < 0 ||
	    (scheme_tls == 0 && !want_verify && !(tls && *tls)))
		return 0; /* http://, or tcp:// without TLS settings */
	e->tls = 1;
	if (!explicit_dir) {
		if (!home || !*home)
			return 0; /* no certificate directory: system CAs only */
		if (asprintf(&homedir, "%s/.docker", home) < 0)
			return hutch__error_oom(err);
		dir = homedir;
	}
	ca = cert_file(dir, "ca.pem");
	cert = cert_file(dir, "cert.pem");
	key = cert_file(dir, "key.pem");
	if (!ca || !cert || !key) {
		rc = hutch__error_oom(err);
		goto out;
	}
	/* With DOCKER_TLS_VERIFY and a DOCKER_CERT_PATH of one's own, a
	 * missing file is a mistake: say which one now rather than fail the
	 * handshake later with a less helpful message. */
	if (want_verify && explicit_dir) {
		const char *files[] = { ca, cert, key };

		for (size_t i = 0; i < HUTCH_ARRAY_SIZE(files); i++)
			if (!readable(files[i])) {
				rc = hutch__error_set(
					err, HUTCH_EINVALID,
					"engine %s: DOCKER_TLS_VERIFY is set but %s cannot be read "
					"(%s); DOCKER_CERT_PATH must hold ca.pem, cert.pem and key.pem",
					url, files[i], strerror(errno));
				goto out;
			}
	}
	if (readable(cert) != readable(key)) {
		rc = hutch__error_set(
			err, HUTCH_EINVALID,
			"engine %s: TLS client certificate: %s exists but %s cannot be read; "
			"DOCKER_CERT_PATH needs both or neither",
			url, readable(cert) ? cert : key,
			readable(cert) ? key : cert);
		goto out;
	}
	if (readable(ca)) {
		e->tls_ca = ca;
		ca = NULL;
	} else if (explicit_dir && !readable(cert)) {
		rc = hutch__error_set(
			err, HUTCH_EINVALID,
			"engine %s: DOCKER_CERT_PATH '%s' holds neither ca.pem nor cert.pem "
			"and key.pem",
			url, dir);
		goto out;
	}
	if (readable(cert)) {
		e->tls_cert = cert;
		e->tls_key = key;
		cert = key = NULL;
	}
out:
	free(ca);
	free(cert);
	free(key);
	free(homedir);
	return rc;
}

static int set_url(hutch_engine *e, const char *url, hutch_error **err)
{
	const char *rest;
	char *u, *sock;
	int scheme_tls;

	if (!url || !*url)
		return hutch__error_set(err, HUTCH_EINVALID,
					"empty engine URL");
	if (strncmp(url, "unix://", 7) == 0 || url[0] == '/') {
		rest = url[0] == '/' ? url : url + 7;
		if (rest[0] != '/')
			return hutch__error_set(
				err, HUTCH_EINVALID,
				"engine URL '%s': a unix socket needs an absolute path",
				url);
		sock = strdup(rest);
		if (asprintf(&u, "unix://%s", rest) < 0)
			u = NULL;
		e->base = strdup("http://localhost");
		if (add_candidate(e, u, sock) < 0 || !e->base)
			return hutch__error_oom(err);
		return 0;
	}
	if (strncmp(url, "tcp://", 6) == 0)
		scheme_tls = 0; /* TLS when the environment asks for it */
	else if (strncmp(url, "https://", 8) == 0)
		scheme_tls = 1;
	else if (strncmp(url, "http://", 7) == 0)
		scheme_tls = -1;
	else
		return hutch__error_set(
			err, HUTCH_EINVALID,
			"engine URL '%s' is not supported: use unix:///PATH, tcp://HOST:PORT "
			"or https://HOST:PORT",
			url);
	rest = strstr(url, "://") + 3;
	/* A trailing slash is harmless ("tcp://host:2376/"); a path is not. */
	if (!*rest || *rest == '/' || strchr(rest, '?') ||
	    (strchr(rest, '/') && strchr(rest, '/')[1] != '\0'))
		return hutch__error_set(
			err, HUTCH_EINVALID,
			"engine URL '%s': expected tcp://HOST:PORT", url);
	if (tls_setup(e, url, scheme_tls, err) < 0)
		return HUTCH_EINVALID;
	if (asprintf(&e->base, "%s://%.*s", e->tls ? "https" : "http",
		     (int)strcspn(rest, "/"), rest) < 0)
		e->base = NULL;
	if (add_candidate(e, strdup(url), NULL) < 0 || !e->base)
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
		snprintf(paths[n++], sizeof(paths[0]), "%s/podman/podman.sock",
			 xdg);
		snprintf(paths[n++], sizeof(paths[0]), "%s/docker.sock", xdg);
	} else {
		snprintf(paths[n++], sizeof(paths[0]),
			 "/run/user/%u/podman/podman.sock", (unsigned)getuid());
	}
	if (home && *home)
		snprintf(paths[n++], sizeof(paths[0]),
			 "%s/.docker/run/docker.sock", home);

	for (size_t i = 0; i < n; i++) {
		if (is_socket(paths[i])) {
			char *u = NULL;

			if (asprintf(&u, "unix://%s", paths[i]) < 0)
				u = NULL;
			if (add_candidate(e, u, strdup(paths[i])) < 0)
				return hutch__error_oom(err);
		}
		if (len < sizeof(tried))
			len += (size_t)snprintf(tried + len,
						sizeof(tried) - len, "%s%s",
						i ? ", " : "", paths[i]);
	}
	if (e->ncandidates == 0)
		return hutch__error_set(
			err, HUTCH_EUNREACHABLE,
			"no container engine found: HUTCH_ENGINE, DOCKER_HOST and "
			"CONTAINER_HOST are unset and none of %s exists; start Docker "
			"('dockerd') or Podman ('podman system service --time=0'), or "
			"name one with --engine or HUTCH_ENGINE",
			tried);
	e->source = "default socket";
	e->base = strdup("http://localhost");
	return e->base ? 0 : hutch__error_oom(err);
}

int hutch_engine_open(hutch_engine **out, const char *url, hutch_error **err)
{
	static const char *const vars[] = { "HUTCH_ENGINE", "DOCKER_HOST",
					    "CONTAINER_HOST" };
	hutch_engine *e;
	const char *v;
	int rc = 0;

	if ((rc = hutch__http_global_init(err)) < 0)
		return rc;
	e = calloc(1, sizeof(*e));
	if (!e)
		return hutch__error_oom(err);
	pthread_mutex_init(&e->lock, NULL);
	pthread_mutex_init(&e->share_lock, NULL);
	e->api_version = HUTCH_PINNED_API;
	e->negotiate = hutch__api_negotiate;
	/* At most one URL from the caller or the environment, or one per
	 * default socket. */
	e->urls = calloc(8, sizeof(char *));
	e->sockets = calloc(8, sizeof(char *));
	if (!e->urls || !e->sockets) {
		hutch_engine_free(e);
		return hutch__error_oom(err);
	}

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
	/* Without the share, connections work as well, only with a full TLS
	 * handshake each. */
	(void)hutch__http_share_init(e);
	*out = e;
	return 0;
}

void hutch_engine_free(hutch_engine *e)
{
	if (!e)
		return;
	hutch__http_pool_free(e);
	hutch__chan_known_free(e);
	for (size_t i = 0; i < e->ncandidates; i++) {
		free(e->urls[i]);
		free(e->sockets[i]);
	}
	free(e->urls);
	free(e->sockets);
	free(e->base);
	free(e->tls_ca);
	free(e->tls_cert);
	free(e->tls_key);
	pthread_mutex_destroy(&e->lock);
	pthread_mutex_destroy(&e->share_lock);
	free(e);
}

const char *hutch_engine_url(const hutch_engine *e)
{
	return e->urls[__atomic_load_n(&e->current, __ATOMIC_ACQUIRE)];
}

const char *hutch_engine_source(const hutch_engine *e)
{
	return e->source;
}

const char *hutch_engine_api_version(const hutch_engine *e)
{
	return __atomic_load_n(&e->api_version, __ATOMIC_ACQUIRE);
}

int hutch_engine_tls(const hutch_engine *e)
{
	return e->tls;
}

int hutch_engine_ping(hutch_engine *e, hutch_error **err)
{
	return hutch__api_ping(e, err);
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
	hutch_engine_info *info = NULL;
	json_object *obj = NULL, *comps, *c;
	char *name;
	int rc;

	rc = hutch__api_version(e, &obj, err);
	if (rc < 0)
		return rc;
	info = calloc(1, sizeof(*info));
	if (!info) {
		json_object_put(obj);
		return hutch__error_oom(err);
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
	info->name = strdup(
		info->kind == HUTCH_ENGINE_PODMAN ? "Podman" : "Docker Engine");
	json_object_put(obj);
	*out = info;
	return 0;
}

int hutch_engine_image_exists(hutch_engine *e, const char *image,
			      hutch_error **err)
{
	hutch_error *lerr = NULL;
	int rc;

	/* Image references go into the path as they are ('/' and ':' are
	 * part of them), so only the characters a reference may hold pass. */
	if (!image || !*image || strlen(image) > 512 ||
	    strspn(image, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			  "0123456789._-/:@") != strlen(image))
		return hutch__error_set(err, HUTCH_EINVALID,
					"invalid image name '%.100s'",
					image ? image : "");
	rc = hutch__api_image_inspect(e, image, NULL, "image", &lerr);
	if (rc == HUTCH_ENOTFOUND) {
		hutch_error_free(lerr);
		return 0;
	}
	if (rc < 0)
		return hutch__error_pass(err, lerr, rc);
	return 1;
}
