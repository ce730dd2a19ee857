/*
 * process.c - background processes: the library side of the agent's
 * "spawn", "ps", "logs", "wait" and "kill" commands
 *
 * Each call is one agent command run through the ordinary exec path
 * (hutch__exec_run, raw: the agent's own commands never get the session's
 * secrets, and what they print is redacted here).  The agent keeps each
 * process's record and output under /.hutch/proc/ID/, a directory the
 * sandboxed code can also write: every answer is read under a cap, parsed
 * with a depth limit, and each field is checked before it is used.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>

#include <hutch/process.h>

#include "agent_blob.h"
#include "common.h"
#include "engine_internal.h"
#include "error.h"
#include "exec_internal.h"
#include "json.h"
#include "redact.h"
#include "secrets.h"
#include "session_internal.h"
#include "utf8.h"

/* How long the agent may take to answer a short command (spawn, ps, kill,
 * a read). */
#define PROC_TIMEOUT_MS 60000
/* The agent's answers stay far below these; more is a broken agent or a
 * proc directory the sandbox filled, refused as too big.  A ps answer
 * carries every process's command line (each up to the kernel's 128 KiB
 * an argument). */
#define PS_MAX_ANSWER (16u * 1024u * 1024u)
#define ENTRY_MAX_ANSWER (2u * 1024u * 1024u)
/* A read's answer: its output JSON-escaped (at most 6 bytes a byte, as
 * \u0000) and one record. */
#define READ_MAX_ANSWER(max) ((size_t)(max)*6u + ENTRY_MAX_ANSWER)
/* Nesting of any answer: {"processes":[{"argv":[...]}]}. */
#define ANSWER_MAX_DEPTH 6
/* Entries a list keeps: a proc directory the sandbox filled with
 * well-formed records cannot make the list grow past this. */
#define LIST_MAX 10000
/* Arguments of one record, as exec.c allows. */
#define RECORD_MAX_ARGS 4096

/* The public limits are the agent's. */
_Static_assert(HUTCH_PROCESS_LOG_KEEP == HUTCH_AGENT_LOG_KEEP,
	       "process.h's output cap is the agent's");
_Static_assert(HUTCH_PROCESS_READ_MAX == HUTCH_AGENT_LOGS_MAX,
	       "process.h's largest read is the agent's logs --max");
_Static_assert(HUTCH_PROCESS_ID_MAX == HUTCH_AGENT_TAG_MAX,
	       "a process id is an agent tag");

/* ---- ids and signals --------------------------------------------------- */

int hutch_process_id_valid(const char *id)
{
	size_t n;

	if (!id)
		return 0;
	n = strspn(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
		       "0123456789_-");
	/* The charset keeps an id from being read as an option or a path
	 * by the agent, and from carrying anything a terminal obeys. */
	return n > 0 && n <= HUTCH_PROCESS_ID_MAX && id[n] == '\0' &&
	       id[0] != '-';
}

static int check_id(const char *id, hutch_error **err)
{
	if (hutch_process_id_valid(id))
		return 0;
	return hutch__error_set(err, HUTCH_EINVALID,
				"invalid process id '%.80s': expected 1 to %d "
				"letters, digits, '_' or '-' (as 'hutch ps' "
				"shows them)",
				id ? id : "", HUTCH_PROCESS_ID_MAX);
}

static const struct {
	const char *name;
	int num;
} signals[] = {
	{ "HUP", SIGHUP },   { "INT", SIGINT },	  { "QUIT", SIGQUIT },
	{ "ABRT", SIGABRT }, { "KILL", SIGKILL }, { "USR1", SIGUSR1 },
	{ "SEGV", SIGSEGV }, { "USR2", SIGUSR2 }, { "PIPE", SIGPIPE },
	{ "ALRM", SIGALRM }, { "TERM", SIGTERM }, { "CHLD", SIGCHLD },
	{ "CONT", SIGCONT }, { "STOP", SIGSTOP }, { "TSTP", SIGTSTP },
	{ "TTIN", SIGTTIN }, { "TTOU", SIGTTOU }, { "WINCH", SIGWINCH },
};

int hutch_process_signal_parse(const char *s)
{
	char *end;
	long n;

	if (!s || !*s)
		return -1;
	if (s[0] >= '0' && s[0] <= '9') {
		errno = 0;
		n = strtol(s, &end, 10);
		if (errno || *end || n < 1 || n > 64)
			return -1;
		return (int)n;
	}
	if (strncasecmp(s, "SIG", 3) == 0)
		s += 3;
	for (size_t i = 0; i < HUTCH_ARRAY_SIZE(signals); i++)
		if (strcasecmp(s, signals[i].name) == 0)
			return signals[i].num;
	return -1;
}

const char *hutch_process_signal_name(int sig)
{
	for (size_t i = 0; i < HUTCH_ARRAY_SIZE(signals); i++)
		if (signals[i].num == sig)
			return signals[i].name;
	return NULL;
}

const char *hutch_process_state_name(hutch_process_state state)
{
	switch (state) {
	case HUTCH_PROCESS_RUNNING:
		return "running";
	case HUTCH_PROCESS_EXITED:
		return "exited";
	case HUTCH_PROCESS_KILLED:
		return "killed";
	case HUTCH_PROCESS_LOST:
		return "lost";
	}
	return "lost";
}

/* ---- records ----------------------------------------------------------- */

struct hutch_process {
	char id[HUTCH_PROCESS_ID_SIZE];
	char **argv; /* valid UTF-8, redacted */
	size_t argc;
	hutch_process_state state;
	int exit_code, signal;
	uint32_t uid;
	uint64_t started_ms, ended_ms, output_bytes, dropped_bytes;
};

struct hutch_process_list {
	hutch_process **v;
	size_t n, skipped;
	int truncated; /* the agent listed only the first ones */
};

