/*
 * Background processes against an agent that lies: the sandbox can write
 * the proc directory the agent reads, and on some engines replace the
 * agent, so every answer the library reads is played here by a fake
 * engine whose exec prints what the test wants.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <hutch/hutch.h>

#include "fake_engine.h"

#define EXEC_ID "abc123"
#define CREATE_PATH "/v1.41/containers/hutch-s/exec"
#define START_PATH "/v1.41/exec/" EXEC_ID "/start"
#define INSPECT_PATH "/v1.41/exec/" EXEC_ID "/json"

static struct fake_engine *fe;
static hutch_engine *engine;
static hutch_session *session;
static hutch_error *err;
/* What the agent prints on stdout, and its exit code. */
static const char *answer;
static int answer_code;

static void teardown(void)
{
	hutch_error_free(err);
	hutch_session_free(session);
	hutch_engine_free(engine);
	fake_engine_stop(fe);
	err = NULL;
	session = NULL;
	engine = NULL;
	fe = NULL;
}

TestSuite(fakeproc, .fini = teardown, .timeout = 60);

static int is(const struct fake_request *r, const char *method,
	      const char *path)
{
	return strcmp(r->method, method) == 0 && strcmp(r->path, path) == 0;
}

static fake_action handler(struct fake_conn *c, const struct fake_request *r,
			   void *p)
{
	char body[128];

	(void)p;
	if (is(r, "POST", CREATE_PATH)) {
		fake_send_json(c, 201, "{\"Id\":\"" EXEC_ID "\"}");
		return FAKE_KEEP;
	}
	if (is(r, "POST", START_PATH)) {
		fake_sendf(c, "HTTP/1.1 200 OK\r\nContent-Type: "
			      "application/vnd.docker.raw-stream\r\n\r\n");
		if (answer && *answer)
			fake_send_frame(c, 1, answer, strlen(answer));
		return FAKE_CLOSE;
	}
	if (is(r, "GET", INSPECT_PATH)) {
		snprintf(body, sizeof(body),
			 "{\"ID\":\"" EXEC_ID
			 "\",\"Running\":false,\"ExitCode\":%d,\"Pid\":42}",
			 answer_code);
		fake_send_json(c, 200, body);
		return FAKE_KEEP;
	}
	fake_send_json(c, 404, "{\"message\":\"page not found\"}");
	return FAKE_KEEP;
}

static void open_session(void)
{
	cr_assert_eq(fake_engine_start(&fe, handler, NULL), 0,
		     "fake engine: %m");
	cr_assert_eq(hutch_engine_open(&engine, fake_engine_url(fe), &err), 0);
	cr_assert_eq(hutch_session_open(&session, engine, "s", NULL, &err), 0);
}

#define GOOD                                                               \
	"{\"id\":\"p0a1b2c3d\",\"argv\":[\"sleep\",\"9\"],\"uid\":1000,"   \
	"\"state\":\"running\",\"exit_code\":null,\"signal\":null,"        \
	"\"started_ms\":1795761494540,\"ended_ms\":null,\"output_bytes\":" \
	"10,\"dropped_bytes\":0}"

/* Records that cannot be true are left out and counted; the good one
 * stays, its argv repaired to valid UTF-8. */
