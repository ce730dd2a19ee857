/*
 * Failure cases a real engine cannot be made to produce on demand, played
 * by a fake engine (fake_engine.c) and driven through the public API only.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <malloc.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <hutch/hutch.h>

#include "agent_protocol.h"
#include "fake_engine.h"

#define MIB (1024u * 1024u)
#define EXEC_ID "abc123"
#define CREATE_PATH "/v1.41/containers/hutch-s/exec"
#define START_PATH "/v1.41/exec/" EXEC_ID "/start"
#define INSPECT_PATH "/v1.41/exec/" EXEC_ID "/json"
#define CONTAINER_PATH "/v1.41/containers/hutch-s/json"
#define RUNNING \
	"{\"Id\":\"c0ffee\",\"State\":{\"Status\":\"running\",\"Running\":true}}"
#define STOPPED \
	"{\"Id\":\"c0ffee\",\"State\":{\"Status\":\"exited\",\"Running\":false}}"

static struct fake_engine *fe;
static hutch_engine *engine;
static hutch_session *session;
static hutch_exec_result *res;
static hutch_error *err;
static char logbuf[8192];

static void teardown(void)
{
	hutch_exec_result_free(res);
	hutch_error_free(err);
	hutch_session_free(session);
	hutch_engine_free(engine);
	fake_engine_stop(fe);
	res = NULL;
	err = NULL;
	session = NULL;
	engine = NULL;
	fe = NULL;
}

TestSuite(fake, .fini = teardown, .timeout = 60);

static const char *msg(void)
{
	return err ? hutch_error_message(err) : "(no error)";
}

static const char *log_text(void)
{
	fake_engine_log_dump(fe, logbuf, sizeof(logbuf));
	return logbuf;
}

static void open_engine(fake_handler_fn handler, void *payload)
{
	hutch_error *e = NULL;

	cr_assert_eq(fake_engine_start(&fe, handler, payload), 0,
		     "fake engine: %m");
	cr_assert_eq(hutch_engine_open(&engine, fake_engine_url(fe), &e), 0,
		     "open: %s", hutch_error_message(e));
	cr_assert_str_eq(hutch_engine_url(engine), fake_engine_url(fe));
}

static void open_session(fake_handler_fn handler, void *payload)
{
	hutch_error *e = NULL;

	open_engine(handler, payload);
	cr_assert_eq(hutch_session_open(&session, engine, "s", NULL, &e), 0,
		     "session: %s", hutch_error_message(e));
}

static int run_cmd(void)
{
	static const char *const argv[] = { "echo", "hi" };
	hutch_exec_options o = HUTCH_EXEC_OPTIONS_INIT;

	o.argv = argv;
	o.argc = 2;
	o.capture = 1;
	o.timeout_ms = 20000;
	return hutch_exec_run(&res, session, &o, &err);
}

static int is(const struct fake_request *r, const char *method,
	      const char *path)
{
	return strcmp(r->method, method) == 0 && strcmp(r->path, path) == 0;
}

/* ---- a scripted exec engine --------------------------------------------- */

struct script {
	int create_status;			   /* 0: 201 */
	const char *create_body;		   /* NULL: {"Id":"abc123"} */
	fake_action (*start)(struct fake_conn *c); /* NULL: empty stream */
	const char *inspect[4]; /* exec inspect answers; the last repeats */
	int ninspect;
	const char *container; /* container inspect body; NULL: 404 */
	/* written by the server thread */
	int inspect_calls;
	int start_body_ok;
	int unexpected;
};

static void stream_head(struct fake_conn *c)
{
	/* What Docker answers to a non-upgraded exec start: no length, the
	 * stream runs until the connection closes. */
	fake_sendf(
		c,
		"HTTP/1.1 200 OK\r\nContent-Type: application/vnd.docker.raw-stream\r\n"
		"Api-Version: 1.41\r\n\r\n");
}

static fake_action start_empty(struct fake_conn *c)
{
	stream_head(c);
	return FAKE_CLOSE;
}

static fake_action script_handler(struct fake_conn *c,
				  const struct fake_request *r, void *p)
{
	struct script *s = p;
	const char *answer;
	int i;

	if (is(r, "POST", CREATE_PATH)) {
		fake_send_json(c, s->create_status ? s->create_status : 201,
			       s->create_body ? s->create_body :
						"{\"Id\":\"" EXEC_ID "\"}");
		return FAKE_KEEP;
	}
	if (is(r, "POST", START_PATH)) {
		if (strcmp(r->body, "{\"Detach\":false,\"Tty\":false}") == 0)
			__atomic_store_n(&s->start_body_ok, 1,
					 __ATOMIC_SEQ_CST);
		return s->start ? s->start(c) : start_empty(c);
	}
	if (is(r, "GET", INSPECT_PATH)) {
		i = __atomic_fetch_add(&s->inspect_calls, 1, __ATOMIC_SEQ_CST);
		if (s->ninspect == 0)
			answer = "{\"ID\":\"" EXEC_ID
				 "\",\"Running\":false,\"ExitCode\":0}";
		else
			answer = s->inspect[i < s->ninspect ? i :
							      s->ninspect - 1];
		fake_send_json(c, 200, answer);
		return FAKE_KEEP;
	}
	if (is(r, "GET", CONTAINER_PATH)) {
		if (s->container)
			fake_send_json(c, 200, s->container);
		else
			fake_send_json(
				c, 404,
				"{\"message\":\"No such container: hutch-s\"}");
		return FAKE_KEEP;
	}
	__atomic_fetch_add(&s->unexpected, 1, __ATOMIC_SEQ_CST);
	fake_send_json(c, 404, "{\"message\":\"page not found\"}");
	return FAKE_KEEP;
}

/* ---- a, b: engine errors at exec create ---------------------------------- */

static int expect_create_failure(struct script *s, const char *engine_msg)
{
	int rc;

	open_session(script_handler, s);
	rc = run_cmd();
	cr_expect_lt(
		rc, 0,
		"a 500 at exec create must fail the run (rc %d, status %s); log: %s",
		rc,
		res ? hutch_exec_status_name(hutch_exec_result_status(res)) :
		      "-",
		log_text());
	cr_expect_null(res, "no result on failure");
	cr_assert_not_null(err);
	cr_expect_eq(hutch_error_code(err), rc);
	cr_expect_eq(hutch_error_code(err), HUTCH_EFAILED, "code %d: %s",
		     hutch_error_code(err), msg());
	cr_expect(strstr(msg(), engine_msg) != NULL, "message: %s", msg());
	cr_expect(strstr(msg(), "HTTP 500") != NULL, "message: %s", msg());
	cr_expect_eq(hutch_error_http_status(err), 500);
	cr_expect_str_eq(hutch_error_engine_message(err) ?
				 hutch_error_engine_message(err) :
				 "",
			 engine_msg);
	/* A plain 500 is not "container gone": no recreate, no second try. */
	cr_expect_eq(fake_engine_count(fe, "POST", CREATE_PATH), 1, "log: %s",
		     log_text());
	cr_expect_eq(fake_engine_count(fe, "POST", "/v1.41/containers/create*"),
		     0);
	/* No exec was made, so nothing may be started or inspected. */
	cr_expect_eq(fake_engine_count(fe, NULL, "/v1.41/exec/*"), 0,
		     "requests for an exec that was never created; log: %s",
		     log_text());
	cr_expect_eq(s->unexpected, 0, "log: %s", log_text());
	return rc;
}

