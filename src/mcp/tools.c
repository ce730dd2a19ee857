/*
 * tools.c - the MCP tools: schemas, descriptions and the library calls
 *
 * Each tool is one libhutch call, the same one the CLI makes, so the MCP
 * tools and `hutch exec/read/write/edit/grep/find/ls/rm-file/mv-file`
 * behave alike and are confined alike (the in-container agent resolves
 * every path).  What is added here is for the model: descriptions it can
 * plan with, a compact text rendering of each result, and error texts
 * that say how to recover, naming the tools and parameters as this
 * server's schemas do (hutch_fs_words).  structuredContent is the CLI's
 * --json object, unchanged.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mcp.h"

/* Per stream: the head and the tail are kept, the middle is dropped.  A
 * model's context is the scarce resource, not the pipe. */
#define EXEC_MAX_OUTPUT (32u * 1024u)
#define EXEC_DEFAULT_TIMEOUT_S 120
#define EXEC_MAX_TIMEOUT_S 3600

typedef json_object *(*tool_fn)(json_object *args, hutch_session *s,
				mcp_call_ctx *ctx);

struct mcp_tool {
	const char *name;
	const char *title;
	const char *description;
	const char *input_schema;  /* JSON text */
	const char *output_schema; /* JSON text */
	int read_only, destructive, idempotent;
	tool_fn run;
	json_object *input, *output; /* parsed by mcp_tools_init() */
};

/* --- schemas --------------------------------------------------------------- */

#define PATH_PROP(what)                                                   \
	"\"path\":{\"type\":\"string\",\"minLength\":1,\"description\":"  \
	"\"" what " Relative to /workspace (e.g. \\\"src/main.c\\\") or " \
	"absolute under /workspace.\"}"

static const char exec_in[] =
	"{\"type\":\"object\",\"properties\":{"
	"\"command\":{\"description\":\"The command: a string is run by "
	"'sh -c' (pipes, redirections, && and globs work); an array of strings "
	"is run directly, without a shell, as argv (no quoting needed).\","
	"\"anyOf\":[{\"type\":\"string\",\"minLength\":1},"
	"{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"minItems\":1}]},"
	"\"timeout\":{\"type\":\"number\",\"exclusiveMinimum\":0,\"maximum\":3600,"
	"\"description\":\"Seconds after which the command and every process it "
	"started are killed. Default 120, at most 3600.\"},"
	"\"workdir\":{\"type\":\"string\",\"minLength\":1,\"description\":"
	"\"Directory to run in: relative to /workspace or absolute. Default "
	"/workspace.\"},"
	"\"env\":{\"type\":\"object\",\"additionalProperties\":{\"type\":"
	"\"string\"},\"description\":\"Environment variables for this command "
	"only, as NAME: value; they override the session's.\"},"
	"\"background\":{\"type\":\"boolean\",\"description\":\"Start the "
	"command in the background and return at once with its process id "
	"(a server, a watcher, a long build): it runs until it ends or "
	"process_kill stops it, with no timeout. Read its output with "
	"process_output. Default false.\"},"
	"\"stdin\":{\"type\":\"string\",\"description\":\"Text given to the "
	"command as its standard input, followed by end of file. Without it "
	"the command's stdin is empty (/dev/null).\"},"
	"\"user\":{\"type\":\"string\",\"minLength\":1,\"description\":"
	"\"Run this command as USER or USER:GROUP (names or numeric ids) "
	"instead of the session's user.\"}},"
	"\"required\":[\"command\"],\"additionalProperties\":false}";

static const char exec_out[] =
	"{\"type\":\"object\",\"properties\":{"
	"\"session\":{\"type\":\"string\"},"
	"\"argv\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"
	"\"exit_code\":{\"type\":[\"integer\",\"null\"],\"description\":"
	"\"null when the command was killed (timeout) or its container died\"},"
	"\"status\":{\"type\":\"string\",\"enum\":[\"ok\",\"timeout\","
	"\"sandbox_lost\",\"cancelled\",\"started\"]},"
	"\"id\":{\"type\":\"string\",\"description\":\"background: the "
	"process's id\"},"
	"\"stdout\":{\"type\":\"string\"},\"stderr\":{\"type\":\"string\"},"
	"\"stdout_bytes\":{\"type\":\"integer\"},\"stderr_bytes\":{\"type\":\"integer\"},"
	"\"stdout_truncated\":{\"type\":\"boolean\"},"
	"\"stderr_truncated\":{\"type\":\"boolean\"},"
	"\"stdout_omitted_bytes\":{\"type\":\"integer\"},"
	"\"stderr_omitted_bytes\":{\"type\":\"integer\"},"
	"\"retried\":{\"type\":\"boolean\"},\"duration_ms\":{\"type\":\"integer\"},"
	"\"path\":{\"type\":\"string\",\"enum\":[\"agent\",\"engine\"],"
	"\"description\":\"how the command was run: the session agent's own "
	"channel, or the engine's exec\"}},"
	"\"required\":[\"session\",\"argv\",\"exit_code\",\"status\",\"stdout\","
	"\"stderr\"]}";

static const char read_in[] = "{\"type\":\"object\",\"properties\":{" PATH_PROP(
	"The file to read.") ","
			     "\"offset\":{\"type\":\"integer\",\"minimum\":1,\"description\":"
			     "\"First line to return, 1-based. Default 1.\"},"
			     "\"limit\":{\"type\":\"integer\",\"minimum\":1,\"description\":"
			     "\"Most lines to return. Default 2000.\"},"
			     "\"line_numbers\":{\"type\":\"boolean\",\"description\":"
			     "\"Start each line with its line number in the file and a tab, "
			     "as cat -n does. Default true; false returns the text alone.\"}},"
			     "\"required\":[\"path\"],\"additionalProperties\":false}";

static const char read_out[] =
	"{\"type\":\"object\",\"properties\":{"
	"\"path\":{\"type\":\"string\"},\"content\":{\"type\":\"string\"},"
	"\"offset\":{\"type\":\"integer\"},\"lines\":{\"type\":\"integer\"},"
	"\"total_lines\":{\"type\":\"integer\"},\"size\":{\"type\":\"integer\"},"
	"\"truncated\":{\"type\":\"boolean\"},\"next_offset\":{\"type\":\"integer\"},"
	"\"line_numbers\":{\"type\":\"boolean\",\"description\":\"true when "
	"each line of content starts with its number and a tab\"}},"
	"\"required\":[\"path\",\"content\",\"truncated\"]}";

static const char write_in[] = "{\"type\":\"object\",\"properties\":{" PATH_PROP(
	"The file to write.") ","
			      "\"content\":{\"type\":\"string\",\"description\":\"The whole new content "
			      "of the file.\"}},"
			      "\"required\":[\"path\",\"content\"],\"additionalProperties\":false}";

static const char write_out[] =
	"{\"type\":\"object\",\"properties\":{"
	"\"path\":{\"type\":\"string\"},\"bytes\":{\"type\":\"integer\"},"
	"\"created\":{\"type\":\"boolean\"},\"mode\":{\"type\":\"string\"}},"
	"\"required\":[\"path\",\"bytes\",\"created\"]}";

static const char edit_in[] = "{\"type\":\"object\",\"properties\":{" PATH_PROP(
	"The file to edit.") ","
			     "\"old_text\":{\"type\":\"string\",\"minLength\":1,\"description\":"
			     "\"The text to replace, copied exactly from the file (without line "
			     "numbers), with enough surrounding lines to occur only once.\"},"
			     "\"new_text\":{\"type\":\"string\",\"description\":\"The replacement "
			     "text.\"},"
			     "\"replace_all\":{\"type\":\"boolean\",\"description\":\"Replace every "
			     "occurrence instead of requiring exactly one. Default false.\"}},"
			     "\"required\":[\"path\",\"old_text\",\"new_text\"],"
			     "\"additionalProperties\":false}";

static const char edit_out[] =
	"{\"type\":\"object\",\"properties\":{"
	"\"path\":{\"type\":\"string\"},"
	"\"match\":{\"type\":\"string\",\"enum\":[\"exact\",\"whitespace\","
	"\"indentation\"]},"
	"\"replacements\":{\"type\":\"integer\"},"
	"\"lines\":{\"type\":\"array\",\"items\":{\"type\":\"integer\"}}},"
	"\"required\":[\"path\",\"match\",\"replacements\"]}";

