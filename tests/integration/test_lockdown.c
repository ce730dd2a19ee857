/*
 * test_lockdown.c - what a hostile command tries, against a real engine
 *
 * Each test does what a command that wants out would do, and checks that
 * the session holds: writing outside the workspace, a fork bomb, eating
 * memory, the network, signalling PID 1, looking for capabilities.  The
 * fork bomb and the allocation only ever run in a session whose limits
 * the test has first read back from the engine: a fork bomb without a
 * pids limit once overloaded this machine for an hour.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <json-c/json.h>

#include "harness.h"
#include "../../src/shared/agent_protocol.h"

static json_object *jget(json_object *o, const char *key)
{
	json_object *v = NULL;

	json_object_object_get_ex(o, key, &v);
	return v;
}

/* `hutch up S ARGS... --json`, asserting success; the object. */
static json_object *up_json(const char *what, const char *const *args)
{
	const char *argv[32];
	size_t n = 0;
	it_result r;
	json_object *j;

	argv[n++] = "up";
	for (size_t i = 0; args[i]; i++)
		argv[n++] = args[i];
	argv[n++] = "--json";
	argv[n] = NULL;
	r = it_hutch_v(NULL, argv);
	IT_ASSERT_EXIT(r, 0, what);
	j = it_json(r.out, r.out_len);
	it_result_free(&r);
	return j;
}

/* Run `sh -c SCRIPT` in S; the result (caller frees). */
static it_result sh(const char *s, const char *script)
{
	return it_hutch("exec", s, "--", "sh", "-c", script, NULL);
}

/* Assert `sh -c SCRIPT` printed exactly `want` and exited 0. */
static void sh_expect(const char *s, const char *script, const char *want)
{
	it_result r = sh(s, script);

	IT_ASSERT_EXIT(r, 0, script);
	cr_assert_str_eq(r.out, want, "%s: got '%s', stderr: %s", script, r.out,
			 r.err);
	it_result_free(&r);
}

/* The container's HostConfig as the engine reports it (caller puts). */
static json_object *host_config(const char *s, json_object **whole)
{
	char path[256], *body = NULL;
	size_t len = 0;
	json_object *hc;

	snprintf(path, sizeof(path), "/containers/hutch-%s/json", s);
	cr_assert_eq(it_api("GET", path, &body, &len), 200, "inspect hutch-%s",
		     s);
	*whole = it_json(body, len);
	free(body);
	hc = jget(*whole, "HostConfig");
	cr_assert_not_null(hc);
	return hc;
}

static int64_t host_int(json_object *hc, const char *key)
{
	json_object *v = jget(hc, key);

	cr_assert(v && json_object_is_type(v, json_type_int),
		  "HostConfig.%s: %s", key, json_object_to_json_string(hc));
	return json_object_get_int64(v);
}

/* 1. the defaults: unprivileged user, no capabilities, no new
 * privileges, hutch's agent as PID 1, limits, no network */