Test(fake, create_500_docker_body)
{
	static struct script s = { .create_status = 500,
				   .create_body = "{\"message\":\"boom\"}",
				   .container = RUNNING };

	cr_assert_lt(expect_create_failure(&s, "boom"), 0);
}

Test(fake, create_500_podman_body)
{
	static struct script s = {
		.create_status = 500,
		.create_body =
			"{\"cause\":\"c\",\"message\":\"podman boom\",\"response\":500}",
		.container = RUNNING,
	};

	cr_assert_lt(expect_create_failure(&s, "podman boom"), 0);
}

/* The same 500 while the container cannot be inspected either: the command
 * never ran, so this is an error, not "the sandbox was lost under it". */
Test(fake, create_500_is_never_sandbox_lost)
{
	static struct script s = { .create_status = 500,
				   .create_body = "{\"message\":\"boom\"}" };
	int rc;

	open_session(script_handler, &s);
	rc = run_cmd();
	cr_expect_lt(
		rc, 0, "rc %d, status %s; log: %s", rc,
		res ? hutch_exec_status_name(hutch_exec_result_status(res)) :
		      "-",
		log_text());
	cr_expect(strstr(msg(), "boom") != NULL, "message: %s", msg());
}

/* ---- c: a stream cut inside a frame -------------------------------------- */

static fake_action start_cut(struct fake_conn *c)
{
	stream_head(c);
	/* The header promises 100 bytes; 10 come, then the connection ends. */
	fake_send(c,
		  "\x01\0\0\0\0\0\0\x64"
		  "0123456789",
		  18);
	return FAKE_CLOSE;
}

Test(fake, cut_stream_is_an_error)
{
	static struct script s = {
		.start = start_cut,
		.inspect = { "{\"Running\":false,\"ExitCode\":0}" },
		.ninspect = 1,
		.container = RUNNING,
	};
	int rc;

	open_session(script_handler, &s);
	rc = run_cmd();
	cr_expect_lt(
		rc, 0, "a cut stream reported as rc %d (status %s, exit %d)",
		rc,
		res ? hutch_exec_status_name(hutch_exec_result_status(res)) :
		      "-",
		res ? hutch_exec_result_exit_code(res) : -1);
	cr_expect_null(res, "partial output must not come back as a result");
	cr_expect(strstr(msg(), "stream") != NULL, "message: %s", msg());
	cr_expect(strstr(msg(), "inside a frame") || strstr(msg(), "broke") ||
			  strstr(msg(), "cut"),
		  "message does not say the stream was cut: %s", msg());
	cr_expect_eq(s.start_body_ok, 1, "exec start body");
}

/* ---- d: not a framed stream ----------------------------------------------- */

static fake_action start_garbage(struct fake_conn *c)
{
	stream_head(c);
	fake_sendf(c, "this is not framed\n");
	return FAKE_CLOSE;
}

Test(fake, unframed_stream_is_eproto)
{
	static struct script s = { .start = start_garbage,
				   .container = RUNNING };
	int rc;

	open_session(script_handler, &s);
	rc = run_cmd();
	cr_expect_eq(rc, HUTCH_EPROTO, "rc %d: %s", rc, msg());
	cr_expect_eq(hutch_error_code(err), HUTCH_EPROTO, "%s", msg());
	cr_expect_null(res);
}

/* ---- e: exec create answers something that is not JSON ------------------- */

Test(fake, create_non_json_is_eproto)
{
	static struct script s = { .create_body = "Id: abc123, honest",
				   .container = RUNNING };
	int rc;

	open_session(script_handler, &s);
	rc = run_cmd();
	cr_expect_eq(rc, HUTCH_EPROTO, "rc %d: %s", rc, msg());
	cr_expect_eq(hutch_error_code(err), HUTCH_EPROTO, "%s", msg());
	cr_expect_null(res);
	cr_expect_eq(fake_engine_count(fe, NULL, "/v1.41/exec/*"), 0, "log: %s",
		     log_text());
}

/* ---- f: Podman's "running, exit code 0" moment ---------------------------- */

static fake_action start_one_frame(struct fake_conn *c)
{
	stream_head(c);
	fake_send_frame(c, 1, "partial\n", 8);
	return FAKE_CLOSE;
}

Test(fake, inspect_running_race_waits_for_real_code)
{
	static struct script s = {
		.start = start_one_frame,
		.inspect = { "{\"Running\":true,\"ExitCode\":0}",
			     "{\"Running\":true,\"ExitCode\":0}",
			     "{\"Running\":false,\"ExitCode\":3}" },
		.ninspect = 3,
		.container = RUNNING,
	};
	int rc;

	open_session(script_handler, &s);
	rc = run_cmd();
	cr_assert_eq(rc, 0, "%s", msg());
	cr_expect_eq(hutch_exec_result_status(res), HUTCH_EXEC_OK);
	cr_expect_eq(hutch_exec_result_exit_code(res), 3);
	cr_expect_eq(s.inspect_calls, 3, "inspect asked %d times",
		     s.inspect_calls);
	cr_expect_eq(hutch_exec_result_retried(res), 0);
}

/* ---- g: an engine older than the pinned API -------------------------------- */

static fake_action old_engine(struct fake_conn *c, const struct fake_request *r,
			      void *p)
{
	int *unexpected = p;

	if (strncmp(r->path, "/v1.41/", 7) == 0) {
		fake_send_json(c, 400,
			       "{\"message\":\"client version 1.41 is too new. "
			       "Maximum supported API version is 1.40\"}");
		return FAKE_KEEP;
	}
	if (is(r, "GET", "/version")) {
		fake_send_json(c, 200,
			       "{\"ApiVersion\":\"1.40\",\"Version\":\"19.03\","
			       "\"MinAPIVersion\":\"1.12\",\"Os\":\"linux\","
			       "\"Arch\":\"amd64\"}");
		return FAKE_KEEP;
	}
	if (is(r, "GET", "/v1.40/images/foo:1/json")) {
		fake_send_json(c, 200, "{}");
		return FAKE_KEEP;
	}
	__atomic_fetch_add(unexpected, 1, __ATOMIC_SEQ_CST);
	fake_send_json(c, 404, "{\"message\":\"page not found\"}");
	return FAKE_KEEP;
}

