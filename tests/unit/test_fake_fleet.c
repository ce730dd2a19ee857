/*
 * Placing and finding sessions over several engines (hutch/fleet.h),
 * against two fake engines whose sessions and load the tests set: a
 * session is found where it lives whatever the load, a new one goes to the
 * engine running fewer hutch sessions, an engine that does not answer gets
 * none, a session on two engines is an error, and new sessions placed by
 * one fleet spread before their containers exist.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hutch/hutch.h>

#include "fake_engine.h"

/* What one fake engine holds. */
struct world {
	const char *containers[8]; /* session names with a container */
	const char *volumes[8];	   /* session names with a workspace volume */
	int running;		   /* hutch sessions it says are running */
	int fail_lists;		   /* answer the container list with 500 */
};

static struct fake_engine *fe[2];
static struct world w[2];
static hutch_fleet *fleet;

static void teardown(void)
{
	hutch_fleet_free(fleet);
	fleet = NULL;
	for (int i = 0; i < 2; i++) {
		fake_engine_stop(fe[i]);
		fe[i] = NULL;
	}
	memset(w, 0, sizeof(w));
}

TestSuite(fleet, .fini = teardown, .timeout = 60);

static int listed(const char *const *names, const char *name)
{
	for (int i = 0; i < 8 && names[i]; i++)
		if (strcmp(names[i], name) == 0)
			return 1;
	return 0;
}

static fake_action handler(struct fake_conn *c, const struct fake_request *r,
			   void *p)
{
	struct world *wd = p;
	const char *path = r->path;
	char name[128];

	if (strncmp(path, "/v1.41", 6) == 0)
		path += 6;
	if (sscanf(path, "/containers/hutch-%127[^/]/json", name) == 1) {
		if (listed(wd->containers, name))
			fake_send_json(c, 200, "{\"Id\":\"abc\"}");
		else
			fake_send_json(c, 404,
				       "{\"message\":\"No such container\"}");
		return FAKE_KEEP;
	}
	if (sscanf(path, "/volumes/hutch-%127s", name) == 1) {
		if (listed(wd->volumes, name))
			fake_send_json(c, 200, "{\"Name\":\"x\"}");
		else
			fake_send_json(c, 404,
				       "{\"message\":\"no such volume\"}");
		return FAKE_KEEP;
	}
	if (strncmp(path, "/containers/json?", 17) == 0) {
		char body[1024] = "[";

		if (wd->fail_lists) {
			fake_send_json(c, 500, "{\"message\":\"boom\"}");
			return FAKE_KEEP;
		}
		/* Only running hutch containers are asked for. */
		cr_assert(strstr(path, "dev.hutch.session") &&
				  strstr(path, "running"),
			  "unexpected list: %s", path);
		for (int i = 0; i < wd->running; i++)
			strcat(body, i ? ",{}" : "{}");
		strcat(body, "]");
		fake_send_json(c, 200, body);
		return FAKE_KEEP;
	}
	fake_send_json(c, 404, "{\"message\":\"page not found\"}");
	return FAKE_KEEP;
}

/* Start the fakes; `down` (0 or 1, -1 for none) gets a socket nobody
 * listens on instead.  Opens `fleet` on both. */
static void start(int down)
{
	const char *urls[2];
	char gone[2][256];
	hutch_error *err = NULL;

	for (int i = 0; i < 2; i++) {
		cr_assert_eq(fake_engine_start(&fe[i], handler, &w[i]), 0,
			     "fake engine: %m");
		urls[i] = fake_engine_url(fe[i]);
		if (i == down) {
			snprintf(gone[i], sizeof(gone[i]),
				 "unix://%s/nobody.sock",
				 fake_engine_dir(fe[i]));
			urls[i] = gone[i];
		}
	}
	cr_assert_eq(hutch_fleet_open(&fleet, urls, 2, &err), 0, "%s",
		     err ? hutch_error_message(err) : "");
	cr_assert_eq(hutch_fleet_size(fleet), 2);
}

/* Which of the two engines `name` is located on, or the error code. */
static int where(const char *name, int flags, int *found)
{
	hutch_engine *e = NULL;
	hutch_error *err = NULL;
	int rc = hutch_fleet_locate(fleet, name, flags, &e, found, &err);

	if (rc < 0) {
		hutch_error_free(err);
		return rc;
	}
	for (int i = 0; i < 2; i++)
		if (e == hutch_fleet_engine(fleet, (size_t)i))
			return i;
	cr_assert_fail("locate gave an engine that is not in the fleet");
	return -100;
}