IT_TEST(lockdown, defaults_on_the_offline_image)
{
	const char *s = it_session();
	const char *args[] = { s, NULL };
	json_object *j = up_json("hutch up S", args), *whole, *hc, *caps;

	cr_assert_str_eq(json_object_get_string(jget(j, "user")), "1000:1000");
	cr_assert_eq(json_object_get_int64(jget(j, "memory")), 2LL << 30);
	cr_assert_eq(json_object_get_int64(jget(j, "pids")), 1024);
	cr_assert_eq(json_object_get_double(jget(j, "cpus")), 1.0);
	cr_assert_str_eq(json_object_get_string(jget(j, "network")), "none");
	cr_assert_eq(json_object_get_boolean(jget(j, "read_only")), 0);
	json_object_put(j);

	/* What the engine was told, not only what hutch says it asked. */
	hc = host_config(s, &whole);
	cr_assert_eq(host_int(hc, "PidsLimit"), 1024);
	cr_assert_eq(host_int(hc, "Memory"), 2LL << 30);
	cr_assert_eq(host_int(hc, "NanoCpus"), 1000000000LL);
	cr_assert_str_eq(json_object_get_string(jget(hc, "NetworkMode")),
			 "none");
	caps = jget(hc, "CapDrop");
	cr_assert(caps && json_object_array_length(caps) >= 1, "CapDrop: %s",
		  json_object_to_json_string(hc));
	cr_assert(strstr(json_object_to_json_string(jget(hc, "SecurityOpt")),
			 "no-new-privileges"),
		  "SecurityOpt: %s", json_object_to_json_string(hc));
	json_object_put(whole);

	/* The image's sandbox user, by uid and by name. */
	sh_expect(s, "id -u; id -g; id -un", "1000\n1000\nsandbox\n");
	/* No capability at all, and no way to gain one. */
	sh_expect(
		s,
		"grep -E '^(CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs):' /proc/self/status"
		" | tr -s '\\t' ' '",
		"CapPrm: 0000000000000000\nCapEff: 0000000000000000\n"
		"CapBnd: 0000000000000000\nCapAmb: 0000000000000000\nNoNewPrivs: 1\n");
	/* PID 1 is hutch's agent, not a shell or the engine's init (with
	 * room in its command line for the channel's "run" forks). */
	sh_expect(s, "tr '\\0' ' ' </proc/1/cmdline",
		  HUTCH_AGENT_PID1_PATH " " HUTCH_AGENT_CMD_SLEEP " ");
	/* su cannot make root out of no-new-privileges and no capabilities. */
	{
		it_result r = sh(s, "su -c id root </dev/null");

		cr_assert_neq(r.status, 0, "su worked: %s", r.out);
		it_result_free(&r);
	}
}

/* 2. writing outside the workspace fails; inside it works */
IT_TEST(lockdown, writes_outside_the_workspace_fail)
{
	const char *s = it_session();
	it_result r;

	r = sh(s,
	       "for d in /etc /usr /bin /; do touch $d/hutch-escape 2>/dev/null && echo $d; done;"
	       " echo x >>/etc/passwd 2>/dev/null && echo passwd;"
	       " rm -f /bin/busybox 2>/dev/null && echo busybox;"
	       " touch /.hutch/x 2>/dev/null && echo agent-dir;"
	       " true");
	IT_ASSERT_EXIT(r, 0, "writes outside the workspace");
	/* Podman gives the new /.hutch volume to the container's user (the
	 * agent there is replaced on every container creation, and never
	 * runs with more than the session user's rights); Docker leaves it
	 * root's. */
	if (strcmp(r.out, "agent-dir\n") == 0)
		cr_assert_str_eq(it_engine_name(), "podman",
				 "/.hutch is writable on %s", it_engine_name());
	else
		cr_assert_str_eq(r.out, "", "written outside the workspace: %s",
				 r.out);
	it_result_free(&r);
	sh_expect(
		s,
		"echo ok >/workspace/f && cat f && echo ok >/tmp/t && cat /tmp/t",
		"ok\nok\n");
}

static void bomb_session(const char *s)
{
	const char *args[] = { s, "--pids", "64", "--cpus", "0.5", NULL };
	json_object *whole, *hc;

	json_object_put(up_json("hutch up S --pids 64 --cpus 0.5", args));
	/* Never run the bomb without reading the limit back first. */
	hc = host_config(s, &whole);
	cr_assert_eq(host_int(hc, "PidsLimit"), 64,
		     "no pids limit: not running the fork bomb");
	json_object_put(whole);
}

/* 3. a fork bomb under a command that runs until its timeout: the pids
 * limit holds, the timeout kills the whole tree (the kill exec itself
 * cannot start in a full container: the agent's own deadline does it),
 * and the next command runs at once */
