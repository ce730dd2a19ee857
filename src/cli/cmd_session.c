/*
 * cmd_session.c - hutch up, hutch sessions, hutch rm
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <json-c/json.h>

#include "cli.h"

static json_object *info_json(const hutch_session_info *i)
{
	json_object *o = json_object_new_object();

	if (!o)
		return NULL;
	json_object_object_add(o, "name", json_object_new_string(i->name));
	json_object_object_add(o, "container", i->container ? json_object_new_string(i->container) : NULL);
	json_object_object_add(o, "id", i->id ? json_object_new_string(i->id) : NULL);
	json_object_object_add(o, "image", i->image ? json_object_new_string(i->image) : NULL);
	json_object_object_add(o, "state", json_object_new_string(i->state ? i->state : "unknown"));
	json_object_object_add(o, "workspace", i->workspace ? json_object_new_string(i->workspace) : NULL);
	json_object_object_add(o, "hutch_version", i->hutch_version ? json_object_new_string(i->hutch_version) : NULL);
	json_object_object_add(o, "created", json_object_new_int64(i->created));
	return o;
}

static void print_json(json_object *o)
{
	puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
}

static void age(char *out, size_t outsz, long long created)
{
	long long d = (long long)time(NULL) - created;

	if (created <= 0)
		snprintf(out, outsz, "-");
	else if (d < 120)
		snprintf(out, outsz, "%llds ago", d < 0 ? 0 : d);
	else if (d < 7200)
		snprintf(out, outsz, "%lldm ago", d / 60);
	else if (d < 172800)
		snprintf(out, outsz, "%lldh ago", d / 3600);
	else
		snprintf(out, outsz, "%lldd ago", d / 86400);
}

int cmd_up(cli_globals *g, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "image", required_argument, NULL, 'i' },
		{ "workspace", required_argument, NULL, 'w' },
		{ "env", required_argument, NULL, 'e' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	hutch_session_options so = HUTCH_SESSION_OPTIONS_INIT;
	cli_strv env = { 0 }, owned_env = { 0 };
	hutch_engine *engine = NULL;
	hutch_session *s = NULL;
	hutch_session_info *info = NULL;
	hutch_error *err = NULL;
	const char *name = NULL;
	int c, json = 0, created = 0, rc = EXIT_HUTCH_FAILED;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'i':
			so.image = optarg;
			break;
		case 'w':
			so.workspace = optarg;
			break;
		case 'e':
			if (cli_env_add(&env, &owned_env, optarg) < 0)
				goto out;
			break;
		case 'j':
			json = 1;
			break;
		case 'h':
			puts("usage: hutch up SESSION [--image IMG] [--workspace DIR] [--env K=V]... [--json]");
			rc = 0;
			goto out;
		default:
			goto out;
		}
	}
	if (argc - optind != 1) {
		cli_error("usage: hutch up SESSION [--image IMG] [--workspace DIR] [--env K=V]... [--json]");
		goto out;
	}
	name = argv[optind];
	so.env = env.v;
	so.env_count = env.n;
	if ((rc = cli_engine(g, &engine)) != 0)
		goto out;
	rc = EXIT_HUTCH_FAILED;
	if (hutch_session_open(&s, engine, name, &so, &err) < 0 ||
	    hutch_session_ensure(s, &created, &err) < 0 ||
	    hutch_session_inspect(&info, s, &err) < 0) {
		rc = cli_fail(err);
		goto out;
	}
	if (json) {
		json_object *o = info_json(info);

		if (!o)
			goto out;
		json_object_object_add(o, "created_now", json_object_new_boolean(created));
		print_json(o);
		json_object_put(o);
	} else {
		printf("%s session %s: container %s, image %s, workspace %s\n",
		       created ? "created" : "reused", info->name,
		       info->container ? info->container : "-",
		       info->image ? info->image : "-",
		       info->workspace ? info->workspace : "-");
	}
	rc = 0;
out:
	cli_env_free(&env, &owned_env);
	hutch_session_info_free(info);
	hutch_session_free(s);
	hutch_engine_free(engine);
	return rc;
}

int cmd_sessions(cli_globals *g, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "names", no_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	hutch_engine *engine = NULL;
	hutch_session_info *infos = NULL;
	hutch_error *err = NULL;
	size_t n = 0;
	int c, json = 0, names = 0, rc = EXIT_HUTCH_FAILED;
	char when[32];

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'j': json = 1; break;
		case 'n': names = 1; break;
		case 'h':
			puts("usage: hutch sessions [--json | --names]");
			return 0;
		default:
			return EXIT_HUTCH_FAILED;
		}
	}
	if (optind != argc) {
		cli_error("usage: hutch sessions [--json | --names]");
		return EXIT_HUTCH_FAILED;
	}
	if ((rc = cli_engine(g, &engine)) != 0)
		return rc;
	if (hutch_session_list(&infos, &n, engine, &err) < 0) {
		rc = cli_fail(err);
		goto out;
	}
	if (json) {
		json_object *arr = json_object_new_array();

		for (size_t i = 0; arr && i < n; i++)
			json_object_array_add(arr, info_json(&infos[i]));
		if (!arr)
			goto out;
		print_json(arr);
		json_object_put(arr);
	} else if (names) {
		for (size_t i = 0; i < n; i++)
			puts(infos[i].name);
	} else {
		printf("%-24s %-10s %-28s %-12s %s\n", "SESSION", "STATE", "IMAGE", "CREATED", "WORKSPACE");
		for (size_t i = 0; i < n; i++) {
			age(when, sizeof(when), infos[i].created);
			printf("%-24s %-10s %-28s %-12s %s\n", infos[i].name,
			       infos[i].state ? infos[i].state : "-",
			       infos[i].image ? infos[i].image : "-", when,
			       infos[i].workspace ? infos[i].workspace : "-");
		}
	}
	rc = 0;
out:
	hutch_session_info_array_free(infos, n);
	hutch_engine_free(engine);
	return rc;
}

int cmd_rm(cli_globals *g, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "all", no_argument, NULL, 'a' },
		{ "force", no_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	hutch_engine *engine = NULL;
	hutch_session_info *infos = NULL;
	hutch_error *err = NULL;
	cli_strv names = { 0 };
	size_t n = 0;
	int c, all = 0, force = 0, rc = EXIT_HUTCH_FAILED, failed = 0;

	while ((c = getopt_long(argc, argv, "afh", opts, NULL)) != -1) {
		switch (c) {
		case 'a': all = 1; break;
		case 'f': force = 1; break;
		case 'h':
			puts("usage: hutch rm [--force] SESSION... | hutch rm --all");
			return 0;
		default:
			return EXIT_HUTCH_FAILED;
		}
	}
	if (all == (optind < argc)) {
		cli_error("usage: hutch rm [--force] SESSION... | hutch rm --all");
		return EXIT_HUTCH_FAILED;
	}
	if ((rc = cli_engine(g, &engine)) != 0)
		return rc;
	if (all) {
		if (hutch_session_list(&infos, &n, engine, &err) < 0) {
			rc = cli_fail(err);
			goto out;
		}
		for (size_t i = 0; i < n; i++)
			if (cli_strv_add(&names, infos[i].name) < 0)
				goto out;
	} else {
		for (int i = optind; i < argc; i++)
			if (cli_strv_add(&names, argv[i]) < 0)
				goto out;
	}
	for (size_t i = 0; i < names.n; i++) {
		int r = hutch_session_remove(engine, names.v[i], &err);

		if (r == 0) {
			printf("removed %s\n", names.v[i]);
		} else if (r == HUTCH_ENOTFOUND && force) {
			hutch_error_free(err);
		} else {
			cli_fail(err);
			failed = 1;
		}
		err = NULL;
	}
	rc = failed ? EXIT_HUTCH_FAILED : 0;
out:
	cli_strv_free(&names);
	hutch_session_info_array_free(infos, n);
	hutch_engine_free(engine);
	return rc;
}