Test(fake, negotiates_older_api_version)
{
	static int unexpected;
	hutch_engine_info *info = NULL;
	int rc;

	open_engine(old_engine, &unexpected);
	cr_expect_str_eq(hutch_engine_api_version(engine), "1.41");
	rc = hutch_engine_image_exists(engine, "foo:1", &err);
	cr_expect_eq(rc, 1, "rc %d: %s; log: %s", rc, msg(), log_text());
	cr_expect_str_eq(hutch_engine_api_version(engine), "1.40");
	cr_expect_str_eq(
		fake_engine_request(fe, 0) ? fake_engine_request(fe, 0) : "",
		"GET /v1.41/images/foo:1/json");
	cr_expect_str_eq(
		fake_engine_request(fe, 1) ? fake_engine_request(fe, 1) : "",
		"GET /version");
	cr_expect_str_eq(
		fake_engine_request(fe, 2) ? fake_engine_request(fe, 2) : "",
		"GET /v1.40/images/foo:1/json");

	/* From now on straight to 1.40, no second negotiation. */
	rc = hutch_engine_image_exists(engine, "foo:1", &err);
	cr_expect_eq(rc, 1, "rc %d: %s", rc, msg());
	cr_expect_eq(fake_engine_request_count(fe), 4, "log: %s", log_text());
	cr_expect_eq(fake_engine_count(fe, "GET", "/v1.41/*"), 1, "log: %s",
		     log_text());

	rc = hutch_engine_info_get(&info, engine, &err);
	cr_assert_eq(rc, 0, "%s", msg());
	cr_expect_eq(info->kind, HUTCH_ENGINE_DOCKER);
	cr_expect_str_eq(info->api_version ? info->api_version : "", "1.40");
	cr_expect_str_eq(info->version ? info->version : "", "19.03");
	hutch_engine_info_free(info);
	cr_expect_eq(unexpected, 0, "log: %s", log_text());
}

/* ---- h: an answer past the 16 MiB cap ------------------------------------- */

#define BIG_LEN (17u * MIB)

static fake_action big_engine(struct fake_conn *c, const struct fake_request *r,
			      void *p)
{
	static char chunk[64 * 1024];
	size_t left = BIG_LEN - 2, n;

	(void)p;
	if (is(r, "GET", "/_ping")) {
		fake_send_response(c, 200, "text/plain", "OK", 2);
		return FAKE_KEEP;
	}
	if (!is(r, "GET", "/v1.41/images/big:1/json")) {
		fake_send_json(c, 404, "{\"message\":\"page not found\"}");
		return FAKE_KEEP;
	}
	memset(chunk, 'a', sizeof(chunk));
	/* One JSON string of 17 MiB, streamed from a 64 KiB buffer. */
	if (fake_sendf(c,
		       "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
		       "Content-Length: %u\r\n\r\n\"",
		       BIG_LEN) < 0)
		return FAKE_CLOSE;
	while (left > 0) {
		n = left < sizeof(chunk) ? left : sizeof(chunk);
		if (fake_send(c, chunk, n) < 0)
			return FAKE_CLOSE; /* the client gave up: expected */
		left -= n;
	}
	fake_send(c, "\"", 1);
	return FAKE_CLOSE;
}

static size_t heap_in_use(void)
{
	struct mallinfo2 mi = mallinfo2();

	return mi.uordblks + mi.hblkhd;
}

Test(fake, oversized_answer_is_etoobig)
{
	size_t before, after;
	int rc;

	open_engine(big_engine, NULL);
	/* Warm up libcurl and the connection so their memory is counted in
	 * "before". */
	cr_assert_eq(hutch_engine_ping(engine, &err), 0, "%s", msg());
	before = heap_in_use();
	rc = hutch_engine_image_exists(engine, "big:1", &err);
	cr_expect_eq(rc, HUTCH_ETOOBIG, "rc %d: %s", rc, msg());
	cr_expect_eq(hutch_error_code(err), HUTCH_ETOOBIG, "%s", msg());
	hutch_error_free(err);
	err = NULL;
	after = heap_in_use();
	/* The 16 MiB buffer is gone again. */
	cr_expect_lt(after, before + MIB, "heap grew from %zu to %zu bytes",
		     before, after);
	/* The handle is still good. */
	cr_expect_eq(hutch_engine_ping(engine, &err), 0, "%s", msg());
}

/* ---- i: keep-alive --------------------------------------------------------- */

static fake_action ping_engine(struct fake_conn *c,
			       const struct fake_request *r, void *p)
{
	(void)p;
	if (is(r, "GET", "/_ping"))
		fake_send_response(c, 200, "text/plain; charset=utf-8", "OK",
				   2);
	else
		fake_send_json(c, 404, "{\"message\":\"page not found\"}");
	return FAKE_KEEP;
}

Test(fake, calls_share_one_connection)
{
	open_engine(ping_engine, NULL);
	for (int i = 0; i < 3; i++)
		cr_assert_eq(hutch_engine_ping(engine, &err), 0, "ping %d: %s",
			     i, msg());
	cr_expect_eq(fake_engine_count(fe, "GET", "/_ping"), 3, "log: %s",
		     log_text());
	cr_expect_eq(fake_engine_connections(fe), 1,
		     "%u connections for 3 pings", fake_engine_connections(fe));
}

/* ---- j: exit code 137 ------------------------------------------------------ */

Test(fake, exit_137_container_gone_is_sandbox_lost)
{
	static struct script s = {
		.start = start_one_frame,
		.inspect = { "{\"Running\":false,\"ExitCode\":137}" },
		.ninspect = 1,
		.container = STOPPED,
	};
	int rc;

	/* The engine's exec and its policy: the channel's own look at the
	 * container would be one GET more (fake::channel_*). */
	setenv("HUTCH_FAST_PATH", "0", 1);
	open_session(script_handler, &s);
	rc = run_cmd();
	cr_assert_eq(rc, 0, "%s", msg());
	cr_expect_eq(hutch_exec_result_status(res), HUTCH_EXEC_SANDBOX_LOST,
		     "status %s",
		     hutch_exec_status_name(hutch_exec_result_status(res)));
	cr_expect_eq(hutch_exec_result_exit_code(res), -1);
	cr_expect_eq(fake_engine_count(fe, "GET", CONTAINER_PATH), 1, "log: %s",
		     log_text());
	/* Never run again. */
	cr_expect_eq(fake_engine_count(fe, "POST", CREATE_PATH), 1, "log: %s",
		     log_text());
}

