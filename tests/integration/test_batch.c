/*
 * test_batch.c - hutch batch against a real engine: results in completion
 * order, failures that stop nothing, cleanup, --keep, Ctrl-C, and 64
 * sessions at once without failures or leftovers.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <json-c/json.h>

#include "harness.h"

/* A batch file in a fresh directory; the path is static storage. */
static const char *batch_file(const char *text)
{
	static char path[PATH_MAX];
	char dir[] = "/tmp/hutch-it-batch-XXXXXX";
	FILE *f;

	cr_assert_not_null(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
	snprintf(path, sizeof(path), "%s/jobs.jsonl", dir);
	f = fopen(path, "w");
	cr_assert_not_null(f);
	cr_assert(fputs(text, f) >= 0 && fclose(f) == 0);
	return path;
}

static void batch_file_remove(const char *path)
{
	char dir[PATH_MAX];

	unlink(path);
	snprintf(dir, sizeof(dir), "%s", path);
	*strrchr(dir, '/') = '\0';
	rmdir(dir);
}

/* Every stdout line as a JSON object, in order.  Caller puts. */
static json_object *result_lines(const it_result *r)
{
	json_object *arr = json_object_new_array();
	const char *p = r->out, *nl;

	while (p < r->out + r->out_len) {
		nl = memchr(p, '\n', (size_t)(r->out + r->out_len - p));
		cr_assert_not_null(
			nl, "the last result line has no newline: %s", p);
		json_object_array_add(arr, it_json(p, (size_t)(nl - p)));
		p = nl + 1;
	}
	return arr;
}

static const char *str(json_object *o, const char *key)
{
	json_object *v = it_json_get(o, key);

	return v ? json_object_get_string(v) : "(null)";
}

/* The result whose "line" is `line`, and its position in the output. */
static json_object *by_line(json_object *arr, int line, size_t *pos)
{
	for (size_t i = 0; i < json_object_array_length(arr); i++) {
		json_object *o = json_object_array_get_idx(arr, i);

		if (json_object_get_int(it_json_get(o, "line")) == line) {
			if (pos)
				*pos = i;
			return o;
		}
	}
	cr_assert_fail("no result for line %d in %s", line,
		       json_object_to_json_string_ext(arr,
						      JSON_C_TO_STRING_PLAIN));
	return NULL;
}

static int exists(const char *session)
{
	return it_count_containers(session) + it_count_volumes(session);
}

/* No exec of the container still runs. */
static void expect_no_running_exec(const char *session)
{
	char path[256], *body = NULL;
	json_object *c, *ids;
	size_t len;

	snprintf(path, sizeof(path), "/containers/hutch-%s/json", session);
	cr_assert_eq(it_api("GET", path, &body, &len), 200, "%s: %s", path,
		     body);
	c = it_json(body, len);
	free(body);
	if (json_object_object_get_ex(c, "ExecIDs", &ids) &&
	    json_object_is_type(ids, json_type_array)) {
		for (size_t i = 0; i < json_object_array_length(ids); i++) {
			json_object *e, *running;

			snprintf(path, sizeof(path), "/exec/%s/json",
				 json_object_get_string(
					 json_object_array_get_idx(ids, i)));
			if (it_api("GET", path, &body, &len) != 200) {
				free(body);
				continue; /* already gone: not running */
			}
			e = it_json(body, len);
			free(body);
			cr_expect(
				json_object_object_get_ex(e, "Running",
							  &running) &&
					!json_object_get_boolean(running),
				"session %s: exec %s still runs after the batch",
				session, path);
			json_object_put(e);
		}
	}
	json_object_put(c);
}

IT_TEST(batch, mixed_jobs_in_completion_order)
{
	const char *fast = it_session(), *slow = it_session(),
		   *fail = it_session();
	char text[4096];
	const char *file;
	json_object *arr, *o;
	size_t pos_slow, pos_fast, pos_fail;
	it_result r;
	it_opts opts = { .limit = 120 };

	snprintf(
		text, sizeof(text),
		"{\"session\":\"%s\",\"command\":\"sleep 4; echo slow\",\"id\":\"s\"}\n"
		"{\"session\":\"%s\",\"command\":[\"echo\",\"fast\"],\"id\":1}\n"
		"\n"
		"{\"session\":\"%s\",\"command\":\"echo oops >&2; exit 3\",\"id\":[3]}\n"
		"{\"session\":\"%s\",\"command\":[\"sleep\",\"60\"],\"timeout\":1}\n"
		"this is not json\n"
		"{\"session\":\"%s\",\"command\":[\"true\"],\"tiemout\":5}\n"
		"{\"session\":\"-bad\",\"command\":[\"true\"]}\n"
		"{\"session\":\"%s\",\"command\":[]}\n",
		slow, fast, fail, fast, fast, fast);
	file = batch_file(text);
	r = it_hutch_o(&opts, "batch", file, "--parallel", "3", NULL);
	batch_file_remove(file);
	/* Some jobs failed: 1, not 125. */
	IT_ASSERT_EXIT(r, 1, "hutch batch with failing jobs");
	arr = result_lines(&r);
	cr_assert_eq(json_object_array_length(arr), 8,
		     "one result per job line: %s", r.out);

	o = by_line(arr, 2, &pos_fast);
	cr_expect_str_eq(str(o, "status"), "ok");
	cr_expect_eq(json_object_get_int(it_json_get(o, "exit_code")), 0);
	cr_expect_str_eq(str(o, "stdout"), "fast\n");
	cr_expect_eq(json_object_get_int(it_json_get(o, "id")), 1);
	cr_expect_str_eq(str(o, "session"), fast);

	o = by_line(arr, 1, &pos_slow);
	cr_expect_str_eq(str(o, "stdout"), "slow\n");
	cr_expect_str_eq(str(o, "id"), "s");
	/* Completion order, not file order. */
	cr_expect_gt(pos_slow, pos_fast,
		     "the 4 s job was printed before the quick one:\n%s",
		     r.out);

	o = by_line(arr, 4, &pos_fail);
	cr_expect_str_eq(str(o, "status"), "ok");
	cr_expect_eq(json_object_get_int(it_json_get(o, "exit_code")), 3);
	cr_expect_str_eq(str(o, "stderr"), "oops\n");
	cr_expect_str_eq(json_object_to_json_string_ext(it_json_get(o, "id"),
							JSON_C_TO_STRING_PLAIN),
			 "[3]");

	o = by_line(arr, 5, NULL);
	cr_expect_str_eq(str(o, "status"), "timeout");
	cr_expect(json_object_is_type(it_json_get(o, "exit_code"),
				      json_type_null));
	cr_expect_lt(json_object_get_int(it_json_get(o, "duration_ms")), 30000);

	o = by_line(arr, 6, NULL);
	cr_expect_str_eq(str(o, "status"), "error");
	cr_expect(strstr(str(o, "error"), "not a JSON object"), "%s",
		  str(o, "error"));
	o = by_line(arr, 7, NULL);
	cr_expect_str_eq(str(o, "status"), "error");
	cr_expect(strstr(str(o, "error"), "unknown key \"tiemout\""), "%s",
		  str(o, "error"));
	o = by_line(arr, 8, NULL);
	cr_expect(strstr(str(o, "error"), "invalid session name '-bad'"), "%s",
		  str(o, "error"));
	o = by_line(arr, 9, NULL);
	cr_expect(strstr(str(o, "error"), "\"command\" is empty"), "%s",
		  str(o, "error"));

	cr_expect(strstr(r.err, "8 jobs") &&
			  strstr(r.err, "3 sessions created, 3 removed"),
		  "summary: %s", r.err);
	/* Without --keep, what the batch created is gone. */
	cr_expect_eq(exists(fast) + exists(slow) + exists(fail), 0,
		     "containers or volumes left after the batch");
	json_object_put(arr);
	it_result_free(&r);
}

IT_TEST(batch, keep_and_sessions_from_before)
{
	const char *before = it_session(), *made = it_session(),
		   *kept = it_session();
	char text[2048];
	const char *file;
	it_result r;

	r = it_hutch("up", before, NULL);
	IT_ASSERT_EXIT(r, 0, "hutch up");
	it_result_free(&r);

	/* Without --keep: the new session goes, the old one stays. */
	snprintf(
		text, sizeof(text),
		"{\"session\":\"%s\",\"command\":\"echo x > /workspace/mark\"}\n"
		"{\"session\":\"%s\",\"command\":[\"true\"]}\n",
		before, made);
	file = batch_file(text);
	r = it_hutch("batch", file, NULL);
	batch_file_remove(file);
	IT_ASSERT_EXIT(r, 0, "hutch batch");
	cr_expect(strstr(r.err, "1 session created, 1 removed"), "summary: %s",
		  r.err);
	it_result_free(&r);
	cr_expect_eq(it_container_running(before), 1,
		     "a session from before the batch was touched");
	cr_expect_eq(exists(made), 0, "the session the batch made is left");
	r = it_hutch("exec", before, "--", "cat", "/workspace/mark", NULL);
	IT_ASSERT_EXIT(r, 0, "the earlier session kept its workspace");
	cr_expect_str_eq(r.out, "x\n");
	it_result_free(&r);

	/* --keep: the new session stays, running, with no exec left over. */
	snprintf(
		text, sizeof(text),
		"{\"session\":\"%s\",\"command\":[\"true\"]}\n"
		"{\"session\":\"%s\",\"command\":\"sleep 30 & sleep 30\",\"timeout\":1}\n"
		"{\"session\":\"%s\",\"command\":[\"echo\",\"kept\"]}\n",
		kept, kept, kept);
	file = batch_file(text);
	r = it_hutch("batch", file, "--keep", "--parallel", "3", NULL);
	batch_file_remove(file);
	IT_ASSERT_EXIT(r, 1, "hutch batch --keep with a timeout");
	cr_expect(strstr(r.err, "1 session created, 0 removed (--keep)"),
		  "summary: %s", r.err);
	it_result_free(&r);
	cr_expect_eq(it_container_running(kept), 1,
		     "--keep did not keep the session");
	expect_no_running_exec(kept);
	r = it_hutch("exec", kept, "--", "sh", "-c",
		     "ps -o comm= | grep -c sleep", NULL);
	cr_expect_str_eq(r.out, "0\n",
			 "the timed-out command's processes survived it: %s",
			 r.out);
	it_result_free(&r);
}

IT_TEST(batch, seed_fills_a_new_session)
{
	const char *s = it_session(), *other = it_session();
	char dir[] = "/tmp/hutch-it-batch-seed-XXXXXX", path[PATH_MAX],
	     text[2048];
	const char *file;
	json_object *arr, *o;
	FILE *f;
	it_result r;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/hello.txt", dir);
	f = fopen(path, "w");
	cr_assert(f && fputs("seeded\n", f) >= 0 && fclose(f) == 0);
	r = it_hutch("up", other, NULL);
	IT_ASSERT_EXIT(r, 0, "hutch up");
	it_result_free(&r);

	snprintf(
		text, sizeof(text),
		"{\"session\":\"%s\",\"command\":[\"cat\",\"hello.txt\"],\"seed\":\"%s\"}\n"
		"{\"session\":\"%s\",\"command\":[\"cat\",\"/workspace/hello.txt\"],\"seed\":\"%s\"}\n"
		"{\"session\":\"%s\",\"command\":[\"true\"],\"seed\":\"%s\"}\n",
		s, dir, s, dir, other, dir);
	file = batch_file(text);
	r = it_hutch("batch", file, "--parallel", "2", NULL);
	batch_file_remove(file);
	unlink(path);
	rmdir(dir);
	IT_ASSERT_EXIT(r, 1, "hutch batch with seeds");
	arr = result_lines(&r);
	cr_assert_eq(json_object_array_length(arr), 3, "%s", r.out);
	for (int line = 1; line <= 2; line++) {
		o = by_line(arr, line, NULL);
		cr_expect_str_eq(str(o, "stdout"), "seeded\n", "line %d: %s",
				 line, json_object_to_json_string(o));
	}
	/* A seed never merges into a session that existed before. */
	o = by_line(arr, 3, NULL);
	cr_expect_str_eq(str(o, "status"), "error");
	cr_expect(strstr(str(o, "error"), "existed before"), "%s",
		  str(o, "error"));
	json_object_put(arr);
	it_result_free(&r);
	cr_expect_eq(it_container_running(other), 1);
}

IT_TEST(batch, interrupt_kills_and_removes)
{
	const char *a = it_session(), *b = it_session();
	char text[2048];
	const char *file;
	json_object *arr;
	it_proc p;
	it_result r;
	it_opts opts = { 0 };
	const char *args[] = { "batch", NULL, "--parallel", "4", NULL };
	double t0;

	snprintf(text, sizeof(text),
		 "{\"session\":\"%s\",\"command\":[\"sleep\",\"60\"]}\n"
		 "{\"session\":\"%s\",\"command\":[\"sleep\",\"60\"]}\n"
		 "{\"session\":\"%s\",\"command\":[\"sleep\",\"60\"]}\n",
		 a, b, a);
	file = batch_file(text);
	args[1] = file;
	it_spawn(&p, &opts, args);
	/* Wait until the commands run: both containers up, then a moment. */
	t0 = it_now();
	while ((it_container_running(a) != 1 || it_container_running(b) != 1) &&
	       it_now() - t0 < 60)
		it_sleep(0.2);
	it_sleep(1.5);
	kill(p.pid, SIGINT);
	r = it_wait(&p);
	batch_file_remove(file);
	/* Killed, not waited for: the sleeps would end "ok" after 60 s. */
	IT_ASSERT_EXIT(r, 128 + SIGINT, "hutch batch after SIGINT");
	arr = result_lines(&r);
	cr_expect_eq(json_object_array_length(arr), 3, "%s", r.out);
	for (size_t i = 0; i < json_object_array_length(arr); i++)
		cr_expect_str_eq(str(json_object_array_get_idx(arr, i),
				     "status"),
				 "cancelled");
	json_object_put(arr);
	cr_expect(strstr(r.err, "interrupted"), "%s", r.err);
	cr_expect_eq(exists(a) + exists(b), 0,
		     "an interrupted batch left its sessions");
	it_result_free(&r);
}

/* 64 sessions created and running a command at the same time on one
 * engine: every job succeeds, and nothing is left afterwards.
 *
 * 64 container creations keep a 2-core machine's engine busy for a minute
 * or more (Podman: minutes), which would starve tests running beside it
 * into their time limits.  So this test is in a suite named to start last
 * (Criterion runs suites in name order; only zzz_last comes after it),
 * waits for the other tests to end, and has a longer bound of its own. */
#define WIDE 64

static void sixty_four(void);

Test(zz_scale, sixty_four_sessions_at_once, .fini = it_fini, .timeout = 500.0)
{
	it_begin();
	/* Alone if we can; after 300 s go on anyway. */
	do {
		if (it_wait_other_tests(300) != 0)
			break;
		it_sleep(1.0);
	} while (it_wait_other_tests(0) != 0);
	sixty_four();
	it_finish();
}

static void sixty_four(void)
{
	char names[WIDE][64], *text, tag[48];
	const char *file;
	json_object *arr, *all;
	size_t len = 0, left = 0;
	it_result r;
	it_opts opts = { .limit = 420 };
	int seen[WIDE] = { 0 };

	text = malloc(WIDE * 256);
	cr_assert_not_null(text);
	snprintf(tag, sizeof(tag), "%.30sw%ld-", it_run_prefix(),
		 (long)getpid() % 100000);
	for (int i = 0; i < WIDE; i++) {
		snprintf(names[i], sizeof(names[i]), "%s%d", tag, i);
		/* Each command outlives the creation of the others, so they
		 * overlap; the output proves which job ran where. */
		len += (size_t)snprintf(
			text + len, WIDE * 256 - len,
			"{\"session\":\"%s\",\"command\":\"sleep 2; echo %d $HOSTNAME\",\"id\":%d}\n",
			names[i], i, i);
	}
	file = batch_file(text);
	free(text);
	r = it_hutch_o(&opts, "batch", file, "--parallel", "64", NULL);
	batch_file_remove(file);
	cr_expect_eq(r.status, 0, "exit %d; stderr: %s", r.status, r.err);
	arr = result_lines(&r);
	cr_expect_eq(json_object_array_length(arr), WIDE, "%zu results",
		     json_object_array_length(arr));
	for (size_t i = 0; i < json_object_array_length(arr); i++) {
		json_object *o = json_object_array_get_idx(arr, i);
		int id = json_object_get_int(it_json_get(o, "id"));
		char want[32];

		cr_expect_str_eq(str(o, "status"), "ok", "%s",
				 json_object_to_json_string(o));
		cr_expect_eq(json_object_get_int(it_json_get(o, "exit_code")),
			     0);
		snprintf(want, sizeof(want), "%d ", id);
		if (id >= 0 && id < WIDE &&
		    strncmp(str(o, "stdout"), want, strlen(want)) == 0)
			seen[id]++;
	}
	for (int i = 0; i < WIDE; i++)
		cr_expect_eq(seen[i], 1, "job %d: %d good results", i, seen[i]);
	cr_expect(strstr(r.err, "64 jobs") && strstr(r.err, "64 ok") &&
			  strstr(r.err, "64 sessions created, 64 removed"),
		  "summary: %s", r.err);
	json_object_put(arr);
	it_result_free(&r);

	/* Nothing of them is left: no container (so no exec either) and no
	 * volume.  Best-effort removal of leftovers, then the verdict. */
	all = it_all_names();
	for (size_t i = 0; i < json_object_array_length(all); i++)
		if (strstr(json_object_get_string(
				   json_object_array_get_idx(all, i)),
			   tag))
			left++;
	json_object_put(all);
	if (left)
		for (int i = 0; i < WIDE; i++)
			it_force_remove(names[i]);
	cr_assert_eq(
		left, 0,
		"%zu containers, volumes or labels of the batch's sessions left",
		left);
}
