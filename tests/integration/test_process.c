/*
 * test_process.c - background processes (`hutch exec -d`, ps, logs, kill,
 * wait, and the library's hutch_process_*) against a real engine
 *
 * No test waits a fixed time for something to happen: a process that must
 * still run when the test looks at it waits for a file the test writes,
 * and a test that waits for a process to reach a point polls its output
 * until that point shows (bounded by the test's own timeout).
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <json-c/json.h>
#include <hutch/hutch.h>

#include "harness.h"

static void warm(const char *s)
{
	it_result r = it_hutch("exec", s, "--", "true", NULL);

	IT_ASSERT_EXIT(r, 0, "hutch exec S -- true");
	it_result_free(&r);
}

/* `hutch exec -d S -- sh -c SCRIPT`: the id it printed (static). */
static const char *start_sh(const char *s, const char *script)
{
	static char id[HUTCH_PROCESS_ID_SIZE];
	it_result r = it_hutch("exec", "-d", s, "--", "sh", "-c", script, NULL);
	size_t n;

	IT_ASSERT_EXIT(r, 0, "hutch exec -d S -- sh -c SCRIPT");
	/* "p" and 8 lowercase hex digits, one line, nothing else. */
	cr_assert_eq(r.out_len, 10, "exec -d printed '%s'", r.out);
	n = strspn(r.out + 1, "0123456789abcdef");
	cr_assert(r.out[0] == 'p' && n == 8 && r.out[9] == '\n',
		  "exec -d printed '%s'", r.out);
	memcpy(id, r.out, 9);
	id[9] = '\0';
	it_result_free(&r);
	return id;
}

/* The entry of `id` in `hutch ps S --json` (the caller puts the doc). */
static json_object *ps_entry(const char *s, const char *id, json_object **doc)
{
	it_result r = it_hutch("ps", s, "--json", NULL);
	json_object *arr;

	IT_ASSERT_EXIT(r, 0, "hutch ps S --json");
	*doc = it_json(r.out, r.out_len);
	it_result_free(&r);
	arr = it_json_get(*doc, "processes");
	cr_assert_eq(json_object_get_int64(it_json_get(*doc, "skipped")), 0);
	for (size_t i = 0; i < json_object_array_length(arr); i++) {
		json_object *e = json_object_array_get_idx(arr, i);

		if (strcmp(json_object_get_string(it_json_get(e, "id")), id) ==
		    0)
			return e;
	}
	cr_assert_fail("process %s is not in ps: %s", id,
		       json_object_to_json_string(*doc));
	return NULL;
}

static const char *ps_state(const char *s, const char *id)
{
	static char state[16];
	json_object *doc, *e = ps_entry(s, id, &doc);

	snprintf(state, sizeof(state), "%s",
		 json_object_get_string(it_json_get(e, "state")));
	json_object_put(doc);
	return state;
}

/* Poll `hutch logs S ID` until its output holds `what`. */
static void await_output(const char *s, const char *id, const char *what)
{
	for (;;) {
		it_result r = it_hutch("logs", s, id, NULL);
		int found;

		IT_ASSERT_EXIT(r, 0, "hutch logs S ID");
		found = memmem(r.out, r.out_len, what, strlen(what)) != NULL;
		it_result_free(&r);
		if (found)
			return;
		it_sleep(0.1);
	}
}

/* The processes of the session's container, one command line a line. */
static char *container_ps(const char *s)
{
	it_result r = it_hutch("exec", s, "--", "ps", "-o", "args", NULL);
	char *out;

	IT_ASSERT_EXIT(r, 0, "hutch exec S -- ps -o args");
	out = strdup(r.out);
	it_result_free(&r);
	return out;
}

/* `hutch logs S ID --json`: the stdout and stderr its pieces hold, and
 * the final record's exit code. */
