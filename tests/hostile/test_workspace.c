/*
 * test_workspace.c - a session cannot hand another session a host
 * directory of its choosing as workspace (doc/threat-model.md)
 *
 * Session A's workspace holds the path that session B's workspace is
 * given (nested workspaces).  A puts a symlink there, to a canary
 * directory on the host: before B is made, or while B is stopped (the
 * engine resolves a bind mount's path again at every start).  B must not
 * get the canary as its workspace (from hutch up or hutch mcp): hutch
 * follows no symlink on that path.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hostile.h"

#define UID 1000

IT_TEST(workspace, a_symlink_on_its_path_is_never_mounted)
{
	const char *a = it_session(), *b = it_session(), *c = it_session();
	char base[64], ws[128], canary[128], p[256], cmd[512];
	struct stat st;
	it_result r;

	snprintf(base, sizeof(base), "/tmp/hutch-hostile-ws-XXXXXX");
	cr_assert_not_null(mkdtemp(base));
	snprintf(ws, sizeof(ws), "%s/wsA", base);
	snprintf(canary, sizeof(canary), "%s/canary", base);
	hostile_sh(
		"mkdir -p '%s/sub2' '%s' && echo canary > '%s/f' && chown -R %d:%d '%s'",
		ws, canary, canary, UID, UID, ws);
	hostile_sh("chown %d:%d '%s' && chmod 0755 '%s'", UID, UID, canary,
		   base);
	r = it_hutch("up", a, "--workspace", ws, NULL);
	IT_ASSERT_EXIT(r, 0, "up A");
	it_result_free(&r);

	/* Before B is made: A plants sub -> canary. */
	snprintf(cmd, sizeof(cmd), "ln -s %s /workspace/sub", canary);
	r = it_hutch("sh", a, cmd, NULL);
	IT_ASSERT_EXIT(r, 0, "A plants a symlink");
	it_result_free(&r);
	snprintf(p, sizeof(p), "%s/sub", ws);
	r = it_hutch("up", b, "--workspace", p, NULL);
	cr_assert(r.status != 0 && strstr(r.err, "symlink"),
		  "up B on a planted symlink: exit %d: %s", r.status, r.err);
	it_result_free(&r);
	/* The same through hutch mcp, which an MCP client starts with a
	 * path of its own (before, it resolved the symlink and served the
	 * canary). */
	r = it_hutch("mcp", "--session", b, "--workspace", p, NULL);
	cr_assert(r.status != 0 && strstr(r.err, "symlink"),
		  "mcp B on a planted symlink: exit %d: %s", r.status, r.err);
	it_result_free(&r);
	cr_assert_eq(it_count_containers(b) + it_count_volumes(b), 0);

	/* C is made on a real directory, then stopped; A swaps it for a
	 * symlink; C's next command must not start on the canary. */
	snprintf(p, sizeof(p), "%s/sub2", ws);
	r = it_hutch("up", c, "--workspace", p, NULL);
	IT_ASSERT_EXIT(r, 0, "up C");
	it_result_free(&r);
	it_container_stop(c);
	snprintf(
		cmd, sizeof(cmd),
		"mv /workspace/sub2 /workspace/old2 && ln -s %s /workspace/sub2",
		canary);
	r = it_hutch("sh", a, cmd, NULL);
	IT_ASSERT_EXIT(r, 0, "A swaps sub2 for a symlink");
	it_result_free(&r);
	r = it_hutch("exec", c, "--", "sh", "-c",
		     "echo pwn > /workspace/f; cat /workspace/f", NULL);
	cr_assert(r.status != 0 && strstr(r.err, "symlink"),
		  "C started on the swapped path: exit %d: %s%s", r.status,
		  r.out, r.err);
	it_result_free(&r);
	hostile_sh("test \"$(cat '%s/f')\" = canary", canary);
	cr_assert_eq(stat(canary, &st), 0);
	hostile_sh("rm -rf '%s'", base);
}
