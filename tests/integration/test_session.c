/*
 * test_session.c - sessions' life cycle against a real engine
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <json-c/json.h>

#include "harness.h"

#define RACERS 8

/* 1. eight processes create one new session at the same moment */
IT_TEST(session, concurrent_create_one_container)
{
	const char *s = it_session();
	const char *args[] = { "exec", s, "--", "true", NULL };
	it_proc p[RACERS];
	int gate[2];
	it_opts o = { .gate = gate };

	cr_assert_eq(it_count_containers(s), 0);
	cr_assert_eq(pipe2(gate, O_CLOEXEC), 0, "pipe: %s", strerror(errno));
	for (int i = 0; i < RACERS; i++)
		it_spawn(&p[i], &o, args);
	close(gate[1]); /* go */
	for (int i = 0; i < RACERS; i++) {
		it_result r = it_wait(&p[i]);
		char what[64];

		snprintf(what, sizeof(what), "racer %d of %d", i + 1, RACERS);
		IT_ASSERT_EXIT(r, 0, what);
		it_result_free(&r);
	}
	close(gate[0]);
	cr_assert_eq(it_count_containers(s), 1,
		     "%d containers carry the session's label",
		     it_count_containers(s));
	/* The workspace volume and the system volume (/.hutch). */
	cr_assert_eq(it_count_volumes(s), 2,
		     "%d volumes carry the session's label",
		     it_count_volumes(s));
	cr_assert_eq(it_container_running(s), 1);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f, "%s: %s", path, strerror(errno));
	cr_assert_eq(fputs(text, f) >= 0 && fclose(f) == 0, 1, "writing %s",
		     path);
}

static void expect_file(const char *path, const char *text)
{
	char buf[256];
	FILE *f = fopen(path, "r");
	size_t n;

	cr_assert_not_null(f, "%s: %s", path, strerror(errno));
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	cr_assert_str_eq(buf, text, "%s holds '%s'", path, buf);
}

