/*
 * cmd_batch.c - hutch batch: many commands in many sessions
 *
 *   hutch batch FILE.jsonl|- [--parallel N] [--keep] [--timeout SEC]
 *               [--max-output BYTES] [--image IMG]
 *
 * Each line of FILE is a job:
 *   {"session": "s1", "command": ["make", "test"] | "make test 2>&1",
 *    "timeout": 30, "seed": "./src", "env": ["K=V"], "workdir": "sub",
 *    "stdin": "text", "user": "USER[:GROUP]", "background": true,
 *    "id": <anything>}
 * A background job is started and its result says "status": "started"
 * with the process's id in "process" (see hutch ps); it keeps running
 * after the batch, in a session the batch did not create or with --keep
 * (a session the batch created is removed with what runs in it).
 * N worker threads (one hutch_session handle per job, one shared
 * hutch_fleet of engines, whose connection pools are thread-safe; each
 * session is placed on, or found on, one of them) take lines in order
 * and print one JSON object per job in the order the jobs end.  A job that
 * fails, times out or cannot be read yields its own result; the others go
 * on.  Sessions the batch created are removed at the end unless --keep;
 * sessions that existed before are never removed.
 *
 * Exit status: 0 when every job ran and exited 0; 1 when all lines were
 * handled but some job did not (non-zero exit, timeout, lost sandbox, a
 * line that could not run); 125 when hutch could not start the batch;
 * 128+N after signal N (running commands are killed, created sessions
 * removed unless --keep).
 *
 * Uses only the public API.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <json-c/json.h>

#include "cli.h"
#include "duration.h"

/* Bounds on what an input file can make hutch allocate or start. */
#define BATCH_MAX_LINE (1024 * 1024) /* bytes of one job line */
#define BATCH_MAX_PARALLEL 256
#define BATCH_MAX_ARGS 4096
#define BATCH_DEFAULT_PARALLEL 8
/* Per stream and job: 64 jobs at once keep at most 64 x 2 x 64 KiB. */
#define BATCH_DEFAULT_MAX_OUTPUT (64 * 1024)

/* A session named by some job: prepared (ensured, maybe seeded) by the
 * first job that needs it while later ones wait. */
enum sess_state {
	SESS_NEW,
	SESS_PREPARING,
	SESS_READY,
	SESS_FAILED
};

struct sess {
	char *name;
	enum sess_state state;
	int created;	      /* this batch created it: remove unless --keep */
	char *seed;	      /* host directory it was seeded from, or NULL */
	char *error;	      /* SESS_FAILED: why */
	hutch_engine *engine; /* where it lives (borrowed from the fleet) */
	struct sess *next;
};

struct batch {
	hutch_fleet *fleet;
	hutch_cancel *cancel;
	FILE *in;
	const char *image;
	uint64_t timeout_ms;
	size_t max_output;
	int keep;

	pthread_mutex_t lock; /* input, sessions, counters */
	pthread_cond_t cond;  /* a session's preparation ended */
	unsigned long lineno;
	int eof, read_error;
	struct sess *sessions;
	size_t nsessions;
	unsigned long jobs, ok, nonzero, timeouts, lost, cancelled, errors;

	pthread_mutex_t out_lock; /* one result line at a time */
	int out_broken;
};

/* ---- input --------------------------------------------------------------- */

/* The next line, without its newline, into *line (malloc'ed).  Returns 1
 * with a line, 0 at the end, -1 on a read error.  A line longer than
 * BATCH_MAX_LINE is read to its end and returned empty with *too_long. */
static int read_line(struct batch *b, char **line, int *too_long)
{
	size_t len = 0, alloc = 0;
	char *buf = NULL, *nb;
	int c;

	*too_long = 0;
	for (;;) {
		c = getc_unlocked(b->in);
		if (c == EOF) {
			if (ferror(b->in)) {
				free(buf);
				return -1;
			}
			if (len == 0 && !*too_long) {
				free(buf);
				return 0;
			}
			break;
		}
		if (c == '\n')
			break;
		if (*too_long)
			continue;
		if (len + 1 >= BATCH_MAX_LINE) {
			*too_long = 1;
			len = 0;
			continue;
		}
		if (len + 2 > alloc) {
			alloc = alloc ? alloc * 2 : 256;
			nb = realloc(buf, alloc);
			if (!nb) {
				free(buf);
				return -1;
			}
			buf = nb;
		}
		buf[len++] = (char)c;
	}
	if (!buf)
		buf = calloc(1, 1);
	if (!buf)
		return -1;
	buf[len] = '\0';
	*line = buf;
	return 1;
}

/* The next non-blank line and its number, or 0 when there is none left
 * (end, read error, or the batch was interrupted). */
