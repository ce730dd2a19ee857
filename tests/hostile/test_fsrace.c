/*
 * test_fsrace.c - the file tools while the sandbox swaps directories under
 * them (doc/threat-model.md, "the file tools stay in /workspace")
 *
 * A static racer in the session swaps /workspace/d with /workspace/s, a
 * symlink to /tmp/target (outside the workspace), in a tight loop, while
 * hutch writes d/wN and reads d/secret again and again.  A tool that
 * checked a path and then used it by name would, some of the time, write
 * into /tmp/target or return /tmp/target/secret.  Each write must land in
 * the workspace or be refused; each read must return the workspace's file
 * or be refused.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hostile.h"

#define ROUNDS 40

HOSTILE_RACE_TEST(fsrace, tools_never_follow_a_swapped_directory_out,
		  IT_TEST_TIMEOUT)
{
	const char *s = it_session();
	char host[64], path[32];
	it_opts bg = { .limit = 200 };
	it_proc racer;
	int race;
	it_result r;
	int landed = 0, refused = 0;

	snprintf(host, sizeof(host), "/tmp/hutch-hostile-fsrace-XXXXXX");
	cr_assert_not_null(mkdtemp(host));
	hostile_install_tool("racer", host);
	r = it_hutch("sync-in", s, host, NULL);
	IT_ASSERT_EXIT(r, 0, "sync-in the racer");
	it_result_free(&r);
	r = it_hutch("sh", s,
		     "mkdir -p d /tmp/target && echo inside > d/secret && "
		     "echo OUTSIDE > /tmp/target/secret && ln -s /tmp/target s",
		     NULL);
	IT_ASSERT_EXIT(r, 0, "prepare d, s -> /tmp/target");
	it_result_free(&r);
	{
		const char *args[] = { "exec",
				       s,
				       "--",
				       "/workspace/racer",
				       "/workspace",
				       "d",
				       "s",
				       "/tmp/target",
				       "/workspace/stop",
				       NULL };

		race = hostile_race_begin();
		it_spawn(&racer, &bg, args);
	}

	for (int i = 0; i < ROUNDS; i++) {
		snprintf(path, sizeof(path), "d/w%d", i);
		r = it_hutch("write", s, path, "--content", "written", NULL);
		if (r.status == 0)
			landed++;
		else
			refused++;
		it_result_free(&r);
		r = it_hutch("read", s, "d/secret", NULL);
		cr_assert(!strstr(r.out, "OUTSIDE"),
			  "read returned /tmp/target/secret");
		it_result_free(&r);
	}
	r = it_hutch("write", s, "stop", "--content", "", NULL);
	IT_ASSERT_EXIT(r, 0, "stop the racer");
	it_result_free(&r);
	r = it_wait(&racer);
	hostile_race_end(race);
	IT_ASSERT_EXIT(r, 0, "the racer");
	cr_assert(atol(r.out) > 1000, "the racer did not race: %s", r.out);
	cr_log_info("racer: %.*s; writes landed %d, refused %d",
		    (int)strcspn(r.out, "\n"), r.out, landed, refused);
	it_result_free(&r);

	/* Nothing but the file that was there reached /tmp/target. */
	r = it_hutch("exec", s, "--", "ls", "-A", "/tmp/target", NULL);
	IT_ASSERT_EXIT(r, 0, "ls /tmp/target");
	cr_assert_str_eq(r.out, "secret\n", "a write left the workspace: %s",
			 r.out);
	it_result_free(&r);
	hostile_sh("rm -rf '%s'", host);
}

/* Count a call that did its work or was refused, and free it. */
static void tally(it_result *r, int *done, int *refused)
{
	if (r->status == 0)
		(*done)++;
	else
		(*refused)++;
	it_result_free(r);
}

/*
 * The same race against rm-file and mv-file: d/victim is deleted, moved
 * out of d and moved into d while d and s swap.  Each must act in the
 * workspace or be refused; /tmp/target must keep its one file, with its
 * content, and gain none.
 */
HOSTILE_RACE_TEST(fsrace, delete_and_move_never_follow_a_swapped_directory_out,
		  IT_TEST_TIMEOUT)
{
	const char *s = it_session();
	char host[64], moved[32];
	it_opts bg = { .limit = 200 };
	it_proc racer;
	int race;
	it_result r;
	int done = 0, refused = 0;

	snprintf(host, sizeof(host), "/tmp/hutch-hostile-fsops-XXXXXX");
	cr_assert_not_null(mkdtemp(host));
	hostile_install_tool("racer", host);
	r = it_hutch("sync-in", s, host, NULL);
	IT_ASSERT_EXIT(r, 0, "sync-in the racer");
	it_result_free(&r);
	r = it_hutch("sh", s,
		     "mkdir -p d moved /tmp/target && "
		     "echo OUTSIDE > /tmp/target/victim && "
		     "ln -s /tmp/target s",
		     NULL);
	IT_ASSERT_EXIT(r, 0, "prepare d, s -> /tmp/target");
	it_result_free(&r);
	{
		const char *args[] = { "exec",
				       s,
				       "--",
				       "/workspace/racer",
				       "/workspace",
				       "d",
				       "s",
				       "/tmp/target",
				       "/workspace/stop",
				       NULL };

		race = hostile_race_begin();
		it_spawn(&racer, &bg, args);
	}

	/* A quarter of the rounds, five calls each: with the racer of the
	 * test beside it spinning too, half of them took 145 s of the
	 * test's 150 in a CI run on two cores (the racer's own exec ended
	 * at its 120 s timeout).  Ten rounds still see calls both done and
	 * refused. */
	for (int i = 0; i < ROUNDS / 4; i++) {
		/* A victim for each tool, written through the race too. */
		r = it_hutch("write", s, "d/victim", "--content", "inside",
			     NULL);
		it_result_free(&r);
		r = it_hutch("rm-file", s, "d/victim", NULL);
		tally(&r, &done, &refused);
		r = it_hutch("write", s, "d/victim", "--content", "inside",
			     NULL);
		it_result_free(&r);
		snprintf(moved, sizeof(moved), "moved/v%d", i);
		r = it_hutch("mv-file", s, "d/victim", moved, NULL);
		tally(&r, &done, &refused);
		r = it_hutch("mv-file", s, moved, "d/in", "--overwrite", NULL);
		tally(&r, &done, &refused);
	}
	r = it_hutch("write", s, "stop", "--content", "", NULL);
	IT_ASSERT_EXIT(r, 0, "stop the racer");
	it_result_free(&r);
	r = it_wait(&racer);
	hostile_race_end(race);
	IT_ASSERT_EXIT(r, 0, "the racer");
	cr_assert(atol(r.out) > 1000, "the racer did not race: %s", r.out);
	cr_log_info("racer: %.*s; calls done %d, refused %d",
		    (int)strcspn(r.out, "\n"), r.out, done, refused);
	it_result_free(&r);

	/* /tmp/target holds its file, unchanged, and nothing else. */
	r = it_hutch("exec", s, "--", "sh", "-c",
		     "ls -A /tmp/target; cat /tmp/target/victim", NULL);
	IT_ASSERT_EXIT(r, 0, "look at /tmp/target");
	cr_assert_str_eq(r.out, "victim\nOUTSIDE\n",
			 "a call left the workspace: %s", r.out);
	it_result_free(&r);
	hostile_sh("rm -rf '%s'", host);
}
