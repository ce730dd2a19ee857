/*
 * exec.c - running commands in a session
 *
 * A warm command costs three requests, the floor of the exec API: exec
 * create (by container name, so no lookup comes first), exec start (the
 * output stream), exec inspect (the exit code).  Everything else happens
 * only when something went wrong: the container is recreated when the
 * engine says it is gone, the process tree is killed when the timeout
 * passes, the container is inspected when the command died of a signal.
 *
 * When the session's agent serves its channel (agent_chan.c), a command
 * runs through it instead, with no engine request at all; the engine's
 * exec is the fallback of every call that cannot have the channel.
 *
 * How the engine spells those requests lives in engine_api_exec.c; this
 * file holds the policy around them (hutch__exec_run and the functions
 * it reads as: run_with_one_retry, after_timeout, after_cancel,
 * judge_ending, sandbox_lost).
 */
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>
#include <json-c/json.h>

#include <hutch/exec.h>

#include "account.h"
#include "agent_blob.h"
#include "agent_chan.h"
#include "agent_install.h"
#include "capture.h"
#include "common.h"
#include "demux.h"
#include "engine_api_exec.h"
#include "engine_internal.h"
#include "error.h"
#include "exec_internal.h"
#include "secrets.h"
#include "session_internal.h"
#include "utf8.h"
#include "workdir.h"

/* The agent's own deadline trails hutch's, so it only acts when the hutch
 * process that should have killed the command has vanished. */
#define AGENT_BACKSTOP_MS 2000
/* How long exec inspect may keep saying "running" after the stream ended. */
#define INSPECT_WAIT_MS 10000
/* Once the command was killed or had ended by itself, how long the stream
 * may take to end: Docker holds it up to 2 s after the exec's process
 * exited while a background process still has the command's output open. */
#define DRAIN_MS 5000
/* How long the engine may say an exec runs while no process of it can be
 * found: it starts the stream before the process, which can take a while
 * on a loaded machine. */
#define STOP_WAIT_MS 30000
/* How long an exec that neither runs nor has a pid (Podman's answer both
 * before its process starts and after it ended) must stay so before it is
 * taken as ended. */
#define UNSURE_MS 1000
#define MAX_ARGS 4096

struct hutch_exec_result {
	hutch_exec_status status;
	int exit_code;
	int oom; /* the agent reported an OOM kill */
	uint64_t duration_ms;
	int retried;
	int on_chan; /* the run took the agent's channel */
	/* The session's secrets when the command ran (a reference): what
	 * hutch_exec_result_to_json shows of the command line is redacted
	 * with them, as the output was. */
	hutch__secrets *secrets;
	struct {
		char *data;
		size_t len, head_len;
		uint64_t total, omitted;
	} out[2];
};

/* ---- results --------------------------------------------------------- */

const char *hutch_exec_status_name(hutch_exec_status status)
{
	switch (status) {
	case HUTCH_EXEC_OK:
		return "ok";
	case HUTCH_EXEC_TIMEOUT:
		return "timeout";
	case HUTCH_EXEC_SANDBOX_LOST:
		return "sandbox_lost";
	case HUTCH_EXEC_CANCELLED:
		return "cancelled";
	}
	return "error";
}

hutch_exec_status hutch_exec_result_status(const hutch_exec_result *r)
{
	return r->status;
}

int hutch_exec_result_exit_code(const hutch_exec_result *r)
{
	return r->exit_code;
}

uint64_t hutch_exec_result_duration_ms(const hutch_exec_result *r)
{
	return r->duration_ms;
}

int hutch_exec_result_retried(const hutch_exec_result *r)
{
	return r->retried;
}

int hutch_exec_result_oom(const hutch_exec_result *r)
{
	return r->oom;
}

const char *hutch_exec_result_path(const hutch_exec_result *r)
{
	return r->on_chan ? "agent" : "engine";
}

void hutch_exec_result_output(const hutch_exec_result *r, hutch_stream stream,
			      const char **data, size_t *len, uint64_t *total,
			      uint64_t *omitted)
{
	int i = stream == HUTCH_STREAM_STDERR ? 1 : 0;

	if (data)
		*data = r->out[i].data ? r->out[i].data : "";
	if (len)
		*len = r->out[i].len;
	if (total)
		*total = r->out[i].total;
	if (omitted)
		*omitted = r->out[i].omitted;
}

size_t hutch_exec_result_head_len(const hutch_exec_result *r,
				  hutch_stream stream)
{
	return r->out[stream == HUTCH_STREAM_STDERR ? 1 : 0].head_len;
}

void hutch_exec_result_free(hutch_exec_result *r)
{
	if (!r)
		return;
	free(r->out[0].data);
	free(r->out[1].data);
	hutch__secrets_free(r->secrets);
	free(r);
}

/* ---- one run --------------------------------------------------------- */

struct run;

/* Where one stream's redacted output goes. */
struct stream_sink {
	struct run *r;
	int i; /* 0 stdout, 1 stderr */
};

struct run {
	hutch_session *s;
	const hutch_exec_options *o;
	unsigned int flags; /* HUTCH__EXEC_* */
	hutch_demux demux;
	/* Secrets are masked before capture and callback see a byte, so
	 * neither the capture's cap nor a frame boundary can cut one. */
	hutch__redactor red[2];
	struct stream_sink sink[2];
	hutch_capture cap[2];
	uint64_t seen; /* payload bytes delivered so far */
	int malformed; /* the stream was not a framed stream */
	int stopped;   /* the caller's callback asked to stop */
	int streamed;  /* exec start answered 2xx: a stream began */
	int oom;
	/* After the timeout passed (on_deadline): */
	int stopping;	 /* the command is being stopped */
	int killed;	 /* its agent was found and killed, with its tree */
	int ended;	 /* times it was found to have ended by itself */
	int stop_failed; /* the kill could not run */
	hutch_error *stop_err;
	unsigned long long backstop; /* when the agent's own deadline acts */
	/* The end of stderr as the agent wrote it: where its out-of-memory
	 * line is looked for. */
	char errtail[320];
	size_t errtail_len;
	char tag[32];
	char exec_id[128];
	/* The command runs on the agent's channel (agent_chan.c), not as an
	 * engine exec: its state and exit status are asked there. */
	int on_chan;
	struct hutch__chan_call *chan;
	/* The command's own user as the engine gets it, numeric "UID:GID",
	 * or "" for the session's; the kill runs as it too. */
	char user[32];
	/* on_input: a thread of its own calls it and writes what it gives
	 * into a pipe, whose read end the transport reads as input_fd. */
	int in_pipe[2];
	pthread_t in_thread;
	int in_thread_started;
	hutch_cancel in_cancel;		/* on_input returned -1 */
	long in_bad;			/* on_input returned more than asked */
	unsigned long long input_taken; /* bytes of input consumed */
	/* What the run has come to so far: */
	unsigned long long t0;
	int rc;		   /* of creating the exec and reading its stream */
	hutch_error *lerr; /* its error */
	int cut_by_us;	   /* we stopped reading: the command had ended */
	/* The runtime did not find the agent (agent_install.c): its
	 * complaint, and whatever follows it, held back until we know
	 * whether the command runs again (then they are dropped). */
	int agent_gone;
	/* The first stderr frame is the agent's "cannot use working
	 * directory" line: held until the exit code says whose it is
	 * (judge_ending), so the error is one line. */
	int workdir_line;
	char held[2048];
	size_t held_len;
};

static int deliver(const char *data, size_t len, void *p)
{
	struct stream_sink *sink = p;
	struct run *r = sink->r;
	int i = sink->i;

	if (r->o->capture && hutch__capture_add(&r->cap[i], data, len) < 0) {
		r->oom = 1;
		return 1;
	}
	if (r->o->on_output &&
	    r->o->on_output(i ? HUTCH_STREAM_STDERR : HUTCH_STREAM_STDOUT, data,
			    len, r->o->payload)) {
		r->stopped = 1;
		return 1;
	}
	return 0;
}