IT_TEST(lockdown, fork_bomb_meets_the_pids_limit)
{
	const char *s = it_session();
	it_result r;
	size_t n = 0;

	bomb_session(s);
	/* The shell spins on a builtin (no fork) while the bomb grows in a
	 * subshell beneath it. */
	r = it_hutch("exec", s, "--timeout", "6", "--", "sh", "-c",
		     "(b() { b | b; }; b) 2>/dev/null & while :; do :; done",
		     NULL);
	IT_ASSERT_EXIT(r, 124, "a fork bomb with --timeout 6");
	it_result_free(&r);

	/* (A hang would hit the harness's limit for one run.) */
	r = it_hutch("exec", s, "--", "true", NULL);
	IT_ASSERT_EXIT(r, 0, "the command after the fork bomb");
	it_result_free(&r);
	/* Nothing of it is left: the agent's own alone (zombies are being
	 * reaped). */
	for (int tries = 0; tries < 20 && (n = it_count_processes(s)) > 0;
	     tries++)
		it_sleep(0.5);
	cr_assert_eq(n, 0, "%zu processes still run after the fork bomb", n);
	sh_expect(s, "echo alive", "alive\n");
}

/* 4. a fork bomb that detaches from its command outlives it, as any
 * background process does, but within the pids limit; hutch keeps
 * answering and removes the session at once.  Each process of this bomb
 * starts two more and then sleeps, so the bomb fills its limit and stays
 * there: busybox sh exits when it cannot fork, and a bomb whose processes
 * only ever fork dies out at the limit within a second (seen on Podman). */
IT_TEST(lockdown, detached_fork_bomb_stays_in_its_limit)
{
	const char *s = it_session();
	it_result r;
	double t0;
	size_t most = 0;

	bomb_session(s);
	r = it_hutch("exec", s, "--timeout", "10", "--", "sh", "-c",
		     "b() { b & b & sleep 1000; }; b >/dev/null 2>&1 &", NULL);
	cr_assert(!r.timed_out && r.status != 125,
		  "the bomb's command: exit %d, stderr: %.300s", r.status,
		  r.err);
	it_result_free(&r);
	for (int i = 0; i < 6; i++) {
		size_t n = it_count_processes(s);

		most = n > most ? n : most;
		it_sleep(0.5);
	}
	cr_assert_leq(most, 64, "%zu processes under a limit of 64", most);
	cr_assert_gt(most, 8, "the bomb did not run (%zu processes)", most);
	/* hutch answers: a command runs or says it could not (a hang would
	 * hit the harness's limit for one run). */
	t0 = it_now();
	r = it_hutch("exec", s, "--timeout", "10", "--", "true", NULL);
	cr_assert(!r.timed_out, "exec hung %.1f s", it_now() - t0);
	it_result_free(&r);
	r = it_hutch("rm", s, NULL);
	IT_ASSERT_EXIT(r, 0, "hutch rm of the bombed session");
	it_result_free(&r);
	cr_assert_eq(it_count_containers(s), 0);
}