/* 2. a session on a host directory */
IT_TEST(session, up_with_host_workspace)
{
	const char *s = it_session();
	char tmpl[] = "/tmp/hutch-it-ws-XXXXXX", dir[PATH_MAX],
	     host_file[PATH_MAX + 32], ctr_file[PATH_MAX + 32], container[96];
	json_object *list, *mine = NULL, *v;
	it_result r;

	cr_assert_not_null(mkdtemp(tmpl), "mkdtemp: %s", strerror(errno));
	/* A session runs as its bind-mounted workspace's owner, and refuses
	 * root's (test_lockdown.c): the directory is given to 1000:1000. */
	cr_assert_eq(chown(tmpl, 1000, 1000), 0, "chown: %s", strerror(errno));
	cr_assert_not_null(realpath(tmpl, dir));
	snprintf(host_file, sizeof(host_file), "%s/from-host.txt", dir);
	snprintf(ctr_file, sizeof(ctr_file), "%s/from-container.txt", dir);
	snprintf(container, sizeof(container), "hutch-%s", s);
	write_file(host_file, "hello from the host\n");

	r = it_hutch("up", s, "--workspace", tmpl, "--env", "A=1", NULL);
	IT_ASSERT_EXIT(r, 0, "hutch up S --workspace DIR --env A=1");
	cr_assert_not_null(strstr(r.out, s), "%s", r.out);
	it_result_free(&r);
	cr_assert_eq(it_container_running(s), 1);

	r = it_hutch("exec", s, "--", "cat", "/workspace/from-host.txt", NULL);
	IT_ASSERT_EXIT(r, 0, "reading the host's file in the container");
	cr_assert_str_eq(r.out, "hello from the host\n");
	it_result_free(&r);

	r = it_hutch(
		"sh", s,
		"echo hello from the container > /workspace/from-container.txt",
		NULL);
	IT_ASSERT_EXIT(r, 0, "writing a file in the container");
	it_result_free(&r);
	expect_file(ctr_file, "hello from the container\n");

	r = it_hutch("exec", s, "--", "sh", "-c", "echo $A", NULL);
	IT_ASSERT_EXIT(r, 0, "hutch exec S -- sh -c 'echo $A'");
	cr_assert_str_eq(r.out, "1\n");
	it_result_free(&r);

	r = it_hutch("sessions", "--json", NULL);
	IT_ASSERT_EXIT(r, 0, "hutch sessions --json");
	list = it_json(r.out, r.out_len);
	cr_assert(json_object_is_type(list, json_type_array), "%s", r.out);
	for (size_t i = 0; i < json_object_array_length(list); i++) {
		json_object *e = json_object_array_get_idx(list, i);

		if (json_object_object_get_ex(e, "name", &v) &&
		    strcmp(json_object_get_string(v), s) == 0) {
			cr_assert_null(mine, "session %s listed twice", s);
			mine = e;
		}
	}
	cr_assert_not_null(mine, "hutch sessions --json does not list %s: %s",
			   s, r.out);
	v = it_json_get(mine, "workspace");
	cr_assert_str_eq(json_object_get_string(v), dir, "%s",
			 json_object_to_json_string(mine));
	v = it_json_get(mine, "state");
	cr_assert_str_eq(json_object_get_string(v), "running");
	v = it_json_get(mine, "container");
	cr_assert_str_eq(json_object_get_string(v), container);
	json_object_put(list);
	it_result_free(&r);

	r = it_hutch("sessions", "--names", NULL);
	IT_ASSERT_EXIT(r, 0, "hutch sessions --names");
	{
		char line[96];

		snprintf(line, sizeof(line), "\n%s\n", s);
		cr_assert(strncmp(r.out, line + 1, strlen(line + 1)) == 0 ||
				  strstr(r.out, line),
			  "hutch sessions --names does not list %s:\n%s", s,
			  r.out);
	}
	it_result_free(&r);

	/* Removed from outside, the container comes back on the same
	 * directory with the same environment. */
	it_container_remove(s);
	r = it_hutch("exec", s, "--", "sh", "-c",
		     "echo $A; cat /workspace/from-host.txt", NULL);
	IT_ASSERT_EXIT(r, 0,
		       "the first command after the container was removed");
	cr_assert_str_eq(r.out, "1\nhello from the host\n");
	it_result_free(&r);

	r = it_hutch("rm", s, NULL);
	IT_ASSERT_EXIT(r, 0, "hutch rm S");
	it_result_free(&r);
	cr_assert_eq(it_count_containers(s), 0, "hutch rm left the container");
	cr_assert_eq(it_count_volumes(s), 0, "hutch rm left the volume");
	cr_assert_eq(it_container_running(s), -1);

	/* The host's directory and files are untouched. */
	expect_file(host_file, "hello from the host\n");
	expect_file(ctr_file, "hello from the container\n");
	cr_assert_eq(unlink(host_file), 0);
	cr_assert_eq(unlink(ctr_file), 0);
	cr_assert_eq(rmdir(dir), 0,
		     "rmdir %s: %s (more in it than the test put?)", dir,
		     strerror(errno));
}

/* 3. a stopped container is started again, not replaced */
IT_TEST(session, stopped_container_restarted)
{
	const char *s = it_session();
	char *id, *id2;
	it_result r;

	/* In the container's own filesystem, not the workspace: only the
	 * same container still has it. */
	r = it_hutch("sh", s, "echo same > /tmp/marker", NULL);
	IT_ASSERT_EXIT(r, 0, "writing /tmp/marker");
	it_result_free(&r);
	id = it_container_id(s);
	cr_assert_not_null(id);

	it_container_stop(s);
	cr_assert_eq(it_container_running(s), 0,
		     "the container still runs after a stop");

	r = it_hutch("exec", s, "--", "cat", "/tmp/marker", NULL);
	IT_ASSERT_EXIT(r, 0, "the first command after a stop from outside");
	cr_assert_str_eq(r.out, "same\n");
	it_result_free(&r);
	cr_assert_eq(it_container_running(s), 1);
	id2 = it_container_id(s);
	cr_assert_not_null(id2);
	cr_assert_str_eq(id, id2,
			 "the stopped container was replaced, not started");
	cr_assert_eq(it_count_containers(s), 1);
	free(id);
	free(id2);
}

/* 4. removing a session that does not exist */
IT_TEST(session, rm_missing)
{
	const char *a = it_session(), *b = it_session();
	it_result r;

	r = it_hutch("rm", "--force", a, NULL);
	IT_ASSERT_EXIT(r, 0, "hutch rm --force nosuch");
	cr_assert_eq(r.err_len, 0, "stderr: %s", r.err);
	it_result_free(&r);

	r = it_hutch("rm", "--force", a, b, NULL);
	IT_ASSERT_EXIT(r, 0, "hutch rm --force nosuch1 nosuch2");
	it_result_free(&r);

	r = it_hutch("rm", a, NULL);
	IT_ASSERT_EXIT(r, 125, "hutch rm nosuch");
	cr_assert_eq(it_count_lines(r.err, r.err_len), 1,
		     "stderr is not one line:\n%s", r.err);
	cr_assert_not_null(strstr(r.err, a),
			   "the message does not name the session: %s", r.err);
	it_result_free(&r);
}

