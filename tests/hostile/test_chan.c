/*
 * test_chan.c - the agent's channel taken over from inside the sandbox
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <json-c/json.h>

#include "hostile.h"

/*
 * A command of the session replaces the channel's socket with its own
 * listener, which answers as the agent would (chanjack).  hutch connects
 * (the name is a socket, below the volume, no symlink on the way), sees
 * that the listener is not the container's PID 1, and sends it nothing:
 * the command goes through the engine's exec.
 */
IT_TEST(hostile_chan, socket_taken_over_gets_nothing)
{
	char dir[] = "/tmp/hutch-hostile-chan-XXXXXX";
	const char *s = it_session();
	it_result r;
	json_object *j, *path;
	int ready = 0;

	if (strncmp(it_engine(), "unix://", 7) != 0)
		cr_skip_test("the channel is for engines on this host");
	cr_assert_not_null(mkdtemp(dir));
	cr_assert_eq(chmod(dir, 0755), 0);
	hostile_install_tool("chanjack", dir);
	r = it_hutch("up", s, "--seed", dir, NULL);
	hostile_sh("rm -rf '%s'", dir);
	IT_ASSERT_EXIT(r, 0, "hutch up S --seed DIR");
	it_result_free(&r);

	r = it_hutch("exec", s, "--json", "--", "true", NULL);
	IT_ASSERT_EXIT(r, 0, "hutch exec S --json -- true");
	j = it_json(r.out, r.out_len);
	path = it_json_get(j, "path");
	cr_assert_str_eq(json_object_get_string(path), "agent",
			 "before the attack: %s", r.out);
	json_object_put(j);
	it_result_free(&r);

	r = it_hutch("exec", s, "-d", "--", "./chanjack", "/workspace/jack.log",
		     "/workspace/jack.ready", NULL);
	IT_ASSERT_EXIT(r, 0, "hutch exec -d S -- ./chanjack");
	it_result_free(&r);
	for (int i = 0; i < 100 && !ready; i++) {
		r = it_hutch("exec", s, "--", "test", "-e",
			     "/workspace/jack.ready", NULL);
		ready = !r.timed_out && r.status == 0;
		it_result_free(&r);
		if (!ready)
			it_sleep(0.1);
	}
	cr_assert(ready, "chanjack never listened");

	r = it_hutch("exec", s, "--json", "--", "echo", "hi", NULL);
	IT_ASSERT_EXIT(r, 0, "hutch exec S --json -- echo hi");
	j = it_json(r.out, r.out_len);
	cr_assert_str_eq(json_object_get_string(it_json_get(j, "path")),
			 "engine", "%s", r.out);
	cr_assert_str_eq(json_object_get_string(it_json_get(j, "stdout")),
			 "hi\n");
	json_object_put(j);
	it_result_free(&r);

	r = it_hutch("exec", s, "--", "cat", "/workspace/jack.log", NULL);
	IT_ASSERT_EXIT(r, 0, "cat jack.log");
	/* It was tried (so the test means something), and sent nothing. */
	cr_assert(strstr(r.out, "conn ") != NULL, "never connected to: %s",
		  r.out);
	for (const char *p = r.out; (p = strstr(p, "conn ")); p += 5)
		cr_assert(strncmp(p, "conn 0\n", 7) == 0,
			  "hutch sent bytes to the impostor:\n%s", r.out);
	it_result_free(&r);
}