Test(fleet, found_where_it_lives_whatever_the_load)
{
	int found = -5;

	w[0].containers[0] = "a";
	w[0].running = 10;
	w[1].volumes[0] = "b"; /* only its workspace volume is left */
	start(-1);
	cr_assert_eq(where("a", HUTCH_FLEET_CREATE, &found), 0);
	cr_assert_eq(found, 1);
	cr_assert_eq(where("b", HUTCH_FLEET_CREATE, &found), 1);
	cr_assert_eq(found, 1);
	/* Without CREATE too; each locate asks every engine. */
	cr_assert_eq(where("a", 0, &found), 0);
	cr_assert_eq(fake_engine_count(fe[1], "GET",
				       "/v1.41/containers/hutch-a/json"),
		     2);
	cr_assert_eq(fake_engine_count(fe[0], "GET",
				       "/v1.41/containers/hutch-b/json"),
		     1);
	/* A session that exists costs no load count: that is only for new
	 * ones. */
	for (int i = 0; i < 2; i++)
		cr_assert_eq(fake_engine_count(fe[i], "GET",
					       "/v1.41/containers/json*"),
			     0);
}

Test(fleet, new_session_goes_to_the_less_loaded_engine)
{
	int found = -5;

	w[0].running = 5;
	w[1].running = 2;
	start(-1);
	cr_assert_eq(where("fresh", HUTCH_FLEET_CREATE, &found), 1);
	cr_assert_eq(found, 0);
	for (int i = 0; i < 2; i++)
		cr_assert_eq(fake_engine_count(fe[i], "GET",
					       "/v1.41/containers/json*"),
			     1);
	w[0].running = 1;
	cr_assert_eq(where("fresh2", HUTCH_FLEET_CREATE, &found), 0);
}

Test(fleet, placements_spread_before_containers_exist)
{
	int n[2] = { 0, 0 };
	char name[32];

	start(-1);
	/* Neither engine shows anything running: only the fleet's own count
	 * of what it placed can spread them. */
	for (int i = 0; i < 10; i++) {
		int at;

		snprintf(name, sizeof(name), "new-%d", i);
		at = where(name, HUTCH_FLEET_CREATE, NULL);
		cr_assert(at == 0 || at == 1, "locate failed: %d", at);
		n[at]++;
	}
	cr_assert_eq(n[0], 5, "%d and %d", n[0], n[1]);
	cr_assert_eq(n[1], 5, "%d and %d", n[0], n[1]);
}

Test(fleet, equal_load_ties_go_the_same_way_every_time)
{
	hutch_fleet *other = NULL;
	hutch_error *err = NULL;
	hutch_engine *e = NULL;
	const char *rev[2];
	int first;

	start(-1);
	first = where("tie", HUTCH_FLEET_CREATE, NULL);
	cr_assert(first == 0 || first == 1);
	/* A second process (a fleet of the same engines, in the other order)
	 * placing the same name picks the same engine. */
	rev[0] = hutch_engine_url(hutch_fleet_engine(fleet, 1));
	rev[1] = hutch_engine_url(hutch_fleet_engine(fleet, 0));
	cr_assert_eq(hutch_fleet_open(&other, rev, 2, &err), 0);
	cr_assert_eq(hutch_fleet_locate(other, "tie", HUTCH_FLEET_CREATE, &e,
					NULL, &err),
		     0);
	cr_assert_str_eq(
		hutch_engine_url(e),
		hutch_engine_url(hutch_fleet_engine(fleet, (size_t)first)));
	hutch_fleet_free(other);
}

Test(fleet, an_engine_that_does_not_answer_gets_nothing)
{
	int found = -5;

	w[1].running = 50;
	start(0);
	for (int i = 0; i < 4; i++) {
		char name[32];

		snprintf(name, sizeof(name), "s%d", i);
		cr_assert_eq(where(name, HUTCH_FLEET_CREATE, &found), 1);
		cr_assert_eq(found, 0);
	}
	cr_assert_eq(hutch_fleet_engine_down(fleet, 0), 1);
	cr_assert_eq(hutch_fleet_engine_down(fleet, 1), 0);
	/* Without CREATE, a session that is nowhere that answers may live on
	 * the engine that is down: unreachable, not "not found". */
	cr_assert_eq(where("elsewhere", 0, NULL), HUTCH_EUNREACHABLE);
}

Test(fleet, an_engine_answering_errors_gets_nothing)
{
	w[0].fail_lists = 1;
	w[1].running = 50;
	start(-1);
	cr_assert_eq(where("s", HUTCH_FLEET_CREATE, NULL), 1);
	cr_assert_eq(hutch_fleet_engine_down(fleet, 0), 1);
}

