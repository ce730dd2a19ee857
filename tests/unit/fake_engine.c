/*
 * fake_engine.c - a tiny Docker-like engine for failure-case tests
 *
 * One thread accepts; each connection gets a thread of its own that reads
 * requests and hands them to the test's handler.  Every wait (accept, read,
 * write) also watches a stop pipe, so fake_engine_stop() never hangs on a
 * client that keeps a connection open.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "fake_engine.h"

#define RBUF_SIZE FAKE_MAX_HEAD

struct fake_conn {
	struct fake_engine *fe;
	int fd;
	unsigned int index; /* 1-based */
	pthread_t thread;
	size_t have; /* bytes in rbuf */
	char rbuf[RBUF_SIZE];
	char head[FAKE_MAX_HEAD + 1];
	char *body; /* grows up to FAKE_MAX_BODY + 1 */
	size_t body_len, body_alloc;
	int is_head; /* the request being answered is a HEAD */
};

struct fake_engine {
	fake_handler_fn handler;
	void *payload;
	char dir[64];
	char sock[100]; /* fits sun_path */
	char url[160];
	int listen_fd;
	int stop_pipe[2];
	pthread_t acceptor;
	int acceptor_started;

	pthread_mutex_t lock; /* guards everything below */
	struct fake_conn *conns[FAKE_MAX_CONNS];
	unsigned int nconns; /* connections accepted (and kept) */
	unsigned long nrequests;
	char (*log)[FAKE_MAX_LINE];
};

