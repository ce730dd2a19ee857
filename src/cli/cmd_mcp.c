/*
 * cmd_mcp.c - hutch mcp: serve the sandbox to an MCP client over stdio
 *
 * stdout carries the protocol and nothing else; every word for a person
 * goes to stderr.  Nothing here touches the engine: the session is created
 * by the first tool call (src/mcp/server.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "cli.h"
#include "mcp.h"

/* SIGINT/SIGTERM/SIGHUP end the server as EOF on stdin does: running
 * commands are killed in the container, then --rm applies. */
static int stop_pipe[2] = { -1, -1 };

static void on_signal(int sig)
{
	int saved = errno;

	(void)sig;
	if (write(stop_pipe[1], "x", 1) < 0) {
		/* The pipe is full: a stop is pending anyway. */
	}
	errno = saved;
}

/* "mcp-" and 8 random hex digits: a fresh session per client. */
static int fresh_name(char *out, size_t outsz)
{
	unsigned char r[4];
	size_t got = 0;

	while (got < sizeof(r)) {
		ssize_t n = getrandom(r + got, sizeof(r) - got, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		got += (size_t)n;
	}
	snprintf(out, outsz, "mcp-%02x%02x%02x%02x", r[0], r[1], r[2], r[3]);
	return 0;
}

static int cmd_mcp(cli_globals *g, int argc, char **argv);

static const cli_option mcp_options[] = {
	{ "session", "NAME", 's',
	  "serve session NAME, kept when the client disconnects (default: a "
	  "new mcp-XXXXXXXX, removed then)" },
	{ "rm", NULL, 'r',
	  "remove the --session too when the client disconnects" },
	{ "image", "IMG", 'i', "the image of a new session" },
	{ "workspace", "DIR", 'w', "bind-mount host DIR as /workspace" },
	{ "env", "K=V", 'e', "set K in the session (K alone: hutch's own $K)" },
	{ "secret", "NAME[=@FILE]", 'S',
	  "give $NAME (or FILE's contents) to commands, redacted from results" },
	{ NULL, NULL, 0, NULL },
};

const cli_command cli_cmd_mcp = {
	.name = "mcp",
	.fn = cmd_mcp,
	.synopsis = "[options]",
	.about = "serve a session to an MCP client on stdio",
	.shortopts = "h",
	.opts = { mcp_options },
};

struct mcp_args {
	hutch_session_options so;
	cli_strv env, owned_env, secrets;
	char name[16], workspace[PATH_MAX];
	const char *session;
	int rm;
};

/* One option of mcp: 0, 1 after --help, -1 with the error said. */
static int mcp_option(struct mcp_args *a, int c, const char *arg)
{
	switch (c) {
	case 's':
		a->session = arg;
		return 0;
	case 'r':
		a->rm = 1;
		return 0;
	case 'i':
		a->so.image = arg;
		return 0;
	case 'w':
		/* An MCP client starts us in a directory of its own choosing:
		 * a relative DIR is made absolute against it now, without
		 * resolving symlinks (the library refuses a path through one,
		 * as for hutch up), and checked below (check_options) rather
		 * than at the model's first call. */
		if (arg[0] == '/') {
			snprintf(a->workspace, sizeof(a->workspace), "%s", arg);
		} else {
			char cwd[PATH_MAX];

			errno = 0;
			if (!getcwd(cwd, sizeof(cwd)) ||
			    snprintf(a->workspace, sizeof(a->workspace),
				     "%s/%s", cwd,
				     arg) >= (int)sizeof(a->workspace)) {
				cli_error("mcp: workspace '%s': %s", arg,
					  strerror(errno ? errno :
							   ENAMETOOLONG));
				return -1;
			}
		}
		a->so.workspace = a->workspace;
		return 0;
	case 'e':
		return cli_env_add(&a->env, &a->owned_env, arg);
	case 'S':
		/* Every tool call's session handle gets them through the
		 * session options: in exec's environment, and redacted from
		 * every result. */
		return cli_secret_add(&a->secrets, arg);
	case 'h':
		cli_help(&cli_cmd_mcp, stdout);
		return 1;
	default:
		cli_usage_error(&cli_cmd_mcp);
		return -1;
	}
}

/* Refuse a bad workspace or bad secrets now, not in every tool call: the
 * library checks them as each call will.  0 or -1 (said). */
static int check_options(const struct mcp_args *a)
{
	hutch_session *probe = NULL;
	hutch_error *err = NULL;
	int rc = 0;

	if (hutch_session_open(&probe, NULL, a->session, &a->so, &err) < 0) {
		cli_error("mcp: %s", hutch_error_message(err));
		hutch_error_free(err);
		rc = -1;
	}
	hutch_session_free(probe);
	return rc;
}

/* Parse mcp's command line: 0, 1 after --help, -1 (error said). */
static int mcp_parse(struct mcp_args *a, int argc, char **argv)
{
	struct option lo[CLI_MAX_OPTIONS + 2];
	int c, r;

	cli_long_options(&cli_cmd_mcp, lo);
	while ((c = cli_next_option(&cli_cmd_mcp, lo, argc, argv)) != -1)
		if ((r = mcp_option(a, c, optarg)) != 0)
			return r;
	if (optind != argc) {
		cli_error("mcp: unexpected argument '%s'", argv[optind]);
		cli_usage_error(&cli_cmd_mcp);
		return -1;
	}
	if (a->session && !hutch_session_name_valid(a->session)) {
		cli_error(
			"invalid session name '%s': use 1 to 63 letters, digits, '_', '.' "
			"or '-', starting with a letter or digit",
			a->session);
		return -1;
	}
	if (!a->session) {
		if (fresh_name(a->name, sizeof(a->name)) < 0) {
			cli_error("mcp: no random bytes for a session name: %s",
				  strerror(errno));
			return -1;
		}
		a->session = a->name;
	}
	a->so.env = a->env.v;
	a->so.env_count = a->env.n;
	if (cli_secrets_from_env(&a->secrets) < 0)
		return -1;
	a->so.secrets = a->secrets.v;
	a->so.secret_count = a->secrets.n;
	return check_options(a);
}

static int cmd_mcp(cli_globals *g, int argc, char **argv)
{
	struct mcp_args a = { .so = HUTCH_SESSION_OPTIONS_INIT };
	mcp_config cfg;
	struct sigaction sa;
	int rc = EXIT_HUTCH_FAILED, r;

	if ((r = mcp_parse(&a, argc, argv)) != 0) {
		rc = r > 0 ? 0 : EXIT_HUTCH_FAILED;
		goto out;
	}
	/* Not cli_cancel_begin: the server's loop waits in poll(2) on stdin,
	 * and a byte on this pipe is what wakes it. */
	if (pipe2(stop_pipe, O_CLOEXEC | O_NONBLOCK) < 0) {
		cli_error("mcp: pipe: %s", strerror(errno));
		goto out;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);

	memset(&cfg, 0, sizeof(cfg));
	cfg.engine_urls = g->engines;
	cfg.nengines = g->nengines;
	cfg.session = a.session;
	cfg.session_given = a.session != a.name;
	cfg.sopts = a.so;
	/* A session of its own goes with the server: clients start one
	 * server per conversation (or per call), and each would leave one
	 * behind.  A named one is the user's: kept unless --rm. */
	cfg.remove_on_exit = a.rm || !cfg.session_given;
	cfg.wake_fd = stop_pipe[0];
	fprintf(stderr, "hutch mcp: serving session '%s' on stdio%s\n",
		a.session,
		cfg.remove_on_exit ? " (removed when the client disconnects)" :
				     "");
	rc = mcp_serve(&cfg, STDIN_FILENO, STDOUT_FILENO) < 0 ?
		     EXIT_HUTCH_FAILED :
		     0;
out:
	cli_env_free(&a.env, &a.owned_env);
	cli_secrets_free(&a.secrets);
	return rc;
}
