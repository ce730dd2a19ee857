/*
 * http.h - HTTP/1.1 to the engine: requests, answers, the connection pool
 *
 * The transport knows methods, paths, bodies and statuses; what the paths
 * and bodies mean is the engine layer's (engine_api.h).
 */
#ifndef HUTCH_HTTP_H
#define HUTCH_HTTP_H

#include <stddef.h>

#include <hutch/engine.h>
#include <hutch/exec.h>

#include "buf.h"

/* A cancellation flag: raised by hutch_cancel_raise (exec.c), read by the
 * transport between reads of an answer. */
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
	/* hutch__http_upgrade: bytes taken from the input (read from its
	 * fd, or of its buffer once the first of them was sent). */
	unsigned long long input_taken;
} hutch__response;

#define HUTCH__RESPONSE_INIT                                    \
	{                                                       \
		0, HUTCH_BUF_INIT(HUTCH_MAX_RESPONSE), 0, "", 0 \
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
 * A POST whose answer is upgraded to a raw, two-way stream (exec start
 * with stdin or a terminal): the engine answers "101 UPGRADED" (or 200
 * from one that does not upgrade) and from then on the connection carries
 * the command's output one way and its input the other.
 */
typedef struct {
	const char *path; /* after the version prefix */
	const char *body; /* JSON body */
	size_t body_len;
	hutch__sink_fn sink; /* the stream as it comes, raw */
	void *sink_payload;
	unsigned long long deadline_ms; /* monotonic; 0: none */
	hutch__deadline_fn on_deadline; /* may be NULL; gets sink_payload */
	const hutch_cancel *cancel;	/* either of the two raised: stop */
	const hutch_cancel *cancel2;
	/* The input: these bytes, or what `input_fd` gives until its end
	 * (read only when poll says it is readable, so a borrowed blocking
	 * fd is fine; it is never made non-blocking).  Then the write side
	 * is half-closed (shutdown SHUT_WR), which is the command's end of
	 * file.  Neither: nothing is sent and nothing is closed. */
	const char *input;
	size_t input_len;
	int input_fd;	   /* -1: none */
	int no_half_close; /* 1: at the end of input, only stop sending */
	/* Called once the stream began, before any input is sent, and then
	 * on wake-ups at most every HUTCH__TICK_MS, in this thread (a
	 * terminal's resize). */
	void (*tick)(void *payload);
	void *tick_payload;
} hutch__upgrade_request;

#define HUTCH__TICK_MS 50

/*
 * Make the request on a connection of its own (never a pooled one: after
 * the upgrade it is no longer HTTP), read the stream into the sink while
 * sending the input, until the engine ends the stream.  Input the engine
 * no longer takes (the command ended) is dropped without an error.
 * Returns like hutch__http: 0 when the engine answered (resp->status 101
 * or 2xx: the stream was read to its end or the sink aborted; any other
 * status: its small error body in resp->body), HUTCH_ETIMEOUT,
 * HUTCH_ECANCELLED, HUTCH_EUNREACHABLE, or HUTCH_EFAILED when the
 * connection broke (resp->status says whether the stream had begun).
 * resp->input_taken says how much of the input was consumed.
 */
/*
 * The poll() timeout of a stream's loop (hutch__http_upgrade's, and the
 * agent's channel's): at most a second, HUTCH__TICK_MS when something is
 * looked at between events (`often`: cancel flags, a terminal's size),
 * never past `deadline` (0: none), 0 when reads stopped with data left
 * (`more`).
 */
int hutch__loop_timeout(unsigned long long deadline, int often, int more);

int hutch__http_upgrade(hutch_engine *e, const hutch__upgrade_request *req,
			hutch__response *resp, hutch_error **err);

/* Use API version `version` from now on (an engine too old for the one
 * hutch pins named it): written once, later calls keep the first.  -1
 * when it is too long to be one. */
int hutch__http_use_api_version(hutch_engine *e, const char *version);

/* Percent-encode for a URL path segment or query value; caller frees. */
char *hutch__url_escape(const char *s);

/* Close every pooled connection. */
void hutch__http_pool_free(hutch_engine *e);

/* Share TLS sessions and DNS answers between the engine's connections.
 * 0, or -1 (the connections then work without sharing). */
int hutch__http_share_init(hutch_engine *e);

/* Load libcurl and run its process-wide setup, once; safe to call from many
 * threads.  0, or HUTCH_EFAILED with why in *err (src/lib/dl.c). */
int hutch__http_global_init(hutch_error **err);

#endif