static int next_job(struct batch *b, char **line, unsigned long *lineno,
		    int *too_long)
{
	int r = 0;

	pthread_mutex_lock(&b->lock);
	while (!b->eof && !hutch_cancel_raised(b->cancel)) {
		r = read_line(b, line, too_long);
		if (r <= 0) {
			b->eof = 1;
			b->read_error = r < 0 ? errno ? errno : EIO : 0;
			r = 0;
			break;
		}
		b->lineno++;
		if (!*too_long && (*line)[strspn(*line, " \t\r")] == '\0') {
			free(*line);
			*line = NULL;
			r = 0;
			continue; /* blank lines are not jobs */
		}
		*lineno = b->lineno;
		b->jobs++;
		break;
	}
	pthread_mutex_unlock(&b->lock);
	return r;
}

/* ---- one job --------------------------------------------------------------- */

struct job {
	unsigned long line;
	json_object *doc; /* the parsed line */
	json_object *id;  /* borrowed from doc, or NULL */
	const char *session;
	const char **argv;
	size_t argc;
	const char *sh_argv[3];
	const char **env;
	size_t env_count;
	const char *workdir; /* borrowed from doc */
	const char *input;   /* "stdin", borrowed from doc; NULL: none */
	size_t input_len;
	const char *user; /* borrowed from doc */
	const char *seed;
	uint64_t timeout_ms;
	int background;	      /* start it as a background process */
	hutch_engine *engine; /* its session's (borrowed from the fleet) */
	char error[512];      /* why the line cannot run */
};

static void job_free(struct job *j)
{
	json_object_put(j->doc);
	if (j->argv != j->sh_argv)
		free(j->argv);
	free(j->env);
}