static void logs_json(const char *s, const char *id, const char *out,
		      const char *err, int code)
{
	it_result r = it_hutch("logs", s, id, "--json", NULL);
	char got[2][256] = { "", "" };
	const char *line = r.out, *nl;
	json_object *last = NULL;

	IT_ASSERT_EXIT(r, 0, "hutch logs S ID --json");
	while ((nl = strchr(line, '\n'))) {
		json_object *j = it_json(line, (size_t)(nl - line)), *v;

		json_object_put(last);
		last = j;
		if (json_object_object_get_ex(j, "stream", &v)) {
			int i = strcmp(json_object_get_string(v), "stderr") ==
				0;

			strncat(got[i],
				json_object_get_string(it_json_get(j, "data")),
				sizeof(got[i]) - strlen(got[i]) - 1);
		}
		line = nl + 1;
	}
	cr_assert_str_eq(got[0], out);
	cr_assert_str_eq(got[1], err);
	cr_assert_not_null(last);
	cr_assert_eq(json_object_get_int(it_json_get(
			     it_json_get(last, "process"), "exit_code")),
		     code, "%s", r.out);
	json_object_put(last);
	it_result_free(&r);
}

/* 1. A process runs on after exec -d returned; ps shows it running, then
 * how it ended; logs --follow streams until it ends; wait exits with its
 * code. */
IT_TEST(background, start_ps_follow_wait)
{
	const char *s = it_session();
	const char *argv[] = { "logs", s, NULL, "--follow", NULL };
	char id[HUTCH_PROCESS_ID_SIZE];
	json_object *doc, *e;
	it_proc follow;
	it_result r;

	warm(s);
	snprintf(id, sizeof(id), "%s",
		 start_sh(s,
			  "echo one; echo two >&2; "
			  "while [ ! -e /workspace/go ]; do sleep 0.05; done; "
			  "echo three; exit 3"));
	/* It waits for /workspace/go, so it runs now, whatever the time. */
	e = ps_entry(s, id, &doc);
	cr_assert_str_eq(json_object_get_string(it_json_get(e, "state")),
			 "running");
	cr_assert(json_object_get_type(it_json_get(e, "exit_code")) ==
		  json_type_null);
	cr_assert_str_eq(json_object_get_string(json_object_array_get_idx(
				 it_json_get(e, "argv"), 0)),
			 "sh");
	cr_assert_gt(json_object_get_int64(it_json_get(e, "started_ms")), 0);
	json_object_put(doc);

	/* The text table has the id, the state and the command. */
	r = it_hutch("ps", s, NULL);
	IT_ASSERT_EXIT(r, 0, "hutch ps S");
	cr_assert(strstr(r.out, id) && strstr(r.out, "running") &&
			  strstr(r.out, "while [ ! -e /workspace/go ]"),
		  "hutch ps S:\n%s", r.out);
	it_result_free(&r);

	await_output(s, id, "one\n");
	argv[2] = id;
	it_spawn(&follow, NULL, argv);
	r = it_hutch("exec", s, "--", "touch", "/workspace/go", NULL);
	IT_ASSERT_EXIT(r, 0, "touch /workspace/go");
	it_result_free(&r);
	/* --follow ends by itself once the process has ended. */
	r = it_wait(&follow);
	IT_ASSERT_EXIT(r, 0, "hutch logs S ID --follow");
	cr_assert_str_eq(r.out, "one\nthree\n");
	cr_assert_str_eq(r.err, "two\n");
	it_result_free(&r);

	r = it_hutch("wait", s, id, NULL);
	IT_ASSERT_EXIT(r, 3, "hutch wait S ID");
	it_result_free(&r);
	r = it_hutch("wait", s, id, "--json", NULL);
	IT_ASSERT_EXIT(r, 3, "hutch wait S ID --json");
	doc = it_json(r.out, r.out_len);
	cr_assert_str_eq(json_object_get_string(it_json_get(doc, "state")),
			 "exited");
	cr_assert_eq(json_object_get_int(it_json_get(doc, "exit_code")), 3);
	cr_assert_eq(json_object_get_int64(it_json_get(doc, "output_bytes")),
		     14);
	cr_assert_gt(json_object_get_int64(it_json_get(doc, "ended_ms")), 0);
	json_object_put(doc);
	it_result_free(&r);

	/* --json: the pieces in order, then the record. */
	logs_json(s, id, "one\nthree\n", "two\n", 3);

	/* --tail 1: the last line only. */
	r = it_hutch("logs", s, id, "--tail", "1", NULL);
	IT_ASSERT_EXIT(r, 0, "hutch logs S ID --tail 1");
	cr_assert_str_eq(r.out, "three\n");
	it_result_free(&r);
	cr_assert_str_eq(ps_state(s, id), "exited");
}

