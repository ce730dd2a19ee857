/*
 * One hutch_engine shared by many threads, against the fake engine: every
 * call succeeds, the pool keeps one connection per concurrent caller
 * instead of opening one per call, and an older engine's API version is
 * negotiated correctly when many threads hit its "too new" answer at once.
 * Run under the sanitizer build (--enable-sanitizers) to catch races on the
 * handle's memory.
 */
#include "config.h"

#include <criterion/criterion.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <hutch/hutch.h>

#include "fake_engine.h"

#define THREADS 16
#define CALLS 24

static struct fake_engine *fe;
static hutch_engine *engine;

static void teardown(void)
{
	hutch_engine_free(engine);
	fake_engine_stop(fe);
	engine = NULL;
	fe = NULL;
}

TestSuite(threads, .fini = teardown, .timeout = 60);

static int is(const struct fake_request *r, const char *method,
	      const char *path)
{
	return strcmp(r->method, method) == 0 && strcmp(r->path, path) == 0;
}

static fake_action handler(struct fake_conn *c, const struct fake_request *r,
			   void *p)
{
	int *unexpected = p;

	/* An engine too old for the pinned 1.41, as Docker 19.03 answers. */
	if (strncmp(r->path, "/v1.41/", 7) == 0) {
		fake_send_json(c, 400,
			       "{\"message\":\"client version 1.41 is too new. "
			       "Maximum supported API version is 1.40\"}");
		return FAKE_KEEP;
	}
	if (is(r, "GET", "/version")) {
		fake_send_json(
			c, 200,
			"{\"ApiVersion\":\"1.40\",\"Version\":\"19.03\"}");
		return FAKE_KEEP;
	}
	if (is(r, "GET", "/_ping")) {
		fake_send_response(c, 200, "text/plain", "OK", 2);
		return FAKE_KEEP;
	}
	if (strncmp(r->path, "/v1.40/images/", 14) == 0) {
		/* Slow enough that the threads' calls overlap. */
		fake_sleep_ms(20);
		if (strstr(r->path, "/missing"))
			fake_send_json(c, 404,
				       "{\"message\":\"No such image\"}");
		else
			fake_send_json(c, 200, "{}");
		return FAKE_KEEP;
	}
	__atomic_fetch_add(unexpected, 1, __ATOMIC_SEQ_CST);
	fake_send_json(c, 404, "{\"message\":\"page not found\"}");
	return FAKE_KEEP;
}

struct worker {
	pthread_barrier_t *start;
	int index, failures;
	char why[256];
};

static void *work(void *p)
{
	struct worker *w = p;
	hutch_error *err = NULL;
	char image[64];
	int rc;

	for (int i = 0; i < CALLS; i++) {
		/* In bursts: all threads call at once, all connections come
		 * back at once, and the pool must keep them all for the next
		 * burst rather than close some and open new ones. */
		pthread_barrier_wait(w->start);
		/* Half the images exist: both answers travel through the pool. */
		snprintf(image, sizeof(image), "%s-%d-%d:1",
			 i % 2 ? "missing" : "img", w->index, i);
		rc = hutch_engine_image_exists(engine, image, &err);
		if (rc != (i % 2 ? 0 : 1)) {
			if (!w->failures++)
				snprintf(w->why, sizeof(w->why),
					 "image_exists(%s) = %d: %s", image, rc,
					 err ? hutch_error_message(err) : "-");
			hutch_error_free(err);
			err = NULL;
		}
		if (i % 8 == 0 && hutch_engine_ping(engine, &err) < 0) {
			if (!w->failures++)
				snprintf(w->why, sizeof(w->why), "ping: %s",
					 hutch_error_message(err));
			hutch_error_free(err);
			err = NULL;
		}
		/* Getters while other threads negotiate: valid strings. */
		if (strcmp(hutch_engine_url(engine), fake_engine_url(fe)) !=
			    0 ||
		    (strcmp(hutch_engine_api_version(engine), "1.41") != 0 &&
		     strcmp(hutch_engine_api_version(engine), "1.40") != 0))
			w->failures++;
	}
	return NULL;
}

