/*
 * test_exec.c - `hutch exec` against a real engine
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <json-c/json.h>

#include "harness.h"

/* Run `true` once so the session's container exists and runs. */
static void warm(const char *s)
{
	it_result r = it_hutch("exec", s, "--", "true", NULL);

	IT_ASSERT_EXIT(r, 0,
		       "creating the session with `hutch exec S -- true`");
	it_result_free(&r);
}

static const char *jstr(json_object *o, const char *key)
{
	json_object *v = it_json_get(o, key);

	cr_assert(json_object_is_type(v, json_type_string),
		  "\"%s\" is not a string: %s", key,
		  json_object_to_json_string(o));
	return json_object_get_string(v);
}

static int64_t jint(json_object *o, const char *key)
{
	json_object *v = it_json_get(o, key);

	cr_assert(json_object_is_type(v, json_type_int),
		  "\"%s\" is not an integer: %s", key,
		  json_object_to_json_string(o));
	return json_object_get_int64(v);
}

static int jbool(json_object *o, const char *key)
{
	json_object *v = it_json_get(o, key);

	cr_assert(json_object_is_type(v, json_type_boolean),
		  "\"%s\" is not a boolean: %s", key,
		  json_object_to_json_string(o));
	return json_object_get_boolean(v);
}

/* 1. exit codes pass through, and --json says the same */
IT_TEST(exec, exit_codes_pass_through)
{
	static const int codes[] = { 0, 1, 7, 255 };
	const char *s = it_session();

	for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
		char cmd[32], what[64];
		it_result r;
		json_object *j, *argv;

		snprintf(cmd, sizeof(cmd), "exit %d", codes[i]);
		snprintf(what, sizeof(what), "hutch exec S -- sh -c '%s'", cmd);
		r = it_hutch("exec", s, "--", "sh", "-c", cmd, NULL);
		IT_ASSERT_EXIT(r, codes[i], what);
		cr_assert_eq(r.out_len, 0, "%s printed on stdout: %s", what,
			     r.out);
		it_result_free(&r);

		/* --json after SESSION this time: options go on either side. */
		r = it_hutch("exec", s, "--json", "--", "sh", "-c", cmd, NULL);
		IT_ASSERT_EXIT(r, codes[i],
			       "hutch exec S --json -- sh -c 'exit N'");
		j = it_json(r.out, r.out_len);
		cr_assert_eq(jint(j, "exit_code"), codes[i],
			     "JSON exit_code: %s", r.out);
		cr_assert_str_eq(jstr(j, "status"), "ok");
		cr_assert_str_eq(jstr(j, "session"), s);
		argv = it_json_get(j, "argv");
		cr_assert(json_object_is_type(argv, json_type_array) &&
				  json_object_array_length(argv) == 3,
			  "argv: %s", r.out);
		cr_assert_str_eq(json_object_get_string(
					 json_object_array_get_idx(argv, 2)),
				 cmd);
		cr_assert(!jbool(j, "retried"), "retried in a warm session: %s",
			  r.out);
		json_object_put(j);
		it_result_free(&r);
	}
}

/* 2. stdout and stderr stay apart, byte for byte */
/* The first command of a brand-new session creates its container: that is
 * the lazy creation, not a recovery, so it is not reported as a retry. */
IT_TEST(exec, first_command_of_new_session_is_not_a_retry)
{
	const char *s = it_session();
	it_result r;
	json_object *j;

	r = it_hutch("exec", s, "--json", "--", "echo", "fresh", NULL);
	IT_ASSERT_EXIT(r, 0, "first hutch exec --json in a new session");
	j = it_json(r.out, r.out_len);
	cr_assert_str_eq(jstr(j, "status"), "ok");
	cr_assert_str_eq(jstr(j, "stdout"), "fresh\n");
	cr_assert(!jbool(j, "retried"), "lazy creation reported as a retry: %s",
		  r.out);
	json_object_put(j);
	it_result_free(&r);
}

