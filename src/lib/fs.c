/*
 * fs.c - file tools: the library side of the agent's "fs" command
 *
 * Nothing here touches a path: the agent inside the container resolves and
 * confines every one of them (src/agent/fs_path.c).  This file turns the
 * caller's arguments into an agent command line, hands it the texts that do
 * not belong on a command line (write's content, edit's old and new text)
 * in its environment or on its stdin, runs the agent through the ordinary
 * exec path and turns its one JSON
 * object into a result or a typed error, in the words of the caller
 * (hutch_fs_words: the CLI's options, the MCP server's parameters).
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <json-c/json.h>

#include <hutch/fs.h>

#include "agent_blob.h"
#include "agent_install.h"
#include "base64.h"
#include "common.h"
#include "engine_internal.h"
#include "error.h"
#include "exec_internal.h"
#include "fs_answer.h"
#include "secrets.h"
#include "session_internal.h"

/* The agent keeps every answer far below this (its caps add up to ~8 MiB);
 * more is a broken or impostor agent. */
#define FS_MAX_ANSWER (9u * 1024u * 1024u)
/* Patterns, globs and paths go on the agent's command line. */
#define FS_MAX_ARG (64u * 1024u)
/* Texts up to this size travel base64-encoded in the exec's environment
 * (64 KiB encoded: under the kernel's 128 KiB limit for one string and the
 * 64 KiB a pipe holds, which the agent may use); larger ones on the exec's
 * stdin.  The environment is there when the agent starts, so a small text
 * costs no input stream: on the engine's path, no look for the agent
 * first (exec.c, agent_first) and no stdin to attach. */
#define FS_ENV_TEXT_MAX (48u * 1024u)

/* The agent's cap on "stdin:LEN" for write is the library's on a text. */
_Static_assert(HUTCH_FS_MAX_TEXT == HUTCH_AGENT_FS_TEXT_MAX,
	       "write's cap differs between the library and the agent");

/* --- one call ------------------------------------------------------------- */

/* A call: the caller's options as version 2, its words with every member
 * set, and the arguments messages quote. */
struct call {
	hutch_fs_options o;
	hutch_fs_words w;
	const char *path, *to;
};

/* The CLI's words, the default for any the caller leaves NULL. */
static void default_words(hutch_fs_words *w, const char *tool)
{
	w->tool = tool;
	w->path = "the path";
	w->to = "the destination";
	w->content = "the content";
	w->old_text = "the old text";
	w->new_text = "the new text";
	w->pattern = strcmp(tool, HUTCH_AGENT_FS_FIND) == 0 ? "the glob" :
							      "the pattern";
	w->flag = strcmp(tool, HUTCH_AGENT_FS_EDIT) == 0   ? "--all" :
		  strcmp(tool, HUTCH_AGENT_FS_DELETE) == 0 ? "--recursive" :
							     "--overwrite";
}

/* The options of a version-1 caller end before line_numbers: the
 * version-2 members get their defaults. */
static int call_init(struct call *c, const char *tool,
		     const hutch_fs_options *opts, hutch_error **err)
{
	static const hutch_fs_options defaults = HUTCH_FS_OPTIONS_INIT;
	const hutch_fs_words *w;

	memset(c, 0, sizeof(*c));
	c->o = defaults;
	if (opts && opts->version != 1 && opts->version != 2)
		return hutch__error_set(
			err, HUTCH_EINVALID,
			"%s: unsupported hutch_fs_options version %u (1 or 2)",
			tool, opts->version);
	if (opts && opts->version == 1)
		memcpy(&c->o, opts, offsetof(hutch_fs_options, line_numbers));
	else if (opts)
		c->o = *opts;
	c->o.version = HUTCH_FS_OPTIONS_VERSION;
	default_words(&c->w, tool);
	if ((w = c->o.words) != NULL) {
#define WORD(m)            \
	if (w->m && *w->m) \
		c->w.m = w->m;
		WORD(tool);
		WORD(path);
		WORD(to);
		WORD(content);
		WORD(old_text);
		WORD(new_text);
		WORD(pattern);
		WORD(flag);
#undef WORD
	}
	return 0;
}

/* --- the command line ------------------------------------------------------ */

#define FS_MAX_ARGV 64

/* A text of write or edit: the caller's bytes (borrowed, never copied
 * whole) and the agent's source for it, "env:NAME" or "stdin:LEN". */
struct text {
	const char *data;
	size_t len;
	char src[48];
};

