/*
 * cmd_portfwd.c - hutch port-forward: host ports to ports in a session
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hutch/portfwd.h>

#include "cli.h"

enum {
	OPT_ALLOW_REMOTE = 256,
	OPT_MAX_CONNECTIONS,
};

static const cli_option portfwd_options[] = {
	{ "allow-remote", NULL, OPT_ALLOW_REMOTE,
	  "let an ADDR that is not loopback (0.0.0.0, a LAN address) be "
	  "listened on: other machines can then reach the session's port" },
	{ "max-connections", "N", OPT_MAX_CONNECTIONS,
	  "relay at most N connections at once (default 64); more wait" },
	{ "verbose", NULL, 'v', "say when each connection opens and closes" },
	{ NULL, NULL, 0, NULL },
};

static int cmd_portfwd(cli_globals *g, int argc, char **argv);

const cli_command cli_cmd_port_forward = {
	.name = "port-forward",
	.fn = cmd_portfwd,
	.synopsis = "SESSION [options] [ADDR:]HOSTPORT:PORT...",
	.about = "relay 127.0.0.1:HOSTPORT on the host to PORT in SESSION "
		 "(no network needed) until Ctrl-C",
	.shortopts = "+hv",
	.opts = { portfwd_options },
};

struct fwd_state {
	const char *session;
	int verbose;
};

/* "1..65535" (0 as well with `zero_ok`); -1 when not. */
static long parse_port(const char *s, size_t len, int zero_ok)
{
	long v = 0;

	if (len == 0 || len > 5)
		return -1;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v > 65535 || (v == 0 && !zero_ok) ? -1 : v;
}

/* "[ADDR:]HOSTPORT:PORT", "PORT" (the same on both sides) or
 * "[V6ADDR]:HOSTPORT:PORT" into `f`; `addr` keeps the address (the
 * caller frees).  -1 with the error said. */
static int parse_forward(const char *arg, hutch_portfwd_spec *f, char **addr)
{
	const char *rest = arg, *c1, *c2;
	long hp, p;

	*addr = NULL;
	if (arg[0] == '[') {
		const char *end = strchr(arg, ']');

		if (!end || end[1] != ':')
			goto bad;
		*addr = strndup(arg + 1, (size_t)(end - arg - 1));
		rest = end + 2;
	}
	c1 = strchr(rest, ':');
	c2 = c1 ? strchr(c1 + 1, ':') : NULL;
	if (c2 && !*addr) {
		if (strchr(c2 + 1, ':'))
			goto bad;
		*addr = strndup(rest, (size_t)(c1 - rest));
		rest = c1 + 1;
		c1 = c2;
	} else if (c2) {
		goto bad;
	}
	if (*addr && !**addr)
		goto bad;
	if (c1) {
		hp = parse_port(rest, (size_t)(c1 - rest), 1);
		p = parse_port(c1 + 1, strlen(c1 + 1), 0);
	} else {
		if (*addr)
			goto bad;
		hp = p = parse_port(rest, strlen(rest), 0);
	}
	if (hp < 0 || p < 0)
		goto bad;
	f->host_addr = *addr;
	f->host_port = (unsigned short)hp;
	f->port = (unsigned short)p;
	return 0;
bad:
	free(*addr);
	*addr = NULL;
	cli_error("port-forward: '%s' is not [ADDR:]HOSTPORT:PORT (ports "
		  "1-65535; HOSTPORT 0: any free port)",
		  arg);
	return -1;
}

/* What happens, on stdout (where it listens: a script reads it) and
 * stderr (connections). */
