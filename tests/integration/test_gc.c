/*
 * test_gc.c - hutch gc and the last-used record, against a real engine
 *
 * Other runs use the same engines at the same time: every gc here runs
 * with --match over this test's own sessions only ("it-RUNNER-PID-*", see
 * it_session()), never without.
 *
 * Idleness is made, not waited for: a command in the session sets the
 * record's time two hours back (the agent updates the record when a
 * command starts, before the command runs), so nothing depends on how long
 * anything takes.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <json-c/json.h>

#include "harness.h"

/* The glob that covers the calling test's sessions and nobody else's. */
static const char *own_match(void)
{
	static char m[128];

	snprintf(m, sizeof(m), "%s%ld-*", it_run_prefix(), (long)getpid());
	return m;
}

static void up(const char *s, const char *extra1, const char *extra2)
{
	it_result r = extra2 ? it_hutch("up", s, extra1, extra2, NULL) :
		      extra1 ? it_hutch("up", s, extra1, NULL) :
			       it_hutch("up", s, NULL);

	IT_ASSERT_EXIT(r, 0, "hutch up");
	it_result_free(&r);
}

/* Set the record two hours back, from inside (busybox touch). */
static void backdate(const char *s)
{
	it_result r = it_hutch(
		"exec", s, "--", "sh", "-c",
		"touch -d @$(( $(date +%s) - 7200 )) /.hutch/use/last-used",
		NULL);

	IT_ASSERT_EXIT(r, 0, "backdate the last-used record");
	it_result_free(&r);
}

/* `hutch gc --idle IDLE --match OWN --json [--dry-run]`: the document. */
static json_object *gc_json(const char *idle, int dry_run)
{
	it_result r = dry_run ? it_hutch("gc", "--idle", idle, "--match",
					 own_match(), "--json", "--dry-run",
					 NULL) :
				it_hutch("gc", "--idle", idle, "--match",
					 own_match(), "--json", NULL);
	json_object *j;

	IT_ASSERT_EXIT(r, 0, "hutch gc --json");
	j = it_json(r.out, r.out_len);
	it_result_free(&r);
	return j;
}

/* 1 when the array `key` of a gc document names session `s`. */
static int listed(json_object *doc, const char *key, const char *s)
{
	json_object *arr = it_json_get(doc, key);

	for (size_t i = 0; i < json_object_array_length(arr); i++) {
		json_object *e = json_object_array_get_idx(arr, i);

		if (strcmp(json_object_get_string(it_json_get(e, "name")), s) ==
		    0)
			return 1;
	}
	return 0;
}

static size_t count(json_object *doc, const char *key)
{
	return json_object_array_length(it_json_get(doc, key));
}

/* A session the dry run would remove now, and keeps after `what` used it. */
static void assert_idle(const char *s, const char *what)
{
	json_object *j = gc_json("1h", 1);

	cr_assert(listed(j, "would_remove", s),
		  "%s: not idle after the backdate", what);
	json_object_put(j);
}

static void assert_used(const char *s, const char *what)
{
	json_object *j = gc_json("1h", 1);

	cr_assert(listed(j, "kept", s), "%s did not count as a use: %s", what,
		  json_object_to_json_string(j));
	json_object_put(j);
}

/* 1. An idle session goes, with its container and both volumes; a recent
 * one stays; --dry-run removes nothing. */
IT_TEST(gc, removes_idle_keeps_recent)
{
	const char *a = it_session(), *b = it_session();
	json_object *j;
	it_result r;

	up(a, NULL, NULL);
	up(b, NULL, NULL);
	backdate(a);

	r = it_hutch("gc", "--idle", "1h", "--match", own_match(), "--dry-run",
		     NULL);
	IT_ASSERT_EXIT(r, 0, "hutch gc --dry-run");
	cr_assert(strstr(r.out, "would remove session ") && strstr(r.out, a),
		  "dry run does not name %s:\n%s", a, r.out);
	cr_assert_null(strstr(r.out, b),
		       "dry run names the recent session:\n%s", r.out);
	it_result_free(&r);
	cr_assert_eq(it_count_containers(a), 1,
		     "--dry-run removed the container");
	cr_assert_eq(it_count_volumes(a), 2, "--dry-run removed a volume");

	j = gc_json("1h", 0);
	cr_assert(listed(j, "removed", a), "idle session not removed: %s",
		  json_object_to_json_string(j));
	cr_assert(listed(j, "kept", b), "recent session not kept: %s",
		  json_object_to_json_string(j));
	cr_assert_eq(count(j, "removed"), 1);
	cr_assert_eq(count(j, "failed"), 0);
	cr_assert_geq(
		json_object_get_int64(it_json_get(
			json_object_array_get_idx(it_json_get(j, "removed"), 0),
			"idle")),
		7200);
	json_object_put(j);
	cr_assert_eq(it_count_containers(a), 0,
		     "the idle session's container is left");
	cr_assert_eq(it_count_volumes(a), 0,
		     "a volume of the idle session is left");
	cr_assert_eq(it_count_containers(b), 1,
		     "the recent session's container went");
	cr_assert_eq(it_count_volumes(b), 2,
		     "a volume of the recent session went");

	/* Text output: one line per removed session. */
	backdate(b);
	r = it_hutch("gc", "--idle", "1h", "--match", own_match(), NULL);
	IT_ASSERT_EXIT(r, 0, "hutch gc");
	cr_assert_eq(it_count_lines(r.out, r.out_len), 1, "%s", r.out);
	cr_assert(strncmp(r.out, "removed session ", 16) == 0 &&
			  strstr(r.out, b) && strstr(r.out, "(idle 2h0m)"),
		  "%s", r.out);
	it_result_free(&r);
	cr_assert_eq(it_count_containers(b), 0);
	cr_assert_eq(it_count_volumes(b), 0);
}