struct argv {
	const char *v[FS_MAX_ARGV];
	size_t n;
	const char *env[2]; /* texts passed in the environment */
	char *env_owned[2];
	size_t nenv;
	const struct text *in; /* texts on stdin, in the agent's order */
	size_t nin;
	char nums[6][24]; /* storage for numeric arguments */
	size_t nnums;
	int overflow;
};

static void arg(struct argv *a, const char *s)
{
	if (a->n + 1 >= FS_MAX_ARGV) {
		a->overflow = 1;
		return;
	}
	a->v[a->n++] = s;
}

static void arg_num(struct argv *a, const char *flag, uint64_t value)
{
	if (value == 0)
		return;
	if (a->nnums >= HUTCH_ARRAY_SIZE(a->nums)) {
		a->overflow = 1;
		return;
	}
	snprintf(a->nums[a->nnums], sizeof(a->nums[0]), "%" PRIu64, value);
	arg(a, flag);
	arg(a, a->nums[a->nnums++]);
}

static void argv_init(struct argv *a, const char *tool)
{
	memset(a, 0, sizeof(*a));
	/* This build's agent, the one the exec's "run" is (agent_blob.h). */
	arg(a, HUTCH_AGENT_RUN_PATH);
	arg(a, HUTCH_AGENT_CMD_FS);
	arg(a, tool);
}

/* A user string headed for the agent's command line: bounded, and never
 * mistaken for an option (the agent takes "--" before operands, but a path
 * is also checked here so the error names it). */
static int check_arg(const struct call *c, const char *what, const char *s,
		     hutch_error **err)
{
	char label[160];
	size_t len;

	snprintf(label, sizeof(label), "%s: %s", c->w.tool, what);
	if (!s)
		return hutch__error_set(err, HUTCH_EINVALID, "%s is missing",
					label);
	len = strlen(s);
	if (len == 0)
		return hutch__error_set(err, HUTCH_EINVALID, "%s is empty",
					label);
	if (len > FS_MAX_ARG)
		return hutch__error_set(
			err, HUTCH_ETOOBIG,
			"%s is too long (%zu bytes, at most %u)", label, len,
			FS_MAX_ARG);
	/* The engine would turn a bad byte into U+FFFD: another file. */
	return hutch__error_if_not_utf8(err, label, s, len);
}

/* --- handing over texts ---------------------------------------------------- */

/* "NAME=" and the base64 of the text: an environment entry the agent
 * decodes (HUTCH_AGENT_ENV_SOURCE). */
static char *env_text(const char *name, const char *data, size_t len)
{
	size_t nlen = strlen(name);
	char *out = malloc(nlen + 1 + HUTCH__B64_ENCODED_SIZE(len));

	if (!out)
		return NULL;
	memcpy(out, name, nlen);
	out[nlen] = '=';
	hutch__b64_encode(out + nlen + 1, (const unsigned char *)data, len,
			  HUTCH__B64_PAD);
	return out;
}

/*
 * Hand the texts to the agent: in the environment when they are all
 * small, else all on its stdin, "stdin:LEN" each, in the order the agent
 * reads them (write's one; edit's old, then new).  Nothing is uploaded as
 * a file: the engine's archive API extracts as root and sets modes and
 * times by path, so whatever it put in a directory the session can write
 * could be swapped for a symlink under it (doc/threat-model.md).
 * t[i].src becomes the agent's --from value.
 */
static int pass_texts(struct text *t, size_t n, struct argv *a,
		      hutch_error **err)
{
	for (size_t i = 0; i < n; i++) {
		if (t[i].len <= FS_ENV_TEXT_MAX)
			continue;
		for (size_t k = 0; k < n; k++)
			snprintf(t[k].src, sizeof(t[k].src),
				 HUTCH_AGENT_STDIN_SOURCE "%zu", t[k].len);
		a->in = t;
		a->nin = n;
		return 0;
	}
	for (size_t i = 0; i < n && i < HUTCH_ARRAY_SIZE(a->env); i++) {
		char var[32];

		snprintf(var, sizeof(var), HUTCH_AGENT_ENV_PREFIX "TEXT%zu", i);
		a->env_owned[i] = env_text(var, t[i].data, t[i].len);
		if (!a->env_owned[i])
			return hutch__error_oom(err);
		a->env[a->nenv++] = a->env_owned[i];
		snprintf(t[i].src, sizeof(t[i].src),
			 HUTCH_AGENT_ENV_SOURCE "%s", var);
	}
	return 0;
}

