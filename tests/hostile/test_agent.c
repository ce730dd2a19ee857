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
