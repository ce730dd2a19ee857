/*
 * engine_internal.h - what the library's modules share about an engine
 */
#ifndef HUTCH_ENGINE_INTERNAL_H
#define HUTCH_ENGINE_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <json-c/json.h>

#include <hutch/engine.h>
#include <hutch/exec.h>

#include "buf.h"

struct hutch__conn;

struct hutch_engine {
	char *url;              /* as the user or discovery gave it */
	const char *source;     /* where the URL came from */
	char *socket_path;      /* unix socket, or NULL for tcp */
	char *base;             /* "http://localhost" or "http://host:port" */
	char api_version[16];   /* pinned API version, e.g. "1.41" */
	int negotiated;         /* api_version came from the engine */

	/* Discovery: sockets that exist, tried in order when one refuses. */
	char **candidates;
	size_t ncandidates, current;

	pthread_mutex_t lock;   /* guards pool, api_version and current */
	struct hutch__conn *pool;
	size_t nconns;
};

struct hutch_cancel {
	volatile int raised;
};

/* Largest JSON answer hutch reads from an engine. */
#define HUTCH_MAX_RESPONSE (16u * 1024u * 1024u)

/* Returns non-zero to abort the transfer. */
typedef int (*hutch__sink_fn)(const char *data, size_t len, void *payload);
/* Like a curl read callback: bytes written to buf, 0 at the end, or
 * (size_t)-1 to abort. */
typedef size_t (*hutch__source_fn)(char *buf, size_t len, void *payload);

typedef struct {
	const char *method;
	const char *path;          /* after the version prefix, e.g. "/_ping" */
	int unversioned;           /* 1: no /vX.Y prefix */
	const char *body;          /* JSON body, or NULL */
	size_t body_len;
	hutch__source_fn source;   /* streamed request body (instead of body) */
	void *source_payload;
	const char *content_type;  /* default application/json */
	hutch__sink_fn sink;       /* streamed 2xx answer (instead of collecting) */
	void *sink_payload;
	unsigned long long deadline_ms; /* monotonic; 0: none */
	const hutch_cancel *cancel;
} hutch__request;

typedef struct {
	long status;
	hutch_buf body;            /* error bodies always land here */
	int sink_aborted;          /* the sink asked to stop */
} hutch__response;

#define HUTCH__RESPONSE_INIT { 0, HUTCH_BUF_INIT(HUTCH_MAX_RESPONSE), 0 }

/*
 * Make one request.  Returns 0 when the engine answered (any status; see
 * resp->status), or HUTCH_EUNREACHABLE, HUTCH_ETIMEOUT (deadline),
 * HUTCH_ECANCELLED, HUTCH_ETOOBIG or HUTCH_EFAILED for transport failures.
 * When the sink aborts, returns 0 with resp->sink_aborted set.
 */
int hutch__http(hutch_engine *e, const hutch__request *req,
		hutch__response *resp, hutch_error **err);
void hutch__response_free(hutch__response *resp);

/*
 * The usual request: JSON body in (may be NULL), JSON answer out (may be
 * NULL).  Statuses outside 2xx and 304 become a typed error whose message
 * starts with `what`.  `*status` (may be NULL) gets the HTTP status.
 */
int hutch__engine_call(hutch_engine *e, const char *method, const char *path,
		       json_object *body, json_object **out, long *status,
		       const char *what, hutch_error **err);

/* Turn an engine's error answer into a typed error (both body shapes:
 * {"message"} and Podman's {"cause","message","response"}). */
int hutch__engine_error(hutch_error **err, long status, const char *body,
			size_t len, const char *what);
/* The code for an HTTP status and engine message. */
int hutch__engine_error_code(long status, const char *message);
/* The engine's message from an error body, newly allocated, or NULL. */
char *hutch__engine_error_message(const char *body, size_t len);

/* Parse a JSON document of exactly `len` bytes; NULL when it is not one. */
json_object *hutch__json_parse(const char *data, size_t len);

/* Percent-encode for a URL path segment or query value; caller frees. */
char *hutch__url_escape(const char *s);

#endif
