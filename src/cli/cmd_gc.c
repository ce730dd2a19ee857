/*
 * cmd_gc.c - hutch gc: remove the sessions nobody used for a while
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>

#include "cli.h"
#include "duration.h"

struct gc_out {
	int json;
	const char *engine; /* URL of the engine being collected */
	int many;	    /* more than one engine: say which */
	size_t nfailed;
	json_object *removed, *would, *busy, *kept, *failed;
};

static json_object *entry_json(const hutch_gc_entry *en, const char *engine)
{
	json_object *o = json_object_new_object();

	if (!o)
		return NULL;
	json_object_object_add(o, "name", json_object_new_string(en->name));
	json_object_object_add(o, "kind", json_object_new_string(en->kind));
	json_object_object_add(o, "last_used",
			       json_object_new_int64(en->last_used));
	json_object_object_add(o, "idle", json_object_new_int64(en->idle));
	json_object_object_add(o, "engine", json_object_new_string(engine));
	if (en->error)
		json_object_object_add(
			o, "error",
			json_object_new_string(hutch_error_message(en->error)));
	return o;
}

static void on_entry(const hutch_gc_entry *en, void *payload)
{
	struct gc_out *out = payload;
	const char *what = strcmp(en->kind, "session") == 0 ? "session" :
							      "agent volume of";
	char idle[32];

	if (en->action == HUTCH_GC_FAILED)
		out->nfailed++;
	if (out->json) {
		json_object *arr =
			en->action == HUTCH_GC_REMOVED	    ? out->removed :
			en->action == HUTCH_GC_WOULD_REMOVE ? out->would :
			en->action == HUTCH_GC_BUSY	    ? out->busy :
			en->action == HUTCH_GC_KEPT	    ? out->kept :
							      out->failed;

		json_object_array_add(arr, entry_json(en, out->engine));
		return;
	}
	cli_format_duration(idle, sizeof(idle), en->idle);
	switch (en->action) {
	case HUTCH_GC_REMOVED:
		printf("removed %s %s (idle %s)%s%s\n", what, en->name, idle,
		       out->many ? " on " : "", out->many ? out->engine : "");
		break;
	case HUTCH_GC_WOULD_REMOVE:
		printf("would remove %s %s (idle %s)%s%s\n", what, en->name,
		       idle, out->many ? " on " : "",
		       out->many ? out->engine : "");
		break;
	case HUTCH_GC_BUSY:
		printf("skipped %s %s (idle %s)%s%s: busy, a command is running\n",
		       what, en->name, idle, out->many ? " on " : "",
		       out->many ? out->engine : "");
		break;
	case HUTCH_GC_FAILED:
		cli_error("%s", hutch_error_message(en->error));
		break;
	case HUTCH_GC_KEPT:
		break;
	}
	fflush(stdout);
}

/* With --json, what was done as one object. */
static void print_json(const struct gc_out *out, const hutch_gc_options *o)
{
	json_object *doc = json_object_new_object();

	if (!doc)
		return;
	json_object_object_add(doc, "idle", json_object_new_int64(o->idle));
	json_object_object_add(doc, "dry_run",
			       json_object_new_boolean(o->dry_run));
	json_object_object_add(doc, "removed", json_object_get(out->removed));
	json_object_object_add(doc, "would_remove",
			       json_object_get(out->would));
	json_object_object_add(doc, "busy", json_object_get(out->busy));
	json_object_object_add(doc, "kept", json_object_get(out->kept));
	json_object_object_add(doc, "failed", json_object_get(out->failed));
	cli_print_json(doc);
	json_object_put(doc);
}

static int cmd_gc(cli_globals *g, int argc, char **argv);

static const cli_option gc_options[] = {
	{ "idle", "DURATION", 'i',
	  "remove what was not used for DURATION (90s, 30m, 2h, 7d, 1h30m)" },
	{ "match", "GLOB", 'm', "only sessions whose name GLOB matches" },
	{ "dry-run", NULL, 'n', "say what would be removed, remove nothing" },
	{ "json", NULL, 'j', "print what was done as JSON" },
	{ NULL, NULL, 0, NULL },
};

const cli_command cli_cmd_gc = {
	.name = "gc",
	.fn = cmd_gc,
	.synopsis = "--idle DURATION [options]",
	.about = "remove idle sessions",
	.shortopts = "h",
	.opts = { gc_options },
};

static int cmd_gc(cli_globals *g, int argc, char **argv)
{
	struct option lo[CLI_MAX_OPTIONS + 2];
	hutch_gc_options o = HUTCH_GC_OPTIONS_INIT;
	struct gc_out out = { 0 };
	hutch_fleet *fleet = NULL;
	const char *idle = NULL;
	int c, rc;

	cli_long_options(&cli_cmd_gc, lo);
	while ((c = cli_next_option(&cli_cmd_gc, lo, argc, argv)) != -1) {
		switch (c) {
		case 'i':
			idle = optarg;
			break;
		case 'm':
			o.match = optarg;
			break;
		case 'n':
			o.dry_run = 1;
			break;
		case 'j':
			out.json = 1;
			break;
		case 'h':
			cli_help(&cli_cmd_gc, stdout);
			return 0;
		default:
			return EXIT_HUTCH_FAILED;
		}
	}
	if (optind != argc || !idle) {
		cli_usage_error(&cli_cmd_gc);
		return EXIT_HUTCH_FAILED;
	}
	if (cli_parse_duration(idle, &o.idle) < 0) {
		cli_error(
			"invalid duration '%.80s': use a number and a unit, d, h, m or s, "
			"largest first (90s, 30m, 2h, 7d, 1h30m), or 0",
			idle);
		return EXIT_HUTCH_FAILED;
	}
	if (out.json) {
		out.removed = json_object_new_array();
		out.would = json_object_new_array();
		out.busy = json_object_new_array();
		out.kept = json_object_new_array();
		out.failed = json_object_new_array();
		if (!out.removed || !out.would || !out.busy || !out.kept ||
		    !out.failed) {
			cli_error("out of memory");
			rc = EXIT_HUTCH_FAILED;
			goto out;
		}
	}
	if ((rc = cli_fleet(g, &fleet)) != 0)
		goto out;
	/* Every engine, each on its own: one that fails does not stop the
	 * others. */
	out.many = hutch_fleet_size(fleet) > 1;
	for (size_t i = 0; i < hutch_fleet_size(fleet); i++) {
		hutch_engine *engine = hutch_fleet_engine(fleet, i);
		hutch_error *err = NULL;
		size_t failed_before = out.nfailed;

		out.engine = hutch_engine_url(engine);
		if (hutch_session_gc(engine, &o, on_entry, &out, &err) < 0)
			rc = EXIT_HUTCH_FAILED;
		/* Without --json each session that failed was said already. */
		if (err && (out.json || out.nfailed == failed_before)) {
			if (out.many)
				cli_error("%s: %s", out.engine,
					  hutch_error_message(err));
			else
				cli_error("%s", hutch_error_message(err));
		}
		hutch_error_free(err);
	}
	if (out.json)
		print_json(&out, &o);
out:
	json_object_put(out.removed);
	json_object_put(out.would);
	json_object_put(out.busy);
	json_object_put(out.kept);
	json_object_put(out.failed);
	hutch_fleet_free(fleet);
	return rc;
}