/* A first `up` that fails, and the session's state after it: nothing of
 * it on the engine, and the next `up` of that name works. */
static void failed_up_leaves_nothing(const char *s, const char *opt,
				     const char *val, const char *says)
{
	const char *at;
	it_result r;

	r = it_hutch("up", s, opt, val, NULL);
	IT_ASSERT_EXIT(r, 125, "hutch up S with a setting that cannot work");
	cr_assert_eq(it_count_lines(r.err, r.err_len), 1,
		     "stderr is not one line:\n%s", r.err);
	cr_assert_not_null(strstr(r.err, says), "%s", r.err);
	at = strstr(r.err, s);
	cr_assert_not_null(at, "the message does not name the session: %s",
			   r.err);
	cr_assert_null(strstr(at + strlen(s), s),
		       "the session is named twice: %s", r.err);
	it_result_free(&r);
	cr_assert_eq(it_count_containers(s), 0, "a container of %s is left", s);
	cr_assert_eq(it_count_volumes(s), 0, "a volume of %s is left", s);

	r = it_hutch("up", s, NULL);
	IT_ASSERT_EXIT(r, 0, "hutch up S with the defaults after a failed up");
	it_result_free(&r);
	r = it_hutch("exec", s, "--", "id", "-u", NULL);
	IT_ASSERT_EXIT(r, 0, "hutch exec S -- id -u");
	cr_assert_str_eq(r.out, "1000\n");
	it_result_free(&r);
}

/* 4b. a first `up` that fails leaves no record behind; a volume of the
 * session's name that hutch did not make is refused and kept */
IT_TEST(session, failed_first_up_leaves_nothing)
{
	const char *a = it_session(), *b = it_session(), *c = it_session();
	char path[160], body[160];
	it_opts quick = { .limit = 60 };
	it_result r;
	long st;

	failed_up_leaves_nothing(a, "--image", "hutch-no-such-image:latest",
				 "is not on the engine");
	failed_up_leaves_nothing(b, "--user", "ghost", "ghost");

	/* hutch_C (the session's system volume) made by someone else */
	snprintf(body, sizeof(body), "{\"Name\": \"hutch_%s\"}", c);
	st = it_api_json("POST", "/volumes/create", body, NULL, NULL);
	cr_assert_eq(st, 201, "creating volume hutch_%s: HTTP %ld", c, st);
	r = it_hutch_o(&quick, "up", c, NULL);
	IT_ASSERT_EXIT(r, 125, "hutch up S when hutch_S is not hutch's");
	cr_assert_not_null(strstr(r.err, "not made by hutch"), "%s", r.err);
	it_result_free(&r);
	snprintf(path, sizeof(path), "/volumes/hutch-%s", c);
	cr_assert_eq(it_api("GET", path, NULL, NULL), 404,
		     "the workspace volume it made is left");
	cr_assert_eq(it_count_containers(c), 0);
	snprintf(path, sizeof(path), "/volumes/hutch_%s", c);
	cr_assert_eq(it_api("GET", path, NULL, NULL), 200,
		     "the other volume was removed");
	cr_assert_eq(it_api("DELETE", path, NULL, NULL), 204);
}