struct hutch_process_output {
	char id[HUTCH_PROCESS_ID_SIZE];
	uint64_t from, next, dropped;
	struct {
		char *data;
		size_t len;
	} text[2];
	hutch_process *process;
};

const char *hutch_process_id(const hutch_process *p)
{
	return p->id;
}

size_t hutch_process_argc(const hutch_process *p)
{
	return p->argc;
}

const char *hutch_process_arg(const hutch_process *p, size_t i)
{
	return i < p->argc ? p->argv[i] : NULL;
}

hutch_process_state hutch_process_get_state(const hutch_process *p)
{
	return p->state;
}

int hutch_process_exit_code(const hutch_process *p)
{
	return p->state == HUTCH_PROCESS_EXITED ? p->exit_code : -1;
}

int hutch_process_signal(const hutch_process *p)
{
	return p->state == HUTCH_PROCESS_KILLED ? p->signal : 0;
}

uint64_t hutch_process_started_ms(const hutch_process *p)
{
	return p->started_ms;
}

uint64_t hutch_process_ended_ms(const hutch_process *p)
{
	return p->ended_ms;
}

uint64_t hutch_process_output_bytes(const hutch_process *p)
{
	return p->output_bytes;
}

uint64_t hutch_process_dropped_bytes(const hutch_process *p)
{
	return p->dropped_bytes;
}

uint32_t hutch_process_uid(const hutch_process *p)
{
	return p->uid;
}

void hutch_process_free(hutch_process *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->argc; i++)
		free(p->argv[i]);
	free(p->argv);
	free(p);
}

size_t hutch_process_list_count(const hutch_process_list *l)
{
	return l->n;
}

const hutch_process *hutch_process_list_at(const hutch_process_list *l,
					   size_t i)
{
	return i < l->n ? l->v[i] : NULL;
}

size_t hutch_process_list_skipped(const hutch_process_list *l)
{
	return l->skipped;
}

int hutch_process_list_truncated(const hutch_process_list *l)
{
	return l->truncated;
}

void hutch_process_list_free(hutch_process_list *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->n; i++)
		hutch_process_free(l->v[i]);
	free(l->v);
	free(l);
}

/* ---- reading the agent's answers ---------------------------------------- */

/* An integer member in [min, max]: 1 with *out set, 0 when it is null or
 * absent and `nullable`, -1 when it is anything else. */
static int int_member(json_object *o, const char *key, int64_t min, int64_t max,
		      int nullable, int64_t *out)
{
	json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !v)
		return nullable ? 0 : -1;
	/* json-c keeps a number too large for int64 as a saturated int64
	 * or a double: neither is an integer of the protocol. */
	if (!json_object_is_type(v, json_type_int))
		return -1;
	errno = 0;
	*out = json_object_get_int64(v);
	if (errno || *out < min || *out > max)
		return -1;
	return 1;
}

/* Text from the sandbox, made safe to hand on: valid UTF-8 (repaired),
 * then redacted.  NULL out of memory. */
static char *clean_text(const char *s, size_t len, const hutch__secrets *set,
			size_t *out_len)
{
	size_t n, m;
	char *fixed = hutch__utf8_repair(s, len, &n), *red;

	if (!fixed)
		return NULL;
	if (!set) {
		if (out_len)
			*out_len = n;
		return fixed;
	}
	red = hutch__redact_buffer(set, fixed, n, 0, &m);
	free(fixed);
	if (red && out_len)
		*out_len = m;
	return red;
}

/*
 * One record of the agent ({"id","argv","uid","state","exit_code",
 * "signal","started_ms","ended_ms","output_bytes","dropped_bytes"}).
 * 0 with *out set, -1 when it is not well formed, -2 out of memory.
 */
static int parse_record(hutch_process **out, json_object *o,
			const hutch__secrets *set)
{
	static const char *const states[] = { "running", "exited", "killed",
					      "lost" };
	json_object *v, *argv;
	hutch_process *p;
	const char *s;
	int64_t n;
	int rc = -1;

	if (!json_object_is_type(o, json_type_object) ||
	    !json_object_object_get_ex(o, "id", &v) ||
	    !json_object_is_type(v, json_type_string) ||
	    !hutch_process_id_valid(json_object_get_string(v)) ||
	    !json_object_object_get_ex(o, "argv", &argv) ||
	    !json_object_is_type(argv, json_type_array) ||
	    json_object_array_length(argv) > RECORD_MAX_ARGS)
		return -1;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -2;
	/* Checked above: the charset and the length fit p->id. */
	snprintf(p->id, sizeof(p->id), "%s", json_object_get_string(v));
	p->argv = calloc(json_object_array_length(argv) + 1, sizeof(char *));
	if (!p->argv) {
		rc = -2;
		goto fail;
	}
	for (size_t i = 0; i < json_object_array_length(argv); i++) {
		json_object *a = json_object_array_get_idx(argv, i);

		if (!json_object_is_type(a, json_type_string))
			goto fail;
		p->argv[i] = clean_text(json_object_get_string(a),
					(size_t)json_object_get_string_len(a),
					set, NULL);
		if (!p->argv[i]) {
			rc = -2;
			goto fail;
		}
		p->argc++;
	}
	if (!json_object_object_get_ex(o, "state", &v) ||
	    !json_object_is_type(v, json_type_string))
		goto fail;
	s = json_object_get_string(v);
	p->state = HUTCH_PROCESS_LOST + 1;
	for (size_t i = 0; i < HUTCH_ARRAY_SIZE(states); i++)
		if (strcmp(s, states[i]) == 0)
			p->state = (hutch_process_state)i;
	if (p->state > HUTCH_PROCESS_LOST)
		goto fail;
	if (int_member(o, "uid", 0, UINT32_MAX, 0, &n) < 0)
		goto fail;
	p->uid = (uint32_t)n;
	if (int_member(o, "started_ms", 0, INT64_MAX, 0, &n) < 0)
		goto fail;
	p->started_ms = (uint64_t)n;
	switch (int_member(o, "ended_ms", 0, INT64_MAX, 1, &n)) {
	case -1:
		goto fail;
	case 1:
		p->ended_ms = (uint64_t)n;
	}
	if (int_member(o, "output_bytes", 0, INT64_MAX, 0, &n) < 0)
		goto fail;
	p->output_bytes = (uint64_t)n;
	if (int_member(o, "dropped_bytes", 0, INT64_MAX, 0, &n) < 0)
		goto fail;
	p->dropped_bytes = (uint64_t)n;
	/* The dropped bytes are some of the output. */
	if (p->dropped_bytes > p->output_bytes)
		goto fail;
	p->exit_code = -1;
	switch (int_member(o, "exit_code", 0, 255, 1, &n)) {
	case -1:
		goto fail;
	case 1:
		p->exit_code = (int)n;
	}
	switch (int_member(o, "signal", 1, 64, 1, &n)) {
	case -1:
		goto fail;
	case 1:
		p->signal = (int)n;
	}
	/* What the state says must be there is there. */
	if ((p->state == HUTCH_PROCESS_EXITED && p->exit_code < 0) ||
	    (p->state == HUTCH_PROCESS_KILLED && p->signal == 0))
		goto fail;
	*out = p;
	return 0;
fail:
	hutch_process_free(p);
	return rc;
}

