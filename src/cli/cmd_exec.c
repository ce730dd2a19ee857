/*
 * cmd_exec.c - hutch exec and hutch sh
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <json-c/json.h>

#include "cli.h"

struct stream_state {
	int broken; /* our stdout or stderr is gone */
};

/* Output goes straight to our own stdout and stderr as it arrives: no
 * stdio buffering between the container and the terminal. */
static int on_output(hutch_stream stream, const char *data, size_t len, void *p)
{
	struct stream_state *st = p;
	int fd = stream == HUTCH_STREAM_STDERR ? STDERR_FILENO : STDOUT_FILENO;

	if (cli_write_all(fd, data, len) < 0) {
		/* Nobody reads any more (`hutch exec s yes | head`): stop
		 * the command rather than let it run on unread. */
		st->broken = errno == EPIPE;
		return 1;
	}
	return 0;
}

/* Long-only options (no letter). */
enum {
	OPT_INPUT = 256,
	OPT_INPUT_FILE,
};

static const cli_option exec_options[] = {
	{ "timeout", "SEC", 'T',
	  "kill the command after SEC seconds (default 120; 0: never)" },
	{ "workdir", "DIR", 'w',
	  "run in DIR (relative: under /workspace; default /workspace)" },
	{ "env", "K=V", 'e',
	  "set K for this command (K alone: hutch's own $K)" },
	{ "secret", "NAME[=@FILE]", 's',
	  "give $NAME (or FILE's contents) as a secret: redacted from output" },
	{ "json", NULL, 'j', "print one JSON result instead of the output" },
	{ "max-output", "BYTES", 'm',
	  "with --json, keep at most BYTES a stream" },
	{ "no-create", NULL, 'n',
	  "fail when SESSION does not exist instead of making it (also "
	  "HUTCH_NO_CREATE=1)" },
	{ "detach", NULL, 'd',
	  "start the command in the background, print its id and return "
	  "(see ps, logs, kill, wait)" },
	{ "interactive", NULL, 'i',
	  "give the command hutch's stdin as it arrives (EOF closes the "
	  "command's); without -i, --input or --input-file its stdin is "
	  "/dev/null" },
	{ "tty", NULL, 't',
	  "give the command a terminal (one combined output stream); with -i "
	  "and a terminal on stdin, hutch's is put in raw mode and its size "
	  "follows the window" },
	{ "input", "TEXT", OPT_INPUT,
	  "give TEXT to the command as its stdin, then end of file" },
	{ "input-file", "FILE", OPT_INPUT_FILE,
	  "give FILE's contents (-: hutch's stdin) as the command's stdin" },
	{ "user", "USER[:GROUP]", 'u',
	  "run this command as USER (name or uid) instead of the session's "
	  "user" },
	{ NULL, NULL, 0, NULL },
};

static int cmd_exec(cli_globals *g, int argc, char **argv);
static int cmd_sh(cli_globals *g, int argc, char **argv);

const cli_command cli_cmd_exec = {
	.name = "exec",
	.fn = cmd_exec,
	.synopsis = "SESSION [options] [--] ARGV...",
	.about = "run a command in SESSION (made when missing; stdin: "
		 "/dev/null unless -i)",
	.shortopts = "+hditu:",
	.opts = { exec_options },
};

const cli_command cli_cmd_sh = {
	.name = "sh",
	.fn = cmd_sh,
	.synopsis = "SESSION [options] 'SHELL COMMAND'",
	.about = "run a shell command line in SESSION (sh -c)",
	.shortopts = "+hditu:",
	.opts = { exec_options },
};

/* What the command line asks: options before and after SESSION, then the
 * command. */
struct exec_args {
	const cli_command *cmd;
	hutch_exec_options o;
	cli_strv env, owned_env, secrets;
	const char *name, *sh_argv[3];
	int json;
	int no_create;
	int detach, timeout_given,
		max_output_given; /* -d and what it refuses */
	int interactive;	  /* -i */
	int inputs;		  /* how many of -i, --input, --input-file */
	const char *input_file;	  /* --input-file */
	int input_fd;		  /* opened for it; -1 none */
	int term_failed;	  /* cli_term_begin failed (said) */
};

static void exec_args_free(struct exec_args *a)
{
	cli_env_free(&a->env, &a->owned_env);
	cli_secrets_free(&a->secrets);
	if (a->input_fd > STDIN_FILENO)
		close(a->input_fd);
}

