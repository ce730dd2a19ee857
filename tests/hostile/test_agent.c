/*
 * test_agent.c - the agent that runs every command cannot be replaced from
 * inside (doc/threat-model.md, "the agent is hutch's")
 *
 * Every command and file tool runs through /.hutch/hutch-agent (PID 1)
 * and /.hutch/bin/hutch-agent-BUILD (every exec), which
 * applies hutch's limits before the command starts.  A command that could
 * replace that file, or the directory holding it, would run its own code
 * in place of hutch's for every later command.  As the default user and
 * as root (without capabilities), the sandbox tries to remove, overwrite,
 * rename and shadow it; a later command must still run under hutch's
 * agent, and say exactly what it was told to.
 */
#include <string.h>

#include "hostile.h"

static const char attack[] =
	"printf '#!/bin/sh\\necho REPLACED \"$@\"\\n' > /tmp/fake; chmod 755 /tmp/fake; "
	"rm -f /.hutch/hutch-agent; cp /tmp/fake /.hutch/hutch-agent; "
	"mv /.hutch/hutch-agent /.hutch/old; mv /.hutch/use /.hutch/use2; "
	"mkdir -p /.hutch/x && mv /.hutch/x /.hutch/hutch-agent; "
	"chmod 777 /.hutch; ln -sf /tmp/fake /.hutch/hutch-agent; "
	"for f in /.hutch/bin/*; do rm -f $f; cp /tmp/fake $f; "
	"ln -sf /tmp/fake $f; done; mv /.hutch/bin /.hutch/bin2; "
	"chmod 777 /.hutch/bin; "
	"ls -lnd /.hutch /.hutch/hutch-agent; true";

/* `up` with the options given (the first NULL ends them), the attack,
 * then a command and a file tool that must still be hutch's. */
static void attack_then_run(const char *opt1, const char *opt2,
			    const char *opt3)
{
	const char *s = it_session();
	it_result r;

	r = it_hutch("up", s, opt1, opt2, opt3, NULL);
	IT_ASSERT_EXIT(r, 0, "hutch up");
	it_result_free(&r);
	r = it_hutch("sh", s, attack, NULL);
	IT_ASSERT_EXIT(r, 0, "the attack (it ends with true)");
	it_result_free(&r);
	r = it_hutch("exec", s, "--", "echo", "ok", NULL);
	IT_ASSERT_EXIT(r, 0, "a command after the attack");
	cr_assert_str_eq(r.out, "ok\n",
			 "a later command ran something else: %s", r.out);
	it_result_free(&r);
	r = it_hutch("write", s, "f", "--content", "hello", NULL);
	IT_ASSERT_EXIT(r, 0, "a file tool after the attack");
	it_result_free(&r);
	r = it_hutch("read", s, "f", NULL);
	IT_ASSERT_EXIT(r, 0, "read after the attack");
	cr_assert(strstr(r.out, "hello") && !strstr(r.out, "REPLACED"), "%s",
		  r.out);
	it_result_free(&r);
}

IT_TEST(agent, the_default_user_cannot_replace_it)
{
	attack_then_run(NULL, NULL, NULL);
}

IT_TEST(agent, root_without_capabilities_cannot_replace_it)
{
	attack_then_run("--user", "root", NULL);
}

IT_TEST(agent, root_on_a_read_only_root_cannot_replace_it)
{
	attack_then_run("--user", "root", "--read-only");
}

/* ---- a command of its own user (hutch_exec_options.user) -------------- */

#include <hutch/engine.h>
#include <hutch/exec.h>
#include <hutch/session.h>

/* One command through the library as `user`; its result's status. */
static hutch_exec_status run_as(hutch_session *s, const char *user,
				const char *script, int *code)
{
	const char *argv[] = { "sh", "-c", script };
	hutch_exec_options o = HUTCH_EXEC_OPTIONS_INIT;
	hutch_exec_result *r = NULL;
	hutch_error *err = NULL;
	hutch_exec_status st;

	o.argv = argv;
	o.argc = 3;
	o.user = user;
	cr_assert_eq(hutch_exec_run(&r, s, &o, &err), 0, "as %s: %s", user,
		     hutch_error_message(err));
	st = hutch_exec_result_status(r);
	*code = hutch_exec_result_exit_code(r);
	hutch_exec_result_free(r);
	return st;
}

/*
 * A session that runs as its default user, one command run as root: root
 * without capabilities does not own the agent (HUTCH_AGENT_OWNER_UID
 * does), so it can neither replace it nor take the reserved uid by
 * editing /etc/passwd (hutch checks the number it resolves).
 */
