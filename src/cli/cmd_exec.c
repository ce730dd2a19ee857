/*
 * cmd_exec.c - hutch exec and hutch sh
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

/* Raised by SIGINT/SIGTERM/SIGHUP: the command in the container is killed
 * before hutch exits, instead of being left running. */
static hutch_cancel *interrupt;
static volatile sig_atomic_t interrupt_signal;

static void on_signal(int sig)
{
	interrupt_signal = sig;
	hutch_cancel_raise(interrupt);
}

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

static void usage_exec(const char *cmd)
{
	fprintf(stderr,
		"usage: hutch %s SESSION [--timeout SEC] [--workdir DIR] [--env K=V]... "
		"[--secret NAME[=@FILE]]... [--json] [--max-output BYTES] %s\n",
		cmd,
		strcmp(cmd, "sh") == 0 ? "'SHELL COMMAND'" : "[--] ARGV...");
}

static int print_json_error(const char *session, const char *const *argv,
			    size_t argc, const char *message)
{
	/* Same shape as a result, so a consumer reads one kind of object. */
	printf("{\"session\":\"%s\",\"status\":\"error\",\"exit_code\":null,\"error\":",
	       session);
	/* The message may quote user input: escape it properly. */
	{
		const unsigned char *m = (const unsigned char *)message;

		putchar('"');
		for (; *m; m++) {
			if (*m == '"' || *m == '\\')
				printf("\\%c", *m);
			else if (*m < 0x20)
				printf("\\u%04x", *m);
			else
				putchar(*m);
		}
		putchar('"');
	}
	(void)argv;
	(void)argc;
	printf("}\n");
	return EXIT_HUTCH_FAILED;
}