/* 2. A session with a command running is kept however idle it looks,
 * and goes once the command is over. */
IT_TEST(gc, skips_busy)
{
	const char *a = it_session(), *b = it_session();
	const char *args[] = { "exec", b,
			       "--",   "sh",
			       "-c",   "touch /tmp/started; exec sleep 120",
			       NULL };
	json_object *j;
	it_proc p;
	it_result r;
	int started = 0;

	up(a, NULL, NULL);
	up(b, NULL, NULL);
	it_spawn(&p, NULL, args);
	for (int i = 0; i < 300 && !started; i++) {
		r = it_hutch("exec", b, "--", "test", "-e", "/tmp/started",
			     NULL);
		started = !r.timed_out && r.status == 0;
		it_result_free(&r);
		if (!started)
			it_sleep(0.1);
	}
	cr_assert(started, "the background command never started");
	backdate(a);
	backdate(b);

	j = gc_json("1h", 0);
	cr_assert(listed(j, "busy", b), "busy session not skipped: %s",
		  json_object_to_json_string(j));
	cr_assert(listed(j, "removed", a),
		  "idle session beside it not removed: %s",
		  json_object_to_json_string(j));
	json_object_put(j);
	cr_assert_eq(it_container_running(b), 1, "gc stopped the busy session");

	r = it_hutch("gc", "--idle", "1h", "--match", own_match(), "--dry-run",
		     NULL);
	IT_ASSERT_EXIT(r, 0, "hutch gc --dry-run");
	cr_assert(strstr(r.out, "skipped session ") && strstr(r.out, b) &&
			  strstr(r.out, "busy"),
		  "%s", r.out);
	it_result_free(&r);

	/* Stopping hutch stops the command (that is not a use). */
	kill(p.pid, SIGTERM);
	r = it_wait(&p);
	it_result_free(&r);
	for (int i = 0; i < 100 && it_count_containers(b) > 0; i++) {
		j = gc_json("1h", 0);
		json_object_put(j);
		if (it_count_containers(b) > 0)
			it_sleep(0.2);
	}
	cr_assert_eq(it_count_containers(b), 0,
		     "no longer busy, still not removed");
	cr_assert_eq(it_count_volumes(b), 0);
}

/* 3. Stopped sessions: the record is read from a stopped container. */
IT_TEST(gc, stopped_sessions)
{
	const char *a = it_session(), *b = it_session();
	json_object *j;

	up(a, NULL, NULL);
	up(b, NULL, NULL);
	backdate(a);
	it_container_stop(a);
	it_container_stop(b);
	cr_assert_eq(it_container_running(a), 0);

	j = gc_json("1h", 0);
	cr_assert(listed(j, "removed", a),
		  "idle stopped session not removed: %s",
		  json_object_to_json_string(j));
	cr_assert(listed(j, "kept", b), "recent stopped session not kept: %s",
		  json_object_to_json_string(j));
	json_object_put(j);
	cr_assert_eq(it_count_containers(a), 0);
	cr_assert_eq(it_count_volumes(a), 0);
	cr_assert_eq(it_count_containers(b), 1);
}

/* 4. A system volume left without its session goes by its creation
 * time; a workspace volume without its container is a session. */