/* Where the agent's stdin is in the texts: on_input serves them from the
 * caller's buffers, one after the other. */
struct text_cursor {
	const struct text *t;
	size_t n, i, off;
};

/* hutch_input_cb.  Called from the exec's input thread only while a run
 * lasts; run_agent() rewinds the cursor between runs, once
 * hutch__exec_run has returned (it joins that thread first). */
static long text_input(char *buf, size_t len, void *payload)
{
	struct text_cursor *c = payload;
	size_t k;

	while (c->i < c->n && c->off == c->t[c->i].len) {
		c->i++;
		c->off = 0;
	}
	if (c->i == c->n)
		return 0;
	k = c->t[c->i].len - c->off;
	if (k > len)
		k = len;
	if (k > LONG_MAX)
		k = LONG_MAX;
	memcpy(buf, c->t[c->i].data + c->off, k);
	c->off += k;
	return (long)k;
}

/* --- running the agent ----------------------------------------------------- */

static int code_of(const char *code)
{
#define ROW(word, legacy, hutch_code) { word, legacy, hutch_code },
	static const struct {
		const char *name, *legacy;
		int code;
	} map[] = { HUTCH_AGENT_ERRORS(ROW) };
#undef ROW

	/* The legacy spelling: an agent installed by an older hutch. */
	for (size_t i = 0; code && i < HUTCH_ARRAY_SIZE(map); i++)
		if (strcmp(code, map[i].name) == 0 ||
		    (map[i].legacy && strcmp(code, map[i].legacy) == 0))
			return map[i].code;
	return HUTCH_EFAILED;
}

static const char *str_field(json_object *obj, const char *key)
{
	json_object *v;

	if (obj && json_object_object_get_ex(obj, key, &v) &&
	    json_object_is_type(v, json_type_string))
		return json_object_get_string(v);
	return NULL;
}

static uint64_t num_field(json_object *obj, const char *key)
{
	json_object *v;
	int64_t n;

	if (!obj || !json_object_object_get_ex(obj, key, &v) ||
	    !json_object_is_type(v, json_type_int))
		return 0;
	n = json_object_get_int64(v);
	return n < 0 ? 0 : (uint64_t)n;
}

/* The closest region of a failed edit, as the error's detail. */
static void nomatch_detail(hutch_error *e, json_object *error)
{
	json_object *closest;
	const char *text;
	char *detail = NULL;

	if (!json_object_object_get_ex(error, "closest", &closest))
		return;
	text = str_field(closest, "text");
	if (!text)
		return;
	if (asprintf(&detail, "closest match, from line %" PRIu64 ":\n%s",
		     num_field(closest, "line"), text) < 0)
		return;
	hutch__error_set_detail(e, detail);
	free(detail);
}

/* "lines 3, 9, 20; " for an ambiguous edit (the agent sends at most
 * 100 of them; a line shows the first 20). */
static void ambiguous_lines(char *out, size_t outsz, json_object *error)
{
	json_object *lines;
	size_t n, used = 0;

	out[0] = '\0';
	if (!json_object_object_get_ex(error, "lines", &lines) ||
	    !json_object_is_type(lines, json_type_array))
		return;
	n = json_object_array_length(lines);
	for (size_t i = 0; i < n && i < 20 && used < outsz; i++)
		used += (size_t)snprintf(
			out + used, outsz - used, "%s%" PRId64,
			i ? ", " : "lines ",
			json_object_get_int64(
				json_object_array_get_idx(lines, i)));
	if (n && used < outsz)
		snprintf(out + used, outsz - used, "%s; ",
			 n > 20 ? ", ..." : "");
}

/*
 * The agent's error as the caller's: the agent knows neither the tool's
 * name nor its options as the caller's user knows them, so the messages
 * that tell how to go on (an ambiguous or missing old text, a directory
 * that is not empty, a destination that exists) are written here from
 * the answer's members, in the caller's words.  Any other message is the
 * agent's, after the tool's name.
 */
