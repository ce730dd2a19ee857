/*
 * cmd_process.c - hutch ps, logs, kill and wait: the background processes
 * that `hutch exec -d` started
 *
 * Exit statuses: ps, logs and kill 0 (kill also when the process had
 * already ended); wait the process's exit code, 128+N for a signal N, 124
 * at --timeout; logs and wait 128+N when signal N (Ctrl-C) stopped them;
 * 125 when hutch or the engine failed (an unknown id included).
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <json-c/json.h>

#include "cli.h"
/* Pure UTF-8 helpers, shared with the library and the agent. */
#include "../shared/utf8.h"

static const cli_option ps_options[] = {
	{ "json", NULL, 'j', "print the list as one JSON object" },
	{ NULL, NULL, 0, NULL },
};

static const cli_option logs_options[] = {
	{ "follow", NULL, 'f',
	  "keep printing the output until the process has ended" },
	{ "tail", "N", 'n', "begin with the last N lines" },
	{ "json", NULL, 'j',
	  "print JSON lines: {\"stream\",\"data\"} for each piece, then "
	  "{\"process\"}" },
	{ NULL, NULL, 0, NULL },
};

static const cli_option kill_options[] = {
	{ "signal", "SIG", 's',
	  "send SIG (a name such as TERM, or a number; default KILL)" },
	{ NULL, NULL, 0, NULL },
};

static const cli_option wait_options[] = {
	{ "timeout", "SEC", 't',
	  "give up after SEC seconds (exit 124; the process runs on)" },
	{ "json", NULL, 'j',
	  "print the process's record as JSON when it ends" },
	{ NULL, NULL, 0, NULL },
};

static int cmd_ps(cli_globals *g, int argc, char **argv);
static int cmd_logs(cli_globals *g, int argc, char **argv);
static int cmd_kill(cli_globals *g, int argc, char **argv);
static int cmd_wait(cli_globals *g, int argc, char **argv);

const cli_command cli_cmd_ps = {
	.name = "ps",
	.fn = cmd_ps,
	.synopsis = "SESSION [--json]",
	.about = "list the background processes of SESSION (exec -d)",
	.shortopts = "hj",
	.opts = { ps_options },
};

const cli_command cli_cmd_logs = {
	.name = "logs",
	.fn = cmd_logs,
	.synopsis = "SESSION ID [--follow] [--tail N] [--json]",
	.about = "print the output of a background process",
	.shortopts = "hfn:j",
	.opts = { logs_options },
};

const cli_command cli_cmd_kill = {
	.name = "kill",
	.fn = cmd_kill,
	.synopsis = "SESSION ID [--signal SIG]",
	.about = "signal a background process and everything it started",
	.shortopts = "hs:",
	.opts = { kill_options },
};

const cli_command cli_cmd_wait = {
	.name = "wait",
	.fn = cmd_wait,
	.synopsis = "SESSION ID [--timeout SEC] [--json]",
	.about = "wait for a background process to end; exit with its status",
	.shortopts = "ht:j",
	.opts = { wait_options },
};

/* What a command line of these four asks. */
struct proc_args {
	const cli_command *cmd;
	const char *session, *id;
	int json, follow, signal;
	uint64_t tail, timeout_ms;
};

static int proc_option(struct proc_args *a, int c, const char *arg)
{
	int64_t v;

	switch (c) {
	case 'h':
		cli_help(a->cmd, stdout);
		return 1;
	case 'j':
		a->json = 1;
		return 0;
	case 'f':
		a->follow = 1;
		return 0;
	case 'n':
		if (strspn(arg, "0123456789") != strlen(arg) || !*arg ||
		    (v = cli_parse_size(arg)) < 0) {
			cli_error("invalid --tail '%s': a number of lines",
				  arg);
			return -1;
		}
		a->tail = (uint64_t)v;
		return 0;
	case 's':
		a->signal = hutch_process_signal_parse(arg);
		if (a->signal < 0) {
			cli_error("invalid --signal '%s': a name such as TERM, "
				  "INT, KILL, or a number from 1 to 64",
				  arg);
			return -1;
		}
		return 0;
	case 't':
		return cli_opt_timeout(arg, &a->timeout_ms);
	default:
		cli_usage_error(a->cmd);
		return -1;
	}
}

/* SESSION, then ID unless `with_id` is 0; options anywhere.  0, 1 after
 * --help, -1 (said). */