IT_TEST(gc, leftover_volumes)
{
	const char *a = it_session(), *b = it_session();
	char path[256];
	json_object *j;

	up(a, NULL, NULL);
	up(b, NULL, NULL);
	it_container_remove(a);
	snprintf(path, sizeof(path), "/volumes/hutch-%s", a);
	cr_assert_eq(it_api("DELETE", path, NULL, NULL), 204);
	it_container_remove(b);
	cr_assert_eq(it_count_volumes(a), 1,
		     "the system volume should be left");

	j = gc_json("1h", 0);
	cr_assert(listed(j, "kept", a) && listed(j, "kept", b), "%s",
		  json_object_to_json_string(j));
	json_object_put(j);
	cr_assert_eq(it_count_volumes(a), 1);

	j = gc_json("0", 0);
	cr_assert(listed(j, "removed", a) && listed(j, "removed", b), "%s",
		  json_object_to_json_string(j));
	{
		json_object *arr = it_json_get(j, "removed");

		for (size_t i = 0; i < json_object_array_length(arr); i++) {
			json_object *e = json_object_array_get_idx(arr, i);
			const char *name =
				json_object_get_string(it_json_get(e, "name"));

			cr_assert_str_eq(
				json_object_get_string(it_json_get(e, "kind")),
				strcmp(name, a) == 0 ? "agent-volume" :
						       "session");
		}
	}
	json_object_put(j);
	cr_assert_eq(it_count_volumes(a), 0);
	cr_assert_eq(it_count_volumes(b), 0);
}

/* 5. Bad input is refused with one line, before the engine is asked. */
IT_TEST(gc, refuses_bad_input)
{
	static const char *const bad[] = { "",	  "90",	  "1h30",
					   "-1h", "1.5h", "30m1h",
					   "1x",  "1 h",  "99999999999d" };
	it_result r;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		r = it_hutch("gc", "--idle", bad[i], "--match", own_match(),
			     NULL);
		IT_ASSERT_EXIT(r, 125, bad[i]);
		cr_assert_eq(it_count_lines(r.err, r.err_len), 1, "%s", r.err);
		cr_assert(strncmp(r.err, "hutch: invalid duration '", 25) == 0,
			  "%s", r.err);
		cr_assert_eq(r.out_len, 0);
		it_result_free(&r);
	}
	r = it_hutch("gc", "--match", own_match(), NULL);
	IT_ASSERT_EXIT(r, 125, "gc without --idle");
	cr_assert(strstr(r.err, "usage: hutch gc --idle DURATION"), "%s",
		  r.err);
	it_result_free(&r);
	r = it_hutch("gc", "--idle", "1h", "--match", "it-[", NULL);
	IT_ASSERT_EXIT(r, 125, "gc --match with a bad pattern");
	cr_assert_eq(it_count_lines(r.err, r.err_len), 1, "%s", r.err);
	cr_assert(strstr(r.err, "invalid pattern 'it-['"), "%s", r.err);
	it_result_free(&r);
}

/* 6. The record follows use as root, on a read-only root filesystem, by
 * the file tools and by sync-in and sync-out. */
IT_TEST(gc, record_follows_use)
{
	const char *root = it_session(), *ro = it_session(),
		   *plain = it_session();
	char dir[] = "/tmp/hutch-gc-XXXXXX", file[64];
	it_result r;
	FILE *f;

	up(root, "--user", "root");
	up(ro, "--read-only", NULL);
	up(plain, NULL, NULL);

	backdate(root);
	assert_idle(root, "--user root");
	r = it_hutch("exec", root, "--", "true", NULL);
	IT_ASSERT_EXIT(r, 0, "exec as root");
	it_result_free(&r);
	assert_used(root, "an exec as root");

	backdate(ro);
	assert_idle(ro, "--read-only");
	r = it_hutch("ls", ro, NULL);
	IT_ASSERT_EXIT(r, 0, "ls on a read-only session");
	it_result_free(&r);
	assert_used(ro, "a file tool on a read-only root");

	cr_assert_not_null(mkdtemp(dir));
	snprintf(file, sizeof(file), "%s/x", dir);
	f = fopen(file, "w");
	cr_assert_not_null(f);
	fputs("x\n", f);
	fclose(f);
	backdate(plain);
	assert_idle(plain, "default user");
	r = it_hutch("sync-in", plain, dir, NULL);
	IT_ASSERT_EXIT(r, 0, "sync-in");
	it_result_free(&r);
	assert_used(plain, "sync-in");

	/* The record stays the session user's after a sync: it can set it
	 * back again, so sync-out is tested the same way. */
	backdate(plain);
	assert_idle(plain, "default user after sync-in");
	unlink(file);
	r = it_hutch("sync-out", plain, dir, NULL);
	IT_ASSERT_EXIT(r, 0, "sync-out");
	it_result_free(&r);
	assert_used(plain, "sync-out");
	unlink(file);
	rmdir(dir);
}