/* 1b. --json keeps a character that two writes split whole. */
IT_TEST(background, json_keeps_split_characters)
{
	const char *s = it_session();
	char id[HUTCH_PROCESS_ID_SIZE];
	it_result r;

	warm(s);
	snprintf(id, sizeof(id), "%s",
		 start_sh(s, "printf 'caf\\303'; sleep 0.2; "
			     "printf '\\251\\n'; exit 0"));
	r = it_hutch("wait", s, id, NULL);
	IT_ASSERT_EXIT(r, 0, "hutch wait S ID");
	it_result_free(&r);
	logs_json(s, id, "caf\xc3\xa9\n", "", 0);
}

/* 2. kill ends the process and everything it started: the container's own
 * ps shows none of them; wait says SIGKILL (128+9). */
IT_TEST(background, kill_takes_the_tree)
{
	const char *s = it_session();
	char id[HUTCH_PROCESS_ID_SIZE], *before, *after;
	it_result r;

	warm(s);
	snprintf(id, sizeof(id), "%s",
		 start_sh(s, "sleep 1001 & sleep 1002 & "
			     "sh -c 'sleep 1003' & echo started; wait"));
	await_output(s, id, "started\n");
	before = container_ps(s);
	cr_assert(strstr(before, "sleep 1001") && strstr(before, "sleep 1003"),
		  "before the kill:\n%s", before);
	r = it_hutch("kill", s, id, NULL);
	IT_ASSERT_EXIT(r, 0, "hutch kill S ID");
	it_result_free(&r);
	r = it_hutch("wait", s, id, NULL);
	IT_ASSERT_EXIT(r, 128 + SIGKILL, "hutch wait S ID after the kill");
	it_result_free(&r);
	after = container_ps(s);
	cr_assert(!strstr(after, "sleep 100"), "after the kill:\n%s", after);
	free(before);
	free(after);
	cr_assert_str_eq(ps_state(s, id), "killed");
	/* Killing what has ended is not an error. */
	r = it_hutch("kill", s, id, NULL);
	IT_ASSERT_EXIT(r, 0, "hutch kill S ID a second time");
	it_result_free(&r);
}

/* A process started as another user than the session's (exec -d
 * --user) is listed, its output read, and it is killed, by hutch's
 * ordinary calls: the session's user cannot signal it itself. */
IT_TEST(background, another_users_process)
{
	const char *s = it_session();
	char id[HUTCH_PROCESS_ID_SIZE], *after;
	json_object *doc, *e;
	it_result r;

	warm(s);
	r = it_hutch("exec", "-d", "--user", "1234:1234", s, "--", "sh", "-c",
		     "id -u; exec sleep 1004", NULL);
	IT_ASSERT_EXIT(r, 0, "hutch exec -d --user 1234:1234 S");
	cr_assert_eq(r.out_len, 10, "exec -d printed '%s'", r.out);
	memcpy(id, r.out, 9);
	id[9] = '\0';
	it_result_free(&r);
	await_output(s, id, "1234\n");
	e = ps_entry(s, id, &doc);
	cr_assert_eq(json_object_get_int64(it_json_get(e, "uid")), 1234);
	cr_assert_str_eq(json_object_get_string(it_json_get(e, "state")),
			 "running");
	json_object_put(doc);
	r = it_hutch("kill", s, id, NULL);
	IT_ASSERT_EXIT(r, 0, "hutch kill S ID of another user's process");
	it_result_free(&r);
	r = it_hutch("wait", s, id, NULL);
	IT_ASSERT_EXIT(r, 128 + SIGKILL, "hutch wait S ID after the kill");
	it_result_free(&r);
	after = container_ps(s);
	cr_assert(!strstr(after, "sleep 1004"), "after the kill:\n%s", after);
	free(after);
}

