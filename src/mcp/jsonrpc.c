/*
 * jsonrpc.c - the MCP wire: bounded lines, JSON-RPC 2.0 messages, versions
 * and argument schemas
 *
 * Nothing here knows about tools or engines, so all of it is unit-tested
 * with plain strings and pipes (tests/unit/test_mcp.c).
 */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mcp.h"

/* --- protocol versions ----------------------------------------------------- */

const char *const mcp_protocol_versions[] = {
	"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05", NULL,
};

const char *mcp_negotiate_version(const char *requested)
{
	for (size_t i = 0; requested && mcp_protocol_versions[i]; i++)
		if (strcmp(requested, mcp_protocol_versions[i]) == 0)
			return mcp_protocol_versions[i];
	/* The spec: answer with the newest we speak; the client decides
	 * whether it can go on with it. */
	return mcp_protocol_versions[0];
}

/* The revisions are ISO dates, so they compare as strings. */
int mcp_version_has_structured(const char *version)
{
	return strcmp(version, "2025-06-18") >= 0;
}

int mcp_version_has_annotations(const char *version)
{
	return strcmp(version, "2025-03-26") >= 0;
}

int mcp_version_args_as_tool_error(const char *version)
{
	return strcmp(version, "2025-11-25") >= 0;
}

/* --- the line reader ------------------------------------------------------- */

#define READ_CHUNK 65536

struct mcp_reader {
	int fd, wake_fd;
	size_t max;
	char *buf;
	size_t alloc;
	size_t start, end; /* unconsumed bytes are buf[start, end) */
	size_t scanned;	   /* buf[start, scanned) holds no newline */
	int eof;
};

int mcp_reader_new(mcp_reader **out, int fd, int wake_fd, size_t max)
{
	mcp_reader *r = calloc(1, sizeof(*r));

	if (!r)
		return -1;
	r->fd = fd;
	r->wake_fd = wake_fd;
	r->max = max ? max : MCP_DEFAULT_MAX_MESSAGE;
	r->alloc = READ_CHUNK;
	r->buf = malloc(r->alloc);
	if (!r->buf) {
		free(r);
		return -1;
	}
	*out = r;
	return 0;
}

void mcp_reader_free(mcp_reader *r)
{
	if (!r)
		return;
	free(r->buf);
	free(r);
}

/* Room for at least one more byte: first by dropping what was consumed,
 * then by growing, never past the cap plus one read. */
static int make_room(mcp_reader *r)
{
	size_t want;
	char *nb;

	if (r->end < r->alloc)
		return 0;
	if (r->start > 0) {
		memmove(r->buf, r->buf + r->start, r->end - r->start);
		r->end -= r->start;
		r->scanned -= r->start;
		r->start = 0;
		return 0;
	}
	want = r->alloc * 2;
	if (want > r->max + READ_CHUNK)
		want = r->max + READ_CHUNK;
	if (want <= r->alloc) {
		errno = ENOBUFS; /* cannot happen: the caller drains first */
		return -1;
	}
	nb = realloc(r->buf, want);
	if (!nb)
		return -1;
	r->buf = nb;
	r->alloc = want;
	return 0;
}