static int job_fail(struct job *j, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static int job_fail(struct job *j, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(j->error, sizeof(j->error), fmt, ap);
	va_end(ap);
	return -1;
}

/* An array of strings into a NULL-free vector of borrowed pointers. */
static int string_array(struct job *j, json_object *arr, const char *key,
			const char ***out, size_t *count)
{
	size_t n;

	if (!json_object_is_type(arr, json_type_array))
		return job_fail(j, "\"%s\" must be an array of strings", key);
	n = json_object_array_length(arr);
	if (n > BATCH_MAX_ARGS)
		return job_fail(j, "\"%s\" has %zu entries, more than %d", key,
				n, BATCH_MAX_ARGS);
	*out = calloc(n ? n : 1, sizeof(char *));
	if (!*out)
		return job_fail(j, "out of memory");
	for (size_t i = 0; i < n; i++) {
		json_object *v = json_object_array_get_idx(arr, i);

		if (!json_object_is_type(v, json_type_string))
			return job_fail(j, "\"%s\"[%zu] is not a string", key,
					i);
		(*out)[i] = json_object_get_string(v);
		if (strlen((*out)[i]) != (size_t)json_object_get_string_len(v))
			return job_fail(j, "\"%s\"[%zu] holds a NUL byte", key,
					i);
	}
	*count = n;
	return 0;
}

/* The line as one JSON object with known keys only, into j->doc. */
static int parse_doc(struct job *j, const char *line)
{
	struct json_tokener *tok;
	json_object *v;
	enum json_tokener_error jerr;
	size_t len = strlen(line);

	tok = json_tokener_new();
	if (!tok)
		return job_fail(j, "out of memory");
	j->doc = json_tokener_parse_ex(tok, line, (int)len);
	jerr = json_tokener_get_error(tok);
	if (j->doc && jerr == json_tokener_success &&
	    line[json_tokener_get_parse_end(tok) +
		 strspn(line + json_tokener_get_parse_end(tok), " \t\r")] !=
		    '\0')
		jerr = json_tokener_error_parse_unexpected;
	json_tokener_free(tok);
	if (!j->doc || jerr != json_tokener_success)
		return job_fail(j, "not a JSON object: %s",
				jerr == json_tokener_continue ?
					"unexpected end of line" :
					json_tokener_error_desc(jerr));
	if (!json_object_is_type(j->doc, json_type_object))
		return job_fail(j, "not a JSON object");
	if (json_object_object_get_ex(j->doc, "id", &v))
		j->id = v;
	/* Unknown keys are refused: a misspelt "timeout" silently ignored
	 * would let a job run for two minutes instead of five seconds. */
	json_object_object_foreach(j->doc, key, val)
	{
		(void)val;
		if (strcmp(key, "session") && strcmp(key, "command") &&
		    strcmp(key, "timeout") && strcmp(key, "seed") &&
		    strcmp(key, "id") && strcmp(key, "env") &&
		    strcmp(key, "workdir") && strcmp(key, "stdin") &&
		    strcmp(key, "user") && strcmp(key, "background"))
			return job_fail(
				j,
				"unknown key \"%.64s\" (known: session, command, "
				"timeout, seed, env, workdir, stdin, user, "
				"background, id)",
				key);
	}
	return 0;
}

/* "session" and "command". */
static int parse_command(struct job *j)
{
	json_object *v;

	if (!json_object_object_get_ex(j->doc, "session", &v) ||
	    !json_object_is_type(v, json_type_string))
		return job_fail(j, "\"session\" (a string) is missing");
	j->session = json_object_get_string(v);
	if (!hutch_session_name_valid(j->session))
		return job_fail(
			j,
			"invalid session name '%.64s': 1 to 63 of [A-Za-z0-9_.-], "
			"starting with a letter or digit",
			j->session);
	if (!json_object_object_get_ex(j->doc, "command", &v))
		return job_fail(
			j,
			"\"command\" is missing (an array of strings, or a string "
			"for sh -c)");
	if (json_object_is_type(v, json_type_string)) {
		j->sh_argv[0] = "sh";
		j->sh_argv[1] = "-c";
		j->sh_argv[2] = json_object_get_string(v);
		j->argv = j->sh_argv;
		j->argc = 3;
		if (!*j->sh_argv[2])
			return job_fail(j, "\"command\" is empty");
	} else {
		if (string_array(j, v, "command", &j->argv, &j->argc) < 0)
			return -1;
		if (j->argc == 0)
			return job_fail(j, "\"command\" is empty");
	}
	return 0;
}

/* "timeout", "env", "workdir", "stdin" and "user". */
static int parse_settings(struct job *j)
{
	json_object *v;

	if (json_object_object_get_ex(j->doc, "timeout", &v)) {
		double d;

		if (!json_object_is_type(v, json_type_int) &&
		    !json_object_is_type(v, json_type_double))
			return job_fail(
				j,
				"\"timeout\" must be a number of seconds (0: none)");
		d = json_object_get_double(v);
		if (cli_seconds_to_ms(d, &j->timeout_ms) < 0)
			return job_fail(j, "\"timeout\" %g is out of range", d);
	}
	if (json_object_object_get_ex(j->doc, "env", &v)) {
		if (string_array(j, v, "env", &j->env, &j->env_count) < 0)
			return -1;
		for (size_t i = 0; i < j->env_count; i++)
			if (j->env[i][0] == '=' || !strchr(j->env[i], '='))
				return job_fail(
					j, "\"env\"[%zu] '%.64s' is not K=V", i,
					j->env[i]);
	}
	if (json_object_object_get_ex(j->doc, "workdir", &v)) {
		if (!json_object_is_type(v, json_type_string) ||
		    !*json_object_get_string(v))
			return job_fail(
				j, "\"workdir\" must be a non-empty string");
		/* Relative is under /workspace: the library resolves it. */
		j->workdir = json_object_get_string(v);
	}
	if (json_object_object_get_ex(j->doc, "background", &v)) {
		if (!json_object_is_type(v, json_type_boolean))
			return job_fail(j, "\"background\" must be true or "
					   "false");
		j->background = json_object_get_boolean(v);
		/* A background process runs until it ends or is killed. */
		if (j->background &&
		    json_object_object_get_ex(j->doc, "timeout", NULL))
			return job_fail(j, "\"timeout\" does not apply to a "
					   "background job");
	}
	if (json_object_object_get_ex(j->doc, "stdin", &v)) {
		if (!json_object_is_type(v, json_type_string))
			return job_fail(j, "\"stdin\" must be a string");
		/* By length: "\u0000" makes a NUL byte, given as it is. */
		j->input = json_object_get_string(v);
		j->input_len = (size_t)json_object_get_string_len(v);
	}
	if (json_object_object_get_ex(j->doc, "user", &v)) {
		/* A NUL would cut the name short: "root\u0000x" is not
		 * "root". */
		if (!json_object_is_type(v, json_type_string) ||
		    !*json_object_get_string(v) ||
		    strlen(json_object_get_string(v)) !=
			    (size_t)json_object_get_string_len(v))
			return job_fail(j,
					"\"user\" must be a non-empty string "
					"(USER[:GROUP]) without NUL");
		/* Checked by the library against the session's accounts. */
		j->user = json_object_get_string(v);
	}
	return 0;
}

/* "seed": a host directory that exists. */
static int parse_seed(struct job *j)
{
	json_object *v;

	if (json_object_object_get_ex(j->doc, "seed", &v)) {
		struct stat st;

		if (!json_object_is_type(v, json_type_string) ||
		    !*json_object_get_string(v))
			return job_fail(j, "\"seed\" must be a host directory");
		j->seed = json_object_get_string(v);
		if (stat(j->seed, &st) < 0)
			return job_fail(j, "seed directory '%.200s': %s",
					j->seed, strerror(errno));
		if (!S_ISDIR(st.st_mode))
			return job_fail(
				j, "seed directory '%.200s': not a directory",
				j->seed);
	}
	return 0;
}

static int parse_job(struct job *j, const char *line, uint64_t default_timeout)
{
	j->timeout_ms = default_timeout;
	if (parse_doc(j, line) < 0 || parse_command(j) < 0 ||
	    parse_settings(j) < 0 || parse_seed(j) < 0)
		return -1;
	return 0;
}

/* ---- sessions ------------------------------------------------------------ */

static struct sess *sess_find(struct batch *b, const char *name)
{
	struct sess *s;

	for (s = b->sessions; s; s = s->next)
		if (strcmp(s->name, name) == 0)
			return s;
	s = calloc(1, sizeof(*s));
	if (!s || !(s->name = strdup(name))) {
		free(s);
		return NULL;
	}
	s->next = b->sessions;
	b->sessions = s;
	b->nsessions++;
	return s;
}

/* Make the job's session exist (and seed it when this batch creates it),
 * once per session; jobs of a session being prepared wait for it. */
static int sess_prepare(struct batch *b, struct job *j)
{
	hutch_session_options so = HUTCH_SESSION_OPTIONS_INIT;
	hutch_sync_options syo = HUTCH_SYNC_OPTIONS_INIT;
	hutch_session *h = NULL;
	hutch_engine *engine = NULL;
	hutch_error *err = NULL;
	struct sess *s;
	int created = 0, rc = 0;
	char *why = NULL;

	pthread_mutex_lock(&b->lock);
	s = sess_find(b, j->session);
	while (s && s->state == SESS_PREPARING)
		pthread_cond_wait(&b->cond, &b->lock);
	if (!s) {
		pthread_mutex_unlock(&b->lock);
		return job_fail(j, "out of memory");
	}
	if (s->state == SESS_FAILED) {
		job_fail(j, "session '%s' could not be prepared: %s", s->name,
			 s->error);
		pthread_mutex_unlock(&b->lock);
		return -1;
	}
	if (s->state == SESS_READY) {
		j->engine = s->engine;
		/* A seed only fills a session the batch creates, once. */
		if (j->seed && s->seed && strcmp(s->seed, j->seed) != 0)
			rc = job_fail(
				j,
				"session '%s' was seeded from '%.200s' by an earlier "
				"job, not from '%.200s'",
				s->name, s->seed, j->seed);
		else if (j->seed && !s->seed)
			rc = job_fail(
				j,
				"session '%s' was %s without a seed: a seed only fills "
				"a new session (give it on every job of the session)",
				s->name,
				s->created ? "made by an earlier job" :
					     "there before");
		pthread_mutex_unlock(&b->lock);
		return rc;
	}
	s->state = SESS_PREPARING;
	pthread_mutex_unlock(&b->lock);

	so.image = b->image;
	rc = hutch_fleet_locate(b->fleet, j->session, HUTCH_FLEET_CREATE,
				&engine, NULL, &err);
	if (rc == 0)
		rc = hutch_session_open(&h, engine, j->session, &so, &err);
	if (rc == 0)
		rc = hutch_session_ensure(h, &created, &err);
	if (rc == 0 && j->seed && !created) {
		rc = HUTCH_ECONFLICT;
		if (asprintf(&why,
			     "it existed before this batch; a seed only fills a new "
			     "session") < 0)
			why = NULL;
	}
	if (rc == 0 && j->seed) {
		syo.cancel = b->cancel;
		rc = hutch_sync_in(NULL, h, j->seed, &syo, &err);
	}
	if (rc < 0 && !why &&
	    asprintf(&why, "%s", err ? hutch_error_message(err) : "failed") < 0)
		why = NULL;
	hutch_error_free(err);
	hutch_session_free(h);

	pthread_mutex_lock(&b->lock);
	s->created = created;
	s->engine = engine;
	j->engine = engine;
	if (rc == 0) {
		s->state = SESS_READY;
		if (j->seed && !(s->seed = strdup(j->seed)))
			rc = -1;
	} else {
		s->state = SESS_FAILED;
		s->error = why ? why : strdup("out of memory");
		why = NULL;
		job_fail(j, "session '%s': %s", s->name,
			 s->error ? s->error : "failed");
	}
	pthread_cond_broadcast(&b->cond);
	pthread_mutex_unlock(&b->lock);
	free(why);
	return rc < 0 ? -1 : 0;
}

/* ---- results -------------------------------------------------------------- */

static void emit(struct batch *b, const char *text, size_t len)
{
	pthread_mutex_lock(&b->out_lock);
	if (!b->out_broken && (cli_write_all(STDOUT_FILENO, text, len) < 0 ||
			       cli_write_all(STDOUT_FILENO, "\n", 1) < 0)) {
		/* Nobody reads the results any more: stop the batch. */
		b->out_broken = 1;
		hutch_cancel_raise(b->cancel);
	}
	pthread_mutex_unlock(&b->out_lock);
}

/* One result line; takes over `o`. */
static void emit_json(struct batch *b, json_object *o)
{
	const char *s = json_object_to_json_string_ext(
		o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);

	if (s)
		emit(b, s, strlen(s));
	json_object_put(o);
}

static void count(struct batch *b, unsigned long *which)
{
	pthread_mutex_lock(&b->lock);
	(*which)++;
	pthread_mutex_unlock(&b->lock);
}

/* The result of a job that could not run: the result's shape, with
 * status "error" and the message. */
static void emit_error(struct batch *b, struct job *j, uint64_t ms)
{
	json_object *o = json_object_new_object();

	count(b, &b->errors);
	if (!o)
		return;
	json_object_object_add(o, "line",
			       json_object_new_int64((int64_t)j->line));
	json_object_object_add(o, "id", j->id ? json_object_get(j->id) : NULL);
	json_object_object_add(o, "session",
			       j->session ? json_object_new_string(j->session) :
					    NULL);
	json_object_object_add(o, "status", json_object_new_string("error"));
	json_object_object_add(o, "exit_code", NULL);
	json_object_object_add(o, "error", json_object_new_string(j->error));
	json_object_object_add(o, "duration_ms",
			       json_object_new_int64((int64_t)ms));
	emit_json(b, o);
}

/* The exec result as `hutch exec --json` prints it, with "line" and "id"
 * in front; NULL when it cannot be made (j->error says why). */
static json_object *result_json(struct job *j, const hutch_exec_result *res)
{
	hutch_error *err = NULL;
	json_object *r, *o;
	char *json = NULL;

	if (hutch_exec_result_to_json(&json, res, j->session, j->argv, j->argc,
				      &err) < 0) {
		job_fail(j, "%s", hutch_error_message(err));
		hutch_error_free(err);
		return NULL;
	}
	r = json_tokener_parse(json);
	free(json);
	o = json_object_new_object();
	if (!r || !o || !json_object_is_type(r, json_type_object)) {
		job_fail(j, "cannot render the result");
		json_object_put(r);
		json_object_put(o);
		return NULL;
	}
	json_object_object_add(o, "line",
			       json_object_new_int64((int64_t)j->line));
	json_object_object_add(o, "id", j->id ? json_object_get(j->id) : NULL);
	json_object_object_foreach(r, key, val)
		json_object_object_add(o, key, json_object_get(val));
	json_object_put(r);
	return o;
}

static void emit_result(struct batch *b, struct job *j,
			const hutch_exec_result *res)
{
	json_object *o = result_json(j, res);

	if (!o) {
		emit_error(b, j, hutch_exec_result_duration_ms(res));
		return;
	}
	emit_json(b, o);
	switch (hutch_exec_result_status(res)) {
	case HUTCH_EXEC_OK:
		count(b, hutch_exec_result_exit_code(res) == 0 ? &b->ok :
								 &b->nonzero);
		break;
	case HUTCH_EXEC_TIMEOUT:
		count(b, &b->timeouts);
		break;
	case HUTCH_EXEC_SANDBOX_LOST:
		count(b, &b->lost);
		break;
	case HUTCH_EXEC_CANCELLED:
		count(b, &b->cancelled);
		break;
	}
}

static unsigned long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000ULL +
	       (unsigned long long)ts.tv_nsec / 1000000ULL;
}