/* 4. allocating past the memory limit: the OOM killer, reported as such */
IT_TEST(lockdown, memory_limit_oom_is_reported)
{
	const char *s = it_session();
	const char *args[] = { s, "--memory", "64m", NULL };
	json_object *j = up_json("hutch up S --memory 64m", args), *whole, *hc;
	it_result r;

	cr_assert_eq(json_object_get_int64(jget(j, "memory")), 64LL << 20);
	json_object_put(j);
	hc = host_config(s, &whole);
	cr_assert_eq(host_int(hc, "Memory"), 64LL << 20,
		     "no memory limit: not allocating");
	json_object_put(whole);

	/* A command that stays under the limit is not called OOM. */
	r = it_hutch("exec", "--json", s, "--", "dd", "if=/dev/zero",
		     "of=/dev/null", "bs=8M", "count=2", NULL);
	IT_ASSERT_EXIT(r, 0, "dd with an 8 MiB buffer");
	j = it_json(r.out, r.out_len);
	cr_assert_eq(json_object_get_boolean(jget(j, "oom")), 0, "%s", r.out);
	json_object_put(j);
	it_result_free(&r);

	/* dd's buffer is 256 MiB, filled from /dev/zero: past the limit. */
	r = it_hutch("exec", "--json", s, "--", "dd", "if=/dev/zero",
		     "of=/dev/null", "bs=256M", "count=1", NULL);
	IT_ASSERT_EXIT(r, 137, "dd with a 256 MiB buffer in 64 MiB");
	j = it_json(r.out, r.out_len);
	cr_assert_eq(json_object_get_boolean(jget(j, "oom")), 1,
		     "not reported as OOM: %s", r.out);
	cr_assert_eq(json_object_get_int(jget(j, "exit_code")), 137);
	cr_assert_str_eq(json_object_get_string(jget(j, "status")), "ok");
	cr_assert(strstr(json_object_get_string(jget(j, "stderr")),
			 "hutch: out of memory"),
		  "%s", r.out);
	json_object_put(j);
	it_result_free(&r);

	/* Streaming: the line reaches stderr as it is. */
	r = it_hutch("exec", s, "--", "dd", "if=/dev/zero", "of=/dev/null",
		     "bs=256M", "count=1", NULL);
	IT_ASSERT_EXIT(r, 137, "dd again, streaming");
	cr_assert(strstr(r.err, "hutch: out of memory: ") &&
			  strstr(r.err, "(memory limit 64 MiB)"),
		  "stderr: %s", r.err);
	it_result_free(&r);

	/* The sandbox survived. */
	sh_expect(s, "echo alive", "alive\n");
}

/* 5. no network: nothing but lo, and connections fail */
IT_TEST(lockdown, no_network)
{
	const char *s = it_session();
	it_result r;

	sh_expect(s, "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '",
		  "lo\n");
	r = sh(s,
	       "wget -q -T 3 -O /dev/null http://1.1.1.1/ 2>&1; echo wget=$?;"
	       " nc -w 3 1.1.1.1 53 </dev/null 2>&1; echo nc=$?");
	IT_ASSERT_EXIT(r, 0, "network attempts");
	cr_assert(strstr(r.out, "wget=0") == NULL &&
			  strstr(r.out, "nc=0") == NULL,
		  "a connection went out: %s", r.out);
	cr_assert(strstr(r.out, "unreachable"), "not 'unreachable': %s", r.out);
	it_result_free(&r);
}

/* 6. kill 1: the sandbox stays up */
IT_TEST(lockdown, kill_init_does_not_take_the_sandbox_down)
{
	const char *s = it_session();
	char *id1, *id2;
	it_result r;
	json_object *j;

	sh_expect(s, "true", "");
	id1 = it_container_id(s);
	r = sh(s,
	       "kill 1; kill -TERM 1; kill -INT 1; kill -HUP 1; kill -KILL 1;"
	       " kill -STOP 1; echo done");
	cr_assert(strstr(r.out, "done"), "stdout: %s, stderr: %s", r.out,
		  r.err);
	it_result_free(&r);
	/* Every process the user may signal: all but PID 1, this command's
	 * own shell and agent included, so its status is theirs. */
	r = sh(s, "kill -TERM -1; sleep 5");
	cr_assert(!r.timed_out && r.status != 125,
		  "kill -1: exit %d, stderr: %s", r.status, r.err);
	it_result_free(&r);
	it_sleep(1.0);
	cr_assert_eq(it_container_running(s), 1,
		     "kill 1 stopped the container");
	r = it_hutch("exec", "--json", s, "--", "true", NULL);
	IT_ASSERT_EXIT(r, 0, "a command after kill 1");
	j = it_json(r.out, r.out_len);
	cr_assert_eq(json_object_get_boolean(jget(j, "retried")), 0,
		     "the container had to be brought back: %s", r.out);
	json_object_put(j);
	it_result_free(&r);
	id2 = it_container_id(s);
	cr_assert_str_eq(id1, id2, "the container was replaced");
	free(id1);
	free(id2);
	/* Not stopped either: PID 1 still answers to the engine. */
	sh_expect(s, "grep State /proc/1/status | tr -s '\\t ' ' '",
		  "State: S (sleeping)\n");
}