/* Parse under a depth limit; NULL when it is not one JSON document. */
static json_object *parse_answer(const char *data, size_t len)
{
	json_tokener *tok;
	json_object *obj;

	if (!data || len == 0 || len > (size_t)INT_MAX)
		return NULL;
	tok = json_tokener_new_ex(ANSWER_MAX_DEPTH);
	if (!tok)
		return NULL;
	obj = json_tokener_parse_ex(tok, data, (int)len);
	if (!obj || json_tokener_get_error(tok) != json_tokener_success ||
	    json_tokener_get_parse_end(tok) != len) {
		/* One trailing newline is how the agent ends its line. */
		if (obj && json_tokener_get_parse_end(tok) == len - 1 &&
		    data[len - 1] == '\n')
			goto done;
		json_object_put(obj);
		obj = NULL;
	}
done:
	json_tokener_free(tok);
	return obj;
}

/* ---- running the agent ---------------------------------------------------- */

/* The agent's answer to one command. */
struct answer {
	hutch_exec_result *res;
	int code; /* the agent's exit code */
	const char *out, *errtext;
	size_t out_len, err_len;
	uint64_t omitted;
};

static void answer_free(struct answer *a)
{
	hutch_exec_result_free(a->res);
	memset(a, 0, sizeof(*a));
}

/* An agent from an older hutch, without the command. */
static int agent_too_old(const struct answer *a)
{
	return a->code == HUTCH_AGENT_EXIT_NOEXEC ||
	       a->code == HUTCH_AGENT_EXIT_NOCMD ||
	       (a->code == HUTCH_AGENT_EXIT_USAGE && a->out_len == 0 &&
		memmem(a->errtext, a->err_len, HUTCH_AGENT_UNKNOWN_COMMAND,
		       sizeof(HUTCH_AGENT_UNKNOWN_COMMAND) - 1));
}

/*
 * Run `argv` (an agent command line) with `eo`'s other fields, raw, and
 * give its answer.  An agent too old for the command is brought up to date
 * once and asked again: it did not know the command, so nothing ran.
 * `old_ok`: exits 126/127 are the command's own (spawn's "cannot run"), so
 * only the "unknown command" usage error says the agent is too old.
 */
static int run_agent(struct answer *a, hutch_session *s, hutch_exec_options *eo,
		     const char *what, int old_ok, hutch_error **err)
{
	uint64_t total;
	int rc, upgraded = 0;

	memset(a, 0, sizeof(*a));
again:
	rc = hutch__exec_run(&a->res, s, eo, HUTCH__EXEC_RAW, err);
	if (rc < 0)
		return rc;
	if ((rc = hutch__exec_failure(a->res, what, eo->timeout_ms, err)) < 0) {
		answer_free(a);
		return rc;
	}
	a->code = hutch_exec_result_exit_code(a->res);
	hutch_exec_result_output(a->res, HUTCH_STREAM_STDOUT, &a->out,
				 &a->out_len, &total, &a->omitted);
	hutch_exec_result_output(a->res, HUTCH_STREAM_STDERR, &a->errtext,
				 &a->err_len, NULL, NULL);
	if ((old_ok ? a->code == HUTCH_AGENT_EXIT_USAGE && a->out_len == 0 &&
			      memmem(a->errtext, a->err_len,
				     HUTCH_AGENT_UNKNOWN_COMMAND,
				     sizeof(HUTCH_AGENT_UNKNOWN_COMMAND) - 1) :
		      agent_too_old(a)) &&
	    !upgraded) {
		upgraded = 1;
		answer_free(a);
		if ((rc = hutch__session_put_agent(s, err)) < 0)
			return rc;
		goto again;
	}
	return 0;
}

/* The last line of the agent's stderr, shown in an error: at most 200
 * bytes, escaped (the sandbox can make it say anything), redacted. */
static char *last_line(const struct answer *a, const hutch__secrets *set)
{
	const char *s = a->errtext, *end = s + a->err_len, *p;
	char *red, *shown;
	size_t n;

	while (end > s && (end[-1] == '\n' || end[-1] == '\r'))
		end--;
	p = end;
	while (p > s && p[-1] != '\n')
		p--;
	red = hutch__redact_buffer(set, p, (size_t)(end - p), 0, &n);
	if (!red)
		return NULL;
	shown = hutch__utf8_escape(red, n, 200, HUTCH__ESC_TEXT);
	free(red);
	return shown;
}