static const char grep_in[] =
	"{\"type\":\"object\",\"properties\":{"
	"\"pattern\":{\"type\":\"string\",\"minLength\":1,\"description\":"
	"\"PCRE2 regular expression (Perl-compatible, as ripgrep): \\\\d \\\\w "
	"\\\\s \\\\b (?i) lazy quantifiers (.*?), lookaround. Matched against "
	"each line.\"},"
	"\"path\":{\"type\":\"string\",\"minLength\":1,\"description\":"
	"\"A file, or a directory searched recursively. Relative to /workspace "
	"or absolute under it. Default: the whole workspace.\"},"
	"\"include\":{\"type\":\"array\",\"items\":{\"type\":\"string\","
	"\"minLength\":1},\"description\":\"Only search files whose path matches "
	"one of these globs, e.g. [\\\"*.py\\\"] or [\\\"src/**/*.c\\\"].\"},"
	"\"ignore_case\":{\"type\":\"boolean\",\"description\":\"Match without "
	"regard to case. Default false.\"},"
	"\"max_results\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":5000,"
	"\"description\":\"Most matching lines to return. Default 200.\"}},"
	"\"required\":[\"pattern\"],\"additionalProperties\":false}";

static const char grep_out[] =
	"{\"type\":\"object\",\"properties\":{"
	"\"matches\":{\"type\":\"array\",\"items\":{\"type\":\"object\","
	"\"properties\":{\"path\":{\"type\":\"string\"},"
	"\"line\":{\"type\":\"integer\"},\"text\":{\"type\":\"string\"}},"
	"\"required\":[\"path\",\"line\",\"text\"]}},"
	"\"truncated\":{\"type\":\"boolean\"},"
	"\"files_scanned\":{\"type\":\"integer\"}},"
	"\"required\":[\"matches\",\"truncated\"]}";

static const char find_in[] =
	"{\"type\":\"object\",\"properties\":{"
	"\"pattern\":{\"type\":\"string\",\"minLength\":1,\"description\":"
	"\"Glob. Without '/' it matches names at any depth (\\\"*.c\\\"); with "
	"'/' it matches paths relative to 'path' (\\\"src/**/test_*.py\\\"). "
	"'*' and '?' stay within one path component, '**' spans several.\"},"
	"\"path\":{\"type\":\"string\",\"minLength\":1,\"description\":"
	"\"Directory to search. Relative to /workspace or absolute under it. "
	"Default: the whole workspace.\"},"
	"\"type\":{\"type\":\"string\",\"enum\":[\"file\",\"directory\"],"
	"\"description\":\"Only files or only directories. Default: both (and "
	"symlinks).\"},"
	"\"max_results\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":10000,"
	"\"description\":\"Most paths to return. Default 1000.\"}},"
	"\"required\":[\"pattern\"],\"additionalProperties\":false}";

#define ENTRY_TYPES "\"enum\":[\"file\",\"dir\",\"symlink\",\"other\"]"

static const char find_out[] =
	"{\"type\":\"object\",\"properties\":{"
	"\"entries\":{\"type\":\"array\",\"items\":{\"type\":\"object\","
	"\"properties\":{\"path\":{\"type\":\"string\"},"
	"\"type\":{\"type\":\"string\"," ENTRY_TYPES "}},"
	"\"required\":[\"path\",\"type\"]}},"
	"\"truncated\":{\"type\":\"boolean\"}},"
	"\"required\":[\"entries\",\"truncated\"]}";

static const char ls_in[] =
	"{\"type\":\"object\",\"properties\":{"
	"\"path\":{\"type\":\"string\",\"minLength\":1,\"description\":"
	"\"Directory to list. Relative to /workspace or absolute under it. "
	"Default: /workspace itself.\"}},"
	"\"additionalProperties\":false}";

static const char ls_out[] =
	"{\"type\":\"object\",\"properties\":{"
	"\"path\":{\"type\":\"string\"},"
	"\"entries\":{\"type\":\"array\",\"items\":{\"type\":\"object\","
	"\"properties\":{\"path\":{\"type\":\"string\"},"
	"\"name\":{\"type\":\"string\"},"
	"\"type\":{\"type\":\"string\"," ENTRY_TYPES "},"
	"\"size\":{\"type\":\"integer\"},\"target\":{\"type\":\"string\"}},"
	"\"required\":[\"path\",\"name\",\"type\"]}},"
	"\"truncated\":{\"type\":\"boolean\"}},"
	"\"required\":[\"path\",\"entries\",\"truncated\"]}";

static const char delete_in[] = "{\"type\":\"object\",\"properties\":{" PATH_PROP(
	"The file, symlink or directory to delete. A symlink is deleted "
	"itself, never what it points to.") ","
					    "\"recursive\":{\"type\":\"boolean\",\"description\":"
					    "\"Delete a directory with everything in it. Default false: "
					    "only an empty directory is deleted.\"}},"
					    "\"required\":[\"path\"],\"additionalProperties\":false}";

static const char delete_out[] =
	"{\"type\":\"object\",\"properties\":{"
	"\"path\":{\"type\":\"string\"},"
	"\"type\":{\"type\":\"string\"," ENTRY_TYPES "},"
	"\"removed\":{\"type\":\"integer\",\"description\":\"entries "
	"deleted, the path's own included\"}},"
	"\"required\":[\"path\",\"type\",\"removed\"]}";

static const char move_in[] =
	"{\"type\":\"object\",\"properties\":{"
	"\"from\":{\"type\":\"string\",\"minLength\":1,\"description\":"
	"\"The file, symlink or directory to move. Relative to /workspace or "
	"absolute under it.\"},"
	"\"to\":{\"type\":\"string\",\"minLength\":1,\"description\":"
	"\"Its new path (not a directory to move it into), relative to "
	"/workspace or absolute under it. Missing parent directories are "
	"made.\"},"
	"\"overwrite\":{\"type\":\"boolean\",\"description\":\"Replace "
	"what is at 'to' (a directory only by a directory, and only when it "
	"is empty). Default false: an existing 'to' is an error.\"}},"
	"\"required\":[\"from\",\"to\"],\"additionalProperties\":false}";

static const char move_out[] =
	"{\"type\":\"object\",\"properties\":{"
	"\"path\":{\"type\":\"string\",\"description\":\"the new path\"},"
	"\"from\":{\"type\":\"string\"},"
	"\"type\":{\"type\":\"string\"," ENTRY_TYPES "},"
	"\"replaced\":{\"type\":\"boolean\"}},"
	"\"required\":[\"path\",\"from\",\"type\",\"replaced\"]}";

#define PROCESS_RECORD                                                      \
	"{\"type\":\"object\",\"properties\":{"                             \
	"\"id\":{\"type\":\"string\"},"                                     \
	"\"argv\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"    \
	"\"state\":{\"type\":\"string\",\"enum\":[\"running\",\"exited\","  \
	"\"killed\",\"lost\"]},"                                            \
	"\"exit_code\":{\"type\":[\"integer\",\"null\"]},"                  \
	"\"signal\":{\"type\":[\"integer\",\"null\"]},"                     \
	"\"uid\":{\"type\":\"integer\"},"                                   \
	"\"started_ms\":{\"type\":\"integer\"},"                            \
	"\"ended_ms\":{\"type\":[\"integer\",\"null\"]},"                   \
	"\"output_bytes\":{\"type\":\"integer\"},"                          \
	"\"dropped_bytes\":{\"type\":\"integer\"}},"                        \
	"\"required\":[\"id\",\"argv\",\"state\",\"exit_code\",\"signal\"," \
	"\"started_ms\",\"output_bytes\",\"dropped_bytes\"]}"

static const char processes_in[] =
	"{\"type\":\"object\",\"properties\":{},\"additionalProperties\":false}";

static const char processes_out[] =
	"{\"type\":\"object\",\"properties\":{"
	"\"processes\":{\"type\":\"array\",\"items\":" PROCESS_RECORD "},"
	"\"skipped\":{\"type\":\"integer\"},"
	"\"truncated\":{\"type\":\"boolean\"}},"
	"\"required\":[\"processes\"]}";

#define PROCESS_ID_PROP                                                     \
	"\"id\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":64,"     \
	"\"description\":\"The process id that exec with background: true " \
	"returned (or processes lists).\"}"