static void keep_tail(struct run *r, const char *data, size_t len)
{
	size_t cap = sizeof(r->errtail);

	if (len >= cap) {
		memcpy(r->errtail, data + len - cap, cap);
		r->errtail_len = cap;
		return;
	}
	if (r->errtail_len + len > cap) {
		size_t drop = r->errtail_len + len - cap;

		memmove(r->errtail, r->errtail + drop, r->errtail_len - drop);
		r->errtail_len -= drop;
	}
	memcpy(r->errtail + r->errtail_len, data, len);
	r->errtail_len += len;
}

/* The agent's line when the OOM killer acted while the command ran
 * (HUTCH_AGENT_OOM_LINE in agent_protocol.h), at the start of a line in the
 * end of stderr.  The command could print it too; it would only mislabel
 * its own result. */
#define OOM_LINE HUTCH_AGENT_OOM_START

static int saw_oom(const struct run *r)
{
	const char *p = r->errtail, *end = r->errtail + r->errtail_len;

	while ((p = memmem(p, (size_t)(end - p), OOM_LINE,
			   sizeof(OOM_LINE) - 1))) {
		if (p == r->errtail || p[-1] == '\n')
			return 1;
		p++;
	}
	return 0;
}

/* The kernel's limit on one argument or environment string, with its NUL
 * (MAX_ARG_STRLEN, 32 pages): past it execve fails with E2BIG whatever the
 * stack limit.  The total limit depends on the container's stack limit
 * (a quarter of it), so only the engine can tell; see exec_too_long(). */
#define KERNEL_MAX_ARG_STRLEN (32u * 4096u)

/*
 * The command line never reached a process: the runtime's execve of the
 * agent (runc and crun report "exec PATH: argument list too long" on the
 * exec's error stream and exit 1), or the agent's own execve of the
 * command (it reports "cannot run": 126).  Both are hutch's failure to
 * start the command, not the command's status.  A command printing the
 * same words as its last stderr line and exiting the same way only makes
 * its own result an error.
 */
static int exec_too_long(const struct run *r, int code)
{
	static const char runtime[] = "exec " HUTCH_AGENT_RUN_PATH
				      ": argument list too long\n";
	static const char agent[] = "': Argument list too long\n";
	size_t n = r->errtail_len;

	if (code == 1 && n >= sizeof(runtime) - 1 &&
	    memcmp(r->errtail + n - (sizeof(runtime) - 1), runtime,
		   sizeof(runtime) - 1) == 0)
		return 1;
	return code == HUTCH_AGENT_EXIT_NOEXEC && n >= sizeof(agent) - 1 &&
	       memcmp(r->errtail + n - (sizeof(agent) - 1), agent,
		      sizeof(agent) - 1) == 0 &&
	       memmem(r->errtail, n, HUTCH_AGENT_CANNOT_RUN,
		      sizeof(HUTCH_AGENT_CANNOT_RUN) - 1) != NULL;
}

/* Bytes execve copies for the command: its strings with their NULs. */
static size_t exec_bytes(const hutch_exec_options *o)
{
	size_t total = 0;

	for (size_t i = 0; i < o->argc; i++)
		total += strlen(o->argv[i]) + 1;
	for (size_t i = 0; i < o->env_count; i++)
		total += strlen(o->env[i]) + 1;
	return total;
}

/* Hold a frame back while the agent may be missing: frames are kept as
 * [stream byte][4-byte length][data].  0 held, -1 no room. */
static int hold_frame(struct run *r, int i, const char *data, size_t len)
{
	uint32_t n = (uint32_t)len;

	if (len > sizeof(r->held) - r->held_len - 5)
		return -1;
	r->held[r->held_len] = (char)i;
	memcpy(r->held + r->held_len + 1, &n, 4);
	memcpy(r->held + r->held_len + 5, data, len);
	r->held_len += 5 + len;
	return 0;
}

static int pass_frame(struct run *r, int i, const char *data, size_t len)
{
	r->seen += len;
	if (i)
		keep_tail(r, data, len);
	return hutch__redact_feed(&r->red[i], data, len, deliver, &r->sink[i]);
}

/* The command is not run again: what was held goes on, in order. */
static int release_held(struct run *r)
{
	size_t off = 0;
	uint32_t n;
	int rc = 0;

	r->agent_gone = 0;
	r->workdir_line = 0;
	while (off < r->held_len && rc == 0) {
		memcpy(&n, r->held + off + 1, 4);
		rc = pass_frame(r, r->held[off], r->held + off + 5, n);
		off += 5 + n;
	}
	r->held_len = 0;
	return rc;
}

static int on_frame(int stream, const char *data, size_t len, void *p)
{
	struct run *r = p;
	int i;

	/* Docker's "system error" stream carries the engine's own complaint
	 * (for instance a failed exec); it is shown where errors go. */
	i = stream == HUTCH_DEMUX_STDOUT ? 0 : 1;
	/* The runtime's refusal names the agent's path, as the first and
	 * only output of a short stream: held back (agent_install.c).  More
	 * than that is a command's output: it goes on as it came. */
	if (r->seen == 0 && !r->agent_gone &&
	    hutch__agent_missing_text(data, len))
		r->agent_gone = 1;
	if (r->seen == 0 && !r->agent_gone && !r->workdir_line && i == 1 &&
	    len >= sizeof(HUTCH_AGENT_NO_WORKDIR) - 1 &&
	    memcmp(data, HUTCH_AGENT_NO_WORKDIR,
		   sizeof(HUTCH_AGENT_NO_WORKDIR) - 1) == 0)
		r->workdir_line = 1;
	if (r->agent_gone || r->workdir_line) {
		if (hold_frame(r, i, data, len) == 0)
			return 0;
		if (release_held(r))
			return 1;
	}
	return pass_frame(r, i, data, len);
}

/* The stream ended: what the redactors held back goes on.  `cut`: it
 * ended early (timeout, cancel, lost container), so a secret's beginning
 * at its very end is masked too. */
static void flush_redaction(struct run *r, int cut)
{
	for (int i = 0; i < 2; i++)
		if (hutch__redact_flush(&r->red[i], cut, deliver, &r->sink[i]))
			break;
}

static int on_stream(const char *data, size_t len, void *p)
{
	struct run *r = p;
	int rc;

	/* A terminal's output is one raw stream, no frames: it all goes
	 * where stdout goes, redacted as stdout is.  Its tail is kept too:
	 * the agent's out-of-memory line comes this way. */
	if (r->o->tty) {
		r->seen += len;
		keep_tail(r, data, len);
		return hutch__redact_feed(&r->red[0], data, len, deliver,
					  &r->sink[0]) != 0;
	}
	rc = hutch__demux_feed(&r->demux, data, len, on_frame, r);

	if (rc < 0)
		r->malformed = 1;
	return rc != 0;
}

/* Refuse what the engine would change (see hutch__error_if_not_utf8); the
 * message quotes the text with the session's secrets masked. */
static int check_utf8(const hutch__secrets *set, const char *what,
		      const char *s, hutch_error **err)
{
	size_t len = strlen(s), n;
	char *clean;
	int rc;

	if (hutch__utf8_valid_len(s, len) == len)
		return 0;
	clean = hutch__redact_buffer(set, s, len, 0, &n);
	if (!clean)
		return hutch__error_oom(err);
	rc = hutch__error_if_not_utf8(err, what, clean, n);
	explicit_bzero(clean, n);
	free(clean);
	return rc;
}

/* The version-2 fields: at most one input, a usable fd, a user of the
 * right shape (it is looked up later, in the container). */