static int proc_parse(struct proc_args *a, int argc, char **argv, int with_id)
{
	struct option lo[CLI_MAX_OPTIONS + 2];
	int c, r, want = with_id ? 2 : 1;

	cli_long_options(a->cmd, lo);
	while ((c = cli_next_option(a->cmd, lo, argc, argv)) != -1)
		if ((r = proc_option(a, c, optarg)) != 0)
			return r;
	if (argc - optind != want) {
		cli_usage_error(a->cmd);
		return -1;
	}
	a->session = argv[optind];
	a->id = with_id ? argv[optind + 1] : NULL;
	if (a->id && !hutch_process_id_valid(a->id)) {
		cli_error("invalid process id '%s' ('hutch ps %s' lists them)",
			  a->id, a->session);
		return -1;
	}
	return 0;
}

/* The session, never made: these commands look at what is there. */
static int open_session(cli_globals *g, const char *name, hutch_engine **engine,
			hutch_session **session)
{
	hutch_error *err = NULL;
	int rc;

	if ((rc = cli_session_engine(g, name, 0, engine)) != 0)
		return rc;
	if (hutch_session_open(session, *engine, name, NULL, &err) < 0)
		return cli_fail(err);
	hutch_session_set_create(*session, 0);
	return 0;
}

/* --- ps ------------------------------------------------------------------- */

/* "1.2M", "345K", "17" (bytes). */
static void human_size(char *out, size_t sz, uint64_t n)
{
	if (n >= 10u * 1024u * 1024u)
		snprintf(out, sz, "%" PRIu64 "M", n >> 20);
	else if (n >= 1024u * 1024u)
		snprintf(out, sz, "%.1fM", (double)n / (1024.0 * 1024.0));
	else if (n >= 10u * 1024u)
		snprintf(out, sz, "%" PRIu64 "K", n >> 10);
	else
		snprintf(out, sz, "%" PRIu64, n);
}

static void state_text(char *out, size_t sz, const hutch_process *p)
{
	const char *name;

	switch (hutch_process_get_state(p)) {
	case HUTCH_PROCESS_RUNNING:
		snprintf(out, sz, "running");
		break;
	case HUTCH_PROCESS_EXITED:
		snprintf(out, sz, "exited %d", hutch_process_exit_code(p));
		break;
	case HUTCH_PROCESS_KILLED:
		name = hutch_process_signal_name(hutch_process_signal(p));
		if (name)
			snprintf(out, sz, "killed SIG%s", name);
		else
			snprintf(out, sz, "killed %d", hutch_process_signal(p));
		break;
	default:
		snprintf(out, sz, "lost");
	}
}

/* The command line as one visible line: arguments with spaces or quotes
 * are quoted, and what the sandbox put there cannot drive the terminal. */
static void print_command(const hutch_process *p)
{
	for (size_t i = 0; i < hutch_process_argc(p); i++) {
		const char *arg = hutch_process_arg(p, i);
		char *own = NULL;
		const char *shown = hutch__utf8_shown(arg, 0, &own);
		int quote = !*arg || strpbrk(arg, " \t'\"") != NULL;

		printf("%s%s%s%s", i ? " " : "", quote ? "'" : "", shown,
		       quote ? "'" : "");
		free(own);
	}
	putchar('\n');
}

static void print_ps(const hutch_process_list *l)
{
	size_t n = hutch_process_list_count(l);

	printf("%-12s %-14s %-19s %8s %8s  %s\n", "ID", "STATE", "STARTED",
	       "OUTPUT", "DROPPED", "COMMAND");
	for (size_t i = 0; i < n; i++) {
		const hutch_process *p = hutch_process_list_at(l, i);
		char state[32], started[32] = "?", size[32], dropped[32] = "-";
		time_t t = (time_t)(hutch_process_started_ms(p) / 1000);
		struct tm tm;

		state_text(state, sizeof(state), p);
		if (localtime_r(&t, &tm))
			strftime(started, sizeof(started), "%Y-%m-%d %H:%M:%S",
				 &tm);
		human_size(size, sizeof(size), hutch_process_output_bytes(p));
		/* The oldest output past the cap, which logs cannot show. */
		if (hutch_process_dropped_bytes(p))
			human_size(dropped, sizeof(dropped),
				   hutch_process_dropped_bytes(p));
		printf("%-12s %-14s %-19s %8s %8s  ", hutch_process_id(p),
		       state, started, size, dropped);
		print_command(p);
	}
	if (hutch_process_list_skipped(l))
		cli_error("%zu records in the session were not well formed "
			  "and are not shown",
			  hutch_process_list_skipped(l));
	if (hutch_process_list_truncated(l))
		cli_error("only the first %zu processes are listed", n);
}