/* A background job's result: started, with the process's id. */
static void emit_started(struct batch *b, struct job *j, const char *pid,
			 uint64_t ms)
{
	json_object *o = json_object_new_object(),
		    *av = json_object_new_array();

	count(b, &b->ok);
	if (!o || !av) {
		json_object_put(o);
		json_object_put(av);
		return;
	}
	for (size_t i = 0; i < j->argc; i++)
		json_object_array_add(av, json_object_new_string(j->argv[i]));
	json_object_object_add(o, "line",
			       json_object_new_int64((int64_t)j->line));
	json_object_object_add(o, "id", j->id ? json_object_get(j->id) : NULL);
	json_object_object_add(o, "session",
			       json_object_new_string(j->session));
	json_object_object_add(o, "argv", av);
	json_object_object_add(o, "status", json_object_new_string("started"));
	json_object_object_add(o, "process", json_object_new_string(pid));
	json_object_object_add(o, "exit_code", NULL);
	json_object_object_add(o, "duration_ms",
			       json_object_new_int64((int64_t)ms));
	emit_json(b, o);
}

/* Start a background job; 0, or -1 with j->error set. */
static int start_job(struct batch *b, struct job *j,
		     const hutch_exec_options *o, unsigned long long t0)
{
	char pid[HUTCH_PROCESS_ID_SIZE];
	hutch_session *h = NULL;
	hutch_error *err = NULL;

	if (hutch_session_open(&h, j->engine, j->session, NULL, &err) < 0 ||
	    hutch_process_start(pid, sizeof(pid), h, o, &err) < 0) {
		job_fail(j, "%s", hutch_error_message(err));
		hutch_error_free(err);
		hutch_session_free(h);
		return -1;
	}
	hutch_session_free(h);
	emit_started(b, j, pid, now_ms() - t0);
	return 0;
}