/* Wait for input (or the wake fd); then read what there is. */
static int fill(mcp_reader *r)
{
	struct pollfd p[2] = { { r->fd, POLLIN, 0 },
			       { r->wake_fd, POLLIN, 0 } };
	ssize_t n;

	if (make_room(r) < 0)
		return -1;
	for (;;) {
		if (poll(p, r->wake_fd >= 0 ? 2 : 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (r->wake_fd >= 0 && (p[1].revents & (POLLIN | POLLHUP)))
			return MCP_READ_WOKEN;
		n = read(r->fd, r->buf + r->end, r->alloc - r->end);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0)
			return -1;
		if (n == 0) {
			r->eof = 1;
			return 0;
		}
		r->end += (size_t)n;
		return 1;
	}
}

int mcp_reader_next(mcp_reader *r, const char **line, size_t *len)
{
	int drained = 0, rc;

	for (;;) {
		char *nl =
			memchr(r->buf + r->scanned, '\n', r->end - r->scanned);

		if (nl) {
			size_t n = (size_t)(nl - (r->buf + r->start));
			char *l = r->buf + r->start;

			r->start = r->scanned = (size_t)(nl - r->buf) + 1;
			if (drained)
				return MCP_READ_TOOBIG;
			if (n > r->max) {
				/* The whole line arrived in one read: still
				 * too big. */
				return MCP_READ_TOOBIG;
			}
			if (n > 0 && l[n - 1] == '\r')
				n--;
			l[n] = '\0'; /* overwrites the newline */
			*line = l;
			*len = n;
			return MCP_READ_LINE;
		}
		r->scanned = r->end;
		if (r->end - r->start > r->max) {
			/* Past the cap without a newline: forget what we
			 * have and keep reading only to find the line's end,
			 * so a client cannot make us hold its whole line. */
			drained = 1;
			r->start = r->scanned = r->end = 0;
		}
		if (r->eof) {
			size_t n = r->end - r->start;

			if (drained) {
				r->start = r->scanned = r->end = 0;
				return MCP_READ_TOOBIG;
			}
			if (n == 0)
				return MCP_READ_EOF;
			/* A last message without its newline. */
			if (make_room(r) < 0)
				return MCP_READ_ERROR;
			*line = r->buf + r->start;
			r->buf[r->end] = '\0';
			*len = n;
			if (n > 0 && (*line)[n - 1] == '\r')
				(*len)--;
			r->start = r->scanned = r->end;
			return MCP_READ_LINE;
		}
		rc = fill(r);
		if (rc == MCP_READ_WOKEN)
			return MCP_READ_WOKEN;
		if (rc < 0)
			return MCP_READ_ERROR;
	}
}

/* --- messages -------------------------------------------------------------- */

static json_object *id_ref(json_object *id)
{
	return id ? json_object_get(id) : NULL;
}

json_object *mcp_error_reply(json_object *id, int code, const char *message)
{
	json_object *o = json_object_new_object(),
		    *e = json_object_new_object();

	if (!o || !e) {
		json_object_put(o);
		json_object_put(e);
		return NULL;
	}
	json_object_object_add(e, "code", json_object_new_int(code));
	json_object_object_add(e, "message", json_object_new_string(message));
	json_object_object_add(o, "jsonrpc", json_object_new_string("2.0"));
	json_object_object_add(o, "id", id_ref(id));
	json_object_object_add(o, "error", e);
	return o;
}

json_object *mcp_result_reply(json_object *id, json_object *result)
{
	json_object *o = json_object_new_object();

	if (!o) {
		json_object_put(result);
		return NULL;
	}
	json_object_object_add(o, "jsonrpc", json_object_new_string("2.0"));
	json_object_object_add(o, "id", id_ref(id));
	json_object_object_add(o, "result",
			       result ? result : json_object_new_object());
	return o;
}

json_object *mcp_notification(const char *method, json_object *params)
{
	json_object *o = json_object_new_object();

	if (!o) {
		json_object_put(params);
		return NULL;
	}
	json_object_object_add(o, "jsonrpc", json_object_new_string("2.0"));
	json_object_object_add(o, "method", json_object_new_string(method));
	if (params)
		json_object_object_add(o, "params", params);
	return o;
}

int mcp_id_equal(json_object *a, json_object *b)
{
	if (!a || !b)
		return 0;
	if (json_object_is_type(a, json_type_string) &&
	    json_object_is_type(b, json_type_string))
		return strcmp(json_object_get_string(a),
			      json_object_get_string(b)) == 0;
	if (json_object_is_type(a, json_type_int) &&
	    json_object_is_type(b, json_type_int))
		return json_object_get_int64(a) == json_object_get_int64(b);
	return 0;
}

const char *mcp_to_wire(json_object *obj, size_t *len, char **owned)
{
	/* PLAIN escapes control characters inside strings, so the line
	 * never holds a raw newline, as the stdio transport requires. */
	const char *s = json_object_to_json_string_length(
		obj, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE,
		len);

	*owned = NULL;
	if (!s || hutch__utf8_valid_len(s, *len) == *len)
		return s;
	/* json-c copies string bytes as they are.  Bytes of 0x80 and up
	 * can only be inside strings, so replacing the bad ones keeps the
	 * JSON's shape and makes it valid UTF-8, as JSON must be. */
	*owned = hutch__utf8_repair(s, *len, len);
	return *owned;
}

/* An id is a string or an integer; MCP forbids null.  json-c clamps an
 * integer it cannot hold to INT64_MIN or UINT64_MAX, and ids are compared
 * as int64: only integers it holds exactly as int64 (INT64_MIN excluded, a
 * clamp looks the same) can be echoed as sent, larger ones are refused. */
static int id_valid(json_object *id)
{
	int64_t v;

	if (json_object_is_type(id, json_type_string))
		return 1;
	if (!json_object_is_type(id, json_type_int))
		return 0;
	v = json_object_get_int64(id);
	if (v == INT64_MIN)
		return 0;
	/* Above INT64_MAX json-c keeps a uint64 that get_int64 clamps. */
	return v != INT64_MAX ||
	       json_object_get_uint64(id) == (uint64_t)INT64_MAX;
}

static int fail(json_object **reply, json_object *id, int code, const char *msg)
{
	*reply = mcp_error_reply(id, code, msg);
	return -1;
}

/* The line as one JSON object into *out: 0, or -1 with *reply set. */
static int parse_object(const char *line, size_t len, json_object **out,
			json_object **reply)
{
	json_tokener *tok;
	json_object *root;
	enum json_tokener_error jerr;
	char *copy = NULL;
	char m[160];

	if (len >= (size_t)INT32_MAX)
		return fail(reply, NULL, MCP_INVALID_REQUEST,
			    "message too large");
	/* JSON is UTF-8: a line that is not is refused whole, so no bad byte
	 * reaches a message or an error text quoting it.  (json-c's own check
	 * lets overlong forms and surrogates through.) */
	if (hutch__utf8_valid_len(line, len) != len)
		return fail(reply, NULL, MCP_PARSE_ERROR,
			    "parse error: the message is not valid UTF-8");
	tok = json_tokener_new();
	if (!tok)
		return fail(reply, NULL, MCP_INTERNAL_ERROR, "out of memory");
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	/* The NUL after the line goes to the tokener too: it is what tells
	 * json-c that a bare "42" or "true" has ended. */
	if (line[len] != '\0') {
		copy = malloc(len + 1);
		if (!copy) {
			json_tokener_free(tok);
			return fail(reply, NULL, MCP_INTERNAL_ERROR,
				    "out of memory");
		}
		memcpy(copy, line, len);
		copy[len] = '\0';
		line = copy;
	}
	root = json_tokener_parse_ex(tok, line, (int)len + 1);
	jerr = json_tokener_get_error(tok);
	if (root && json_tokener_get_parse_end(tok) < len) {
		/* Something after the value: "{} {}" is not one message. */
		size_t i = json_tokener_get_parse_end(tok);

		while (i < len && (line[i] == ' ' || line[i] == '\t'))
			i++;
		if (i < len) {
			json_object_put(root);
			root = NULL;
			jerr = json_tokener_error_parse_unexpected;
		}
	}
	if (!root && jerr == json_tokener_continue)
		jerr = json_tokener_error_parse_eof;
	json_tokener_free(tok);
	free(copy);
	if (!root) {
		if (jerr == json_tokener_success) {
			/* "null" parses to NULL with no error. */
			return fail(
				reply, NULL, MCP_INVALID_REQUEST,
				"invalid request: expected a JSON-RPC 2.0 object");
		}
		snprintf(m, sizeof(m), "parse error: %s",
			 json_tokener_error_desc(jerr));
		return fail(reply, NULL, MCP_PARSE_ERROR, m);
	}
	if (json_object_is_type(root, json_type_array)) {
		json_object_put(root);
		/* Batches left MCP with 2025-06-18; hutch answers them with
		 * one error rather than half-supporting them. */
		return fail(
			reply, NULL, MCP_INVALID_REQUEST,
			"invalid request: JSON-RPC batches are not supported; "
			"send one message per line");
	}
	if (!json_object_is_type(root, json_type_object)) {
		json_object_put(root);
		return fail(reply, NULL, MCP_INVALID_REQUEST,
			    "invalid request: expected a JSON-RPC 2.0 object");
	}
	*out = root;
	return 0;
}

int mcp_message_parse(mcp_message *msg, const char *line, size_t len,
		      json_object **reply)
{
	json_object *root, *v, *id = NULL;
	int has_id;

	memset(msg, 0, sizeof(*msg));
	*reply = NULL;
	if (parse_object(line, len, &root, reply) < 0)
		return -1;
	has_id = json_object_object_get_ex(root, "id", &id);
	if (has_id && !id_valid(id)) {
		json_object_put(root);
		return fail(
			reply, NULL, MCP_INVALID_REQUEST,
			"invalid request: \"id\" must be a string or an integer "
			"from -(2^63 - 1) to 2^63 - 1");
	}
	if (!json_object_object_get_ex(root, "jsonrpc", &v) ||
	    !json_object_is_type(v, json_type_string) ||
	    strcmp(json_object_get_string(v), "2.0") != 0) {
		int r = has_id ?
				fail(reply, id, MCP_INVALID_REQUEST,
				     "invalid request: \"jsonrpc\" must be \"2.0\"") :
				-1;

		json_object_put(root);
		return r;
	}

	if (!json_object_object_get_ex(root, "method", &v)) {
		/* A response to a request of ours, or nonsense. */
		if (has_id &&
		    (json_object_object_get_ex(root, "result", NULL) ||
		     json_object_object_get_ex(root, "error", NULL))) {
			msg->kind = MCP_MSG_RESPONSE;
			msg->root = root;
			msg->id = id;
			return 0;
		}
		fail(reply, has_id ? id : NULL, MCP_INVALID_REQUEST,
		     "invalid request: no \"method\"");
		json_object_put(root);
		return -1;
	}
	if (!json_object_is_type(v, json_type_string)) {
		int r = has_id ?
				fail(reply, id, MCP_INVALID_REQUEST,
				     "invalid request: \"method\" must be a string") :
				-1;

		json_object_put(root);
		return r;
	}
	msg->method = json_object_get_string(v);
	msg->kind = has_id ? MCP_MSG_REQUEST : MCP_MSG_NOTIFICATION;
	msg->id = has_id ? id : NULL;
	if (json_object_object_get_ex(root, "params", &v) &&
	    !json_object_is_type(v, json_type_null)) {
		if (!json_object_is_type(v, json_type_object)) {
			int r = has_id ?
					fail(reply, id, MCP_INVALID_PARAMS,
					     "invalid params: \"params\" must be an object") :
					-1;

			json_object_put(root);
			memset(msg, 0, sizeof(*msg));
			return r;
		}
		msg->params = v;
	}
	msg->root = root;
	return 0;
}

void mcp_message_clear(mcp_message *msg)
{
	json_object_put(msg->root);
	memset(msg, 0, sizeof(*msg));
}

/* --- argument schemas ------------------------------------------------------ */

static int is_integral(json_object *v)
{
	double d;

	if (json_object_is_type(v, json_type_int))
		return 1;
	if (!json_object_is_type(v, json_type_double))
		return 0;
	d = json_object_get_double(v);
	return isfinite(d) && floor(d) == d;
}

static int type_matches(const char *type, json_object *v)
{
	enum json_type t = json_object_get_type(v);

	if (strcmp(type, "object") == 0)
		return t == json_type_object;
	if (strcmp(type, "array") == 0)
		return t == json_type_array;
	if (strcmp(type, "string") == 0)
		return t == json_type_string;
	if (strcmp(type, "boolean") == 0)
		return t == json_type_boolean;
	if (strcmp(type, "null") == 0)
		return t == json_type_null;
	if (strcmp(type, "integer") == 0)
		return is_integral(v);
	if (strcmp(type, "number") == 0)
		return t == json_type_int || t == json_type_double;
	return 0;
}

static const char *type_phrase(const char *type)
{
	if (strcmp(type, "object") == 0)
		return "an object";
	if (strcmp(type, "array") == 0)
		return "an array";
	if (strcmp(type, "string") == 0)
		return "a string";
	if (strcmp(type, "boolean") == 0)
		return "true or false";
	if (strcmp(type, "integer") == 0)
		return "an integer";
	if (strcmp(type, "number") == 0)
		return "a number";
	return type;
}

/* "'timeout'", "'command[2]'" or "the arguments". */
static void name_of(char *out, size_t outsz, const char *where)
{
	if (!where || !*where)
		snprintf(out, outsz, "the arguments");
	else
		snprintf(out, outsz, "'%s'", where);
}

static int bad(char *msg, size_t msgsz, const char *where, const char *what)
{
	char n[160];

	name_of(n, sizeof(n), where);
	snprintf(msg, msgsz, "%s %s", n, what);
	return -1;
}

static double num(json_object *v)
{
	return json_object_is_type(v, json_type_int) ?
		       (double)json_object_get_int64(v) :
		       json_object_get_double(v);
}

static int check_type(json_object *schema, json_object *value,
		      const char *where, char *msg, size_t msgsz)
{
	json_object *t;
	char what[200];

	if (!json_object_object_get_ex(schema, "type", &t))
		return 0;
	if (json_object_is_type(t, json_type_string)) {
		if (type_matches(json_object_get_string(t), value))
			return 0;
		snprintf(what, sizeof(what), "must be %s",
			 type_phrase(json_object_get_string(t)));
		return bad(msg, msgsz, where, what);
	}
	if (json_object_is_type(t, json_type_array)) {
		size_t n = json_object_array_length(t), off;

		for (size_t i = 0; i < n; i++)
			if (type_matches(
				    json_object_get_string(
					    json_object_array_get_idx(t, i)),
				    value))
				return 0;
		off = (size_t)snprintf(what, sizeof(what), "must be");
		for (size_t i = 0; i < n && off < sizeof(what); i++)
			off += (size_t)snprintf(
				what + off, sizeof(what) - off, "%s%s",
				i == 0 ? " " : " or ",
				type_phrase(json_object_get_string(
					json_object_array_get_idx(t, i))));
		return bad(msg, msgsz, where, what);
	}
	return 0;
}

/* anyOf: 0 when some branch accepts the value (or there is no anyOf). */
static int check_any_of(json_object *schema, json_object *value,
			const char *where, char *msg, size_t msgsz)
{
	json_object *k;
	char what[300];
	size_t n, off;

	if (!json_object_object_get_ex(schema, "anyOf", &k) ||
	    !json_object_is_type(k, json_type_array))
		return 0;
	n = json_object_array_length(k);
	for (size_t i = 0; i < n; i++)
		if (mcp_schema_check(json_object_array_get_idx(k, i), value,
				     where, msg, msgsz) == 0)
			return 0;
	/* A branch of the value's own type knows best what is wrong with it
	 * ("'command' must not be empty"). */
	for (size_t i = 0; i < n; i++) {
		json_object *br = json_object_array_get_idx(k, i), *t;

		if (json_object_object_get_ex(br, "type", &t) &&
		    json_object_is_type(t, json_type_string) &&
		    type_matches(json_object_get_string(t), value))
			return mcp_schema_check(br, value, where, msg, msgsz);
	}
	/* Else: name the types there are. */
	off = (size_t)snprintf(what, sizeof(what), "must be");
	for (size_t i = 0; i < n && off < sizeof(what); i++) {
		json_object *t = NULL;

		json_object_object_get_ex(json_object_array_get_idx(k, i),
					  "type", &t);
		off += (size_t)snprintf(
			what + off, sizeof(what) - off, "%s%s",
			i == 0 ? " " : " or ",
			t ? type_phrase(json_object_get_string(t)) :
			    "something else");
	}
	return bad(msg, msgsz, where, what);
}

static int check_enum(json_object *schema, json_object *value,
		      const char *where, char *msg, size_t msgsz)
{
	json_object *k;
	char what[300];
	size_t n, off;
	int found = 0;

	if (!json_object_object_get_ex(schema, "enum", &k) ||
	    !json_object_is_type(k, json_type_array))
		return 0;
	n = json_object_array_length(k);
	for (size_t i = 0; i < n && !found; i++) {
		json_object *e = json_object_array_get_idx(k, i);

		found = json_object_get_type(e) ==
				json_object_get_type(value) &&
			json_object_equal(e, value);
	}
	if (found)
		return 0;
	off = (size_t)snprintf(what, sizeof(what), "must be one of");
	for (size_t i = 0; i < n && off < sizeof(what); i++)
		off += (size_t)snprintf(what + off, sizeof(what) - off, "%s%s",
					i == 0 ? " " : ", ",
					json_object_to_json_string_ext(
						json_object_array_get_idx(k, i),
						JSON_C_TO_STRING_PLAIN));
	return bad(msg, msgsz, where, what);
}

static int check_number(json_object *schema, json_object *value,
			const char *where, char *msg, size_t msgsz)
{
	json_object *k;
	char what[300];
	double d = num(value);

	if (json_object_object_get_ex(schema, "minimum", &k) && d < num(k)) {
		snprintf(what, sizeof(what), "must be at least %s",
			 json_object_to_json_string(k));
		return bad(msg, msgsz, where, what);
	}
	if (json_object_object_get_ex(schema, "exclusiveMinimum", &k) &&
	    d <= num(k)) {
		snprintf(what, sizeof(what), "must be more than %s",
			 json_object_to_json_string(k));
		return bad(msg, msgsz, where, what);
	}
	if (json_object_object_get_ex(schema, "maximum", &k) && d > num(k)) {
		snprintf(what, sizeof(what), "must be at most %s",
			 json_object_to_json_string(k));
		return bad(msg, msgsz, where, what);
	}
	return 0;
}

static int check_string(json_object *schema, json_object *value,
			const char *where, char *msg, size_t msgsz)
{
	json_object *k;
	char what[300];
	size_t len = (size_t)json_object_get_string_len(value);

	if (json_object_object_get_ex(schema, "minLength", &k) &&
	    len < (size_t)json_object_get_int64(k))
		return bad(msg, msgsz, where,
			   json_object_get_int64(k) == 1 ? "must not be empty" :
							   "is too short");
	if (json_object_object_get_ex(schema, "maxLength", &k) &&
	    len > (size_t)json_object_get_int64(k)) {
		snprintf(what, sizeof(what), "is longer than %lld characters",
			 (long long)json_object_get_int64(k));
		return bad(msg, msgsz, where, what);
	}
	return 0;
}

static int check_array(json_object *schema, json_object *value,
		       const char *where, char *msg, size_t msgsz)
{
	json_object *k, *items = NULL;
	char what[300];
	size_t n = json_object_array_length(value);

	if (json_object_object_get_ex(schema, "minItems", &k) &&
	    n < (size_t)json_object_get_int64(k))
		return bad(msg, msgsz, where,
			   json_object_get_int64(k) == 1 ? "must not be empty" :
							   "has too few items");
	if (json_object_object_get_ex(schema, "maxItems", &k) &&
	    n > (size_t)json_object_get_int64(k)) {
		snprintf(what, sizeof(what), "has more than %lld items",
			 (long long)json_object_get_int64(k));
		return bad(msg, msgsz, where, what);
	}
	json_object_object_get_ex(schema, "items", &items);
	for (size_t i = 0; items && i < n; i++) {
		char sub[160];

		snprintf(sub, sizeof(sub), "%s[%zu]", where ? where : "", i);
		if (mcp_schema_check(items, json_object_array_get_idx(value, i),
				     sub, msg, msgsz) < 0)
			return -1;
	}
	return 0;
}

/* "unknown argument 'x'", naming the arguments there are, so that a model
 * that guessed a name can fix it.  -1. */
static int unknown_argument(json_object *props, const char *sub, char *msg,
			    size_t msgsz)
{
	size_t off = (size_t)snprintf(msg, msgsz, "unknown argument '%s'", sub);
	int first = 1;

	if (!props || off >= msgsz)
		return -1;
	off += (size_t)snprintf(msg + off, msgsz - off, "; the arguments are");
	json_object_object_foreach(props, pk, pv)
	{
		(void)pv;
		if (off >= msgsz)
			break;
		off += (size_t)snprintf(msg + off, msgsz - off, "%s%s",
					first ? " " : ", ", pk);
		first = 0;
	}
	return -1;
}

static int check_required(json_object *schema, json_object *value,
			  const char *where, char *msg, size_t msgsz)
{
	json_object *k;

	if (!json_object_object_get_ex(schema, "required", &k) ||
	    !json_object_is_type(k, json_type_array))
		return 0;
	for (size_t i = 0; i < json_object_array_length(k); i++) {
		const char *req =
			json_object_get_string(json_object_array_get_idx(k, i));

		if (json_object_object_get_ex(value, req, NULL))
			continue;
		if (!where || !*where)
			snprintf(msg, msgsz, "missing required argument '%s'",
				 req);
		else
			snprintf(msg, msgsz, "'%s' lacks '%s'", where, req);
		return -1;
	}
	return 0;
}

static int check_object(json_object *schema, json_object *value,
			const char *where, char *msg, size_t msgsz)
{
	json_object *props = NULL, *addl = NULL;

	json_object_object_get_ex(schema, "properties", &props);
	json_object_object_get_ex(schema, "additionalProperties", &addl);
	if (check_required(schema, value, where, msg, msgsz) < 0)
		return -1;
	json_object_object_foreach(value, key, child)
	{
		json_object *ps = NULL;
		char sub[160];

		snprintf(sub, sizeof(sub), "%s%s%s", where ? where : "",
			 where && *where ? "." : "", key);
		if (props && json_object_object_get_ex(props, key, &ps)) {
			if (mcp_schema_check(ps, child, sub, msg, msgsz) < 0)
				return -1;
		} else if (addl &&
			   json_object_is_type(addl, json_type_boolean) &&
			   !json_object_get_boolean(addl)) {
			return unknown_argument(props, sub, msg, msgsz);
		} else if (addl &&
			   json_object_is_type(addl, json_type_object)) {
			if (mcp_schema_check(addl, child, sub, msg, msgsz) < 0)
				return -1;
		}
	}
	return 0;
}

int mcp_schema_check(json_object *schema, json_object *value, const char *where,
		     char *msg, size_t msgsz)
{
	if (!schema || !json_object_is_type(schema, json_type_object))
		return 0;
	if (check_any_of(schema, value, where, msg, msgsz) < 0 ||
	    check_type(schema, value, where, msg, msgsz) < 0 ||
	    check_enum(schema, value, where, msg, msgsz) < 0)
		return -1;
	switch (json_object_get_type(value)) {
	case json_type_int:
	case json_type_double:
		return check_number(schema, value, where, msg, msgsz);
	case json_type_string:
		return check_string(schema, value, where, msg, msgsz);
	case json_type_array:
		return check_array(schema, value, where, msg, msgsz);
	case json_type_object:
		return check_object(schema, value, where, msg, msgsz);
	default:
		return 0;
	}
}