/* 3. --signal TERM reaches the process, which ends its own way. */
IT_TEST(background, kill_with_a_signal)
{
	const char *s = it_session();
	char id[HUTCH_PROCESS_ID_SIZE];
	it_result r;

	warm(s);
	snprintf(id, sizeof(id), "%s",
		 start_sh(s, "trap 'echo got TERM; exit 7' TERM; echo ready; "
			     "while :; do sleep 0.05; done"));
	await_output(s, id, "ready\n");
	r = it_hutch("kill", s, id, "--signal", "TERM", NULL);
	IT_ASSERT_EXIT(r, 0, "hutch kill S ID --signal TERM");
	it_result_free(&r);
	r = it_hutch("wait", s, id, NULL);
	IT_ASSERT_EXIT(r, 7, "hutch wait S ID after TERM");
	it_result_free(&r);
	await_output(s, id, "got TERM\n");
	r = it_hutch("kill", s, id, "--signal", "NOPE", NULL);
	IT_ASSERT_EXIT(r, 125, "hutch kill S ID --signal NOPE");
	cr_assert(strstr(r.err, "invalid --signal 'NOPE'"), "%s", r.err);
	it_result_free(&r);
}

/* 4. wait --timeout gives up with 124 and leaves the process running. */
IT_TEST(background, wait_timeout)
{
	const char *s = it_session();
	char id[HUTCH_PROCESS_ID_SIZE];
	it_result r;

	warm(s);
	snprintf(id, sizeof(id), "%s", start_sh(s, "sleep 1000"));
	r = it_hutch("wait", s, id, "--timeout", "0.3", NULL);
	IT_ASSERT_EXIT(r, 124, "hutch wait S ID --timeout 0.3");
	cr_assert(strstr(r.err, "still runs"), "%s", r.err);
	it_result_free(&r);
	cr_assert_str_eq(ps_state(s, id), "running");
	r = it_hutch("kill", s, id, NULL);
	IT_ASSERT_EXIT(r, 0, "hutch kill S ID");
	it_result_free(&r);
}

/* 5. Output past the per-process cap: the oldest is dropped and counted,
 * the newest kept; logs prints exactly what is kept. */
IT_TEST(background, logs_past_the_cap)
{
	const char *s = it_session();
	char id[HUTCH_PROCESS_ID_SIZE], want[64];
	int64_t total, dropped;
	json_object *doc, *e;
	it_result r;

	warm(s);
	/* 10 MiB of lines of 65 bytes (so that the agent's 64 KiB records
	 * begin anywhere in a line, on any digit), then a last line. */
	snprintf(id, sizeof(id), "%s",
		 start_sh(s, "yes 012345678901234567890123456789012345678901234"
			     "5678901234567890123 | head -c 10485760; "
			     "echo LAST"));
	r = it_hutch("wait", s, id, NULL);
	IT_ASSERT_EXIT(r, 0, "hutch wait S ID");
	it_result_free(&r);
	e = ps_entry(s, id, &doc);
	total = json_object_get_int64(it_json_get(e, "output_bytes"));
	dropped = json_object_get_int64(it_json_get(e, "dropped_bytes"));
	json_object_put(doc);
	cr_assert_eq(total, 10485760 + 5);
	/* At most HUTCH_PROCESS_LOG_KEEP kept, at least half of it. */
	cr_assert(total - dropped <= HUTCH_PROCESS_LOG_KEEP &&
			  total - dropped >= HUTCH_PROCESS_LOG_KEEP / 2,
		  "output %" PRId64 ", dropped %" PRId64, total, dropped);
	r = it_hutch("logs", s, id, NULL);
	IT_ASSERT_EXIT(r, 0, "hutch logs S ID");
	/* All of it on stdout, where it was written. */
	cr_assert_eq((int64_t)r.out_len, total - dropped,
		     "stdout %zu bytes, stderr %zu, kept %" PRId64, r.out_len,
		     r.err_len, total - dropped);
	cr_assert_eq(r.err_len, 0, "stderr: %.200s", r.err);
	cr_assert(r.out_len > 5 &&
		  memcmp(r.out + r.out_len - 5, "LAST\n", 5) == 0);
	it_result_free(&r);
	r = it_hutch("logs", s, id, "--tail", "2", NULL);
	IT_ASSERT_EXIT(r, 0, "hutch logs S ID --tail 2");
	/* The last full line, then the cut one that ends with LAST. */
	cr_assert_eq(it_count_lines(r.out, r.out_len), 2, "%s", r.out);
	cr_assert_eq(r.out_len, 65 + 10485760 % 65 + 5, "%s", r.out);
	it_result_free(&r);
	/* The table: 10M written, and what was dropped (between 2 and 6 MiB
	 * of the 10, as "N.NM"). */
	r = it_hutch("ps", s, NULL);
	IT_ASSERT_EXIT(r, 0, "hutch ps S");
	snprintf(want, sizeof(want), " 10M %7.1fM ",
		 (double)dropped / (1024.0 * 1024.0));
	cr_assert(strstr(r.out, "DROPPED") && strstr(r.out, want),
		  "'%s' not in:\n%s", want, r.out);
	it_result_free(&r);
}

