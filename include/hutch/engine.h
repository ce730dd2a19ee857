/*
 * hutch/engine.h - a connection to one Docker-compatible container engine
 *
 * A hutch_engine speaks the engine's REST API over a unix socket or TCP
 * (plain or TLS) with libcurl.  Requests reuse keep-alive connections from
 * a pool, so a program that makes calls one after another uses one
 * connection, and N threads calling at once keep N connections (up to 128
 * idle ones).
 *
 * Threads: a handle may be shared between threads; every call on it is
 * thread-safe, and the strings its getters return stay valid until
 * hutch_engine_free().  Free it only when no other thread uses it.
 */
#ifndef HUTCH_ENGINE_H
#define HUTCH_ENGINE_H

#include <hutch/error.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct hutch_engine hutch_engine;

typedef enum {
	HUTCH_ENGINE_UNKNOWN = 0,
	HUTCH_ENGINE_DOCKER,
	HUTCH_ENGINE_PODMAN,
} hutch_engine_kind;

/*
 * Open a handle on the engine at `url` ("unix:///path", "/path",
 * "tcp://host:port", "https://host:port" or "http://host:port").  With
 * url == NULL the engine is looked for in HUTCH_ENGINE, DOCKER_HOST,
 * CONTAINER_HOST and then the usual sockets of rootful and rootless Docker
 * and Podman; the first socket that exists is used and the next ones are
 * tried if it refuses connections.  No request is made here.
 *
 * TLS, as the docker client reads its environment: tcp:// uses TLS when
 * DOCKER_TLS_VERIFY (any non-empty value) or DOCKER_TLS is set; https://
 * always does, http:// never.  DOCKER_CERT_PATH (default ~/.docker) holds
 * ca.pem, which the engine's certificate must be signed by (without it, the
 * system's CAs), and cert.pem and key.pem, the client certificate offered
 * to the engine.  The engine's certificate is always verified (also with
 * DOCKER_TLS alone, where docker would not).  With DOCKER_TLS_VERIFY and
 * DOCKER_CERT_PATH both set, all three files must be readable.
 *
 * Returns 0, HUTCH_EINVALID for a URL hutch cannot use or missing TLS
 * files (the message names the file), HUTCH_EUNREACHABLE when discovery
 * found nothing.  A TLS handshake that fails (unknown CA, certificate
 * refused) fails the first request with HUTCH_EUNREACHABLE.  `*out`
 * belongs to the caller (hutch_engine_free).
 */
int hutch_engine_open(hutch_engine **out, const char *url, hutch_error **err);

/* Accepts NULL.  Closes the pooled connections. */
void hutch_engine_free(hutch_engine *engine);

/* The URL in use, e.g. "unix:///run/podman/podman.sock".  Borrowed. */
const char *hutch_engine_url(const hutch_engine *engine);

/* Where the URL came from: "--engine", "HUTCH_ENGINE", "DOCKER_HOST",
 * "CONTAINER_HOST", "default socket", or "HUTCH_ENGINES" for an engine of a
 * fleet (hutch/fleet.h).  Borrowed, static. */
const char *hutch_engine_source(const hutch_engine *engine);

/* The API version prefix hutch pins, e.g. "1.41".  Borrowed. */
const char *hutch_engine_api_version(const hutch_engine *engine);

/* 1 when requests go over TLS. */
int hutch_engine_tls(const hutch_engine *engine);

/* GET /_ping.  0 when the engine answered. */
int hutch_engine_ping(hutch_engine *engine, hutch_error **err);

typedef struct {
	hutch_engine_kind kind;
	char *name;	   /* "Docker Engine" or "Podman" */
	char *version;	   /* engine version */
	char *api_version; /* newest API version the engine speaks */
	char *min_api_version;
	char *os;
	char *arch;
} hutch_engine_info;

/* GET /version.  `*out` belongs to the caller (hutch_engine_info_free). */
int hutch_engine_info_get(hutch_engine_info **out, hutch_engine *engine,
			  hutch_error **err);

/* Accepts NULL. */
void hutch_engine_info_free(hutch_engine_info *info);

/* 1 if the engine has `image` locally, 0 if not, negative on error. */
int hutch_engine_image_exists(hutch_engine *engine, const char *image,
			      hutch_error **err);

#ifdef __cplusplus
}
#endif
#endif