static int cmd_ps(cli_globals *g, int argc, char **argv)
{
	struct proc_args a = { .cmd = &cli_cmd_ps };
	hutch_engine *engine = NULL;
	hutch_session *session = NULL;
	hutch_process_list *l = NULL;
	hutch_error *err = NULL;
	char *json = NULL;
	int rc, r;

	if ((r = proc_parse(&a, argc, argv, 0)) != 0)
		return r > 0 ? 0 : EXIT_HUTCH_FAILED;
	if ((rc = open_session(g, a.session, &engine, &session)) != 0)
		goto out;
	if (hutch_process_list_get(&l, session, &err) < 0) {
		rc = cli_fail(err);
		goto out;
	}
	if (a.json) {
		if (hutch_process_list_to_json(&json, l, &err) < 0) {
			rc = cli_fail(err);
			goto out;
		}
		printf("%s\n", json);
	} else {
		print_ps(l);
	}
	rc = fflush(stdout) == 0 ? 0 : EXIT_HUTCH_FAILED;
out:
	free(json);
	hutch_process_list_free(l);
	hutch_session_free(session);
	hutch_engine_free(engine);
	return rc;
}

/* --- logs ------------------------------------------------------------------ */

struct logs_state {
	int json, broken;
	/* --json: the end of a piece that may be the start of a UTF-8
	 * character the next piece completes. */
	char carry[2][4];
	size_t ncarry[2];
};

/* Bytes at the end of s[0..len) that begin a UTF-8 sequence cut short:
 * kept for the next piece rather than shown as U+FFFD. */
static size_t cut_sequence(const char *s, size_t len)
{
	for (size_t k = 1; k <= 3 && k <= len; k++) {
		unsigned char c = (unsigned char)s[len - k];
		size_t need;

		if ((c & 0xc0) == 0x80)
			continue;
		need = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 ? 2 : 1;
		return need > k ? k : 0;
	}
	return 0;
}

static int json_piece(struct logs_state *st, int i, const char *data,
		      size_t len, int last)
{
	json_object *o;
	char *buf, *fixed;
	size_t n = st->ncarry[i] + len, keep, fl;
	int rc = 0;

	buf = malloc(n + 1);
	if (!buf)
		return -1;
	memcpy(buf, st->carry[i], st->ncarry[i]);
	memcpy(buf + st->ncarry[i], data, len);
	keep = last ? 0 : cut_sequence(buf, n);
	st->ncarry[i] = keep;
	memcpy(st->carry[i], buf + n - keep, keep);
	n -= keep;
	if (n == 0) {
		free(buf);
		return 0;
	}
	fixed = hutch__utf8_repair(buf, n, &fl);
	free(buf);
	o = json_object_new_object();
	if (!fixed || !o) {
		free(fixed);
		json_object_put(o);
		return -1;
	}
	json_object_object_add(o, "stream",
			       json_object_new_string(i ? "stderr" : "stdout"));
	json_object_object_add(o, "data",
			       json_object_new_string_len(fixed, (int)fl));
	free(fixed);
	if (printf("%s\n", json_object_to_json_string_ext(
				   o, JSON_C_TO_STRING_PLAIN |
					      JSON_C_TO_STRING_NOSLASHESCAPE)) <
		    0 ||
	    fflush(stdout) != 0)
		rc = -1;
	json_object_put(o);
	return rc;
}

/* Output goes on as it comes: straight to our stdout and stderr, or as
 * JSON lines. */
static int logs_output(hutch_stream stream, const char *data, size_t len,
		       void *p)
{
	struct logs_state *st = p;
	int i = stream == HUTCH_STREAM_STDERR;

	if (st->json ? json_piece(st, i, data, len, 0) < 0 :
		       cli_write_all(i ? STDERR_FILENO : STDOUT_FILENO, data,
				     len) < 0) {
		st->broken = 1;
		return 1;
	}
	return 0;
}

/* --json ends with the process's record. */
static int logs_json_end(struct logs_state *st, hutch_session *session,
			 const char *id)
{
	hutch_process_list *l = NULL;
	hutch_error *err = NULL;
	char *json = NULL;
	int rc = EXIT_HUTCH_FAILED, found = 0;

	for (int i = 0; i < 2; i++)
		if (st->ncarry[i] && json_piece(st, i, "", 0, 1) < 0)
			return EXIT_HUTCH_FAILED;
	if (hutch_process_list_get(&l, session, &err) < 0)
		return cli_fail(err);
	for (size_t i = 0; i < hutch_process_list_count(l); i++) {
		const hutch_process *p = hutch_process_list_at(l, i);

		if (strcmp(hutch_process_id(p), id) != 0)
			continue;
		found = 1;
		if (hutch_process_to_json(&json, p, &err) < 0) {
			rc = cli_fail(err);
			break;
		}
		printf("{\"process\":%s}\n", json);
		rc = 0;
		break;
	}
	if (!found)
		cli_error("logs: process '%s' is no longer listed", id);
	free(json);
	hutch_process_list_free(l);
	return rc;
}