static int validate_v2(const hutch_exec_options *o, hutch_error **err)
{
	int sources =
		(o->input != NULL) + (o->input_fd >= 0) + (o->on_input != NULL);

	if (sources > 1)
		return hutch__error_set(
			err, HUTCH_EINVALID,
			"more than one standard input given (input, input_fd, "
			"on_input): at most one");
	if (!o->input && o->input_len)
		return hutch__error_set(err, HUTCH_EINVALID,
					"input_len is %zu but input is NULL",
					o->input_len);
	if (o->input_fd < -1)
		return hutch__error_set(err, HUTCH_EINVALID,
					"input_fd %d: -1 or a descriptor",
					o->input_fd);
	if (o->input_fd >= 0 && fcntl(o->input_fd, F_GETFD) < 0)
		return hutch__error_set(
			err, HUTCH_EINVALID,
			"input_fd %d is not an open file descriptor: %s",
			o->input_fd, strerror(errno));
	if (o->input_fd >= 0 &&
	    (fcntl(o->input_fd, F_GETFL) & O_ACCMODE) == O_WRONLY)
		return hutch__error_set(err, HUTCH_EINVALID,
					"input_fd %d is not open for reading",
					o->input_fd);
	if (o->user && !hutch__user_spec_valid(o->user))
		return hutch__error_set(
			err, HUTCH_EINVALID,
			"invalid user '%.80s': expected USER or USER:GROUP, names "
			"or numbers",
			o->user);
	return 0;
}

static int validate(const hutch_exec_options *o, const hutch__secrets *set,
		    hutch_error **err)
{
	int rc;

	if ((rc = validate_v2(o, err)) < 0)
		return rc;
	if (!o->argv || o->argc == 0 || !o->argv[0] || !o->argv[0][0])
		return hutch__error_set(err, HUTCH_EINVALID,
					"no command given");
	if (o->argc > MAX_ARGS)
		return hutch__error_set(err, HUTCH_EINVALID,
					"too many arguments (%zu, at most %d)",
					o->argc, MAX_ARGS);
	for (size_t i = 0; i < o->argc; i++) {
		char what[40];

		if (!o->argv[i])
			return hutch__error_set(err, HUTCH_EINVALID,
						"argument %zu is NULL", i);
		snprintf(what, sizeof(what), i ? "argument %zu" : "the command",
			 i);
		/* Checked here, before the engine: its runtime's failure looks
		 * like the command's own exit 1 (see exec_too_long()). */
		if (strlen(o->argv[i]) >= KERNEL_MAX_ARG_STRLEN)
			return hutch__error_set(
				err, HUTCH_ETOOBIG,
				"%s is %zu bytes, over the kernel's limit of %u "
				"for one argument; pass large data in a file",
				what, strlen(o->argv[i]),
				KERNEL_MAX_ARG_STRLEN - 1);
		if ((rc = check_utf8(set, what, o->argv[i], err)) < 0)
			return rc;
	}
	if (o->workdir &&
	    check_utf8(set, "working directory", o->workdir, err) < 0)
		return HUTCH_EINVALID;
	for (size_t i = 0; i < o->env_count; i++) {
		if (!o->env[i] || !strchr(o->env[i], '=') ||
		    o->env[i][0] == '=')
			return hutch__error_set(
				err, HUTCH_EINVALID,
				"invalid environment entry '%.80s': expected K=V",
				o->env[i] ? o->env[i] : "");
		if (check_utf8(set, "environment entry", o->env[i], err) < 0)
			return HUTCH_EINVALID;
		if (strlen(o->env[i]) >= KERNEL_MAX_ARG_STRLEN) {
			/* Named, not quoted: the value may be long. */
			size_t name =
				(size_t)(strchr(o->env[i], '=') - o->env[i]);

			return hutch__error_set(
				err, HUTCH_ETOOBIG,
				"environment entry %.*s is %zu bytes, over the "
				"kernel's limit of %u for one string",
				name > 64 ? 64 : (int)name, o->env[i],
				strlen(o->env[i]), KERNEL_MAX_ARG_STRLEN - 1);
		}
	}
	return 0;
}

/* ---- what the engine is asked to run --------------------------------- */

/* The agent's command line for one run, and the exec's environment. */
struct agent_command {
	const char **argv;
	size_t argc;
	const char **env;
	size_t env_count;
	char deadline[32];
	char *workdir;
	char tty_size[16];
};

static void agent_command_free(struct agent_command *c)
{
	free(c->argv);
	free(c->env);
	free(c->workdir);
}

/* hutch-agent run --tag TAG --deadline-ms MS [--kill-leftovers] [--tty]
 * --workdir DIR -- ARGV, with the session's secrets and the command's own
 * environment.  The agent enters DIR itself, so that a missing one is its
 * clean error (exit HUTCH_AGENT_EXIT_NOWORKDIR, see judge_ending) rather
 * than the runtime's.  -1 when out of memory. */
static int agent_command(struct agent_command *c, const struct run *r)
{
	const hutch_exec_options *o = r->o;
	const struct hutch__session_secrets *sec =
		r->flags & HUTCH__EXEC_RAW ? NULL : r->s->secrets;
	size_t nsec = sec ? sec->count : 0;

	memset(c, 0, sizeof(*c));
	c->argv = calloc(o->argc + 14, sizeof(*c->argv));
	c->env = calloc(nsec + o->env_count + 1, sizeof(*c->env));
	c->workdir = hutch__workdir_resolve(o->workdir);
	if (!c->argv || !c->env || !c->workdir) {
		agent_command_free(c);
		return -1;
	}
	snprintf(c->deadline, sizeof(c->deadline), "%llu",
		 o->timeout_ms ?
			 (unsigned long long)o->timeout_ms + AGENT_BACKSTOP_MS :
			 0ULL);
	c->argv[c->argc++] = HUTCH_AGENT_RUN_PATH;
	c->argv[c->argc++] = HUTCH_AGENT_CMD_RUN;
	c->argv[c->argc++] = HUTCH_AGENT_OPT_TAG;
	c->argv[c->argc++] = r->tag;
	c->argv[c->argc++] = HUTCH_AGENT_OPT_DEADLINE;
	c->argv[c->argc++] = c->deadline;
	/* A command given secrets leaves nothing running behind it: its
	 * leftovers would keep the values in their environment (README). */
	if (nsec)
		c->argv[c->argc++] = HUTCH_AGENT_OPT_KILL_LEFTOVERS;
	c->argv[c->argc++] = HUTCH_AGENT_OPT_WORKDIR;
	c->argv[c->argc++] = c->workdir;
	/* The exec's terminal becomes the command's controlling terminal,
	 * its process group the foreground one (job control, ^C). */
	if (o->tty) {
		unsigned short rows = 0, cols = 0;

		/* Its size now (24x80 when unknown, as the transport's first
		 * resize), set by the agent before the command starts: the
		 * engine's resize may come after the command first asks. */
		if (!o->tty_size || o->tty_size(&rows, &cols, o->tty_payload) ||
		    !rows || !cols) {
			rows = 24;
			cols = 80;
		}
		snprintf(c->tty_size, sizeof(c->tty_size), "%ux%u",
			 (unsigned)rows, (unsigned)cols);
		c->argv[c->argc++] = HUTCH_AGENT_OPT_TTY;
		c->argv[c->argc++] = HUTCH_AGENT_OPT_TTY_SIZE;
		c->argv[c->argc++] = c->tty_size;
	}
	c->argv[c->argc++] = "--";
	for (size_t i = 0; i < o->argc; i++)
		c->argv[c->argc++] = o->argv[i];
	/* Secrets go to this exec alone, never to the container's
	 * configuration; the command's own --env comes after, so it wins. */
	for (size_t i = 0; i < nsec; i++)
		c->env[c->env_count++] = sec->env[i];
	for (size_t i = 0; i < o->env_count; i++)
		c->env[c->env_count++] = o->env[i];
	return 0;
}

static int exec_create(struct run *r, const struct hutch__exec_spec *spec,
		       char *id, size_t idsz, const char *what,
		       hutch_error **err)
{
	return hutch__api_exec_create(hutch_session_engine(r->s),
				      hutch__session_container(r->s), spec, id,
				      idsz, what, err);
}

/* Start exec `id` and read its stream to its end (or the deadline).  With
 * a sink the output goes to it (the command's run); without, it is
 * collected under the usual cap and dropped (the kill's). */
static int exec_start(struct run *r, const char *id, hutch__sink_fn sink,
		      unsigned long long deadline,
		      hutch__deadline_fn on_deadline,
		      const hutch_cancel *cancel, int *streamed,
		      const char *what, hutch_error **err)
{
	struct hutch__exec_stream stream = {
		.sink = sink,
		.payload = r,
		.deadline_ms = deadline,
		.on_deadline = on_deadline,
		.cancel = cancel,
		.input_fd = -1,
	};

	return hutch__api_exec_start(hutch_session_engine(r->s), id, &stream,
				     streamed, what, err);
}

