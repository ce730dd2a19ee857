/*
 * test_agent_run.c - how the agent runs a command: output relayed through
 * pipes (a background child no longer holds the exec open, and is not
 * killed by SIGPIPE when it writes afterwards), --workdir, and this
 * build's agent installed in a session that lacks it
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>

#include <criterion/criterion.h>
#include <json-c/json.h>

#include "harness.h"

/* `hutch sh S CMD`, asserting exit 0; stdout (malloc'ed). */
static char *sh_ok(const char *s, const char *cmd)
{
	it_result r = it_hutch("sh", s, cmd, NULL);
	char *out;

	IT_ASSERT_EXIT(r, 0, cmd);
	out = strdup(r.out);
	it_result_free(&r);
	return out;
}

/* Run CMD until it prints WANT (a bounded number of times: the
 * background child moves on its own schedule, this only waits for it). */
static void until_prints(const char *s, const char *cmd, const char *want)
{
	char *out = NULL;

	for (int i = 0; i < 200; i++) {
		free(out);
		out = sh_ok(s, cmd);
		if (!strcmp(out, want))
			break;
		it_sleep(0.1);
	}
	cr_assert_str_eq(out, want, "`%s` never printed %s", cmd, want);
	free(out);
}

/*
 * The exec returns while a child it started in the background still runs
 * and holds the exec's stdout and stderr.  The child only writes once the
 * test lets it (a go file), after the exec has returned: each of its
 * writes to the stdout it inherited then goes to the agent's drainer.
 * Were the pipe's reader gone the child would die of SIGPIPE at its first
 * echo and never report its progress.
 */
IT_TEST(agent_run, background_child_does_not_hold_the_exec)
{
	static const char bg[] =
		"( for i in 1 2 3; do "
		"while [ ! -e /workspace/go$i ]; do sleep 0.05; done; "
		"echo out$i; echo err$i >&2; echo $i > /workspace/progress; "
		"done; echo finished > /workspace/progress ) & "
		"echo $! > /workspace/bgpid; echo started";
	const char *s = it_session();
	it_result r;
	char *out;

	r = it_hutch("sh", s, bg, NULL);
	IT_ASSERT_EXIT(r, 0, "sh -c 'CHILD & echo started'");
	/* What the exec printed: the main child's output, all of it. */
	cr_assert_str_eq(r.out, "started\n");
	cr_assert_eq(r.err_len, 0, "stderr: %s", r.err);
	it_result_free(&r);

	/* It returned: the child is still there, and has not written. */
	out = sh_ok(s, "kill -0 $(cat /workspace/bgpid) && echo alive; "
		       "cat /workspace/progress 2>/dev/null || echo none");
	cr_assert_str_eq(out, "alive\nnone\n");
	free(out);

	/* Each step writes to stdout and stderr after the exec ended. */
	sh_ok(s, "touch /workspace/go1");
	until_prints(s, "cat /workspace/progress", "1\n");
	out = sh_ok(s, "kill -0 $(cat /workspace/bgpid) && echo alive");
	cr_assert_str_eq(out, "alive\n", "the child died after writing once");
	free(out);
	sh_ok(s, "touch /workspace/go2 /workspace/go3");
	until_prints(s, "cat /workspace/progress", "finished\n");
}

/* The same for output that is still in the pipe when the main child
 * ends: it is the exec's, not the drainer's. */
IT_TEST(agent_run, output_written_before_the_end_is_kept)
{
	const char *s = it_session();
	it_result r;

	r = it_hutch("sh", s,
		     "head -c 300000 /dev/zero | tr '\\0' x; "
		     "(sleep 30; echo late) & echo last >&2",
		     NULL);
	IT_ASSERT_EXIT(r, 0, "a lot of output, a background child");
	cr_assert_eq(r.out_len, 300000, "stdout is %zu bytes", r.out_len);
	cr_assert_str_eq(r.err, "last\n");
	it_result_free(&r);
}

IT_TEST(agent_run, missing_workdir_is_a_clean_error)
{
	const char *s = it_session();
	it_result r;
	char *out;

	r = it_hutch("exec", s, "--workdir", "/no/such/dir", "--", "sh", "-c",
		     "touch /workspace/ran", NULL);
	IT_ASSERT_EXIT(r, 125, "exec --workdir /no/such/dir");
	cr_assert(strstr(r.err, "working directory '/no/such/dir' does not "
				"exist in the session"),
		  "stderr: %s", r.err);
	/* One line: the agent's own is not shown beside hutch's. */
	cr_assert(strchr(r.err, '\n') == r.err + r.err_len - 1,
		  "stderr is more than one line: %s", r.err);
	it_result_free(&r);
	/* A command that prints the agent's words itself keeps them. */
	r = it_hutch("sh", s,
		     "echo \"hutch: cannot use working directory 'x': no\" "
		     ">&2; echo after >&2",
		     NULL);
	IT_ASSERT_EXIT(r, 0, "a command printing the agent's line");
	cr_assert_str_eq(r.err, "hutch: cannot use working directory 'x': no\n"
				"after\n");
	it_result_free(&r);
	out = sh_ok(s, "test -e /workspace/ran && echo ran || echo not-run");
	cr_assert_str_eq(out, "not-run\n");
	free(out);

	/* Relative to the workspace, and one that exists. */
	sh_ok(s, "mkdir -p /workspace/sub");
	r = it_hutch("exec", s, "--workdir", "sub", "--", "pwd", NULL);
	IT_ASSERT_EXIT(r, 0, "exec --workdir sub pwd");
	cr_assert_str_eq(r.out, "/workspace/sub\n");
	it_result_free(&r);
	r = it_hutch("exec", s, "--workdir", "nope", "--", "pwd", NULL);
	IT_ASSERT_EXIT(r, 125, "exec --workdir nope");
	cr_assert(strstr(r.err, "'/workspace/nope' does not exist"), "%s",
		  r.err);
	it_result_free(&r);
}

