/*
 * cmd_session.c - hutch up, hutch sessions, hutch rm
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <json-c/json.h>

#include "cli.h"

/* Fill a session that this very call created; remove it when that fails,
 * so a failed `up --seed` leaves nothing behind. */
static int seed_session(hutch_engine *engine, hutch_session *s, const char *dir,
			const cli_strv *excl, hutch_sync_stats *st)
{
	hutch_sync_options so = HUTCH_SYNC_OPTIONS_INIT;
	cli_sync_progress_state ps = { "seed", 0, 0, 0 };
	hutch_error *err = NULL, *rmerr = NULL;
	int r;

	/* A signal while it copies stops the copy, and the half-seeded
	 * session is removed below instead of being left behind. */
	if (cli_cancel_begin(&so.cancel, 0, &err) < 0)
		return cli_fail(err);
	so.exclude = excl->v;
	so.exclude_count = excl->n;
	so.progress = cli_sync_progress;
	so.payload = &ps;
	ps.tty = isatty(STDERR_FILENO);
	r = hutch_sync_in(st, s, dir, &so, &err);
	cli_sync_progress_end(&ps);
	cli_cancel_end();
	if (r == 0)
		return 0;
	cli_fail(err);
	if (hutch_session_remove(engine, hutch_session_name(s), &rmerr) < 0)
		cli_fail(rmerr);
	else
		cli_error("removed the half-seeded session '%s'",
			  hutch_session_name(s));
	return EXIT_HUTCH_FAILED;
}

static json_object *info_json(const hutch_session_info *i)
{
	json_object *o = json_object_new_object();

	if (!o)
		return NULL;
	json_object_object_add(o, "name", json_object_new_string(i->name));
	json_object_object_add(
		o, "container",
		i->container ? json_object_new_string(i->container) : NULL);
	json_object_object_add(o, "id",
			       i->id ? json_object_new_string(i->id) : NULL);
	json_object_object_add(
		o, "image", i->image ? json_object_new_string(i->image) : NULL);
	json_object_object_add(o, "state",
			       json_object_new_string(i->state ? i->state :
								 "unknown"));
	json_object_object_add(
		o, "workspace",
		i->workspace ? json_object_new_string(i->workspace) : NULL);
	json_object_object_add(
		o, "hutch_version",
		i->hutch_version ? json_object_new_string(i->hutch_version) :
				   NULL);
	json_object_object_add(o, "created", json_object_new_int64(i->created));
	/* The lockdown, null for a session made before hutch recorded it. */
	json_object_object_add(
		o, "user", i->user ? json_object_new_string(i->user) : NULL);
	json_object_object_add(
		o, "memory",
		i->memory >= 0 ? json_object_new_int64(i->memory) : NULL);
	json_object_object_add(
		o, "cpus",
		i->nano_cpus >= 0 ?
			json_object_new_double((double)i->nano_cpus / 1e9) :
			NULL);
	json_object_object_add(o, "pids",
			       i->pids >= 0 ? json_object_new_int64(i->pids) :
					      NULL);
	if (i->cap_add) {
		json_object *caps = json_object_new_array();

		for (const char *p = i->cap_add; caps && *p;) {
			size_t n = strcspn(p, ",");

			if (n)
				json_object_array_add(
					caps,
					json_object_new_string_len(p, (int)n));
			p += n;
			if (*p)
				p++;
		}
		json_object_object_add(o, "cap_add", caps);
	} else {
		json_object_object_add(o, "cap_add", NULL);
	}
	json_object_object_add(o, "network",
			       i->network ? json_object_new_string(i->network) :
					    NULL);
	json_object_object_add(o, "read_only",
			       i->read_only >= 0 ?
				       json_object_new_boolean(i->read_only) :
				       NULL);
	return o;
}

/* "1", "0.5", "2.25": CPUs in billionths; -1 when invalid. */
static int64_t parse_cpus(const char *s)
{
	int64_t whole = 0, frac = 0, scale = 1000000000;
	const char *p = s;

	if (!*p || *p == '.')
		return -1;
	for (; *p >= '0' && *p <= '9'; p++) {
		whole = whole * 10 + (*p - '0');
		if (whole > 4096)
			return -1;
	}
	if (*p == '.') {
		for (p++; *p >= '0' && *p <= '9'; p++) {
			scale /= 10;
			if (scale == 0)
				return -1;
			frac += (*p - '0') * scale;
		}
	}
	return *p ? -1 : whole * 1000000000 + frac;
}