/* One option; 0, 1 when --help was shown, -1 with the error said. */
static int exec_option(struct exec_args *a, int c)
{
	switch (c) {
	case 'T':
		a->timeout_given = 1;
		return cli_opt_timeout(optarg, &a->o.timeout_ms);
	case 'i':
		a->interactive = 1;
		a->inputs++;
		return 0;
	case 't':
		a->o.tty = 1;
		return 0;
	case OPT_INPUT:
		a->o.input = optarg;
		a->o.input_len = strlen(optarg);
		a->inputs++;
		return 0;
	case OPT_INPUT_FILE:
		a->input_file = optarg;
		a->inputs++;
		return 0;
	case 'u':
		/* Checked by the library (a name is looked up in the
		 * session's /etc/passwd). */
		a->o.user = optarg;
		return 0;
	case 'w':
		/* Relative is under /workspace: the library resolves it. */
		a->o.workdir = optarg;
		return 0;
	case 'e':
		return cli_env_add(&a->env, &a->owned_env, optarg);
	case 's':
		return cli_secret_add(&a->secrets, optarg);
	case 'j':
		a->json = 1;
		return 0;
	case 'm':
		a->max_output_given = 1;
		return cli_opt_max_output(optarg, &a->o.max_output);
	case 'n':
		a->no_create = 1;
		return 0;
	case 'd':
		a->detach = 1;
		return 0;
	case 'h':
		cli_help(a->cmd, stdout);
		return 1;
	default:
		cli_usage_error(a->cmd);
		return -1;
	}
}

/* Parse the command line into `a`: 0, 1 after --help, -1 (error said). */
static int exec_parse(struct exec_args *a, int argc, char **argv)
{
	struct option lo[CLI_MAX_OPTIONS + 2];
	int c, r;

	cli_long_options(a->cmd, lo);
	/* Options may stand before and after SESSION; what follows SESSION
	 * and its options (after an optional "--") is the command. */
	for (int pass = 0; pass < 2; pass++) {
		while ((c = cli_next_option(a->cmd, lo, argc, argv)) != -1)
			if ((r = exec_option(a, c)) != 0)
				return r;
		if (pass == 0) {
			if (optind >= argc) {
				cli_usage_error(a->cmd);
				return -1;
			}
			a->name = argv[optind++];
		}
	}
	if (cli_secrets_from_env(&a->secrets) < 0)
		return -1;
	if (a->inputs > 1) {
		cli_error("%s: -i, --input and --input-file each give the "
			  "command's stdin: use one",
			  a->cmd->name);
		return -1;
	}
	if (optind >= argc) {
		cli_error("%s: no command given", a->cmd->name);
		cli_usage_error(a->cmd);
		return -1;
	}
	if (a->cmd == &cli_cmd_sh) {
		if (argc - optind != 1) {
			cli_error(
				"sh takes the shell command as one argument (quote it)");
			return -1;
		}
		a->sh_argv[0] = "sh";
		a->sh_argv[1] = "-c";
		a->sh_argv[2] = argv[optind];
		a->o.argv = a->sh_argv;
		a->o.argc = 3;
	} else {
		a->o.argv = (const char *const *)argv + optind;
		a->o.argc = (size_t)(argc - optind);
	}
	a->o.env = a->env.v;
	a->o.env_count = a->env.n;
	return 0;
}

/* A failure under --json: the shape of a result, so that a consumer reads
 * one kind of object. */
static int print_json_error(const char *session, const char *message)
{
	json_object *o = json_object_new_object();

	if (!o)
		return EXIT_HUTCH_FAILED;
	json_object_object_add(o, "session", json_object_new_string(session));
	json_object_object_add(o, "status", json_object_new_string("error"));
	json_object_object_add(o, "exit_code", NULL);
	json_object_object_add(o, "error", json_object_new_string(message));
	cli_print_json(o);
	json_object_put(o);
	return EXIT_HUTCH_FAILED;
}

/* The result on stdout under --json: 0, or -1 when it cannot be written. */
static int print_json_result(const hutch_exec_result *res,
			     const struct exec_args *a)
{
	hutch_error *err = NULL;
	char *json = NULL;
	int rc = 0;

	if (hutch_exec_result_to_json(&json, res, a->name, a->o.argv, a->o.argc,
				      &err) < 0) {
		cli_fail(err);
		return -1;
	}
	if (cli_write_all(STDOUT_FILENO, json, strlen(json)) < 0 ||
	    cli_write_all(STDOUT_FILENO, "\n", 1) < 0)
		rc = -1;
	free(json);
	return rc;
}