/* 6. Ctrl-C ends logs --follow cleanly (128+2, nothing said) and leaves
 * the process running. */
IT_TEST(background, follow_interrupted)
{
	const char *s = it_session();
	const char *argv[] = { "logs", s, NULL, "--follow", NULL };
	char id[HUTCH_PROCESS_ID_SIZE], buf[64];
	struct pollfd pfd;
	it_proc p;
	it_result r;
	ssize_t n;

	warm(s);
	snprintf(id, sizeof(id), "%s",
		 start_sh(s, "echo first; exec sleep 1000"));
	argv[2] = id;
	it_spawn(&p, NULL, argv);
	/* Once its first output is here, logs is reading. */
	pfd.fd = p.out_fd;
	pfd.events = POLLIN;
	cr_assert_eq(poll(&pfd, 1, 60000), 1);
	n = read(p.out_fd, buf, sizeof(buf) - 1);
	cr_assert_eq(n, 6);
	cr_assert_eq(kill(p.pid, SIGINT), 0);
	r = it_wait(&p);
	IT_ASSERT_EXIT(r, 128 + SIGINT, "hutch logs --follow, then SIGINT");
	cr_assert_eq(r.err_len, 0, "%s", r.err);
	it_result_free(&r);
	cr_assert_str_eq(ps_state(s, id), "running");
	r = it_hutch("kill", s, id, NULL);
	IT_ASSERT_EXIT(r, 0, "hutch kill S ID");
	it_result_free(&r);
}

/* 7. Unknown and malformed ids are clear errors; a command that cannot be
 * run is refused as exec refuses it; secrets are refused. */