static int agent_error(json_object *doc, const struct call *c,
		       hutch_error **err)
{
	const hutch_fs_words *w = &c->w;
	json_object *error = NULL;
	const char *message, *code;
	char lines[256];
	int rc;

	json_object_object_get_ex(doc, "error", &error);
	code = str_field(error, "code");
	message = str_field(error, "message");
	rc = code_of(code);
	if (!message)
		message = "the agent failed without saying why";
	if (rc == HUTCH_EAMBIGUOUS && num_field(error, "count") > 1 &&
	    str_field(error, "match")) {
		ambiguous_lines(lines, sizeof(lines), error);
		return hutch__error_set(
			err, rc,
			"%s: %s occurs %" PRIu64 " times in '%s' (%s%s match): "
			"add lines around it so that it occurs once, or with "
			"%s every occurrence is replaced",
			w->tool, w->old_text, num_field(error, "count"),
			c->path, lines, str_field(error, "match"), w->flag);
	}
	if (rc == HUTCH_ENOMATCH) {
		rc = hutch__error_set(err, rc, "%s: %s was not found in '%s'",
				      w->tool, w->old_text, c->path);
		if (err)
			nomatch_detail(*err, error);
		return rc;
	}
	if (code && strcmp(code, HUTCH_AGENT_ERR_NOT_EMPTY) == 0 && !c->to)
		return hutch__error_set(
			err, rc,
			"%s: '%s' is a directory that is not empty; with %s "
			"it is deleted with everything in it",
			w->tool, c->path, w->flag);
	if (code && strcmp(code, HUTCH_AGENT_ERR_EXISTS) == 0 && c->to)
		return hutch__error_set(err, rc,
					"%s: '%s' exists; with %s it is "
					"replaced",
					w->tool, c->to, w->flag);
	return hutch__error_set(err, rc, "%s: %s", w->tool, message);
}

/* An agent from an older hutch, without the "fs" command. */
static int agent_too_old(int code, const char *out, size_t len,
			 const char *errdata, size_t errlen)
{
	return code == HUTCH_AGENT_EXIT_NOEXEC ||
	       code == HUTCH_AGENT_EXIT_NOCMD ||
	       (code == HUTCH_AGENT_EXIT_USAGE && len == 0 &&
		memmem(errdata, errlen, HUTCH_AGENT_UNKNOWN_COMMAND,
		       sizeof(HUTCH_AGENT_UNKNOWN_COMMAND) - 1));
}

/* Replace the container's agent with this library's (owned as
 * agent_blob.h says) when it is really not there: the check and the
 * install are the exec's (agent_install.c), so a tool whose output merely
 * looks like a missing agent is not run twice.  1 installed, 0 the agent
 * is there (the failure was something else), or an error.  The engines
 * unlink an existing file before extracting, so the copy running as the
 * entry point keeps its old inode and nothing is interrupted. */
static int upgrade_agent(hutch_session *s, hutch_error **err)
{
	return hutch__agent_install_if_missing(s, err);
}

static int run_agent(hutch_fs_result **out, hutch_session *s,
		     const struct argv *a, const struct call *c,
		     hutch_error **err);

static void argv_release(struct argv *a)
{
	for (size_t i = 0; i < HUTCH_ARRAY_SIZE(a->env_owned); i++)
		free(a->env_owned[i]);
}

/* Run and release the environment texts. */
static int run_agent_texts(hutch_fs_result **out, hutch_session *s,
			   struct argv *a, const struct call *c,
			   hutch_error **err)
{
	int rc = run_agent(out, s, a, c, err);

	argv_release(a);
	return rc;
}