static const char output_in[] =
	"{\"type\":\"object\",\"properties\":{" PROCESS_ID_PROP ","
	"\"offset\":{\"type\":\"integer\",\"minimum\":0,\"description\":"
	"\"Byte offset in the process's output (stdout and stderr together) "
	"to read from: 0 (the default) for the start, or the next_offset of "
	"the previous call to get only what is new.\"},"
	"\"max_bytes\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":262144,"
	"\"description\":\"Most bytes of output to return. Default 32768.\"}},"
	"\"required\":[\"id\"],\"additionalProperties\":false}";

static const char output_out[] =
	"{\"type\":\"object\",\"properties\":{"
	"\"id\":{\"type\":\"string\"},\"from\":{\"type\":\"integer\"},"
	"\"next\":{\"type\":\"integer\"},\"dropped\":{\"type\":\"integer\"},"
	"\"stdout\":{\"type\":\"string\"},\"stderr\":{\"type\":\"string\"},"
	"\"process\":" PROCESS_RECORD "},"
	"\"required\":[\"id\",\"from\",\"next\",\"stdout\",\"stderr\","
	"\"process\"]}";

static const char kill_in[] =
	"{\"type\":\"object\",\"properties\":{" PROCESS_ID_PROP ","
	"\"signal\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":16,"
	"\"description\":\"The signal: TERM asks the process to end, KILL "
	"(the default) ends it at once; INT, HUP, USR1... or a number.\"}},"
	"\"required\":[\"id\"],\"additionalProperties\":false}";

static const char kill_out[] =
	"{\"type\":\"object\",\"properties\":{"
	"\"id\":{\"type\":\"string\"},\"signal\":{\"type\":\"integer\"}},"
	"\"required\":[\"id\",\"signal\"]}";

/* --- small helpers --------------------------------------------------------- */

/* A text result under construction: open_memstream keeps it simple, and
 * every piece that goes in is already bounded by the library's caps. */
typedef struct {
	char *buf;
	size_t len;
	FILE *f;
} text;

static int text_open(text *t)
{
	t->buf = NULL;
	t->len = 0;
	t->f = open_memstream(&t->buf, &t->len);
	return t->f ? 0 : -1;
}

/* Close and hand the string over (NULL out of memory). */
static char *text_close(text *t)
{
	if (!t->f)
		return NULL;
	if (fclose(t->f) != 0) {
		free(t->buf);
		t->buf = NULL;
	}
	t->f = NULL;
	return t->buf;
}

static json_object *content_text(const char *s)
{
	json_object *arr = json_object_new_array(),
		    *c = json_object_new_object();

	if (!arr || !c) {
		json_object_put(arr);
		json_object_put(c);
		return NULL;
	}
	json_object_object_add(c, "type", json_object_new_string("text"));
	json_object_object_add(c, "text", json_object_new_string(s ? s : ""));
	json_object_array_add(arr, c);
	return arr;
}

/* {"content":[{"type":"text","text":TEXT}], "structuredContent":..., ...}.
 * Takes over `text_s` (freed) and `structured`. */
static json_object *make_result(char *text_s, json_object *structured,
				int is_error, const mcp_call_ctx *ctx)
{
	json_object *r = json_object_new_object(), *c;

	c = content_text(text_s ? text_s : "out of memory");
	free(text_s);
	if (!r || !c) {
		json_object_put(r);
		json_object_put(c);
		json_object_put(structured);
		return NULL;
	}
	json_object_object_add(r, "content", c);
	if (structured && ctx && ctx->structured)
		json_object_object_add(r, "structuredContent", structured);
	else
		json_object_put(structured);
	if (is_error)
		json_object_object_add(r, "isError",
				       json_object_new_boolean(1));
	return r;
}

json_object *mcp_tool_error_result(const char *msg)
{
	return make_result(strdup(msg), NULL, 1, NULL);
}

static json_object *errorf(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));
static json_object *errorf(const char *fmt, ...)
{
	va_list ap;
	char *s = NULL;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	return make_result(s, NULL, 1, NULL);
}

static json_object *parse_json(const char *s)
{
	return s ? json_tokener_parse(s) : NULL;
}