IT_TEST(background, refusals)
{
	const char *s = it_session();
	static const char *const cmds[] = { "logs", "kill", "wait" };
	it_result r;

	warm(s);
	for (size_t i = 0; i < 3; i++) {
		r = it_hutch(cmds[i], s, "p00000000", NULL);
		IT_ASSERT_EXIT(r, 125, cmds[i]);
		cr_assert(strstr(r.err, "no background process 'p00000000'"),
			  "%s: %s", cmds[i], r.err);
		it_result_free(&r);
		r = it_hutch(cmds[i], s, "../x", NULL);
		IT_ASSERT_EXIT(r, 125, cmds[i]);
		cr_assert(strstr(r.err, "invalid process id '../x'"), "%s: %s",
			  cmds[i], r.err);
		it_result_free(&r);
	}
	r = it_hutch("exec", "-d", s, "--", "no-such-command-here", NULL);
	IT_ASSERT_EXIT(r, 127, "exec -d S -- no-such-command-here");
	cr_assert(strstr(r.err, "cannot run 'no-such-command-here'"), "%s",
		  r.err);
	it_result_free(&r);
	r = it_hutch("exec", "-d", s, "--", "/etc/passwd", NULL);
	IT_ASSERT_EXIT(r, 126, "exec -d S -- /etc/passwd");
	cr_assert(strstr(r.err, "cannot run '/etc/passwd'"), "%s", r.err);
	it_result_free(&r);
	r = it_hutch("exec", "-d", s, "--timeout", "5", "--", "true", NULL);
	IT_ASSERT_EXIT(r, 125, "exec -d --timeout");
	cr_assert(strstr(r.err, "does not apply to -d"), "%s", r.err);
	it_result_free(&r);
	setenv("HUTCH_IT_PROC_SECRET", "a-secret-value", 1);
	r = it_hutch("exec", "-d", s, "--secret", "HUTCH_IT_PROC_SECRET", "--",
		     "sleep", "100", NULL);
	unsetenv("HUTCH_IT_PROC_SECRET");
	IT_ASSERT_EXIT(r, 125, "exec -d --secret");
	cr_assert(strstr(r.err, "cannot be given secrets"), "%s", r.err);
	it_result_free(&r);
	/* Nothing was started by the refused calls. */
	r = it_hutch("ps", s, "--json", NULL);
	IT_ASSERT_EXIT(r, 0, "hutch ps S --json");
	cr_assert(strstr(r.out, "\"processes\":[]"), "%s", r.out);
	it_result_free(&r);
}

/* 8. The library: start with an environment and a working directory,
 * read by offset until the end, wait for the record. */
IT_TEST(background, library)
{
	const char *s = it_session();
	const char *argv[] = { "sh", "-c",
			       "pwd; echo \"$GREETING\"; printf 'e\\n' >&2" };
	const char *env[] = { "GREETING=hello there" };
	hutch_exec_options o = HUTCH_EXEC_OPTIONS_INIT;
	char id[HUTCH_PROCESS_ID_SIZE], out[256] = "", errs[256] = "";
	hutch_engine *engine = NULL;
	hutch_session *session = NULL;
	hutch_process *p = NULL;
	hutch_process_list *l = NULL;
	hutch_error *err = NULL;
	uint64_t off = 0;
	it_result r;
	int rc;

	r = it_hutch("exec", s, "--", "mkdir", "sub", NULL);
	IT_ASSERT_EXIT(r, 0, "hutch exec S -- mkdir sub");
	it_result_free(&r);
	cr_assert_eq(hutch_engine_open(&engine, it_engine(), &err), 0, "%s",
		     hutch_error_message(err));
	cr_assert_eq(hutch_session_open(&session, engine, s, NULL, &err), 0,
		     "%s", hutch_error_message(err));
	o.argv = argv;
	o.argc = 3;
	o.env = env;
	o.env_count = 1;
	o.workdir = "sub";
	rc = hutch_process_start(id, sizeof(id), session, &o, &err);
	cr_assert_eq(rc, 0, "%s", hutch_error_message(err));
	cr_assert(hutch_process_id_valid(id));
	rc = hutch_process_wait(&p, session, id, 0, NULL, &err);
	cr_assert_eq(rc, 0, "%s", hutch_error_message(err));
	cr_assert_eq(hutch_process_get_state(p), HUTCH_PROCESS_EXITED);
	cr_assert_eq(hutch_process_exit_code(p), 0);
	cr_assert_str_eq(hutch_process_id(p), id);
	cr_assert_eq(hutch_process_argc(p), 3);
	cr_assert_str_eq(hutch_process_arg(p, 2), argv[2]);
	hutch_process_free(p);
	/* Two bytes a read, so every offset is crossed. */
	for (;;) {
		hutch_process_output *po = NULL;
		const char *d;
		size_t n;

		rc = hutch_process_read(&po, session, id, off, 2, &err);
		cr_assert_eq(rc, 0, "%s", hutch_error_message(err));
		cr_assert_eq(hutch_process_output_from(po), off);
		hutch_process_output_text(po, HUTCH_STREAM_STDOUT, &d, &n);
		strncat(out, d, n);
		hutch_process_output_text(po, HUTCH_STREAM_STDERR, &d, &n);
		strncat(errs, d, n);
		cr_assert_leq(hutch_process_output_next(po) - off, 2);
		off = hutch_process_output_next(po);
		n = off == hutch_process_output_bytes(
				   hutch_process_output_process(po));
		hutch_process_output_free(po);
		if (n)
			break;
	}
	cr_assert_str_eq(out, "/workspace/sub\nhello there\n");
	cr_assert_str_eq(errs, "e\n");
	cr_assert_eq(hutch_process_list_get(&l, session, &err), 0);
	cr_assert_eq(hutch_process_list_count(l), 1);
	cr_assert_str_eq(hutch_process_id(hutch_process_list_at(l, 0)), id);
	hutch_process_list_free(l);
	/* Asking for a kill of what has ended is not an error. */
	cr_assert_eq(hutch_process_kill(session, id, SIGTERM, &err), 0);
	cr_assert_eq(hutch_process_kill(session, "p00000000", 0, &err),
		     HUTCH_ENOTFOUND);
	hutch_error_free(err);
	hutch_session_free(session);
	hutch_engine_free(engine);
}