static int run_agent(hutch_fs_result **out, hutch_session *s,
		     const struct argv *a, const struct call *c,
		     hutch_error **err)
{
	const hutch_fs_options *opts = &c->o;
	const char *tool = c->w.tool;
	hutch_exec_options eo = HUTCH_EXEC_OPTIONS_INIT;
	const hutch__secrets *secrets = hutch__session_redaction(s);
	struct text_cursor cursor = { a->in, a->nin, 0, 0 };
	hutch_exec_result *res = NULL;
	hutch_fs_result *r = NULL;
	const char *data, *errdata, *why = NULL;
	size_t len, errlen;
	uint64_t total, omitted;
	int rc, prc, code, upgraded = 0;

	if (a->overflow)
		return hutch__error_set(err, HUTCH_EINVALID,
					"%s: too many arguments", tool);
	eo.argv = a->v;
	eo.argc = a->n;
	eo.capture = 1;
	eo.max_output = FS_MAX_ANSWER;
	eo.timeout_ms = opts->timeout_ms ? opts->timeout_ms :
					   HUTCH_FS_DEFAULT_TIMEOUT_MS;
	eo.cancel = opts->cancel;
	eo.env = a->env;
	eo.env_count = a->nenv;
	/*
	 * One text is a buffer: the exec sends it again whole when it runs
	 * the command again (a container gone before the command started,
	 * exec.c).  Two (edit's old and new) are served one after the other
	 * by on_input, not copied into one: the exec runs the command again
	 * only when not a byte of them was read, so the agent never gets
	 * half a text as a whole one (it reads exactly LEN bytes, and a
	 * stdin that ends first is refused).
	 */
	if (a->nin == 1) {
		eo.input = a->in[0].data;
		eo.input_len = a->in[0].len;
	} else if (a->nin) {
		eo.on_input = text_input;
		eo.input_payload = &cursor;
	}
again:
	/* Each run reads the texts from their start. */
	cursor.i = cursor.off = 0;
	/* Raw: the answer is JSON, whose strings are redacted once parsed
	 * (masking the text could break its syntax or miss a value the
	 * encoder escaped). */
	rc = hutch__exec_run(&res, s, &eo, HUTCH__EXEC_RAW, err);
	if (rc < 0)
		return hutch__error_wrap(err, rc, "%s", tool);

	if ((rc = hutch__exec_failure(res, tool, eo.timeout_ms, err)) < 0)
		goto out;
	code = hutch_exec_result_exit_code(res);
	hutch_exec_result_output(res, HUTCH_STREAM_STDOUT, &data, &len, &total,
				 &omitted);
	hutch_exec_result_output(res, HUTCH_STREAM_STDERR, &errdata, &errlen,
				 NULL, NULL);
	if (agent_too_old(code, data, len, errdata, errlen)) {
		/* A session made by an older hutch: bring its agent up to date
		 * and ask once more, with the texts whole again (the
		 * environment's as they were, stdin's from their start). */
		if (!upgraded) {
			upgraded = 1;
			if ((rc = upgrade_agent(s, err)) < 0) {
				rc = hutch__error_wrap(err, rc, "%s", tool);
				goto out;
			}
			if (rc == 1) {
				hutch_exec_result_free(res);
				res = NULL;
				goto again;
			}
		}
		rc = hutch__error_set(
			err, HUTCH_EFAILED,
			"%s: the agent in the session's container does not "
			"run file tools (exit %d): %.200s",
			tool, code, errdata);
		goto out;
	}
	if (code != HUTCH_AGENT_EXIT_OK && code != HUTCH_AGENT_EXIT_FAIL &&
	    code != HUTCH_AGENT_EXIT_USAGE) {
		why = "unexpected exit status";
		prc = -1;
	} else if (omitted) {
		why = "over its size cap";
		prc = -1;
	} else {
		/* Redacted as it is parsed: masking the raw text could break
		 * its syntax or miss a value the encoder escaped. */
		prc = hutch__fs_answer_parse(&r, data, len, secrets, &why);
	}
	if (prc == -2) {
		rc = hutch__error_oom(err);
		goto out;
	}
	if (prc < 0) {
		rc = hutch__error_set(
			err, HUTCH_EPROTO,
			"%s: the agent's answer is not understood "
			"(exit %d, %" PRIu64 " bytes: %s): %.200s",
			tool, code, total, why, errlen ? errdata : data);
		goto out;
	}
	if (code != 0 || json_object_object_get_ex(r->doc, "error", NULL)) {
		rc = agent_error(r->doc, c, err);
		goto out;
	}
	*out = r;
	r = NULL;
	rc = 0;
out:
	/* The messages above may quote the agent's raw output. */
	if (rc < 0)
		hutch__error_redact(err ? *err : NULL, secrets);
	hutch__fs_answer_free(r);
	hutch_exec_result_free(res);
	return rc;
}

/* --- the tools ------------------------------------------------------------- */

int hutch_fs_read(hutch_fs_result **out, hutch_session *s, const char *path,
		  const hutch_fs_options *opts, hutch_error **err)
{
	struct call c;
	struct argv a;
	int rc;

	if ((rc = call_init(&c, HUTCH_AGENT_FS_READ, opts, err)) < 0 ||
	    (rc = check_arg(&c, c.w.path, path, err)) < 0)
		return rc;
	c.path = path;
	argv_init(&a, HUTCH_AGENT_FS_READ);
	arg_num(&a, "--offset", c.o.offset);
	arg_num(&a, "--limit", c.o.limit);
	arg_num(&a, "--max-bytes", c.o.max_bytes);
	if (c.o.line_numbers)
		arg(&a, "--line-numbers");
	arg(&a, "--");
	arg(&a, path);
	return run_agent(out, s, &a, &c, err);
}