static unsigned long long on_deadline(void *p);

/* The command's own stream: its output, input and terminal. */
static struct hutch__exec_stream command_stream(struct run *r,
						unsigned long long deadline,
						unsigned long long *taken)
{
	const hutch_exec_options *o = r->o;

	return (struct hutch__exec_stream){
		.sink = on_stream,
		.payload = r,
		.deadline_ms = deadline,
		.on_deadline = on_deadline,
		.cancel = o->cancel,
		.cancel2 = o->on_input ? &r->in_cancel : NULL,
		.input = o->input,
		.input_len = o->input_len,
		.input_fd = o->on_input ? r->in_pipe[0] : o->input_fd,
		.tty = o->tty,
		.tty_size = o->tty_size,
		.tty_payload = o->tty_payload,
		.input_taken = taken,
	};
}

/* The command's own start: exec_start with its input and terminal. */
static int exec_start_command(struct run *r, unsigned long long deadline,
			      hutch_error **err)
{
	unsigned long long taken = 0;
	struct hutch__exec_stream stream = command_stream(r, deadline, &taken);
	int rc = hutch__api_exec_start(hutch_session_engine(r->s), r->exec_id,
				       &stream, &r->streamed, "start exec",
				       err);

	r->input_taken += taken;
	return rc;
}

/* The command on the agent's channel, which reads no input before the
 * agent said the command started: HUTCH__CHAN_UNAVAILABLE (nothing was
 * sent that could run it, no input taken) when it cannot go there. */
static int chan_start_command(struct run *r,
			      const struct hutch__exec_spec *spec,
			      unsigned long long deadline, hutch_error **err)
{
	unsigned long long taken = 0;
	struct hutch__exec_stream stream = command_stream(r, deadline, &taken);
	int rc = hutch__chan_exec(r->s, spec, &stream, &r->chan, &r->streamed,
				  "run on the agent's channel", err);

	r->input_taken += taken;
	return rc;
}

int hutch__exec_wait_exit(hutch_engine *e, const char *id,
			  const hutch_cancel *cancel, int *code,
			  const char *what, hutch_error **err)
{
	unsigned long long until = hutch__now_ms() + INSPECT_WAIT_MS;
	unsigned int pause = 1;
	struct hutch__exec_info info;
	int rc;

	for (;;) {
		rc = hutch__api_exec_inspect(e, id, &info, what, err);
		if (rc < 0)
			return rc;
		if (!info.running) {
			if (!info.has_exit_code)
				return 0;
			*code = info.exit_code;
			return 1;
		}
		if (cancel && hutch_cancel_raised(cancel))
			return 0;
		if (hutch__now_ms() > until)
			return hutch__error_set(
				err, HUTCH_ETIMEOUT,
				"exec %.12s still reported running %d s after its output ended",
				id, INSPECT_WAIT_MS / 1000);
		hutch__sleep_ms(pause);
		if (pause < 50)
			pause *= 2;
	}
}

static int exec_exit_code(struct run *r, const char *id, int *code,
			  hutch_error **err)
{
	return hutch__exec_wait_exit(hutch_session_engine(r->s), id, NULL, code,
				     "inspect exec", err);
}

/* The command's exit status, where it ran: as exec_exit_code. */
static int command_exit_code(struct run *r, int *code, hutch_error **err)
{
	if (r->on_chan)
		return hutch__chan_wait_exit(r->chan, INSPECT_WAIT_MS, code,
					     err);
	return exec_exit_code(r, r->exec_id, code, err);
}

int hutch__exec_failure(const hutch_exec_result *res, const char *what,
			uint64_t timeout_ms, hutch_error **err)
{
	switch (hutch_exec_result_status(res)) {
	case HUTCH_EXEC_OK:
		return 0;
	case HUTCH_EXEC_TIMEOUT:
		return hutch__error_set(err, HUTCH_ETIMEOUT,
					"%s: no answer within %" PRIu64 " ms",
					what, timeout_ms);
	case HUTCH_EXEC_CANCELLED:
		return hutch__error_set(err, HUTCH_ECANCELLED, "%s: cancelled",
					what);
	case HUTCH_EXEC_SANDBOX_LOST:
	default:
		return hutch__error_set(err, HUTCH_EFAILED,
					"%s: the session's container died",
					what);
	}
}

/* ---- stopping the command -------------------------------------------- */

#define KILL_WAIT_MS 30000

/* The agent's kill on the channel: 0 with *code, HUTCH__CHAN_UNAVAILABLE,
 * or a negative code. */
static int kill_on_chan(struct run *r, const struct hutch__exec_spec *spec,
			int *code, hutch_error **err)
{
	struct hutch__exec_stream stream = {
		.deadline_ms = hutch__now_ms() + KILL_WAIT_MS,
		.input_fd = -1,
	};
	struct hutch__chan_call *call = NULL;
	int streamed, rc;

	rc = hutch__chan_exec(r->s, spec, &stream, &call, &streamed,
			      "kill on the agent's channel", err);
	/* (HUTCH__CHAN_UNAVAILABLE and wait_exit's "got it" are both 1.) */
	if (rc == 0 &&
	    (rc = hutch__chan_wait_exit(call, INSPECT_WAIT_MS, code, err)) == 1)
		rc = 0;
	hutch__chan_call_close(call);
	return rc;
}

/* Run the agent's kill in a second exec: it finds the command's agent by
 * its tag and kills every process under it, then the agent.  0 when it
 * did, 1 when there was no agent with that tag (not started yet, or
 * already gone), or a negative code. */
static int kill_tree(struct run *r, hutch_error **err)
{
	const char *argv[] = { HUTCH_AGENT_RUN_PATH, HUTCH_AGENT_CMD_KILL,
			       r->tag };
	/* As the session's user, the exec default, not as root: with every
	 * capability dropped root could not signal the user's processes
	 * (no CAP_KILL), and with no-new-privileges and no capabilities a
	 * command can never become another user. */
	struct hutch__exec_spec spec = { .argv = argv,
					 .argc = 3,
					 .workdir = "/" };
	char kill_id[129];
	int code = -1, streamed, rc;

	/* A command run as another user (hutch_exec_options.user) is killed
	 * as that user, for the same reason: without CAP_KILL only the same
	 * uid can signal it.  r->user is the numeric UID:GID the command
	 * got, never a name looked up again. */
	if (r->user[0])
		spec.user = r->user;

	/* The channel first, whichever way the command went: the agent
	 * finds it by its tag either way. */
	rc = kill_on_chan(r, &spec, &code, err);
	if (rc == HUTCH__CHAN_UNAVAILABLE) {
		rc = exec_create(r, &spec, kill_id, sizeof(kill_id),
				 "create kill exec", err);
		if (rc < 0)
			return rc;
		/* The agent's kill is bounded; so is our wait for it. */
		rc = exec_start(r, kill_id, NULL,
				hutch__now_ms() + KILL_WAIT_MS, NULL, NULL,
				&streamed, "start kill exec", err);
		if (rc < 0)
			return rc;
		rc = exec_exit_code(r, kill_id, &code, err);
	}
	/* 0: the tree is gone; 3: no agent with the tag.  Anything else
	 * (126: the runtime could not start the killer, as in a container
	 * whose pids limit is full) means it may still run. */
	if (rc < 0)
		return rc;
	if (code == HUTCH_AGENT_EXIT_NOTAG)
		return 1;
	if (code != 0)
		return hutch__error_set(err, HUTCH_EFAILED,
					"the in-container kill exited %d",
					code);
	return 0;
}

enum {
	EXEC_RUNS,
	EXEC_ENDED,
	EXEC_UNSURE
};

/* One look at the exec.  ENDED: it does not run and the engine gives its
 * exit code and the pid it had (Docker).  UNSURE: it does not run and has
 * no pid, which is Podman's answer both before its process started and
 * after it ended. */