/* 7. an image without a sandbox user: 1000:1000 without a passwd entry,
 * and a seeded workspace that belongs to it */
IT_TEST(lockdown, bare_image_runs_as_1000_and_seed_belongs_to_it)
{
	const char *s = it_session();
	char dir[] = "/tmp/hutch-it-seed-XXXXXX", bin[PATH_MAX],
	     cmd[PATH_MAX + 64];
	const char *args[] = { s,	 "--image", "hutch-bare:latest",
			       "--seed", dir,	    NULL };
	json_object *j;
	it_result r;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(bin, sizeof(bin), "%s/bin", dir);
	cr_assert_eq(mkdir(bin, 0755), 0);
	snprintf(cmd, sizeof(cmd), "cp /bin/busybox %s/bin/busybox", dir);
	cr_assert_eq(system(cmd), 0, "%s", cmd);

	j = up_json("hutch up S --image hutch-bare --seed DIR", args);
	cr_assert_str_eq(json_object_get_string(jget(j, "user")), "1000:1000");
	json_object_put(j);
	r = it_hutch(
		"exec", s, "--", "/workspace/bin/busybox", "sh", "-c",
		"B=/workspace/bin/busybox; $B id -u; $B id -g;"
		" $B stat -c '%u:%g' /workspace /workspace/bin /workspace/bin/busybox;"
		" $B touch /workspace/new /workspace/bin/new && echo writable;"
		" $B grep -E '^(CapEff|NoNewPrivs):' /proc/self/status | $B tr -s '\\t' ' '",
		NULL);
	IT_ASSERT_EXIT(r, 0, "busybox in a bare session");
	cr_assert_str_eq(
		r.out,
		"1000\n1000\n1000:1000\n1000:1000\n1000:1000\nwritable\n"
		"CapEff: 0000000000000000\nNoNewPrivs: 1\n",
		"got: %s", r.out);
	it_result_free(&r);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
}

/* 8. a bind-mounted workspace: its owner is the default user; a root-owned
 * one is refused unless a user is chosen */
IT_TEST(lockdown, bind_mount_workspace_user)
{
	const char *s = it_session(), *s2 = it_session();
	char dir[] = "/tmp/hutch-it-bind-XXXXXX", path[PATH_MAX + 16],
	     cmd[PATH_MAX + 16];
	const char *args[] = { s, "--workspace", dir, NULL };
	const char *args_root[] = { s2,	      "--workspace", dir,
				    "--user", "root",	     NULL };
	struct stat st;
	json_object *j;
	it_result r;

	cr_assert_not_null(mkdtemp(dir));
	/* Root's directory: refused, nothing made. */
	r = it_hutch("up", s, "--workspace", dir, NULL);
	IT_ASSERT_EXIT(r, 125, "hutch up on a root-owned directory");
	cr_assert(strstr(r.err, "belongs to root"), "stderr: %s", r.err);
	it_result_free(&r);
	cr_assert_eq(it_count_containers(s), 0);

	/* Chosen as root: allowed, and the files are root's. */
	j = up_json("hutch up S2 --workspace DIR --user root", args_root);
	cr_assert_str_eq(json_object_get_string(jget(j, "user")), "root");
	json_object_put(j);
	sh_expect(s2, "id -u; touch rootfile && echo ok", "0\nok\n");

	/* Given to 1000:1000: that is the session's user. */
	cr_assert_eq(chown(dir, 1000, 1000), 0, "chown: %s", strerror(errno));
	j = up_json("hutch up S --workspace DIR", args);
	cr_assert_str_eq(json_object_get_string(jget(j, "user")), "1000:1000");
	json_object_put(j);
	sh_expect(s, "id -u; touch /workspace/userfile && echo ok",
		  "1000\nok\n");
	snprintf(path, sizeof(path), "%s/userfile", dir);
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_eq(st.st_uid, 1000);
	/* The directory keeps its owner: hutch never changes a host's. */
	cr_assert_eq(stat(dir, &st), 0);
	cr_assert_eq(st.st_uid, 1000);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
}