Test(fake, exit_137_container_running_is_ok)
{
	static struct script s = {
		.start = start_one_frame,
		.inspect = { "{\"Running\":false,\"ExitCode\":137}" },
		.ninspect = 1,
		.container = RUNNING,
	};
	const char *data;
	size_t len;
	int rc;

	open_session(script_handler, &s);
	rc = run_cmd();
	cr_assert_eq(rc, 0, "%s", msg());
	cr_expect_eq(hutch_exec_result_status(res), HUTCH_EXEC_OK, "status %s",
		     hutch_exec_status_name(hutch_exec_result_status(res)));
	cr_expect_eq(hutch_exec_result_exit_code(res), 137);
	hutch_exec_result_output(res, HUTCH_STREAM_STDOUT, &data, &len, NULL,
				 NULL);
	cr_expect_eq(len, 8);
	cr_expect_str_eq(data, "partial\n");
	/* A SIGKILL death makes hutch give the container's state a moment to
	 * settle (Docker reports the exec ended before the container), so it
	 * asks more than once, but boundedly, before calling it alive. */
	cr_expect_geq(fake_engine_count(fe, "GET", CONTAINER_PATH), 2,
		      "log: %s", log_text());
	cr_expect_leq(fake_engine_count(fe, "GET", CONTAINER_PATH), 100,
		      "log: %s", log_text());
}

/* ---- k: frames split across writes ----------------------------------------- */

static const struct {
	int stream;
	const char *data;
	size_t len;
} frames[] = {
	{ 1, "hello, ", 7 }, { 2, "warn: one\n", 10 }, { 1, "wor\0ld", 6 },
	{ 1, "\n", 1 },	     { 2, "two\n", 4 },
};

static fake_action start_split(struct fake_conn *c)
{
	static const size_t sizes[] = { 3, 1, 5, 2, 8, 13, 1, 4 };
	char all[256];
	size_t len = 0, off = 0, n;
	unsigned int i = 0;

	for (size_t f = 0; f < sizeof(frames) / sizeof(frames[0]); f++) {
		size_t l = frames[f].len;
		unsigned char h[8] = { (unsigned char)frames[f].stream,
				       0,
				       0,
				       0,
				       0,
				       0,
				       0,
				       (unsigned char)l };

		memcpy(all + len, h, 8);
		memcpy(all + len + 8, frames[f].data, l);
		len += 8 + l;
	}
	stream_head(c);
	/* Cut headers and payloads at awkward places, with pauses so each
	 * piece arrives on its own. */
	while (off < len) {
		n = sizes[i++ % (sizeof(sizes) / sizeof(sizes[0]))];
		if (n > len - off)
			n = len - off;
		if (fake_send(c, all + off, n) < 0)
			return FAKE_CLOSE;
		off += n;
		fake_sleep_ms(5);
	}
	return FAKE_CLOSE;
}

Test(fake, split_frames_are_captured_exactly)
{
	static struct script s = { .start = start_split, .container = RUNNING };
	const char *data;
	size_t len;
	uint64_t total, omitted;
	int rc;

	open_session(script_handler, &s);
	rc = run_cmd();
	cr_assert_eq(rc, 0, "%s", msg());
	cr_expect_eq(hutch_exec_result_status(res), HUTCH_EXEC_OK);
	cr_expect_eq(hutch_exec_result_exit_code(res), 0);

	hutch_exec_result_output(res, HUTCH_STREAM_STDOUT, &data, &len, &total,
				 &omitted);
	cr_expect_eq(len, 14, "stdout is %zu bytes", len);
	cr_expect(len == 14 && memcmp(data, "hello, wor\0ld\n", 14) == 0,
		  "stdout: '%.*s'", (int)len, data);
	cr_expect_eq(total, 14);
	cr_expect_eq(omitted, 0);

	hutch_exec_result_output(res, HUTCH_STREAM_STDERR, &data, &len, &total,
				 &omitted);
	cr_expect_eq(len, 14, "stderr is %zu bytes", len);
	cr_expect_str_eq(data, "warn: one\ntwo\n");
	cr_expect_eq(total, 14);
	cr_expect_eq(omitted, 0);
	cr_expect_eq(s.start_body_ok, 1);
}

/* ---- l: nobody home ---------------------------------------------------------- */

Test(fake, missing_socket_is_unreachable)
{
	char dir[] = "/tmp/hutch-nofake-XXXXXX", url[128], path[96];
	hutch_error *e = NULL;
	int rc;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/engine.sock", dir);
	snprintf(url, sizeof(url), "unix://%s", path);
	rc = hutch_engine_open(&engine, url, &e);
	rmdir(dir);
	cr_assert_eq(rc, 0, "open makes no request: %s",
		     hutch_error_message(e));

	rc = hutch_engine_ping(engine, &err);
	cr_expect_eq(rc, HUTCH_EUNREACHABLE, "rc %d: %s", rc, msg());
	cr_expect_eq(hutch_error_code(err), HUTCH_EUNREACHABLE);
	cr_expect(strstr(msg(), path) != NULL, "the path is not in: %s", msg());
	hutch_error_free(err);
	err = NULL;

	/* An exec says the same, and does not pretend the sandbox was lost. */
	cr_assert_eq(hutch_session_open(&session, engine, "s", NULL, &e), 0);
	rc = run_cmd();
	cr_expect_eq(rc, HUTCH_EUNREACHABLE, "rc %d: %s", rc, msg());
	cr_expect(strstr(msg(), path) != NULL, "the path is not in: %s", msg());
	cr_expect_null(res);
}

/* ---- a container gone between the listing and its removal ----------- */

static fake_action container_vanishes(struct fake_conn *c,
				      const struct fake_request *r, void *p)
{
	(void)p;
	if (strstr(r->path, "/containers/json"))
		fake_send_json(c, 200,
			       "[{\"Id\":\"abc123\",\"Names\":[\"/hutch-s\"],"
			       "\"State\":\"exited\","
			       "\"Labels\":{\"dev.hutch.session\":\"s\"}}]");
	else if (strstr(r->path, "/volumes?"))
		fake_send_json(c, 200, "{\"Volumes\":[]}");
	else if (strcmp(r->method, "DELETE") == 0 &&
		 strstr(r->path, "/containers/"))
		fake_send_json(c, 404,
			       "{\"message\":\"No such container: x\"}");
	else if (strcmp(r->method, "DELETE") == 0)
		fake_send_response(c, 204, NULL, "", 0);
	else
		fake_send_json(c, 200, "{}");
	return FAKE_KEEP;
}

/* The container went between the listing and the DELETE (another `rm`, a
 * user's `docker rm`): that is what was asked, so success, and success
 * leaves no error behind for a caller that looks at it. */
Test(fake, remove_of_a_vanished_container_is_clean_success)
{
	open_engine(container_vanishes, NULL);
	cr_assert_eq(hutch_session_remove(engine, "s", &err), 0, "%s", msg());
	cr_assert_null(err, "success with an error set: %s", msg());
	cr_assert_eq(fake_engine_count(fe, "DELETE", "/v1.41/containers/*"), 1,
		     "%s", log_text());
}

/* ---- the upgraded exec start (standard input, a terminal, a user) ------ */

struct upgraded {
	const char *start_answer; /* raw, after the request; NULL: 101 + hi */
	size_t start_len;
	int tty;
	/* written by the server thread */
	char create_body[1024];
	char start_body[128];
	int resizes;
};

