/*
 * main.c - the hutch command: global options, then the command (commands.c)
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: hutch [--engine URL]... COMMAND ...\n\n"
		"Persistent, network-less container sandboxes over the Docker/Podman API.\n\n"
		"commands:\n");
	for (size_t i = 0; i < cli_command_count; i++)
		fprintf(f, "  hutch %s %s\n      %s\n", cli_commands[i]->name,
			cli_commands[i]->synopsis, cli_commands[i]->about);
	fprintf(f,
		"\n'hutch COMMAND --help' lists a command's options.\n"
		"The engine is --engine, else $HUTCH_ENGINE, $DOCKER_HOST, $CONTAINER_HOST,\n"
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
			printf("hutch %s\n", hutch_version());
			return 0;
		default:
			usage(stderr);
			return EXIT_HUTCH_FAILED;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return EXIT_HUTCH_FAILED;
	}
	for (size_t i = 0; i < cli_command_count; i++) {
		if (strcmp(argv[optind], cli_commands[i]->name) == 0) {
			int sub_argc = argc - optind;
			char **sub_argv = argv + optind;

			optind =
				0; /* each command parses its own options afresh */
			return cli_commands[i]->fn(&g, sub_argc, sub_argv);
		}
	}
	cli_error("unknown command '%s'; see 'hutch --help'", argv[optind]);
	return EXIT_HUTCH_FAILED;
}