/* 5. invalid names are refused before anything is made */
IT_TEST(session, invalid_names_refused)
{
	char long_name[65];
	const char *names[] = { "../x", "", long_name, "-x" };

	memset(long_name, 'a', 64);
	long_name[64] = '\0';

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		const char *n = names[i];
		const char *cmds[][7] = {
			{ "exec", "--", n, "true", NULL },
			{ "exec", n, "--", "true", NULL },
			{ "sh", "--", n, "true", NULL },
			{ "up", "--", n, NULL },
			{ "rm", "--", n, NULL },
			{ "exec", "--json", "--", n, "true", NULL },
		};

		for (size_t k = 0; k < sizeof(cmds) / sizeof(cmds[0]); k++) {
			char what[160];
			it_result r;
			int json = strcmp(cmds[k][1], "--json") == 0;

			if (n[0] == '-' && strcmp(cmds[k][1], "--") != 0 &&
			    !json)
				continue; /* "-x" there is an option, not a name */
			snprintf(what, sizeof(what),
				 "hutch %s %s %s ... with name '%s'",
				 cmds[k][0], cmds[k][1], cmds[k][2], n);
			r = it_hutch_v(NULL, cmds[k]);
			IT_ASSERT_EXIT(r, 125, what);
			if (json) {
				json_object *j = it_json(r.out, r.out_len);

				cr_assert_str_eq(
					json_object_get_string(
						it_json_get(j, "status")),
					"error", "%s: %s", what, r.out);
				cr_assert_not_null(
					strstr(json_object_get_string(
						       it_json_get(j, "error")),
					       "invalid session name"),
					"%s: %s", what, r.out);
				json_object_put(j);
			} else {
				cr_assert_eq(it_count_lines(r.err, r.err_len),
					     1,
					     "%s: stderr is not one line:\n%s",
					     what, r.err);
				cr_assert(strncmp(r.err, "hutch: ", 7) == 0,
					  "%s: %s", what, r.err);
				cr_assert_not_null(
					strstr(r.err, "invalid session name"),
					"%s: %s", what, r.err);
				cr_assert_eq(r.out_len, 0, "%s: stdout: %s",
					     what, r.out);
			}
			it_result_free(&r);
		}
	}

	/* Nothing named after them, nothing labelled with them. */
	{
		json_object *all = it_all_names();

		for (size_t k = 0; k < json_object_array_length(all); k++) {
			const char *have = json_object_get_string(
				json_object_array_get_idx(all, k));

			for (size_t i = 0; i < sizeof(names) / sizeof(names[0]);
			     i++) {
				char cname[96];

				snprintf(cname, sizeof(cname), "hutch-%s",
					 names[i]);
				cr_assert_str_neq(have, cname,
						  "'%s' exists on the engine",
						  cname);
				cr_assert_str_neq(
					have, names[i],
					"something carries session label '%s'",
					names[i]);
			}
		}
		json_object_put(all);
	}
}

/* 6. nothing of this run is left behind.  Criterion starts suites in name
 * order, so this suite starts last, after zz_scale; it waits for every test
 * still running beside it (the 64-session test takes minutes on Podman),
 * then looks for any container or volume of this run.  The others do not
 * wait for it (it_wait_other_tests() skips it). */
static void no_leftovers(void);

Test(zzz_last, no_leftovers_of_this_run, .fini = it_fini, .timeout = 590.0)
{
	it_begin();
	it_not_waited_for();
	no_leftovers();
	it_finish();
}

static void no_leftovers(void)
{
	const char *prefix = it_run_prefix();
	char cprefix[64], sprefix[64];
	int still, found = 0;
	json_object *all, *left = json_object_new_array();

	/* "No other test runs" must hold for a moment: a worker that was
	 * just forked has not made its marker yet. */
	do {
		still = it_wait_other_tests(560);
		cr_assert_eq(still, 0,
			     "%d tests of this run still run after 560 s",
			     still);
		it_sleep(1.0);
	} while (it_wait_other_tests(0) != 0);

	snprintf(cprefix, sizeof(cprefix), "hutch-%s", prefix);
	snprintf(sprefix, sizeof(sprefix), "hutch_%s", prefix);
	all = it_all_names();
	for (size_t k = 0; k < json_object_array_length(all); k++) {
		const char *have = json_object_get_string(
			json_object_array_get_idx(all, k));

		if (strncmp(have, prefix, strlen(prefix)) == 0 ||
		    strncmp(have, cprefix, strlen(cprefix)) == 0 ||
		    strncmp(have, sprefix, strlen(sprefix)) == 0) {
			json_object_array_add(left,
					      json_object_new_string(have));
			found++;
		}
	}
	json_object_put(all);
	/* Clean up what leaked before failing, so the next run starts clean. */
	for (size_t k = 0; found && k < json_object_array_length(left); k++) {
		const char *name = json_object_get_string(
			json_object_array_get_idx(left, k));

		if (strncmp(name, "hutch-", 6) == 0 ||
		    strncmp(name, "hutch_", 6) == 0)
			name += 6;
		it_force_remove(name);
	}
	cr_assert_eq(found, 0, "left behind by this run: %s",
		     json_object_to_json_string(left));
	json_object_put(left);
}