/* An exit the command does not have: the error that quotes the agent. */
static int unexpected(const struct answer *a, const char *what,
		      const hutch__secrets *set, hutch_error **err)
{
	char *line = last_line(a, set);
	int rc = hutch__error_set(err, HUTCH_EPROTO,
				  "%s: the agent's answer is not understood "
				  "(exit %d): %s",
				  what, a->code, line ? line : "");

	free(line);
	return rc;
}

static void base_options(hutch_exec_options *eo, const char **argv, size_t argc,
			 size_t cap, hutch_cancel *cancel)
{
	eo->argv = argv;
	eo->argc = argc;
	eo->capture = 1;
	eo->max_output = cap;
	eo->timeout_ms = PROC_TIMEOUT_MS;
	eo->cancel = cancel;
}

static int no_such_process(const char *id, hutch_error **err)
{
	return hutch__error_set(err, HUTCH_ENOTFOUND,
				"no background process '%s' in the session "
				"('hutch ps' lists them)",
				id);
}

/* One record answer (wait), or a list ({"processes":[...]}) into `l`. */
static int read_record(hutch_process **out, const struct answer *a,
		       const char *what, const hutch__secrets *set,
		       hutch_error **err)
{
	json_object *doc;
	int rc;

	if (a->omitted)
		return hutch__error_set(
			err, HUTCH_ETOOBIG,
			"%s: the agent's answer is over its cap", what);
	doc = parse_answer(a->out, a->out_len);
	rc = doc ? parse_record(out, doc, set) : -1;
	json_object_put(doc);
	if (rc == -2)
		return hutch__error_oom(err);
	if (rc < 0)
		return unexpected(a, what, set, err);
	return 0;
}

/* ---- start -------------------------------------------------------------- */

static int check_start_options(const hutch_exec_options *o, hutch_session *s,
			       hutch_error **err)
{
	if (!o || (o->version != 1 && o->version != 2))
		return hutch__error_set(err, HUTCH_EINVALID,
					"unsupported hutch_exec_options");
	if (!o->argv || o->argc == 0 || !o->argv[0] || !o->argv[0][0])
		return hutch__error_set(err, HUTCH_EINVALID,
					"no command given");
	if (o->version >= 2 && (o->input || o->input_len || o->input_fd >= 0 ||
				o->on_input || o->tty))
		return hutch__error_set(
			err, HUTCH_EINVALID,
			"a background process reads no input and has no "
			"terminal (its stdin is /dev/null)");
	/* The process would keep the values in its environment after the
	 * call returns, and a command given secrets leaves nothing running
	 * (README, "Secrets"). */
	if (s->secrets && s->secrets->count)
		return hutch__error_set(
			err, HUTCH_EINVALID,
			"a background process cannot be given secrets: it would "
			"keep them in its environment after hutch returns; run "
			"it in the foreground, or without secrets");
	return 0;
}

int hutch_process_start(char *id_out, size_t id_size, hutch_session *s,
			const hutch_exec_options *o, hutch_error **err)
{
	hutch_exec_options eo = HUTCH_EXEC_OPTIONS_INIT;
	char id[16], hex[9];
	const char **argv = NULL;
	struct answer a;
	json_object *doc = NULL, *v;
	size_t n = 0;
	int rc;

	if ((rc = check_start_options(o, s, err)) < 0)
		return rc;
	if (!id_out || id_size < sizeof(id))
		return hutch__error_set(err, HUTCH_EINVALID,
					"the id buffer is too small");
	if (hutch__random_hex(hex, sizeof(hex)) < 0)
		return hutch__error_set(err, HUTCH_EFAILED,
					"no randomness for a process id: %s",
					strerror(errno));
	snprintf(id, sizeof(id), "p%s", hex);
	argv = calloc(o->argc + 6, sizeof(*argv));
	if (!argv)
		return hutch__error_oom(err);
	argv[n++] = HUTCH_AGENT_RUN_PATH;
	argv[n++] = HUTCH_AGENT_CMD_SPAWN;
	argv[n++] = HUTCH_AGENT_OPT_ID;
	argv[n++] = id;
	argv[n++] = "--";
	for (size_t i = 0; i < o->argc; i++)
		argv[n++] = o->argv[i];
	base_options(&eo, argv, n, ENTRY_MAX_ANSWER, o->cancel);
	/* The agent's run chdirs, sets the environment and takes the user:
	 * the spawned process inherits them. */
	eo.workdir = o->workdir;
	eo.env = o->env;
	eo.env_count = o->env_count;
	if (o->version >= 2)
		eo.user = o->user;
	rc = run_agent(&a, s, &eo, "start", 1, err);
	free(argv);
	if (rc < 0)
		goto out;
	if (a.code == HUTCH_AGENT_EXIT_NOCMD ||
	    a.code == HUTCH_AGENT_EXIT_NOEXEC ||
	    a.code == HUTCH_AGENT_EXIT_NOWORKDIR) {
		/* "hutch: cannot run 'ARGV0': strerror" or "hutch: cannot
		 * use working directory 'DIR': strerror", from the agent. */
		char *line = last_line(&a, hutch__session_redaction(s));

		rc = hutch__error_set(
			err,
			a.code == HUTCH_AGENT_EXIT_NOCMD ? HUTCH_ENOTFOUND :
							   HUTCH_EINVALID,
			"%s", line && *line ? line : "cannot run the command");
		free(line);
		goto out;
	}
	doc = a.code == 0 && !a.omitted ? parse_answer(a.out, a.out_len) : NULL;
	/* The answer must name the id we made: anything else is not our
	 * process. */
	if (!doc || !json_object_object_get_ex(doc, "id", &v) ||
	    !json_object_is_type(v, json_type_string) ||
	    strcmp(json_object_get_string(v), id) != 0) {
		rc = unexpected(&a, "start", hutch__session_redaction(s), err);
		goto out;
	}
	snprintf(id_out, id_size, "%s", id);
	rc = 0;
out:
	json_object_put(doc);
	answer_free(&a);
	if (rc < 0)
		hutch__error_wrap(err, rc, "session '%s'",
				  hutch_session_name(s));
	return rc;
}