/* 9. A batch line with "background": true starts the process and says so;
 * it runs on after the batch (the session existed before it). */
IT_TEST(background, batch_line)
{
	const char *s = it_session();
	char path[] = "/tmp/hutch-it-batch-XXXXXX", line[512];
	json_object *a, *b;
	const char *first;
	it_result r;
	FILE *f;
	int fd;

	warm(s);
	fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	f = fdopen(fd, "w");
	cr_assert_not_null(f);
	snprintf(line, sizeof(line),
		 "{\"session\":\"%s\",\"id\":1,\"background\":true,"
		 "\"command\":\"echo from-batch; exit 6\"}\n"
		 "{\"session\":\"%s\",\"id\":2,\"background\":true,"
		 "\"timeout\":5,\"command\":\"true\"}\n",
		 s, s);
	cr_assert_geq(fputs(line, f), 0);
	cr_assert_eq(fclose(f), 0);
	r = it_hutch("batch", path, "--parallel", "1", NULL);
	unlink(path);
	/* The second line is refused: a background job has no timeout. */
	IT_ASSERT_EXIT(r, 1, "hutch batch FILE");
	first = r.out;
	cr_assert_eq(it_count_lines(r.out, r.out_len), 2, "%s", r.out);
	a = it_json(first, (size_t)(strchr(first, '\n') - first));
	b = it_json(strchr(first, '\n') + 1,
		    r.out_len - (size_t)(strchr(first, '\n') + 1 - first));
	if (json_object_get_int(it_json_get(a, "id")) == 2) {
		json_object *t = a;

		a = b;
		b = t;
	}
	cr_assert_str_eq(json_object_get_string(it_json_get(a, "status")),
			 "started", "%s", r.out);
	cr_assert_str_eq(json_object_get_string(it_json_get(b, "status")),
			 "error", "%s", r.out);
	cr_assert(strstr(json_object_get_string(it_json_get(b, "error")),
			 "does not apply to a background job"),
		  "%s", r.out);
	snprintf(line, sizeof(line), "%s",
		 json_object_get_string(it_json_get(a, "process")));
	json_object_put(a);
	json_object_put(b);
	it_result_free(&r);
	cr_assert(hutch_process_id_valid(line), "'%s'", line);
	r = it_hutch("wait", s, line, NULL);
	IT_ASSERT_EXIT(r, 6, "hutch wait S ID of the batch's process");
	it_result_free(&r);
	r = it_hutch("logs", s, line, NULL);
	IT_ASSERT_EXIT(r, 0, "hutch logs S ID");
	cr_assert_str_eq(r.out, "from-batch\n");
	it_result_free(&r);
}