#define UPGRADED_HEAD                                         \
	"HTTP/1.1 101 UPGRADED\r\n"                           \
	"Content-Type: application/vnd.docker.raw-stream\r\n" \
	"Connection: Upgrade\r\nUpgrade: tcp\r\n\r\n"

static fake_action upgraded_handler(struct fake_conn *c,
				    const struct fake_request *r, void *p)
{
	struct upgraded *u = p;

	if (is(r, "POST", CREATE_PATH)) {
		snprintf(u->create_body, sizeof(u->create_body), "%s", r->body);
		fake_send_json(c, 201, "{\"Id\":\"" EXEC_ID "\"}");
		return FAKE_KEEP;
	}
	if (is(r, "POST", START_PATH)) {
		snprintf(u->start_body, sizeof(u->start_body), "%s", r->body);
		if (u->start_answer) {
			fake_send(c, u->start_answer, u->start_len);
			return FAKE_CLOSE;
		}
		fake_sendf(c, UPGRADED_HEAD);
		if (u->tty)
			fake_sendf(c, "raw\r\n");
		else
			fake_send_frame(c, 1, "hi\n", 3);
		return FAKE_CLOSE;
	}
	if (strcmp(r->method, "POST") == 0 &&
	    strcmp(r->path, "/v1.41/exec/" EXEC_ID "/resize?h=24&w=80") == 0) {
		__atomic_fetch_add(&u->resizes, 1, __ATOMIC_SEQ_CST);
		fake_send_response(c, 200, NULL, "", 0);
		return FAKE_KEEP;
	}
	if (is(r, "GET", INSPECT_PATH)) {
		fake_send_json(
			c, 200,
			"{\"ID\":\"" EXEC_ID
			"\",\"Running\":false,\"ExitCode\":0,\"Pid\":7}");
		return FAKE_KEEP;
	}
	fake_send_json(c, 404, "{\"message\":\"page not found\"}");
	return FAKE_KEEP;
}

static int run_upgraded(struct upgraded *u, const char *user)
{
	static const char *const argv[] = { "cat" };
	hutch_exec_options o = HUTCH_EXEC_OPTIONS_INIT;

	open_session(upgraded_handler, u);
	o.argv = argv;
	o.argc = 1;
	o.capture = 1;
	o.timeout_ms = 20000;
	o.input = "abc";
	o.input_len = 3;
	o.tty = u->tty;
	o.user = user;
	return hutch_exec_run(&res, session, &o, &err);
}

/* With input the exec is created attached, as the numeric user, and its
 * start is upgraded; the engine closing with input unread is no error. */
Test(fake, upgraded_start_with_input_and_user)
{
	static struct upgraded u;
	const char *d;
	size_t len;
	int rc = run_upgraded(&u, "0:0");

	cr_assert_eq(rc, 0, "rc %d: %s", rc, msg());
	cr_expect_eq(hutch_exec_result_status(res), HUTCH_EXEC_OK);
	hutch_exec_result_output(res, HUTCH_STREAM_STDOUT, &d, &len, NULL,
				 NULL);
	cr_expect_str_eq(d, "hi\n");
	cr_expect(strstr(u.create_body, "\"AttachStdin\":true"), "%s",
		  u.create_body);
	cr_expect(strstr(u.create_body, "\"Tty\":false"), "%s", u.create_body);
	cr_expect(strstr(u.create_body, "\"User\":\"0:0\""), "%s",
		  u.create_body);
	cr_expect_str_eq(u.start_body, "{\"Detach\":false,\"Tty\":false}");
	cr_expect_eq(u.resizes, 0);
}

/* A terminal: Tty in both bodies, the size sent before the output is
 * read, the output raw (not demultiplexed), all on stdout. */
Test(fake, upgraded_start_with_a_terminal)
{
	static struct upgraded u = { .tty = 1 };
	const char *d;
	size_t len;
	int rc = run_upgraded(&u, NULL);

	cr_assert_eq(rc, 0, "rc %d: %s", rc, msg());
	hutch_exec_result_output(res, HUTCH_STREAM_STDOUT, &d, &len, NULL,
				 NULL);
	cr_expect_str_eq(d, "raw\r\n");
	cr_expect(strstr(u.create_body, "\"Tty\":true"), "%s", u.create_body);
	cr_expect(!strstr(u.create_body, "\"User\""), "%s", u.create_body);
	cr_expect_str_eq(u.start_body, "{\"Detach\":false,\"Tty\":true}");
	cr_expect_eq(u.resizes, 1, "resizes: %d; log: %s", u.resizes,
		     log_text());
}

/* An error answer on the upgraded path is the engine's typed error, its
 * message kept, as on the pooled path. */
Test(fake, upgraded_start_error_is_the_engines)
{
	static const char answer[] =
		"HTTP/1.1 500 Internal Server Error\r\n"
		"Content-Type: application/json\r\nContent-Length: 18\r\n\r\n"
		"{\"message\":\"boom\"}";
	static struct upgraded u = { .start_answer = answer,
				     .start_len = sizeof(answer) - 1 };
	int rc = run_upgraded(&u, NULL);

	cr_expect_eq(rc, HUTCH_EFAILED, "rc %d: %s", rc, msg());
	cr_expect_null(res);
	cr_expect_eq(hutch_error_http_status(err), 500, "%s", msg());
	cr_expect_str_eq(hutch_error_engine_message(err) ?
				 hutch_error_engine_message(err) :
				 "",
			 "boom");
}

/* An answer head that never ends is refused within a fixed bound. */
Test(fake, upgraded_start_endless_head_is_bounded)
{
	static struct upgraded u;
	size_t n = 64 * 1024;
	char *answer = malloc(n);
	int rc;

	cr_assert_not_null(answer);
	memcpy(answer, "HTTP/1.1 101 UPGRADED\r\n", 23);
	for (size_t i = 23; i < n; i++)
		answer[i] = (i % 64) == 63 ? '\n' : 'x';
	u.start_answer = answer;
	u.start_len = n;
	rc = run_upgraded(&u, NULL);
	cr_expect_eq(rc, HUTCH_EFAILED, "rc %d: %s", rc, msg());
	cr_expect(strstr(msg(), "head"), "%s", msg());
	free(answer);
}

/* ---- the agent's channel: when it is taken, and when not -------------------
 *
 * The "container" here is the test process itself: the fake engine says
 * its PID 1 is a pid of our choosing, and its system volume a temporary
 * directory where a thread of the test listens on chan/agent.sock.  With
 * our own pid the listener passes hutch's peer check (it is that process);
 * with another pid it must not get a byte.
 */