Test(fakeproc, bad_records_are_skipped)
{
	hutch_process_list *l = NULL;
	const hutch_process *p;
	char *json = NULL;

	answer = "{\"processes\":[" GOOD ","
		 /* an id that is a path */
		 "{\"id\":\"../x\",\"argv\":[],\"uid\":0,\"state\":\"running\","
		 "\"started_ms\":1,\"output_bytes\":0,\"dropped_bytes\":0},"
		 /* exited with a code no process has */
		 "{\"id\":\"p2\",\"argv\":[],\"uid\":0,\"state\":\"exited\","
		 "\"exit_code\":999,\"started_ms\":1,\"output_bytes\":0,"
		 "\"dropped_bytes\":0},"
		 /* more dropped than written */
		 "{\"id\":\"p3\",\"argv\":[],\"uid\":0,\"state\":\"running\","
		 "\"started_ms\":1,\"output_bytes\":5,\"dropped_bytes\":6},"
		 /* an argument that is not a string */
		 "{\"id\":\"p4\",\"argv\":[1],\"uid\":0,\"state\":\"running\","
		 "\"started_ms\":1,\"output_bytes\":0,\"dropped_bytes\":0},"
		 /* a state hutch does not know */
		 "{\"id\":\"p5\",\"argv\":[],\"uid\":0,\"state\":\"zombie\","
		 "\"started_ms\":1,\"output_bytes\":0,\"dropped_bytes\":0},"
		 /* killed, with no signal */
		 "{\"id\":\"p6\",\"argv\":[],\"uid\":0,\"state\":\"killed\","
		 "\"started_ms\":1,\"output_bytes\":0,\"dropped_bytes\":0},"
		 /* a negative size */
		 "{\"id\":\"p7\",\"argv\":[],\"uid\":0,\"state\":\"running\","
		 "\"started_ms\":1,\"output_bytes\":-1,\"dropped_bytes\":0},"
		 /* not an object */
		 "\"p8\","
		 /* invalid UTF-8 in an argument: kept, repaired */
		 "{\"id\":\"p9\",\"argv\":[\"a\xff"
		 "b\"],\"uid\":0,"
		 "\"state\":\"exited\",\"exit_code\":0,\"started_ms\":1,"
		 "\"output_bytes\":0,\"dropped_bytes\":0}"
		 "]}\n";
	answer_code = 0;
	open_session();
	cr_assert_eq(hutch_process_list_get(&l, session, &err), 0, "%s",
		     err ? hutch_error_message(err) : "");
	cr_assert_eq(hutch_process_list_count(l), 2);
	cr_assert_eq(hutch_process_list_skipped(l), 8);
	p = hutch_process_list_at(l, 0);
	cr_assert_str_eq(hutch_process_id(p), "p0a1b2c3d");
	cr_assert_eq(hutch_process_get_state(p), HUTCH_PROCESS_RUNNING);
	cr_assert_eq(hutch_process_exit_code(p), -1);
	cr_assert_str_eq(hutch_process_arg(p, 1), "9");
	p = hutch_process_list_at(l, 1);
	cr_assert_str_eq(hutch_process_arg(p, 0), "a\xef\xbf\xbd"
						  "b");
	cr_assert_null(hutch_process_list_at(l, 2));
	cr_assert_eq(hutch_process_list_to_json(&json, l, &err), 0);
	cr_assert(strstr(json, "\"skipped\":8"), "%s", json);
	free(json);
	hutch_process_list_free(l);
}

/* An answer that is not the protocol's is an error, never a result. */
Test(fakeproc, answers_that_are_not_json)
{
	static const char *const bad[] = {
		"",
		"not json",
		"{\"processes\":{}}",
		"[]",
		"{\"processes\":[]} trailing",
		/* deeper than any answer nests */
		"{\"processes\":[{\"argv\":[[[[[[[[[[\"x\"]]]]]]]]]]}]}",
	};
	hutch_process_list *l = NULL;

	open_session();
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		answer = bad[i];
		answer_code = 0;
		cr_assert_eq(hutch_process_list_get(&l, session, &err),
			     HUTCH_EPROTO, "'%s' was taken", bad[i]);
		cr_assert_null(l);
		hutch_error_free(err);
		err = NULL;
	}
}

/* spawn must answer with the id hutch made; anything else is not its
 * process. */
