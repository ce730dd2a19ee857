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

/*
 * Threads: everything below is written by hutch_engine_open only, except
 * what the comments say.  The URL and socket of every candidate are made
 * up front and never freed before the handle, so a pointer handed out by
 * hutch_engine_url() stays valid while another thread moves discovery on
 * to the next socket.
 */
struct hutch_engine {
	const char *source; /* where the URL came from */
	char **urls;	    /* candidate URLs, as the user or discovery
				   gave them; one unless discovery found more */
	char **sockets;	    /* their unix socket paths (NULL for tcp) */
	size_t ncandidates;
	size_t current; /* index in use; atomic (see http.c) */
	char *base;	/* "http://localhost", "https://host:port" */

	/* TLS (tcp:// with DOCKER_TLS_VERIFY, or https://): the peer is
	 * always verified, against tls_ca or the system's CAs. */
	int tls;
	char *tls_ca;	/* ca.pem, or NULL: the system's CAs */
	char *tls_cert; /* client certificate and key, or NULL */
	char *tls_key;

	/* The API version prefix.  Points at a static "1.41" until an older
	 * engine makes hutch negotiate; then at negotiated_version, which is
	 * written once, before the pointer is published (atomic). */
	const char *api_version;
	char negotiated_version[16];
	int negotiated; /* guarded by lock */

	pthread_mutex_t lock; /* guards the pool and negotiation */
	struct hutch__conn *pool;
	size_t nconns;	   /* idle connections in the pool */
	size_t busy, peak; /* connections in use now / at most so far */
	void *share;	   /* CURLSH: TLS sessions and DNS for the pool */
	pthread_mutex_t share_lock;

	/* The "sandbox" account of images sessions were made from, by image
	 * ID, so a process making many sessions reads an image's
	 * /etc/passwd once, also when they all start at once: the first
	 * asks, the others wait for its answer (guarded by lock; a ring,
	 * oldest replaced; image_user_cond signals an answer). */
	struct hutch__image_user {
		char id[80];
		long uid, gid; /* -1: the image has none */
		int pending;   /* being read by one caller */
	} image_users[16];
	size_t image_users_next;
	pthread_cond_t image_user_cond;
};

struct hutch_cancel {
	int raised; /* __atomic_* only: raised from signal handlers and threads */
};

/* Largest JSON answer hutch reads from an engine. */
#define HUTCH_MAX_RESPONSE (16u * 1024u * 1024u)

/* Returns non-zero to abort the transfer. */
typedef int (*hutch__sink_fn)(const char *data, size_t len, void *payload);
/* The request's deadline passed: a new deadline (monotonic ms, later than
 * now) to go on reading, or 0 to stop with HUTCH_ETIMEOUT. */
typedef unsigned long long (*hutch__deadline_fn)(void *payload);
/* Like a curl read callback: bytes written to buf, 0 at the end, or
 * (size_t)-1 to abort. */
typedef size_t (*hutch__source_fn)(char *buf, size_t len, void *payload);

typedef struct {
	const char *method;
	const char *path; /* after the version prefix, e.g. "/_ping" */
	int unversioned;  /* 1: no /vX.Y prefix */
	const char *body; /* JSON body, or NULL */
	size_t body_len;
	hutch__source_fn source; /* streamed request body (instead of body) */
	void *source_payload;
	const char *content_type; /* default application/json */
	hutch__sink_fn sink; /* streamed 2xx answer (instead of collecting) */
	void *sink_payload;
	unsigned long long deadline_ms; /* monotonic; 0: none */
	hutch__deadline_fn on_deadline; /* may be NULL; gets sink_payload */
	const hutch_cancel *cancel;
	const char *header; /* an answer header to keep (its name), or
				      NULL; "HEAD" asks for no body */
} hutch__request;

typedef struct {
	long status;
	hutch_buf body;	   /* error bodies always land here */
	int sink_aborted;  /* the sink asked to stop */
	char header[1024]; /* request.header's value, "" when absent
				      or longer than this */
} hutch__response;

#define HUTCH__RESPONSE_INIT                                 \
	{                                                    \
		0, HUTCH_BUF_INIT(HUTCH_MAX_RESPONSE), 0, "" \
	}

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

/*
 * GET `path` for something that may not be there: 1 with its JSON in *out
 * (may be NULL), 0 when the engine answers 404 (no error set, *out NULL),
 * or a negative code with the error set.
 */
int hutch__engine_get(hutch_engine *e, const char *path, const char *what,
		      json_object **out, hutch_error **err);

/* The "sandbox" account of image `id` if this handle has read it: 1 and
 * *uid, *gid (-1 when the image has none).  0: the caller is to read it
 * and then call _keep with the answer, or _drop when it could not; while
 * it does, other callers for that image wait (at most a few seconds). */
int hutch__engine_image_user(hutch_engine *e, const char *id, long *uid,
			     long *gid);
/* Remember what hutch__engine_image_user will answer for image `id`. */
void hutch__engine_image_user_keep(hutch_engine *e, const char *id, long uid,
				   long gid);
/* No answer for image `id` this time: a waiting caller reads it itself. */
void hutch__engine_image_user_drop(hutch_engine *e, const char *id);

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