/* A whole number of processes; -1 when invalid. */
static int64_t parse_count(const char *s)
{
	char *end;
	long long v;

	if (!*s || *s == '-' || *s == '+')
		return -1;
	errno = 0;
	v = strtoll(s, &end, 10);
	return errno || *end || v < 0 ? -1 : v;
}

static void limits_line(const hutch_session_info *i)
{
	if (i->memory < 0) {
		printf("  limits: none recorded (a session from before hutch locked sessions "
		       "down: 'hutch up %s --recreate' applies them)\n",
		       i->name);
		return;
	}
	printf("  user %s, memory %lld MiB, cpus %.2f, pids %lld, network %s, "
	       "capabilities %s%s\n",
	       i->user ? i->user : "-", (long long)(i->memory >> 20),
	       (double)i->nano_cpus / 1e9, (long long)i->pids,
	       i->network ? i->network : "-",
	       i->cap_add && *i->cap_add ? i->cap_add : "none",
	       i->read_only == 1 ? ", read-only root" : "");
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

static int cmd_up(cli_globals *g, int argc, char **argv);

static const cli_option up_options[] = {
	{ "image", "IMG", 'i', "the image of a new session" },
	{ "workspace", "DIR", 'w',
	  "bind-mount host DIR as /workspace (else a volume of its own)" },
	{ "seed", "DIR", 's', "copy host DIR into a new session's workspace" },
	{ "exclude", "GLOB", 'x', "with --seed, leave out what GLOB matches" },
	{ "env", "K=V", 'e', "set K in the session (K alone: hutch's own $K)" },
	{ "user", "USER", 'u', "run commands as USER (default: sandbox)" },
	{ "memory", "SIZE", 'm', "memory limit, e.g. 512m or 2g" },
	{ "cpus", "N", 'c', "CPU limit, e.g. 1 or 0.5" },
	{ "pids", "N", 'p', "limit on processes at once" },
	{ "cap-add", "CAP", 'a', "add a capability ('none': none at all)" },
	{ "network", "NAME", 'n', "attach to network NAME (default: none)" },
	{ "read-only", NULL, 'r', "make the container's root read-only" },
	{ "no-read-only", NULL, 'R', "make the root writable again" },
	{ "recreate", NULL, 'C',
	  "make the container anew with these settings, keeping the workspace" },
	{ "json", NULL, 'j', "print the session as JSON" },
	{ NULL, NULL, 0, NULL },
};

const cli_command cli_cmd_up = {
	.name = "up",
	.fn = cmd_up,
	.synopsis = "SESSION [options]",
	.about = "create SESSION, or check that it runs",
	.shortopts = "h",
	.opts = { up_options },
};

struct up_args {
	hutch_session_options so;
	cli_strv env, owned_env, excl, caps;
	int caps_none, json;
	const char *seed, *name;
};

static void up_args_free(struct up_args *a)
{
	cli_strv_free(&a->excl);
	cli_strv_free(&a->caps);
	cli_env_free(&a->env, &a->owned_env);
}

/* A limit of up: 0, or -1 with the error said. */
static int up_limit(struct up_args *a, int c, const char *arg)
{
	hutch_session_options *so = &a->so;

	switch (c) {
	case 'm':
		so->memory = cli_parse_size(arg);
		if (so->memory < 0) {
			cli_error(
				"--memory '%s': expected a size such as 512m or 2g",
				arg);
			return -1;
		}
		if (so->memory < HUTCH_SESSION_MIN_MEMORY) {
			cli_error("--memory '%s': a session needs at least 6m",
				  arg);
			return -1;
		}
		return 0;
	case 'c':
		so->nano_cpus = parse_cpus(arg);
		if (so->nano_cpus <= 0) {
			cli_error(
				"--cpus '%s': expected a number of CPUs such as 1 or 0.5",
				arg);
			return -1;
		}
		return 0;
	case 'p':
		so->pids = parse_count(arg);
		if (so->pids <= 0) {
			cli_error(
				"--pids '%s': expected a number of processes such as 256",
				arg);
			return -1;
		}
		return 0;
	case 'a':
		/* "none" says: no capability at all, also when the session's
		 * record had some. */
		if (strcmp(arg, "none") == 0)
			a->caps_none = 1;
		else if (cli_strv_add(&a->caps, arg) < 0) {
			cli_error("out of memory");
			return -1;
		}
		return 0;
	}
	return -1;
}

/* One option of up: 0, 1 after --help, -1 with the error said. */
static int up_option(struct up_args *a, int c, const char *arg)
{
	switch (c) {
	case 'i':
		a->so.image = arg;
		return 0;
	case 'w':
		a->so.workspace = arg;
		return 0;
	case 'e':
		return cli_env_add(&a->env, &a->owned_env, arg);
	case 's':
		a->seed = arg;
		return 0;
	case 'x':
		if (cli_strv_add(&a->excl, arg) < 0) {
			cli_error("out of memory");
			return -1;
		}
		return 0;
	case 'u':
		a->so.user = arg;
		return 0;
	case 'm':
	case 'c':
	case 'p':
	case 'a':
		return up_limit(a, c, arg);
	case 'n':
		a->so.network = arg;
		return 0;
	case 'r':
		a->so.read_only = 1;
		return 0;
	case 'R':
		a->so.read_only = -1;
		return 0;
	case 'C':
		a->so.recreate = 1;
		return 0;
	case 'j':
		a->json = 1;
		return 0;
	case 'h':
		cli_help(&cli_cmd_up, stdout);
		return 1;
	default:
		return -1;
	}
}

/* The options that exclude each other, and the seed directory, checked
 * before anything is created: 0, or -1 with the error said. */
static int up_check(struct up_args *a)
{
	struct stat sst;

	if (a->seed && a->so.workspace) {
		cli_error(
			"--seed and --workspace exclude each other: a seeded session's "
			"workspace is its own volume, a --workspace session already "
			"sees the host directory");
		return -1;
	}
	if (a->excl.n && !a->seed) {
		cli_error("--exclude only goes with --seed");
		return -1;
	}
	if (a->seed && stat(a->seed, &sst) < 0) {
		cli_error("seed directory '%s': %s", a->seed, strerror(errno));
		return -1;
	}
	if (a->seed && !S_ISDIR(sst.st_mode)) {
		cli_error("seed directory '%s': not a directory", a->seed);
		return -1;
	}
	if (a->caps_none && a->caps.n) {
		cli_error("--cap-add none excludes naming capabilities");
		return -1;
	}
	if (a->seed && a->so.recreate) {
		cli_error(
			"--seed fills a new session; --recreate keeps an existing one's workspace");
		return -1;
	}
	return 0;
}

/* Parse up's command line: 0, 1 after --help, -1 (error said). */
static int up_parse(struct up_args *a, int argc, char **argv)
{
	struct option lo[CLI_MAX_OPTIONS + 2];
	int c, r;

	cli_long_options(&cli_cmd_up, lo);
	while ((c = cli_next_option(&cli_cmd_up, lo, argc, argv)) != -1)
		if ((r = up_option(a, c, optarg)) != 0)
			return r;
	if (argc - optind != 1) {
		cli_usage_error(&cli_cmd_up);
		return -1;
	}
	a->name = argv[optind];
	if (up_check(a) < 0)
		return -1;
	a->so.env = a->env.v;
	a->so.env_count = a->env.n;
	if (a->caps.n || a->caps_none) {
		static const char *const no_caps[1] = { NULL };

		a->so.cap_add = a->caps.n ? a->caps.v : no_caps;
		a->so.cap_add_count = a->caps.n;
	}
	return 0;
}

/* Seeding is for a brand-new session only: it never merges a host tree
 * into a workspace that already holds work.  0 when `s` does not exist
 * yet; else the error is said. */
static int up_seed_new(hutch_session *s, const struct up_args *a)
{
	hutch_session_info *info = NULL;
	hutch_error *err = NULL;
	int r = hutch_session_inspect(&info, s, &err);

	if (r == HUTCH_ENOTFOUND) {
		hutch_error_free(err);
		return 0;
	}
	if (r == 0)
		cli_error(
			"session '%s' already exists; --seed only fills a new "
			"session: use 'hutch sync-in %s %s'",
			a->name, a->name, a->seed);
	else
		cli_fail(err);
	hutch_session_info_free(info);
	return -1;
}

static json_object *seed_json(const char *hostdir, const hutch_sync_stats *st)
{
	json_object *o = json_object_new_object();

	if (!o)
		return NULL;
	json_object_object_add(o, "hostdir", json_object_new_string(hostdir));
	cli_sync_stats_json(o, st, 0);
	return o;
}

/* What up made or found: one JSON object, or lines for a person.  0, or
 * -1 out of memory. */
static int up_report(const struct up_args *a, const hutch_session_info *info,
		     hutch_engine *engine, int created,
		     const hutch_sync_stats *seeded)
{
	json_object *o;

	if (!a->json) {
		printf("%s session %s: container %s, image %s, workspace %s\n",
		       !created	      ? "reused" :
		       a->so.recreate ? "recreated" :
					"created",
		       info->name, info->container ? info->container : "-",
		       info->image ? info->image : "-",
		       info->workspace ? info->workspace : "-");
		limits_line(info);
		if (a->seed)
			cli_sync_summary("seeded", seeded);
		return 0;
	}
	if (!(o = info_json(info)))
		return -1;
	json_object_object_add(
		o, "engine", json_object_new_string(hutch_engine_url(engine)));
	json_object_object_add(o, "created_now",
			       json_object_new_boolean(created));
	json_object_object_add(o, "recreated",
			       json_object_new_boolean(a->so.recreate &&
						       created));
	if (a->seed)
		json_object_object_add(o, "seed", seed_json(a->seed, seeded));
	cli_print_json(o);
	json_object_put(o);
	return 0;
}

static int cmd_up(cli_globals *g, int argc, char **argv)
{
	struct up_args a = { .so = HUTCH_SESSION_OPTIONS_INIT };
	hutch_sync_stats seeded;
	hutch_engine *engine = NULL;
	hutch_session *s = NULL;
	hutch_session_info *info = NULL;
	hutch_error *err = NULL;
	int created = 0, rc = EXIT_HUTCH_FAILED, r;

	if ((r = up_parse(&a, argc, argv)) != 0) {
		rc = r > 0 ? 0 : EXIT_HUTCH_FAILED;
		goto out;
	}
	if ((rc = cli_session_engine(g, a.name, HUTCH_FLEET_CREATE, &engine)) !=
	    0)
		goto out;
	rc = EXIT_HUTCH_FAILED;
	if (hutch_session_open(&s, engine, a.name, &a.so, &err) < 0) {
		rc = cli_fail(err);
		goto out;
	}
	if (a.seed && up_seed_new(s, &a) < 0)
		goto out;
	if (hutch_session_ensure(s, &created, &err) < 0) {
		rc = cli_fail(err);
		goto out;
	}
	if (a.seed && !created) {
		/* Another process made it between our check and now. */
		cli_error(
			"session '%s' was created by someone else meanwhile; --seed only "
			"fills a new session: use 'hutch sync-in %s %s'",
			a.name, a.name, a.seed);
		goto out;
	}
	if (a.seed &&
	    (rc = seed_session(engine, s, a.seed, &a.excl, &seeded)) != 0)
		goto out;
	rc = EXIT_HUTCH_FAILED;
	if (hutch_session_inspect(&info, s, &err) < 0) {
		rc = cli_fail(err);
		goto out;
	}
	if (up_report(&a, info, engine, created, &seeded) == 0)
		rc = 0;
out:
	up_args_free(&a);
	hutch_session_info_free(info);
	hutch_session_free(s);
	hutch_engine_free(engine);
	return rc;
}

/* Every session of every engine of the fleet, each with its engine's URL,
 * sorted by name.  An engine that fails is said and counted in *failed. */
struct listed {
	hutch_session_info *infos;
	size_t n;
};

struct entry {
	hutch_session_info *info;
	const char *engine;
};

static int entry_by_name(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;
	int c = strcmp(x->info->name, y->info->name);

	return c ? c : strcmp(x->engine, y->engine);
}

static int list_fleet(hutch_fleet *fleet, struct listed *per,
		      struct entry **out, size_t *count, int *failed)
{
	size_t total = 0, k = 0;
	struct entry *all;

	*failed = 0;
	for (size_t i = 0; i < hutch_fleet_size(fleet); i++) {
		hutch_engine *e = hutch_fleet_engine(fleet, i);
		hutch_error *err = NULL;

		if (hutch_session_list(&per[i].infos, &per[i].n, e, &err) < 0) {
			if (hutch_fleet_size(fleet) > 1)
				cli_error("%s: %s", hutch_engine_url(e),
					  hutch_error_message(err));
			else
				cli_error("%s", hutch_error_message(err));
			hutch_error_free(err);
			per[i].infos = NULL;
			per[i].n = 0;
			(*failed)++;
		}
		total += per[i].n;
	}
	all = calloc(total ? total : 1, sizeof(*all));
	if (!all) {
		cli_error("out of memory");
		return -1;
	}
	for (size_t i = 0; i < hutch_fleet_size(fleet); i++)
		for (size_t j = 0; j < per[i].n; j++) {
			all[k].info = &per[i].infos[j];
			all[k++].engine =
				hutch_engine_url(hutch_fleet_engine(fleet, i));
		}
	qsort(all, total, sizeof(*all), entry_by_name);
	*out = all;
	*count = total;
	return 0;
}

static void listed_free(hutch_fleet *fleet, struct listed *per)
{
	for (size_t i = 0; per && fleet && i < hutch_fleet_size(fleet); i++)
		hutch_session_info_array_free(per[i].infos, per[i].n);
	free(per);
}

static int cmd_sessions(cli_globals *g, int argc, char **argv);

static const cli_option sessions_options[] = {
	{ "json", NULL, 'j', "print them as a JSON array" },
	{ "names", NULL, 'n', "print their names only, one a line" },
	{ NULL, NULL, 0, NULL },
};

const cli_command cli_cmd_sessions = {
	.name = "sessions",
	.fn = cmd_sessions,
	.synopsis = "[--json | --names]",
	.about = "list the sessions of every engine",
	.shortopts = "h",
	.opts = { sessions_options },
};

static int cmd_sessions(cli_globals *g, int argc, char **argv)
{
	struct option lo[CLI_MAX_OPTIONS + 2];
	hutch_fleet *fleet = NULL;
	struct listed *per = NULL;
	struct entry *all = NULL;
	size_t n = 0;
	int c, json = 0, names = 0, rc = EXIT_HUTCH_FAILED, failed = 0, many;
	char when[32];

	cli_long_options(&cli_cmd_sessions, lo);
	while ((c = cli_next_option(&cli_cmd_sessions, lo, argc, argv)) != -1) {
		switch (c) {
		case 'j':
			json = 1;
			break;
		case 'n':
			names = 1;
			break;
		case 'h':
			cli_help(&cli_cmd_sessions, stdout);
			return 0;
		default:
			return EXIT_HUTCH_FAILED;
		}
	}
	if (optind != argc) {
		cli_usage_error(&cli_cmd_sessions);
		return EXIT_HUTCH_FAILED;
	}
	if ((rc = cli_fleet(g, &fleet)) != 0)
		return rc;
	rc = EXIT_HUTCH_FAILED;
	many = hutch_fleet_size(fleet) > 1;
	per = calloc(hutch_fleet_size(fleet), sizeof(*per));
	if (!per || list_fleet(fleet, per, &all, &n, &failed) < 0)
		goto out;
	/* One engine and it failed: nothing to show. */
	if (!many && failed)
		goto out;
	if (json) {
		json_object *arr = json_object_new_array();

		for (size_t i = 0; arr && i < n; i++) {
			json_object *o = info_json(all[i].info);

			if (o)
				json_object_object_add(
					o, "engine",
					json_object_new_string(all[i].engine));
			json_object_array_add(arr, o);
		}
		if (!arr)
			goto out;
		cli_print_json(arr);
		json_object_put(arr);
	} else if (names) {
		for (size_t i = 0; i < n; i++)
			puts(all[i].info->name);
	} else {
		printf("%-24s %-10s %-28s %-12s %s%s\n", "SESSION", "STATE",
		       "IMAGE", "CREATED", "WORKSPACE", many ? "  ENGINE" : "");
		for (size_t i = 0; i < n; i++) {
			const hutch_session_info *info = all[i].info;

			age(when, sizeof(when), info->created);
			printf("%-24s %-10s %-28s %-12s %s%s%s\n", info->name,
			       info->state ? info->state : "-",
			       info->image ? info->image : "-", when,
			       info->workspace ? info->workspace : "-",
			       many ? "  " : "", many ? all[i].engine : "");
		}
	}
	rc = failed ? EXIT_HUTCH_FAILED : 0;
out:
	free(all);
	listed_free(fleet, per);
	hutch_fleet_free(fleet);
	return rc;
}

/* Remove one session wherever it lives.  0, or 1 when it failed (said). */
static int rm_one(hutch_fleet *fleet, const char *name, int force)
{
	hutch_engine *e = hutch_fleet_engine(fleet, 0);
	hutch_error *err = NULL;
	int r = 0;

	if (hutch_fleet_size(fleet) > 1 && hutch_session_name_valid(name))
		r = hutch_fleet_locate(fleet, name, 0, &e, NULL, &err);
	if (r == 0)
		r = hutch_session_remove(e, name, &err);
	if (r == 0) {
		printf("removed %s\n", name);
		return 0;
	}
	if (r == HUTCH_ENOTFOUND && force) {
		hutch_error_free(err);
		return 0;
	}
	cli_fail(err);
	return 1;
}

static int cmd_rm(cli_globals *g, int argc, char **argv);

static const cli_option rm_options[] = {
	{ "force", NULL, 'f', "a session that does not exist is no error" },
	{ "all", NULL, 'a', "remove every session of every engine" },
	{ NULL, NULL, 0, NULL },
};

const cli_command cli_cmd_rm = {
	.name = "rm",
	.fn = cmd_rm,
	.synopsis = "[--force] SESSION... | hutch rm --all",
	.about = "remove sessions: container, volumes and all",
	.shortopts = "afh",
	.opts = { rm_options },
};

static int cmd_rm(cli_globals *g, int argc, char **argv)
{
	struct option lo[CLI_MAX_OPTIONS + 2];
	hutch_fleet *fleet = NULL;
	struct listed *per = NULL;
	struct entry *all_list = NULL;
	size_t n = 0;
	int c, all = 0, force = 0, rc = EXIT_HUTCH_FAILED, failed = 0;

	cli_long_options(&cli_cmd_rm, lo);
	while ((c = cli_next_option(&cli_cmd_rm, lo, argc, argv)) != -1) {
		switch (c) {
		case 'a':
			all = 1;
			break;
		case 'f':
			force = 1;
			break;
		case 'h':
			cli_help(&cli_cmd_rm, stdout);
			return 0;
		default:
			return EXIT_HUTCH_FAILED;
		}
	}
	if (all == (optind < argc)) {
		cli_usage_error(&cli_cmd_rm);
		return EXIT_HUTCH_FAILED;
	}
	if ((rc = cli_fleet(g, &fleet)) != 0)
		return rc;
	rc = EXIT_HUTCH_FAILED;
	if (all) {
		/* Each session on the engine it was listed on. */
		per = calloc(hutch_fleet_size(fleet), sizeof(*per));
		if (!per || list_fleet(fleet, per, &all_list, &n, &failed) < 0)
			goto out;
		for (size_t i = 0; i < hutch_fleet_size(fleet); i++) {
			hutch_engine *e = hutch_fleet_engine(fleet, i);

			for (size_t j = 0; j < per[i].n; j++) {
				hutch_error *err = NULL;

				if (hutch_session_remove(e,
							 per[i].infos[j].name,
							 &err) == 0) {
					printf("removed %s\n",
					       per[i].infos[j].name);
				} else {
					cli_fail(err);
					failed = 1;
				}
			}
		}
	} else {
		for (int i = optind; i < argc; i++)
			failed |= rm_one(fleet, argv[i], force);
	}
	rc = failed ? EXIT_HUTCH_FAILED : 0;
out:
	free(all_list);
	listed_free(fleet, per);
	hutch_fleet_free(fleet);
	return rc;
}
