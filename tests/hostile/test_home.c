/*
 * test_home.c - the homes the agent makes for users without a passwd
 * entry (HUTCH_AGENT_HOME_DIR, src/agent/spawn.c agent_give_home)
 *
 * /.hutch/home is world-writable (sticky, as /tmp), so a command of one
 * user can put something at another user's home name before that user's
 * first command: a directory of its own, open to all, or a symlink to a
 * directory it can read.  The other user must not be handed either as its
 * HOME, where it would keep what the first user then reads.
 */
#include <string.h>

#include "hostile.h"

#define HOMES "/.hutch/home"

/* The session's user (1000) plants homes for uids 4321 and 4322. */
static const char plant[] = "set -e; mkdir -m 0777 " HOMES
			    "/4321; mkdir -m 0777 /tmp/bait; "
			    "ln -s /tmp/bait " HOMES "/4322; echo planted";

static const char show_home[] = "echo \"$HOME\"; touch \"$HOME/secret\" "
				"2>/dev/null && echo wrote || echo refused";

IT_TEST(home, a_planted_home_is_not_handed_to_another_user)
{
	const char *s = it_session();
	it_result r;

	r = it_hutch("sh", s, plant, NULL);
	IT_ASSERT_EXIT(r, 0, "planting homes");
	it_result_free(&r);

	/* Neither the other user's directory nor the symlink is its HOME. */
	r = it_hutch("sh", s, "--user", "4321:4321", show_home, NULL);
	IT_ASSERT_EXIT(r, 0, "a command as 4321");
	cr_assert(strncmp(r.out, HOMES "/4321\n", sizeof(HOMES "/4321")) != 0,
		  "4321 was given the planted directory: %s", r.out);
	it_result_free(&r);
	r = it_hutch("sh", s, "--user", "4322:4322", show_home, NULL);
	IT_ASSERT_EXIT(r, 0, "a command as 4322");
	cr_assert(strncmp(r.out, HOMES "/4322\n", sizeof(HOMES "/4322")) != 0,
		  "4322 was given the planted symlink: %s", r.out);
	it_result_free(&r);
	r = it_hutch("sh", s, "test ! -e /tmp/bait/secret && echo clean", NULL);
	IT_ASSERT_EXIT(r, 0, "the bait");
	cr_assert_str_eq(r.out, "clean\n", "4322 wrote through the symlink");
	it_result_free(&r);

	/* A user whose name was free gets its own, which the session's user
	 * can then neither remove nor replace (sticky). */
	r = it_hutch("sh", s, "--user", "4323:4323", show_home, NULL);
	IT_ASSERT_EXIT(r, 0, "a command as 4323");
	cr_assert_str_eq(r.out, HOMES "/4323\nwrote\n");
	it_result_free(&r);
	r = it_hutch("sh", s,
		     "mv " HOMES "/4323 " HOMES "/x 2>/dev/null || "
		     "rm -rf " HOMES "/4323 2>/dev/null; "
		     "test -d " HOMES "/4323 && echo kept",
		     NULL);
	IT_ASSERT_EXIT(r, 0, "taking 4323's home away");
	cr_assert_str_eq(r.out, "kept\n");
	it_result_free(&r);
}