static int cmd_logs(cli_globals *g, int argc, char **argv)
{
	struct proc_args a = { .cmd = &cli_cmd_logs };
	hutch_process_logs_options o = HUTCH_PROCESS_LOGS_OPTIONS_INIT;
	struct logs_state st = { 0 };
	hutch_engine *engine = NULL;
	hutch_session *session = NULL;
	hutch_error *err = NULL;
	int rc, r;

	if ((r = proc_parse(&a, argc, argv, 1)) != 0)
		return r > 0 ? 0 : EXIT_HUTCH_FAILED;
	if ((rc = open_session(g, a.session, &engine, &session)) != 0)
		goto out;
	st.json = a.json;
	o.follow = a.follow;
	o.tail_lines = a.tail;
	o.on_output = logs_output;
	o.payload = &st;
	/* Ctrl-C stops the reader (the process runs on), and hutch exits
	 * with 128+N, saying nothing more. */
	if (cli_cancel_begin(&o.cancel, 0, &err) < 0) {
		rc = cli_fail(err);
		goto out;
	}
	if (hutch_process_logs(session, a.id, &o, &err) < 0) {
		if (hutch_error_code(err) == HUTCH_ECANCELLED &&
		    (cli_cancel_signal() || st.broken)) {
			hutch_error_free(err);
			rc = st.broken ? 128 + SIGPIPE :
					 128 + cli_cancel_signal();
		} else {
			rc = cli_fail(err);
		}
		goto out;
	}
	rc = a.json ? logs_json_end(&st, session, a.id) : 0;
out:
	cli_cancel_end();
	hutch_session_free(session);
	hutch_engine_free(engine);
	return rc;
}

/* --- kill ------------------------------------------------------------------ */

static int cmd_kill(cli_globals *g, int argc, char **argv)
{
	struct proc_args a = { .cmd = &cli_cmd_kill, .signal = SIGKILL };
	hutch_engine *engine = NULL;
	hutch_session *session = NULL;
	hutch_error *err = NULL;
	int rc, r;

	if ((r = proc_parse(&a, argc, argv, 1)) != 0)
		return r > 0 ? 0 : EXIT_HUTCH_FAILED;
	if ((rc = open_session(g, a.session, &engine, &session)) != 0)
		goto out;
	if (hutch_process_kill(session, a.id, a.signal, &err) < 0)
		rc = cli_fail(err);
out:
	hutch_session_free(session);
	hutch_engine_free(engine);
	return rc;
}

/* --- wait ------------------------------------------------------------------ */

static int cmd_wait(cli_globals *g, int argc, char **argv)
{
	struct proc_args a = { .cmd = &cli_cmd_wait };
	hutch_engine *engine = NULL;
	hutch_session *session = NULL;
	hutch_process *p = NULL;
	hutch_cancel *cancel = NULL;
	hutch_error *err = NULL;
	char *json = NULL;
	int rc, r;

	if ((r = proc_parse(&a, argc, argv, 1)) != 0)
		return r > 0 ? 0 : EXIT_HUTCH_FAILED;
	if ((rc = open_session(g, a.session, &engine, &session)) != 0)
		goto out;
	if (cli_cancel_begin(&cancel, 0, &err) < 0) {
		rc = cli_fail(err);
		goto out;
	}
	if (hutch_process_wait(&p, session, a.id, a.timeout_ms, cancel, &err) <
	    0) {
		int code = hutch_error_code(err);

		if (code == HUTCH_ECANCELLED && cli_cancel_signal()) {
			hutch_error_free(err);
			rc = 128 + cli_cancel_signal();
		} else {
			rc = cli_fail(err);
			if (code == HUTCH_ETIMEOUT)
				rc = EXIT_TIMEOUT;
		}
		goto out;
	}
	if (a.json) {
		if (hutch_process_to_json(&json, p, &err) < 0) {
			rc = cli_fail(err);
			goto out;
		}
		printf("%s\n", json);
	}
	switch (hutch_process_get_state(p)) {
	case HUTCH_PROCESS_EXITED:
		rc = hutch_process_exit_code(p);
		break;
	case HUTCH_PROCESS_KILLED:
		rc = 128 + hutch_process_signal(p);
		break;
	default:
		if (!a.json)
			cli_error("process '%s' was lost: its supervisor "
				  "ended without recording how it ended",
				  a.id);
		rc = EXIT_HUTCH_FAILED;
	}
	if (fflush(stdout) != 0)
		rc = EXIT_HUTCH_FAILED;
out:
	free(json);
	hutch_process_free(p);
	cli_cancel_end();
	hutch_session_free(session);
	hutch_engine_free(engine);
	return rc;
}
