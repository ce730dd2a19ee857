/*
 * http.c - HTTP/1.1 to the engine with libcurl
 *
 * Each pooled connection is a curl easy handle inside its own multi handle.
 * The multi keeps the connection alive between requests, and driving the
 * transfer ourselves (curl_multi_poll) lets a streaming exec honour its
 * deadline and a cancellation without a thread of its own.  A program that
 * makes one call after another always gets the same connection back; a
 * second connection is opened only when calls overlap (for instance a kill
 * while an exec stream is being read).
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"
#include "dl.h"
#include "engine_handle.h"
#include "error.h"
#include "http.h"

/* Idle connections kept for reuse: as many as were ever in use at once
 * (so N threads calling in a loop keep N connections, not open and close
 * one per call), at least POOL_KEEP, at most POOL_MAX.  More may exist
 * while calls overlap. */
#define POOL_KEEP 8
#define POOL_MAX 128

struct hutch__conn {
	CURL *easy;
	CURLM *multi;
	struct hutch__conn *next;
};

int hutch__http_global_init(hutch_error **err)
{
	/* Loads libcurl and runs curl_global_init(), once (dl.c). */
	return hutch__dl_curl(err);
}

static void conn_free(struct hutch__conn *c)
{
	if (!c)
		return;
	if (c->multi)
		curl_multi_cleanup(c->multi);
	if (c->easy)
		curl_easy_cleanup(c->easy);
	free(c);
}

static struct hutch__conn *conn_get(hutch_engine *e)
{
	struct hutch__conn *c;

	pthread_mutex_lock(&e->lock);
	c = e->pool;
	if (c) {
		e->pool = c->next;
		e->nconns--;
	}
	e->busy++;
	if (e->busy > e->peak)
		e->peak = e->busy;
	pthread_mutex_unlock(&e->lock);
	if (c) {
		c->next = NULL;
		return c;
	}
	c = calloc(1, sizeof(*c));
	if (c) {
		c->easy = curl_easy_init();
		c->multi = curl_multi_init();
	}
	if (!c || !c->easy || !c->multi) {
		conn_free(c);
		pthread_mutex_lock(&e->lock);
		e->busy--;
		pthread_mutex_unlock(&e->lock);
		return NULL;
	}
	/* Keep exactly one connection per handle: the pool holds handles. */
	curl_multi_setopt(c->multi, CURLMOPT_MAXCONNECTS, 1L);
	return c;
}

/* Give a connection back; `reuse` 0 closes it. */
static void conn_put(hutch_engine *e, struct hutch__conn *c, int reuse)
{
	size_t keep;

	pthread_mutex_lock(&e->lock);
	e->busy--;
	keep = e->peak < POOL_KEEP ? POOL_KEEP :
	       e->peak > POOL_MAX  ? POOL_MAX :
				     e->peak;
	if (reuse && e->nconns < keep) {
		c->next = e->pool;
		e->pool = c;
		e->nconns++;
		c = NULL;
	}
	pthread_mutex_unlock(&e->lock);
	conn_free(c);
}

void hutch__http_pool_free(hutch_engine *e)
{
	struct hutch__conn *c, *next;

	for (c = e->pool; c; c = next) {
		next = c->next;
		conn_free(c);
	}
	e->pool = NULL;
	e->nconns = 0;
	if (e->share)
		curl_share_cleanup(e->share);
	e->share = NULL;
}

/* The pool's connections share TLS sessions (a new connection resumes
 * instead of making a full handshake) and DNS answers.  libcurl calls
 * these from whichever thread uses a handle of the share. */
static void share_lock(CURL *h, curl_lock_data d, curl_lock_access a, void *p)
{
	(void)h;
	(void)d;
	(void)a;
	pthread_mutex_lock(&((hutch_engine *)p)->share_lock);
}

static void share_unlock(CURL *h, curl_lock_data d, void *p)
{
	(void)h;
	(void)d;
	pthread_mutex_unlock(&((hutch_engine *)p)->share_lock);
}

int hutch__http_share_init(hutch_engine *e)
{
	CURLSH *sh = curl_share_init();

	if (!sh)
		return -1;
	if (curl_share_setopt(sh, CURLSHOPT_LOCKFUNC, share_lock) !=
		    CURLSHE_OK ||
	    curl_share_setopt(sh, CURLSHOPT_UNLOCKFUNC, share_unlock) !=
		    CURLSHE_OK ||
	    curl_share_setopt(sh, CURLSHOPT_USERDATA, e) != CURLSHE_OK ||
	    curl_share_setopt(sh, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS) !=
		    CURLSHE_OK ||
	    curl_share_setopt(sh, CURLSHOPT_SHARE,
			      CURL_LOCK_DATA_SSL_SESSION) != CURLSHE_OK) {
		curl_share_cleanup(sh);
		return -1;
	}
	e->share = sh;
	return 0;
}

char *hutch__url_escape(const char *s)
{
	char *esc, *out;

	/* Every caller has an engine, which loaded libcurl; this keeps one
	 * that had none from calling through an empty table. */
	if (hutch__dl_curl(NULL) < 0)
		return NULL;
	esc = curl_easy_escape(NULL, s, 0);
	if (!esc)
		return NULL;
	out = strdup(esc);
	curl_free(esc);
	return out;
}