static void run_job(struct batch *b, struct job *j, const char *text,
		    int too_long)
{
	hutch_exec_options o = HUTCH_EXEC_OPTIONS_INIT;
	hutch_session *h = NULL;
	hutch_exec_result *res = NULL;
	hutch_error *err = NULL;
	unsigned long long t0 = now_ms();

	if (too_long) {
		job_fail(j, "line longer than %d bytes", BATCH_MAX_LINE);
		goto fail;
	}
	if (parse_job(j, text, b->timeout_ms) < 0 || sess_prepare(b, j) < 0)
		goto fail;
	o.argv = j->argv;
	o.argc = j->argc;
	o.env = j->env;
	o.env_count = j->env_count;
	o.workdir = j->workdir;
	o.input = j->input;
	o.input_len = j->input_len;
	o.user = j->user;
	o.timeout_ms = j->timeout_ms;
	o.capture = 1;
	o.max_output = b->max_output;
	o.cancel = b->cancel;
	if (j->background) {
		if (start_job(b, j, &o, t0) < 0)
			goto fail;
		return;
	}
	if (hutch_session_open(&h, j->engine, j->session, NULL, &err) < 0 ||
	    hutch_exec_run(&res, h, &o, &err) < 0) {
		job_fail(j, "%s", hutch_error_message(err));
		hutch_error_free(err);
		hutch_session_free(h);
		goto fail;
	}
	hutch_session_free(h);
	emit_result(b, j, res);
	hutch_exec_result_free(res);
	return;
fail:
	emit_error(b, j, now_ms() - t0);
}