enum {
	AGENT_SERVE,  /* speak the protocol: HELLO, STARTED, "hi\n", EXIT 0 */
	AGENT_REFUSE, /* HELLO, then REFUSED (the agent is missing) */
	AGENT_SILENT, /* HELLO, then only count what hutch sends */
	AGENT_ECHO,   /* STARTED, stdin back as stdout until its end, EXIT 0 */
	AGENT_VANISH, /* STARTED, "hi\n", then the connection ends: no EXIT */
	AGENT_TTY,    /* STARTED, the first frames seen, "ok", EXIT 0 */
};

struct fake_agent {
	char dir[64];	/* the system volume's "host path" */
	char path[100]; /* fits sun_path */
	int lfd;
	int mode;
	pthread_t thread;
	int stop;
	/* written by the thread, read after the join */
	int conns;
	long got; /* bytes hutch sent (AGENT_SILENT) */
	char argv0[256];
	uint32_t flags;
	int stdin_end; /* STDIN_END came */
	long echoed;
	int first, second; /* AGENT_TTY: the types of the first frames */
	unsigned int rows, cols;
	char input[16];
	char container[1024]; /* the engine's inspection of the container */
};

static struct fake_agent agent;

static void put_be32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
}

static int send_frame(int fd, int type, const void *data, size_t len)
{
	unsigned char head[8] = { (unsigned char)type };

	put_be32(head + 4, (uint32_t)len);
	/* hutch may have closed already: EPIPE, not SIGPIPE. */
	if (send(fd, head, 8, MSG_NOSIGNAL) != 8)
		return -1;
	return len && send(fd, data, len, MSG_NOSIGNAL) != (ssize_t)len ? -1 :
									  0;
}

static int read_full(int fd, void *buf, size_t len)
{
	size_t off = 0;

	while (off < len) {
		ssize_t n = read(fd, (char *)buf + off, len - off);

		if (n <= 0)
			return -1;
		off += (size_t)n;
	}
	return 0;
}

static int send_hello(int fd)
{
	unsigned char hello[16 + 8];

	put_be32(hello, 1);
	put_be32(hello + 4, (uint32_t)getuid());
	put_be32(hello + 8, (uint32_t)getgid());
	put_be32(hello + 12, 0);
	memcpy(hello + 16, "fakehost", 8);
	return send_frame(fd, 0x10, hello, sizeof(hello));
}

static void serve(struct fake_agent *a, int fd)
{
	unsigned char head[8], fixed[16];
	/* Any frame but REQ may be this long (hutch sends input in frames
	 * of up to 256 KiB). */
	static char req[HUTCH_CHAN_FRAME_MAX];
	uint32_t len;

	if (send_hello(fd) < 0 || read_full(fd, head, 8) < 0)
		return;
	len = (uint32_t)head[4] << 24 | (uint32_t)head[5] << 16 |
	      (uint32_t)head[6] << 8 | head[7];
	if (head[0] != 0x20 || len < 16 || len > sizeof(req) ||
	    read_full(fd, req, len) < 0)
		return;
	memcpy(fixed, req, 16);
	a->flags = (uint32_t)fixed[0] << 24 | (uint32_t)fixed[1] << 16 |
		   (uint32_t)fixed[2] << 8 | fixed[3];
	snprintf(a->argv0, sizeof(a->argv0), "%.*s", (int)(len - 16), req + 16);
	if (a->mode == AGENT_REFUSE) {
		unsigned char r[4 + 7];

		put_be32(r, 1);
		memcpy(r + 4, "missing", 7);
		send_frame(fd, 0x13, r, sizeof(r));
		return;
	}
	unsigned char pid[4], code[4];

	put_be32(pid, 4242);
	put_be32(code, 0);
	send_frame(fd, 0x11, pid, 4);
	if (a->mode == AGENT_ECHO) {
		/* Each STDIN frame back as stdout, in the same thread: hutch
		 * must read the output while it still sends input. */
		while (read_full(fd, head, 8) == 0) {
			len = (uint32_t)head[4] << 24 |
			      (uint32_t)head[5] << 16 | (uint32_t)head[6] << 8 |
			      head[7];
			if (len > sizeof(req) || read_full(fd, req, len) < 0)
				return;
			if (head[0] == 0x22) {
				a->stdin_end = 1;
				break;
			}
			if (head[0] != 0x21 || send_frame(fd, 1, req, len) < 0)
				return;
			a->echoed += len;
		}
	} else if (a->mode == AGENT_TTY) {
		/* The terminal's size, then the input. */
		for (int i = 0; i < 2 && read_full(fd, head, 8) == 0; i++) {
			len = (uint32_t)head[4] << 24 |
			      (uint32_t)head[5] << 16 | (uint32_t)head[6] << 8 |
			      head[7];
			if (len > sizeof(req) || read_full(fd, req, len) < 0)
				return;
			if (i == 0)
				a->first = head[0];
			else
				a->second = head[0];
			if (head[0] == 0x23 && len == 4) {
				a->rows = (unsigned char)req[0] << 8 |
					  (unsigned char)req[1];
				a->cols = (unsigned char)req[2] << 8 |
					  (unsigned char)req[3];
			} else if (head[0] == 0x21) {
				snprintf(a->input, sizeof(a->input), "%.*s",
					 (int)len, req);
			}
		}
		send_frame(fd, 1, "ok", 2);
		send_frame(fd, 0x12, code, 4);
		/* Whatever else hutch sends, to its close: no end of file
		 * is sent to a terminal. */
		while (read_full(fd, head, 8) == 0) {
			len = (uint32_t)head[4] << 24 |
			      (uint32_t)head[5] << 16 | (uint32_t)head[6] << 8 |
			      head[7];
			if (head[0] == 0x22)
				a->stdin_end = 1;
			if (len > sizeof(req) || read_full(fd, req, len) < 0)
				break;
		}
		return;
	} else {
		send_frame(fd, 1, "hi\n", 3);
	}
	if (a->mode != AGENT_VANISH)
		send_frame(fd, 0x12, code, 4);
}

static void *agent_thread(void *p)
{
	struct fake_agent *a = p;
	char buf[4096];

	while (!__atomic_load_n(&a->stop, __ATOMIC_SEQ_CST)) {
		struct pollfd pf = { .fd = a->lfd, .events = POLLIN };
		int fd;
		ssize_t n;

		if (poll(&pf, 1, 50) <= 0)
			continue;
		fd = accept(a->lfd, NULL, NULL);
		if (fd < 0)
			continue;
		a->conns++;
		if (a->mode == AGENT_SILENT) {
			/* Says HELLO as the agent would, to be sent a
			 * request if hutch took it for the agent. */
			send_hello(fd);
			while ((n = read(fd, buf, sizeof(buf))) > 0)
				a->got += n;
		} else {
			serve(a, fd);
		}
		close(fd);
	}
	return NULL;
}

/* Listen at `at` (relative to the volume), and say in the inspection that
 * PID 1 is `pid`. */