struct xfer {
	const hutch__request *req;
	hutch__response *resp;
	CURL *easy;
	int too_big;
};

static size_t on_write(char *data, size_t size, size_t nmemb, void *p)
{
	struct xfer *x = p;
	size_t len = size * nmemb;
	long status = 0;

	curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &status);
	x->resp->status = status;
	/* Stream successful answers to the sink; error answers are small JSON
	 * documents that we collect for the error message. */
	if (x->req->sink && status >= 200 && status < 300) {
		if (x->req->sink(data, len, x->req->sink_payload)) {
			x->resp->sink_aborted = 1;
			return 0;
		}
		return len;
	}
	if (hutch__buf_add(&x->resp->body, data, len) < 0) {
		x->too_big = 1;
		return 0;
	}
	return len;
}

/* Keep the value of the header the request named (the last one seen:
 * curl passes on every header line, also of interim answers). */
static size_t on_header(char *data, size_t size, size_t nmemb, void *p)
{
	struct xfer *x = p;
	size_t len = size * nmemb, name = strlen(x->req->header);

	if (len > name && data[name] == ':' &&
	    strncasecmp(data, x->req->header, name) == 0) {
		const char *v = data + name + 1;
		size_t n = len - name - 1;

		while (n && (*v == ' ' || *v == '\t')) {
			v++;
			n--;
		}
		while (n && (v[n - 1] == '\r' || v[n - 1] == '\n' ||
			     v[n - 1] == ' '))
			n--;
		if (n < sizeof(x->resp->header)) {
			memcpy(x->resp->header, v, n);
			x->resp->header[n] = '\0';
		} else {
			x->resp->header[0] = '\0';
		}
	}
	return len;
}

static size_t on_read(char *buf, size_t size, size_t nmemb, void *p)
{
	struct xfer *x = p;
	size_t n = x->req->source(buf, size * nmemb, x->req->source_payload);

	return n == (size_t)-1 ? CURL_READFUNC_ABORT : n;
}

/* The candidate in use: stable strings, never freed before the handle. */
static size_t current(const hutch_engine *e)
{
	return __atomic_load_n(&e->current, __ATOMIC_ACQUIRE);
}

static int request_url(hutch_engine *e, char *url, size_t urlsz,
		       const hutch__request *req)
{
	int n;

	if (req->unversioned)
		n = snprintf(url, urlsz, "%s%s", e->base, req->path);
	else
		n = snprintf(url, urlsz, "%s/v%s%s", e->base,
			     hutch_engine_api_version(e), req->path);
	return n < 0 || (size_t)n >= urlsz ? -1 : 0;
}

/* Drive one transfer to its end, honouring deadline and cancellation. */
static CURLcode run_transfer(struct hutch__conn *c, const hutch__request *req,
			     int *timed_out, int *cancelled)
{
	CURLcode result = CURLE_OK;
	CURLMsg *msg;
	int running = 1, left, timeout;
	unsigned long long now, deadline = req->deadline_ms, next;

	if (curl_multi_add_handle(c->multi, c->easy) != CURLM_OK)
		return CURLE_FAILED_INIT;
	for (;;) {
		if (curl_multi_perform(c->multi, &running) != CURLM_OK) {
			result = CURLE_RECV_ERROR;
			break;
		}
		if (!running) {
			while ((msg = curl_multi_info_read(c->multi, &left)))
				if (msg->msg == CURLMSG_DONE)
					result = msg->data.result;
			break;
		}
		timeout = 1000;
		if (req->cancel) {
			if (__atomic_load_n(&req->cancel->raised,
					    __ATOMIC_SEQ_CST)) {
				*cancelled = 1;
				break;
			}
			timeout = 50; /* how soon a cancellation is noticed */
		}
		if (deadline) {
			now = hutch__now_ms();
			if (now >= deadline) {
				/* The stream stays open meanwhile: what the
				 * engine sends waits in the socket. */
				next = 0;
				if (req->on_deadline)
					next = req->on_deadline(
						req->sink_payload);
				if (next <= now) {
					*timed_out = 1;
					break;
				}
				deadline = next;
				continue;
			}
			if (deadline - now < (unsigned long long)timeout)
				timeout = (int)(deadline - now);
		}
		if (curl_multi_poll(c->multi, NULL, 0, timeout, NULL) !=
		    CURLM_OK) {
			result = CURLE_RECV_ERROR;
			break;
		}
	}
	curl_multi_remove_handle(c->multi, c->easy);
	return result;
}

/* Discovery found several sockets and `from` refused: move on to the next
 * one (unless another thread already did).  1 when there is one to try. */