static int exec_state(struct run *r, hutch_error **err)
{
	struct hutch__exec_info info;
	int rc;

	/* On the channel (r->chan is set while its stream is read, before
	 * on_chan): the agent's EXIT is the end; a connection that
	 * ended without it leaves the command's fate open, as Podman's
	 * "no pid" does (stop_command kills by tag meanwhile). */
	if (r->chan) {
		rc = hutch__chan_state(r->chan);
		return rc == HUTCH__CHAN_RUNS  ? EXEC_RUNS :
		       rc == HUTCH__CHAN_ENDED ? EXEC_ENDED :
						 EXEC_UNSURE;
	}
	rc = hutch__api_exec_inspect(hutch_session_engine(r->s), r->exec_id,
				     &info, "inspect exec", err);
	if (rc < 0)
		return rc;
	if (info.running)
		return EXEC_RUNS;
	return info.has_exit_code && info.pid > 0 ? EXEC_ENDED : EXEC_UNSURE;
}

#define STOP_KILLED 1
#define STOP_ENDED 2

/* The command must not run on.  STOP_KILLED: its agent was found and
 * killed with everything under it; STOP_ENDED: there was nothing to kill,
 * it had ended by itself; or a negative code when the kill could not be
 * done.  Never "killed" without having found the agent: the engine starts
 * an exec's stream before its process, so a kill that finds no agent
 * while the exec runs looks again until it finds one or the exec ends. */
static int stop_command(struct run *r, hutch_error **err)
{
	unsigned long long give_up = hutch__now_ms() + STOP_WAIT_MS,
			   unsure_since = 0, now;
	unsigned int pause = 20;
	int state, rc;

	for (;;) {
		state = exec_state(r, err);
		if (state < 0)
			return state;
		now = hutch__now_ms();
		if (state == EXEC_ENDED)
			return STOP_ENDED;
		if (state != EXEC_UNSURE)
			unsure_since = 0;
		else if (!unsure_since)
			unsure_since = now;
		else if (now - unsure_since >= UNSURE_MS)
			return STOP_ENDED;
		rc = kill_tree(r, err);
		if (rc < 0)
			return rc;
		if (rc == 0)
			return STOP_KILLED;
		if (hutch__now_ms() >= give_up && r->chan)
			return hutch__error_set(
				err, HUTCH_EFAILED,
				"the agent's channel says the command runs, "
				"but its process was not found in %d s",
				STOP_WAIT_MS / 1000);
		if (hutch__now_ms() >= give_up)
			return hutch__error_set(
				err, HUTCH_EFAILED,
				"exec %.12s: the engine says it runs, but "
				"its process was not found in %d s",
				r->exec_id, STOP_WAIT_MS / 1000);
		hutch__sleep_ms(pause);
		if (pause < 200)
			pause *= 2;
	}
}

/* The timeout passed while the stream was open (hutch__request's
 * on_deadline).  Inspect before calling it a timeout: a command that has
 * ended may still have its stream held open by a background process it
 * left (Docker keeps it up to 2 s).  The stream is read on meanwhile, so
 * its end tells when the exec is really over. */
static unsigned long long on_deadline(void *p)
{
	struct run *r = p;
	hutch_error *e = NULL;
	int rc;

	/* Killed, or the agent's own deadline awaited, and the stream still
	 * open: stop reading. */
	if (r->killed || r->stop_failed)
		return 0;
	r->stopping = 1;
	rc = stop_command(r, &e);
	if (rc == STOP_KILLED) {
		r->killed = 1;
		return hutch__now_ms() + DRAIN_MS;
	}
	if (rc == STOP_ENDED)
		/* Ended, and the stream still open after a drain: look once
		 * more (in case Podman's "no pid" meant "not started"), then
		 * stop reading. */
		return r->ended++ < 2 ? hutch__now_ms() + DRAIN_MS : 0;
	/* The kill could not run (a full pids limit refuses the exec): the
	 * agent's own deadline, AGENT_BACKSTOP_MS after ours, ends the tree
	 * without a new process.  Wait for that. */
	r->stop_failed = 1;
	r->stop_err = e;
	return r->backstop + DRAIN_MS;
}

/* 1 when the session's container runs, 0 when it is stopped or gone. */
static int container_alive(struct run *r)
{
	char state[32];
	int rc = hutch__session_state(r->s, state, sizeof(state), NULL);

	/* A paused container is still there; and when the engine cannot be
	 * asked, do not claim the sandbox was lost. */
	if (rc == 1 || (rc == 0 && strcmp(state, "paused") == 0))
		return 1;
	return rc < 0 && rc != HUTCH_ENOTFOUND;
}

/* Docker reports a killed container's exec as ended (137) a moment before
 * the container itself stops saying it runs; give the state that moment
 * before concluding the container survived. */
#define LOST_SETTLE_MS 1000

static int container_alive_settled(struct run *r)
{
	unsigned long long until = hutch__now_ms() + LOST_SETTLE_MS;

	while (container_alive(r)) {
		if (hutch__now_ms() >= until)
			return 1;
		hutch__sleep_ms(25);
	}
	return 0;
}

static int finish_capture(struct run *r, hutch_exec_result *res)
{
	for (int i = 0; i < 2; i++) {
		if (!r->o->capture) {
			res->out[i].total = r->cap[i].total;
			continue;
		}
		res->out[i].data = hutch__capture_take(&r->cap[i],
						       &res->out[i].len,
						       &res->out[i].head_len,
						       &res->out[i].omitted);
		res->out[i].total = r->cap[i].total;
		if (!res->out[i].data)
			return -1;
	}
	return 0;
}

int hutch_exec_run(hutch_exec_result **out, hutch_session *s,
		   const hutch_exec_options *o, hutch_error **err)
{
	return hutch__exec_run(out, s, o, 0, err);
}

/* ---- the policy of one run ------------------------------------------- */

/* What a step of the run came to: the result is decided (RUN_DECIDED), or
 * go on to the next step (0), or a failure (negative, in err). */
#define RUN_DECIDED 1

/* Ready `r` and `res` for a run of `o`: capture, redaction, the tag. */
static int run_init(struct run *r, hutch_exec_result *res, hutch_session *s,
		    const hutch_exec_options *o, unsigned int flags,
		    hutch_error **err)
{
	const hutch__secrets *set =
		flags & HUTCH__EXEC_RAW ? NULL : hutch__session_redaction(s);
	size_t cap = o->max_output ? o->max_output :
				     HUTCH_EXEC_DEFAULT_MAX_OUTPUT;

	r->s = s;
	r->o = o;
	r->flags = flags;
	r->t0 = hutch__now_ms();
	hutch__capture_init(&r->cap[0], cap);
	hutch__capture_init(&r->cap[1], cap);
	for (int i = 0; i < 2; i++) {
		r->sink[i].r = r;
		r->sink[i].i = i;
	}
	if (set)
		res->secrets = hutch__secrets_ref(set);
	if (hutch__redactor_init(&r->red[0], set) < 0 ||
	    hutch__redactor_init(&r->red[1], set) < 0)
		return hutch__error_oom(err);
	if (hutch__random_hex(r->tag, sizeof(r->tag)) < 0)
		return hutch__error_set(err, HUTCH_EFAILED,
					"no randomness for the exec tag: %s",
					strerror(errno));
	res->exit_code = -1;
	return 0;
}

static int agent_first(struct run *r, hutch_error **err);

/* Run the command once: on the agent's channel when it can be had, else
 * create the exec and read its stream; what it came to is in r->rc
 * (r->lerr). */
