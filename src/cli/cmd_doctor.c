/*
 * cmd_doctor.c - hutch doctor: which engine, and is everything in place
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>

#include "cli.h"

/* "1.41" -> 141, for comparing API versions. */
static long api_num(const char *v)
{
	char *end;
	long major, minor = 0;

	if (!v)
		return -1;
	major = strtol(v, &end, 10);
	if (*end == '.')
		minor = strtol(end + 1, &end, 10);
	return major * 1000 + minor;
}

/* What the engine says of itself, and whether hutch can speak to it. */
static void engine_facts(json_object *report, json_object *problems,
			 hutch_engine *engine, const hutch_engine_info *info)
{
	/* The URL may have moved on to a later socket during discovery. */
	json_object_object_add(
		report, "engine_url",
		json_object_new_string(hutch_engine_url(engine)));
	json_object_object_add(report, "engine",
			       json_object_new_string(info->name));
	json_object_object_add(
		report, "engine_version",
		json_object_new_string(info->version ? info->version : "?"));
	json_object_object_add(
		report, "engine_api_version",
		json_object_new_string(info->api_version ? info->api_version :
							   "?"));
	json_object_object_add(
		report, "engine_min_api_version",
		info->min_api_version ?
			json_object_new_string(info->min_api_version) :
			NULL);
	json_object_object_add(
		report, "api_version",
		json_object_new_string(hutch_engine_api_version(engine)));
	json_object_object_add(report, "platform",
			       json_object_new_string(info->arch ? info->arch :
								   "?"));
	if (info->api_version &&
	    api_num(info->api_version) <
		    api_num(hutch_engine_api_version(engine))) {
		char msg[256];

		snprintf(
			msg, sizeof(msg),
			"the engine speaks API %s, older than the %s hutch uses: "
			"some calls may fail",
			info->api_version, hutch_engine_api_version(engine));
		json_object_array_add(problems, json_object_new_string(msg));
	}
}

/* Whether the image is on the engine: 1, 0, or -1 when that cannot be
 * known (each said in `problems`). */
static int image_check(json_object *report, json_object *problems,
		       hutch_engine *engine, const char *image)
{
	hutch_error *err = NULL;
	int have_image;

	have_image = hutch_engine_image_exists(engine, image, &err);
	if (have_image < 0) {
		json_object_array_add(
			problems,
			json_object_new_string(hutch_error_message(err)));
		hutch_error_free(err);
	} else if (!have_image) {
		char msg[512];

		snprintf(
			msg, sizeof(msg),
			"image '%s' is not on the engine: build it with "
			"hutch-image-offline, or set HUTCH_IMAGE / --image to one that is",
			image);
		json_object_array_add(problems, json_object_new_string(msg));
	}
	json_object_object_add(
		report, "image_present",
		have_image < 0 ? NULL : json_object_new_boolean(have_image));
	return have_image;
}

/*
 * Whether commands can take the fast path (the session agent's own socket)
 * with this engine.  Said as what was checked: the channel of a running
 * session of this hutch when there is one, else only what the engine's
 * URL allows.  Never a problem: the engine's exec is always there.
 */
static void fast_path_check(json_object *report, hutch_engine *engine)
{
	hutch_session_info *infos = NULL;
	hutch_session *s = NULL;
	hutch_error *err = NULL;
	const char *name = NULL, *env = getenv("HUTCH_FAST_PATH");
	char why[256], detail[512];
	size_t n = 0;
	int ok = -1;

	if (env && strcmp(env, "0") == 0) {
		snprintf(detail, sizeof(detail), "off (HUTCH_FAST_PATH=0)");
		ok = 0;
		goto out;
	}
	if (strncmp(hutch_engine_url(engine), "unix://", 7) != 0) {
		snprintf(detail, sizeof(detail),
			 "no: the engine is not on a unix socket of this host");
		ok = 0;
		goto out;
	}
	/* A session of this hutch that runs: its agent serves the socket. */
	if (hutch_session_list(&infos, &n, engine, &err) == 0)
		for (size_t i = 0; i < n && !name; i++)
			if (infos[i].state &&
			    strcmp(infos[i].state, "running") == 0 &&
			    infos[i].hutch_version &&
			    strcmp(infos[i].hutch_version, hutch_version()) ==
				    0)
				name = infos[i].name;
	hutch_error_free(err);
	err = NULL;
	if (!name) {
		snprintf(
			detail, sizeof(detail),
			"not checked: no running session of this hutch to try; "
			"available for local engines (unix socket)");
		goto out;
	}
	if (hutch_session_open(&s, engine, name, NULL, &err) < 0) {
		snprintf(detail, sizeof(detail), "not checked: %s",
			 hutch_error_message(err));
		goto out;
	}
	ok = hutch_session_fast_path(s, why, sizeof(why), &err);
	if (ok < 0)
		snprintf(detail, sizeof(detail), "not checked: %s",
			 hutch_error_message(err));
	else if (ok)
		snprintf(detail, sizeof(detail),
			 "yes: session '%s' answered on its agent's socket, "
			 "its listener checked to be the container's PID 1",
			 name);
	else
		snprintf(detail, sizeof(detail),
			 "no: session '%s': %s; commands use the engine's exec",
			 name, why);
out:
	json_object_object_add(report, "fast_path",
			       ok < 0 ? NULL : json_object_new_boolean(ok));
	json_object_object_add(report, "fast_path_detail",
			       json_object_new_string(detail));
	hutch_session_free(s);
	hutch_error_free(err);
	hutch_session_info_array_free(infos, n);
}