static int advance_candidate(hutch_engine *e, size_t from)
{
	size_t next = from + 1;

	if (next >= e->ncandidates)
		return 0;
	__atomic_compare_exchange_n(&e->current, &from, next, 0,
				    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
	return 1;
}

static int unreachable(hutch_engine *e, size_t cur, hutch_error **err,
		       const char *why)
{
	const char *sock = e->sockets[cur], *url = e->urls[cur];
	struct stat st;

	/* curl speaks of "localhost port 80" even for a unix socket; say what
	 * is wrong with the socket instead. */
	if (sock) {
		if (stat(sock, &st) < 0)
			why = errno == ENOENT ? "no such socket" :
						strerror(errno);
		else if (!S_ISSOCK(st.st_mode))
			why = "not a socket";
		else
			why = "connection refused";
	}
	if (e->ncandidates > 1)
		return hutch__error_set(
			err, HUTCH_EUNREACHABLE,
			"no container engine answered: tried %s (%s); start Docker "
			"('dockerd') or Podman ('podman system service --time=0'), "
			"or name one with --engine or HUTCH_ENGINE",
			url, why);
	return hutch__error_set(
		err, HUTCH_EUNREACHABLE,
		"cannot reach the container engine at %s (from %s): %s; is it "
		"running? Start Docker ('dockerd') or Podman ('podman system "
		"service --time=0'), or name another with --engine or HUTCH_ENGINE",
		url, e->source, why);
}

/* Failures of the TLS layer, told in terms of the files the user set up.
 * Returns 0 when `crc` is not one. */
static int tls_failure(hutch_engine *e, size_t cur, CURLcode crc,
		       const char *why, hutch_error **err)
{
	const char *url = e->urls[cur];
	const char *ca = e->tls_ca ? e->tls_ca : "the system's CAs";

	switch (crc) {
	case CURLE_PEER_FAILED_VERIFICATION:
		return hutch__error_set(
			err, HUTCH_EUNREACHABLE,
			"engine %s: its TLS certificate is not signed by %s (or does not "
			"name the host): %s; check DOCKER_CERT_PATH/ca.pem",
			url, ca, why);
	case CURLE_SSL_CACERT_BADFILE:
		return hutch__error_set(
			err, HUTCH_EINVALID,
			"engine %s: cannot use the TLS CA file %s: %s", url, ca,
			why);
	case CURLE_SSL_CERTPROBLEM:
		return hutch__error_set(
			err, HUTCH_EINVALID,
			"engine %s: cannot use the TLS client certificate %s / %s: %s",
			url, e->tls_cert, e->tls_key, why);
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_SEND_ERROR:
	case CURLE_GOT_NOTHING:
		/* With TLS 1.3 a server that wants a client certificate says
		 * so after the client thinks the handshake is done: the first
		 * read fails with the server's alert. */
		if (crc != CURLE_SSL_CONNECT_ERROR && !strstr(why, "alert") &&
		    !strstr(why, "SSL") && !strstr(why, "TLS"))
			return 0;
		return hutch__error_set(
			err, HUTCH_EUNREACHABLE,
			"engine %s: TLS handshake failed: %s%s", url, why,
			e->tls_cert ?
				"" :
				" (no client certificate was offered: put cert.pem and key.pem "
				"in DOCKER_CERT_PATH)");
	default:
		return 0;
	}
}

/* What every connection to the engine gets, pooled or not: where it
 * goes, and TLS that is never relaxed. */
static void setup_connection(hutch_engine *e, size_t cur, CURL *easy,
			     const char *url, char *errbuf)
{
	const char *sock = e->sockets[cur];

	curl_easy_setopt(easy, CURLOPT_URL, url);
	if (sock)
		curl_easy_setopt(easy, CURLOPT_UNIX_SOCKET_PATH, sock);
	if (e->share)
		curl_easy_setopt(easy, CURLOPT_SHARE, (CURLSH *)e->share);
	curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
	curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(easy, CURLOPT_TCP_NODELAY, 1L);
	/* Plain HTTP only, or only HTTPS for a TLS engine, whatever URL a
	 * setting smuggles in. */
#if LIBCURL_VERSION_NUM >= 0x075500
	curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR,
			 e->tls ? "https" : "http");
#else
	curl_easy_setopt(easy, CURLOPT_PROTOCOLS,
			 (long)(e->tls ? CURLPROTO_HTTPS : CURLPROTO_HTTP));
#endif
	if (e->tls) {
		/* Never relaxed: see tls_setup() in engine.c. */
		curl_easy_setopt(easy, CURLOPT_SSL_VERIFYPEER, 1L);
		curl_easy_setopt(easy, CURLOPT_SSL_VERIFYHOST, 2L);
		if (e->tls_ca)
			curl_easy_setopt(easy, CURLOPT_CAINFO, e->tls_ca);
		if (e->tls_cert) {
			curl_easy_setopt(easy, CURLOPT_SSLCERT, e->tls_cert);
			curl_easy_setopt(easy, CURLOPT_SSLKEY, e->tls_key);
		}
	}
}