static void run_once(struct run *r, const struct hutch__exec_spec *spec)
{
	unsigned long long deadline;

	int rc;

	hutch_error_free(r->lerr);
	r->lerr = NULL;
	r->streamed = 0;
	r->agent_gone = 0;
	hutch__chan_call_close(r->chan);
	r->chan = NULL;
	r->on_chan = 0;
	r->exec_id[0] = '\0';
	hutch__demux_init(&r->demux);
	/* The agent's channel first: no engine request at all. */
	deadline = r->o->timeout_ms ? hutch__now_ms() + r->o->timeout_ms : 0;
	r->backstop = deadline ? deadline + AGENT_BACKSTOP_MS : 0;
	rc = chan_start_command(r, spec, deadline, &r->lerr);
	if (rc != HUTCH__CHAN_UNAVAILABLE) {
		r->on_chan = 1;
		r->rc = rc;
		return;
	}
	/* The channel needs no look at the agent first: one it cannot
	 * start is its refusal, before any input was read. */
	r->rc = agent_first(r, &r->lerr);
	if (r->rc < 0)
		return;
	r->rc = exec_create(r, spec, r->exec_id, sizeof(r->exec_id),
			    "create exec", &r->lerr);
	if (r->rc < 0)
		return;
	deadline = r->o->timeout_ms ? hutch__now_ms() + r->o->timeout_ms : 0;
	r->backstop = deadline ? deadline + AGENT_BACKSTOP_MS : 0;
	r->rc = exec_start_command(r, deadline, &r->lerr);
}

/* run_once, and once more when this build's agent was not there: a
 * session made by another hutch, where nothing ran (agent_install.c
 * checks that the file is really missing first). */
static void run_once_agent(struct run *r, const struct hutch__exec_spec *spec)
{
	int got = 0;

	run_once(r, spec);
	if (!r->agent_gone)
		return;
	if (r->rc == 0)
		got = hutch__agent_install_if_missing(r->s, &r->lerr);
	/* The refused exec's stream may already have taken bytes of an fd
	 * (or of on_input's pipe): those cannot be sent again, so the
	 * command is not run on the rest of its input.  A buffer is sent
	 * again whole. */
	if (got == 1 && r->input_taken && !r->o->input) {
		r->held_len = 0;
		r->agent_gone = 0;
		r->streamed = 0;
		r->rc = hutch__error_set(
			&r->lerr, HUTCH_EFAILED,
			"the session's agent came from another hutch and has "
			"been replaced; the command did not run, but part of "
			"its input was read: run it again");
		return;
	}
	if (got == 1) {
		/* Its refusal is not the command's output. */
		r->held_len = 0;
		r->seen = 0;
		r->errtail_len = 0;
		run_once(r, spec);
	}
	if (r->agent_gone && release_held(r))
		r->stopped = 1;
	if (got < 0)
		r->rc = got;
}

/* Run the command, and once more when its container was gone. */
static void run_with_one_retry(struct run *r, hutch_exec_result *res,
			       const struct hutch__exec_spec *spec)
{
	run_once_agent(r, spec);
	/* The container was gone or stopped before the command began:
	 * nothing ran, so bringing the container back and trying once more
	 * cannot run the command twice. */
	if (!((r->rc == HUTCH_ENOTFOUND || r->rc == HUTCH_ENOTRUNNING) &&
	      r->seen == 0 && r->demux.frames == 0))
		return;
	/* Nor the input twice, or half of it: a buffer is sent again whole;
	 * an fd (or on_input's pipe, whose bytes stay in it until read)
	 * only when not a byte was read from it.  The engine refuses a
	 * start before the stream begins, and the transport reads no input
	 * before that, so this holds in practice; it is checked all the
	 * same. */
	if (r->input_taken && !r->o->input)
		return;
	hutch_error_free(r->lerr);
	r->lerr = NULL;
	r->rc = hutch_session_ensure(r->s, NULL, &r->lerr);
	if (r->rc < 0)
		return;
	/* The container may be another one now: its channel is looked for
	 * again. */
	hutch__chan_forget(r->s);
	/* Making a brand-new session's first container is the lazy
	 * creation, not a recovery. */
	res->retried = !r->s->new_record;
	run_once_agent(r, spec);
}

/* Our side stopped reading, and the output read so far is all there is:
 * the command ended by itself, so ask how it did. */
static void stopped_reading(struct run *r)
{
	hutch_error_free(r->lerr);
	r->lerr = NULL;
	r->cut_by_us = 1;
	r->rc = 0;
}

/* The timeout passed while the stream was open (on_deadline). */
static int after_timeout(struct run *r, hutch_exec_result *res,
			 hutch_error **err)
{
	int rc;

	if (r->killed) {
		res->status = HUTCH_EXEC_TIMEOUT;
		return RUN_DECIDED;
	}
	if (r->stop_failed && r->rc == HUTCH_ETIMEOUT && container_alive(r)) {
		/* Not even the agent's own deadline ended it. */
		rc = hutch__error_wrap(&r->stop_err,
				       hutch_error_code(r->stop_err),
				       "the command was not killed");
		rc = hutch__error_pass(err, r->stop_err, rc);
		r->stop_err = NULL;
		return rc;
	}
	/* It ended by itself (or, when the kill could not run, by the
	 * agent's own deadline: see judge_ending).  ETIMEOUT here only means
	 * that we stopped waiting for a stream a leftover process held. */
	if (r->rc == HUTCH_ETIMEOUT)
		stopped_reading(r);
	return 0;
}

/* The caller cancelled, or its callback asked to stop: make sure nothing
 * keeps running. */
static int after_cancel(struct run *r, hutch_exec_result *res,
			hutch_error **err)
{
	hutch_error *kerr = NULL;
	int stop = stop_command(r, &kerr), rc;

	if (stop == STOP_KILLED || (stop < 0 && !container_alive(r))) {
		hutch_error_free(kerr);
		res->status = HUTCH_EXEC_CANCELLED;
		return RUN_DECIDED;
	}
	if (stop < 0) {
		rc = hutch__error_wrap(&kerr, hutch_error_code(kerr),
				       "the command was not killed");
		return hutch__error_pass(err, kerr, rc);
	}
	/* Nothing to kill: it had ended by itself, so say how. */
	stopped_reading(r);
	return 0;
}

/* The stream's own faults, and an engine error before it began. */
static int check_stream(struct run *r, hutch_error **err)
{
	int rc;

	if (r->oom)
		return hutch__error_oom(err);
	if (r->malformed)
		return hutch__error_set(
			err, HUTCH_EPROTO,
			"the engine sent output that is not a framed exec stream");
	/* Only a stream that began and then broke goes on to the questions
	 * of judge_ending; an engine error before that is the answer itself. */
	if (r->rc < 0 && !(r->rc == HUTCH_EFAILED && r->streamed)) {
		rc = hutch__error_pass(err, r->lerr, r->rc);
		r->lerr = NULL;
		return rc;
	}
	return 0;
}

/* A vanished exec (got < 0), a signal death or a cut stream in a
 * container that no longer runs all mean the sandbox went away under the
 * command. */
static int sandbox_lost(struct run *r, int got, int cut, int code)
{
	/* A SIGKILL death, a cut stream or a vanished exec is what a dying
	 * container looks like: only those wait for its state to settle.
	 * Other signal deaths get one look. */
	int suspect = got < 0 || cut || code < 0 || code == 137;

	if (!suspect && code < 128)
		return 0;
	return !(suspect ? container_alive_settled(r) : container_alive(r));
}

/* The stream ended, cleanly or cut, or the exec vanished (`got` < 0,
 * `ierr` taken): the error to report. */
static int broken_stream(struct run *r, int got, int cut, hutch_error *ierr,
			 hutch_error **err)
{
	int rc;

	if (cut && r->lerr) {
		hutch_error_free(ierr);
		rc = hutch__error_wrap(&r->lerr, HUTCH_EFAILED,
				       "exec stream broke");
		rc = hutch__error_pass(err, r->lerr, rc);
		r->lerr = NULL;
		return rc;
	}
	if (got < 0)
		return hutch__error_pass(err, ierr, got);
	hutch_error_free(ierr);
	return hutch__error_set(err, HUTCH_EPROTO,
				"the exec stream ended inside a frame");
}