static int check_text(const struct call *c, const char *what, const char *data,
		      size_t len, hutch_error **err)
{
	if (!data && len)
		return hutch__error_set(err, HUTCH_EINVALID,
					"%s: %s is missing", c->w.tool, what);
	if (len > HUTCH_FS_MAX_TEXT)
		return hutch__error_set(
			err, HUTCH_ETOOBIG,
			"%s: %s is too big (%zu bytes, at most %u)", c->w.tool,
			what, len, HUTCH_FS_MAX_TEXT);
	return 0;
}

int hutch_fs_write(hutch_fs_result **out, hutch_session *s, const char *path,
		   const char *data, size_t len, const hutch_fs_options *opts,
		   hutch_error **err)
{
	struct text t[1] = { { data ? data : "", len, "" } };
	struct call c;
	struct argv a;
	int rc;

	if ((rc = call_init(&c, HUTCH_AGENT_FS_WRITE, opts, err)) < 0 ||
	    (rc = check_arg(&c, c.w.path, path, err)) < 0 ||
	    (rc = check_text(&c, c.w.content, data, len, err)) < 0)
		return rc;
	c.path = path;
	argv_init(&a, HUTCH_AGENT_FS_WRITE);
	if ((rc = pass_texts(t, 1, &a, err)) < 0) {
		argv_release(&a);
		return hutch__error_wrap(err, rc, "%s", c.w.tool);
	}
	arg(&a, "--from");
	arg(&a, t[0].src);
	arg(&a, "--");
	arg(&a, path);
	return run_agent_texts(out, s, &a, &c, err);
}

int hutch_fs_edit(hutch_fs_result **out, hutch_session *s, const char *path,
		  const char *old_text, size_t old_len, const char *new_text,
		  size_t new_len, const hutch_fs_options *opts,
		  hutch_error **err)
{
	/* The agent reads them in this order from stdin. */
	struct text t[2] = {
		{ old_text ? old_text : "", old_len, "" },
		{ new_text ? new_text : "", new_len, "" },
	};
	struct call c;
	struct argv a;
	int rc;

	if ((rc = call_init(&c, HUTCH_AGENT_FS_EDIT, opts, err)) < 0 ||
	    (rc = check_arg(&c, c.w.path, path, err)) < 0 ||
	    (rc = check_text(&c, c.w.old_text, old_text, old_len, err)) < 0 ||
	    (rc = check_text(&c, c.w.new_text, new_text, new_len, err)) < 0)
		return rc;
	c.path = path;
	/* Refused here too, to save a round trip; the agent checks again. */
	if (old_len == 0)
		return hutch__error_set(
			err, HUTCH_EINVALID,
			"%s: %s is empty: there is nothing to replace "
			"(writing the file replaces all of it)",
			c.w.tool, c.w.old_text);
	if (old_len == new_len && memcmp(old_text, new_text, old_len) == 0)
		return hutch__error_set(err, HUTCH_EINVALID,
					"%s: %s and %s are the same", c.w.tool,
					c.w.old_text, c.w.new_text);
	argv_init(&a, HUTCH_AGENT_FS_EDIT);
	if ((rc = pass_texts(t, 2, &a, err)) < 0) {
		argv_release(&a);
		return hutch__error_wrap(err, rc, "%s", c.w.tool);
	}
	arg(&a, "--old-from");
	arg(&a, t[0].src);
	arg(&a, "--new-from");
	arg(&a, t[1].src);
	if (c.o.all)
		arg(&a, "--all");
	arg(&a, "--");
	arg(&a, path);
	return run_agent_texts(out, s, &a, &c, err);
}

/* grep and find: a pattern, an optional path under the workspace. */
static int check_search(struct call *c, const char *tool, const char *pattern,
			const char *path, const hutch_fs_options *opts,
			hutch_error **err)
{
	int rc;

	if ((rc = call_init(c, tool, opts, err)) < 0 ||
	    (rc = check_arg(c, c->w.pattern, pattern, err)) < 0)
		return rc;
	c->path = path;
	return path ? check_arg(c, c->w.path, path, err) : 0;
}

/* The operands that end a search's command line. */
static void search_operands(struct argv *a, const char *pattern,
			    const char *path)
{
	arg(a, "--");
	arg(a, pattern);
	if (path)
		arg(a, path);
}

