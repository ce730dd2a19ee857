/*
 * cmd_sync.c - hutch sync-in and hutch sync-out
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <json-c/json.h>

#include "cli.h"

#define USAGE_IN \
	"usage: hutch sync-in SESSION HOSTDIR [--exclude GLOB]... [--json]"
#define USAGE_OUT "usage: hutch sync-out SESSION HOSTDIR [PATH] [--json]"
/* At most four progress updates a second. */
#define PROGRESS_EVERY_MS 250

/* Raised by SIGINT/SIGTERM/SIGHUP so the transfer stops cleanly. */
static hutch_cancel *interrupt;

static void on_signal(int sig)
{
	(void)sig;
	hutch_cancel_raise(interrupt);
}

static unsigned long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000ULL +
	       (unsigned long long)ts.tv_nsec / 1000000ULL;
}

static void human_size(char *out, size_t outsz, double v)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	size_t u = 0;

	while (v >= 1024.0 && u + 1 < sizeof(units) / sizeof(units[0])) {
		v /= 1024.0;
		u++;
	}
	snprintf(out, outsz, u ? "%.1f %s" : "%.0f %s", v, units[u]);
}

int cli_sync_progress(const hutch_sync_stats *st, void *payload)
{
	cli_sync_progress_state *ps = payload;
	unsigned long long now = now_ms();
	char size[32], rate[32];
	double secs;

	if (!ps->tty || (ps->shown && now - ps->last_ms < PROGRESS_EVERY_MS))
		return 0;
	ps->last_ms = now;
	ps->shown = 1;
	secs = st->duration_ms ? (double)st->duration_ms / 1000.0 : 0.001;
	human_size(size, sizeof(size), (double)st->bytes);
	human_size(rate, sizeof(rate), (double)st->archive_bytes / secs);
	fprintf(stderr, "\r\033[K%s: %s, %llu files, %s/s", ps->what, size,
		(unsigned long long)st->files, rate);
	fflush(stderr);
	return 0;
}

void cli_sync_progress_end(cli_sync_progress_state *ps)
{
	if (ps->tty && ps->shown) {
		fputs("\r\033[K", stderr);
		fflush(stderr);
	}
	ps->shown = 0;
}

void cli_sync_summary(const char *verb, const hutch_sync_stats *st)
{
	char size[32];

	human_size(size, sizeof(size), (double)st->bytes);
	printf("%s %llu files, %llu directories, %llu symlinks (%s) in %.2f s",
	       verb, (unsigned long long)st->files,
	       (unsigned long long)st->dirs, (unsigned long long)st->symlinks,
	       size, (double)st->duration_ms / 1000.0);
	if (st->hardlinks)
		printf(", %llu hard links", (unsigned long long)st->hardlinks);
	if (st->excluded)
		printf(", %llu excluded", (unsigned long long)st->excluded);
	if (st->skipped)
		printf(", %llu skipped (sockets, fifos, devices)",
		       (unsigned long long)st->skipped);
	putchar('\n');
}

static void print_json(const char *session, const char *direction,
		       const char *hostdir, const char *path,
		       const hutch_sync_stats *st)
{
	json_object *o = json_object_new_object();

	if (!o)
		return;
	json_object_object_add(o, "session", json_object_new_string(session));
	json_object_object_add(o, "direction",
			       json_object_new_string(direction));
	json_object_object_add(o, "hostdir", json_object_new_string(hostdir));
	json_object_object_add(o, "path",
			       json_object_new_string(path ? path : "."));
	json_object_object_add(o, "files",
			       json_object_new_int64((int64_t)st->files));
	json_object_object_add(o, "dirs",
			       json_object_new_int64((int64_t)st->dirs));
	json_object_object_add(o, "symlinks",
			       json_object_new_int64((int64_t)st->symlinks));
	json_object_object_add(o, "hardlinks",
			       json_object_new_int64((int64_t)st->hardlinks));
	json_object_object_add(o, "skipped",
			       json_object_new_int64((int64_t)st->skipped));
	json_object_object_add(o, "excluded",
			       json_object_new_int64((int64_t)st->excluded));
	json_object_object_add(o, "bytes",
			       json_object_new_int64((int64_t)st->bytes));
	json_object_object_add(
		o, "archive_bytes",
		json_object_new_int64((int64_t)st->archive_bytes));
	json_object_object_add(o, "duration_ms",
			       json_object_new_int64((int64_t)st->duration_ms));
	puts(json_object_to_json_string_ext(
		o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
}

static void catch_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

static int run_sync(cli_globals *g, int argc, char **argv, int in)
{
	static const struct option opts[] = {
		{ "exclude", required_argument, NULL, 'x' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *usage = in ? USAGE_IN : USAGE_OUT;
	hutch_sync_options so = HUTCH_SYNC_OPTIONS_INIT;
	cli_sync_progress_state ps = { in ? "sync-in" : "sync-out", 0, 0, 0 };
	hutch_sync_stats st;
	cli_strv excl = { 0 };
	hutch_engine *engine = NULL;
	hutch_session *s = NULL;
	hutch_error *err = NULL;
	const char *name, *hostdir, *path = NULL;
	int c, json = 0, rc = EXIT_HUTCH_FAILED, r;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'x':
			if (!in) {
				cli_error("sync-out has no --exclude");
				goto out;
			}
			if (cli_strv_add(&excl, optarg) < 0) {
				cli_error("out of memory");
				goto out;
			}
			break;
		case 'j':
			json = 1;
			break;
		case 'h':
			puts(usage);
			rc = 0;
			goto out;
		default:
			goto out;
		}
	}
	if (argc - optind != 2 && (in || argc - optind != 3)) {
		cli_error("%s", usage);
		goto out;
	}
	name = argv[optind];
	hostdir = argv[optind + 1];
	if (!in && argc - optind == 3)
		path = argv[optind + 2];
	so.exclude = excl.v;
	so.exclude_count = excl.n;
	ps.tty = isatty(STDERR_FILENO);
	so.progress = cli_sync_progress;
	so.payload = &ps;
	if (hutch_cancel_new(&interrupt, &err) < 0) {
		rc = cli_fail(err);
		goto out;
	}
	so.cancel = interrupt;
	catch_signals();
	if ((rc = cli_session_engine(g, name, HUTCH_FLEET_CREATE, &engine)) !=
	    0)
		goto out;
	rc = EXIT_HUTCH_FAILED;
	if (hutch_session_open(&s, engine, name, NULL, &err) < 0) {
		rc = cli_fail(err);
		goto out;
	}
	r = in ? hutch_sync_in(&st, s, hostdir, &so, &err) :
		 hutch_sync_out(&st, s, hostdir, path, &so, &err);
	cli_sync_progress_end(&ps);
	if (r < 0) {
		rc = cli_fail(err);
		goto out;
	}
	if (json)
		print_json(name, in ? "in" : "out", hostdir, path, &st);
	else
		cli_sync_summary(in ? "synced in" : "synced out", &st);
	rc = 0;
out:
	hutch_session_free(s);
	hutch_engine_free(engine);
	cli_strv_free(&excl);
	if (interrupt) {
		hutch_cancel *cancel = interrupt;

		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		interrupt = NULL;
		hutch_cancel_free(cancel);
	}
	return rc;
}

int cmd_sync_in(cli_globals *g, int argc, char **argv)
{
	return run_sync(g, argc, argv, 1);
}

int cmd_sync_out(cli_globals *g, int argc, char **argv)
{
	return run_sync(g, argc, argv, 0);
}
