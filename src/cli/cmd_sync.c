/*
 * cmd_sync.c - hutch sync-in and hutch sync-out
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <json-c/json.h>

#include "cli.h"

/* At most four progress updates a second. */
#define PROGRESS_EVERY_MS 250

/* Raised by SIGINT/SIGTERM/SIGHUP so the transfer stops cleanly. */

static unsigned long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000ULL +
	       (unsigned long long)ts.tv_nsec / 1000000ULL;
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
	cli_human_size(size, sizeof(size), (double)st->bytes);
	cli_human_size(rate, sizeof(rate), (double)st->archive_bytes / secs);
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

	cli_human_size(size, sizeof(size), (double)st->bytes);
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

void cli_sync_stats_json(struct json_object *o, const hutch_sync_stats *st,
			 int all)
{
	const struct {
		const char *key;
		uint64_t v;
		int all_only;
	} c[] = {
		{ "files", st->files, 0 },
		{ "dirs", st->dirs, 0 },
		{ "symlinks", st->symlinks, 0 },
		{ "hardlinks", st->hardlinks, 1 },
		{ "skipped", st->skipped, 0 },
		{ "excluded", st->excluded, 0 },
		{ "bytes", st->bytes, 0 },
		{ "archive_bytes", st->archive_bytes, 1 },
		{ "duration_ms", st->duration_ms, 0 },
	};

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++)
		if (all || !c[i].all_only)
			json_object_object_add(
				o, c[i].key,
				json_object_new_int64((int64_t)c[i].v));
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
	cli_sync_stats_json(o, st, 1);
	cli_print_json(o);
	json_object_put(o);
}

static int run_sync(cli_globals *g, int argc, char **argv, int in);

int cli_copy_session(cli_globals *g, const char *name, int in,
		     hutch_engine **engine, hutch_session **s)
{
	hutch_error *err = NULL;
	int rc;

	/* Copying in may start a session (sync-in seeds one); copying out
	 * of a session that does not exist is a mistyped name. */
	rc = cli_session_engine(g, name, in ? HUTCH_FLEET_CREATE : 0, engine);
	if (rc != 0)
		return rc;
	if (hutch_session_open(s, *engine, name, NULL, &err) < 0)
		return cli_fail(err);
	hutch_session_set_create(*s, in);
	return 0;
}

static int cmd_sync_in(cli_globals *g, int argc, char **argv)
{
	return run_sync(g, argc, argv, 1);
}

static int cmd_sync_out(cli_globals *g, int argc, char **argv)
{
	return run_sync(g, argc, argv, 0);
}

static const cli_option sync_in_options[] = {
	{ "exclude", "GLOB", 'x', "leave out what GLOB matches" },
	{ "json", NULL, 'j', "print the counts as JSON" },
	{ NULL, NULL, 0, NULL },
};

static const cli_option sync_out_options[] = {
	{ "json", NULL, 'j', "print the counts as JSON" },
	{ NULL, NULL, 0, NULL },
};

const cli_command cli_cmd_sync_in = {
	.name = "sync-in",
	.fn = cmd_sync_in,
	.synopsis = "SESSION HOSTPATH [DEST] [options]",
	.about = "copy host directory HOSTPATH's contents (or a file) into "
		 "the workspace, or DEST in it",
	.shortopts = "h",
	.opts = { sync_in_options },
};

const cli_command cli_cmd_sync_out = {
	.name = "sync-out",
	.fn = cmd_sync_out,
	.synopsis = "SESSION HOSTDIR [PATH] [options]",
	.about = "copy the workspace (or PATH in it) to host HOSTDIR",
	.shortopts = "h",
	.opts = { sync_out_options },
};

static int run_sync(cli_globals *g, int argc, char **argv, int in)
{
	const cli_command *cmd = in ? &cli_cmd_sync_in : &cli_cmd_sync_out;
	struct option lo[CLI_MAX_OPTIONS + 2];
	hutch_sync_options so = HUTCH_SYNC_OPTIONS_INIT;
	cli_sync_progress_state ps = { in ? "sync-in" : "sync-out", 0, 0, 0 };
	hutch_sync_stats st;
	cli_strv excl = { 0 };
	hutch_engine *engine = NULL;
	hutch_session *s = NULL;
	hutch_error *err = NULL;
	const char *name, *hostdir, *path = NULL;
	int c, json = 0, rc = EXIT_HUTCH_FAILED, r;

	/* sync-in's options for both, so that sync-out can say why it
	 * refuses --exclude. */
	cli_long_options(&cli_cmd_sync_in, lo);
	while ((c = cli_next_option(cmd, lo, argc, argv)) != -1) {
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
			cli_help(cmd, stdout);
			rc = 0;
			goto out;
		default:
			goto out;
		}
	}
	if (argc - optind != 2 && argc - optind != 3) {
		cli_usage_error(cmd);
		goto out;
	}
	name = argv[optind];
	hostdir = argv[optind + 1];
	if (argc - optind == 3)
		path = argv[optind + 2];
	so.dest = in ? path : NULL;
	so.exclude = excl.v;
	so.exclude_count = excl.n;
	ps.tty = isatty(STDERR_FILENO);
	so.progress = cli_sync_progress;
	so.payload = &ps;
	if (cli_cancel_begin(&so.cancel, 0, &err) < 0) {
		rc = cli_fail(err);
		goto out;
	}
	if ((rc = cli_copy_session(g, name, in, &engine, &s)) != 0)
		goto out;
	rc = EXIT_HUTCH_FAILED;
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
	cli_cancel_end();
	return rc;
}
