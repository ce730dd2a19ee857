/*
 * cmd_session.c - hutch up, hutch sessions, hutch rm
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <json-c/json.h>

#include "cli.h"

#define USAGE_UP "usage: hutch up SESSION [--image IMG] [--workspace DIR | --seed DIR " \
		 "[--exclude GLOB]...] [--env K=V]... [--json]"

/* Raised by SIGINT/SIGTERM/SIGHUP while `up --seed` copies: the copy stops
 * and the half-seeded session is removed instead of being left behind. */
static hutch_cancel *seed_interrupt;

static void on_seed_signal(int sig)
{
	(void)sig;
	hutch_cancel_raise(seed_interrupt);
}

/* Fill a session that this very call created; remove it when that fails,
 * so a failed `up --seed` leaves nothing behind. */
static int seed_session(hutch_engine *engine, hutch_session *s, const char *dir,
			const cli_strv *excl, hutch_sync_stats *st)
{
	hutch_sync_options so = HUTCH_SYNC_OPTIONS_INIT;
	cli_sync_progress_state ps = { "seed", 0, 0, 0 };
	hutch_error *err = NULL, *rmerr = NULL;
	struct sigaction sa, old[3];
	int r;

	if (hutch_cancel_new(&seed_interrupt, &err) < 0)
		return cli_fail(err);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_seed_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old[0]);
	sigaction(SIGTERM, &sa, &old[1]);
	sigaction(SIGHUP, &sa, &old[2]);
	so.exclude = excl->v;
	so.exclude_count = excl->n;
	so.cancel = seed_interrupt;
	so.progress = cli_sync_progress;
	so.payload = &ps;
	ps.tty = isatty(STDERR_FILENO);
	r = hutch_sync_in(st, s, dir, &so, &err);
	cli_sync_progress_end(&ps);
	sigaction(SIGINT, &old[0], NULL);
	sigaction(SIGTERM, &old[1], NULL);
	sigaction(SIGHUP, &old[2], NULL);
	hutch_cancel_free(seed_interrupt);
	seed_interrupt = NULL;
	if (r == 0)
		return 0;
	cli_fail(err);
	if (hutch_session_remove(engine, hutch_session_name(s), &rmerr) < 0)
		cli_fail(rmerr);
	else
		cli_error("removed the half-seeded session '%s'", hutch_session_name(s));
	return EXIT_HUTCH_FAILED;
}

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
		{ "seed", required_argument, NULL, 's' },
		{ "exclude", required_argument, NULL, 'x' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	hutch_session_options so = HUTCH_SESSION_OPTIONS_INIT;
	cli_strv env = { 0 }, owned_env = { 0 }, excl = { 0 };
	hutch_sync_stats seeded;
	const char *seed = NULL;
	struct stat sst;
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
		case 's':
			seed = optarg;
			break;
		case 'x':
			if (cli_strv_add(&excl, optarg) < 0) {
				cli_error("out of memory");
				goto out;
			}
			break;
		case 'j':
			json = 1;
			break;
		case 'h':
			puts(USAGE_UP);
			rc = 0;
			goto out;
		default:
			goto out;
		}
	}
	if (argc - optind != 1) {
		cli_error(USAGE_UP);
		goto out;
	}
	name = argv[optind];
	if (seed && so.workspace) {
		cli_error("--seed and --workspace exclude each other: a seeded session's "
			  "workspace is its own volume, a --workspace session already "
			  "sees the host directory");
		goto out;
	}
	if (excl.n && !seed) {
		cli_error("--exclude only goes with --seed");
		goto out;
	}
	/* Check the seed before anything is created. */
	if (seed && stat(seed, &sst) < 0) {
		cli_error("seed directory '%s': %s", seed, strerror(errno));
		goto out;
	}
	if (seed && !S_ISDIR(sst.st_mode)) {
		cli_error("seed directory '%s': not a directory", seed);
		goto out;
	}
	so.env = env.v;
	so.env_count = env.n;
	if ((rc = cli_engine(g, &engine)) != 0)
		goto out;
	rc = EXIT_HUTCH_FAILED;
	if (hutch_session_open(&s, engine, name, &so, &err) < 0) {
		rc = cli_fail(err);
		goto out;
	}
	if (seed) {
		/* Seeding is for a brand-new session only: it never merges a
		 * host tree into a workspace that already holds work. */
		int r = hutch_session_inspect(&info, s, &err);

		if (r != HUTCH_ENOTFOUND) {
			if (r == 0)
				cli_error("session '%s' already exists; --seed only fills a new "
					  "session: use 'hutch sync-in %s %s'", name, name, seed);
			else
				cli_fail(err);
			err = NULL;
			goto out;
		}
		hutch_error_free(err);
		err = NULL;
		hutch_session_info_free(info);
		info = NULL;
	}
	if (hutch_session_ensure(s, &created, &err) < 0) {
		rc = cli_fail(err);
		goto out;
	}
	if (seed && !created) {
		/* Another process made it between our check and now. */
		cli_error("session '%s' was created by someone else meanwhile; --seed only "
			  "fills a new session: use 'hutch sync-in %s %s'", name, name, seed);
		goto out;
	}
	if (seed && (rc = seed_session(engine, s, seed, &excl, &seeded)) != 0)
		goto out;
	rc = EXIT_HUTCH_FAILED;
	if (hutch_session_inspect(&info, s, &err) < 0) {
		rc = cli_fail(err);
		goto out;
	}
	if (json) {
		json_object *o = info_json(info);

		if (!o)
			goto out;
		json_object_object_add(o, "created_now", json_object_new_boolean(created));
		if (seed) {
			json_object *so_ = json_object_new_object();

			if (so_) {
				json_object_object_add(so_, "hostdir", json_object_new_string(seed));
				json_object_object_add(so_, "files", json_object_new_int64((int64_t)seeded.files));
				json_object_object_add(so_, "dirs", json_object_new_int64((int64_t)seeded.dirs));
				json_object_object_add(so_, "symlinks", json_object_new_int64((int64_t)seeded.symlinks));
				json_object_object_add(so_, "skipped", json_object_new_int64((int64_t)seeded.skipped));
				json_object_object_add(so_, "excluded", json_object_new_int64((int64_t)seeded.excluded));
				json_object_object_add(so_, "bytes", json_object_new_int64((int64_t)seeded.bytes));
				json_object_object_add(so_, "duration_ms", json_object_new_int64((int64_t)seeded.duration_ms));
			}
			json_object_object_add(o, "seed", so_);
		}
		print_json(o);
		json_object_put(o);
	} else {
		printf("%s session %s: container %s, image %s, workspace %s\n",
		       created ? "created" : "reused", info->name,
		       info->container ? info->container : "-",
		       info->image ? info->image : "-",
		       info->workspace ? info->workspace : "-");
		if (seed)
			cli_sync_summary("seeded", &seeded);
	}
	rc = 0;
out:
	cli_strv_free(&excl);
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