/* 9. --user root works, still without capabilities; --cap-add gives one
 * back */
IT_TEST(lockdown, user_root_and_cap_add)
{
	const char *s = it_session();
	const char *args[] = { s,	    "--user",		"root",
			       "--cap-add", "net_bind_service", NULL };
	json_object *j = up_json(
		"hutch up S --user root --cap-add net_bind_service", args);

	cr_assert_str_eq(json_object_get_string(jget(j, "user")), "root");
	cr_assert_str_eq(json_object_to_json_string(jget(j, "cap_add")),
			 "[ \"NET_BIND_SERVICE\" ]");
	json_object_put(j);
	/* CAP_NET_BIND_SERVICE is bit 10. */
	sh_expect(
		s,
		"id -u; grep -E '^(CapEff|CapBnd|NoNewPrivs):' /proc/self/status"
		" | tr -s '\\t' ' '",
		"0\nCapEff: 0000000000000400\nCapBnd: 0000000000000400\nNoNewPrivs: 1\n");
	/* Root without CAP_CHOWN cannot give a file away. */
	sh_expect(
		s,
		"echo x >/workspace/f && chmod 000 /workspace/f && chown 1000 /workspace/f"
		" 2>/dev/null; echo chown=$?",
		"chown=1\n");
}

/* 10. --read-only: /tmp and /workspace writable, nothing else; the file
 * tools (whose large texts travel through /.hutch) still work */
IT_TEST(lockdown, read_only_root)
{
	const char *s = it_session();
	const char *args[] = { s, "--read-only", NULL };
	json_object *j = up_json("hutch up S --read-only", args);
	char *big;
	it_result r;

	cr_assert_eq(json_object_get_boolean(jget(j, "read_only")), 1);
	json_object_put(j);
	sh_expect(
		s,
		"touch /etc/x /bin/x /x 2>&1 | grep -c 'Read-only file system';"
		" touch /tmp/x && echo tmp; touch /workspace/x && echo ws",
		"3\ntmp\nws\n");
	/* 100 KB: on the agent's stdin, not in the environment. */
	big = malloc(100001);
	cr_assert_not_null(big);
	memset(big, 'a', 100000);
	big[100000] = '\0';
	r = it_hutch("write", s, "big.txt", "--content", big, NULL);
	IT_ASSERT_EXIT(r, 0, "hutch write of 100 KB on a read-only root");
	it_result_free(&r);
	free(big);
	sh_expect(s, "wc -c <big.txt", "100000\n");
}

/* 11. a different configuration is said, not silently reused; --recreate
 * applies it, keeps the workspace, and is what comes back after the
 * container is removed from outside */
IT_TEST(lockdown, config_mismatch_and_recreate)
{
	const char *s = it_session();
	const char *a64[] = { s, "--memory", "64m", NULL };
	const char *a128[] = { s, "--memory", "128m", "--recreate", NULL };
	json_object *j, *whole, *hc;
	char *id1, *id2;
	it_result r;

	json_object_put(up_json("hutch up S --memory 64m", a64));
	sh_expect(s, "echo kept >/workspace/keep && echo ok", "ok\n");
	id1 = it_container_id(s);

	r = it_hutch("up", s, "--memory", "128m", "--pids", "100", NULL);
	IT_ASSERT_EXIT(r, 125, "hutch up S with another memory limit");
	cr_assert(strstr(r.err, "memory 64m (asked 128m)") &&
			  strstr(r.err, "pids 1024 (asked 100)") &&
			  strstr(r.err, "--recreate"),
		  "stderr: %s", r.err);
	cr_assert_eq(it_count_lines(r.err, r.err_len), 1, "not one line: %s",
		     r.err);
	it_result_free(&r);
	/* The same settings, or none, are fine. */
	json_object_put(up_json("hutch up S --memory 64m again", a64));
	sh_expect(s, "cat keep", "kept\n");

	j = up_json("hutch up S --memory 128m --recreate", a128);
	cr_assert_eq(json_object_get_int64(jget(j, "memory")), 128LL << 20);
	json_object_put(j);
	id2 = it_container_id(s);
	cr_assert_str_neq(id1, id2, "--recreate kept the old container");
	free(id1);
	free(id2);
	sh_expect(s, "cat keep; id -u", "kept\n1000\n");

	/* Removed from outside: it comes back with the new settings. */
	it_container_remove(s);
	sh_expect(s, "cat keep", "kept\n");
	hc = host_config(s, &whole);
	cr_assert_eq(host_int(hc, "Memory"), 128LL << 20,
		     "came back with the old limit");
	json_object_put(whole);
}

