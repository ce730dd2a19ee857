/*
 * mcp.h - `hutch mcp`: a Model Context Protocol server over stdio
 *
 * Three parts, one file each:
 *   jsonrpc.c  the wire: a bounded line reader, JSON-RPC 2.0 message
 *              classification, error replies, protocol version negotiation
 *              and the small JSON Schema checker for tool arguments.  Pure
 *              (bytes in, JSON objects out) apart from read(2) and poll(2).
 *   tools.c    the tool table (names, descriptions, schemas) and the calls
 *              behind each tool, made only through libhutch's public API.
 *   server.c   the loop: dispatch, one worker thread per tools/call, the
 *              stdout lock, progress notifications and cancellation.
 *
 * Like the CLI, this code sees only the public headers <hutch/...> (and
 * the pure UTF-8 helpers of src/shared/utf8.h, compiled in).
 */
#ifndef HUTCH_MCP_H
#define HUTCH_MCP_H

#include <stddef.h>
#include <stdint.h>
#include <json-c/json.h>
#include <hutch/hutch.h>
/* Pure UTF-8 helpers, shared with the library and the agent. */
#include "../shared/utf8.h"

/* --- limits ---------------------------------------------------------------- */

/* The largest message accepted, in bytes (without its newline).  A longer
 * line is drained and answered with an error; it is never held whole. */
#define MCP_DEFAULT_MAX_MESSAGE (16u * 1024u * 1024u)
/* tools/call requests running at once; more are refused until one ends. */
#define MCP_DEFAULT_MAX_CALLS 16u
/* How often a call with a progress token reports that it is still alive. */
#define MCP_DEFAULT_PROGRESS_MS 1000u

/* --- JSON-RPC error codes -------------------------------------------------- */

#define MCP_PARSE_ERROR -32700
#define MCP_INVALID_REQUEST -32600
#define MCP_METHOD_NOT_FOUND -32601
#define MCP_INVALID_PARAMS -32602
#define MCP_INTERNAL_ERROR -32603

/* --- protocol versions ----------------------------------------------------- */

/* The revisions spoken, newest first, NULL-terminated. */
extern const char *const mcp_protocol_versions[];

/* The revision to answer an initialize that asked for `requested`: the same
 * string when it is supported, else the newest one.  Static string. */
const char *mcp_negotiate_version(const char *requested);

/* What a negotiated revision allows.  Each takes a string from
 * mcp_protocol_versions. */
int mcp_version_has_structured(const char *version);  /* 2025-06-18+ */
int mcp_version_has_annotations(const char *version); /* 2025-03-26+ */
/* SEP-1303 (2025-11-25+): arguments that fail the input schema are a tool
 * error the model sees, not a JSON-RPC error only the client sees. */
int mcp_version_args_as_tool_error(const char *version);

/* --- the line reader ------------------------------------------------------- */

typedef struct mcp_reader mcp_reader;

enum {
	MCP_READ_EOF = 0,
	MCP_READ_LINE = 1,
	MCP_READ_TOOBIG = 2, /* a line longer than the cap was drained */
	MCP_READ_WOKEN = 3,  /* the wake fd became readable */
	MCP_READ_ERROR = -1, /* errno is set */
};

/* Read newline-delimited messages from `fd`, at most `max` bytes each.
 * `wake_fd` (or -1) ends a wait with MCP_READ_WOKEN when it becomes
 * readable (a signal's self-pipe).  `*out` belongs to the caller. */
int mcp_reader_new(mcp_reader **out, int fd, int wake_fd, size_t max);
/* Accepts NULL.  Does not close the fds. */
void mcp_reader_free(mcp_reader *r);
/* The next line without its "\n" (and a "\r" before it).  `*line` is
 * borrowed until the next call.  Data after the last newline at EOF counts
 * as a line. */
int mcp_reader_next(mcp_reader *r, const char **line, size_t *len);

/* --- messages -------------------------------------------------------------- */

typedef enum {
	MCP_MSG_REQUEST,
	MCP_MSG_NOTIFICATION,
	MCP_MSG_RESPONSE, /* a reply to a request of ours: we send none */
} mcp_msg_kind;

typedef struct {
	mcp_msg_kind kind;
	json_object *root;   /* owned: release with mcp_message_clear() */
	json_object *id;     /* borrowed from root; NULL for notifications */
	const char *method;  /* borrowed; NULL for responses */
	json_object *params; /* borrowed; NULL or a JSON object */
} mcp_message;

/*
 * Parse and classify one line: `len` bytes at `line`, which must be
 * followed by a readable byte at line[len]: a NUL there (as
 * mcp_reader_next gives lines) saves a copy, anything else makes one.
 * Returns 0 with `*msg` filled, or -1 with `*reply` set to the error
 * response to send (NULL when the broken message was a notification, which
 * gets no answer).  `*reply` belongs to the caller.
 */
int mcp_message_parse(mcp_message *msg, const char *line, size_t len,
		      json_object **reply);