/* An exec straight through the engine, as uid 65533 (the agent's owner,
 * which hutch never runs a command as): what an older layout, or a hutch
 * build of another agent, leaves is a container without this build's
 * agent path. */
static void engine_exec_as_owner(const char *s, const char *cmd)
{
	char path[256], body[512], id[128], *resp = NULL;
	size_t len = 0;
	json_object *o;

	snprintf(path, sizeof(path), "/containers/hutch-%s/exec", s);
	snprintf(body, sizeof(body),
		 "{\"Cmd\":[\"sh\",\"-c\",\"%s\"],\"User\":\"65533\","
		 "\"AttachStdout\":true,\"AttachStderr\":true}",
		 cmd);
	cr_assert_eq(it_api_json("POST", path, body, &resp, &len), 201,
		     "exec create: %s", resp);
	o = it_json(resp, len);
	snprintf(id, sizeof(id), "%s",
		 json_object_get_string(it_json_get(o, "Id")));
	json_object_put(o);
	free(resp);
	snprintf(path, sizeof(path), "/exec/%s/start", id);
	/* Attached: the answer ends when the command does. */
	cr_assert_eq(it_api_json("POST", path,
				 "{\"Detach\":false,\"Tty\":false}", NULL,
				 NULL),
		     200);
}

IT_TEST(agent_run, missing_agent_is_installed_and_the_command_runs_once)
{
	const char *s = it_session();
	it_result r;
	char *out;

	free(sh_ok(s, "true"));
	engine_exec_as_owner(s, "rm -f /.hutch/bin/hutch-agent-*");
	out = sh_ok(s, "ls /.hutch/bin | wc -l");
	/* That exec itself found the agent missing and put it back. */
	cr_assert_str_eq(out, "1\n");
	free(out);

	engine_exec_as_owner(s, "rm -f /.hutch/bin/hutch-agent-*");
	r = it_hutch("sh", s, "echo ran >> /workspace/count; echo done", NULL);
	IT_ASSERT_EXIT(r, 0, "the first command after the agent went");
	/* Its own output only: the runtime's complaint was the failed
	 * try's, which is not shown. */
	cr_assert_str_eq(r.out, "done\n");
	cr_assert_eq(r.err_len, 0, "stderr: %s", r.err);
	it_result_free(&r);
	out = sh_ok(s, "cat /workspace/count");
	cr_assert_str_eq(out, "ran\n", "the command ran other than once");
	free(out);

	/* Input read from a file cannot be sent twice, and a terminal's
	 * stream has no frames to hold the runtime's refusal back by: both
	 * look for the agent first, and the command gets all of its input. */
	engine_exec_as_owner(s, "rm -f /.hutch/bin/hutch-agent-*");
	{
		char path[] = "/tmp/hutch-agent-run-input-XXXXXX";
		int fd = mkstemp(path);

		cr_assert(fd >= 0);
		cr_assert_eq(write(fd, "abc\n", 4), 4);
		close(fd);
		r = it_hutch("exec", "--input-file", path, s, "--", "cat",
			     NULL);
		unlink(path);
		IT_ASSERT_EXIT(r, 0, "exec --input-file after the agent went");
		cr_assert_str_eq(r.out, "abc\n");
		it_result_free(&r);
	}
	engine_exec_as_owner(s, "rm -f /.hutch/bin/hutch-agent-*");
	r = it_hutch("exec", "-t", s, "--", "echo", "tty-ok", NULL);
	IT_ASSERT_EXIT(r, 0, "exec -t after the agent went");
	cr_assert(strstr(r.out, "tty-ok"), "%s", r.out);
	it_result_free(&r);

	/* A file tool goes the same way. */
	engine_exec_as_owner(s, "rm -f /.hutch/bin/hutch-agent-*");
	r = it_hutch("write", s, "f.txt", "--content", "hello", NULL);
	IT_ASSERT_EXIT(r, 0, "write after the agent went");
	it_result_free(&r);
	r = it_hutch("read", s, "f.txt", NULL);
	IT_ASSERT_EXIT(r, 0, "read");
	cr_assert(strstr(r.out, "hello"), "%s", r.out);
	it_result_free(&r);
}

/* A command that prints the runtime's words and exits as it would is
 * not run twice: the agent is there (archive HEAD), so no retry. */
IT_TEST(agent_run, a_faked_missing_agent_does_not_run_twice)
{
	const char *s = it_session();
	it_result r;
	char *out, cmd[512];

	free(sh_ok(s, "true"));
	out = sh_ok(s, "ls /.hutch/bin");
	out[strcspn(out, "\n")] = '\0';
	snprintf(cmd, sizeof(cmd),
		 "echo ran >> /workspace/count; echo 'OCI runtime exec "
		 "failed: exec failed: unable to start container process: "
		 "exec: \"/.hutch/bin/%s\": stat /.hutch/bin/%s: no such file "
		 "or directory: unknown'; exit 126",
		 out, out);
	free(out);
	r = it_hutch("sh", s, cmd, NULL);
	IT_ASSERT_EXIT(r, 126, "the fake");
	it_result_free(&r);
	out = sh_ok(s, "cat /workspace/count");
	cr_assert_str_eq(out, "ran\n", "the command ran other than once");
	free(out);
}