static void *worker(void *p)
{
	struct batch *b = p;
	struct job j;
	char *line;
	int too_long;

	for (;;) {
		line = NULL;
		memset(&j, 0, sizeof(j));
		if (!next_job(b, &line, &j.line, &too_long))
			break;
		run_job(b, &j, line, too_long);
		job_free(&j);
		free(line);
	}
	return NULL;
}

/* ---- removing what the batch created ------------------------------------------ */

struct removal {
	struct batch *b;
	struct sess **list;
	size_t n, next, removed, failed;
};

static void *remover(void *p)
{
	struct removal *r = p;
	hutch_error *err = NULL;
	size_t i;

	for (;;) {
		pthread_mutex_lock(&r->b->lock);
		i = r->next++;
		pthread_mutex_unlock(&r->b->lock);
		if (i >= r->n)
			break;
		if (hutch_session_remove(r->list[i]->engine, r->list[i]->name,
					 &err) < 0 &&
		    hutch_error_code(err) != HUTCH_ENOTFOUND) {
			cli_error("batch: could not remove session '%s': %s",
				  r->list[i]->name, hutch_error_message(err));
			pthread_mutex_lock(&r->b->lock);
			r->failed++;
			pthread_mutex_unlock(&r->b->lock);
		} else {
			pthread_mutex_lock(&r->b->lock);
			r->removed++;
			pthread_mutex_unlock(&r->b->lock);
		}
		hutch_error_free(err);
		err = NULL;
	}
	return NULL;
}

/* Start up to `n` threads running fn(arg); returns how many started. */
static size_t start_threads(pthread_t *t, size_t n, void *(*fn)(void *),
			    void *arg)
{
	pthread_attr_t attr;
	size_t started = 0;

	pthread_attr_init(&attr);
	/* Workers run libcurl and json-c, nothing deep: 64 workers need not
	 * reserve 8 MiB of address space each. */
	pthread_attr_setstacksize(&attr, 1024 * 1024);
	for (; started < n; started++)
		if (pthread_create(&t[started], &attr, fn, arg) != 0)
			break;
	pthread_attr_destroy(&attr);
	return started;
}