/* 12. bad flags: one line each, nothing created */
IT_TEST(lockdown, flags_are_checked)
{
	const char *s = it_session();
	const char *bad[][2] = {
		{ "--memory", "lots" },
		{ "--memory", "1k" },
		{ "--cpus", "0" },
		{ "--cpus", "x" },
		{ "--pids", "3" },
		{ "--pids", "-1" },
		{ "--cap-add", "MAKE_COFFEE" },
		{ "--user", "a b" },
		{ "--network", "no/such" },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		it_result r = it_hutch("up", s, bad[i][0], bad[i][1], NULL);
		char what[96];

		snprintf(what, sizeof(what), "hutch up S %s %s", bad[i][0],
			 bad[i][1]);
		IT_ASSERT_EXIT(r, 125, what);
		cr_assert_eq(it_count_lines(r.err, r.err_len), 1, "%s: %s",
			     what, r.err);
		cr_assert(strstr(r.err, bad[i][1]),
			  "%s: the error does not quote the value: %s", what,
			  r.err);
		it_result_free(&r);
	}
	cr_assert_eq(it_count_containers(s), 0);
	cr_assert_eq(it_count_volumes(s), 0);
}

/* 13. a user chosen by number owns a volume workspace, whoever owns the
 * image's /workspace; --recreate with another user hands it over and
 * keeps what is in it */
IT_TEST(lockdown, numeric_user_owns_the_volume_workspace)
{
	const char *s = it_session();
	const char *first[] = { s, "--user", "2345:2346", NULL };
	const char *again[] = { s, "--user", "3000:3001", "--recreate", NULL };
	char path[256], *body = NULL;
	size_t len = 0;

	json_object_put(up_json("hutch up S --user 2345:2346", first));
	sh_expect(
		s,
		"id -u; id -g; stat -c %u:%g /workspace; touch /workspace/x && echo ok",
		"2345\n2346\n2345:2346\nok\n");
	if (strcmp(it_engine_name(), "podman") == 0) {
		/* Podman was asked to make the volume with its owner (one
		 * archive request less per new session). */
		json_object *vol, *opts;

		snprintf(path, sizeof(path), "/volumes/hutch-%s", s);
		cr_assert_eq(it_api("GET", path, &body, &len), 200,
			     "inspect %s", path);
		vol = it_json(body, len);
		free(body);
		opts = jget(vol, "Options");
		cr_assert(opts && jget(opts, "UID") && jget(opts, "GID"),
			  "volume options: %s",
			  json_object_to_json_string(vol));
		cr_assert_str_eq(json_object_get_string(jget(opts, "UID")),
				 "2345");
		cr_assert_str_eq(json_object_get_string(jget(opts, "GID")),
				 "2346");
		json_object_put(vol);
	}
	json_object_put(
		up_json("hutch up S --user 3000:3001 --recreate", again));
	sh_expect(
		s,
		"id -u; stat -c %u:%g /workspace /workspace/x; touch /workspace/y && echo ok",
		"3000\n3000:3001\n2345:2346\nok\n");
}