IT_TEST(exec, stdout_stderr_separate)
{
	const char *s = it_session();
	it_result r = it_hutch("exec", s, "--", "sh", "-c",
			       "echo out; echo err >&2", NULL);
	json_object *j;

	IT_ASSERT_EXIT(r, 0, "hutch exec S -- sh -c 'echo out; echo err >&2'");
	cr_assert_eq(r.out_len, 4, "stdout is %zu bytes: '%s'", r.out_len,
		     r.out);
	cr_assert_str_eq(r.out, "out\n");
	cr_assert_eq(r.err_len, 4, "stderr is %zu bytes: '%s'", r.err_len,
		     r.err);
	cr_assert_str_eq(r.err, "err\n");
	it_result_free(&r);

	r = it_hutch("exec", "--json", s, "--", "sh", "-c",
		     "echo out; echo err >&2", NULL);
	IT_ASSERT_EXIT(r, 0,
		       "hutch exec --json S -- sh -c 'echo out; echo err >&2'");
	cr_assert_eq(r.err_len, 0, "--json wrote on stderr: %s", r.err);
	j = it_json(r.out, r.out_len);
	cr_assert_str_eq(jstr(j, "stdout"), "out\n");
	cr_assert_str_eq(jstr(j, "stderr"), "err\n");
	cr_assert_eq(jint(j, "stdout_bytes"), 4);
	cr_assert_eq(jint(j, "stderr_bytes"), 4);
	json_object_put(j);
	it_result_free(&r);
}

/* What `seq 1 N` prints. */
static char *seq_output(unsigned n, size_t *len)
{
	size_t alloc = (size_t)n * 8 + 16, pos = 0;
	char *buf = malloc(alloc);

	cr_assert_not_null(buf);
	for (unsigned i = 1; i <= n; i++)
		pos += (size_t)snprintf(buf + pos, alloc - pos, "%u\n", i);
	*len = pos;
	return buf;
}

#define SEQ_N 750000 /* 5,138,895 bytes */

/* 3. a big output: complete in plain mode, head + tail under a cap */
IT_TEST(exec, large_output)
{
	const char *s = it_session();
	size_t want_len, head_len, tail_len;
	char *want = seq_output(SEQ_N, &want_len), marker[96], last[16];
	const char *text, *m;
	it_result r;
	json_object *j;
	int64_t total, omitted;

	cr_assert_gt(want_len, 5000000);
	r = it_hutch("exec", s, "--", "seq", "1", "750000", NULL);
	IT_ASSERT_EXIT(r, 0, "hutch exec S -- seq 1 750000");
	cr_assert_eq(r.out_len, want_len, "stdout is %zu bytes, want %zu",
		     r.out_len, want_len);
	cr_assert(memcmp(r.out, want, want_len) == 0,
		  "stdout differs from `seq 1 %d`", SEQ_N);
	cr_assert_eq(r.err_len, 0, "stderr: %s", r.err);
	it_result_free(&r);

	r = it_hutch("exec", "--json", "--max-output", "65536", s, "--", "seq",
		     "1", "750000", NULL);
	IT_ASSERT_EXIT(
		r, 0, "hutch exec --json --max-output 65536 S -- seq 1 750000");
	j = it_json(r.out, r.out_len);
	total = jint(j, "stdout_bytes");
	omitted = jint(j, "stdout_omitted_bytes");
	cr_assert_eq(total, (int64_t)want_len, "stdout_bytes %lld, want %zu",
		     (long long)total, want_len);
	cr_assert(jbool(j, "stdout_truncated"), "stdout_truncated is false");
	cr_assert_gt(omitted, 0);

	/* The text is HEAD, a marker naming the omitted count, TAIL. */
	text = jstr(j, "stdout");
	snprintf(marker, sizeof(marker), "\n[... %lld bytes omitted ...]\n",
		 (long long)omitted);
	m = strstr(text, marker);
	cr_assert_not_null(m, "no omission marker '%s' in the stdout text",
			   marker);
	head_len = (size_t)(m - text);
	tail_len = strlen(text) - head_len - strlen(marker);
	cr_assert_eq(
		(int64_t)(head_len + tail_len), total - omitted,
		"kept %zu+%zu bytes, but stdout_bytes - stdout_omitted_bytes = %lld",
		head_len, tail_len, (long long)(total - omitted));
	cr_assert_leq(head_len + tail_len, 65536,
		      "kept %zu bytes under a 65536 cap", head_len + tail_len);
	cr_assert_gt(head_len, 0);
	cr_assert_gt(tail_len, 0);
	cr_assert(strncmp(text, "1\n2\n3\n4\n5\n", 10) == 0,
		  "head starts with: %.20s", text);
	cr_assert(memcmp(text, want, head_len) == 0,
		  "head is not the start of the output");
	cr_assert(memcmp(m + strlen(marker), want + want_len - tail_len,
			 tail_len) == 0,
		  "tail is not the end of the output");
	snprintf(last, sizeof(last), "\n%d\n", SEQ_N);
	cr_assert(tail_len > strlen(last) &&
			  strcmp(m + strlen(marker) + tail_len - strlen(last),
				 last) == 0,
		  "tail does not end with %d", SEQ_N);
	cr_assert(!jbool(j, "stderr_truncated"));
	json_object_put(j);
	it_result_free(&r);
	free(want);
}

