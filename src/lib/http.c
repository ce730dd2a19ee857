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
#include <sys/stat.h>
#include <curl/curl.h>

#include "common.h"
#include "engine_internal.h"
#include "error.h"
#include "http.h"

/* Connections kept for reuse; more may exist while calls overlap. */
#define POOL_KEEP 8

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
	pthread_mutex_unlock(&e->lock);
	if (c) {
		c->next = NULL;
		return c;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->easy = curl_easy_init();
	c->multi = curl_multi_init();
	if (!c->easy || !c->multi) {
		conn_free(c);
		return NULL;
	}
	/* Keep exactly one connection per handle: the pool holds handles. */
	curl_multi_setopt(c->multi, CURLMOPT_MAXCONNECTS, 1L);
	return c;
}

static void conn_put(hutch_engine *e, struct hutch__conn *c)
{
	pthread_mutex_lock(&e->lock);
	if (e->nconns < POOL_KEEP) {
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

static size_t on_read(char *buf, size_t size, size_t nmemb, void *p)
{
	struct xfer *x = p;
	size_t n = x->req->source(buf, size * nmemb, x->req->source_payload);

	return n == (size_t)-1 ? CURL_READFUNC_ABORT : n;
}

static int current_target(hutch_engine *e, char **sock, char *url, size_t urlsz,
			  const hutch__request *req)
{
	int n;

	pthread_mutex_lock(&e->lock);
	*sock = e->socket_path ? strdup(e->socket_path) : NULL;
	if (req->unversioned)
		n = snprintf(url, urlsz, "%s%s", e->base, req->path);
	else
		n = snprintf(url, urlsz, "%s/v%s%s", e->base, e->api_version,
			     req->path);
	pthread_mutex_unlock(&e->lock);
	if ((e->socket_path && !*sock) || n < 0 || (size_t)n >= urlsz) {
		free(*sock);
		*sock = NULL;
		return -1;
	}
	return 0;
}

/* Drive one transfer to its end, honouring deadline and cancellation. */
static CURLcode run_transfer(struct hutch__conn *c, const hutch__request *req,
			     int *timed_out, int *cancelled)
{
	CURLcode result = CURLE_OK;
	CURLMsg *msg;
	int running = 1, left, timeout;
	unsigned long long now;

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
			if (req->cancel->raised) {
				*cancelled = 1;
				break;
			}
			timeout = 50; /* how soon a cancellation is noticed */
		}
		if (req->deadline_ms) {
			now = hutch__now_ms();
			if (now >= req->deadline_ms) {
				*timed_out = 1;
				break;
			}
			if (req->deadline_ms - now < (unsigned long long)timeout)
				timeout = (int)(req->deadline_ms - now);
		}
		if (curl_multi_poll(c->multi, NULL, 0, timeout, NULL) != CURLM_OK) {
			result = CURLE_RECV_ERROR;
			break;
		}
	}
	curl_multi_remove_handle(c->multi, c->easy);
	return result;
}

static int advance_candidate(hutch_engine *e)
{
	int moved = 0;
	char *sock;

	pthread_mutex_lock(&e->lock);
	if (e->current + 1 < e->ncandidates) {
		sock = strdup(e->candidates[e->current + 1]);
		if (sock) {
			e->current++;
			free(e->socket_path);
			e->socket_path = sock;
			free(e->url);
			if (asprintf(&e->url, "unix://%s", sock) < 0)
				e->url = NULL;
			moved = 1;
		}
	}
	pthread_mutex_unlock(&e->lock);
	return moved;
}

static int unreachable(hutch_engine *e, hutch_error **err, const char *why)
{
	struct stat st;

	/* curl speaks of "localhost port 80" even for a unix socket; say what
	 * is wrong with the socket instead. */
	if (e->socket_path) {
		if (stat(e->socket_path, &st) < 0)
			why = errno == ENOENT ? "no such socket" : strerror(errno);
		else if (!S_ISSOCK(st.st_mode))
			why = "not a socket";
		else
			why = "connection refused";
	}
	if (e->ncandidates > 1)
		return hutch__error_set(err, HUTCH_EUNREACHABLE,
			"no container engine answered: tried %s (%s); start Docker "
			"('dockerd') or Podman ('podman system service --time=0'), "
			"or name one with --engine or HUTCH_ENGINE",
			e->url, why);
	return hutch__error_set(err, HUTCH_EUNREACHABLE,
		"cannot reach the container engine at %s (from %s): %s; is it "
		"running? Start Docker ('dockerd') or Podman ('podman system "
		"service --time=0'), or name another with --engine or HUTCH_ENGINE",
		e->url ? e->url : "?", e->source, why);
}