static int perform_once(hutch_engine *e, size_t cur, const hutch__request *req,
			hutch__response *resp, CURLcode *curl_rc,
			int *timed_out, int *cancelled, int *too_big,
			char *errbuf)
{
	struct hutch__conn *c;
	struct curl_slist *headers = NULL;
	struct xfer x = { req, resp, NULL, 0 };
	char url[2048], ctype[128];

	if (request_url(e, url, sizeof(url), req) < 0)
		return HUTCH_EINVALID;
	c = conn_get(e);
	if (!c)
		return HUTCH_ENOMEM;
	x.easy = c->easy;
	curl_easy_reset(c->easy);
	setup_connection(e, cur, c->easy, url, errbuf);
	curl_easy_setopt(c->easy, CURLOPT_CUSTOMREQUEST, req->method);
	curl_easy_setopt(c->easy, CURLOPT_WRITEFUNCTION, on_write);
	curl_easy_setopt(c->easy, CURLOPT_WRITEDATA, &x);
	if (strcmp(req->method, "HEAD") == 0)
		curl_easy_setopt(c->easy, CURLOPT_NOBODY, 1L);
	if (req->header) {
		curl_easy_setopt(c->easy, CURLOPT_HEADERFUNCTION, on_header);
		curl_easy_setopt(c->easy, CURLOPT_HEADERDATA, &x);
	}
	/* No "Expect: 100-continue" round trip before a body. */
	headers = curl_slist_append(headers, "Expect:");
	if (req->body || req->source) {
		snprintf(ctype, sizeof(ctype), "Content-Type: %s",
			 req->content_type ? req->content_type :
					     "application/json");
		headers = curl_slist_append(headers, ctype);
	}
	if (req->body) {
		curl_easy_setopt(c->easy, CURLOPT_POSTFIELDS, req->body);
		curl_easy_setopt(c->easy, CURLOPT_POSTFIELDSIZE_LARGE,
				 (curl_off_t)req->body_len);
	} else if (req->source) {
		curl_easy_setopt(c->easy, CURLOPT_UPLOAD, 1L);
		curl_easy_setopt(c->easy, CURLOPT_READFUNCTION, on_read);
		curl_easy_setopt(c->easy, CURLOPT_READDATA, &x);
		/* UPLOAD means PUT; CUSTOMREQUEST above keeps POST when asked. */
	}
	curl_easy_setopt(c->easy, CURLOPT_HTTPHEADER, headers);

	errbuf[0] = '\0';
	resp->status = 0;
	resp->sink_aborted = 0;
	resp->header[0] = '\0';
	hutch__buf_reset(&resp->body);
	*curl_rc = run_transfer(c, req, timed_out, cancelled);
	if (!resp->status)
		curl_easy_getinfo(c->easy, CURLINFO_RESPONSE_CODE,
				  &resp->status);
	*too_big = x.too_big;
	curl_easy_setopt(c->easy, CURLOPT_HTTPHEADER, NULL);
	curl_slist_free_all(headers);
	/* A transfer cut short leaves its connection in an unknown state. */
	conn_put(e, c, *curl_rc == CURLE_OK && !*timed_out && !*cancelled);
	return 0;
}

int hutch__http_use_api_version(hutch_engine *e, const char *version)
{
	if (strlen(version) >= sizeof(e->negotiated_version))
		return -1;
	/* Threads that hit the 400 at the same time all ask; the first
	 * answer is written once and published, the others are the
	 * same engine's same answer and are dropped. */
	pthread_mutex_lock(&e->lock);
	if (!e->negotiated) {
		snprintf(e->negotiated_version, sizeof(e->negotiated_version),
			 "%s", version);
		__atomic_store_n(&e->api_version, e->negotiated_version,
				 __ATOMIC_RELEASE);
		e->negotiated = 1;
	}
	pthread_mutex_unlock(&e->lock);
	return 0;
}

int hutch__http(hutch_engine *e, const hutch__request *req,
		hutch__response *resp, hutch_error **err)
{
	char errbuf[CURL_ERROR_SIZE];
	CURLcode crc;
	int timed_out, cancelled, too_big, rc, negotiated_now = 0, negotiated;
	size_t cur;

	if ((rc = hutch__http_global_init(err)) < 0)
		return rc;
again:
	timed_out = cancelled = too_big = 0;
	cur = current(e);
	rc = perform_once(e, cur, req, resp, &crc, &timed_out, &cancelled,
			  &too_big, errbuf);
	if (rc == HUTCH_ENOMEM)
		return hutch__error_oom(err);
	if (rc < 0)
		return hutch__error_set(err, rc, "request URL too long");
	if (cancelled)
		return hutch__error_set(err, HUTCH_ECANCELLED, "cancelled");
	if (timed_out)
		return hutch__error_set(err, HUTCH_ETIMEOUT,
					"%s %s: deadline passed", req->method,
					req->path);
	if (too_big)
		return hutch__error_set(
			err, HUTCH_ETOOBIG,
			"%s %s: the engine's answer is larger than %u bytes",
			req->method, req->path, HUTCH_MAX_RESPONSE);
	if (resp->sink_aborted)
		return 0;
	if (crc == CURLE_COULDNT_CONNECT || crc == CURLE_COULDNT_RESOLVE_HOST ||
	    (crc == CURLE_OPERATION_TIMEDOUT && resp->status == 0)) {
		/* Discovery found several sockets: a dead one is skipped. */
		if (advance_candidate(e, cur))
			goto again;
		return unreachable(e, cur, err,
				   errbuf[0] ? errbuf :
					       curl_easy_strerror(crc));
	}
	if (e->tls && crc != CURLE_OK &&
	    (rc = tls_failure(e, cur, crc,
			      errbuf[0] ? errbuf : curl_easy_strerror(crc),
			      err)) < 0)
		return rc;
	if (crc == CURLE_ABORTED_BY_CALLBACK && req->source)
		return hutch__error_set(err, HUTCH_EFAILED,
					"%s %s: upload aborted", req->method,
					req->path);
	if (crc != CURLE_OK)
		return hutch__error_set(
			err, HUTCH_EFAILED, "%s %s: %s", req->method, req->path,
			errbuf[0] ? errbuf : curl_easy_strerror(crc));
	/* Plain HTTP to a port where the engine wants TLS: Go's HTTP server
	 * answers 400 with this text. */
	if (resp->status == 400 && !e->tls && resp->body.data &&
	    strstr(resp->body.data, "HTTP request to an HTTPS server"))
		return hutch__error_set(
			err, HUTCH_EUNREACHABLE,
			"engine %s speaks TLS: set DOCKER_TLS_VERIFY=1 and DOCKER_CERT_PATH "
			"(ca.pem, cert.pem, key.pem), or use https://",
			e->urls[cur]);
	/* An engine older than the pinned API says so with a 400; ask it for
	 * its version once and go on with that. */
	if (resp->status == 400 && !req->unversioned && !negotiated_now &&
	    resp->body.data && strstr(resp->body.data, "too new") &&
	    !req->source) {
		hutch_error *nerr = NULL;

		negotiated_now = 1;
		pthread_mutex_lock(&e->lock);
		negotiated = e->negotiated;
		pthread_mutex_unlock(&e->lock);
		/* Another thread may have asked while this request was on
		 * its way with the pinned version. */
		if (negotiated || (e->negotiate && e->negotiate(e, &nerr) == 0))
			goto again;
		hutch_error_free(nerr);
	}
	return 0;
}

