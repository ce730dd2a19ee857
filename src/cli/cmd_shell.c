/*
 * cmd_shell.c - hutch shell: an interactive shell in a session, for a
 * person at a terminal
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

/* bash when the image has it, else sh; either way the shell replaces the
 * one that chose it, so the terminal's foreground process is the shell. */
static const char *const shell_argv[] = {
	"sh", "-c",
	"if command -v bash >/dev/null 2>&1; then exec bash; else exec sh; fi"
};

static const cli_option shell_options[] = {
	{ "user", "USER[:GROUP]", 'u',
	  "run the shell as USER (name or uid) instead of the session's user" },
	{ "workdir", "DIR", 'w',
	  "start in DIR (relative: under /workspace; default /workspace)" },
	{ "env", "K=V", 'e', "set K in the shell (K alone: hutch's own $K)" },
	{ "no-create", NULL, 'n',
	  "fail when SESSION does not exist instead of making it (also "
	  "HUTCH_NO_CREATE=1)" },
	{ NULL, NULL, 0, NULL },
};

static int cmd_shell(cli_globals *g, int argc, char **argv);

const cli_command cli_cmd_shell = {
	.name = "shell",
	.fn = cmd_shell,
	.synopsis = "SESSION [options]",
	.about = "open an interactive shell (bash, else sh) in SESSION",
	.shortopts = "+hu:",
	.opts = { shell_options },
};

static int broken_output;

static int on_output(hutch_stream stream, const char *data, size_t len, void *p)
{
	int fd = stream == HUTCH_STREAM_STDERR ? STDERR_FILENO : STDOUT_FILENO;

	(void)p;
	if (cli_write_all(fd, data, len) < 0) {
		broken_output = errno == EPIPE;
		return 1;
	}
	return 0;
}

/* What the shell's ending makes hutch exit with. */
static int shell_status(const hutch_exec_result *res, const char *name)
{
	int rc;

	switch (hutch_exec_result_status(res)) {
	case HUTCH_EXEC_OK:
		rc = hutch_exec_result_exit_code(res);
		return rc < 0 || rc > 255 ? EXIT_HUTCH_FAILED : rc;
	case HUTCH_EXEC_SANDBOX_LOST:
		cli_error("session '%s': the container died under the shell",
			  name);
		return EXIT_HUTCH_FAILED;
	case HUTCH_EXEC_CANCELLED:
		if (broken_output)
			return 128 + SIGPIPE;
		cli_error("interrupted: the shell and everything it started "
			  "were killed");
		return cli_cancel_signal() ? 128 + cli_cancel_signal() :
					     EXIT_HUTCH_FAILED;
	case HUTCH_EXEC_TIMEOUT:
		break;
	}
	return EXIT_HUTCH_FAILED;
}

static int cmd_shell(cli_globals *g, int argc, char **argv)
{
	hutch_exec_options o = HUTCH_EXEC_OPTIONS_INIT;
	struct option lo[CLI_MAX_OPTIONS + 2];
	cli_strv env = { 0 }, owned = { 0 };
	hutch_engine *engine = NULL;
	hutch_session *session = NULL;
	hutch_exec_result *res = NULL;
	hutch_error *err = NULL;
	const char *name = NULL;
	int rc = EXIT_HUTCH_FAILED, c, no_create = 0, tty, run_rc;

	cli_long_options(&cli_cmd_shell, lo);
	/* Options before and after SESSION. */
	for (int pass = 0; pass < 2; pass++) {
		while ((c = cli_next_option(&cli_cmd_shell, lo, argc, argv)) !=
		       -1) {
			switch (c) {
			case 'u':
				o.user = optarg;
				break;
			case 'w':
				o.workdir = optarg;
				break;
			case 'e':
				if (cli_env_add(&env, &owned, optarg) < 0)
					goto out;
				break;
			case 'n':
				no_create = 1;
				break;
			case 'h':
				cli_help(&cli_cmd_shell, stdout);
				rc = 0;
				goto out;
			default:
				cli_usage_error(&cli_cmd_shell);
				goto out;
			}
		}
		if (pass == 0 && optind < argc)
			name = argv[optind++];
	}
	if (!name || optind != argc) {
		cli_usage_error(&cli_cmd_shell);
		goto out;
	}
	/* At a terminal: the shell gets one, and the keys.  Otherwise (a
	 * script piped in) it reads hutch's stdin as it is. */
	tty = isatty(STDIN_FILENO);
	o.argv = shell_argv;
	o.argc = sizeof(shell_argv) / sizeof(shell_argv[0]);
	o.env = env.v;
	o.env_count = env.n;
	o.timeout_ms = 0; /* a person's shell runs as long as they like */
	o.input_fd = STDIN_FILENO;
	o.tty = tty;
	o.tty_size = cli_term_size;
	o.on_output = on_output;
	if (cli_env_flag("HUTCH_NO_CREATE"))
		no_create = 1;
	if (cli_cancel_begin(&o.cancel, 0, &err) < 0) {
		rc = cli_fail(err);
		goto out;
	}
	if ((rc = cli_session_engine(g, name,
				     no_create ? 0 : HUTCH_FLEET_CREATE,
				     &engine)) != 0)
		goto out;
	rc = EXIT_HUTCH_FAILED;
	if (hutch_session_open(&session, engine, name, NULL, &err) < 0) {
		rc = cli_fail(err);
		goto out;
	}
	hutch_session_set_create(session, !no_create);
	if (cli_term_begin(tty) < 0)
		goto out;
	run_rc = hutch_exec_run(&res, session, &o, &err);
	/* The terminal is put back before anything more is said. */
	cli_term_end();
	if (run_rc < 0) {
		rc = cli_fail(err);
		goto out;
	}
	rc = shell_status(res, name);
out:
	cli_env_free(&env, &owned);
	hutch_exec_result_free(res);
	hutch_session_free(session);
	hutch_engine_free(engine);
	cli_term_end();
	cli_cancel_end();
	return rc;
}