/* hutch's exit status for a command that ran (or was stopped). */
static int exit_status(const hutch_exec_result *res, const struct exec_args *a,
		       const struct stream_state *st)
{
	int rc;

	switch (hutch_exec_result_status(res)) {
	case HUTCH_EXEC_OK:
		rc = hutch_exec_result_exit_code(res);
		return rc < 0 || rc > 255 ? EXIT_HUTCH_FAILED : rc;
	case HUTCH_EXEC_TIMEOUT:
		if (!a->json)
			cli_error(
				"timed out after %.3g s: the command and everything it started were killed",
				(double)a->o.timeout_ms / 1000.0);
		return EXIT_TIMEOUT;
	case HUTCH_EXEC_SANDBOX_LOST:
		if (!a->json)
			cli_error(
				"session '%s': the container died while the command ran; "
				"the command was not run again, the next one gets a new container",
				a->name);
		return EXIT_HUTCH_FAILED;
	case HUTCH_EXEC_CANCELLED:
		if (!a->json && !st->broken)
			cli_error(
				"interrupted: the command and everything it started were killed");
		if (st->broken)
			return 128 + SIGPIPE;
		return cli_cancel_signal() ? 128 + cli_cancel_signal() :
					     EXIT_HUTCH_FAILED;
	}
	return EXIT_HUTCH_FAILED;
}