/* 4. every byte value passes unharmed; --json stays valid JSON */
IT_TEST(exec, binary_output)
{
	const char *s = it_session();
	char fmt[256 * 4 + 1];
	const char *text;
	it_result r;
	json_object *j, *v;
	size_t pos = 0;

	for (int i = 0; i < 256; i++)
		pos += (size_t)snprintf(fmt + pos, sizeof(fmt) - pos, "\\%03o",
					i);
	r = it_hutch("exec", s, "--", "printf", fmt, NULL);
	IT_ASSERT_EXIT(r, 0, "hutch exec S -- printf '\\000...\\377'");
	cr_assert_eq(r.out_len, 256, "stdout is %zu bytes, want 256",
		     r.out_len);
	for (int i = 0; i < 256; i++)
		cr_assert_eq((unsigned char)r.out[i], i, "byte %d is 0x%02x", i,
			     (unsigned char)r.out[i]);
	it_result_free(&r);

	r = it_hutch("exec", "--json", s, "--", "printf", fmt, NULL);
	IT_ASSERT_EXIT(r, 0, "hutch exec --json S -- printf '\\000...\\377'");
	j = it_json(r.out, r.out_len); /* strict, UTF-8 validated */
	cr_assert_eq(jint(j, "stdout_bytes"), 256);
	v = it_json_get(j, "stdout");
	text = json_object_get_string(v);
	/* ASCII, NUL included, comes through as it was; the rest is
	 * repaired to valid UTF-8. */
	cr_assert_geq(json_object_get_string_len(v), 128 + 3);
	for (int i = 0; i < 128; i++)
		cr_assert_eq((unsigned char)text[i], i,
			     "JSON stdout byte %d is 0x%02x", i,
			     (unsigned char)text[i]);
	cr_assert(memmem(text + 128,
			 (size_t)json_object_get_string_len(v) - 128,
			 "\xef\xbf\xbd", 3) != NULL,
		  "no U+FFFD where the invalid bytes were");
	json_object_put(j);
	it_result_free(&r);
}

/* 5. output streams as it comes, not at the end */
IT_TEST(exec, streams_in_order)
{
	const char *s = it_session();
	it_opts o = { .record = 1 };
	it_result r;
	double t_one = -1, t_two = -1;

	warm(s);
	r = it_hutch_o(&o, "exec", s, "--", "sh", "-c",
		       "echo one; sleep 1; echo two", NULL);
	IT_ASSERT_EXIT(r, 0,
		       "hutch exec S -- sh -c 'echo one; sleep 1; echo two'");
	cr_assert_str_eq(r.out, "one\ntwo\n");
	for (size_t i = 0; i < r.nchunks; i++) {
		if (t_one < 0 && r.chunks[i].end >= 4)
			t_one = r.chunks[i].t;
		if (t_two < 0 && r.chunks[i].end > 4)
			t_two = r.chunks[i].t;
	}
	cr_assert(t_one >= 0 && t_two >= 0);
	cr_assert_geq(
		t_two - t_one, 0.7,
		"\"one\" arrived at %.3f s, \"two\" at %.3f s: output was held back",
		t_one, t_two);
	it_result_free(&r);
}

