/*
 * test_fleet.c - hutch with Docker and Podman side by side (--engine given
 * twice): each session lives on exactly one of them and is found there
 * again by later calls, whatever order the engines are named in; an engine
 * that does not answer gets no session; a session that exists on both is
 * refused, not guessed.
 *
 * Run by fleet.test with HUTCH_TEST_ENGINE set to Docker (the harness's
 * own checks and cleanup) and HUTCH_TEST_FLEET_OTHER to Podman.  Which
 * engine a new session goes to depends on the load of both, which the
 * other test programs running at the same time change: placement by load
 * is tested against fake engines (tests/unit/test_fake_fleet.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "harness.h"

#define MAX_NAMES 16

static const char *names[MAX_NAMES];
static size_t nnames;

static const char *docker(void)
{
	return it_engine();
}

static const char *other(void)
{
	const char *u = getenv("HUTCH_TEST_FLEET_OTHER");

	cr_assert(u && *u, "HUTCH_TEST_FLEET_OTHER must name the second engine "
			   "(contrib/engines.sh env: HUTCH_TEST_PODMAN)");
	return u;
}

static const char *session(void)
{
	const char *s = it_session();

	cr_assert_lt(nnames, MAX_NAMES);
	names[nnames++] = s;
	return s;
}

/* `hutch --engine A --engine B ARGS...`, engines in the order asked. */
static it_result fleet_v(int podman_first, const char *const *args)
{
	const it_opts o = { .no_engine = 1 };
	const char *argv[32];
	size_t n = 0;

	argv[n++] = "--engine";
	argv[n++] = podman_first ? other() : docker();
	argv[n++] = "--engine";
	argv[n++] = podman_first ? docker() : other();
	for (size_t i = 0; args[i]; i++) {
		cr_assert_lt(n, 31);
		argv[n++] = args[i];
	}
	argv[n] = NULL;
	return it_hutch_v(&o, argv);
}

#define FLEET(first, ...) \
	fleet_v((first), (const char *const[]){ __VA_ARGS__, NULL })

/* Containers of session `s` on Docker (0) or Podman (1). */
static int count_on(int podman, const char *s)
{
	int n;

	if (!podman)
		return it_count_containers(s);
	setenv("HUTCH_TEST_ENGINE", other(), 1);
	n = it_count_containers(s);
	setenv("HUTCH_TEST_ENGINE", getenv("HUTCH_TEST_FLEET_FIRST"), 1);
	return n;
}

static int volumes_on(int podman, const char *s)
{
	int n;

	if (!podman)
		return it_count_volumes(s);
	setenv("HUTCH_TEST_ENGINE", other(), 1);
	n = it_count_volumes(s);
	setenv("HUTCH_TEST_ENGINE", getenv("HUTCH_TEST_FLEET_FIRST"), 1);
	return n;
}

/* Which engine holds `s`: 0 Docker, 1 Podman; asserts exactly one does. */
static int home(const char *s)
{
	int d = count_on(0, s), p = count_on(1, s);

	cr_assert_eq(d + p, 1,
		     "session %s: %d containers on Docker, %d on Podman", s, d,
		     p);
	return p;
}

static void begin(void)
{
	setenv("HUTCH_TEST_FLEET_FIRST", it_engine(), 1);
	nnames = 0;
	it_begin();
}

/* Remove this test's sessions from both engines; with `check`, assert
 * nothing of them is left on either. */
static void remove_all(int check)
{
	for (size_t i = 0; i < nnames; i++) {
		it_result r;

		r = it_hutch_o(&(it_opts){ .no_engine = 1 }, "--engine",
			       other(), "rm", "--force", names[i], NULL);
		if (check)
			IT_ASSERT_EXIT(r, 0,
				       "hutch --engine PODMAN rm --force");
		it_result_free(&r);
		if (check) {
			cr_assert_eq(count_on(1, names[i]), 0,
				     "%s left on Podman", names[i]);
			cr_assert_eq(volumes_on(1, names[i]), 0,
				     "volume of %s left on Podman", names[i]);
		}
	}
}

static void finish(void)
{
	remove_all(1);
	it_finish(); /* the same on Docker */
}

static void fini(void)
{
	if (getenv("HUTCH_TEST_FLEET_OTHER"))
		remove_all(0);
	it_fini();
}

/* 1. sessions made through the fleet: each on one engine, found again in
 * either order, listed with their engine, removed where they are */