/* 14. an image whose sandbox user has other ids than 1000:1000: every
 * session made from it runs as that user, the first one and those a
 * process makes after it or at the same time (which wait for the first
 * one's read of the image's /etc/passwd and do not read it again) */
IT_TEST(lockdown, image_sandbox_user_with_other_ids)
{
	const char *base = it_session();
	const char *root[] = { base, "--user", "root", NULL };
	const char *cli;
	char image[160], path[512], text[1024],
		dir[] = "/tmp/hutch-it-sbx-XXXXXX";
	char jobs[PATH_MAX];
	json_object *j;
	it_result r;
	long status;
	int up_status;
	FILE *f;

	/* The image: hutch's offline image with sandbox moved to 1500:1501. */
	json_object_put(up_json("hutch up BASE --user root", root));
	sh_expect(
		base,
		"sed -i 's/^sandbox:x:1000:1000:/sandbox:x:1500:1501:/' /etc/passwd &&"
		" sed -i 's/^sandbox:x:1000:/sandbox:x:1501:/' /etc/group &&"
		" grep -c '^sandbox:x:1500:1501:' /etc/passwd",
		"1\n");
	snprintf(image, sizeof(image), "hutch-%ssbx-%ld", it_run_prefix(),
		 (long)getpid());
	snprintf(path, sizeof(path),
		 "/commit?container=hutch-%s&repo=%s&tag=latest", base, image);
	status = it_api_json("POST", path, "{}", NULL, NULL);
	cr_assert_eq(status, 201, "commit %s: HTTP %ld", image, status);
	strcat(image, ":latest");

	/* One session with the CLI, then four in one batch process, two at
	 * a time: two at once, then two after them. */
	cli = it_session();
	r = it_hutch("up", cli, "--image", image, NULL);
	up_status = r.status;
	it_result_free(&r);
	r = it_hutch("exec", cli, "--", "sh", "-c",
		     "id -u; id -g; id -un; stat -c %u:%g /workspace", NULL);
	snprintf(text, sizeof(text), "%d|%d|%s", up_status, r.status, r.out);
	it_result_free(&r);

	cr_assert_not_null(mkdtemp(dir));
	snprintf(jobs, sizeof(jobs), "%s/jobs.jsonl", dir);
	f = fopen(jobs, "w");
	cr_assert_not_null(f);
	for (int i = 0; i < 4; i++)
		fprintf(f,
			"{\"session\":\"%s\",\"command\":[\"sh\",\"-c\",\"id -u; id -g\"]}\n",
			it_session());
	cr_assert_eq(fclose(f), 0);
	r = it_hutch("batch", jobs, "--image", image, "--parallel", "2", NULL);
	unlink(jobs);
	rmdir(dir);

	/* The image goes before anything is judged; the sessions made from
	 * it are removed (the batch's by the batch) first. */
	{
		it_result rm = it_hutch("rm", "--force", cli, NULL);

		it_result_free(&rm);
		snprintf(path, sizeof(path), "/images/%s?force=1", image);
		status = it_api("DELETE", path, NULL, NULL);
	}
	cr_assert_eq(status, 200, "remove image %s: HTTP %ld", image, status);

	cr_assert_str_eq(text, "0|0|1500\n1501\nsandbox\n1500:1501\n",
			 "the CLI session: %s", text);
	IT_ASSERT_EXIT(r, 0, "hutch batch --image (sandbox 1500:1501)");
	cr_assert_eq(it_count_lines(r.out, r.out_len), 4, "batch results: %s",
		     r.out);
	for (const char *line = r.out; line && *line;
	     line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
		size_t n = strcspn(line, "\n");

		j = it_json(line, n);
		cr_assert_str_eq(json_object_get_string(jget(j, "stdout")),
				 "1500\n1501\n", "a batch session: %.*s",
				 (int)n, line);
		json_object_put(j);
	}
	it_result_free(&r);
}