/* Optional string argument; NULL when absent. */
static const char *arg_str(json_object *args, const char *key, size_t *len)
{
	json_object *v;

	if (!json_object_object_get_ex(args, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return NULL;
	if (len)
		*len = (size_t)json_object_get_string_len(v);
	return json_object_get_string(v);
}

/* A string that goes on as a C string must hold no NUL. */
static int has_nul(json_object *args, const char *key)
{
	size_t len;
	const char *s = arg_str(args, key, &len);

	return s && strlen(s) != len;
}

static int64_t arg_int(json_object *args, const char *key, int64_t dflt)
{
	json_object *v;

	if (!json_object_object_get_ex(args, key, &v))
		return dflt;
	return json_object_get_int64(v);
}

static int arg_bool(json_object *args, const char *key)
{
	json_object *v;

	return json_object_object_get_ex(args, key, &v) &&
	       json_object_get_boolean(v);
}

/* --- errors a model can act on ---------------------------------------------- */

/* The library's message (it names the tool and quotes the path, in this
 * server's words: fs_words below), then what to do about it. */
static json_object *tool_error(hutch_error *err, const char *path)
{
	const char *msg = hutch_error_message(err),
		   *detail = hutch_error_detail(err);
	const char *file = path ? path : "the file";
	json_object *r;

	switch (hutch_error_code(err)) {
	case HUTCH_EESCAPE:
		r = errorf(
			"%s\nPaths must stay inside /workspace: give a path relative "
			"to /workspace (e.g. \"src/main.c\") or an absolute one under "
			"/workspace. '..' and symlinks that lead outside are refused. "
			"To look at files elsewhere in the container, use exec (e.g. "
			"cat).",
			msg);
		break;
	case HUTCH_ENOTFOUND:
		r = errorf(
			"%s\nCheck the path with list_dir or find; paths are "
			"relative to /workspace.",
			msg);
		break;
	case HUTCH_ENOMATCH:
		if (detail)
			r = errorf(
				"%s\nThe closest text in %s is (the line numbers on the "
				"left are not part of the file):\n%s\nCopy old_text "
				"exactly from the file, whitespace included, or read_file "
				"that region first, and try again.",
				msg, file, detail);
		else
			r = errorf(
				"%s\nNothing in %s resembles old_text. read_file it to "
				"see its current content, then try again.",
				msg, file);
		break;
	case HUTCH_EAMBIGUOUS:
		/* edit_file's says how to go on: with replace_all. */
		r = errorf("%s", msg);
		break;
	case HUTCH_ECONFLICT:
		/* From a file tool: another writer of the file. */
		if (path)
			r = errorf(
				"%s\nSomething else wrote %s at the same time and "
				"nothing was written; read_file it again and retry on "
				"what it holds now.",
				msg, file);
		else
			r = errorf("%s", msg);
		break;
	case HUTCH_ETOOBIG:
		r = errorf(
			"%s\nWork on a smaller piece: read_file with offset and "
			"limit, or exec with tools such as head, sed or split.",
			msg);
		break;
	case HUTCH_ETIMEOUT:
		r = errorf(
			"%s\nThe call took too long; narrow it (a smaller path, a "
			"more specific pattern or include globs) and try again.",
			msg);
		break;
	case HUTCH_EUNREACHABLE:
		r = errorf(
			"%s\nThe container engine that hutch uses is not reachable, "
			"so the sandbox cannot be used until it is back; tell the user.",
			msg);
		break;
	case HUTCH_EINVALID:
		r = errorf("%s\nFix the argument and try again.", msg);
		break;
	default:
		r = errorf("%s", msg);
		break;
	}
	hutch_error_free(err);
	return r;
}

/* --- exec ------------------------------------------------------------------ */

static int exec_on_output(hutch_stream stream, const char *data, size_t len,
			  void *payload)
{
	mcp_call_ctx *ctx = payload;

	(void)stream;
	if (ctx->output)
		ctx->output(ctx->payload, data, len);
	return 0;
}

/* A stream of the exec JSON under a heading, when it has anything. */
static void put_stream(FILE *f, json_object *doc, const char *name)
{
	json_object *v;
	const char *s;
	size_t n;

	if (!json_object_object_get_ex(doc, name, &v))
		return;
	s = json_object_get_string(v);
	n = (size_t)json_object_get_string_len(v);
	if (n == 0)
		return;
	fprintf(f, "--- %s ---\n", name);
	fwrite(s, 1, n, f);
	if (s[n - 1] != '\n')
		fputc('\n', f);
}

/* The command's argv from "command" (an array, or a string for sh -c),
 * borrowed from `args`.  NULL with `*r` set to the tool error (or left
 * NULL when out of memory). */
static const char **exec_argv(json_object *args, size_t *argc, json_object **r)
{
	json_object *cmd = NULL;
	const char **argv;

	json_object_object_get_ex(args, "command", &cmd);
	if (json_object_is_type(cmd, json_type_string)) {
		if (has_nul(args, "command")) {
			*r = errorf("exec: 'command' contains a NUL character");
			return NULL;
		}
		argv = calloc(3, sizeof(*argv));
		if (!argv)
			return NULL;
		argv[0] = "sh";
		argv[1] = "-c";
		argv[2] = json_object_get_string(cmd);
		*argc = 3;
		return argv;
	}
	*argc = json_object_array_length(cmd);
	argv = calloc(*argc + 1, sizeof(*argv));
	if (!argv)
		return NULL;
	for (size_t i = 0; i < *argc; i++) {
		json_object *a = json_object_array_get_idx(cmd, i);

		argv[i] = json_object_get_string(a);
		if (strlen(argv[i]) != (size_t)json_object_get_string_len(a)) {
			*r = errorf(
				"exec: 'command[%zu]' contains a NUL character",
				i);
			free(argv);
			return NULL;
		}
	}
	return argv;
}

/* The first line of the text result: how the command ended, and what the
 * model can do about it. */
static void exec_status_line(FILE *f, const hutch_exec_result *res,
			     double timeout)
{
	switch (hutch_exec_result_status(res)) {
	case HUTCH_EXEC_OK:
		fprintf(f, "exit code %d\n", hutch_exec_result_exit_code(res));
		break;
	case HUTCH_EXEC_TIMEOUT:
		fprintf(f,
			"timed out after %g s: the command and every process it "
			"started were killed. For long jobs, pass a larger timeout "
			"(at most %d s) or start the job with background: true "
			"(it keeps running after the call) and read its output "
			"with process_output.\n",
			timeout, EXEC_MAX_TIMEOUT_S);
		break;
	case HUTCH_EXEC_SANDBOX_LOST:
		fprintf(f,
			"the sandbox's container died while the command ran (out of "
			"memory, or stopped from outside); the command was not run "
			"again. The next call gets a new container; files in "
			"/workspace are kept, running processes are not.\n");
		break;
	case HUTCH_EXEC_CANCELLED:
		fprintf(f,
			"cancelled: the command and every process it started "
			"were killed.\n");
		break;
	}
}

/* The CallToolResult of a command that ran: the text a model reads, and
 * the result's JSON (`hutch exec --json`'s) as structured content. */
static json_object *exec_result(const hutch_exec_result *res,
				const char *const *argv, size_t argc,
				double timeout, mcp_call_ctx *ctx)
{
	hutch_error *err = NULL;
	json_object *doc;
	char *json = NULL;
	text t;

	if (hutch_exec_result_to_json(&json, res, ctx->session, argv, argc,
				      &err) < 0)
		return tool_error(err, NULL);
	doc = parse_json(json);
	free(json);
	if (!doc || text_open(&t) < 0) {
		json_object_put(doc);
		return NULL;
	}
	exec_status_line(t.f, res, timeout);
	put_stream(t.f, doc, "stdout");
	put_stream(t.f, doc, "stderr");
	if (hutch_exec_result_status(res) == HUTCH_EXEC_OK) {
		const char *so, *se;
		size_t sl, el;
		uint64_t tot, om;

		hutch_exec_result_output(res, HUTCH_STREAM_STDOUT, &so, &sl,
					 &tot, &om);
		hutch_exec_result_output(res, HUTCH_STREAM_STDERR, &se, &el,
					 &tot, &om);
		if (sl == 0 && el == 0)
			fprintf(t.f, "(no output)\n");
	}
	return make_result(text_close(&t), doc,
			   hutch_exec_result_status(res) != HUTCH_EXEC_OK, ctx);
}

/* The command's extra environment from "env" ({NAME: value}, strings by
 * the schema) as "NAME=value" entries, in *env (the caller frees each and
 * the array).  NULL with `*r` set to the tool error for a name the
 * kernel's environment cannot carry, or left NULL when out of memory. */
static char **exec_env(json_object *args, size_t *count, json_object **r)
{
	json_object *obj = NULL;
	char **env;
	size_t n = 0;

	*count = 0;
	if (!json_object_object_get_ex(args, "env", &obj))
		return calloc(1, sizeof(char *));
	env = calloc((size_t)json_object_object_length(obj) + 1, sizeof(*env));
	if (!env)
		return NULL;
	json_object_object_foreach(obj, name, value)
	{
		const char *v = json_object_get_string(value);

		/* A name with '=' would set another variable than the one
		 * named; a NUL would cut the entry short. */
		if (!*name || strchr(name, '=') ||
		    strlen(v) != (size_t)json_object_get_string_len(value)) {
			*r = errorf("exec: env name '%.100s' is empty, holds "
				    "'=', or its value holds a NUL character",
				    name);
			goto fail;
		}
		if (asprintf(&env[n], "%s=%s", name, v) < 0) {
			env[n] = NULL;
			goto fail;
		}
		n++;
	}
	*count = n;
	return env;
fail:
	for (size_t i = 0; i < n; i++)
		free(env[i]);
	free(env);
	return NULL;
}

static json_object *exec_background(const hutch_exec_options *o,
				    hutch_session *s, mcp_call_ctx *ctx);

static json_object *run_exec(json_object *args, hutch_session *s,
			     mcp_call_ctx *ctx)
{
	hutch_exec_options o = HUTCH_EXEC_OPTIONS_INIT;
	hutch_exec_result *res = NULL;
	hutch_error *err = NULL;
	json_object *r = NULL, *tv;
	const char **argv;
	char **env = NULL;
	size_t argc = 0, envc = 0;
	double timeout = EXEC_DEFAULT_TIMEOUT_S;

	if (!(argv = exec_argv(args, &argc, &r)))
		return r;
	if (!(env = exec_env(args, &envc, &r)))
		goto out;
	if (json_object_object_get_ex(args, "timeout", &tv))
		timeout = json_object_get_double(tv);
	o.workdir = arg_str(args, "workdir", NULL);
	if (o.workdir && has_nul(args, "workdir")) {
		r = errorf("exec: 'workdir' contains a NUL character");
		goto out;
	}
	/* As `hutch exec --workdir`, a relative workdir is under /workspace:
	 * the library resolves it. */
	/* stdin goes by its length: a "\u0000" in it is a NUL byte, given to
	 * the command as it is. */
	o.input = arg_str(args, "stdin", &o.input_len);
	o.user = arg_str(args, "user", NULL);
	if (o.user && has_nul(args, "user")) {
		r = errorf("exec: 'user' contains a NUL character");
		goto out;
	}
	o.argv = argv;
	o.argc = argc;
	o.env = (const char *const *)env;
	o.env_count = envc;
	o.timeout_ms = (uint64_t)(timeout * 1000.0);
	if (o.timeout_ms == 0)
		o.timeout_ms = 1; /* 0 would mean none */
	o.capture = 1;
	o.max_output = EXEC_MAX_OUTPUT;
	o.on_output = exec_on_output;
	o.payload = ctx;
	o.cancel = ctx->cancel;
	if (arg_bool(args, "background")) {
		/* A background process has no timeout: it runs until it
		 * ends or process_kill ends it. */
		if (json_object_object_get_ex(args, "timeout", NULL))
			r = errorf("exec: 'timeout' does not apply with "
				   "background: true; stop the process with "
				   "process_kill");
		else
			r = exec_background(&o, s, ctx);
		goto out;
	}
	if (hutch_exec_run(&res, s, &o, &err) < 0)
		r = tool_error(err, NULL);
	else
		r = exec_result(res, argv, argc, timeout, ctx);
out:
	for (size_t i = 0; i < envc; i++)
		free(env[i]);
	free(env);
	free(argv);
	hutch_exec_result_free(res);
	return r;
}

/* --- file tools ------------------------------------------------------------ */

/* The shared tail of every file tool: the result as text and as the CLI's
 * --json object. */
static json_object *fs_result(hutch_fs_result *res, char *text_s,
			      mcp_call_ctx *ctx)
{
	/* The result's JSON goes into the reply as it is: parsed into a
	 * json-c tree, a find's 100,000 entries would cost ~1 KiB each, and
	 * 16 calls run at once.  An object whose serializer writes the text
	 * (the library made it: one valid JSON object). */
	char *raw = strdup(hutch_fs_result_json(res));
	json_object *doc = raw ? json_object_new_object() : NULL;

	hutch_fs_result_free(res);
	if (!doc) {
		free(raw);
		free(text_s);
		return NULL;
	}
	json_object_set_serializer(doc, json_object_userdata_to_json_string,
				   raw, json_object_free_userdata);
	return make_result(text_s, doc, 0, ctx);
}

/*
 * The file tools' words for the library's error messages: this server's
 * tool and parameter names, so that a model reads "edit_file: old_text
 * ... with replace_all: true" and not the CLI's "edit: the old text ...
 * with --all".  A member left NULL is one the tool has no parameter for.
 */
static const struct {
	const char *tool;
	hutch_fs_words words;
} fs_words[] = {
	{ "read_file", { .tool = "read_file", .path = "path" } },
	{ "write_file",
	  { .tool = "write_file", .path = "path", .content = "content" } },
	{ "edit_file",
	  { .tool = "edit_file",
	    .path = "path",
	    .old_text = "old_text",
	    .new_text = "new_text",
	    .flag = "replace_all: true" } },
	{ "grep", { .tool = "grep", .path = "path", .pattern = "pattern" } },
	{ "find", { .tool = "find", .path = "path", .pattern = "pattern" } },
	{ "list_dir", { .tool = "list_dir", .path = "path" } },
	{ "delete_file",
	  { .tool = "delete_file", .path = "path", .flag = "recursive: true" } },
	{ "move_file",
	  { .tool = "move_file",
	    .path = "from",
	    .to = "to",
	    .flag = "overwrite: true" } },
};

static int fs_options(hutch_fs_options *o, mcp_call_ctx *ctx)
{
	o->cancel = ctx->cancel;
	for (size_t i = 0;
	     ctx->tool && i < sizeof(fs_words) / sizeof(*fs_words); i++)
		if (strcmp(fs_words[i].tool, ctx->tool) == 0)
			o->words = &fs_words[i].words;
	return 0;
}

#define NUL_CHECK(tool, key)                                              \
	do {                                                              \
		if (has_nul(args, key))                                   \
			return errorf(tool ": '" key                      \
					   "' contains a NUL character"); \
	} while (0)

static json_object *run_read(json_object *args, hutch_session *s,
			     mcp_call_ctx *ctx)
{
	hutch_fs_options o = HUTCH_FS_OPTIONS_INIT;
	hutch_fs_result *res = NULL;
	hutch_error *err = NULL;
	const char *path = arg_str(args, "path", NULL), *content;
	uint64_t off, lines, total, next;
	size_t len;
	text t;

	NUL_CHECK("read_file", "path");
	fs_options(&o, ctx);
	o.offset = (uint64_t)arg_int(args, "offset", 0);
	o.limit = (uint64_t)arg_int(args, "limit", 0);
	/* On unless turned off: grep's line numbers then lead straight to
	 * the lines to edit. */
	o.line_numbers =
		!json_object_object_get_ex(args, "line_numbers", NULL) ||
		arg_bool(args, "line_numbers");
	if (hutch_fs_read(&res, s, path, &o, &err) < 0)
		return tool_error(err, path);
	if (text_open(&t) < 0) {
		hutch_fs_result_free(res);
		return NULL;
	}
	content = hutch_fs_result_content(res, &len);
	hutch_fs_result_lines(res, &off, &lines, &total, &next);
	if (content && len)
		fwrite(content, 1, len, t.f);
	if (total == 0)
		fprintf(t.f, "(%s is empty)\n", hutch_fs_result_path(res));
	else if (lines == 0)
		fprintf(t.f,
			"(no lines at offset %" PRIu64 ": %s has %" PRIu64
			" lines)\n",
			off, hutch_fs_result_path(res), total);
	else if (hutch_fs_result_truncated(res) && next)
		fprintf(t.f,
			"%s[%s: lines %" PRIu64 "-%" PRIu64 " of %" PRIu64
			" shown; call read_file with offset %" PRIu64
			" to read on]\n",
			len && content[len - 1] != '\n' ? "\n" : "",
			hutch_fs_result_path(res), off, off + lines - 1, total,
			next);
	return fs_result(res, text_close(&t), ctx);
}

static json_object *run_write(json_object *args, hutch_session *s,
			      mcp_call_ctx *ctx)
{
	hutch_fs_options o = HUTCH_FS_OPTIONS_INIT;
	hutch_fs_result *res = NULL;
	hutch_error *err = NULL;
	const char *path = arg_str(args, "path", NULL), *content;
	size_t clen = 0;
	uint64_t bytes;
	int created;
	char *msg = NULL;

	NUL_CHECK("write_file", "path");
	content = arg_str(args, "content", &clen);
	fs_options(&o, ctx);
	if (hutch_fs_write(&res, s, path, content, clen, &o, &err) < 0)
		return tool_error(err, path);
	hutch_fs_result_write(res, &bytes, &created);
	if (asprintf(&msg, "wrote %" PRIu64 " bytes to %s%s", bytes,
		     hutch_fs_result_path(res),
		     created ? " (new file)" : "") < 0)
		msg = NULL;
	return fs_result(res, msg, ctx);
}

static json_object *run_edit(json_object *args, hutch_session *s,
			     mcp_call_ctx *ctx)
{
	hutch_fs_options o = HUTCH_FS_OPTIONS_INIT;
	hutch_fs_result *res = NULL;
	hutch_error *err = NULL;
	const char *path = arg_str(args, "path", NULL), *old_t, *new_t, *match;
	size_t olen = 0, nlen = 0;
	uint64_t n;
	char *msg = NULL;

	NUL_CHECK("edit_file", "path");
	old_t = arg_str(args, "old_text", &olen);
	new_t = arg_str(args, "new_text", &nlen);
	fs_options(&o, ctx);
	o.all = arg_bool(args, "replace_all");
	if (hutch_fs_edit(&res, s, path, old_t, olen, new_t, nlen, &o, &err) <
	    0)
		return tool_error(err, path);
	hutch_fs_result_edit(res, &n, &match);
	if (asprintf(
		    &msg, "%s: %" PRIu64 " replacement%s (%s match)%s",
		    hutch_fs_result_path(res), n, n == 1 ? "" : "s",
		    match ? match : "?",
		    match && strcmp(match, "indentation") == 0 ?
			    "; the new text was re-indented to the file's indentation" :
			    "") < 0)
		msg = NULL;
	return fs_result(res, msg, ctx);
}

static json_object *run_delete(json_object *args, hutch_session *s,
			       mcp_call_ctx *ctx)
{
	hutch_fs_options o = HUTCH_FS_OPTIONS_INIT;
	hutch_fs_result *res = NULL;
	hutch_error *err = NULL;
	const char *path = arg_str(args, "path", NULL);
	hutch_fs_type type;
	uint64_t removed;
	char *msg = NULL, *own = NULL;

	NUL_CHECK("delete_file", "path");
	fs_options(&o, ctx);
	o.recursive = arg_bool(args, "recursive");
	/* No path for tool_error: its "conflict" is a directory that is
	 * not empty, not another writer. */
	if (hutch_fs_delete(&res, s, path, &o, &err) < 0)
		return tool_error(err, NULL);
	hutch_fs_result_delete(res, &removed, &type);
	if (asprintf(&msg, "deleted %s %s%s", hutch_fs_type_name(type),
		     hutch__utf8_shown(hutch_fs_result_path(res), 0, &own),
		     type == HUTCH_FS_DIR && removed > 1 ?
			     " and everything in it" :
			     "") < 0)
		msg = NULL;
	free(own);
	return fs_result(res, msg, ctx);
}

static json_object *run_move(json_object *args, hutch_session *s,
			     mcp_call_ctx *ctx)
{
	hutch_fs_options o = HUTCH_FS_OPTIONS_INIT;
	hutch_fs_result *res = NULL;
	hutch_error *err = NULL;
	const char *from = arg_str(args, "from", NULL),
		   *to = arg_str(args, "to", NULL), *src;
	hutch_fs_type type;
	int replaced;
	char *msg = NULL, *own[2] = { NULL, NULL };

	NUL_CHECK("move_file", "from");
	NUL_CHECK("move_file", "to");
	fs_options(&o, ctx);
	o.overwrite = arg_bool(args, "overwrite");
	if (hutch_fs_move(&res, s, from, to, &o, &err) < 0)
		return tool_error(err, NULL);
	hutch_fs_result_move(res, &src, &type, &replaced);
	if (asprintf(&msg, "moved %s %s to %s%s", hutch_fs_type_name(type),
		     hutch__utf8_shown(src ? src : "?", 0, &own[0]),
		     hutch__utf8_shown(hutch_fs_result_path(res), 0, &own[1]),
		     replaced ? ", replacing what was there" : "") < 0)
		msg = NULL;
	free(own[0]);
	free(own[1]);
	return fs_result(res, msg, ctx);
}

/* grep, find and list_dir print their entries one a line. */
static char *entries_text(const hutch_fs_result *res, int tool)
{
	size_t n = hutch_fs_result_count(res);
	hutch_fs_entry e;
	text t;

	if (text_open(&t) < 0)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		char *own[3];
		const char *name, *target, *line;

		if (hutch_fs_result_entry(&e, res, i) < 0)
			break;
		/* Names come from the sandbox: a newline in one would read as
		 * two entries.  structuredContent keeps them exact. */
		name = hutch__utf8_shown(e.name ? e.name : e.path, 0, &own[0]);
		target = hutch__utf8_shown(e.target ? e.target : "?", 0,
					   &own[1]);
		line = hutch__utf8_shown(e.text ? e.text : "", HUTCH__ESC_TEXT,
					 &own[2]);
		if (tool == 'g')
			fprintf(t.f, "%s:%" PRIu64 ":%s\n", name, e.line, line);
		else if (tool == 'f')
			fprintf(t.f, "%s%s\n", name,
				e.type == HUTCH_FS_DIR ? "/" : "");
		else if (e.type == HUTCH_FS_SYMLINK)
			fprintf(t.f, "%-7s %10" PRIu64 "  %s -> %s\n",
				hutch_fs_type_name(e.type), e.size, name,
				target);
		else
			fprintf(t.f, "%-7s %10" PRIu64 "  %s%s\n",
				hutch_fs_type_name(e.type), e.size, name,
				e.type == HUTCH_FS_DIR ? "/" : "");
		for (size_t k = 0; k < 3; k++)
			free(own[k]);
	}
	if (n == 0)
		fprintf(t.f, "%s\n",
			tool == 'g' ? "no matches" :
			tool == 'f' ? "nothing found" :
				      "(empty directory)");
	if (hutch_fs_result_truncated(res))
		fprintf(t.f, "[stopped after %zu %s; narrow the search%s]\n", n,
			tool == 'g' ? "matches" : "entries",
			tool == 'l' ? "" : " or raise max_results");
	return text_close(&t);
}

static json_object *run_grep(json_object *args, hutch_session *s,
			     mcp_call_ctx *ctx)
{
	hutch_fs_options o = HUTCH_FS_OPTIONS_INIT;
	hutch_fs_result *res = NULL;
	hutch_error *err = NULL;
	const char *pattern = arg_str(args, "pattern", NULL);
	const char *path = arg_str(args, "path", NULL);
	const char **inc = NULL;
	json_object *iv;
	json_object *r;

	NUL_CHECK("grep", "pattern");
	NUL_CHECK("grep", "path");
	fs_options(&o, ctx);
	o.ignore_case = arg_bool(args, "ignore_case");
	o.max = (uint64_t)arg_int(args, "max_results", 0);
	if (json_object_object_get_ex(args, "include", &iv)) {
		size_t n = json_object_array_length(iv);

		inc = calloc(n + 1, sizeof(*inc));
		if (!inc)
			return NULL;
		for (size_t i = 0; i < n; i++) {
			json_object *g = json_object_array_get_idx(iv, i);

			inc[i] = json_object_get_string(g);
			if (strlen(inc[i]) !=
			    (size_t)json_object_get_string_len(g)) {
				free(inc);
				return errorf(
					"grep: 'include[%zu]' contains a NUL character",
					i);
			}
		}
		o.include = inc;
		o.include_count = n;
	}
	if (hutch_fs_grep(&res, s, pattern, path, &o, &err) < 0)
		r = tool_error(err, path);
	else
		r = fs_result(res, entries_text(res, 'g'), ctx);
	free(inc);
	return r;
}

static json_object *run_find(json_object *args, hutch_session *s,
			     mcp_call_ctx *ctx)
{
	hutch_fs_options o = HUTCH_FS_OPTIONS_INIT;
	hutch_fs_result *res = NULL;
	hutch_error *err = NULL;
	const char *pattern = arg_str(args, "pattern", NULL);
	const char *path = arg_str(args, "path", NULL);
	const char *type = arg_str(args, "type", NULL);

	NUL_CHECK("find", "pattern");
	NUL_CHECK("find", "path");
	fs_options(&o, ctx);
	o.max = (uint64_t)arg_int(args, "max_results", 0);
	if (type)
		o.type = strcmp(type, "directory") == 0 ? 'd' : 'f';
	if (hutch_fs_find(&res, s, pattern, path, &o, &err) < 0)
		return tool_error(err, path);
	return fs_result(res, entries_text(res, 'f'), ctx);
}

static json_object *run_ls(json_object *args, hutch_session *s,
			   mcp_call_ctx *ctx)
{
	hutch_fs_options o = HUTCH_FS_OPTIONS_INIT;
	hutch_fs_result *res = NULL;
	hutch_error *err = NULL;
	const char *path = arg_str(args, "path", NULL);

	NUL_CHECK("list_dir", "path");
	fs_options(&o, ctx);
	if (hutch_fs_ls(&res, s, path, &o, &err) < 0)
		return tool_error(err, path);
	return fs_result(res, entries_text(res, 'l'), ctx);
}

/* --- background processes -------------------------------------------------- */

/* Bytes of a process's output one process_output call returns by
 * default: as exec's, a model's context is the scarce resource. */
#define PROCESS_OUTPUT_DEFAULT (32u * 1024u)
#define PROCESS_OUTPUT_MAX (256u * 1024u)

/* A process tool's error: an unknown id is recovered from with the list,
 * not with the file tools. */
static json_object *process_error(hutch_error *err)
{
	json_object *r;

	if (hutch_error_code(err) != HUTCH_ENOTFOUND)
		return tool_error(err, NULL);
	r = errorf("%s\nCall processes to see the ids of the background "
		   "processes (the records of the 64 most recent ended ones "
		   "are kept).",
		   hutch_error_message(err));
	hutch_error_free(err);
	return r;
}

/* exec with background: true. */
static json_object *exec_background(const hutch_exec_options *o,
				    hutch_session *s, mcp_call_ctx *ctx)
{
	char id[HUTCH_PROCESS_ID_SIZE];
	hutch_error *err = NULL;
	json_object *doc, *av;
	char *msg = NULL;

	if (hutch_process_start(id, sizeof(id), s, o, &err) < 0)
		return tool_error(err, NULL);
	doc = json_object_new_object();
	av = json_object_new_array();
	if (!doc || !av) {
		json_object_put(doc);
		json_object_put(av);
		return NULL;
	}
	for (size_t i = 0; i < o->argc; i++)
		json_object_array_add(av, json_object_new_string(o->argv[i]));
	json_object_object_add(doc, "session",
			       json_object_new_string(ctx->session));
	json_object_object_add(doc, "argv", av);
	json_object_object_add(doc, "exit_code", NULL);
	json_object_object_add(doc, "status",
			       json_object_new_string("started"));
	json_object_object_add(doc, "id", json_object_new_string(id));
	json_object_object_add(doc, "stdout", json_object_new_string(""));
	json_object_object_add(doc, "stderr", json_object_new_string(""));
	if (asprintf(&msg,
		     "started in the background as process %s; it keeps "
		     "running after this call. Read its output with "
		     "process_output {\"id\":\"%s\"} (pass the next_offset it "
		     "returns to get only what is new), stop it with "
		     "process_kill, list processes with processes.",
		     id, id) < 0)
		msg = NULL;
	return make_result(msg, doc, 0, ctx);
}

/* The result's JSON from the library, as structured content. */
static json_object *raw_json(char *json)
{
	json_object *doc = json ? json_object_new_object() : NULL;

	if (!doc) {
		free(json);
		return NULL;
	}
	json_object_set_serializer(doc, json_object_userdata_to_json_string,
				   json, json_object_free_userdata);
	return doc;
}

static void process_line(FILE *f, const hutch_process *p)
{
	time_t t = (time_t)(hutch_process_started_ms(p) / 1000);
	char when[32] = "?";
	struct tm tm;

	if (gmtime_r(&t, &tm))
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm);
	fprintf(f, "%s  ", hutch_process_id(p));
	switch (hutch_process_get_state(p)) {
	case HUTCH_PROCESS_EXITED:
		fprintf(f, "exited with code %d", hutch_process_exit_code(p));
		break;
	case HUTCH_PROCESS_KILLED:
		fprintf(f, "killed by signal %d", hutch_process_signal(p));
		break;
	default:
		fprintf(f, "%s",
			hutch_process_state_name(hutch_process_get_state(p)));
	}
	fprintf(f, "  started %s  %" PRIu64 " bytes of output  ", when,
		hutch_process_output_bytes(p));
	for (size_t i = 0; i < hutch_process_argc(p); i++) {
		char *own = NULL;

		fprintf(f, "%s%s", i ? " " : "",
			hutch__utf8_shown(hutch_process_arg(p, i), 0, &own));
		free(own);
	}
}