IT_TEST(agent, a_root_command_in_a_user_session_cannot_replace_it)
{
	const char *name = it_session();
	hutch_engine *e = NULL;
	hutch_session *s = NULL;
	hutch_exec_options o = HUTCH_EXEC_OPTIONS_INIT;
	const char *argv[] = { "id", "-u" };
	hutch_exec_result *r = NULL;
	hutch_error *err = NULL;
	it_result res;
	int code;

	cr_assert_eq(hutch_engine_open(&e, it_engine(), &err), 0, "%s",
		     hutch_error_message(err));
	cr_assert_eq(hutch_session_open(&s, e, name, NULL, &err), 0, "%s",
		     hutch_error_message(err));
	cr_assert_eq(run_as(s, "root", attack, &code), HUTCH_EXEC_OK);
	cr_assert_eq(code, 0, "the attack ends with true");
	cr_assert_eq(run_as(s, "root",
			    "echo 'agent:x:65533:0::/:/bin/sh' >> /etc/passwd",
			    &code),
		     HUTCH_EXEC_OK);
	cr_assert_eq(code, 0, "root could not append to /etc/passwd");
	o.argv = argv;
	o.argc = 2;
	o.user = "agent";
	cr_assert_eq(hutch_exec_run(&r, s, &o, &err), HUTCH_EINVALID,
		     "a name pointed at the agent's owner ran");
	cr_assert_not_null(strstr(hutch_error_message(err), "reserves"), "%s",
			   hutch_error_message(err));
	hutch_error_free(err);
	hutch_session_free(s);
	hutch_engine_free(e);

	res = it_hutch("exec", name, "--", "echo", "ok", NULL);
	IT_ASSERT_EXIT(res, 0, "a command after the attack");
	cr_assert_str_eq(res.out, "ok\n",
			 "a later command ran something else: %s", res.out);
	it_result_free(&res);
}

/*
 * A session whose user is a name ("up --user sandbox", or the image's
 * "sandbox" user picked by name): the engine resolves that name through
 * the container's /etc/passwd at every exec.  A command run as root
 * (per-command --user root, no capabilities) owns /etc/passwd and points
 * the name at HUTCH_AGENT_OWNER_UID; every later default command then
 * runs as the agent's owner and can replace the agent, which sees the
 * secrets of every command after it.
 */
IT_TEST(agent, a_named_session_user_cannot_be_renamed_to_the_owner)
{
	const char *s = it_session();
	it_result r;

	r = it_hutch("up", s, "--user", "sandbox", NULL);
	IT_ASSERT_EXIT(r, 0, "hutch up --user sandbox");
	it_result_free(&r);
	r = it_hutch("exec", s, "--user", "root", "--", "sh", "-c",
		     "sed -i 's/^sandbox:x:[0-9]*:/sandbox:x:65533:/' "
		     "/etc/passwd",
		     NULL);
	IT_ASSERT_EXIT(r, 0, "root edits /etc/passwd");
	it_result_free(&r);
	r = it_hutch("exec", s, "--", "id", "-u", NULL);
	cr_assert(r.status != 0 || strcmp(r.out, "65533\n") != 0,
		  "a default command ran as the agent's owner: %s", r.out);
	/* On the engine's exec the name is looked up again, and the agent
	 * refuses to run as its owner: nothing ran.  On the agent's channel
	 * the command gets PID 1's uid, fixed when the container started:
	 * the new name means nothing (the session's own uid, 1000). */
	cr_assert(strstr(r.err, "refusing to run as uid 65533") ||
			  (r.status == 0 && strcmp(r.out, "1000\n") == 0),
		  "exit %d, stdout: %s, stderr: %s", r.status, r.out, r.err);
	it_result_free(&r);
	/* The attack is refused, or runs as 1000, which cannot replace the
	 * agent: the last command below says which agent runs. */
	r = it_hutch("sh", s, attack, NULL);
	cr_assert(strstr(r.err, "refusing to run as uid 65533") ||
			  strstr(r.out, " 65533 "),
		  "the attack: exit %d, stdout: %s, stderr: %s", r.status,
		  r.out, r.err);
	it_result_free(&r);
	/* Put the name back: the next command runs hutch's agent. */
	r = it_hutch("exec", s, "--user", "root", "--", "sh", "-c",
		     "sed -i 's/^sandbox:x:65533:/sandbox:x:1000:/' "
		     "/etc/passwd",
		     NULL);
	IT_ASSERT_EXIT(r, 0, "root puts /etc/passwd back");
	it_result_free(&r);
	r = it_hutch("exec", s, "--", "echo", "ok", NULL);
	cr_assert_str_eq(r.out, "ok\n",
			 "a later command ran something else: %s", r.out);
	it_result_free(&r);
}
