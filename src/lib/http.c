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
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <curl/curl.h>

#include "common.h"
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

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static int global_rc;

static void global_init(void)
{
	global_rc = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? 0 : -1;
}

int hutch__http_global_init(void)
{
	pthread_once(&global_once, global_init);
	return global_rc;
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
	char *esc = curl_easy_escape(NULL, s, 0);
	char *out;

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

static int perform_once(hutch_engine *e, size_t cur, const hutch__request *req,
			hutch__response *resp, CURLcode *curl_rc,
			int *timed_out, int *cancelled, int *too_big,
			char *errbuf)
{
	struct hutch__conn *c;
	struct curl_slist *headers = NULL;
	struct xfer x = { req, resp, NULL, 0 };
	char url[2048], ctype[128];
	const char *sock = e->sockets[cur];

	if (request_url(e, url, sizeof(url), req) < 0)
		return HUTCH_EINVALID;
	c = conn_get(e);
	if (!c)
		return HUTCH_ENOMEM;
	x.easy = c->easy;
	curl_easy_reset(c->easy);
	curl_easy_setopt(c->easy, CURLOPT_URL, url);
	if (sock)
		curl_easy_setopt(c->easy, CURLOPT_UNIX_SOCKET_PATH, sock);
	if (e->share)
		curl_easy_setopt(c->easy, CURLOPT_SHARE, (CURLSH *)e->share);
	curl_easy_setopt(c->easy, CURLOPT_CUSTOMREQUEST, req->method);
	curl_easy_setopt(c->easy, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c->easy, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
	curl_easy_setopt(c->easy, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(c->easy, CURLOPT_WRITEFUNCTION, on_write);
	curl_easy_setopt(c->easy, CURLOPT_WRITEDATA, &x);
	curl_easy_setopt(c->easy, CURLOPT_TCP_NODELAY, 1L);
	if (strcmp(req->method, "HEAD") == 0)
		curl_easy_setopt(c->easy, CURLOPT_NOBODY, 1L);
	if (req->header) {
		curl_easy_setopt(c->easy, CURLOPT_HEADERFUNCTION, on_header);
		curl_easy_setopt(c->easy, CURLOPT_HEADERDATA, &x);
	}
	/* Plain HTTP only, or only HTTPS for a TLS engine, whatever URL a
	 * setting smuggles in. */
#if LIBCURL_VERSION_NUM >= 0x075500
	curl_easy_setopt(c->easy, CURLOPT_PROTOCOLS_STR,
			 e->tls ? "https" : "http");
#else
	curl_easy_setopt(c->easy, CURLOPT_PROTOCOLS,
			 (long)(e->tls ? CURLPROTO_HTTPS : CURLPROTO_HTTP));
#endif
	if (e->tls) {
		/* Never relaxed: see tls_setup() in engine.c. */
		curl_easy_setopt(c->easy, CURLOPT_SSL_VERIFYPEER, 1L);
		curl_easy_setopt(c->easy, CURLOPT_SSL_VERIFYHOST, 2L);
		if (e->tls_ca)
			curl_easy_setopt(c->easy, CURLOPT_CAINFO, e->tls_ca);
		if (e->tls_cert) {
			curl_easy_setopt(c->easy, CURLOPT_SSLCERT, e->tls_cert);
			curl_easy_setopt(c->easy, CURLOPT_SSLKEY, e->tls_key);
		}
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

	if (hutch__http_global_init() < 0)
		return hutch__error_set(err, HUTCH_EFAILED,
					"libcurl failed to initialise");
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
