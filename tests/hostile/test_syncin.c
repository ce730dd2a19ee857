/*
 * test_syncin.c - sync-in into a workspace the sandbox changes while it
 * is written (doc/threat-model.md, "sync-in writes only what the session
 * could write itself")
 *
 * A static racer in the session swaps /workspace/d, where sync-in writes
 * hundreds of files, with /workspace/s, a symlink to /.hutch (hutch's own
 * directory, which the session's user cannot write), as fast as it can,
 * while sync-in runs again and again.  An unpacking done as root through
 * the engine's archive API follows the swap: files land in /.hutch, owned
 * by root, and the directory entry's mode is applied to /.hutch itself
 * (measured on both engines).  hutch's agent unpacks as the session's
 * user and never follows a symlink: /.hutch must end exactly as it was,
 * and every file sync-in made must be the session user's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hostile.h"

#define FILES 300
#define ROUNDS 12

/* What the session's commands print for `cmd`, whole (static). */
static const char *session_says(const char *s, const char *cmd)
{
	static char out[65536];
	it_result r = it_hutch("exec", s, "--", "sh", "-c", cmd, NULL);

	IT_ASSERT_EXIT(r, 0, cmd);
	snprintf(out, sizeof(out), "%s", r.out);
	it_result_free(&r);
	return out;
}

/* Names, modes, owners and sizes of /.hutch and what is in it (not
 * times: the agent marks each use in /.hutch/use). */
#define HUTCH_DIR_LISTING                                                      \
	"cd /.hutch && stat -c '%n %a %u %g' . * && ls -A chan use home proc " \
	"| sort"

/* Twelve sync-ins of 300 files on a busy machine, each raced. */
HOSTILE_RACE_TEST(syncin, racing_sandbox_cannot_redirect_the_unpacking, 400.0)
{
	const char *s;
	char base[64], tools[128], tree[128], before[65536];
	it_opts bg = { .limit = 200 };
	it_proc racer;
	it_result r;
	int race, failed = 0;

	s = it_session();
	snprintf(base, sizeof(base), "/tmp/hutch-hostile-syncin-XXXXXX");
	cr_assert_not_null(mkdtemp(base));
	snprintf(tools, sizeof(tools), "%s/tools", base);
	snprintf(tree, sizeof(tree), "%s/tree", base);
	hostile_sh("mkdir -p '%s' '%s/d/inner'", tools, tree);
	hostile_install_tool("racer", tools);
	/* The tree: d/ (mode 0700, so that a mode applied to the wrong
	 * directory shows) with FILES files, and d/inner/. */
	hostile_sh("cd '%s/d' && chmod 0700 . && i=0 && while [ $i -lt %d ]; "
		   "do echo new > f$i && i=$((i+1)); done && echo deep > "
		   "inner/deep",
		   tree, FILES);

	r = it_hutch("sync-in", s, tools, NULL);
	IT_ASSERT_EXIT(r, 0, "sync-in the racer");
	it_result_free(&r);
	session_says(s, "mkdir /workspace/d && ln -s /.hutch /workspace/s");
	snprintf(before, sizeof(before), "%s",
		 session_says(s, HUTCH_DIR_LISTING));

	{
		const char *args[] = { "exec",
				       s,
				       "--",
				       "/workspace/racer",
				       "/workspace",
				       "d",
				       "s",
				       "/.hutch",
				       "/workspace/stop",
				       NULL };

		race = hostile_race_begin();
		it_spawn(&racer, &bg, args);
	}
	/* The racer runs once d has been a symlink. */
	for (int i = 0; i < 200; i++) {
		if (strcmp(session_says(s, "test -L /workspace/d && echo yes "
					   "|| echo no"),
			   "yes\n") == 0)
			break;
		it_sleep(0.05);
	}
	for (int round = 0; round < ROUNDS; round++) {
		r = it_hutch("sync-in", s, tree, NULL);
		/* What the racer turned into a symlink is not written
		 * through; the copy says so in one line. */
		if (r.status != 0) {
			cr_assert(!r.timed_out && r.status == 125 &&
					  it_count_lines(r.err, r.err_len) == 1,
				  "round %d: sync-in failed otherwise (exit "
				  "%d): %s",
				  round, r.status, r.err);
			failed++;
		}
		it_result_free(&r);
	}
	session_says(s, "touch /workspace/stop");
	r = it_wait(&racer);
	hostile_race_end(race);
	IT_ASSERT_EXIT(r, 0, "the racer");
	cr_assert(strstr(r.out, " swaps") && atol(r.out) > 1000,
		  "the racer did not race: %s", r.out);
	cr_log_info("racer: %.*s; %d of %d sync-ins refused a swapped entry",
		    (int)strcspn(r.out, "\n"), r.out, failed, ROUNDS);
	it_result_free(&r);

	cr_assert_str_eq(session_says(s, HUTCH_DIR_LISTING), before,
			 "/.hutch changed under the racing sync-ins");
	/* Every file the copies made is the session user's. */
	cr_assert_str_eq(session_says(s, "find /workspace -xdev ! -user 1000 "
					 "| head -5"),
			 "");
	/* And once the racing stops, the copy does its job. */
	session_says(s, "rm -rf /workspace/d /workspace/s");
	r = it_hutch("sync-in", s, tree, NULL);
	IT_ASSERT_EXIT(r, 0, "sync-in once the racer stopped");
	it_result_free(&r);
	cr_assert_str_eq(session_says(s, "cat /workspace/d/f7 "
					 "/workspace/d/inner/deep"),
			 "new\ndeep\n");
	hostile_sh("rm -rf '%s'", base);
}