/* 6. a timeout kills the whole tree, daemons and orphans included */
IT_TEST(exec, timeout_kills_tree)
{
	const char *s = it_session();
	it_result r;
	json_object *j;

	warm(s);
	r = it_hutch("exec", "--timeout", "1", s, "--", "sh", "-c",
		     "sleep 300 & setsid sleep 301 & (sleep 302 &); sleep 303",
		     NULL);
	IT_ASSERT_EXIT(r, 124,
		       "hutch exec --timeout 1 S -- sh -c 'sleep 300 & ...'");
	cr_assert_lt(r.wall, 30.0, "the 1 s timeout took %.1f s", r.wall);
	cr_assert_geq(r.wall, 0.9, "a 1 s timeout fired after %.3f s", r.wall);
	cr_assert_not_null(strstr(r.err, "timed out"), "stderr: %s", r.err);
	it_result_free(&r);

	r = it_hutch("exec", s, "--", "ps", NULL);
	IT_ASSERT_EXIT(r, 0, "hutch exec S -- ps");
	/* It is the container's process list... */
	cr_assert_not_null(strstr(r.out, "hutch-agent"), "ps output: %s",
			   r.out);
	/* ...and nothing the timed-out command started survived. */
	cr_assert_null(strstr(r.out, "sleep 30"),
		       "processes survived the timeout:\n%s", r.out);
	it_result_free(&r);

	r = it_hutch("exec", "--json", "--timeout", "0.5", s, "--", "sleep",
		     "304", NULL);
	IT_ASSERT_EXIT(r, 124,
		       "hutch exec --json --timeout 0.5 S -- sleep 304");
	j = it_json(r.out, r.out_len);
	cr_assert_str_eq(jstr(j, "status"), "timeout");
	cr_assert(json_object_is_type(it_json_get(j, "exit_code"),
				      json_type_null),
		  "exit_code after a timeout: %s", r.out);
	json_object_put(j);
	it_result_free(&r);

	r = it_hutch("exec", s, "--", "ps", NULL);
	IT_ASSERT_EXIT(r, 0, "hutch exec S -- ps");
	cr_assert_null(strstr(r.out, "sleep 304"), "sleep 304 survived:\n%s",
		       r.out);
	it_result_free(&r);
}

/* `hutch exec --json S -- cat /workspace/keep.txt` must work, find the file
 * and say that the container had to be brought back. */
static void expect_recovered(const char *s, const char *how)
{
	it_result r = it_hutch("exec", "--json", s, "--", "cat",
			       "/workspace/keep.txt", NULL);
	json_object *j;

	IT_ASSERT_EXIT(r, 0, how);
	j = it_json(r.out, r.out_len);
	cr_assert_str_eq(jstr(j, "status"), "ok", "%s: %s", how, r.out);
	cr_assert_eq(jint(j, "exit_code"), 0, "%s: %s", how, r.out);
	cr_assert_str_eq(jstr(j, "stdout"), "kept\n",
			 "%s: the workspace lost its file: %s", how, r.out);
	cr_assert(jbool(j, "retried"), "%s: \"retried\" is not true: %s", how,
		  r.out);
	json_object_put(j);
	it_result_free(&r);
	cr_assert_eq(it_container_running(s), 1,
		     "%s: the container does not run", how);
}