/* The report for a person. */
static void print_report(json_object *report, json_object *problems,
			 hutch_engine *engine, const hutch_engine_info *info,
			 const char *image, int have_image)
{
	json_object *v;

	printf("hutch          %s\n", hutch_version());
	if (json_object_object_get_ex(report, "engine_url", &v))
		printf("engine URL     %s (from %s%s)\n",
		       json_object_get_string(v), hutch_engine_source(engine),
		       hutch_engine_tls(engine) ? ", TLS" : "");
	if (info) {
		printf("engine         %s %s, API %s (min %s), %s/%s\n",
		       info->name, info->version ? info->version : "?",
		       info->api_version ? info->api_version : "?",
		       info->min_api_version ? info->min_api_version : "?",
		       info->os ? info->os : "?",
		       info->arch ? info->arch : "?");
		printf("API in use     %s\n", hutch_engine_api_version(engine));
	}
	if (have_image >= 0)
		printf("image          %s: %s\n", image,
		       have_image ? "present" : "missing");
	if (json_object_object_get_ex(report, "fast_path_detail", &v))
		printf("fast path      %s\n", json_object_get_string(v));
	for (size_t i = 0; i < json_object_array_length(problems); i++)
		printf("problem        %s\n",
		       json_object_get_string(
			       json_object_array_get_idx(problems, i)));
	printf("status         %s\n",
	       json_object_array_length(problems) ? "NOT OK" : "ok");
}

/* Check one engine (NULL: it could not be opened, `open_err` says why) and
 * print the report.  1 when something is wrong. */
static int doctor_one(hutch_engine *engine, hutch_error *open_err,
		      const char *image, int json)
{
	hutch_engine_info *info = NULL;
	hutch_error *err = NULL;
	json_object *report = json_object_new_object(),
		    *problems = json_object_new_array();
	int c, have_image = -1;

	if (!report || !problems) {
		json_object_put(report);
		json_object_put(problems);
		return 1;
	}
	json_object_object_add(report, "hutch_version",
			       json_object_new_string(hutch_version()));
	json_object_object_add(report, "image", json_object_new_string(image));

	if (!engine) {
		json_object_array_add(
			problems,
			json_object_new_string(hutch_error_message(open_err)));
		goto report;
	}
	json_object_object_add(
		report, "engine_url",
		json_object_new_string(hutch_engine_url(engine)));
	json_object_object_add(
		report, "engine_source",
		json_object_new_string(hutch_engine_source(engine)));
	json_object_object_add(
		report, "engine_tls",
		json_object_new_boolean(hutch_engine_tls(engine)));
	if (hutch_engine_info_get(&info, engine, &err) < 0) {
		json_object_array_add(
			problems,
			json_object_new_string(hutch_error_message(err)));
		hutch_error_free(err);
		goto report;
	}
	engine_facts(report, problems, engine, info);
	have_image = image_check(report, problems, engine, image);
	fast_path_check(report, engine);
report:
	json_object_object_add(report, "ok",
			       json_object_new_boolean(json_object_array_length(
							       problems) == 0));
	json_object_object_add(report, "problems", json_object_get(problems));
	if (json)
		cli_print_json(report);
	else
		print_report(report, problems, engine, info, image, have_image);
	c = json_object_array_length(problems) ? 1 : 0;
	json_object_put(problems);
	json_object_put(report);
	hutch_engine_info_free(info);
	return c;
}

static int cmd_doctor(cli_globals *g, int argc, char **argv);

static const cli_option doctor_options[] = {
	{ "json", NULL, 'j', "print the findings as JSON" },
	{ NULL, NULL, 0, NULL },
};

const cli_command cli_cmd_doctor = {
	.name = "doctor",
	.fn = cmd_doctor,
	.synopsis = "[--json]",
	.about = "check the engines and what hutch needs of them",
	.shortopts = "h",
	.opts = { doctor_options },
};

static int cmd_doctor(cli_globals *g, int argc, char **argv)
{
	struct option lo[CLI_MAX_OPTIONS + 2];
	hutch_fleet *fleet = NULL;
	hutch_error *err = NULL;
	const char *image = getenv("HUTCH_IMAGE");
	int c, json = 0, bad = 0;

	cli_long_options(&cli_cmd_doctor, lo);
	while ((c = cli_next_option(&cli_cmd_doctor, lo, argc, argv)) != -1) {
		switch (c) {
		case 'j':
			json = 1;
			break;
		case 'h':
			cli_help(&cli_cmd_doctor, stdout);
			return 0;
		default:
			return EXIT_HUTCH_FAILED;
		}
	}
	if (!image || !*image)
		image = hutch_default_image();
	/* One report per engine (a JSON line each with --json). */
	if (hutch_fleet_open(&fleet, g->engines, g->nengines, &err) < 0) {
		bad = doctor_one(NULL, err, image, json);
		hutch_error_free(err);
		return bad;
	}
	for (size_t i = 0; i < hutch_fleet_size(fleet); i++) {
		if (i > 0 && !json)
			putchar('\n');
		bad |= doctor_one(hutch_fleet_engine(fleet, i), NULL, image,
				  json);
	}
	hutch_fleet_free(fleet);
	return bad;
}