/* The stream ended, cleanly or cut.  Ask how the command ended. */
static int judge_ending(struct run *r, hutch_exec_result *res,
			hutch_error **err)
{
	hutch_error *ierr = NULL;
	/* Where we stopped reading, a frame may well be half read. */
	int cut = r->rc < 0 ||
		  (!r->cut_by_us && !hutch__demux_at_boundary(&r->demux));
	int code = -1, got = command_exit_code(r, &code, &ierr);

	if (sandbox_lost(r, got, cut, code)) {
		hutch_error_free(ierr);
		res->status = HUTCH_EXEC_SANDBOX_LOST;
		res->exit_code = -1;
		return RUN_DECIDED;
	}
	if (got < 0 || cut)
		return broken_stream(r, got, cut, ierr, err);
	if (got == 1 && code == HUTCH_AGENT_EXIT_NOWORKDIR &&
	    (r->workdir_line ||
	     memmem(r->errtail, r->errtail_len, HUTCH_AGENT_NO_WORKDIR,
		    sizeof(HUTCH_AGENT_NO_WORKDIR) - 1))) {
		/* The agent's line, and its exit: the command never ran.  A
		 * command printing it and exiting 122 only mislabels its own
		 * result.  The line itself is not shown: the error says it. */
		char *dir;

		r->held_len = 0;
		r->workdir_line = 0;
		dir = hutch__workdir_resolve(r->o->workdir);
		int rc = hutch__error_set(
			err, HUTCH_EINVALID,
			"working directory '%s' does not exist in the session",
			dir ? dir : r->o->workdir);

		free(dir);
		return rc;
	}
	if (got == 1 && exec_too_long(r, code))
		return hutch__error_set(
			err, HUTCH_ETOOBIG,
			"the command was not started: its arguments and "
			"environment (%zu bytes) are over the kernel's "
			"limit in the container (execve: argument list too "
			"long); pass large data in a file instead",
			exec_bytes(r->o));
	res->status = HUTCH_EXEC_OK;
	res->exit_code = got == 1 ? code : -1;
	res->oom = saw_oom(r);
	/* The kill could not run and the agent's own deadline ended the
	 * command: its exit code says so. */
	if (r->stop_failed && code == HUTCH_AGENT_EXIT_DEADLINE) {
		res->status = HUTCH_EXEC_TIMEOUT;
		res->exit_code = -1;
	}
	return RUN_DECIDED;
}

/* ---- standard input from a callback ---------------------------------- */

#define INPUT_PIECE (64u * 1024u)

/*
 * The thread that calls on_input and writes what it gives into the pipe
 * the transport reads.  It ends when on_input says the input ended (then
 * the pipe's end of file is the command's), when it asks to cancel, or
 * when a write fails because the read end was closed: the command ended
 * first and input_stop() closed it, so on_input is not called again.
 * The pipe's capacity bounds how far ahead of the command it reads.
 */
static void *input_thread(void *p)
{
	struct run *r = p;
	char *buf = malloc(INPUT_PIECE);
	sigset_t all;
	long n;

	/* Signals stay with the caller's threads; a write to the closed
	 * pipe is EPIPE here, never a SIGPIPE for the process. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	while (buf) {
		n = r->o->on_input(buf, INPUT_PIECE, r->o->input_payload);
		if (n == 0)
			break;
		if (n < 0 || (size_t)n > INPUT_PIECE) {
			if (n > 0)
				r->in_bad = n;
			hutch_cancel_raise(&r->in_cancel);
			break;
		}
		for (size_t off = 0; off < (size_t)n;) {
			ssize_t w = write(r->in_pipe[1], buf + off,
					  (size_t)n - off);

			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0)
				goto out;
			off += (size_t)w;
		}
	}
out:
	free(buf);
	/* The end of the input, for the transport. */
	close(r->in_pipe[1]);
	return NULL;
}

static int input_start(struct run *r, hutch_error **err)
{
	int rc;

	r->in_pipe[0] = r->in_pipe[1] = -1;
	if (!r->o->on_input)
		return 0;
	if (pipe2(r->in_pipe, O_CLOEXEC) < 0)
		return hutch__error_set(err, HUTCH_EFAILED,
					"no pipe for the input: %s",
					strerror(errno));
	rc = pthread_create(&r->in_thread, NULL, input_thread, r);
	if (rc) {
		close(r->in_pipe[0]);
		close(r->in_pipe[1]);
		r->in_pipe[0] = r->in_pipe[1] = -1;
		return hutch__error_set(err, HUTCH_EFAILED,
					"no thread for the input: %s",
					strerror(rc));
	}
	r->in_thread_started = 1;
	return 0;
}

/* Every path of a run ends here: closing the read end makes the thread's
 * next write fail, so it ends once the on_input call in progress (if
 * any) returns. */
static void input_stop(struct run *r)
{
	if (!r->in_thread_started)
		return;
	close(r->in_pipe[0]);
	r->in_pipe[0] = -1;
	pthread_join(r->in_thread, NULL);
	r->in_thread_started = 0;
}

/* ---- the command's user ----------------------------------------------- */

/*
 * hutch_exec_options.user as the engine gets it: numbers, "UID:GID",
 * looked up here in the container's own /etc/passwd and /etc/group
 * (account.c), so the engine resolves no name that the sandbox may have
 * changed between our look and its.  The reserved uid of the agent's
 * owner is refused (hutch__container_user): the agent's directory and
 * file are that uid's and writable by no one else (agent_blob.c), so a
 * command as any other uid cannot replace the agent that installs the
 * seccomp filter of every later command.  Root is no exception: the
 * session's commands have no CAP_DAC_OVERRIDE or CAP_FOWNER (CapDrop
 * ALL), so root too is held to the owner and mode bits.  The group does
 * not matter: the agent's files give their group no write.
 */
static int resolve_user(struct run *r, hutch_error **err)
{
	unsigned int uid, gid;
	int rc;

	r->user[0] = '\0';
	if (!r->o->user)
		return 0;
	rc = hutch__container_user(hutch_session_engine(r->s),
				   hutch__session_container(r->s), r->o->user,
				   0, &uid, &gid, err);
	if (rc == HUTCH_ENOTFOUND) {
		/* No /etc/passwd: the container may not be there yet (a new
		 * session, or a gone one); bring it up and look again. */
		hutch_error_free(err ? *err : NULL);
		if (err)
			*err = NULL;
		rc = hutch_session_ensure(r->s, NULL, err);
		if (rc < 0)
			return rc; /* e.g. no such session, and not to make */
		/* Now it runs: a 404 is a missing file, no user in it. */
		rc = hutch__container_user(hutch_session_engine(r->s),
					   hutch__session_container(r->s),
					   r->o->user, 1, &uid, &gid, err);
	}
	if (rc < 0)
		return rc;
	snprintf(r->user, sizeof(r->user), "%u:%u", uid, gid);
	return 0;
}

/*
 * A terminal's stream has no frames by which the runtime's refusal of a
 * missing agent could be held back (run_once_agent), and input read from
 * an fd or from on_input cannot be sent a second time: for those, make
 * sure first that this build's agent is there (one HEAD; installed when
 * it is not, as run_once_agent would).  A container that does not exist
 * yet gets this build's agent when it is made.
 */
static int agent_first(struct run *r, hutch_error **err)
{
	hutch_error *lerr = NULL;
	int rc;

	if (!r->o->tty && r->o->input_fd < 0 && !r->o->on_input)
		return 0;
	rc = hutch__agent_install_if_missing(r->s, &lerr);
	if (rc == HUTCH_ENOTFOUND || rc == HUTCH_ENOTRUNNING)
		rc = 0;
	return hutch__error_pass(err, lerr, rc < 0 ? rc : 0);
}

/* The policy: run once more when the container was gone before the
 * command began; on the timeout the tree was killed (on_deadline), on a
 * cancel it is killed now; then the command's own ending, unless the
 * sandbox was lost under it. */
