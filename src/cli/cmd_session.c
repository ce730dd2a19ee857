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

#define USAGE_UP                                                               \
	"usage: hutch up SESSION [--image IMG] [--workspace DIR | --seed DIR " \
	"[--exclude GLOB]...] [--env K=V]... [--user USER] [--memory SIZE] "   \
	"[--cpus N] [--pids N] [--cap-add CAP]... [--network NAME] "           \
	"[--read-only | --no-read-only] [--recreate] [--json]"

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

static void print_json(json_object *o)
{
	puts(json_object_to_json_string_ext(
		o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
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
		{ "user", required_argument, NULL, 'u' },
		{ "memory", required_argument, NULL, 'm' },
		{ "cpus", required_argument, NULL, 'c' },
		{ "pids", required_argument, NULL, 'p' },
		{ "cap-add", required_argument, NULL, 'a' },
		{ "network", required_argument, NULL, 'n' },
		{ "read-only", no_argument, NULL, 'r' },
		{ "no-read-only", no_argument, NULL, 'R' },
		{ "recreate", no_argument, NULL, 'C' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	hutch_session_options so = HUTCH_SESSION_OPTIONS_INIT;
	cli_strv env = { 0 }, owned_env = { 0 }, excl = { 0 }, caps = { 0 };
	int caps_none = 0;
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
		case 'u':
			so.user = optarg;
			break;
		case 'm':
			so.memory = cli_parse_size(optarg);
			if (so.memory < 0) {
				cli_error(
					"--memory '%s': expected a size such as 512m or 2g",
					optarg);
				goto out;
			}
			if (so.memory < HUTCH_SESSION_MIN_MEMORY) {
				cli_error(
					"--memory '%s': a session needs at least 6m",
					optarg);
				goto out;
			}
			break;
		case 'c':
			so.nano_cpus = parse_cpus(optarg);
			if (so.nano_cpus <= 0) {
				cli_error(
					"--cpus '%s': expected a number of CPUs such as 1 or 0.5",
					optarg);
				goto out;
			}
			break;
		case 'p':
			so.pids = parse_count(optarg);
			if (so.pids <= 0) {
				cli_error(
					"--pids '%s': expected a number of processes such as 256",
					optarg);
				goto out;
			}
			break;
		case 'a':
			/* "none" says: no capability at all, also when the
			 * session's record had some. */
			if (strcmp(optarg, "none") == 0)
				caps_none = 1;
			else if (cli_strv_add(&caps, optarg) < 0) {
				cli_error("out of memory");
				goto out;
			}
			break;
		case 'n':
			so.network = optarg;
			break;
		case 'r':
			so.read_only = 1;
			break;
		case 'R':
			so.read_only = -1;
			break;
		case 'C':
			so.recreate = 1;
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
		cli_error(
			"--seed and --workspace exclude each other: a seeded session's "
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
	if (caps_none && caps.n) {
		cli_error("--cap-add none excludes naming capabilities");
		goto out;
	}
	if (seed && so.recreate) {
		cli_error(
			"--seed fills a new session; --recreate keeps an existing one's workspace");
		goto out;
	}
	so.env = env.v;
	so.env_count = env.n;
	if (caps.n || caps_none) {
		static const char *const no_caps[1] = { NULL };

		so.cap_add = caps.n ? caps.v : no_caps;
		so.cap_add_count = caps.n;
	}
	if ((rc = cli_session_engine(g, name, HUTCH_FLEET_CREATE, &engine)) !=
	    0)
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
				cli_error(
					"session '%s' already exists; --seed only fills a new "
					"session: use 'hutch sync-in %s %s'",
					name, name, seed);
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
		cli_error(
			"session '%s' was created by someone else meanwhile; --seed only "
			"fills a new session: use 'hutch sync-in %s %s'",
			name, name, seed);
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
		json_object_object_add(
			o, "engine",
			json_object_new_string(hutch_engine_url(engine)));
		json_object_object_add(o, "created_now",
				       json_object_new_boolean(created));
		json_object_object_add(o, "recreated",
				       json_object_new_boolean(so.recreate &&
							       created));
		if (seed) {
			json_object *so_ = json_object_new_object();

			if (so_) {
				json_object_object_add(
					so_, "hostdir",
					json_object_new_string(seed));
				json_object_object_add(
					so_, "files",
					json_object_new_int64(
						(int64_t)seeded.files));
				json_object_object_add(
					so_, "dirs",
					json_object_new_int64(
						(int64_t)seeded.dirs));
				json_object_object_add(
					so_, "symlinks",
					json_object_new_int64(
						(int64_t)seeded.symlinks));
				json_object_object_add(
					so_, "skipped",
					json_object_new_int64(
						(int64_t)seeded.skipped));
				json_object_object_add(
					so_, "excluded",
					json_object_new_int64(
						(int64_t)seeded.excluded));
				json_object_object_add(
					so_, "bytes",
					json_object_new_int64(
						(int64_t)seeded.bytes));
				json_object_object_add(
					so_, "duration_ms",
					json_object_new_int64(
						(int64_t)seeded.duration_ms));
			}
			json_object_object_add(o, "seed", so_);
		}
		print_json(o);
		json_object_put(o);
	} else {
		printf("%s session %s: container %s, image %s, workspace %s\n",
		       !created	   ? "reused" :
		       so.recreate ? "recreated" :
				     "created",
		       info->name, info->container ? info->container : "-",
		       info->image ? info->image : "-",
		       info->workspace ? info->workspace : "-");
		limits_line(info);
		if (seed)
			cli_sync_summary("seeded", &seeded);
	}
	rc = 0;
out:
	cli_strv_free(&excl);
	cli_strv_free(&caps);
	cli_env_free(&env, &owned_env);
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

int cmd_sessions(cli_globals *g, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "names", no_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	hutch_fleet *fleet = NULL;
	struct listed *per = NULL;
	struct entry *all = NULL;
	size_t n = 0;
	int c, json = 0, names = 0, rc = EXIT_HUTCH_FAILED, failed = 0, many;
	char when[32];

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = 1;
			break;
		case 'n':
			names = 1;
			break;
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
		print_json(arr);
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

int cmd_rm(cli_globals *g, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "all", no_argument, NULL, 'a' },
		{ "force", no_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	hutch_fleet *fleet = NULL;
	struct listed *per = NULL;
	struct entry *all_list = NULL;
	size_t n = 0;
	int c, all = 0, force = 0, rc = EXIT_HUTCH_FAILED, failed = 0;

	while ((c = getopt_long(argc, argv, "afh", opts, NULL)) != -1) {
		switch (c) {
		case 'a':
			all = 1;
			break;
		case 'f':
			force = 1;
			break;
		case 'h':
			puts("usage: hutch rm [--force] SESSION... | hutch rm --all");
			return 0;
		default:
			return EXIT_HUTCH_FAILED;
		}
	}
	if (all == (optind < argc)) {
		cli_error(
			"usage: hutch rm [--force] SESSION... | hutch rm --all");
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
