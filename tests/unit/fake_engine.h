/*
 * fake_engine.h - a tiny Docker-like engine for failure-case tests
 *
 * A unix-socket HTTP/1.1 server that runs in threads inside the test
 * process.  Each request (request line, headers, body by Content-Length or
 * chunked) is handed to the test's handler, which writes whatever raw
 * response it likes: a well-formed answer, half a frame, garbage, nothing.
 * Connections are kept alive unless the handler asks to close, so a test
 * can count how many connections a client opened.
 *
 * Every buffer is bounded: headers up to FAKE_MAX_HEAD, bodies up to
 * FAKE_MAX_BODY (a larger request gets 413 and the connection is closed),
 * at most FAKE_MAX_CONNS connections over the server's life and
 * FAKE_MAX_LOG logged requests (more are counted, not kept).
 */
#ifndef HUTCH_TEST_FAKE_ENGINE_H
#define HUTCH_TEST_FAKE_ENGINE_H

#include <stddef.h>

#define FAKE_MAX_HEAD (64 * 1024)
#define FAKE_MAX_BODY (4 * 1024 * 1024)
#define FAKE_MAX_CONNS 64
#define FAKE_MAX_LOG 512
#define FAKE_MAX_LINE 1100 /* one log entry: "METHOD PATH" */

struct fake_engine;
struct fake_conn;

struct fake_request {
	const char *method; /* "GET", "POST", ... */
	const char *path;   /* as sent, e.g. "/v1.41/_ping" */
	const char *body;   /* NUL-terminated; may also hold NUL bytes */
	size_t body_len;
	unsigned long seq; /* 0-based index of the request on this server */
	unsigned int conn; /* 1-based index of its connection */
};

typedef enum {
	FAKE_KEEP = 0,	/* keep the connection open for the next request */
	FAKE_CLOSE = 1, /* close it (the handler's response is complete) */
} fake_action;

/* Called from a server thread, one call per request.  Write the response
 * with the fake_send* helpers below.  Handlers of different connections may
 * run at the same time: keep shared state atomic. */
typedef fake_action (*fake_handler_fn)(struct fake_conn *conn,
				       const struct fake_request *req,
				       void *payload);

/* 0, or -1 with errno set.  The socket lives in a fresh mkdtemp dir. */
int fake_engine_start(struct fake_engine **out, fake_handler_fn handler,
		      void *payload);
/* Stop every thread, close every socket, remove the dir.  Accepts NULL. */
void fake_engine_stop(struct fake_engine *fe);

/* "unix:///tmp/hutch-fake-XXXXXX/engine.sock".  Borrowed. */
const char *fake_engine_url(const struct fake_engine *fe);
/* The directory holding the socket.  Borrowed. */
const char *fake_engine_dir(const struct fake_engine *fe);

/* Connections accepted so far. */
unsigned int fake_engine_connections(struct fake_engine *fe);
/* Requests received so far (may exceed FAKE_MAX_LOG). */
unsigned long fake_engine_request_count(struct fake_engine *fe);
/* "METHOD PATH" of request i, or NULL past the end of the log.  The
 * string stays valid until fake_engine_stop(). */
const char *fake_engine_request(struct fake_engine *fe, unsigned long i);
/* Logged requests with this method (NULL: any) whose path equals `path`,
 * or starts with it when `path` ends with '*'. */
unsigned long fake_engine_count(struct fake_engine *fe, const char *method,
				const char *path);
/* The whole log, one request a line, into buf (truncated to fit). */
void fake_engine_log_dump(struct fake_engine *fe, char *buf, size_t bufsz);

/* ---- for handlers ---------------------------------------------------- */

/* Write raw bytes.  0, or -1 when the client went away or the server is
 * stopping. */
int fake_send(struct fake_conn *c, const void *data, size_t len);
/* printf into a bounded buffer (8 KiB), then fake_send. */
int fake_sendf(struct fake_conn *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* A complete answer with Content-Length. */
int fake_send_response(struct fake_conn *c, int status,
		       const char *content_type, const char *body,
		       size_t body_len);
/* The same with Content-Type: application/json and a NUL-terminated body. */
int fake_send_json(struct fake_conn *c, int status, const char *json);
/* One exec stream frame: 8-byte header, then `len` bytes of payload. */
int fake_send_frame(struct fake_conn *c, int stream, const void *data,
		    size_t len);

void fake_sleep_ms(unsigned int ms);

#endif
