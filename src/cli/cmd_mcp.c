/*
 * cmd_mcp.c - hutch mcp: serve the sandbox to an MCP client over stdio
 *
 * stdout carries the protocol and nothing else; every word for a person
 * goes to stderr.  Nothing here touches the engine: the session is created
 * by the first tool call (src/mcp/server.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "mcp.h"

#define USAGE_MCP                                                 \
	"usage: hutch mcp [--session NAME] [--rm] [--image IMG] " \
	"[--workspace DIR] [--env K=V]... [--secret NAME[=@FILE]]..."

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

int cmd_mcp(cli_globals *g, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "session", required_argument, NULL, 's' },
		{ "rm", no_argument, NULL, 'r' },
		{ "image", required_argument, NULL, 'i' },
		{ "workspace", required_argument, NULL, 'w' },
		{ "env", required_argument, NULL, 'e' },
		{ "secret", required_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	mcp_config cfg;
	hutch_session_options so = HUTCH_SESSION_OPTIONS_INIT;
	cli_strv env = { 0 }, owned_env = { 0 }, secrets = { 0 };
	char name[16], workspace[PATH_MAX];
	const char *session = NULL;
	struct sigaction sa;
	struct stat st;
	int c, rc = EXIT_HUTCH_FAILED, rm = 0;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			session = optarg;
			break;
		case 'r':
			rm = 1;
			break;
		case 'i':
			so.image = optarg;
			break;
		case 'w':
			/* An MCP client starts us in a directory of its own
			 * choosing: resolve now and say so if it is wrong,
			 * rather than fail the model's first call. */
			errno = 0;
			if (!realpath(optarg, workspace) ||
			    stat(workspace, &st) < 0 || !S_ISDIR(st.st_mode)) {
				cli_error("mcp: workspace '%s': %s", optarg,
					  errno ? strerror(errno) :
						  "not a directory");
				goto out;
			}
			so.workspace = workspace;
			break;
		case 'e':
			if (cli_env_add(&env, &owned_env, optarg) < 0)
				goto out;
			break;
		case 'S':
			/* Every tool call's session handle gets them through
			 * the session options: in exec's environment, and
			 * redacted from every result. */
			if (cli_secret_add(&secrets, optarg) < 0)
				goto out;
			break;
		case 'h':
			puts(USAGE_MCP);
			rc = 0;
			goto out;
		default:
			cli_error(USAGE_MCP);
			goto out;
		}
	}
	if (optind != argc) {
		cli_error("mcp: unexpected argument '%s'", argv[optind]);
		cli_error(USAGE_MCP);
		goto out;
	}
	if (session && !hutch_session_name_valid(session)) {
		cli_error(
			"invalid session name '%s': use 1 to 63 letters, digits, '_', '.' "
			"or '-', starting with a letter or digit",
			session);
		goto out;
	}
	if (!session) {
		if (fresh_name(name, sizeof(name)) < 0) {
			cli_error("mcp: no random bytes for a session name: %s",
				  strerror(errno));
			goto out;
		}
		session = name;
	}
	so.env = env.v;
	so.env_count = env.n;
	if (cli_secrets_from_env(&secrets) < 0)
		goto out;
	so.secrets = secrets.v;
	so.secret_count = secrets.n;
	if (secrets.n) {
		/* Refuse bad secrets now, not in every tool call. */
		hutch_session *probe = NULL;
		hutch_error *err = NULL;

		if (hutch_session_open(&probe, NULL, session, NULL, &err) < 0 ||
		    hutch_session_set_secrets(probe, secrets.v, secrets.n,
					      &err) < 0) {
			cli_error("mcp: %s", hutch_error_message(err));
			hutch_error_free(err);
			hutch_session_free(probe);
			goto out;
		}
		hutch_session_free(probe);
	}

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
	cfg.session = session;
	cfg.session_given = session != name;
	cfg.sopts = so;
	cfg.remove_on_exit = rm;
	cfg.wake_fd = stop_pipe[0];
	fprintf(stderr, "hutch mcp: serving session '%s' on stdio%s\n", session,
		rm ? " (removed when the client disconnects)" : "");
	rc = mcp_serve(&cfg, STDIN_FILENO, STDOUT_FILENO) < 0 ?
		     EXIT_HUTCH_FAILED :
		     0;
out:
	cli_env_free(&env, &owned_env);
	cli_secrets_free(&secrets);
	return rc;
}