static void remove_created(struct batch *b, size_t parallel, size_t *removed,
			   size_t *failed)
{
	struct removal r = { b, NULL, 0, 0, 0, 0 };
	pthread_t *t;
	size_t started, i = 0;

	r.list = calloc(b->nsessions ? b->nsessions : 1, sizeof(*r.list));
	if (!r.list) {
		cli_error("batch: out of memory: sessions it created are left");
		return;
	}
	for (struct sess *s = b->sessions; s; s = s->next)
		if (s->created)
			r.list[r.n++] = s;
	if (parallel > r.n)
		parallel = r.n;
	t = calloc(parallel ? parallel : 1, sizeof(*t));
	started = t ? start_threads(t, parallel, remover, &r) : 0;
	if (started == 0)
		remover(&r);
	for (i = 0; i < started; i++)
		pthread_join(t[i], NULL);
	*removed = r.removed;
	*failed = r.failed;
	free(t);
	free(r.list);
}

/* ---- the command ------------------------------------------------------------- */

static int cmd_batch(cli_globals *g, int argc, char **argv);

static const cli_option batch_options[] = {
	{ "parallel", "N", 'p', "run N jobs at once (default 8, at most 256)" },
	{ "keep", NULL, 'k', "keep the sessions the batch created" },
	{ "timeout", "SEC", 't',
	  "a job's timeout when its line gives none (default 120; 0: none)" },
	{ "max-output", "BYTES", 'm',
	  "keep at most BYTES of each stream of a job (default 64k)" },
	{ "image", "IMG", 'i', "the image of the sessions the batch creates" },
	{ NULL, NULL, 0, NULL },
};

const cli_command cli_cmd_batch = {
	.name = "batch",
	.fn = cmd_batch,
	.synopsis = "FILE.jsonl|- [options]",
	.about = "run the jobs of a JSON-lines file, N at a time",
	.shortopts = "hp:",
	.opts = { batch_options },
};

/* One option of batch: 0, 1 after --help, -1 with the error said. */
static int batch_option(struct batch *b, size_t *parallel, int c,
			const char *arg)
{
	int64_t v;
	char *end;

	switch (c) {
	case 'p':
		errno = 0;
		v = strtoll(arg, &end, 10);
		if (errno || *end || v < 1 || v > BATCH_MAX_PARALLEL) {
			cli_error("invalid --parallel '%s': 1 to %d", arg,
				  BATCH_MAX_PARALLEL);
			return -1;
		}
		*parallel = (size_t)v;
		return 0;
	case 'k':
		b->keep = 1;
		return 0;
	case 't':
		return cli_opt_timeout(arg, &b->timeout_ms);
	case 'm':
		return cli_opt_max_output(arg, &b->max_output);
	case 'i':
		b->image = arg;
		return 0;
	case 'h':
		cli_help(&cli_cmd_batch, stdout);
		return 1;
	default:
		cli_usage_error(&cli_cmd_batch);
		return -1;
	}
}

/* One look before starting: an unreachable engine is one error, not one
 * per line.  Of several engines, those that answer get the new sessions.
 * 0, or -1 with the error said. */
static int batch_engines_up(struct batch *b)
{
	hutch_error *err = NULL;
	size_t up = 0;

	for (size_t i = 0; i < hutch_fleet_size(b->fleet); i++) {
		hutch_engine *e = hutch_fleet_engine(b->fleet, i);

		if (hutch_engine_ping(e, &err) == 0) {
			up++;
		} else if (hutch_fleet_size(b->fleet) == 1) {
			cli_fail(err);
			return -1;
		} else {
			cli_error("batch: warning: %s: %s", hutch_engine_url(e),
				  hutch_error_message(err));
			hutch_error_free(err);
		}
		err = NULL;
	}
	if (up == 0) {
		cli_error("batch: none of the %zu engines answers",
			  hutch_fleet_size(b->fleet));
		return -1;
	}
	return 0;
}

/* Run the workers until the input ends; 0, or -1 (said) when none could
 * start. */
static int batch_run(struct batch *b, size_t parallel)
{
	pthread_t *threads = calloc(parallel, sizeof(*threads));
	size_t started = threads ? start_threads(threads, parallel, worker, b) :
				   0;

	if (started == 0) {
		cli_error("batch: cannot start worker threads: %s",
			  strerror(errno));
		free(threads);
		return -1;
	}
	for (size_t i = 0; i < started; i++)
		pthread_join(threads[i], NULL);
	free(threads);
	return 0;
}

/* After the jobs: remove what the batch made (unless --keep), say what
 * happened on stderr, and return hutch's exit status. */