Test(threads, many_threads_one_engine)
{
	static int unexpected;
	pthread_t t[THREADS];
	struct worker w[THREADS];
	pthread_barrier_t start;
	hutch_error *err = NULL;
	unsigned long versions;

	cr_assert_eq(fake_engine_start(&fe, handler, &unexpected), 0,
		     "fake engine: %m");
	cr_assert_eq(hutch_engine_open(&engine, fake_engine_url(fe), &err), 0,
		     "%s", hutch_error_message(err));
	pthread_barrier_init(&start, NULL, THREADS);
	for (int i = 0; i < THREADS; i++) {
		memset(&w[i], 0, sizeof(w[i]));
		w[i].start = &start;
		w[i].index = i;
		cr_assert_eq(pthread_create(&t[i], NULL, work, &w[i]), 0);
	}
	for (int i = 0; i < THREADS; i++) {
		pthread_join(t[i], NULL);
		cr_expect_eq(w[i].failures, 0,
			     "thread %d: %d failures, first: %s", i,
			     w[i].failures, w[i].why);
	}
	pthread_barrier_destroy(&start);

	/* Every thread hit the 400 at once; each asked at most once, and
	 * the engine stays on 1.40 afterwards. */
	cr_expect_str_eq(hutch_engine_api_version(engine), "1.40");
	versions = fake_engine_count(fe, "GET", "/version");
	cr_expect(versions >= 1 && versions <= THREADS, "%lu negotiations",
		  versions);
	cr_expect_leq(fake_engine_count(fe, "GET", "/v1.41/*"), THREADS,
		      "requests with the old version after negotiation");
	cr_expect_eq(unexpected, 0);
	/* One connection per concurrent caller, kept alive: never more
	 * connections than threads, whatever the number of calls or bursts. */
	cr_expect_leq(fake_engine_connections(fe), THREADS,
		      "%u connections for %d threads x %d calls",
		      fake_engine_connections(fe), THREADS, CALLS);
	cr_expect_gt(fake_engine_request_count(fe),
		     (unsigned long)THREADS * CALLS);
}

struct opener {
	pthread_barrier_t *start;
	int rc;
	char why[256];
};

static void *open_and_ping(void *p)
{
	struct opener *o = p;
	hutch_engine *e = NULL;
	hutch_error *err = NULL;

	pthread_barrier_wait(o->start);
	o->rc = hutch_engine_open(&e, fake_engine_url(fe), &err);
	if (o->rc == 0)
		o->rc = hutch_engine_ping(e, &err);
	if (o->rc < 0)
		snprintf(o->why, sizeof(o->why), "%s",
			 hutch_error_message(err));
	hutch_error_free(err);
	hutch_engine_free(e);
	return NULL;
}

/*
 * libhutch loads libcurl at the first engine open (src/lib/dl.c), not at
 * start (this program does not link it: Makefile.am), and the first opens
 * may come from many threads at once: one loads it and runs
 * curl_global_init, the others wait for that and use it.
 */
Test(threads, first_engine_opens_load_libcurl_once)
{
	static int unexpected;
	pthread_t t[THREADS];
	struct opener o[THREADS];
	pthread_barrier_t start;
	void *h;

	cr_assert_null(dlopen(HUTCH_LIBCURL_SONAME, RTLD_NOW | RTLD_NOLOAD),
		       "%s was loaded before any engine was opened",
		       HUTCH_LIBCURL_SONAME);
	cr_assert_eq(fake_engine_start(&fe, handler, &unexpected), 0,
		     "fake engine: %m");
	pthread_barrier_init(&start, NULL, THREADS);
	for (int i = 0; i < THREADS; i++) {
		memset(&o[i], 0, sizeof(o[i]));
		o[i].start = &start;
		cr_assert_eq(pthread_create(&t[i], NULL, open_and_ping, &o[i]),
			     0);
	}
	for (int i = 0; i < THREADS; i++) {
		pthread_join(t[i], NULL);
		cr_expect_eq(o[i].rc, 0, "thread %d: %s", i, o[i].why);
	}
	pthread_barrier_destroy(&start);
	h = dlopen(HUTCH_LIBCURL_SONAME, RTLD_NOW | RTLD_NOLOAD);
	cr_expect_not_null(h, "%s is not loaded after the engine calls",
			   HUTCH_LIBCURL_SONAME);
	if (h)
		dlclose(h);
	cr_expect_eq(unexpected, 0);
}