static void agent_start(int mode, long pid, const char *at)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	char chan[128];

	memset(&agent, 0, sizeof(agent));
	agent.mode = mode;
	snprintf(agent.dir, sizeof(agent.dir), "/tmp/hutch-fchan-XXXXXX");
	cr_assert_not_null(mkdtemp(agent.dir));
	snprintf(chan, sizeof(chan), "%s/chan", agent.dir);
	cr_assert_eq(mkdir(chan, 01777), 0);
	snprintf(agent.path, sizeof(agent.path), "%s/%s", agent.dir, at);
	agent.lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert_geq(agent.lfd, 0);
	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", agent.path);
	cr_assert_eq(bind(agent.lfd, (struct sockaddr *)&addr, sizeof(addr)), 0,
		     "bind %s: %m", agent.path);
	cr_assert_eq(listen(agent.lfd, 8), 0);
	cr_assert_eq(pthread_create(&agent.thread, NULL, agent_thread, &agent),
		     0);
	snprintf(agent.container, sizeof(agent.container),
		 "{\"Id\":\"c0ffee\",\"State\":{\"Status\":\"running\","
		 "\"Running\":true,\"Pid\":%ld},\"Config\":{\"Hostname\":"
		 "\"fakehost\"},\"Mounts\":[{\"Type\":\"volume\",\"Source\":"
		 "\"%s\",\"Destination\":\"/.hutch\"}]}",
		 pid, agent.dir);
}

/* Stop the thread: what it saw can be read after this. */
static void agent_stop(void)
{
	char p[160];

	__atomic_store_n(&agent.stop, 1, __ATOMIC_SEQ_CST);
	pthread_join(agent.thread, NULL);
	close(agent.lfd);
	unlink(agent.path);
	snprintf(p, sizeof(p), "%s/chan/agent.sock", agent.dir);
	unlink(p);
	snprintf(p, sizeof(p), "%s/real.sock", agent.dir);
	unlink(p);
	snprintf(p, sizeof(p), "%s/chan", agent.dir);
	rmdir(p);
	rmdir(agent.dir);
}

static const char *path_of(void)
{
	return res ? hutch_exec_result_path(res) : "(no result)";
}

/* The listener is PID 1 (here: this process): the command runs on the
 * channel, with no engine exec; the second run needs no new inspection. */
Test(fake, channel_runs_without_engine_exec)
{
	static struct script s;
	const char *out;
	size_t len;

	agent_start(AGENT_SERVE, (long)getpid(), "chan/agent.sock");
	s.container = agent.container;
	open_session(script_handler, &s);
	cr_assert_eq(run_cmd(), 0, "%s", msg());
	cr_expect_str_eq(path_of(), "agent");
	hutch_exec_result_output(res, HUTCH_STREAM_STDOUT, &out, &len, NULL,
				 NULL);
	cr_expect_eq(len, 3);
	cr_expect_str_eq(out, "hi\n");
	cr_expect_eq(hutch_exec_result_exit_code(res), 0);
	hutch_exec_result_free(res);
	res = NULL;
	cr_assert_eq(run_cmd(), 0, "%s", msg());
	cr_expect_str_eq(path_of(), "agent");
	agent_stop();
	cr_expect_eq(agent.conns, 2);
	cr_expect(strncmp(agent.argv0, "/.hutch/bin/hutch-agent-", 24) == 0,
		  "argv[0] %s", agent.argv0);
	cr_expect_eq(agent.flags, 0, "no stdin, no terminal: flags %u",
		     agent.flags);
	cr_expect_eq(fake_engine_count(fe, "POST", CREATE_PATH), 0, "log: %s",
		     log_text());
	cr_expect_eq(fake_engine_count(fe, "GET", CONTAINER_PATH), 1, "log: %s",
		     log_text());
}

/* A listener that is not the container's PID 1 (a sandbox process that
 * replaced the socket, or listens itself) is connected to, checked, and
 * given nothing; the command goes to the engine. */
Test(fake, channel_listener_not_pid1_gets_nothing)
{
	static struct script s;

	agent_start(AGENT_SILENT, (long)getppid(), "chan/agent.sock");
	s.container = agent.container;
	open_session(script_handler, &s);
	cr_assert_eq(run_cmd(), 0, "%s", msg());
	cr_expect_str_eq(path_of(), "engine");
	agent_stop();
	cr_expect_geq(agent.conns, 1, "the channel was not even tried");
	cr_expect_eq(agent.got, 0, "%ld bytes sent to a listener not PID 1",
		     agent.got);
	cr_expect_eq(fake_engine_count(fe, "POST", CREATE_PATH), 1, "log: %s",
		     log_text());
}

/* The socket's name swapped for a symlink to a socket elsewhere (a host
 * socket, say, which would pass the pid check): never connected to. */
Test(fake, channel_symlink_is_not_followed)
{
	static struct script s;
	char link[160];

	agent_start(AGENT_SERVE, (long)getpid(), "real.sock");
	snprintf(link, sizeof(link), "%s/chan/agent.sock", agent.dir);
	cr_assert_eq(symlink(agent.path, link), 0);
	s.container = agent.container;
	open_session(script_handler, &s);
	cr_assert_eq(run_cmd(), 0, "%s", msg());
	cr_expect_str_eq(path_of(), "engine");
	agent_stop();
	cr_expect_eq(agent.conns, 0, "connected through a symlink");
	cr_expect_eq(fake_engine_count(fe, "POST", CREATE_PATH), 1, "log: %s",
		     log_text());
}

/* The agent refuses (its binary is missing): nothing ran, the engine's
 * exec runs the command. */
Test(fake, channel_refused_falls_back_to_engine)
{
	static struct script s;

	agent_start(AGENT_REFUSE, (long)getpid(), "chan/agent.sock");
	s.container = agent.container;
	open_session(script_handler, &s);
	cr_assert_eq(run_cmd(), 0, "%s", msg());
	cr_expect_str_eq(path_of(), "engine");
	agent_stop();
	cr_expect_eq(agent.conns, 1);
	cr_expect_eq(fake_engine_count(fe, "POST", CREATE_PATH), 1, "log: %s",
		     log_text());
}

/* HUTCH_FAST_PATH=0: not even looked for. */
Test(fake, channel_off_with_fast_path_0)
{
	static struct script s;

	setenv("HUTCH_FAST_PATH", "0", 1);
	agent_start(AGENT_SERVE, (long)getpid(), "chan/agent.sock");
	s.container = agent.container;
	open_session(script_handler, &s);
	cr_assert_eq(run_cmd(), 0, "%s", msg());
	cr_expect_str_eq(path_of(), "engine");
	agent_stop();
	cr_expect_eq(agent.conns, 0);
	cr_expect_eq(fake_engine_count(fe, "GET", CONTAINER_PATH), 0, "log: %s",
		     log_text());
}

/* Input goes as STDIN frames once the command started, then its end; the
 * output comes back while input is still sent (1 MiB both ways, bounded
 * buffers on both sides). */