static int run_command(struct run *r, hutch_exec_result *res, hutch_error **err)
{
	struct agent_command cmd;
	struct hutch__exec_spec spec;
	int rc;

	if ((rc = resolve_user(r, err)) < 0)
		return rc;
	if (agent_command(&cmd, r) < 0)
		return hutch__error_oom(err);
	spec = (struct hutch__exec_spec){
		.argv = cmd.argv,
		.argc = cmd.argc,
		.env = cmd.env,
		.env_count = cmd.env_count,
		/* Always there; the agent enters the real one (--workdir). */
		.workdir = "/",
		/* With no input the exec gets none: its stdin is /dev/null
		 * (the agent makes sure), and nothing to attach. */
		.attach_stdin = r->o->input || r->o->input_fd >= 0 ||
				r->o->on_input,
		.tty = r->o->tty,
		.user = r->user[0] ? r->user : NULL,
	};
	rc = input_start(r, err);
	if (rc < 0) {
		agent_command_free(&cmd);
		return rc;
	}
	run_with_one_retry(r, res, &spec);
	/* The command has ended (or was given up on): no more input. */
	input_stop(r);
	agent_command_free(&cmd);
	if (r->stopping)
		rc = after_timeout(r, res, err);
	else if (r->rc == HUTCH_ECANCELLED || r->stopped)
		rc = after_cancel(r, res, err);
	else
		rc = 0;
	if (rc == 0)
		rc = check_stream(r, err);
	if (rc == 0)
		rc = judge_ending(r, res, err);
	/* What looked like the agent's working-directory line was the
	 * command's own output (or the run ended another way): it goes on,
	 * with what came after it. */
	if (r->workdir_line)
		release_held(r);
	if (rc >= 0 && r->in_bad)
		rc = hutch__error_set(
			err, HUTCH_EINVALID,
			"on_input returned %ld, more than the %u bytes asked for; "
			"the command was cancelled",
			r->in_bad, INPUT_PIECE);
	return rc;
}

/* The caller's options as a version-2 struct: a version-1 caller's
 * struct ends before the version-2 fields, which get their defaults. */
static int options_v2(hutch_exec_options *v2, const hutch_exec_options *o,
		      hutch_error **err)
{
	static const hutch_exec_options defaults = HUTCH_EXEC_OPTIONS_INIT;

	if (!o || (o->version != 1 && o->version != 2))
		return hutch__error_set(
			err, HUTCH_EINVALID,
			"unsupported hutch_exec_options version %u (1 or 2)",
			o ? o->version : 0);
	if (o->version == 1) {
		*v2 = defaults;
		memcpy(v2, o, offsetof(hutch_exec_options, input));
	} else {
		*v2 = *o;
	}
	v2->version = HUTCH_EXEC_OPTIONS_VERSION;
	return 0;
}

int hutch__exec_run(hutch_exec_result **out, hutch_session *s,
		    const hutch_exec_options *opts, unsigned int flags,
		    hutch_error **err)
{
	hutch_exec_options o2;
	const hutch_exec_options *o = &o2;
	struct run r;
	hutch_exec_result *res = NULL;
	int rc;

	if ((rc = options_v2(&o2, opts, err)) < 0)
		return rc;
	rc = validate(
		o, flags & HUTCH__EXEC_RAW ? NULL : hutch__session_redaction(s),
		err);
	if (rc < 0)
		return rc;
	memset(&r, 0, sizeof(r));
	res = calloc(1, sizeof(*res));
	rc = res ? run_init(&r, res, s, o, flags, err) : hutch__error_oom(err);
	if (rc == 0)
		rc = run_command(&r, res, err);
	if (rc < 0)
		goto out;
	res->on_chan = r.on_chan;
	flush_redaction(&r, res->status != HUTCH_EXEC_OK || r.cut_by_us);
	if (r.oom || finish_capture(&r, res) < 0) {
		rc = hutch__error_oom(err);
		goto out;
	}
	res->duration_ms = hutch__now_ms() - r.t0;
	*out = res;
	res = NULL;
	rc = 0;
out:
	if (rc < 0) {
		hutch__error_wrap(err, rc, "session '%s'",
				  hutch_session_name(s));
		/* An engine's message may quote what it was sent. */
		hutch__error_redact(err ? *err : NULL,
				    hutch__session_redaction(s));
	}
	hutch__chan_call_close(r.chan);
	hutch_error_free(r.lerr);
	hutch_error_free(r.stop_err);
	hutch__redactor_free(&r.red[0]);
	hutch__redactor_free(&r.red[1]);
	hutch__capture_free(&r.cap[0]);
	hutch__capture_free(&r.cap[1]);
	hutch_exec_result_free(res);
	return rc;
}

/* ---- JSON ------------------------------------------------------------- */

static json_object *text(const char *data, size_t len)
{
	size_t n;
	char *fixed = hutch__utf8_repair(data, len, &n);
	json_object *s;

	if (!fixed)
		return NULL;
	s = json_object_new_string_len(fixed, (int)n);
	free(fixed);
	return s;
}

static int add_stream(json_object *obj, const hutch_exec_result *r, int i,
		      const char *name)
{
	char key[64];
	json_object *v;
	char *joined = NULL;
	const char *data = r->out[i].data ? r->out[i].data : "";
	size_t len = r->out[i].len;

	/* Say where bytes were left out, in the text itself, so a reader of
	 * the string alone (a model) knows it is not the whole output. */
	if (r->out[i].omitted) {
		char marker[96];
		int m = snprintf(marker, sizeof(marker),
				 "\n[... %llu bytes omitted ...]\n",
				 (unsigned long long)r->out[i].omitted);
		size_t head = r->out[i].head_len, total = len + (size_t)m;

		/* Byte-exact: the output may hold NUL bytes. */
		joined = malloc(total + 1);
		if (!joined)
			return -1;
		memcpy(joined, data, head);
		memcpy(joined + head, marker, (size_t)m);
		memcpy(joined + head + (size_t)m, data + head, len - head);
		joined[total] = '\0';
		data = joined;
		len = total;
	}
	v = text(data, len);
	free(joined);
	if (!v)
		return -1;
	json_object_object_add(obj, name, v);
	snprintf(key, sizeof(key), "%s_bytes", name);
	json_object_object_add(obj, key,
			       json_object_new_int64((int64_t)r->out[i].total));
	snprintf(key, sizeof(key), "%s_truncated", name);
	json_object_object_add(obj, key,
			       json_object_new_boolean(r->out[i].omitted > 0));
	snprintf(key, sizeof(key), "%s_omitted_bytes", name);
	json_object_object_add(
		obj, key, json_object_new_int64((int64_t)r->out[i].omitted));
	return 0;
}

int hutch_exec_result_to_json(char **out, const hutch_exec_result *r,
			      const char *session, const char *const *argv,
			      size_t argc, hutch_error **err)
{
	json_object *obj = json_object_new_object(),
		    *av = json_object_new_array();
	const char *s;
	int rc = HUTCH_ENOMEM;

	if (!obj || !av)
		goto out;
	for (size_t i = 0; i < argc; i++) {
		/* The command line can carry a secret ("curl -H 'Authorization:
		 * $TOKEN'" expanded by the caller): masked as in the output. */
		size_t n;
		char *clean = hutch__redact_buffer(r->secrets, argv[i],
						   strlen(argv[i]), 0, &n);
		json_object *a = clean ? text(clean, n) : NULL;

		if (clean)
			explicit_bzero(clean, n);
		free(clean);
		if (!a)
			goto out;
		json_object_array_add(av, a);
	}
	json_object_object_add(obj, "session",
			       json_object_new_string(session ? session : ""));
	json_object_object_add(obj, "argv", av);
	av = NULL;
	json_object_object_add(
		obj, "exit_code",
		r->exit_code >= 0 ? json_object_new_int(r->exit_code) : NULL);
	json_object_object_add(
		obj, "status",
		json_object_new_string(hutch_exec_status_name(r->status)));
	if (add_stream(obj, r, 0, "stdout") < 0 ||
	    add_stream(obj, r, 1, "stderr") < 0)
		goto out;
	json_object_object_add(obj, "oom", json_object_new_boolean(r->oom));
	json_object_object_add(obj, "retried",
			       json_object_new_boolean(r->retried));
	json_object_object_add(
		obj, "path", json_object_new_string(hutch_exec_result_path(r)));
	json_object_object_add(obj, "duration_ms",
			       json_object_new_int64((int64_t)r->duration_ms));
	s = json_object_to_json_string_ext(
		obj, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	if (!s || !(*out = strdup(s)))
		goto out;
	rc = 0;
out:
	json_object_put(av);
	json_object_put(obj);
	return rc < 0 ? hutch__error_oom(err) : 0;
}