int hutch_fs_grep(hutch_fs_result **out, hutch_session *s, const char *pattern,
		  const char *path, const hutch_fs_options *opts,
		  hutch_error **err)
{
	struct call c;
	struct argv a;
	int rc;

	if ((rc = check_search(&c, HUTCH_AGENT_FS_GREP, pattern, path, opts,
			       err)) < 0)
		return rc;
	if (c.o.include_count > 16)
		return hutch__error_set(err, HUTCH_EINVALID,
					"%s: at most 16 include globs",
					c.w.tool);
	argv_init(&a, HUTCH_AGENT_FS_GREP);
	for (size_t i = 0; i < c.o.include_count; i++) {
		if ((rc = check_arg(&c, "an include glob", c.o.include[i],
				    err)) < 0)
			return rc;
		arg(&a, "--include");
		arg(&a, c.o.include[i]);
	}
	if (c.o.ignore_case)
		arg(&a, "-i");
	arg_num(&a, "--max", c.o.max);
	search_operands(&a, pattern, path);
	return run_agent(out, s, &a, &c, err);
}

int hutch_fs_find(hutch_fs_result **out, hutch_session *s, const char *glob,
		  const char *path, const hutch_fs_options *opts,
		  hutch_error **err)
{
	struct call c;
	struct argv a;
	int rc;

	if ((rc = check_search(&c, HUTCH_AGENT_FS_FIND, glob, path, opts,
			       err)) < 0)
		return rc;
	if (c.o.type && c.o.type != 'f' && c.o.type != 'd')
		return hutch__error_set(err, HUTCH_EINVALID,
					"%s: type '%c' is neither 'f' nor 'd'",
					c.w.tool, c.o.type);
	argv_init(&a, HUTCH_AGENT_FS_FIND);
	if (c.o.type) {
		arg(&a, "--type");
		arg(&a, c.o.type == 'f' ? "f" : "d");
	}
	arg_num(&a, "--max", c.o.max);
	search_operands(&a, glob, path);
	return run_agent(out, s, &a, &c, err);
}

int hutch_fs_ls(hutch_fs_result **out, hutch_session *s, const char *path,
		const hutch_fs_options *opts, hutch_error **err)
{
	struct call c;
	struct argv a;
	int rc;

	if ((rc = call_init(&c, HUTCH_AGENT_FS_LS, opts, err)) < 0 ||
	    (path && (rc = check_arg(&c, c.w.path, path, err)) < 0))
		return rc;
	c.path = path;
	argv_init(&a, HUTCH_AGENT_FS_LS);
	arg_num(&a, "--max", c.o.max);
	if (path) {
		arg(&a, "--");
		arg(&a, path);
	}
	return run_agent(out, s, &a, &c, err);
}

int hutch_fs_delete(hutch_fs_result **out, hutch_session *s, const char *path,
		    const hutch_fs_options *opts, hutch_error **err)
{
	struct call c;
	struct argv a;
	int rc;

	if ((rc = call_init(&c, HUTCH_AGENT_FS_DELETE, opts, err)) < 0 ||
	    (rc = check_arg(&c, c.w.path, path, err)) < 0)
		return rc;
	c.path = path;
	argv_init(&a, HUTCH_AGENT_FS_DELETE);
	if (c.o.recursive)
		arg(&a, "--recursive");
	arg(&a, "--");
	arg(&a, path);
	return run_agent(out, s, &a, &c, err);
}

int hutch_fs_move(hutch_fs_result **out, hutch_session *s, const char *from,
		  const char *to, const hutch_fs_options *opts,
		  hutch_error **err)
{
	struct call c;
	struct argv a;
	int rc;

	if ((rc = call_init(&c, HUTCH_AGENT_FS_MOVE, opts, err)) < 0 ||
	    (rc = check_arg(&c, c.w.path, from, err)) < 0 ||
	    (rc = check_arg(&c, c.w.to, to, err)) < 0)
		return rc;
	c.path = from;
	c.to = to;
	argv_init(&a, HUTCH_AGENT_FS_MOVE);
	if (c.o.overwrite)
		arg(&a, "--overwrite");
	arg(&a, "--");
	arg(&a, from);
	arg(&a, to);
	return run_agent(out, s, &a, &c, err);
}

/* --- results --------------------------------------------------------------- */

const char *hutch_fs_result_json(const hutch_fs_result *r)
{
	return r ? r->json : NULL;
}

int hutch_fs_result_truncated(const hutch_fs_result *r)
{
	json_object *v;

	return r && json_object_object_get_ex(r->doc, "truncated", &v) &&
	       json_object_get_boolean(v);
}

const char *hutch_fs_result_path(const hutch_fs_result *r)
{
	return r ? str_field(r->doc, "path") : NULL;
}