static json_object *run_processes(json_object *args, hutch_session *s,
				  mcp_call_ctx *ctx)
{
	hutch_process_list *l = NULL;
	hutch_error *err = NULL;
	char *json = NULL;
	size_t n;
	text t;

	(void)args;
	if (hutch_process_list_get(&l, s, &err) < 0)
		return tool_error(err, NULL);
	if (hutch_process_list_to_json(&json, l, &err) < 0 ||
	    text_open(&t) < 0) {
		hutch_process_list_free(l);
		free(json);
		return err ? tool_error(err, NULL) : NULL;
	}
	n = hutch_process_list_count(l);
	for (size_t i = 0; i < n; i++) {
		process_line(t.f, hutch_process_list_at(l, i));
		fputc('\n', t.f);
	}
	if (n == 0)
		fprintf(t.f, "no background processes (exec with background: "
			     "true starts one)\n");
	if (hutch_process_list_skipped(l))
		fprintf(t.f,
			"[%zu records were not well formed and are not "
			"shown]\n",
			hutch_process_list_skipped(l));
	if (hutch_process_list_truncated(l))
		fprintf(t.f, "[only the first %zu processes are listed]\n", n);
	hutch_process_list_free(l);
	return make_result(text_close(&t), raw_json(json), 0, ctx);
}