/* 7. the container killed or removed from outside between two commands */
IT_TEST(exec, container_lost_between_commands)
{
	const char *s = it_session();
	it_result r;
	char *id;

	r = it_hutch("exec", s, "--", "sh", "-c",
		     "echo kept > /workspace/keep.txt", NULL);
	IT_ASSERT_EXIT(r, 0, "writing /workspace/keep.txt");
	it_result_free(&r);

	it_container_kill(s);
	expect_recovered(s, "the first command after a kill from outside");

	/* A warm command afterwards is no retry. */
	r = it_hutch("exec", "--json", s, "--", "true", NULL);
	IT_ASSERT_EXIT(r, 0, "hutch exec --json S -- true");
	{
		json_object *j = it_json(r.out, r.out_len);

		cr_assert(!jbool(j, "retried"),
			  "a warm command was retried: %s", r.out);
		json_object_put(j);
	}
	it_result_free(&r);

	id = it_container_id(s);
	cr_assert_not_null(id);
	it_container_remove(s);
	cr_assert_eq(
		it_count_volumes(s), 2,
		"the session's volumes (workspace, system) went with the container");
	expect_recovered(
		s,
		"the first command after the container was removed from outside");
	{
		char *id2 = it_container_id(s);

		cr_assert_not_null(id2);
		cr_assert_str_neq(
			id, id2,
			"the removed container is back with the same id?");
		free(id2);
	}
	free(id);
	cr_assert_eq(it_count_containers(s), 1,
		     "not exactly one container after recreation");
}

/* 8. the container killed while a command runs */
IT_TEST(exec, container_killed_during_command)
{
	const char *s = it_session();
	const char *args[] = {
		"exec",
		"--json",
		s,
		"--",
		"sh",
		"-c",
		"echo run >> /workspace/runs.txt; echo started; sleep 30; echo never",
		NULL
	};
	double until;
	it_proc p;
	it_result r, probe;
	json_object *j;

	warm(s);
	it_spawn(&p, NULL, args);
	/* Wait until the command has visibly started, then kill. */
	until = it_now() + 30;
	for (;;) {
		probe = it_hutch("exec", s, "--", "cat", "/workspace/runs.txt",
				 NULL);
		if (probe.status == 0 && strcmp(probe.out, "run\n") == 0)
			break;
		cr_assert_lt(it_now(), until,
			     "the command never started: %d %s %s",
			     probe.status, probe.out, probe.err);
		it_result_free(&probe);
		it_sleep(0.1);
	}
	it_result_free(&probe);
	it_sleep(0.3); /* let "started" reach hutch */
	it_container_kill(s);

	r = it_wait(&p);
	IT_ASSERT_EXIT(r, 125,
		       "hutch exec --json S whose container was killed");
	cr_assert_lt(r.wall, 30.0,
		     "hutch waited for the killed command (%.1f s)", r.wall);
	j = it_json(r.out, r.out_len);
	cr_assert_str_eq(jstr(j, "status"), "sandbox_lost", "%s", r.out);
	cr_assert(json_object_is_type(it_json_get(j, "exit_code"),
				      json_type_null),
		  "exit_code of a lost command: %s", r.out);
	cr_assert_null(strstr(jstr(j, "stdout"), "never"), "%s", r.out);
	cr_assert_not_null(strstr(jstr(j, "stdout"), "started"),
			   "the output before the loss is gone: %s", r.out);
	json_object_put(j);
	it_result_free(&r);

	/* Not run again, and the next command works in the same workspace. */
	r = it_hutch("exec", s, "--", "cat", "/workspace/runs.txt", NULL);
	IT_ASSERT_EXIT(r, 0, "the next command after the sandbox was lost");
	cr_assert_str_eq(r.out, "run\n", "the lost command ran %zu times",
			 it_count_lines(r.out, r.out_len));
	it_result_free(&r);
}