Test(fleet, each_session_lives_on_one_engine_and_is_found_again, .fini = fini,
     .timeout = 300)
{
	const char *s[4];
	char cmd[128];
	it_result r;
	json_object *list;
	int seen[4] = { 0 };

	begin();
	for (int i = 0; i < 4; i++) {
		s[i] = session();
		snprintf(cmd, sizeof(cmd), "echo %s > /workspace/who", s[i]);
		/* Made by exec, lazily: the engine is chosen on first use. */
		r = FLEET(i % 2, "sh", s[i], cmd);
		IT_ASSERT_EXIT(r, 0, "the first command of a new session");
		cr_assert_eq(r.err_len, 0, "stderr: %s", r.err);
		it_result_free(&r);
		(void)home(s[i]);
	}
	/* Later calls, with the engines named in both orders, reach the
	 * container that holds the file. */
	for (int i = 0; i < 4; i++) {
		for (int first = 0; first < 2; first++) {
			char want[96];

			r = FLEET(first, "exec", s[i], "--", "cat",
				  "/workspace/who");
			IT_ASSERT_EXIT(r, 0, "cat in the session");
			snprintf(want, sizeof(want), "%s\n", s[i]);
			cr_assert_str_eq(r.out, want);
			it_result_free(&r);
		}
		(void)home(s[i]); /* and no second container appeared */
	}
	/* The file tools and up find them too. */
	r = FLEET(1, "read", s[0], "who");
	IT_ASSERT_EXIT(r, 0, "hutch read through the fleet");
	it_result_free(&r);
	r = FLEET(0, "up", s[1], "--json");
	IT_ASSERT_EXIT(r, 0, "hutch up of an existing session");
	{
		json_object *j = it_json(r.out, r.out_len);
		const char *engine =
			json_object_get_string(it_json_get(j, "engine"));

		cr_assert_eq(
			json_object_get_boolean(it_json_get(j, "created_now")),
			0);
		cr_assert_str_eq(engine, home(s[1]) ? other() : docker());
		json_object_put(j);
	}
	it_result_free(&r);

	/* `sessions` lists both engines' sessions, each with its engine. */
	r = FLEET(0, "sessions", "--json");
	IT_ASSERT_EXIT(r, 0, "hutch sessions over both engines");
	list = it_json(r.out, r.out_len);
	for (size_t k = 0; k < json_object_array_length(list); k++) {
		json_object *o = json_object_array_get_idx(list, k);
		const char *name =
			json_object_get_string(it_json_get(o, "name"));

		for (int i = 0; i < 4; i++) {
			if (strcmp(name, s[i]) != 0)
				continue;
			seen[i]++;
			cr_assert_str_eq(json_object_get_string(
						 it_json_get(o, "engine")),
					 home(s[i]) ? other() : docker(),
					 "engine of %s", s[i]);
		}
	}
	json_object_put(list);
	it_result_free(&r);
	for (int i = 0; i < 4; i++)
		cr_assert_eq(seen[i], 1, "%s listed %d times", s[i], seen[i]);

	/* gc looks at both engines: each session, used a moment ago, is kept
	 * and reported with the engine it is on. */
	{
		char match[96];
		json_object *doc, *kept;
		int kept_seen[4] = { 0 };

		snprintf(match, sizeof(match), "%s%ld-*", it_run_prefix(),
			 (long)getpid());
		r = FLEET(1, "gc", "--idle", "1h", "--match", match, "--json");
		IT_ASSERT_EXIT(r, 0, "hutch gc over both engines");
		doc = it_json(r.out, r.out_len);
		cr_assert_eq(
			json_object_array_length(it_json_get(doc, "removed")),
			0, "%s", r.out);
		kept = it_json_get(doc, "kept");
		for (size_t k = 0; k < json_object_array_length(kept); k++) {
			json_object *o = json_object_array_get_idx(kept, k);
			const char *name =
				json_object_get_string(it_json_get(o, "name"));

			for (int i = 0; i < 4; i++) {
				if (strcmp(name, s[i]) != 0)
					continue;
				kept_seen[i]++;
				cr_assert_str_eq(
					json_object_get_string(
						it_json_get(o, "engine")),
					home(s[i]) ? other() : docker(),
					"engine of %s", s[i]);
			}
		}
		for (int i = 0; i < 4; i++)
			cr_assert_eq(kept_seen[i], 1,
				     "gc reported %s %d times: %s", s[i],
				     kept_seen[i], r.out);
		json_object_put(doc);
		it_result_free(&r);
	}

	/* rm through the fleet removes each where it lives. */
	r = FLEET(1, "rm", s[0], s[1], s[2], s[3]);
	IT_ASSERT_EXIT(r, 0, "hutch rm through the fleet");
	it_result_free(&r);
	for (int i = 0; i < 4; i++) {
		cr_assert_eq(count_on(0, s[i]) + count_on(1, s[i]), 0,
			     "%s still there", s[i]);
		cr_assert_eq(volumes_on(0, s[i]) + volumes_on(1, s[i]), 0,
			     "volume of %s left", s[i]);
	}
	r = FLEET(0, "rm", s[0]);
	cr_assert_eq(r.status, 125, "rm of a session that is nowhere: %d",
		     r.status);
	cr_assert_eq(it_count_lines(r.err, r.err_len), 1, "%s", r.err);
	it_result_free(&r);
	finish();
}