Test(fleet, no_engine_answers)
{
	hutch_fleet *f = NULL;
	hutch_error *err = NULL;
	hutch_engine *e = NULL;
	const char *urls[] = { "unix:///nonexistent/a.sock",
			       "unix:///nonexistent/b.sock" };
	int rc;

	cr_assert_eq(hutch_fleet_open(&f, urls, 2, &err), 0);
	rc = hutch_fleet_locate(f, "s", HUTCH_FLEET_CREATE, &e, NULL, &err);
	cr_assert_eq(rc, HUTCH_EUNREACHABLE);
	cr_assert(strstr(hutch_error_message(err), "a.sock") &&
			  strstr(hutch_error_message(err), "b.sock"),
		  "%s", hutch_error_message(err));
	cr_assert_null(strchr(hutch_error_message(err), '\n'));
	hutch_error_free(err);
	hutch_fleet_free(f);
}

Test(fleet, a_session_on_two_engines_is_refused)
{
	hutch_engine *e = NULL;
	hutch_error *err = NULL;

	w[0].containers[0] = "twice";
	w[1].volumes[0] = "twice";
	start(-1);
	cr_assert_eq(hutch_fleet_locate(fleet, "twice", HUTCH_FLEET_CREATE, &e,
					NULL, &err),
		     HUTCH_EAMBIGUOUS);
	cr_assert(strstr(hutch_error_message(err), "two engines"), "%s",
		  hutch_error_message(err));
	hutch_error_free(err);
}

Test(fleet, not_found_without_create)
{
	start(-1);
	cr_assert_eq(where("nowhere", 0, NULL), HUTCH_ENOTFOUND);
	cr_assert_eq(where("../x", HUTCH_FLEET_CREATE, NULL), HUTCH_EINVALID);
}

Test(fleet, one_engine_is_not_asked)
{
	hutch_fleet *f = NULL;
	hutch_error *err = NULL;
	hutch_engine *e = NULL, *mine;
	const char *url;
	int found = 5;

	cr_assert_eq(fake_engine_start(&fe[0], handler, &w[0]), 0);
	url = fake_engine_url(fe[0]);
	cr_assert_eq(hutch_fleet_open(&f, &url, 1, &err), 0);
	cr_assert_eq(hutch_fleet_locate(f, "s", HUTCH_FLEET_CREATE, &e, &found,
					&err),
		     0);
	cr_assert_eq(found, -1);
	cr_assert_eq(fake_engine_request_count(fe[0]), 0);
	/* Detached, the engine outlives the fleet. */
	mine = hutch_fleet_detach(f, e);
	cr_assert_eq(mine, e);
	cr_assert_eq(hutch_fleet_size(f), 0);
	cr_assert_null(hutch_fleet_detach(f, e));
	hutch_fleet_free(f);
	cr_assert_str_eq(hutch_engine_url(mine), url);
	hutch_engine_free(mine);
}

Test(fleet, urls_from_the_environment)
{
	hutch_fleet *f = NULL;
	hutch_error *err = NULL;
	const char *twice[] = { "unix:///tmp/x.sock", "/tmp/x.sock" };

	setenv("HUTCH_ENGINES",
	       " unix:///tmp/a.sock,unix:///tmp/b.sock\ttcp://127.0.0.1:1 ,",
	       1);
	cr_assert_eq(hutch_fleet_open(&f, NULL, 0, &err), 0, "%s",
		     err ? hutch_error_message(err) : "");
	cr_assert_eq(hutch_fleet_size(f), 3);
	cr_assert_str_eq(hutch_engine_url(hutch_fleet_engine(f, 2)),
			 "tcp://127.0.0.1:1");
	cr_assert_str_eq(hutch_engine_source(hutch_fleet_engine(f, 0)),
			 "HUTCH_ENGINES");
	hutch_fleet_free(f);

	/* Given URLs win over the environment. */
	cr_assert_eq(hutch_fleet_open(&f, twice, 1, &err), 0);
	cr_assert_eq(hutch_fleet_size(f), 1);
	hutch_fleet_free(f);

	/* The same socket twice, however spelt. */
	cr_assert_eq(hutch_fleet_open(&f, twice, 2, &err), HUTCH_EINVALID);
	cr_assert(strstr(hutch_error_message(err), "twice"), "%s",
		  hutch_error_message(err));
	hutch_error_free(err);
	err = NULL;

	setenv("HUTCH_ENGINES", "unix:///tmp/a.sock,ftp://nope", 1);
	cr_assert_eq(hutch_fleet_open(&f, NULL, 0, &err), HUTCH_EINVALID);
	cr_assert(strstr(hutch_error_message(err), "HUTCH_ENGINES"), "%s",
		  hutch_error_message(err));
	hutch_error_free(err);
	unsetenv("HUTCH_ENGINES");
}