void mcp_message_clear(mcp_message *msg);

/* {"jsonrpc":"2.0","id":ID,"error":{"code":CODE,"message":MSG}}; `id` is
 * borrowed (a new reference is taken), NULL for null.  New object. */
json_object *mcp_error_reply(json_object *id, int code, const char *message);
/* {"jsonrpc":"2.0","id":ID,"result":RESULT}; takes over `result`. */
json_object *mcp_result_reply(json_object *id, json_object *result);
/* {"jsonrpc":"2.0","method":METHOD,"params":PARAMS}; takes over `params`. */
json_object *mcp_notification(const char *method, json_object *params);

/* 1 when two request ids are the same id (same type, same value). */
int mcp_id_equal(json_object *a, json_object *b);

/* One line of JSON, no newline, as it goes on the wire: borrowed from
 * `obj`, or, when some string in it was not valid UTF-8 (a message cut in
 * the middle of a character), a repaired copy (U+FFFD for each bad byte)
 * that `*owned` holds for the caller to free.  NULL when out of memory. */
const char *mcp_to_wire(json_object *obj, size_t *len, char **owned);

/* --- argument schemas ------------------------------------------------------ */

/*
 * Check `value` against `schema`, a JSON Schema limited to what the tool
 * schemas use: type (one or a list), properties, required,
 * additionalProperties (false or a schema), items, enum, minimum, maximum,
 * exclusiveMinimum, minLength, maxLength, minItems, maxItems and anyOf.
 * Returns 0, or -1 with a one-line reason in `msg` that names the
 * argument, e.g. "'timeout' must be a number".  `where` names the value
 * ("" at the top).
 */
int mcp_schema_check(json_object *schema, json_object *value, const char *where,
		     char *msg, size_t msgsz);

/* --- tools ----------------------------------------------------------------- */

typedef struct mcp_tool mcp_tool;
typedef struct mcp_call_ctx mcp_call_ctx;

/* What a tool call needs from the server, lent for the call's duration. */
struct mcp_call_ctx {
	/* Opens (once, lazily) the shared engine; borrowed result.  On
	 * failure the error belongs to the caller. */
	int (*engine)(hutch_engine **out, void *server, hutch_error **err);
	void *server;
	const char *session;		    /* session name */
	const hutch_session_options *sopts; /* for its first creation */
	hutch_cancel *cancel;		    /* raised to stop the call */
	/* Live output of exec, for progress messages; may be NULL. */
	void (*output)(void *payload, const char *data, size_t len);
	void *payload;
	int structured;	  /* add structuredContent */
	const char *tool; /* the tool called (mcp_tool_call sets it) */
};

/* Every tool, in the order tools/list gives them. */
size_t mcp_tool_count(void);
const mcp_tool *mcp_tool_at(size_t i);
const mcp_tool *mcp_tool_find(const char *name);
const char *mcp_tool_name(const mcp_tool *t);
json_object *mcp_tool_input_schema(const mcp_tool *t); /* borrowed */

/* Parse the schemas (string constants), once per process; later calls
 * return the first one's result.  0 or -1. */
int mcp_tools_init(void);

/* The tools/list result for a protocol revision.  New object. */
json_object *mcp_tools_list(const char *version);

/* An error result a model can act on: {"content":[text],"isError":true}.
 * New object. */
json_object *mcp_tool_error_result(const char *text);

/*
 * Run a tool whose arguments passed the schema check.  Returns the
 * CallToolResult (new object): content, optional structuredContent, and
 * isError when the tool failed.  Never NULL except out of memory.
 */
json_object *mcp_tool_call(const mcp_tool *t, json_object *args,
			   mcp_call_ctx *ctx);

/* --- the server ------------------------------------------------------------ */

typedef struct {
	const char *const *engine_urls; /* nengines URLs (hutch_fleet_open) */
	size_t nengines;     /* 0: HUTCH_ENGINES or discovery, as the CLI */
	const char *session; /* session name (required) */
	int session_given;   /* --session was given (for --rm) */
	hutch_session_options sopts;
	int remove_on_exit;   /* --rm */
	size_t max_message;   /* 0: MCP_DEFAULT_MAX_MESSAGE */
	unsigned max_calls;   /* 0: MCP_DEFAULT_MAX_CALLS */
	unsigned progress_ms; /* 0: MCP_DEFAULT_PROGRESS_MS */
	int wake_fd;	      /* -1, or a fd whose readability means stop */
} mcp_config;

/*
 * Serve MCP on `in_fd`/`out_fd` until EOF on `in_fd` (or `wake_fd`
 * becomes readable): then cancel the calls still running, wait for them,
 * and with remove_on_exit remove the session.  Log lines go to stderr.
 * Returns 0, or -1 when the server could not start or the session could
 * not be removed.
 */
int mcp_serve(const mcp_config *cfg, int in_fd, int out_fd);

#endif