static json_object *run_process_output(json_object *args, hutch_session *s,
				       mcp_call_ctx *ctx)
{
	hutch_process_output *o = NULL;
	hutch_error *err = NULL;
	const char *id = arg_str(args, "id", NULL), *out, *errs;
	const hutch_process *p;
	int64_t offset = arg_int(args, "offset", 0),
		max = arg_int(args, "max_bytes", PROCESS_OUTPUT_DEFAULT);
	size_t ol, el;
	char *json = NULL;
	text t;

	NUL_CHECK("process_output", "id");
	if (offset < 0 || max < 1 || max > (int64_t)PROCESS_OUTPUT_MAX)
		return errorf("process_output: offset must be 0 or more and "
			      "max_bytes 1 to %u",
			      PROCESS_OUTPUT_MAX);
	if (hutch_process_read(&o, s, id, (uint64_t)offset, (size_t)max, &err) <
	    0)
		return process_error(err);
	if (hutch_process_output_to_json(&json, o, &err) < 0 ||
	    text_open(&t) < 0) {
		hutch_process_output_free(o);
		free(json);
		return err ? tool_error(err, NULL) : NULL;
	}
	p = hutch_process_output_process(o);
	hutch_process_output_text(o, HUTCH_STREAM_STDOUT, &out, &ol);
	hutch_process_output_text(o, HUTCH_STREAM_STDERR, &errs, &el);
	if (hutch_process_output_dropped(o))
		fprintf(t.f,
			"[%" PRIu64 " bytes before offset %" PRIu64
			" were dropped: each process keeps its last %u MiB]\n",
			hutch_process_output_dropped(o),
			hutch_process_output_from(o),
			HUTCH_PROCESS_LOG_KEEP >> 20);
	if (ol) {
		fprintf(t.f, "--- stdout ---\n");
		fwrite(out, 1, ol, t.f);
		if (out[ol - 1] != '\n')
			fputc('\n', t.f);
	}
	if (el) {
		fprintf(t.f, "--- stderr ---\n");
		fwrite(errs, 1, el, t.f);
		if (errs[el - 1] != '\n')
			fputc('\n', t.f);
	}
	if (!ol && !el)
		fprintf(t.f, "(no new output)\n");
	fprintf(t.f, "[process ");
	process_line(t.f, p);
	if (hutch_process_output_next(o) < hutch_process_output_bytes(p))
		fprintf(t.f,
			"; more output is there: call process_output with "
			"offset %" PRIu64 "]\n",
			hutch_process_output_next(o));
	else if (hutch_process_get_state(p) == HUTCH_PROCESS_RUNNING)
		fprintf(t.f,
			"; next_offset %" PRIu64 ": call process_output with "
			"that offset later for what is new]\n",
			hutch_process_output_next(o));
	else
		fprintf(t.f, "; all of its output has been read]\n");
	hutch_process_output_free(o);
	return make_result(text_close(&t), raw_json(json), 0, ctx);
}