/* ---- list --------------------------------------------------------------- */

int hutch_process_list_get(hutch_process_list **out, hutch_session *s,
			   hutch_error **err)
{
	hutch_exec_options eo = HUTCH_EXEC_OPTIONS_INIT;
	const char *argv[] = { HUTCH_AGENT_RUN_PATH, HUTCH_AGENT_CMD_PS };
	const hutch__secrets *set = hutch__session_redaction(s);
	hutch_process_list *l = NULL;
	json_object *doc = NULL, *arr;
	struct answer a;
	size_t n;
	int rc;

	base_options(&eo, argv, 2, PS_MAX_ANSWER, NULL);
	if ((rc = run_agent(&a, s, &eo, "ps", 0, err)) < 0)
		goto out;
	if (a.omitted) {
		rc = hutch__error_set(
			err, HUTCH_ETOOBIG,
			"ps: the agent's answer is over %u MiB (the session's "
			"proc directory holds too many records)",
			PS_MAX_ANSWER >> 20);
		goto out;
	}
	doc = a.code == 0 ? parse_answer(a.out, a.out_len) : NULL;
	if (!doc || !json_object_object_get_ex(doc, "processes", &arr) ||
	    !json_object_is_type(arr, json_type_array)) {
		rc = unexpected(&a, "ps", set, err);
		goto out;
	}
	n = json_object_array_length(arr);
	l = calloc(1, sizeof(*l));
	if (!l ||
	    !(l->v = calloc(n < LIST_MAX ? n + 1 : LIST_MAX, sizeof(*l->v)))) {
		rc = hutch__error_oom(err);
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		hutch_process *p;
		int prc;

		if (l->n == LIST_MAX) {
			l->skipped += n - i;
			break;
		}
		prc = parse_record(&p, json_object_array_get_idx(arr, i), set);
		if (prc == -2) {
			rc = hutch__error_oom(err);
			goto out;
		}
		/* A record the sandbox broke is left out, and counted, so
		 * that one bad entry cannot hide the others. */
		if (prc < 0)
			l->skipped++;
		else
			l->v[l->n++] = p;
	}
	if (json_object_object_get_ex(doc, "truncated", &arr) &&
	    json_object_get_boolean(arr))
		l->truncated = 1;
	*out = l;
	l = NULL;
	rc = 0;
out:
	hutch_process_list_free(l);
	json_object_put(doc);
	answer_free(&a);
	if (rc < 0)
		hutch__error_wrap(err, rc, "session '%s'",
				  hutch_session_name(s));
	return rc;
}

/* The record of `id`, from a list (ENOTFOUND when it is not there). */
/* 0 when `id` may be a process of the session: listed, or the list was
 * cut or left records out (it may be one of those); else ENOTFOUND. */
static int check_known(hutch_session *s, const char *id, hutch_error **err)
{
	hutch_process_list *l = NULL;
	int rc = hutch_process_list_get(&l, s, err), known;

	if (rc < 0)
		return rc;
	known = l->truncated || l->skipped;
	for (size_t i = 0; i < l->n && !known; i++)
		known = strcmp(l->v[i]->id, id) == 0;
	hutch_process_list_free(l);
	return known ? 0 : no_such_process(id, err);
}

/* ---- logs ---------------------------------------------------------------- */

/* Output on its way to the caller, redacted first. */
struct logs_run {
	const hutch_process_logs_options *o;
	hutch__redactor red[2];
	int stopped;
};

struct logs_sink {
	struct logs_run *r;
	hutch_stream stream;
};

static int logs_emit(const char *data, size_t len, void *p)
{
	struct logs_sink *k = p;

	if (k->r->o->on_output &&
	    k->r->o->on_output(k->stream, data, len, k->r->o->payload)) {
		k->r->stopped = 1;
		return 1;
	}
	return 0;
}

struct logs_ctx {
	struct logs_run *r;
	struct logs_sink sink[2];
};

static int logs_output(hutch_stream stream, const char *data, size_t len,
		       void *p)
{
	struct logs_ctx *c = p;
	int i = stream == HUTCH_STREAM_STDERR;

	return hutch__redact_feed(&c->r->red[i], data, len, logs_emit,
				  &c->sink[i]);
}