const char *hutch_fs_result_content(const hutch_fs_result *r, size_t *len)
{
	json_object *v;

	if (!r || !json_object_object_get_ex(r->doc, "content", &v) ||
	    !json_object_is_type(v, json_type_string)) {
		if (len)
			*len = 0;
		return NULL;
	}
	if (len)
		*len = (size_t)json_object_get_string_len(v);
	return json_object_get_string(v);
}

void hutch_fs_result_lines(const hutch_fs_result *r, uint64_t *offset,
			   uint64_t *lines, uint64_t *total_lines,
			   uint64_t *next_offset)
{
	json_object *doc = r ? r->doc : NULL;

	if (offset)
		*offset = num_field(doc, "offset");
	if (lines)
		*lines = num_field(doc, "lines");
	if (total_lines)
		*total_lines = num_field(doc, "total_lines");
	if (next_offset)
		*next_offset = num_field(doc, "next_offset");
}

void hutch_fs_result_write(const hutch_fs_result *r, uint64_t *bytes,
			   int *created)
{
	json_object *v;

	if (bytes)
		*bytes = num_field(r ? r->doc : NULL, "bytes");
	if (created)
		*created = r &&
			   json_object_object_get_ex(r->doc, "created", &v) &&
			   json_object_get_boolean(v);
}

void hutch_fs_result_edit(const hutch_fs_result *r, uint64_t *replacements,
			  const char **match)
{
	if (replacements)
		*replacements = num_field(r ? r->doc : NULL, "replacements");
	if (match)
		*match = r ? str_field(r->doc, "match") : NULL;
}

static hutch_fs_type type_of(const char *s);

void hutch_fs_result_delete(const hutch_fs_result *r, uint64_t *removed,
			    hutch_fs_type *type)
{
	json_object *doc = r ? r->doc : NULL;

	if (removed)
		*removed = num_field(doc, "removed");
	if (type)
		*type = type_of(str_field(doc, "type"));
}

void hutch_fs_result_move(const hutch_fs_result *r, const char **from,
			  hutch_fs_type *type, int *replaced)
{
	json_object *doc = r ? r->doc : NULL, *v;

	if (from)
		*from = str_field(doc, "from");
	if (type)
		*type = type_of(str_field(doc, "type"));
	if (replaced)
		*replaced = doc &&
			    json_object_object_get_ex(doc, "replaced", &v) &&
			    json_object_get_boolean(v);
}

size_t hutch_fs_result_count(const hutch_fs_result *r)
{
	return r ? r->count : 0;
}

const char *hutch_fs_type_name(hutch_fs_type type)
{
	switch (type) {
	case HUTCH_FS_FILE:
		return HUTCH_AGENT_TYPE_FILE;
	case HUTCH_FS_DIR:
		return HUTCH_AGENT_TYPE_DIR;
	case HUTCH_FS_SYMLINK:
		return HUTCH_AGENT_TYPE_SYMLINK;
	default:
		return HUTCH_AGENT_TYPE_OTHER;
	}
}

static hutch_fs_type type_of(const char *s)
{
	if (!s)
		return HUTCH_FS_OTHER;
	if (strcmp(s, HUTCH_AGENT_TYPE_FILE) == 0)
		return HUTCH_FS_FILE;
	if (strcmp(s, HUTCH_AGENT_TYPE_DIR) == 0)
		return HUTCH_FS_DIR;
	if (strcmp(s, HUTCH_AGENT_TYPE_SYMLINK) == 0)
		return HUTCH_FS_SYMLINK;
	return HUTCH_FS_OTHER;
}

int hutch_fs_result_entry(hutch_fs_entry *entry, const hutch_fs_result *r,
			  size_t i)
{
	const struct hutch__fs_entry *e;

	if (!entry || i >= hutch_fs_result_count(r))
		return HUTCH_EINVALID;
	e = &r->entries[i];
	memset(entry, 0, sizeof(*entry));
	entry->path = hutch__fs_answer_str(r, e->path, NULL);
	entry->name = hutch__fs_answer_str(r, e->name, NULL);
	entry->type = type_of(hutch__fs_answer_str(r, e->type, NULL));
	entry->size = e->size;
	entry->target = hutch__fs_answer_str(r, e->target, NULL);
	entry->line = e->line;
	entry->text = hutch__fs_answer_str(r, e->text, NULL);
	return 0;
}

void hutch_fs_result_free(hutch_fs_result *r)
{
	hutch__fs_answer_free(r);
}