/* Where the command's stdin comes from: 0, or -1 with the error said. */
static int exec_input(struct exec_args *a)
{
	if (a->interactive) {
		a->o.input_fd = STDIN_FILENO;
	} else if (a->input_file) {
		/* The caller's own file, named by the caller.  Its last
		 * component is never followed: the file may lie in a
		 * session's bind-mounted workspace, where the sandbox can
		 * swap it for a symlink to a host file (a key, a token)
		 * that hutch would then hand to the sandbox as input. */
		a->input_fd = strcmp(a->input_file, "-") == 0 ?
				      STDIN_FILENO :
				      open(a->input_file,
					   O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (a->input_fd < 0) {
			cli_error("--input-file '%s': %s", a->input_file,
				  errno == ELOOP ?
					  "a symbolic link (not followed: "
					  "name the file it points to)" :
					  strerror(errno));
			return -1;
		}
		a->o.input_fd = a->input_fd;
	}
	/* A pipe of its default 64 KiB makes every read, and so every
	 * piece sent to the session, that small: a bigger one lets the
	 * library read (and send) 256 KiB at a time.  Its pages are taken
	 * only as the writer fills it.  Best effort: over the user's limit
	 * the pipe stays as it is. */
	if (a->o.input_fd >= 0) {
		struct stat st;

		if (fstat(a->o.input_fd, &st) == 0 && S_ISFIFO(st.st_mode) &&
		    fcntl(a->o.input_fd, F_GETPIPE_SZ) < (1 << 20))
			(void)fcntl(a->o.input_fd, F_SETPIPE_SZ, 1 << 20);
	}
	return 0;
}

/* hutch_exec_run, with hutch's terminal made ready for a command that
 * has one (cli_term_begin: raw when keys go to it) and put back before
 * anything else is said. */
static int exec_with_terminal(hutch_exec_result **res, hutch_session *s,
			      struct exec_args *a, hutch_error **err)
{
	int rc;

	if (a->o.tty) {
		a->o.tty_size = cli_term_size;
		if (cli_term_begin(a->interactive) < 0) {
			a->term_failed = 1; /* said; *err stays NULL */
			return -1;
		}
	}
	rc = hutch_exec_run(res, s, &a->o, err);
	if (a->o.tty)
		cli_term_end();
	return rc;
}
static int run_detached(const struct exec_args *a, hutch_session *session);

static int run(cli_globals *g, const cli_command *cmd, int argc, char **argv)
{
	struct exec_args a = { .cmd = cmd,
			       .o = HUTCH_EXEC_OPTIONS_INIT,
			       .input_fd = -1 };
	hutch_engine *engine = NULL;
	hutch_session *session = NULL;
	hutch_exec_result *res = NULL;
	hutch_error *err = NULL;
	struct stream_state st = { 0 };
	int rc = EXIT_HUTCH_FAILED, r;

	if ((r = exec_parse(&a, argc, argv)) != 0) {
		rc = r > 0 ? 0 : EXIT_HUTCH_FAILED;
		goto out;
	}
	if (a.json) {
		a.o.capture = 1;
	} else {
		a.o.on_output = on_output;
		a.o.payload = &st;
	}
	if (exec_input(&a) < 0)
		goto out;
	if (cli_cancel_begin(&a.o.cancel, 0, &err) < 0) {
		rc = cli_fail(err);
		goto out;
	}
	if (cli_env_flag("HUTCH_NO_CREATE"))
		a.no_create = 1;
	if ((rc = cli_session_engine(g, a.name,
				     a.no_create ? 0 : HUTCH_FLEET_CREATE,
				     &engine)) != 0)
		goto out;
	if (hutch_session_open(&session, engine, a.name, NULL, &err) == 0)
		hutch_session_set_create(session, !a.no_create);
	if (!session ||
	    (a.secrets.n && hutch_session_set_secrets(session, a.secrets.v,
						      a.secrets.n, &err) < 0) ||
	    (!a.detach && exec_with_terminal(&res, session, &a, &err) < 0)) {
		if (a.term_failed) {
			rc = EXIT_HUTCH_FAILED;
		} else if (a.json) {
			rc = print_json_error(
				hutch_session_name_valid(a.name) ? a.name : "",
				hutch_error_message(err));
			hutch_error_free(err);
		} else {
			rc = cli_fail(err);
		}
		goto out;
	}
	if (a.detach) {
		rc = run_detached(&a, session);
		goto out;
	}
	/* A mistyped name made a new, empty session: a person sees so. */
	if (hutch_session_was_created(session) && isatty(STDERR_FILENO))
		cli_error("made a new session '%s' (it did not exist; "
			  "--no-create refuses instead)",
			  a.name);
	if (a.json && print_json_result(res, &a) < 0) {
		rc = EXIT_HUTCH_FAILED;
		goto out;
	}
	rc = exit_status(res, &a, &st);
out:
	exec_args_free(&a);
	hutch_exec_result_free(res);
	hutch_session_free(session);
	hutch_engine_free(engine);
	cli_term_end();
	cli_cancel_end();
	return rc;
}

static int cmd_exec(cli_globals *g, int argc, char **argv)
{
	return run(g, &cli_cmd_exec, argc, argv);
}

static int cmd_sh(cli_globals *g, int argc, char **argv)
{
	return run(g, &cli_cmd_sh, argc, argv);
}

/* -d: start the command, print its id (or {"session","id","argv",
 * "status":"started"} with --json) and return; it runs on. */
static int run_detached(const struct exec_args *a, hutch_session *session)
{
	char id[HUTCH_PROCESS_ID_SIZE];
	hutch_error *err = NULL;
	json_object *o, *av;

	if (a->timeout_given || a->max_output_given) {
		cli_error("%s: --%s does not apply to -d (a background process "
			  "runs until it ends or 'hutch kill' ends it)",
			  a->cmd->name,
			  a->timeout_given ? "timeout" : "max-output");
		return EXIT_HUTCH_FAILED;
	}
	if (hutch_process_start(id, sizeof(id), session, &a->o, &err) < 0) {
		int code = hutch_error_code(err);
		/* The agent's "cannot run" (its own line, in the message)
		 * is 127 not found, 126 not executable, as for a command
		 * in the foreground; any other refusal is hutch's, 125. */
		int cannot_run = strstr(hutch_error_message(err),
					"cannot run '") != NULL;

		if (a->json) {
			print_json_error(a->name, hutch_error_message(err));
			hutch_error_free(err);
		} else {
			cli_fail(err);
		}
		if (!cannot_run)
			return EXIT_HUTCH_FAILED;
		return code == HUTCH_ENOTFOUND ? 127 : 126;
	}
	if (!a->json) {
		printf("%s\n", id);
		return fflush(stdout) == 0 ? 0 : EXIT_HUTCH_FAILED;
	}
	o = json_object_new_object();
	av = json_object_new_array();
	if (!o || !av) {
		json_object_put(o);
		json_object_put(av);
		return EXIT_HUTCH_FAILED;
	}
	for (size_t i = 0; i < a->o.argc; i++)
		json_object_array_add(av, json_object_new_string(a->o.argv[i]));
	json_object_object_add(o, "session", json_object_new_string(a->name));
	json_object_object_add(o, "id", json_object_new_string(id));
	json_object_object_add(o, "argv", av);
	json_object_object_add(o, "status", json_object_new_string("started"));
	cli_print_json(o);
	json_object_put(o);
	return fflush(stdout) == 0 ? 0 : EXIT_HUTCH_FAILED;
}