int hutch_process_logs(hutch_session *s, const char *id,
		       const hutch_process_logs_options *o, hutch_error **err)
{
	hutch_exec_options eo = HUTCH_EXEC_OPTIONS_INIT;
	const hutch__secrets *set = hutch__session_redaction(s);
	hutch_exec_result *res = NULL;
	struct logs_run r = { .o = o };
	struct logs_ctx c = { .r = &r };
	char from[24], tail[24];
	const char *argv[10];
	size_t n = 0;
	int rc, code;

	if (!o || o->version != HUTCH_PROCESS_LOGS_OPTIONS_VERSION)
		return hutch__error_set(
			err, HUTCH_EINVALID,
			"unsupported hutch_process_logs_options");
	if ((rc = check_id(id, err)) < 0)
		return rc;
	/* Asked first: the agent's own "no such process" line would
	 * otherwise reach the caller as if the process had written it. */
	if ((rc = check_known(s, id, err)) < 0)
		goto out;
	snprintf(from, sizeof(from), "%" PRIu64, o->from);
	snprintf(tail, sizeof(tail), "%" PRIu64, o->tail_lines);
	argv[n++] = HUTCH_AGENT_RUN_PATH;
	argv[n++] = HUTCH_AGENT_CMD_LOGS;
	argv[n++] = id;
	if (o->from) {
		argv[n++] = "--from";
		argv[n++] = from;
	}
	if (o->tail_lines) {
		argv[n++] = "--tail";
		argv[n++] = tail;
	}
	if (o->follow)
		argv[n++] = "--follow";
	for (int i = 0; i < 2; i++) {
		c.sink[i].r = &r;
		c.sink[i].stream = i ? HUTCH_STREAM_STDERR :
				       HUTCH_STREAM_STDOUT;
		if (hutch__redactor_init(&r.red[i], set) < 0) {
			rc = hutch__error_oom(err);
			goto out;
		}
	}
	eo.argv = argv;
	eo.argc = n;
	/* No timeout: followed, the output comes as long as the process
	 * runs; and even without --follow, a reader that takes its time
	 * (a pager) holds the agent up.  The agent ends once all is
	 * written; the cancel stops it. */
	eo.timeout_ms = 0;
	eo.on_output = logs_output;
	eo.payload = &c;
	eo.cancel = o->cancel;
	rc = hutch__exec_run(&res, s, &eo, HUTCH__EXEC_RAW, err);
	if (rc < 0)
		goto out;
	if (hutch_exec_result_status(res) == HUTCH_EXEC_CANCELLED) {
		rc = hutch__error_set(err, HUTCH_ECANCELLED,
				      "logs: stopped (the process was not)");
		goto out;
	}
	if ((rc = hutch__exec_failure(res, "logs", eo.timeout_ms, err)) < 0)
		goto out;
	/* What the redactors held back, the output having ended. */
	for (int i = 0; i < 2 && !r.stopped; i++)
		hutch__redact_flush(&r.red[i], 0, logs_emit, &c.sink[i]);
	code = hutch_exec_result_exit_code(res);
	if (code == HUTCH_AGENT_EXIT_NOTAG)
		rc = no_such_process(id, err);
	else if (code != 0)
		rc = hutch__error_set(err, HUTCH_EFAILED,
				      "logs: the agent exited %d", code);
out:
	hutch__redactor_free(&r.red[0]);
	hutch__redactor_free(&r.red[1]);
	hutch_exec_result_free(res);
	if (rc < 0)
		hutch__error_wrap(err, rc, "session '%s'",
				  hutch_session_name(s));
	return rc;
}

/* ---- read by offset --------------------------------------------------------- */