static json_object *run_process_kill(json_object *args, hutch_session *s,
				     mcp_call_ctx *ctx)
{
	const char *id = arg_str(args, "id", NULL),
		   *name = arg_str(args, "signal", NULL);
	hutch_error *err = NULL;
	json_object *doc;
	int sig = name ? hutch_process_signal_parse(name) : 9;
	char *msg = NULL;

	NUL_CHECK("process_kill", "id");
	if (sig < 0)
		return errorf("process_kill: unknown signal '%.20s': use a "
			      "name such as TERM, INT, KILL, or a number "
			      "from 1 to 64",
			      name);
	if (hutch_process_kill(s, id, sig, &err) < 0)
		return process_error(err);
	doc = json_object_new_object();
	if (!doc)
		return NULL;
	json_object_object_add(doc, "id", json_object_new_string(id));
	json_object_object_add(doc, "signal", json_object_new_int(sig));
	if (asprintf(&msg,
		     "sent signal %d to process %s and every process it "
		     "started%s",
		     sig, id,
		     sig == 9 ? "; they are gone" :
				"; processes can choose to ignore it (KILL "
				"cannot be)") < 0)
		msg = NULL;
	return make_result(msg, doc, 0, ctx);
}

/* --- the table ------------------------------------------------------------- */

static mcp_tool tools[] = {
	{ "exec", "Run a command",
	  "Run a command in the sandbox: a persistent Linux container without "
	  "network access, whose working directory /workspace keeps its files "
	  "between calls. 'command' is a shell string (run by sh -c) or an argv "
	  "array (run directly). Returns the exit code, stdout and stderr; a "
	  "non-zero exit code is a normal result for you to read, not a failure "
	  "of the tool. Each stream is cut to its first and last 16 KiB when it "
	  "is longer. The command and every process it started are killed after "
	  "'timeout' seconds (default 120). With 'background': true the "
	  "command starts in the background and the call returns its process "
	  "id at once: for servers and long jobs, read with process_output, "
	  "stopped with process_kill. Use the file tools rather than cat, sed or find for "
	  "reading, editing and searching files.",
	  exec_in, exec_out, 0, 1, 0, run_exec, NULL, NULL },
	{ "read_file", "Read a file",
	  "Read a text file in /workspace. Returns up to 'limit' lines (default "
	  "2000) from line 'offset' (1-based, default 1); a longer file says "
	  "which offset to read next. Each line starts with its line number in "
	  "the file and a tab (as cat -n), the numbers grep gives: they are not "
	  "part of the file, leave them out of edit_file's old_text "
	  "('line_numbers': false returns the text alone). Binary files are "
	  "refused.",
	  read_in, read_out, 1, 0, 1, run_read, NULL, NULL },
	{ "write_file", "Write a file",
	  "Create or overwrite a file in /workspace with 'content', creating "
	  "missing parent directories. The file is replaced atomically and an "
	  "existing file keeps its permissions. To change part of a file, use "
	  "edit_file.",
	  write_in, write_out, 0, 1, 1, run_write, NULL, NULL },
	{ "edit_file", "Edit a file",
	  "Replace 'old_text' with 'new_text' in a file in /workspace. "
	  "'old_text' must occur exactly once (include surrounding lines to make "
	  "it unique) unless 'replace_all' is true. An exact match is tried "
	  "first, then one that ignores trailing whitespace, then one that also "
	  "ignores indentation. When nothing matches, the error shows the "
	  "closest region of the file. The rest of the file is kept byte for "
	  "byte.",
	  edit_in, edit_out, 0, 1, 0, run_edit, NULL, NULL },
	{ "grep", "Search file contents",
	  "Search file contents in /workspace with a regular expression, in one "
	  "file or recursively in a directory (default: the whole workspace). "
	  "The syntax is PCRE2 (Perl-compatible, as ripgrep): \\d \\w \\s \\b "
	  "(?i) lazy quantifiers (.*?), lookaround; Unicode-aware. Returns "
	  "matching lines as path:line:text, paths relative to /workspace. "
	  "Binary files and .git directories are skipped; symlinks are not "
	  "followed. A pattern that backtracks too much, such as (a+)+$, ends "
	  "with an error.",
	  grep_in, grep_out, 1, 0, 1, run_grep, NULL, NULL },
	{ "find", "Find files by name",
	  "Find files and directories in /workspace whose name or path matches "
	  "a glob. Returns paths relative to /workspace, directories with a "
	  "trailing '/'. .git directories are skipped; symlinks are not "
	  "followed.",
	  find_in, find_out, 1, 0, 1, run_find, NULL, NULL },
	{ "list_dir", "List a directory",
	  "List one directory in /workspace (default: /workspace itself), "
	  "sorted by name: each entry's type, size and name, with a symlink's "
	  "target. Not recursive: use find for that.",
	  ls_in, ls_out, 1, 0, 1, run_ls, NULL, NULL },
	{ "delete_file", "Delete a file or directory",
	  "Delete a file, symlink or empty directory in /workspace; with "
	  "'recursive': true also a directory and everything in it. A symlink "
	  "is deleted itself, never what it points to, and nothing outside "
	  "/workspace is reached. The workspace itself cannot be deleted.",
	  delete_in, delete_out, 0, 1, 1, run_delete, NULL, NULL },
	{ "move_file", "Move or rename a file or directory",
	  "Move or rename a file, symlink or directory within /workspace: "
	  "'from' gets the new path 'to' (a full path, not a directory to "
	  "move into), creating missing parent directories. An existing 'to' "
	  "is an error unless 'overwrite' is true. A symlink moves as a link.",
	  move_in, move_out, 0, 1, 0, run_move, NULL, NULL },
	{ "processes", "List background processes",
	  "List the processes started with exec background: true in this "
	  "sandbox, with each one's id, state (running, exited with its code, "
	  "killed by a signal), start time, output size and command.",
	  processes_in, processes_out, 1, 0, 1, run_processes, NULL, NULL },
	{ "process_output", "Read a background process's output",
	  "Read the output (stdout and stderr) of a background process from a "
	  "byte offset, without waiting. Returns the text, the process's state "
	  "and next_offset: pass it as offset to the next call to get only "
	  "what is new. Each process keeps its last 8 MiB of output; bytes "
	  "older than that are dropped and the result says how many.",
	  output_in, output_out, 1, 0, 1, run_process_output, NULL, NULL },
	{ "process_kill", "Stop a background process",
	  "Send a signal (default KILL) to a background process and every "
	  "process it started. Its output stays readable with process_output.",
	  kill_in, kill_out, 0, 1, 1, run_process_kill, NULL, NULL },
};