static void on_event(const hutch_portfwd_event *ev, void *payload)
{
	struct fwd_state *st = payload;

	switch (ev->kind) {
	case HUTCH_PORTFWD_LISTENING:
		printf("forwarding %s%s%s:%u -> port %u in session '%s'\n",
		       strchr(ev->addr, ':') ? "[" : "", ev->addr,
		       strchr(ev->addr, ':') ? "]" : "",
		       (unsigned)ev->host_port, (unsigned)ev->forward->port,
		       st->session);
		fflush(stdout);
		break;
	case HUTCH_PORTFWD_OPENED:
		if (st->verbose)
			cli_error("%s: connection opened to port %u", ev->peer,
				  (unsigned)ev->forward->port);
		break;
	case HUTCH_PORTFWD_CLOSED:
		if (st->verbose)
			cli_error("%s: connection closed", ev->peer);
		break;
	case HUTCH_PORTFWD_FAILED:
		cli_error("%s: %s", ev->peer, ev->message);
		break;
	}
}

static int cmd_portfwd(cli_globals *g, int argc, char **argv)
{
	hutch_portfwd_options o = HUTCH_PORTFWD_OPTIONS_INIT;
	hutch_portfwd_spec specs[HUTCH_PORTFWD_MAX_FORWARDS];
	char *addrs[HUTCH_PORTFWD_MAX_FORWARDS] = { 0 };
	struct option lo[CLI_MAX_OPTIONS + 2];
	struct fwd_state st = { 0 };
	hutch_engine *engine = NULL;
	hutch_session *session = NULL;
	hutch_error *err = NULL;
	size_t n = 0;
	int rc = EXIT_HUTCH_FAILED, c;
	long v;
	char *end;

	cli_long_options(&cli_cmd_port_forward, lo);
	for (int pass = 0; pass < 2; pass++) {
		while ((c = cli_next_option(&cli_cmd_port_forward, lo, argc,
					    argv)) != -1) {
			switch (c) {
			case OPT_ALLOW_REMOTE:
				o.allow_remote = 1;
				break;
			case OPT_MAX_CONNECTIONS:
				errno = 0;
				v = strtol(optarg, &end, 10);
				if (errno || *end || v < 1 || v > 4096) {
					cli_error("--max-connections '%s': "
						  "give 1 to 4096",
						  optarg);
					goto out;
				}
				o.max_connections = (unsigned int)v;
				break;
			case 'v':
				st.verbose = 1;
				break;
			case 'h':
				cli_help(&cli_cmd_port_forward, stdout);
				rc = 0;
				goto out;
			default:
				cli_usage_error(&cli_cmd_port_forward);
				goto out;
			}
		}
		if (pass == 0 && optind < argc)
			st.session = argv[optind++];
	}
	if (!st.session || optind >= argc) {
		cli_usage_error(&cli_cmd_port_forward);
		goto out;
	}
	for (; optind < argc; optind++) {
		if (n == HUTCH_PORTFWD_MAX_FORWARDS) {
			cli_error("port-forward: at most %d forwards",
				  HUTCH_PORTFWD_MAX_FORWARDS);
			goto out;
		}
		if (parse_forward(argv[optind], &specs[n], &addrs[n]) < 0)
			goto out;
		n++;
	}
	o.forwards = specs;
	o.count = n;
	o.on_event = on_event;
	o.payload = &st;
	/* Ctrl-C (or SIGTERM, SIGHUP) ends the forward cleanly; a second
	 * one ends hutch at once (SA_RESETHAND). */
	if (cli_cancel_begin(&o.cancel, SA_RESETHAND, &err) < 0) {
		rc = cli_fail(err);
		goto out;
	}
	/* A forward never makes a session: there would be nothing in it
	 * to forward to. */
	if ((rc = cli_session_engine(g, st.session, 0, &engine)) != 0)
		goto out;
	rc = EXIT_HUTCH_FAILED;
	if (hutch_session_open(&session, engine, st.session, NULL, &err) < 0) {
		rc = cli_fail(err);
		goto out;
	}
	hutch_session_set_create(session, 0);
	if (hutch_portfwd_run(session, &o, &err) < 0) {
		rc = cli_fail(err);
		goto out;
	}
	rc = 0;
out:
	for (size_t i = 0; i < n + 1 && i < HUTCH_PORTFWD_MAX_FORWARDS; i++)
		free(addrs[i]);
	hutch_session_free(session);
	hutch_engine_free(engine);
	cli_cancel_end();
	return rc;
}