Test(fake, channel_input_and_output_flow)
{
	static struct script s;
	static const char *const argv[] = { "cat" };
	hutch_exec_options o = HUTCH_EXEC_OPTIONS_INIT;
	size_t n = MIB, len;
	char *in = malloc(n);
	const char *out;

	cr_assert_not_null(in);
	for (size_t i = 0; i < n; i++)
		in[i] = (char)('a' + i % 26);
	agent_start(AGENT_ECHO, (long)getpid(), "chan/agent.sock");
	s.container = agent.container;
	open_session(script_handler, &s);
	o.argv = argv;
	o.argc = 1;
	o.capture = 1;
	o.max_output = 2 * MIB;
	o.timeout_ms = 20000;
	o.input = in;
	o.input_len = n;
	cr_assert_eq(hutch_exec_run(&res, session, &o, &err), 0, "%s", msg());
	cr_expect_str_eq(path_of(), "agent");
	hutch_exec_result_output(res, HUTCH_STREAM_STDOUT, &out, &len, NULL,
				 NULL);
	cr_expect_eq(len, n);
	cr_expect(len == n && memcmp(out, in, n) == 0, "output differs");
	agent_stop();
	cr_expect_eq(agent.flags, 1, "flags %u: stdin, no terminal",
		     agent.flags);
	cr_expect(agent.stdin_end, "no STDIN_END");
	cr_expect_eq(agent.echoed, (long)n);
	free(in);
}

/* The connection ends after the command started, without its exit status
 * (the agent's handler died): not taken for an exit, and with the
 * container still there, an error that says what broke. */
Test(fake, channel_end_without_exit_is_an_error)
{
	static struct script s;

	agent_start(AGENT_VANISH, (long)getpid(), "chan/agent.sock");
	s.container = agent.container;
	open_session(script_handler, &s);
	cr_expect_lt(
		run_cmd(), 0, "a result: %s",
		res ? hutch_exec_status_name(hutch_exec_result_status(res)) :
		      "-");
	cr_expect(strstr(msg(), "exit status") != NULL, "%s", msg());
	agent_stop();
	cr_expect_eq(fake_engine_count(fe, "POST", CREATE_PATH), 0, "log: %s",
		     log_text());
}

static int size_33x101(unsigned short *rows, unsigned short *cols, void *p)
{
	(void)p;
	*rows = 33;
	*cols = 101;
	return 0;
}

/* With a terminal: its size goes first, before any input; the output is
 * the terminal's raw bytes (no frame head reaches the caller); no end of
 * file is sent. */
Test(fake, channel_terminal_size_before_input)
{
	static struct script s;
	static const char *const argv[] = { "sh" };
	hutch_exec_options o = HUTCH_EXEC_OPTIONS_INIT;
	const char *out;
	size_t len;

	agent_start(AGENT_TTY, (long)getpid(), "chan/agent.sock");
	s.container = agent.container;
	open_session(script_handler, &s);
	o.argv = argv;
	o.argc = 1;
	o.capture = 1;
	o.timeout_ms = 20000;
	o.tty = 1;
	o.tty_size = size_33x101;
	o.input = "x";
	o.input_len = 1;
	cr_assert_eq(hutch_exec_run(&res, session, &o, &err), 0, "%s", msg());
	cr_expect_str_eq(path_of(), "agent");
	hutch_exec_result_output(res, HUTCH_STREAM_STDOUT, &out, &len, NULL,
				 NULL);
	cr_expect_eq(len, 2);
	cr_expect_str_eq(out, "ok");
	agent_stop();
	cr_expect_eq(agent.flags, 3, "flags %u: stdin and a terminal",
		     agent.flags);
	cr_expect_eq(agent.first, 0x23, "first frame 0x%x, not RESIZE",
		     agent.first);
	cr_expect_eq(agent.rows, 33);
	cr_expect_eq(agent.cols, 101);
	cr_expect_eq(agent.second, 0x21, "second frame 0x%x, not STDIN",
		     agent.second);
	cr_expect_str_eq(agent.input, "x");
	cr_expect(!agent.stdin_end, "STDIN_END sent to a terminal");
}

/* ---- file tools: options versions and the caller's words --------------- */

/* Every check here comes before any request: the engine is nowhere. */
static void open_nowhere(void)
{
	hutch_error *e = NULL;

	cr_assert_eq(hutch_engine_open(&engine,
				       "unix:///nonexistent/hutch-fs.sock", &e),
		     0, "open: %s", hutch_error_message(e));
	cr_assert_eq(hutch_session_open(&session, engine, "s", NULL, &e), 0);
}

static int same_texts_edit(const hutch_fs_options *o)
{
	hutch_fs_result *r = NULL;
	int rc;

	hutch_error_free(err);
	err = NULL;
	rc = hutch_fs_edit(&r, session, "f.txt", "a", 1, "a", 1, o, &err);
	cr_expect_null(r);
	return rc;
}

Test(fake, fs_options_versions_and_words)
{
	static const hutch_fs_words mcp = { .tool = "edit_file",
					    .old_text = "old_text",
					    .new_text = "new_text",
					    .to = "to" };
	hutch_fs_options o = HUTCH_FS_OPTIONS_INIT;
	hutch_fs_result *r = NULL;

	open_nowhere();
	/* The defaults are the CLI's words. */
	cr_expect_eq(same_texts_edit(NULL), HUTCH_EINVALID);
	cr_expect_str_eq(msg(), "edit: the old text and the new text are the "
				"same");
	/* The caller's words. */
	o.words = &mcp;
	cr_expect_eq(same_texts_edit(&o), HUTCH_EINVALID);
	cr_expect_str_eq(msg(),
			 "edit_file: old_text and new_text are the same");
	/* A version-1 caller's struct ends before the version-2 members:
	 * whatever lies there (here a pointer that would crash) is not read. */
	o.version = 1;
	o.words = (const hutch_fs_words *)(uintptr_t)1;
	o.line_numbers = 1;
	cr_expect_eq(same_texts_edit(&o), HUTCH_EINVALID);
	cr_expect_str_eq(msg(), "edit: the old text and the new text are the "
				"same");
	o.version = 3;
	cr_expect_eq(same_texts_edit(&o), HUTCH_EINVALID);
	cr_expect(strstr(msg(), "version 3") != NULL, "%s", msg());
	/* move names both paths in the caller's words. */
	o.version = HUTCH_FS_OPTIONS_VERSION;
	o.words = &mcp;
	hutch_error_free(err);
	err = NULL;
	cr_expect_eq(hutch_fs_move(&r, session, "a", "", &o, &err),
		     HUTCH_EINVALID);
	cr_expect_str_eq(msg(), "edit_file: to is empty");
	cr_expect_null(r);
	hutch_error_free(err);
	err = NULL;
	cr_expect_eq(hutch_fs_delete(&r, session, NULL, NULL, &err),
		     HUTCH_EINVALID);
	cr_expect_str_eq(msg(), "delete: the path is missing");
	cr_expect_null(r);
}