void hutch__response_free(hutch__response *resp)
{
	hutch__buf_free(&resp->body);
}

/* ---- the upgraded connection of an exec start ------------------------ */

/*
 * Why a connection of its own: once the engine has answered 101 the
 * connection is a raw byte pipe in both directions and can never carry an
 * HTTP request again, and the end of the input is a half-close of it, so
 * it cannot come from (or go back to) the keep-alive pool.  libcurl opens
 * it (CURLOPT_CONNECT_ONLY: the unix socket, TCP, the TLS handshake with
 * the same settings as the pool's) and hands it over; the request head is
 * written by hand and everything after it is driven by one poll loop.
 */

#define UP_HEAD_MAX (16u * 1024u) /* an answer head longer is refused */
#define UP_ERR_MAX (64u * 1024u)  /* an error body longer is refused */
#define UP_CHUNK (64u * 1024u)	  /* one read or one piece of input */
#define UP_READS_PER_WAKE 16	  /* then the input gets its turn */

enum {
	UP_HEAD,
	UP_STREAM,
	UP_ERRBODY,
	UP_DONE
};

struct upgrade {
	const hutch__upgrade_request *req;
	hutch__response *resp;
	CURL *easy;
	curl_socket_t sock;
	int tls;
	int phase;
	char head[UP_HEAD_MAX];
	size_t head_len;
	long long err_left; /* error body bytes to come; -1: until close */
	/* The input. */
	const char *pend; /* bytes to send now */
	size_t pend_len;
	int in_end;	/* the input ended (or is dropped) */
	int wr_closed;	/* nothing more is sent */
	int fd_ready;	/* poll said input_fd can be read */
	int want_write; /* the socket was full */
	int sent_any;	/* some input reached the socket */
	int more;	/* the reads stopped before the socket was empty */
	int too_big;
	int broke; /* the connection failed */
	char why[128];
	unsigned long long taken;
	char inbuf[UP_CHUNK];
	char rbuf[UP_CHUNK];
};

/* Bytes read (> 0), 0 at the end, -1 nothing now, -2 a failure, -3 the
 * peer reset the connection. */
static long up_recv(struct upgrade *u, char *buf, size_t len)
{
	size_t n = 0;
	CURLcode rc;
	ssize_t r;

	if (!u->tls) {
		r = recv(u->sock, buf, len, MSG_DONTWAIT);
		if (r >= 0)
			return (long)r;
		if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
			return -1;
		snprintf(u->why, sizeof(u->why), "%s", strerror(errno));
		return errno == ECONNRESET ? -3 : -2;
	}
	rc = curl_easy_recv(u->easy, buf, len, &n);
	if (rc == CURLE_OK)
		return (long)n;
	if (rc == CURLE_AGAIN)
		return -1;
	snprintf(u->why, sizeof(u->why), "%s", curl_easy_strerror(rc));
	/* TLS does not tell a reset from other failures. */
	return rc == CURLE_RECV_ERROR ? -3 : -2;
}