static int read_text(hutch_process_output *out, int i, json_object *doc,
		     const char *key, const hutch__secrets *set)
{
	json_object *v;

	if (!json_object_object_get_ex(doc, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return -1;
	out->text[i].data = clean_text(json_object_get_string(v),
				       (size_t)json_object_get_string_len(v),
				       set, &out->text[i].len);
	return out->text[i].data ? 0 : -2;
}

static int parse_output(hutch_process_output *out, json_object *doc,
			uint64_t asked, size_t max, const hutch__secrets *set)
{
	json_object *v;
	int64_t n;
	int rc;

	if (!json_object_is_type(doc, json_type_object) ||
	    !json_object_object_get_ex(doc, "id", &v) ||
	    !json_object_is_type(v, json_type_string) ||
	    strcmp(json_object_get_string(v), out->id) != 0)
		return -1;
	if (int_member(doc, "from", 0, INT64_MAX, 0, &n) < 0)
		return -1;
	out->from = (uint64_t)n;
	if (int_member(doc, "next", 0, INT64_MAX, 0, &n) < 0)
		return -1;
	out->next = (uint64_t)n;
	/* From where we asked (or later, past dropped bytes), at most `max`
	 * bytes on: an offset a caller keeps must only move forward. */
	if (out->from < asked || out->next < out->from ||
	    out->next - out->from > max)
		return -1;
	out->dropped = out->from - asked;
	if ((rc = read_text(out, 0, doc, "stdout", set)) < 0 ||
	    (rc = read_text(out, 1, doc, "stderr", set)) < 0)
		return rc;
	/* The record: "process":{...}, or its members beside these; of
	 * this process. */
	rc = parse_record(
		&out->process,
		json_object_object_get_ex(doc, "process", &v) ? v : doc, set);
	if (rc == 0 && strcmp(out->process->id, out->id) != 0)
		rc = -1;
	return rc;
}

int hutch_process_read(hutch_process_output **out, hutch_session *s,
		       const char *id, uint64_t from, size_t max,
		       hutch_error **err)
{
	hutch_exec_options eo = HUTCH_EXEC_OPTIONS_INIT;
	const hutch__secrets *set = hutch__session_redaction(s);
	hutch_process_output *o = NULL;
	char fromv[24], maxv[24];
	const char *argv[9];
	json_object *doc = NULL;
	struct answer a;
	int rc, prc;

	memset(&a, 0, sizeof(a));
	if ((rc = check_id(id, err)) < 0)
		return rc;
	if (max == 0)
		max = HUTCH_PROCESS_READ_DEFAULT;
	if (max > HUTCH_PROCESS_READ_MAX)
		max = HUTCH_PROCESS_READ_MAX;
	snprintf(fromv, sizeof(fromv), "%" PRIu64, from);
	snprintf(maxv, sizeof(maxv), "%zu", max);
	argv[0] = HUTCH_AGENT_RUN_PATH;
	argv[1] = HUTCH_AGENT_CMD_LOGS;
	argv[2] = id;
	argv[3] = "--json";
	argv[4] = "--from";
	argv[5] = fromv;
	argv[6] = "--max";
	argv[7] = maxv;
	base_options(&eo, argv, 8, READ_MAX_ANSWER(max), NULL);
	if ((rc = run_agent(&a, s, &eo, "read", 0, err)) < 0)
		goto out;
	if (a.code == HUTCH_AGENT_EXIT_NOTAG) {
		rc = no_such_process(id, err);
		goto out;
	}
	o = calloc(1, sizeof(*o));
	if (!o) {
		rc = hutch__error_oom(err);
		goto out;
	}
	snprintf(o->id, sizeof(o->id), "%s", id);
	doc = a.code == 0 && !a.omitted ? parse_answer(a.out, a.out_len) : NULL;
	prc = doc ? parse_output(o, doc, from, max, set) : -1;
	if (prc == -2) {
		rc = hutch__error_oom(err);
		goto out;
	}
	if (prc < 0) {
		rc = unexpected(&a, "read", set, err);
		goto out;
	}
	*out = o;
	o = NULL;
	rc = 0;
out:
	json_object_put(doc);
	hutch_process_output_free(o);
	answer_free(&a);
	if (rc < 0)
		hutch__error_wrap(err, rc, "session '%s'",
				  hutch_session_name(s));
	return rc;
}

void hutch_process_output_text(const hutch_process_output *o,
			       hutch_stream stream, const char **data,
			       size_t *len)
{
	int i = stream == HUTCH_STREAM_STDERR;

	if (data)
		*data = o->text[i].data ? o->text[i].data : "";
	if (len)
		*len = o->text[i].len;
}

uint64_t hutch_process_output_from(const hutch_process_output *o)
{
	return o->from;
}

uint64_t hutch_process_output_next(const hutch_process_output *o)
{
	return o->next;
}

uint64_t hutch_process_output_dropped(const hutch_process_output *o)
{
	return o->dropped;
}

const hutch_process *hutch_process_output_process(const hutch_process_output *o)
{
	return o->process;
}

void hutch_process_output_free(hutch_process_output *o)
{
	if (!o)
		return;
	free(o->text[0].data);
	free(o->text[1].data);
	hutch_process_free(o->process);
	free(o);
}

/* ---- kill and wait ------------------------------------------------------- */

/* The uid that process `id`'s record names, as a decimal string in
 * `buf`: 0, or -1 when there is no such record (or it cannot be read). */
static int owner_of(hutch_session *s, const char *id, char *buf, size_t size)
{
	hutch_process_list *l = NULL;
	int rc = -1;

	if (hutch_process_list_get(&l, s, NULL) < 0)
		return -1;
	for (size_t i = 0; i < hutch_process_list_count(l); i++) {
		const hutch_process *p = hutch_process_list_at(l, i);

		if (strcmp(hutch_process_id(p), id) == 0) {
			snprintf(buf, size, "%" PRIu32, hutch_process_uid(p));
			rc = 0;
			break;
		}
	}
	hutch_process_list_free(l);
	return rc;
}

int hutch_process_kill(hutch_session *s, const char *id, int sig,
		       hutch_error **err)
{
	hutch_exec_options eo = HUTCH_EXEC_OPTIONS_INIT;
	char sigv[8], uidv[16];
	const char *argv[] = { HUTCH_AGENT_RUN_PATH, HUTCH_AGENT_CMD_KILL, id,
			       HUTCH_AGENT_OPT_SIGNAL, sigv };
	struct answer a;
	int rc;

	memset(&a, 0, sizeof(a));
	if ((rc = check_id(id, err)) < 0)
		return rc;
	if (sig == 0)
		sig = SIGKILL;
	if (sig < 1 || sig > 64)
		return hutch__error_set(err, HUTCH_EINVALID,
					"invalid signal %d: 1 to 64", sig);
	snprintf(sigv, sizeof(sigv), "%d", sig);
	base_options(&eo, argv, HUTCH_ARRAY_SIZE(argv), ENTRY_MAX_ANSWER, NULL);
	if ((rc = run_agent(&a, s, &eo, "kill", 0, err)) < 0)
		goto out;
	/* A process started as another user (--user) can only be signalled
	 * by that user: the session has no CAP_KILL, root included.  Ask
	 * once more as the uid its record names (a forged record can only
	 * name a uid of the session's, never the agent's owner: the exec
	 * refuses that one). */
	if (a.code == HUTCH_AGENT_EXIT_FAIL &&
	    owner_of(s, id, uidv, sizeof(uidv)) == 0) {
		eo.user = uidv;
		answer_free(&a);
		memset(&a, 0, sizeof(a));
		if ((rc = run_agent(&a, s, &eo, "kill", 0, err)) < 0)
			goto out;
	}
	/* 0: signalled, or it had already ended. */
	if (a.code == 0)
		goto out;
	if (a.code == HUTCH_AGENT_EXIT_NOTAG)
		rc = no_such_process(id, err);
	else if (a.code == HUTCH_AGENT_EXIT_FAIL)
		rc = hutch__error_set(err, HUTCH_EFAILED,
				      "kill: a process of '%s' survived the "
				      "signal (one the session's user may not "
				      "signal)",
				      id);
	else
		rc = unexpected(&a, "kill", hutch__session_redaction(s), err);
out:
	answer_free(&a);
	if (rc < 0)
		hutch__error_wrap(err, rc, "session '%s'",
				  hutch_session_name(s));
	return rc;
}

int hutch_process_wait(hutch_process **out, hutch_session *s, const char *id,
		       uint64_t timeout_ms, hutch_cancel *cancel,
		       hutch_error **err)
{
	hutch_exec_options eo = HUTCH_EXEC_OPTIONS_INIT;
	const char *argv[] = { HUTCH_AGENT_RUN_PATH, HUTCH_AGENT_CMD_WAIT, id };
	const hutch__secrets *set = hutch__session_redaction(s);
	struct answer a;
	int rc;

	memset(&a, 0, sizeof(a));
	if ((rc = check_id(id, err)) < 0)
		return rc;
	base_options(&eo, argv, 3, ENTRY_MAX_ANSWER, cancel);
	/* The exec's timeout ends the agent's wait, never the process: they
	 * are different trees. */
	eo.timeout_ms = timeout_ms;
	rc = hutch__exec_run(&a.res, s, &eo, HUTCH__EXEC_RAW, err);
	if (rc < 0)
		goto out;
	switch (hutch_exec_result_status(a.res)) {
	case HUTCH_EXEC_TIMEOUT:
		rc = hutch__error_set(err, HUTCH_ETIMEOUT,
				      "process '%s' still runs after %.3g s",
				      id, (double)timeout_ms / 1000.0);
		goto out;
	case HUTCH_EXEC_CANCELLED:
		rc = hutch__error_set(err, HUTCH_ECANCELLED,
				      "wait: stopped (the process was not)");
		goto out;
	default:
		if ((rc = hutch__exec_failure(a.res, "wait", 0, err)) < 0)
			goto out;
	}
	a.code = hutch_exec_result_exit_code(a.res);
	hutch_exec_result_output(a.res, HUTCH_STREAM_STDOUT, &a.out, &a.out_len,
				 NULL, &a.omitted);
	hutch_exec_result_output(a.res, HUTCH_STREAM_STDERR, &a.errtext,
				 &a.err_len, NULL, NULL);
	if (a.code == HUTCH_AGENT_EXIT_NOTAG) {
		rc = no_such_process(id, err);
		goto out;
	}
	if (a.code != 0) {
		rc = unexpected(&a, "wait", set, err);
		goto out;
	}
	if ((rc = read_record(out, &a, "wait", set, err)) < 0)
		goto out;
	/* The agent answers once the process has ended. */
	if ((*out)->state == HUTCH_PROCESS_RUNNING) {
		hutch_process_free(*out);
		*out = NULL;
		rc = unexpected(&a, "wait", set, err);
	}
out:
	answer_free(&a);
	if (rc < 0)
		hutch__error_wrap(err, rc, "session '%s'",
				  hutch_session_name(s));
	return rc;
}

/* ---- JSON ------------------------------------------------------------------- */

static json_object *record_json(const hutch_process *p)
{
	json_object *o = json_object_new_object(),
		    *av = json_object_new_array();

	if (!o || !av) {
		json_object_put(o);
		json_object_put(av);
		return NULL;
	}
	for (size_t i = 0; i < p->argc; i++)
		json_object_array_add(av, json_object_new_string(p->argv[i]));
	json_object_object_add(o, "id", json_object_new_string(p->id));
	json_object_object_add(o, "argv", av);
	json_object_object_add(
		o, "state",
		json_object_new_string(hutch_process_state_name(p->state)));
	json_object_object_add(o, "exit_code",
			       p->state == HUTCH_PROCESS_EXITED ?
				       json_object_new_int(p->exit_code) :
				       NULL);
	json_object_object_add(o, "signal",
			       p->state == HUTCH_PROCESS_KILLED ?
				       json_object_new_int(p->signal) :
				       NULL);
	json_object_object_add(o, "uid", json_object_new_int64(p->uid));
	json_object_object_add(o, "started_ms",
			       json_object_new_int64((int64_t)p->started_ms));
	json_object_object_add(
		o, "ended_ms",
		p->ended_ms ? json_object_new_int64((int64_t)p->ended_ms) :
			      NULL);
	json_object_object_add(o, "output_bytes",
			       json_object_new_int64((int64_t)p->output_bytes));
	json_object_object_add(
		o, "dropped_bytes",
		json_object_new_int64((int64_t)p->dropped_bytes));
	return o;
}

static int to_string(char **out, json_object *o, hutch_error **err)
{
	const char *s;

	if (!o)
		return hutch__error_oom(err);
	s = json_object_to_json_string_ext(
		o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	*out = s ? strdup(s) : NULL;
	json_object_put(o);
	return *out ? 0 : hutch__error_oom(err);
}

int hutch_process_to_json(char **out, const hutch_process *p, hutch_error **err)
{
	return to_string(out, record_json(p), err);
}

int hutch_process_list_to_json(char **out, const hutch_process_list *l,
			       hutch_error **err)
{
	json_object *o = json_object_new_object(),
		    *arr = json_object_new_array();

	if (!o || !arr) {
		json_object_put(arr);
		json_object_put(o);
		return hutch__error_oom(err);
	}
	json_object_object_add(o, "processes", arr);
	for (size_t i = 0; i < l->n; i++) {
		json_object *r = record_json(l->v[i]);

		if (!r) {
			json_object_put(o);
			return hutch__error_oom(err);
		}
		json_object_array_add(arr, r);
	}
	json_object_object_add(o, "skipped",
			       json_object_new_int64((int64_t)l->skipped));
	json_object_object_add(o, "truncated",
			       json_object_new_boolean(l->truncated));
	return to_string(out, o, err);
}

int hutch_process_output_to_json(char **out, const hutch_process_output *po,
				 hutch_error **err)
{
	json_object *o = json_object_new_object(),
		    *r = po->process ? record_json(po->process) : NULL;

	if (!o || (po->process && !r)) {
		json_object_put(o);
		json_object_put(r);
		return hutch__error_oom(err);
	}
	json_object_object_add(o, "id", json_object_new_string(po->id));
	json_object_object_add(o, "from",
			       json_object_new_int64((int64_t)po->from));
	json_object_object_add(o, "next",
			       json_object_new_int64((int64_t)po->next));
	json_object_object_add(o, "dropped",
			       json_object_new_int64((int64_t)po->dropped));
	json_object_object_add(o, "stdout",
			       json_object_new_string_len(
				       po->text[0].data ? po->text[0].data : "",
				       (int)po->text[0].len));
	json_object_object_add(o, "stderr",
			       json_object_new_string_len(
				       po->text[1].data ? po->text[1].data : "",
				       (int)po->text[1].len));
	json_object_object_add(o, "process", r);
	return to_string(out, o, err);
}