Test(fakeproc, start_needs_its_own_id)
{
	static const char *const argv[] = { "sleep", "9" };
	hutch_exec_options o = HUTCH_EXEC_OPTIONS_INIT;
	char id[HUTCH_PROCESS_ID_SIZE] = "";

	open_session();
	o.argv = argv;
	o.argc = 2;
	answer = "{\"id\":\"p00000000\",\"pid\":7}\n";
	answer_code = 0;
	cr_assert_eq(hutch_process_start(id, sizeof(id), session, &o, &err),
		     HUTCH_EPROTO);
	cr_assert_str_eq(id, "");
	hutch_error_free(err);
	err = NULL;
	/* The agent's "cannot run" line, escaped, is the message. */
	answer = "";
	answer_code = 127;
	cr_assert_eq(hutch_process_start(id, sizeof(id), session, &o, &err),
		     HUTCH_ENOTFOUND);
}

/* The members of p1's record, as the agent puts them beside the piece. */
#define P1                                                                   \
	"\"argv\":[\"x\"],\"uid\":0,\"state\":\"running\",\"started_ms\":1," \
	"\"output_bytes\":20,\"dropped_bytes\":4"

/* A piece read by offset must start where it was asked (or later, past
 * dropped bytes) and be no longer than asked for. */
Test(fakeproc, read_offsets_are_checked)
{
	static const struct {
		const char *answer;
		int rc;
	} cases[] = {
		{ "{\"id\":\"p1\",\"from\":10,\"next\":12,\"dropped\":0,"
		  "\"stdout\":\"ab\",\"stderr\":\"\",\"process\":" GOOD "}",
		  HUTCH_EPROTO }, /* the record of another process */
		{ "{\"id\":\"p1\",\"from\":9,\"next\":12,\"dropped\":0,"
		  "\"stdout\":\"abc\",\"stderr\":\"\"," P1 "}",
		  HUTCH_EPROTO }, /* before the offset asked */
		{ "{\"id\":\"p1\",\"from\":10,\"next\":30,\"dropped\":0,"
		  "\"stdout\":\"abc\",\"stderr\":\"\"," P1 "}",
		  HUTCH_EPROTO }, /* more than asked */
		{ "{\"id\":\"p2\",\"from\":10,\"next\":12,\"dropped\":0,"
		  "\"stdout\":\"ab\",\"stderr\":\"\"," P1 "}",
		  HUTCH_EPROTO }, /* another process */
		{ "{\"id\":\"p1\",\"from\":14,\"next\":16,\"dropped\":4,"
		  "\"stdout\":\"ab\",\"stderr\":\"\"," P1 "}",
		  0 },
	};
	hutch_process_output *o = NULL;

	open_session();
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		answer = cases[i].answer;
		answer_code = 0;
		cr_assert_eq(hutch_process_read(&o, session, "p1", 10, 10,
						&err),
			     cases[i].rc, "case %zu: %s", i,
			     err ? hutch_error_message(err) : "");
		hutch_error_free(err);
		err = NULL;
		if (cases[i].rc == 0) {
			cr_assert_eq(hutch_process_output_dropped(o), 4);
			cr_assert_eq(hutch_process_output_next(o), 16);
		}
		hutch_process_output_free(o);
		o = NULL;
	}
}

/* wait answers once the process has ended: "running" is a lie. */
Test(fakeproc, wait_needs_an_ending)
{
	hutch_process *p = NULL;

	open_session();
	answer = GOOD "\n";
	answer_code = 0;
	cr_assert_eq(hutch_process_wait(&p, session, "p0a1b2c3d", 0, NULL,
					&err),
		     HUTCH_EPROTO);
	cr_assert_null(p);
}

/* An id that could be an option or a path never reaches the engine. */
Test(fakeproc, ids_are_checked_before_any_request)
{
	static const char *const bad[] = { "--help", "../x", "",
					   "a b",    "p\n1", "x\xc3\xa9" };
	hutch_process_output *o = NULL;

	open_session();
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_eq(hutch_process_kill(session, bad[i], 0, &err),
			     HUTCH_EINVALID);
		hutch_error_free(err);
		err = NULL;
		cr_assert_eq(hutch_process_read(&o, session, bad[i], 0, 0,
						&err),
			     HUTCH_EINVALID);
		hutch_error_free(err);
		err = NULL;
	}
	cr_assert_eq(fake_engine_request_count(fe), 0);
}
