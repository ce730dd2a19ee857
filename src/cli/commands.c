/*
 * commands.c - the command table: `hutch --help` and main's dispatch
 */
#include <stdio.h>

#include "cli.h"

static int cmd_version(cli_globals *g, int argc, char **argv)
{
	(void)g;
	(void)argc;
	(void)argv;
	printf("hutch %s\n", hutch_version());
	return 0;
}

static const cli_option no_options[] = { { NULL, NULL, 0, NULL } };

static const cli_command cli_cmd_version = {
	.name = "version",
	.fn = cmd_version,
	.synopsis = "",
	.about = "print hutch's version",
	.shortopts = "h",
	.opts = { no_options },
};

const cli_command *const cli_commands[] = {
	&cli_cmd_up,	  &cli_cmd_exec,	 &cli_cmd_sh,
	&cli_cmd_shell,	  &cli_cmd_port_forward, &cli_cmd_sync_in,
	&cli_cmd_cp,	  &cli_cmd_sync_out,	 &cli_cmd_read,
	&cli_cmd_write,	  &cli_cmd_edit,	 &cli_cmd_grep,
	&cli_cmd_find,	  &cli_cmd_ls,		 &cli_cmd_rm_file,
	&cli_cmd_mv_file, &cli_cmd_ps,		 &cli_cmd_logs,
	&cli_cmd_kill,	  &cli_cmd_wait,	 &cli_cmd_sessions,
	&cli_cmd_rm,	  &cli_cmd_gc,		 &cli_cmd_doctor,
	&cli_cmd_batch,	  &cli_cmd_mcp,		 &cli_cmd_version,
	&cli_cmd_image,
};

const size_t cli_command_count = sizeof(cli_commands) / sizeof(cli_commands[0]);