void fake_sleep_ms(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* Wait until fd is ready for `events`.  1 when ready, -1 on stop or error. */
static int wait_fd(struct fake_engine *fe, int fd, short events)
{
	struct pollfd p[2] = {
		{ .fd = fd, .events = events },
		{ .fd = fe->stop_pipe[0], .events = POLLIN },
	};
	int n;

	for (;;) {
		n = poll(p, 2, -1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (p[1].revents)
			return -1;
		if (p[0].revents)
			return 1;
	}
}

/* ---- the log --------------------------------------------------------- */

static unsigned long log_request(struct fake_engine *fe, const char *method,
				 const char *path)
{
	unsigned long seq;

	pthread_mutex_lock(&fe->lock);
	seq = fe->nrequests++;
	if (seq < FAKE_MAX_LOG)
		snprintf(fe->log[seq], FAKE_MAX_LINE, "%s %s", method, path);
	pthread_mutex_unlock(&fe->lock);
	return seq;
}

unsigned int fake_engine_connections(struct fake_engine *fe)
{
	unsigned int n;

	pthread_mutex_lock(&fe->lock);
	n = fe->nconns;
	pthread_mutex_unlock(&fe->lock);
	return n;
}

unsigned long fake_engine_request_count(struct fake_engine *fe)
{
	unsigned long n;

	pthread_mutex_lock(&fe->lock);
	n = fe->nrequests;
	pthread_mutex_unlock(&fe->lock);
	return n;
}

const char *fake_engine_request(struct fake_engine *fe, unsigned long i)
{
	const char *s = NULL;

	/* Entries are written once, before nrequests covers them. */
	pthread_mutex_lock(&fe->lock);
	if (i < fe->nrequests && i < FAKE_MAX_LOG)
		s = fe->log[i];
	pthread_mutex_unlock(&fe->lock);
	return s;
}

static int entry_matches(const char *entry, const char *method,
			 const char *path)
{
	const char *sp = strchr(entry, ' ');
	size_t mlen, plen;

	if (!sp)
		return 0;
	mlen = (size_t)(sp - entry);
	if (method &&
	    (strlen(method) != mlen || strncmp(entry, method, mlen) != 0))
		return 0;
	plen = strlen(path);
	if (plen > 0 && path[plen - 1] == '*')
		return strncmp(sp + 1, path, plen - 1) == 0;
	return strcmp(sp + 1, path) == 0;
}

unsigned long fake_engine_count(struct fake_engine *fe, const char *method,
				const char *path)
{
	unsigned long n = 0, total;

	pthread_mutex_lock(&fe->lock);
	total = fe->nrequests < FAKE_MAX_LOG ? fe->nrequests : FAKE_MAX_LOG;
	for (unsigned long i = 0; i < total; i++)
		if (entry_matches(fe->log[i], method, path))
			n++;
	pthread_mutex_unlock(&fe->lock);
	return n;
}

void fake_engine_log_dump(struct fake_engine *fe, char *buf, size_t bufsz)
{
	size_t len = 0;
	unsigned long total;
	int n;

	if (!bufsz)
		return;
	buf[0] = '\0';
	pthread_mutex_lock(&fe->lock);
	total = fe->nrequests < FAKE_MAX_LOG ? fe->nrequests : FAKE_MAX_LOG;
	for (unsigned long i = 0; i < total && len < bufsz; i++) {
		n = snprintf(buf + len, bufsz - len, "%s%s", i ? " | " : "",
			     fe->log[i]);
		if (n < 0)
			break;
		len += (size_t)n;
	}
	if (fe->nrequests > FAKE_MAX_LOG && len < bufsz)
		snprintf(buf + len, bufsz - len, " | (%lu more)",
			 fe->nrequests - FAKE_MAX_LOG);
	pthread_mutex_unlock(&fe->lock);
}

const char *fake_engine_url(const struct fake_engine *fe)
{
	return fe->url;
}

const char *fake_engine_dir(const struct fake_engine *fe)
{
	return fe->dir;
}

/* ---- writing ---------------------------------------------------------- */

int fake_send(struct fake_conn *c, const void *data, size_t len)
{
	const char *p = data;
	ssize_t n;

	while (len > 0) {
		n = send(c->fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				if (wait_fd(c->fe, c->fd, POLLOUT) < 0)
					return -1;
				continue;
			}
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int fake_sendf(struct fake_conn *c, const char *fmt, ...)
{
	char buf[8192];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(buf))
		return -1;
	return fake_send(c, buf, (size_t)n);
}

static const char *reason(int status)
{
	switch (status) {
	case 200:
		return "OK";
	case 201:
		return "Created";
	case 204:
		return "No Content";
	case 304:
		return "Not Modified";
	case 400:
		return "Bad Request";
	case 404:
		return "Not Found";
	case 409:
		return "Conflict";
	case 413:
		return "Payload Too Large";
	case 431:
		return "Request Header Fields Too Large";
	case 500:
		return "Internal Server Error";
	case 501:
		return "Not Implemented";
	default:
		return "Whatever";
	}
}

int fake_send_response(struct fake_conn *c, int status,
		       const char *content_type, const char *body,
		       size_t body_len)
{
	if (fake_sendf(
		    c,
		    "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
		    "Api-Version: 1.41\r\n\r\n",
		    status, reason(status),
		    content_type ? content_type : "text/plain", body_len) < 0)
		return -1;
	/* An answer to a HEAD has no body, whatever its Content-Length
	 * says: a client keeping the connection reads the next answer
	 * right after the head, so a body here would be taken for it. */
	if (c->is_head)
		return 0;
	return body_len ? fake_send(c, body, body_len) : 0;
}

int fake_send_json(struct fake_conn *c, int status, const char *json)
{
	return fake_send_response(c, status, "application/json", json,
				  strlen(json));
}

int fake_send_frame(struct fake_conn *c, int stream, const void *data,
		    size_t len)
{
	unsigned char h[8] = { (unsigned char)stream,
			       0,
			       0,
			       0,
			       (unsigned char)(len >> 24),
			       (unsigned char)(len >> 16),
			       (unsigned char)(len >> 8),
			       (unsigned char)len };

	if (fake_send(c, h, sizeof(h)) < 0)
		return -1;
	return len ? fake_send(c, data, len) : 0;
}

/* ---- reading ---------------------------------------------------------- */

/* Read more into rbuf.  >0 bytes read, 0 at EOF, -1 on error, stop or a
 * full buffer. */
static ssize_t fill(struct fake_conn *c)
{
	ssize_t n;

	if (c->have >= sizeof(c->rbuf))
		return -1;
	for (;;) {
		if (wait_fd(c->fe, c->fd, POLLIN) < 0)
			return -1;
		n = recv(c->fd, c->rbuf + c->have, sizeof(c->rbuf) - c->have,
			 MSG_DONTWAIT);
		if (n < 0 &&
		    (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
			continue;
		if (n > 0)
			c->have += (size_t)n;
		return n;
	}
}

static void consume(struct fake_conn *c, size_t n)
{
	memmove(c->rbuf, c->rbuf + n, c->have - n);
	c->have -= n;
}

static int body_add(struct fake_conn *c, const char *data, size_t len)
{
	size_t alloc;
	char *p;

	if (len > FAKE_MAX_BODY || c->body_len > FAKE_MAX_BODY - len)
		return -1;
	if (c->body_len + len + 1 > c->body_alloc) {
		alloc = c->body_alloc ? c->body_alloc : 1024;
		while (alloc < c->body_len + len + 1)
			alloc *= 2;
		if (alloc > FAKE_MAX_BODY + 1)
			alloc = FAKE_MAX_BODY + 1;
		p = realloc(c->body, alloc);
		if (!p)
			return -1;
		c->body = p;
		c->body_alloc = alloc;
	}
	memcpy(c->body + c->body_len, data, len);
	c->body_len += len;
	c->body[c->body_len] = '\0';
	return 0;
}

/* Move `len` body bytes from the socket into c->body.  0 or -1. */
static int read_body(struct fake_conn *c, uint64_t len)
{
	size_t n;

	while (len > 0) {
		if (c->have == 0 && fill(c) <= 0)
			return -1;
		n = c->have < len ? c->have : (size_t)len;
		if (body_add(c, c->rbuf, n) < 0)
			return -1;
		consume(c, n);
		len -= n;
	}
	return 0;
}

/* One CRLF-terminated line (without the CRLF) into line[linesz]. */
static int read_line(struct fake_conn *c, char *line, size_t linesz)
{
	char *eol;
	size_t n;

	for (;;) {
		eol = c->have ? memmem(c->rbuf, c->have, "\r\n", 2) : NULL;
		if (eol)
			break;
		if (fill(c) <= 0)
			return -1;
	}
	n = (size_t)(eol - c->rbuf);
	if (n >= linesz)
		return -1;
	memcpy(line, c->rbuf, n);
	line[n] = '\0';
	consume(c, n + 2);
	return 0;
}

static int read_chunked(struct fake_conn *c)
{
	char line[256], *end;
	unsigned long long size;

	for (;;) {
		if (read_line(c, line, sizeof(line)) < 0)
			return -1;
		errno = 0;
		size = strtoull(line, &end, 16);
		if (errno || end == line || size > FAKE_MAX_BODY)
			return -1;
		if (size == 0)
			break;
		if (read_body(c, size) < 0 ||
		    read_line(c, line, sizeof(line)) < 0 || line[0] != '\0')
			return -1;
	}
	/* Trailers, up to the empty line. */
	do {
		if (read_line(c, line, sizeof(line)) < 0)
			return -1;
	} while (line[0] != '\0');
	return 0;
}

/* A header's value when `line` is that header, else NULL. */
static const char *header_value(const char *line, const char *name)
{
	size_t n = strlen(name);

	if (strncasecmp(line, name, n) != 0 || line[n] != ':')
		return NULL;
	line += n + 1;
	while (*line == ' ' || *line == '\t')
		line++;
	return line;
}

enum {
	REQ_OK = 0,
	REQ_EOF = -1,
	REQ_BAD = -2,
	REQ_TOO_BIG = -3
};

/* Read one request: head into `head` (NUL-terminated), body into c->body. */
static int read_request(struct fake_conn *c, char *head, size_t headsz,
			char **method, char **path)
{
	char *end, *line, *next, *sp;
	const char *v;
	unsigned long long clen = 0;
	int chunked = 0;
	size_t n;
	ssize_t got;

	c->body_len = 0;
	if (c->body)
		c->body[0] = '\0';
	for (;;) {
		end = c->have >= 4 ? memmem(c->rbuf, c->have, "\r\n\r\n", 4) :
				     NULL;
		if (end)
			break;
		if (c->have >= sizeof(c->rbuf))
			return REQ_TOO_BIG;
		got = fill(c);
		if (got <= 0)
			return c->have == 0 && got == 0 ? REQ_EOF : REQ_BAD;
	}
	n = (size_t)(end - c->rbuf) + 2; /* keep the last line's CRLF */
	if (n >= headsz)
		return REQ_TOO_BIG;
	memcpy(head, c->rbuf, n);
	head[n] = '\0';
	consume(c, n + 2);

	/* Request line: METHOD SP PATH SP VERSION */
	line = head;
	next = strstr(line, "\r\n");
	*next = '\0';
	next += 2;
	sp = strchr(line, ' ');
	if (!sp || sp == line)
		return REQ_BAD;
	*sp = '\0';
	*method = line;
	*path = sp + 1;
	sp = strchr(*path, ' ');
	if (!sp || strncmp(sp + 1, "HTTP/1.", 7) != 0)
		return REQ_BAD;
	*sp = '\0';
	if (strlen(*method) > 15 || strlen(*path) > FAKE_MAX_LINE - 20)
		return REQ_BAD;

	for (line = next; *line; line = next) {
		next = strstr(line, "\r\n");
		*next = '\0';
		next += 2;
		if ((v = header_value(line, "Content-Length"))) {
			errno = 0;
			clen = strtoull(v, NULL, 10);
			if (errno)
				return REQ_BAD;
		} else if ((v = header_value(line, "Transfer-Encoding"))) {
			chunked = strcasestr(v, "chunked") != NULL;
		}
	}
	if (chunked)
		return read_chunked(c) < 0 ? REQ_BAD : REQ_OK;
	if (clen > FAKE_MAX_BODY)
		return REQ_TOO_BIG;
	if (read_body(c, clen) < 0)
		return REQ_BAD;
	/* An empty body is still a string. */
	if (!c->body && body_add(c, "", 0) < 0)
		return REQ_BAD;
	return REQ_OK;
}

static void *serve(void *p)
{
	struct fake_conn *c = p;
	char *method = NULL, *path = NULL;
	struct fake_request req;
	int rc;

	for (;;) {
		rc = read_request(c, c->head, sizeof(c->head), &method, &path);
		if (rc == REQ_EOF)
			break;
		if (rc == REQ_TOO_BIG) {
			fake_send_json(
				c, 413,
				"{\"message\":\"fake engine: request too large\"}");
			break;
		}
		if (rc < 0)
			break;
		memset(&req, 0, sizeof(req));
		req.method = method;
		req.path = path;
		req.body = c->body;
		req.body_len = c->body_len;
		req.conn = c->index;
		req.seq = log_request(c->fe, method, path);
		c->is_head = strcmp(method, "HEAD") == 0;
		if (c->fe->handler(c, &req, c->fe->payload) == FAKE_CLOSE)
			break;
	}
	shutdown(c->fd, SHUT_RDWR);
	close(c->fd);
	c->fd = -1;
	return NULL;
}

static void *accept_loop(void *p)
{
	struct fake_engine *fe = p;
	struct fake_conn *c;
	int fd;

	for (;;) {
		if (wait_fd(fe, fe->listen_fd, POLLIN) < 0)
			break;
		fd = accept4(fe->listen_fd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == EAGAIN ||
			    errno == ECONNABORTED)
				continue;
			break;
		}
		pthread_mutex_lock(&fe->lock);
		if (fe->nconns >= FAKE_MAX_CONNS) {
			pthread_mutex_unlock(&fe->lock);
			close(fd);
			continue;
		}
		c = calloc(1, sizeof(*c));
		if (!c) {
			pthread_mutex_unlock(&fe->lock);
			close(fd);
			continue;
		}
		c->fe = fe;
		c->fd = fd;
		c->index = fe->nconns + 1;
		if (pthread_create(&c->thread, NULL, serve, c) != 0) {
			pthread_mutex_unlock(&fe->lock);
			close(fd);
			free(c);
			continue;
		}
		fe->conns[fe->nconns++] = c;
		pthread_mutex_unlock(&fe->lock);
	}
	return NULL;
}

/* ---- life ------------------------------------------------------------- */

int fake_engine_start(struct fake_engine **out, fake_handler_fn handler,
		      void *payload)
{
	struct fake_engine *fe = calloc(1, sizeof(*fe));
	struct sockaddr_un addr;
	int saved;

	if (!fe)
		return -1;
	fe->handler = handler;
	fe->payload = payload;
	fe->listen_fd = -1;
	fe->stop_pipe[0] = fe->stop_pipe[1] = -1;
	pthread_mutex_init(&fe->lock, NULL);
	fe->log = calloc(FAKE_MAX_LOG, sizeof(*fe->log));
	if (!fe->log)
		goto fail;
	snprintf(fe->dir, sizeof(fe->dir), "/tmp/hutch-fake-XXXXXX");
	if (!mkdtemp(fe->dir)) {
		fe->dir[0] = '\0';
		goto fail;
	}
	snprintf(fe->sock, sizeof(fe->sock), "%s/engine.sock", fe->dir);
	snprintf(fe->url, sizeof(fe->url), "unix://%s", fe->sock);
	if (pipe2(fe->stop_pipe, O_CLOEXEC) < 0)
		goto fail;
	fe->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fe->listen_fd < 0)
		goto fail;
	memset(&addr, 0, sizeof(addr));
	addr.sun_family = AF_UNIX;
	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", fe->sock);
	if (bind(fe->listen_fd, (struct sockaddr *)&addr, sizeof(addr)) < 0 ||
	    listen(fe->listen_fd, 16) < 0)
		goto fail;
	if (pthread_create(&fe->acceptor, NULL, accept_loop, fe) != 0)
		goto fail;
	fe->acceptor_started = 1;
	*out = fe;
	return 0;
fail:
	saved = errno;
	fake_engine_stop(fe);
	errno = saved;
	return -1;
}

void fake_engine_stop(struct fake_engine *fe)
{
	if (!fe)
		return;
	if (fe->stop_pipe[1] >= 0 && write(fe->stop_pipe[1], "x", 1) < 0)
		perror("fake engine: stop pipe");
	if (fe->acceptor_started)
		pthread_join(fe->acceptor, NULL);
	/* The acceptor is gone: nconns no longer changes. */
	for (unsigned int i = 0; i < fe->nconns; i++) {
		pthread_join(fe->conns[i]->thread, NULL);
		free(fe->conns[i]->body);
		free(fe->conns[i]);
	}
	if (fe->listen_fd >= 0)
		close(fe->listen_fd);
	if (fe->stop_pipe[0] >= 0)
		close(fe->stop_pipe[0]);
	if (fe->stop_pipe[1] >= 0)
		close(fe->stop_pipe[1]);
	if (fe->sock[0])
		unlink(fe->sock);
	if (fe->dir[0])
		rmdir(fe->dir);
	pthread_mutex_destroy(&fe->lock);
	free(fe->log);
	free(fe);
}