static int batch_finish(struct batch *b, size_t parallel, const char *file,
			unsigned long long t0)
{
	size_t created = 0, removed = 0, rmfailed = 0;
	int sig = cli_cancel_signal();

	for (struct sess *s = b->sessions; s; s = s->next)
		created += (size_t)s->created;
	if (sig)
		cli_error("batch: interrupted: running commands were killed%s",
			  b->keep || !created ?
				  "" :
				  "; removing the sessions it created "
				  "(interrupt again to leave them)");
	if (!b->keep && created)
		remove_created(b, parallel, &removed, &rmfailed);
	if (b->read_error)
		cli_error("batch file '%s': %s", file, strerror(b->read_error));
	fprintf(stderr,
		"hutch: batch: %lu job%s in %.1f s: %lu ok, %lu non-zero exit, "
		"%lu timed out, %lu sandbox lost, %lu cancelled, %lu error%s; "
		"%zu session%s created, %zu removed%s\n",
		b->jobs, b->jobs == 1 ? "" : "s",
		(double)(now_ms() - t0) / 1000.0, b->ok, b->nonzero,
		b->timeouts, b->lost, b->cancelled, b->errors,
		b->errors == 1 ? "" : "s", created, created == 1 ? "" : "s",
		removed,
		b->keep	 ? " (--keep)" :
		rmfailed ? ", some could not be removed" :
			   "");
	if (sig)
		return 128 + sig;
	if (b->out_broken || b->read_error || rmfailed)
		return EXIT_HUTCH_FAILED;
	return b->ok == b->jobs ? 0 : 1;
}

static void batch_free(struct batch *b)
{
	if (b->in && b->in != stdin)
		fclose(b->in);
	while (b->sessions) {
		struct sess *s = b->sessions;

		b->sessions = s->next;
		free(s->name);
		free(s->seed);
		free(s->error);
		free(s);
	}
	hutch_fleet_free(b->fleet);
	cli_cancel_end();
	pthread_cond_destroy(&b->cond);
	pthread_mutex_destroy(&b->lock);
	pthread_mutex_destroy(&b->out_lock);
}

static int cmd_batch(cli_globals *g, int argc, char **argv)
{
	struct option lo[CLI_MAX_OPTIONS + 2];
	struct batch b;
	hutch_error *err = NULL;
	size_t parallel = BATCH_DEFAULT_PARALLEL;
	unsigned long long t0;
	const char *file;
	int c, r, rc = EXIT_HUTCH_FAILED;

	memset(&b, 0, sizeof(b));
	b.timeout_ms = HUTCH_EXEC_DEFAULT_TIMEOUT_MS;
	b.max_output = BATCH_DEFAULT_MAX_OUTPUT;
	pthread_mutex_init(&b.lock, NULL);
	pthread_mutex_init(&b.out_lock, NULL);
	pthread_cond_init(&b.cond, NULL);

	cli_long_options(&cli_cmd_batch, lo);
	while ((c = cli_next_option(&cli_cmd_batch, lo, argc, argv)) != -1) {
		if ((r = batch_option(&b, &parallel, c, optarg)) != 0) {
			rc = r > 0 ? 0 : EXIT_HUTCH_FAILED;
			goto out;
		}
	}
	if (argc - optind != 1) {
		cli_usage_error(&cli_cmd_batch);
		goto out;
	}
	file = argv[optind];
	/*
	 * By name, on purpose: the job file is the user's, read, never
	 * written.  Were it in a directory a sandbox can write, the sandbox
	 * could write its jobs outright; pointing it elsewhere by a symlink
	 * gives it less than that: each line that is not a job is an
	 * "error" result for the user, its content never echoed, and nothing
	 * of it reaches a session.
	 */
	b.in = strcmp(file, "-") == 0 ? stdin : fopen(file, "re");
	if (!b.in) {
		cli_error("batch file '%s': %s", file, strerror(errno));
		goto out;
	}
	/* The first signal kills the running commands and removes what the
	 * batch made; a second one (SA_RESETHAND) ends hutch at once. */
	if (cli_cancel_begin(&b.cancel, SA_RESETHAND | SA_RESTART, &err) < 0) {
		rc = cli_fail(err);
		goto out;
	}
	if ((rc = cli_fleet(g, &b.fleet)) != 0)
		goto out;
	rc = EXIT_HUTCH_FAILED;
	if (batch_engines_up(&b) < 0)
		goto out;
	t0 = now_ms();
	if (batch_run(&b, parallel) < 0)
		goto out;
	rc = batch_finish(&b, parallel, file, t0);
out:
	batch_free(&b);
	return rc;
}
