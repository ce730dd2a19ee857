/*
 * main.c - the hutch command: global options and the command table
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static int cmd_version(cli_globals *g, int argc, char **argv)
{
	printf("hutch %s\n", hutch_version());
	return 0;
}

static const struct {
	const char *name;
	cli_cmd_fn fn;
	const char *usage;
} commands[] = {
	{ "up", cmd_up,
	  "up SESSION [--image IMG] [--workspace DIR | --seed DIR [--exclude GLOB]...] [--env K=V]... [--json]" },
	{ "exec", cmd_exec,
	  "exec SESSION [--timeout SEC] [--workdir DIR] [--env K=V]... [--json] [--max-output BYTES] [--] ARGV..." },
	{ "sh", cmd_sh, "sh SESSION [exec options] 'SHELL COMMAND'" },
	{ "sync-in", cmd_sync_in,
	  "sync-in SESSION HOSTDIR [--exclude GLOB]... [--json]" },
	{ "sync-out", cmd_sync_out,
	  "sync-out SESSION HOSTDIR [PATH] [--json]" },
	{ "read", cmd_read,
	  "read SESSION PATH [--offset LINE] [--limit N] [--json]" },
	{ "write", cmd_write,
	  "write SESSION PATH [--content TEXT] [--json]   (stdin without --content)" },
	{ "edit", cmd_edit,
	  "edit SESSION PATH --old TEXT --new TEXT [--all] [--json]" },
	{ "grep", cmd_grep,
	  "grep SESSION PATTERN [PATH] [--include GLOB]... [-i] [--max N] [--json]" },
	{ "find", cmd_find,
	  "find SESSION GLOB [PATH] [--type f|d] [--max N] [--json]" },
	{ "ls", cmd_ls, "ls SESSION [PATH] [--json]" },
	{ "sessions", cmd_sessions, "sessions [--json | --names]" },
	{ "rm", cmd_rm, "rm [--force] SESSION... | rm --all" },
	{ "gc", cmd_gc,
	  "gc --idle DURATION [--match GLOB] [--dry-run] [--json]   (remove idle sessions)" },
	{ "doctor", cmd_doctor, "doctor [--json]" },
	{ "batch", cmd_batch,
	  "batch FILE.jsonl|- [--parallel N] [--keep] [--timeout SEC] [--max-output BYTES] [--image IMG]" },
	{ "mcp", cmd_mcp,
	  "mcp [--session NAME] [--rm] [--image IMG] [--workspace DIR] [--env K=V]...   (MCP server on stdio)" },
	{ "version", cmd_version, "version" },
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: hutch [--engine URL]... COMMAND ...\n\n"
		"Persistent, network-less container sandboxes over the Docker/Podman API.\n\n"
		"commands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  hutch %s\n", commands[i].usage);
	fprintf(f,
		"\nThe engine is --engine, else $HUTCH_ENGINE, $DOCKER_HOST, $CONTAINER_HOST,\n"
		"else the usual Docker and Podman sockets.  Several engines (--engine more\n"
		"than once, or $HUTCH_ENGINES): each session lives on one.  See hutch(1).\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "engine", required_argument, NULL, 'e' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	cli_globals g = { .prog = "hutch" };
	int c;

	/* A closed stdout must show up as EPIPE on write, not kill hutch
	 * before it can stop the command in the container. */
	signal(SIGPIPE, SIG_IGN);

	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		switch (c) {
		case 'e':
			if (g.nengines == CLI_MAX_ENGINES) {
				cli_error("more than %d --engine",
					  CLI_MAX_ENGINES);
				return EXIT_HUTCH_FAILED;
			}
			g.engines[g.nengines++] = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			return cmd_version(&g, 0, NULL);
		default:
			usage(stderr);
			return EXIT_HUTCH_FAILED;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return EXIT_HUTCH_FAILED;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		if (strcmp(argv[optind], commands[i].name) == 0) {
			int sub_argc = argc - optind;
			char **sub_argv = argv + optind;

			optind =
				0; /* each command parses its own options afresh */
			return commands[i].fn(&g, sub_argc, sub_argv);
		}
	}
	cli_error("unknown command '%s'; see 'hutch --help'", argv[optind]);
	return EXIT_HUTCH_FAILED;
}
