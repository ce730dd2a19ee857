/*
 * cmd_image.c - hutch image import and hutch image rm
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static const cli_option image_options[] = {
	{ "env", "KEY=VALUE", 'e', "import: set in the image's environment" },
	{ "workdir", "DIR", 'w', "import: the image's working directory" },
	{ "user", "USER", 'u', "import: the user the image runs as" },
	{ "label", "KEY=VALUE", 'l', "import: label the image" },
	{ "if-changed", NULL, 'c',
	  "import: nothing when NAME already carries every --label" },
	{ "prune", NULL, 'p',
	  "import: remove the image NAME named before, unless in use" },
	{ "force", NULL, 'f', "rm: also when a stopped container uses it" },
	{ NULL, NULL, 0, NULL },
};

static int cmd_image(cli_globals *g, int argc, char **argv);

const cli_command cli_cmd_image = {
	.name = "image",
	.fn = cmd_image,
	.synopsis = "import ROOTFS_DIR|ROOTFS.tar NAME[:TAG] [options] | "
		    "rm NAME[:TAG]",
	.about = "import a root filesystem as an image (no registry), "
		 "or remove one",
	.shortopts = "he:w:u:fl:cp",
	.opts = { image_options },
};

struct progress {
	int tty, shown;
};

/* Bytes sent and the rate, on stderr when it is a terminal (the library
 * calls at most ten times a second). */
static int on_progress(uint64_t bytes, uint64_t elapsed_ms, void *payload)
{
	struct progress *p = payload;
	char size[32], rate[32];
	double secs = elapsed_ms ? (double)elapsed_ms / 1000.0 : 0.001;

	if (!p->tty)
		return 0;
	cli_human_size(size, sizeof(size), (double)bytes);
	cli_human_size(rate, sizeof(rate), (double)bytes / secs);
	fprintf(stderr, "\r\033[Kimport: %s sent, %s/s", size, rate);
	fflush(stderr);
	p->shown = 1;
	return 0;
}

/* The one engine of --engine or discovery: an image goes to one. */
static int one_engine(cli_globals *g, hutch_engine **out)
{
	hutch_fleet *fleet;
	int rc;

	if ((rc = cli_fleet(g, &fleet)) != 0)
		return rc;
	if (hutch_fleet_size(fleet) != 1) {
		cli_error("image: give one engine (--engine URL); %zu are set",
			  hutch_fleet_size(fleet));
		hutch_fleet_free(fleet);
		return EXIT_HUTCH_FAILED;
	}
	*out = hutch_fleet_detach(fleet, hutch_fleet_engine(fleet, 0));
	hutch_fleet_free(fleet);
	return 0;
}

static int cmd_image(cli_globals *g, int argc, char **argv)
{
	const cli_command *cmd = &cli_cmd_image;
	struct option lo[CLI_MAX_OPTIONS + 2];
	hutch_image_import_options io = HUTCH_IMAGE_IMPORT_OPTIONS_INIT;
	struct progress pr = { 0, 0 };
	cli_strv env = { 0 }, labels = { 0 };
	hutch_engine *engine = NULL;
	hutch_error *err = NULL;
	hutch_cancel *cancel = NULL;
	const char *sub;
	char *id = NULL;
	int c, force = 0, import, rc = EXIT_HUTCH_FAILED;

	cli_long_options(cmd, lo);
	while ((c = cli_next_option(cmd, lo, argc, argv)) != -1) {
		switch (c) {
		case 'e':
			if (!strchr(optarg, '=') || optarg[0] == '=') {
				cli_error("--env '%s': give KEY=VALUE", optarg);
				goto out;
			}
			if (cli_strv_add(&env, optarg) < 0) {
				cli_error("out of memory");
				goto out;
			}
			break;
		case 'l':
			if (cli_strv_add(&labels, optarg) < 0) {
				cli_error("out of memory");
				goto out;
			}
			break;
		case 'c':
			io.if_changed = 1;
			break;
		case 'p':
			io.prune = 1;
			break;
		case 'w':
			io.workdir = optarg;
			break;
		case 'u':
			io.user = optarg;
			break;
		case 'f':
			force = 1;
			break;
		case 'h':
			cli_help(cmd, stdout);
			rc = 0;
			goto out;
		default:
			goto out;
		}
	}
	sub = optind < argc ? argv[optind] : "";
	import = strcmp(sub, "import") == 0;
	if (!(import && argc - optind == 3) &&
	    !(strcmp(sub, "rm") == 0 && argc - optind == 2)) {
		cli_usage_error(cmd);
		goto out;
	}
	if (import && force) {
		cli_error("image import has no --force");
		goto out;
	}
	if (!import && (env.n || labels.n || io.workdir || io.user ||
			io.if_changed || io.prune)) {
		cli_error("image rm takes only --force");
		goto out;
	}
	if (io.if_changed && !labels.n) {
		cli_error("image import --if-changed: give the --label to "
			  "compare");
		goto out;
	}
	/* Checked before any engine is asked. */
	if (import && !hutch_image_ref_valid(argv[optind + 2])) {
		cli_error("invalid image name '%s': give NAME or NAME:TAG "
			  "(lowercase NAME, e.g. my-rootfs:1.0)",
			  argv[optind + 2]);
		goto out;
	}
	if ((rc = one_engine(g, &engine)) != 0)
		goto out;
	rc = EXIT_HUTCH_FAILED;
	if (!import) {
		if (hutch_image_remove(engine, argv[optind + 1], force, &err) <
		    0) {
			rc = cli_fail(err);
			goto out;
		}
		rc = 0;
		goto out;
	}
	io.env = env.v;
	io.env_count = env.n;
	io.labels = labels.v;
	io.label_count = labels.n;
	pr.tty = isatty(STDERR_FILENO);
	io.progress = on_progress;
	io.payload = &pr;
	if (cli_cancel_begin(&cancel, 0, &err) < 0) {
		rc = cli_fail(err);
		goto out;
	}
	io.cancel = cancel;
	c = hutch_image_import(engine, argv[optind + 1], argv[optind + 2], &io,
			       &id, &err);
	if (pr.shown) {
		fputs("\r\033[K", stderr);
		fflush(stderr);
	}
	if (c < 0) {
		rc = cli_fail(err);
		goto out;
	}
	if (c == 1 && isatty(STDERR_FILENO))
		fprintf(stderr, "image: %s already holds this build\n",
			argv[optind + 2]);
	/* The ID, as docker import prints it; the name when the engine
	 * gave none. */
	printf("%s\n", id ? id : argv[optind + 2]);
	rc = 0;
out:
	free(id);
	hutch_engine_free(engine);
	cli_strv_free(&env);
	cli_strv_free(&labels);
	if (cancel)
		cli_cancel_end();
	return rc;
}