#define NTOOLS (sizeof(tools) / sizeof(tools[0]))

size_t mcp_tool_count(void)
{
	return NTOOLS;
}

const mcp_tool *mcp_tool_at(size_t i)
{
	return i < NTOOLS ? &tools[i] : NULL;
}

const mcp_tool *mcp_tool_find(const char *name)
{
	for (size_t i = 0; name && i < NTOOLS; i++)
		if (strcmp(tools[i].name, name) == 0)
			return &tools[i];
	return NULL;
}

const char *mcp_tool_name(const mcp_tool *t)
{
	return t->name;
}

json_object *mcp_tool_input_schema(const mcp_tool *t)
{
	return t->input;
}

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static int init_rc;

static void init_tools(void)
{
	for (size_t i = 0; i < NTOOLS; i++) {
		tools[i].input = json_tokener_parse(tools[i].input_schema);
		tools[i].output = json_tokener_parse(tools[i].output_schema);
		if (!tools[i].input || !tools[i].output) {
			fprintf(stderr,
				"hutch mcp: the schema of tool '%s' does not parse\n",
				tools[i].name);
			init_rc = -1;
		}
	}
}

/* Once per process: servers in one process (the unit tests run several)
 * share the parsed schemas, which are never changed after this. */
int mcp_tools_init(void)
{
	pthread_once(&init_once, init_tools);
	return init_rc;
}

json_object *mcp_tools_list(const char *version)
{
	json_object *res = json_object_new_object(),
		    *arr = json_object_new_array();

	if (!res || !arr) {
		json_object_put(res);
		json_object_put(arr);
		return NULL;
	}
	for (size_t i = 0; i < NTOOLS; i++) {
		const mcp_tool *t = &tools[i];
		json_object *o = json_object_new_object();

		if (!o)
			break;
		json_object_object_add(o, "name",
				       json_object_new_string(t->name));
		json_object_object_add(o, "description",
				       json_object_new_string(t->description));
		json_object_object_add(o, "inputSchema",
				       json_object_get(t->input));
		/* title and outputSchema came with 2025-06-18, annotations with
		 * 2025-03-26: an older client gets the tool as it knew tools. */
		if (mcp_version_has_structured(version)) {
			json_object_object_add(
				o, "title", json_object_new_string(t->title));
			json_object_object_add(o, "outputSchema",
					       json_object_get(t->output));
		}
		if (mcp_version_has_annotations(version)) {
			json_object *a = json_object_new_object();

			if (a) {
				json_object_object_add(
					a, "title",
					json_object_new_string(t->title));
				json_object_object_add(
					a, "readOnlyHint",
					json_object_new_boolean(t->read_only));
				if (!t->read_only) {
					json_object_object_add(
						a, "destructiveHint",
						json_object_new_boolean(
							t->destructive));
					json_object_object_add(
						a, "idempotentHint",
						json_object_new_boolean(
							t->idempotent));
				}
				/* The sandbox has no network. */
				json_object_object_add(
					a, "openWorldHint",
					json_object_new_boolean(0));
				json_object_object_add(o, "annotations", a);
			}
		}
		json_object_array_add(arr, o);
	}
	json_object_object_add(res, "tools", arr);
	return res;
}

json_object *mcp_tool_call(const mcp_tool *t, json_object *args,
			   mcp_call_ctx *ctx)
{
	hutch_engine *engine = NULL;
	hutch_session *s = NULL;
	hutch_error *err = NULL;
	json_object *r;

	if (ctx->engine(&engine, ctx->server, &err) < 0)
		return tool_error(err, NULL);
	/* A handle per call: handles are single-threaded, opening one makes
	 * no request, and the library makes concurrent first calls agree on
	 * one container. */
	if (hutch_session_open(&s, engine, ctx->session, ctx->sopts, &err) < 0)
		return tool_error(err, NULL);
	ctx->tool = t->name;
	r = t->run(args, s, ctx);
	hutch_session_free(s);
	return r;
}