/* Bytes sent (> 0), -1 the socket is full, -2 the peer takes no more. */
static long up_send(struct upgrade *u, const char *buf, size_t len)
{
	size_t n = 0;
	CURLcode rc;
	ssize_t r;

	if (!u->tls) {
		/* MSG_NOSIGNAL: a peer gone is EPIPE, never a SIGPIPE. */
		r = send(u->sock, buf, len, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (r > 0)
			return (long)r;
		if (r < 0 &&
		    (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
			return -1;
		return -2;
	}
	/* The same buffer and length again after CURLE_AGAIN, as OpenSSL
	 * wants: u->pend only moves on after a successful send. */
	rc = curl_easy_send(u->easy, buf, len, &n);
	if (rc == CURLE_OK && n > 0)
		return (long)n;
	return rc == CURLE_AGAIN ? -1 : -2;
}

/* The request head and body, written before anything is read: it is
 * small, so a full socket is waited out (bounded by the deadline). */
static int up_send_request(struct upgrade *u, hutch_engine *e,
			   const char *url_path, hutch_error **err)
{
	const hutch__upgrade_request *req = u->req;
	const char *host = strstr(e->base, "://");
	char *msg = NULL;
	size_t off = 0;
	int len;
	long n;

	host = host ? host + 3 : "localhost";
	len = asprintf(&msg,
		       "POST %s HTTP/1.1\r\n"
		       "Host: %s\r\n"
		       "User-Agent: hutch\r\n"
		       "Content-Type: application/json\r\n"
		       "Content-Length: %zu\r\n"
		       "Connection: Upgrade\r\n"
		       "Upgrade: tcp\r\n"
		       "\r\n"
		       "%.*s",
		       url_path, host, req->body_len, (int)req->body_len,
		       req->body);
	if (len < 0)
		return hutch__error_oom(err);
	while (off < (size_t)len) {
		n = up_send(u, msg + off, (size_t)len - off);
		if (n > 0) {
			off += (size_t)n;
			continue;
		}
		if (n == -1) {
			struct pollfd p = { .fd = u->sock, .events = POLLOUT };
			unsigned long long now = hutch__now_ms();

			if (req->deadline_ms && now >= req->deadline_ms)
				break;
			poll(&p, 1, 100);
			continue;
		}
		break;
	}
	free(msg);
	if (off < (size_t)len)
		return hutch__error_set(err, HUTCH_EFAILED,
					"POST %s: cannot send the request",
					req->path);
	return 0;
}

/* The engine's answer head is complete in u->head[0..end): its status,
 * and how long an error body is.  -1 when it is not HTTP. */
static int up_parse_head(struct upgrade *u, size_t end)
{
	char *line, *save = NULL, *status_end;
	long status;

	u->head[end] = '\0';
	line = strtok_r(u->head, "\r\n", &save);
	if (!line || strncmp(line, "HTTP/1.", 7) != 0 || !line[7] ||
	    line[8] != ' ')
		return -1;
	status = strtol(line + 9, &status_end, 10);
	if (status < 100 || status > 599 || status_end != line + 12)
		return -1;
	u->resp->status = status;
	u->err_left = -1;
	while ((line = strtok_r(NULL, "\r\n", &save))) {
		if (strncasecmp(line, "Content-Length:", 15) == 0)
			u->err_left = strtoll(line + 15, NULL, 10);
		else if (strncasecmp(line, "Transfer-Encoding:", 18) == 0 &&
			 strcasestr(line + 18, "chunked"))
			return -1;
	}
	return 0;
}

/* Bytes that came after the head, or later: the stream, or the error. */
static int up_take(struct upgrade *u, const char *data, size_t len)
{
	if (!len)
		return 0;
	if (u->phase == UP_STREAM) {
		if (u->req->sink(data, len, u->req->sink_payload)) {
			u->resp->sink_aborted = 1;
			u->phase = UP_DONE;
		}
		return 0;
	}
	if (u->err_left >= 0 && (long long)len > u->err_left)
		len = (size_t)u->err_left;
	if (u->resp->body.len + len > UP_ERR_MAX ||
	    hutch__buf_add(&u->resp->body, data, len) < 0) {
		u->too_big = 1;
		u->phase = UP_DONE;
		return 0;
	}
	if (u->err_left >= 0) {
		u->err_left -= (long long)len;
		if (u->err_left == 0)
			u->phase = UP_DONE;
	}
	return 0;
}

/* Read what the socket has, up to UP_READS_PER_WAKE pieces. */
static void up_read(struct upgrade *u)
{
	long n;
	char *p;

	u->more = 0;
	for (int i = 0; i < UP_READS_PER_WAKE && u->phase != UP_DONE; i++) {
		if (u->phase == UP_HEAD) {
			if (u->head_len >= sizeof(u->head) - 1) {
				u->broke = 1;
				snprintf(u->why, sizeof(u->why),
					 "the answer's head is over %u bytes",
					 UP_HEAD_MAX);
				u->phase = UP_DONE;
				return;
			}
			n = up_recv(u, u->head + u->head_len,
				    sizeof(u->head) - 1 - u->head_len);
		} else {
			n = up_recv(u, u->rbuf, sizeof(u->rbuf));
		}
		if (n == -1)
			return;
		if (n == 0 || n == -3) {
			/*
			 * The end.  A reset counts as one once input was
			 * sent: an engine that closes the connection while
			 * input the command never read is still in its
			 * socket makes the kernel reset it (AF_UNIX and TCP
			 * alike), after the output it sent.  A stream cut
			 * inside a frame is still noticed above (demux).
			 */
			if (n == -3 && !(u->phase == UP_STREAM && u->sent_any))
				u->broke = 1;
			else if (u->phase == UP_HEAD)
				u->broke = 1;
			else if (u->phase == UP_ERRBODY && u->err_left > 0)
				u->broke = 1;
			if (n == 0 && u->phase == UP_HEAD)
				snprintf(u->why, sizeof(u->why),
					 "the engine closed the connection "
					 "without an answer");
			u->phase = UP_DONE;
			return;
		}
		if (n < 0) {
			u->broke = 1;
			u->phase = UP_DONE;
			return;
		}
		if (u->phase != UP_HEAD) {
			up_take(u, u->rbuf, (size_t)n);
			continue;
		}
		u->head_len += (size_t)n;
		u->head[u->head_len] = '\0';
		p = strstr(u->head, "\r\n\r\n");
		if (!p)
			continue;
		{
			size_t end = (size_t)(p - u->head) + 4;
			size_t rest = u->head_len - end;

			/* What follows the head moves out of the way of
			 * the parse, which writes NULs into it. */
			memcpy(u->rbuf, u->head + end, rest);
			if (up_parse_head(u, end) < 0) {
				u->broke = 1;
				snprintf(
					u->why, sizeof(u->why),
					"not an HTTP answer, or a chunked one");
				u->phase = UP_DONE;
				return;
			}
			if (u->resp->status == 101 ||
			    (u->resp->status >= 200 && u->resp->status < 300)) {
				u->phase = UP_STREAM;
				/* Before any input: a terminal has its size
				 * before the command reads its first line. */
				if (u->req->tick)
					u->req->tick(u->req->tick_payload);
			} else {
				u->phase = u->err_left == 0 ? UP_DONE :
							      UP_ERRBODY;
			}
			up_take(u, u->rbuf, rest);
		}
	}
	u->more = 1;
}

/* Send what input there is without ever waiting for the socket. */
static void up_write(struct upgrade *u)
{
	const hutch__upgrade_request *req = u->req;
	ssize_t r;
	long n;

	u->want_write = 0;
	for (int i = 0; i < UP_READS_PER_WAKE && !u->wr_closed; i++) {
		if (!u->pend_len) {
			if (u->in_end) {
				/* The command's end of file. */
				if (!req->no_half_close)
					shutdown(u->sock, SHUT_WR);
				u->wr_closed = 1;
				return;
			}
			if (req->input) {
				u->pend = req->input;
				u->pend_len = req->input_len;
				u->taken = req->input_len;
				u->in_end = 1;
				continue;
			}
			if (!u->fd_ready)
				return;
			u->fd_ready = 0;
			/* Only after poll said it is readable: a blocking
			 * fd does not block here. */
			r = read(req->input_fd, u->inbuf, sizeof(u->inbuf));
			if (r < 0 && (errno == EAGAIN || errno == EINTR))
				return;
			/* A read error (EIO: a terminal hung up) ends the
			 * input as its end of file does. */
			if (r <= 0) {
				u->in_end = 1;
				continue;
			}
			u->pend = u->inbuf;
			u->pend_len = (size_t)r;
			u->taken += (unsigned long long)r;
			continue;
		}
		n = up_send(u, u->pend, u->pend_len);
		if (n == -1) {
			u->want_write = 1;
			return;
		}
		if (n < 0) {
			/* The engine takes no more: the command ended, or
			 * the connection is going; the reads say which.
			 * The rest of the input is dropped. */
			u->pend_len = 0;
			u->in_end = 1;
			u->wr_closed = 1;
			return;
		}
		u->sent_any = 1;
		u->pend += n;
		u->pend_len -= (size_t)n;
	}
}

static int raised(const hutch_cancel *c)
{
	return c && __atomic_load_n(&c->raised, __ATOMIC_SEQ_CST);
}

/* Drive the connection until the stream ends.  As run_transfer: the
 * deadline asks on_deadline for more time, a cancel stops at once. */
static void up_loop(struct upgrade *u, int *timed_out, int *cancelled)
{
	const hutch__upgrade_request *req = u->req;
	unsigned long long now, deadline = req->deadline_ms, next,
				last_tick = 0;
	struct pollfd p[2];
	int timeout, nfds;

	u->wr_closed = !req->input && req->input_fd < 0;
	while (u->phase != UP_DONE) {
		if (raised(req->cancel) || raised(req->cancel2)) {
			*cancelled = 1;
			return;
		}
		now = hutch__now_ms();
		if (deadline && now >= deadline) {
			/* The stream stays open meanwhile: what the engine
			 * sends waits in the socket. */
			next = req->on_deadline ?
				       req->on_deadline(req->sink_payload) :
				       0;
			if (next <= hutch__now_ms()) {
				*timed_out = 1;
				return;
			}
			deadline = next;
			continue;
		}
		if (u->phase == UP_STREAM && req->tick &&
		    now - last_tick >= HUTCH__TICK_MS) {
			req->tick(req->tick_payload);
			last_tick = now;
		}
		up_read(u);
		if (u->phase == UP_DONE)
			return;
		if (u->phase == UP_STREAM)
			up_write(u);
		timeout = hutch__loop_timeout(
			deadline, req->cancel || req->cancel2 || req->tick,
			u->more);
		p[0] = (struct pollfd){ .fd = u->sock, .events = POLLIN };
		if (u->want_write)
			p[0].events |= POLLOUT;
		nfds = 1;
		if (u->phase == UP_STREAM && !u->wr_closed && !u->in_end &&
		    !u->pend_len && req->input_fd >= 0 && !u->fd_ready) {
			p[1] = (struct pollfd){ .fd = req->input_fd,
						.events = POLLIN };
			nfds = 2;
		}
		if (poll(p, (nfds_t)nfds, timeout) < 0 && errno != EINTR) {
			u->broke = 1;
			snprintf(u->why, sizeof(u->why), "poll: %s",
				 strerror(errno));
			return;
		}
		if (nfds == 2 && p[1].revents & POLLNVAL)
			u->in_end = 1; /* closed under us: no more input */
		else if (nfds == 2 && p[1].revents)
			u->fd_ready = 1; /* readable, or its end (HUP/ERR) */
	}
}

/* Open the connection: 0, or the error (unreachable, TLS). */
static int up_connect(hutch_engine *e, struct upgrade *u, size_t *cur,
		      hutch_error **err)
{
	char errbuf[CURL_ERROR_SIZE];
	CURLcode crc;
	curl_socket_t sock;
	long ms = 10000;
	int rc;

again:
	u->easy = curl_easy_init();
	if (!u->easy)
		return hutch__error_oom(err);
	setup_connection(e, *cur, u->easy, e->base, errbuf);
	curl_easy_setopt(u->easy, CURLOPT_CONNECT_ONLY, 1L);
	if (u->req->deadline_ms) {
		unsigned long long now = hutch__now_ms();

		if (u->req->deadline_ms <= now + 1)
			ms = 1;
		else if (u->req->deadline_ms - now < (unsigned long long)ms)
			ms = (long)(u->req->deadline_ms - now);
		curl_easy_setopt(u->easy, CURLOPT_CONNECTTIMEOUT_MS, ms);
	}
	errbuf[0] = '\0';
	crc = curl_easy_perform(u->easy);
	if (crc == CURLE_OK &&
	    curl_easy_getinfo(u->easy, CURLINFO_ACTIVESOCKET, &sock) ==
		    CURLE_OK &&
	    sock != CURL_SOCKET_BAD) {
		u->sock = sock;
		return 0;
	}
	curl_easy_cleanup(u->easy);
	u->easy = NULL;
	if (crc == CURLE_COULDNT_CONNECT || crc == CURLE_COULDNT_RESOLVE_HOST ||
	    crc == CURLE_OPERATION_TIMEDOUT) {
		if (advance_candidate(e, *cur)) {
			*cur = current(e);
			goto again;
		}
		return unreachable(e, *cur, err,
				   errbuf[0] ? errbuf :
					       curl_easy_strerror(crc));
	}
	if (e->tls &&
	    (rc = tls_failure(e, *cur, crc,
			      errbuf[0] ? errbuf : curl_easy_strerror(crc),
			      err)) < 0)
		return rc;
	return hutch__error_set(err, HUTCH_EFAILED, "POST %s: %s", u->req->path,
				errbuf[0] ? errbuf : curl_easy_strerror(crc));
}

int hutch__loop_timeout(unsigned long long deadline, int often, int more)
{
	unsigned long long now;
	int timeout = often ? HUTCH__TICK_MS : 1000;

	if (more)
		return 0;
	if (deadline) {
		now = hutch__now_ms();
		if (deadline <= now)
			return 0;
		if (deadline - now < (unsigned long long)timeout)
			timeout = (int)(deadline - now);
	}
	return timeout;
}

int hutch__http_upgrade(hutch_engine *e, const hutch__upgrade_request *req,
			hutch__response *resp, hutch_error **err)
{
	struct upgrade *u;
	char url_path[1024];
	size_t cur;
	int timed_out = 0, cancelled = 0, rc, n;

	if ((rc = hutch__http_global_init(err)) < 0)
		return rc;
	n = snprintf(url_path, sizeof(url_path), "/v%s%s",
		     hutch_engine_api_version(e), req->path);
	if (n < 0 || (size_t)n >= sizeof(url_path))
		return hutch__error_set(err, HUTCH_EINVALID,
					"request URL too long");
	u = calloc(1, sizeof(*u));
	if (!u)
		return hutch__error_oom(err);
	u->req = req;
	u->resp = resp;
	u->tls = e->tls;
	resp->status = 0;
	resp->sink_aborted = 0;
	resp->header[0] = '\0';
	hutch__buf_reset(&resp->body);
	cur = current(e);
	rc = up_connect(e, u, &cur, err);
	if (rc == 0)
		rc = up_send_request(u, e, url_path, err);
	if (rc == 0) {
		up_loop(u, &timed_out, &cancelled);
		resp->input_taken = u->taken;
		if (cancelled)
			rc = hutch__error_set(err, HUTCH_ECANCELLED,
					      "cancelled");
		else if (timed_out)
			rc = hutch__error_set(err, HUTCH_ETIMEOUT,
					      "POST %s: deadline passed",
					      req->path);
		else if (u->too_big)
			rc = hutch__error_set(
				err, HUTCH_ETOOBIG,
				"POST %s: the engine's error answer is larger "
				"than %u bytes",
				req->path, UP_ERR_MAX);
		else if (u->broke && !resp->sink_aborted)
			rc = hutch__error_set(
				err, HUTCH_EFAILED, "POST %s: %s", req->path,
				u->why[0] ? u->why : "connection broke");
	}
	if (u->easy)
		curl_easy_cleanup(u->easy);
	free(u);
	return rc;
}