/* 2. an engine that does not answer gets no session; the others go on */
Test(fleet, an_engine_that_does_not_answer_gets_no_session, .fini = fini,
     .timeout = 300)
{
	const it_opts o = { .no_engine = 1 };
	const char *s;
	it_result r;

	begin();
	s = session();
	r = it_hutch_o(&o, "--engine", "unix:///nonexistent/hutch-fleet.sock",
		       "--engine", docker(), "--engine", other(), "exec", s,
		       "--", "echo", "ran", NULL);
	IT_ASSERT_EXIT(r, 0, "exec with one engine down");
	cr_assert_str_eq(r.out, "ran\n");
	cr_assert(strstr(r.err, "hutch-fleet.sock does not answer"),
		  "no warning: %s", r.err);
	cr_assert_eq(it_count_lines(r.err, r.err_len), 1, "%s", r.err);
	it_result_free(&r);
	(void)home(s);
	/* Found again while the engine is still down, without a warning:
	 * nothing is placed. */
	r = it_hutch_o(&o, "--engine", other(), "--engine",
		       "unix:///nonexistent/hutch-fleet.sock", "--engine",
		       docker(), "exec", s, "--", "echo", "again", NULL);
	IT_ASSERT_EXIT(r, 0, "exec of the session with one engine down");
	cr_assert_str_eq(r.out, "again\n");
	cr_assert_eq(r.err_len, 0, "%s", r.err);
	it_result_free(&r);
	/* No engine at all answers: one line, hutch's failure status. */
	r = it_hutch_o(&o, "--engine", "unix:///nonexistent/a.sock", "--engine",
		       "unix:///nonexistent/b.sock", "exec", s, "--", "true",
		       NULL);
	cr_assert_eq(r.status, 125, "exit %d", r.status);
	cr_assert_eq(it_count_lines(r.err, r.err_len), 1, "%s", r.err);
	it_result_free(&r);
	finish();
}

/* 3. the same name on both engines (made by naming each alone) is
 * refused with both named; removing one settles it */
Test(fleet, a_session_on_both_engines_is_refused, .fini = fini, .timeout = 300)
{
	const it_opts o = { .no_engine = 1 };
	const char *s;
	it_result r;

	begin();
	s = session();
	r = it_hutch_o(&o, "--engine", docker(), "up", s, NULL);
	IT_ASSERT_EXIT(r, 0, "up on Docker alone");
	it_result_free(&r);
	r = it_hutch_o(&o, "--engine", other(), "up", s, NULL);
	IT_ASSERT_EXIT(r, 0, "up on Podman alone");
	it_result_free(&r);
	r = FLEET(0, "exec", s, "--", "true");
	cr_assert_eq(r.status, 125, "exit %d, stderr %s", r.status, r.err);
	cr_assert_eq(it_count_lines(r.err, r.err_len), 1, "%s", r.err);
	cr_assert(strstr(r.err, "two engines") && strstr(r.err, docker()) &&
			  strstr(r.err, other()),
		  "%s", r.err);
	it_result_free(&r);
	/* Nothing was created or removed by the refusal. */
	cr_assert_eq(count_on(0, s), 1);
	cr_assert_eq(count_on(1, s), 1);
	r = it_hutch_o(&o, "--engine", other(), "rm", s, NULL);
	IT_ASSERT_EXIT(r, 0, "rm on Podman alone");
	it_result_free(&r);
	r = FLEET(1, "exec", s, "--", "echo", "one");
	IT_ASSERT_EXIT(r, 0, "exec once the session is on one engine");
	it_result_free(&r);
	cr_assert_eq(home(s), 0, "the session moved");
	finish();
}

/* 4. a batch over both engines: every job runs, each new session on one
 * engine, all removed at the end */
Test(fleet, batch_over_both_engines, .fini = fini, .timeout = 300)
{
	char path[] = "/tmp/hutch-it-fleet-XXXXXX";
	const char *s[6];
	FILE *f;
	int fd;
	it_result r;

	begin();
	fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	f = fdopen(fd, "w");
	cr_assert_not_null(f);
	for (int i = 0; i < 6; i++) {
		s[i] = session();
		fprintf(f, "{\"session\":\"%s\",\"command\":\"echo %d\"}\n",
			s[i], i);
	}
	fclose(f);
	r = FLEET(0, "batch", path, "--parallel", "6", "--keep");
	IT_ASSERT_EXIT(r, 0, "hutch batch --keep over two engines");
	cr_assert_eq(it_count_lines(r.out, r.out_len), 6, "%s", r.out);
	it_result_free(&r);
	for (int i = 0; i < 6; i++)
		(void)home(s[i]);
	/* Without --keep, what the batch made goes, from both engines. */
	r = FLEET(0, "rm", s[0], s[1], s[2], s[3], s[4], s[5]);
	IT_ASSERT_EXIT(r, 0, "hutch rm of the kept sessions");
	it_result_free(&r);
	r = FLEET(1, "batch", path, "--parallel", "6");
	unlink(path);
	IT_ASSERT_EXIT(r, 0, "hutch batch over two engines");
	cr_assert_eq(it_count_lines(r.out, r.out_len), 6, "%s", r.out);
	it_result_free(&r);
	for (int i = 0; i < 6; i++) {
		cr_assert_eq(count_on(0, s[i]) + count_on(1, s[i]), 0,
			     "%s left", s[i]);
		cr_assert_eq(volumes_on(0, s[i]) + volumes_on(1, s[i]), 0,
			     "volume of %s left", s[i]);
	}
	finish();
}