static int perform_once(hutch_engine *e, const hutch__request *req,
			hutch__response *resp, CURLcode *curl_rc,
			int *timed_out, int *cancelled, int *too_big,
			char *errbuf)
{
	struct hutch__conn *c;
	struct curl_slist *headers = NULL;
	struct xfer x = { req, resp, NULL, 0 };
	char url[2048], ctype[128], *sock = NULL;

	if (current_target(e, &sock, url, sizeof(url), req) < 0)
		return HUTCH_EINVALID;
	c = conn_get(e);
	if (!c) {
		free(sock);
		return HUTCH_ENOMEM;
	}
	x.easy = c->easy;
	curl_easy_reset(c->easy);
	curl_easy_setopt(c->easy, CURLOPT_URL, url);
	if (sock)
		curl_easy_setopt(c->easy, CURLOPT_UNIX_SOCKET_PATH, sock);
	curl_easy_setopt(c->easy, CURLOPT_CUSTOMREQUEST, req->method);
	curl_easy_setopt(c->easy, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c->easy, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
	curl_easy_setopt(c->easy, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(c->easy, CURLOPT_WRITEFUNCTION, on_write);
	curl_easy_setopt(c->easy, CURLOPT_WRITEDATA, &x);
	curl_easy_setopt(c->easy, CURLOPT_TCP_NODELAY, 1L);
	/* Plain HTTP only, whatever URL a setting smuggles in. */
#if LIBCURL_VERSION_NUM >= 0x075500
	curl_easy_setopt(c->easy, CURLOPT_PROTOCOLS_STR, "http");
#else
	curl_easy_setopt(c->easy, CURLOPT_PROTOCOLS, (long)CURLPROTO_HTTP);
#endif
	/* No "Expect: 100-continue" round trip before a body. */
	headers = curl_slist_append(headers, "Expect:");
	if (req->body || req->source) {
		snprintf(ctype, sizeof(ctype), "Content-Type: %s",
			 req->content_type ? req->content_type : "application/json");
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
	hutch__buf_reset(&resp->body);
	*curl_rc = run_transfer(c, req, timed_out, cancelled);
	if (!resp->status)
		curl_easy_getinfo(c->easy, CURLINFO_RESPONSE_CODE, &resp->status);
	*too_big = x.too_big;
	curl_easy_setopt(c->easy, CURLOPT_HTTPHEADER, NULL);
	curl_slist_free_all(headers);
	free(sock);
	/* A transfer cut short leaves its connection in an unknown state. */
	if (*curl_rc != CURLE_OK || *timed_out || *cancelled) {
		conn_free(c);
	} else {
		conn_put(e, c);
	}
	return 0;
}

/* Ask the engine which API version it speaks, for engines too old for
 * the version hutch pins. */
static int negotiate(hutch_engine *e, hutch_error **err)
{
	hutch__request req = { .method = "GET", .path = "/version", .unversioned = 1 };
	hutch__response resp = HUTCH__RESPONSE_INIT;
	json_object *obj, *v;
	int rc;

	rc = hutch__http(e, &req, &resp, err);
	if (rc < 0)
		return rc;
	obj = hutch__json_parse(resp.body.data, resp.body.len);
	if (obj && json_object_object_get_ex(obj, "ApiVersion", &v) &&
	    json_object_is_type(v, json_type_string) &&
	    strlen(json_object_get_string(v)) < sizeof(e->api_version)) {
		pthread_mutex_lock(&e->lock);
		snprintf(e->api_version, sizeof(e->api_version), "%s",
			 json_object_get_string(v));
		e->negotiated = 1;
		pthread_mutex_unlock(&e->lock);
		rc = 0;
	} else {
		rc = hutch__error_set(err, HUTCH_EPROTO,
				      "engine at %s did not say its API version", e->url);
	}
	json_object_put(obj);
	hutch__response_free(&resp);
	return rc;
}

int hutch__http(hutch_engine *e, const hutch__request *req,
		hutch__response *resp, hutch_error **err)
{
	char errbuf[CURL_ERROR_SIZE];
	CURLcode crc;
	int timed_out, cancelled, too_big, rc, negotiated_now = 0;

	if (hutch__http_global_init() < 0)
		return hutch__error_set(err, HUTCH_EFAILED, "libcurl failed to initialise");
again:
	timed_out = cancelled = too_big = 0;
	rc = perform_once(e, req, resp, &crc, &timed_out, &cancelled, &too_big, errbuf);
	if (rc == HUTCH_ENOMEM)
		return hutch__error_oom(err);
	if (rc < 0)
		return hutch__error_set(err, rc, "request URL too long");
	if (cancelled)
		return hutch__error_set(err, HUTCH_ECANCELLED, "cancelled");
	if (timed_out)
		return hutch__error_set(err, HUTCH_ETIMEOUT, "%s %s: deadline passed",
					req->method, req->path);
	if (too_big)
		return hutch__error_set(err, HUTCH_ETOOBIG,
			"%s %s: the engine's answer is larger than %u bytes",
			req->method, req->path, HUTCH_MAX_RESPONSE);
	if (resp->sink_aborted)
		return 0;
	if (crc == CURLE_COULDNT_CONNECT || crc == CURLE_COULDNT_RESOLVE_HOST ||
	    (crc == CURLE_OPERATION_TIMEDOUT && resp->status == 0)) {
		/* Discovery found several sockets: a dead one is skipped. */
		if (advance_candidate(e))
			goto again;
		return unreachable(e, err, errbuf[0] ? errbuf : curl_easy_strerror(crc));
	}
	if (crc == CURLE_ABORTED_BY_CALLBACK && req->source)
		return hutch__error_set(err, HUTCH_EFAILED, "%s %s: upload aborted",
					req->method, req->path);
	if (crc != CURLE_OK)
		return hutch__error_set(err, HUTCH_EFAILED, "%s %s: %s", req->method,
					req->path, errbuf[0] ? errbuf : curl_easy_strerror(crc));
	/* An engine older than the pinned API says so with a 400; ask it for
	 * its version once and go on with that. */
	if (resp->status == 400 && !req->unversioned && !negotiated_now &&
	    !e->negotiated && resp->body.data &&
	    strstr(resp->body.data, "too new") && !req->source) {
		hutch_error *nerr = NULL;

		negotiated_now = 1;
		if (negotiate(e, &nerr) == 0)
			goto again;
		hutch_error_free(nerr);
	}
	return 0;
}

void hutch__response_free(hutch__response *resp)
{
	hutch__buf_free(&resp->body);
}

int hutch__engine_call(hutch_engine *e, const char *method, const char *path,
		       json_object *body, json_object **out, long *status,
		       const char *what, hutch_error **err)
{
	hutch__request req = { .method = method, .path = path };
	hutch__response resp = HUTCH__RESPONSE_INIT;
	size_t len = 0;
	int rc;

	if (body) {
		req.body = json_object_to_json_string_length(body, JSON_C_TO_STRING_PLAIN, &len);
		if (!req.body)
			return hutch__error_oom(err);
		req.body_len = len;
	}
	rc = hutch__http(e, &req, &resp, err);
	if (rc < 0) {
		hutch__error_wrap(err, rc, "%s", what);
		goto out;
	}
	if (status)
		*status = resp.status;
	if (resp.status < 200 || (resp.status >= 300 && resp.status != 304)) {
		rc = hutch__engine_error(err, resp.status, resp.body.data,
					 resp.body.len, what);
		goto out;
	}
	if (out) {
		*out = NULL;
		if (resp.body.len) {
			*out = hutch__json_parse(resp.body.data, resp.body.len);
			if (!*out) {
				rc = hutch__error_set(err, HUTCH_EPROTO,
					"%s: the engine's answer is not valid JSON", what);
				goto out;
			}
		}
	}
	rc = 0;
out:
	hutch__response_free(&resp);
	return rc;
}