static int run(cli_globals *g, int argc, char **argv, int shell)
{
	static const struct option opts[] = {
		{ "timeout", required_argument, NULL, 't' },
		{ "workdir", required_argument, NULL, 'w' },
		{ "env", required_argument, NULL, 'e' },
		{ "json", no_argument, NULL, 'j' },
		{ "max-output", required_argument, NULL, 'm' },
		{ "secret", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *cmdname = shell ? "sh" : "exec";
	hutch_exec_options o = HUTCH_EXEC_OPTIONS_INIT;
	cli_strv env = { 0 }, owned_env = { 0 }, secrets = { 0 };
	hutch_engine *engine = NULL;
	hutch_session *session = NULL;
	hutch_exec_result *res = NULL;
	hutch_error *err = NULL;
	struct stream_state st = { 0 };
	const char *name = NULL, *sh_argv[3];
	char *workdir = NULL, *json = NULL;
	int c, json_out = 0, rc = EXIT_HUTCH_FAILED, pass;
	struct sigaction sa;

	/* Options may stand before and after SESSION; what follows SESSION
	 * and its options (after an optional "--") is the command. */
	for (pass = 0; pass < 2; pass++) {
		while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
			switch (c) {
			case 't':
				if (cli_opt_timeout(optarg, &o.timeout_ms) < 0)
					goto out;
				break;
			case 'w':
				free(workdir);
				workdir = NULL;
				if (optarg[0] == '/')
					workdir = strdup(optarg);
				else if (asprintf(&workdir, "/workspace/%s",
						  optarg) < 0)
					workdir = NULL;
				if (!workdir) {
					cli_error("out of memory");
					goto out;
				}
				break;
			case 'e':
				if (cli_env_add(&env, &owned_env, optarg) < 0)
					goto out;
				break;
			case 's':
				if (cli_secret_add(&secrets, optarg) < 0)
					goto out;
				break;
			case 'j':
				json_out = 1;
				break;
			case 'm':
				if (cli_opt_max_output(optarg, &o.max_output) <
				    0)
					goto out;
				break;
			case 'h':
				usage_exec(cmdname);
				rc = 0;
				goto out;
			default:
				usage_exec(cmdname);
				goto out;
			}
		}
		if (pass == 0) {
			if (optind >= argc) {
				usage_exec(cmdname);
				goto out;
			}
			name = argv[optind++];
		}
	}
	if (cli_secrets_from_env(&secrets) < 0)
		goto out;
	if (optind >= argc) {
		cli_error("%s: no command given", cmdname);
		usage_exec(cmdname);
		goto out;
	}
	if (shell) {
		if (argc - optind != 1) {
			cli_error(
				"sh takes the shell command as one argument (quote it)");
			goto out;
		}
		sh_argv[0] = "sh";
		sh_argv[1] = "-c";
		sh_argv[2] = argv[optind];
		o.argv = sh_argv;
		o.argc = 3;
	} else {
		o.argv = (const char *const *)argv + optind;
		o.argc = (size_t)(argc - optind);
	}
	o.workdir = workdir;
	o.env = env.v;
	o.env_count = env.n;
	if (json_out) {
		o.capture = 1;
	} else {
		o.on_output = on_output;
		o.payload = &st;
	}

	if (hutch_cancel_new(&interrupt, &err) < 0) {
		rc = cli_fail(err);
		goto out;
	}
	o.cancel = interrupt;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);

	if ((rc = cli_session_engine(g, name, HUTCH_FLEET_CREATE, &engine)) !=
	    0)
		goto out;
	if (hutch_session_open(&session, engine, name, NULL, &err) < 0 ||
	    (secrets.n && hutch_session_set_secrets(session, secrets.v,
						    secrets.n, &err) < 0) ||
	    hutch_exec_run(&res, session, &o, &err) < 0) {
		if (json_out) {
			rc = print_json_error(
				hutch_session_name_valid(name) ? name : "",
				o.argv, o.argc, hutch_error_message(err));
			hutch_error_free(err);
		} else {
			rc = cli_fail(err);
		}
		goto out;
	}

	if (json_out) {
		if (hutch_exec_result_to_json(&json, res, name, o.argv, o.argc,
					      &err) < 0) {
			rc = cli_fail(err);
			goto out;
		}
		if (cli_write_all(STDOUT_FILENO, json, strlen(json)) < 0 ||
		    cli_write_all(STDOUT_FILENO, "\n", 1) < 0) {
			rc = EXIT_HUTCH_FAILED;
			goto out;
		}
	}
	switch (hutch_exec_result_status(res)) {
	case HUTCH_EXEC_OK:
		rc = hutch_exec_result_exit_code(res);
		if (rc < 0 || rc > 255)
			rc = EXIT_HUTCH_FAILED;
		break;
	case HUTCH_EXEC_TIMEOUT:
		if (!json_out)
			cli_error(
				"timed out after %.3g s: the command and everything it started were killed",
				(double)o.timeout_ms / 1000.0);
		rc = EXIT_TIMEOUT;
		break;
	case HUTCH_EXEC_SANDBOX_LOST:
		if (!json_out)
			cli_error(
				"session '%s': the container died while the command ran; "
				"the command was not run again, the next one gets a new container",
				name);
		rc = EXIT_HUTCH_FAILED;
		break;
	case HUTCH_EXEC_CANCELLED:
		if (st.broken)
			rc = 128 + SIGPIPE;
		else if (interrupt_signal)
			rc = 128 + interrupt_signal;
		else
			rc = EXIT_HUTCH_FAILED;
		if (!json_out && !st.broken)
			cli_error(
				"interrupted: the command and everything it started were killed");
		break;
	}
out:
	free(json);
	free(workdir);
	cli_env_free(&env, &owned_env);
	cli_secrets_free(&secrets);
	hutch_exec_result_free(res);
	hutch_session_free(session);
	hutch_engine_free(engine);
	{
		/* The handler may still fire: unhook before freeing. */
		hutch_cancel *cancel = interrupt;

		interrupt = NULL;
		hutch_cancel_free(cancel);
	}
	return rc;
}

int cmd_exec(cli_globals *g, int argc, char **argv)
{
	return run(g, argc, argv, 0);
}

int cmd_sh(cli_globals *g, int argc, char **argv)
{
	return run(g, argc, argv, 1);
}