/* 9. no engine there: 125 and one line naming where hutch looked */
IT_TEST(exec, unreachable_engine)
{
	static const struct {
		const char *url, *mention;
	} engines[] = {
		{ "unix:///nonexistent.sock", "/nonexistent.sock" },
		{ "tcp://127.0.0.1:1", "127.0.0.1:1" },
	};
	const char *s = it_session();
	it_opts o = { .no_engine = 1 };

	for (size_t i = 0; i < sizeof(engines) / sizeof(engines[0]); i++) {
		it_result r = it_hutch_o(&o, "--engine", engines[i].url, "exec",
					 s, "--", "true", NULL);
		json_object *j;

		IT_ASSERT_EXIT(r, 125, engines[i].url);
		cr_assert_eq(r.out_len, 0, "stdout: %s", r.out);
		cr_assert_eq(it_count_lines(r.err, r.err_len), 1,
			     "%s: stderr is not one line:\n%s", engines[i].url,
			     r.err);
		cr_assert_eq(r.err[r.err_len - 1], '\n');
		cr_assert_not_null(strstr(r.err, engines[i].mention),
				   "stderr does not mention %s: %s",
				   engines[i].mention, r.err);
		it_result_free(&r);

		/* --json: the failure is a JSON object too. */
		r = it_hutch_o(&o, "--engine", engines[i].url, "exec", "--json",
			       s, "--", "true", NULL);
		IT_ASSERT_EXIT(r, 125, engines[i].url);
		j = it_json(r.out, r.out_len);
		cr_assert_str_eq(jstr(j, "status"), "error");
		cr_assert_not_null(strstr(jstr(j, "error"), engines[i].mention),
				   "%s", r.out);
		json_object_put(j);
		it_result_free(&r);
	}
	cr_assert_eq(it_count_containers(s), 0);
}

/* 10. --workdir and --env take effect; a missing command is 127 */
IT_TEST(exec, workdir_env_missing_command)
{
	const char *s = it_session();
	it_result r;

	r = it_hutch("exec", "--workdir", "/tmp", s, "--", "pwd", NULL);
	IT_ASSERT_EXIT(r, 0, "hutch exec --workdir /tmp S -- pwd");
	cr_assert_str_eq(r.out, "/tmp\n");
	it_result_free(&r);

	r = it_hutch("exec", s, "--", "pwd", NULL);
	IT_ASSERT_EXIT(r, 0, "hutch exec S -- pwd");
	cr_assert_str_eq(r.out, "/workspace\n");
	it_result_free(&r);

	r = it_hutch("exec", s, "--", "mkdir", "-p", "/workspace/sub/dir",
		     NULL);
	IT_ASSERT_EXIT(r, 0, "mkdir");
	it_result_free(&r);
	r = it_hutch("exec", "--workdir", "sub/dir", s, "--", "pwd", NULL);
	IT_ASSERT_EXIT(r, 0, "hutch exec --workdir sub/dir S -- pwd");
	cr_assert_str_eq(r.out, "/workspace/sub/dir\n");
	it_result_free(&r);

	r = it_hutch("exec", "--env", "FOO=bar baz", "--env", "EMPTY=", s, "--",
		     "sh", "-c", "echo \"$FOO\"; echo \"[${EMPTY-unset}]\"",
		     NULL);
	IT_ASSERT_EXIT(
		r, 0,
		"hutch exec --env FOO='bar baz' --env EMPTY= S -- sh -c 'echo $FOO'");
	cr_assert_str_eq(r.out, "bar baz\n[]\n");
	it_result_free(&r);

	/* --env is for that command only. */
	r = it_hutch("sh", s, "echo \"[${FOO-unset}]\"", NULL);
	IT_ASSERT_EXIT(r, 0, "hutch sh S 'echo $FOO'");
	cr_assert_str_eq(r.out, "[unset]\n");
	it_result_free(&r);

	r = it_hutch("exec", s, "--", "no-such-command-xyz", "arg", NULL);
	IT_ASSERT_EXIT(r, 127, "hutch exec S -- no-such-command-xyz");
	cr_assert_eq(r.out_len, 0, "stdout: %s", r.out);
	cr_assert_not_null(strstr(r.err, "no-such-command-xyz"),
			   "the message does not name the command: %s", r.err);
	it_result_free(&r);
}
