/*
 * The MCP server's protocol: framing, JSON-RPC errors, version negotiation,
 * argument schemas, and the behaviour of running calls (progress, cancel,
 * overlap, the call cap, lazy engine use).
 *
 * The real server loop (mcp_serve) runs in a thread on a pair of pipes.
 * Nothing here needs a container engine: the protocol tests never reach
 * one, and the running-call tests talk to the fake engine
 * (fake_engine.c), which plays a command that runs until it is released.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fake_engine.h"
#include "mcp.h"

/* ---- the harness: mcp_serve on pipes ---------------------------------------- */

struct harness {
	mcp_config cfg;
	int in_w, out_r; /* our ends */
	int in_r, out_w; /* the server's ends */
	pthread_t th;
	int rc, running;
	char *buf; /* what the server wrote and we have not read */
	size_t len, alloc;
	json_object *notes; /* notifications seen while waiting for replies */
};

static struct harness H;
static struct fake_engine *fe;

static void *serve_thread(void *p)
{
	struct harness *h = p;

	h->rc = mcp_serve(&h->cfg, h->in_r, h->out_w);
	close(h->out_w);
	return NULL;
}

static void start_with(const mcp_config *cfg)
{
	int a[2], b[2];

	cr_assert_eq(pipe(a), 0);
	cr_assert_eq(pipe(b), 0);
	H.cfg = *cfg;
	H.in_r = a[0];
	H.in_w = a[1];
	H.out_r = b[0];
	H.out_w = b[1];
	H.notes = json_object_new_array();
	cr_assert_eq(pthread_create(&H.th, NULL, serve_thread, &H), 0);
	H.running = 1;
}

static mcp_config base_config(void)
{
	/* Nothing listens there: a call that reached the engine would fail,
	 * and the protocol tests must not get that far. */
	static const char *const nowhere[] = {
		"unix:///nonexistent/hutch-mcp-test.sock"
	};
	const hutch_session_options so = HUTCH_SESSION_OPTIONS_INIT;
	mcp_config c;

	memset(&c, 0, sizeof(c));
	c.sopts = so;
	c.engine_urls = nowhere;
	c.nengines = 1;
	c.session = "mcp-unit";
	c.wake_fd = -1;
	return c;
}

static void start(void)
{
	mcp_config c = base_config();

	start_with(&c);
}

/* Close stdin and wait for the server; returns how long that took. */
static double stop(void)
{
	struct timespec a, b;

	if (!H.running)
		return 0;
	clock_gettime(CLOCK_MONOTONIC, &a);
	close(H.in_w);
	pthread_join(H.th, NULL);
	clock_gettime(CLOCK_MONOTONIC, &b);
	H.running = 0;
	close(H.in_r);
	close(H.out_r);
	return (double)(b.tv_sec - a.tv_sec) +
	       (double)(b.tv_nsec - a.tv_nsec) / 1e9;
}

static void teardown(void)
{
	stop();
	free(H.buf);
	json_object_put(H.notes);
	memset(&H, 0, sizeof(H));
	fake_engine_stop(fe);
	fe = NULL;
}

static void init(void)
{
	signal(SIGPIPE, SIG_IGN);
}

TestSuite(mcp, .init = init, .fini = teardown, .timeout = 60);
TestSuite(wire, .timeout = 30);

static void send_raw(const char *data, size_t len)
{
	size_t off = 0;

	while (off < len) {
		ssize_t n = write(H.in_w, data + off, len - off);

		cr_assert_gt(n, 0, "write to the server: %s", strerror(errno));
		off += (size_t)n;
	}
}

static void send_str(const char *s)
{
	send_raw(s, strlen(s));
}

static void send_line(const char *s)
{
	send_raw(s, strlen(s));
	send_raw("\n", 1);
}

static void sendf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void sendf(const char *fmt, ...)
{
	va_list ap;
	char *s = NULL;

	va_start(ap, fmt);
	cr_assert_geq(vasprintf(&s, fmt, ap), 0);
	va_end(ap);
	send_line(s);
	free(s);
}

/* The next line from the server, parsed; NULL after `ms` without one (or
 * at EOF).  Every line must be one JSON object. */
static json_object *next_msg(int ms)
{
	for (;;) {
		char *nl = H.buf ? memchr(H.buf, '\n', H.len) : NULL;
		struct pollfd p = { H.out_r, POLLIN, 0 };
		ssize_t n;

		if (nl) {
			size_t l = (size_t)(nl - H.buf);
			json_object *o;

			*nl = '\0';
			/* JSON is UTF-8: a line that is not is not JSON. */
			cr_assert_eq(
				hutch__utf8_valid_len(H.buf, l), l,
				"the server wrote a line that is not UTF-8: %.300s",
				H.buf);
			o = json_tokener_parse(H.buf);
			cr_assert_not_null(
				o,
				"the server wrote a line that is not JSON: %.300s",
				H.buf);
			cr_assert(json_object_is_type(o, json_type_object));
			memmove(H.buf, nl + 1, H.len - l - 1);
			H.len -= l + 1;
			return o;
		}
		if (poll(&p, 1, ms) <= 0)
			return NULL;
		if (H.len + 65536 > H.alloc) {
			H.alloc = H.alloc ? H.alloc * 2 : 131072;
			H.buf = realloc(H.buf, H.alloc);
			cr_assert_not_null(H.buf);
		}
		n = read(H.out_r, H.buf + H.len, H.alloc - H.len);
		if (n <= 0)
			return NULL;
		H.len += (size_t)n;
	}
}

static json_object *get(json_object *o, const char *path)
{
	/* "error.code", "result.tools" */
	char key[64];
	const char *dot;

	while (o && path && *path) {
		dot = strchr(path, '.');
		snprintf(key, sizeof(key), "%.*s",
			 dot ? (int)(dot - path) : (int)strlen(path), path);
		if (!json_object_object_get_ex(o, key, &o))
			return NULL;
		path = dot ? dot + 1 : NULL;
	}
	return o;
}

static int64_t get_int(json_object *o, const char *path)
{
	return json_object_get_int64(get(o, path));
}

static const char *get_str(json_object *o, const char *path)
{
	json_object *v = get(o, path);

	return v ? json_object_get_string(v) : "";
}

static int is_id(json_object *m, int64_t id)
{
	json_object *v = get(m, "id");

	return v && json_object_is_type(v, json_type_int) &&
	       json_object_get_int64(v) == id;
}

/* The reply to request `id`; notifications met on the way are kept in
 * H.notes, and any other reply fails the test. */
static json_object *reply_to(int64_t id)
{
	for (;;) {
		json_object *m = next_msg(20000);

		cr_assert_not_null(m, "no reply to request %lld",
				   (long long)id);
		if (get(m, "method") && !get(m, "id")) {
			json_object_array_add(H.notes, m);
			continue;
		}
		cr_assert(is_id(m, id), "expected the reply to %lld, got %s",
			  (long long)id, json_object_to_json_string(m));
		return m;
	}
}

/* The reply with a null id: what broken messages get. */
static json_object *null_reply(void)
{
	json_object *m = next_msg(10000), *id = NULL;

	cr_assert_not_null(m, "no reply");
	cr_assert(json_object_object_get_ex(m, "id", &id) && id == NULL,
		  "expected id null: %s", json_object_to_json_string(m));
	return m;
}

static void expect_error(json_object *m, int code, const char *words)
{
	cr_assert_not_null(get(m, "error"), "expected an error: %s",
			   json_object_to_json_string(m));
	cr_expect_null(get(m, "result"));
	cr_expect_eq(get_int(m, "error.code"), code, "code in %s",
		     json_object_to_json_string(m));
	cr_expect_str_eq(get_str(m, "jsonrpc"), "2.0");
	if (words)
		cr_expect(strstr(get_str(m, "error.message"), words) != NULL,
			  "message '%s' lacks '%s'",
			  get_str(m, "error.message"), words);
	json_object_put(m);
}

/* The server still answers: a ping round trip. */
static void expect_alive(int64_t id)
{
	json_object *m;

	sendf("{\"jsonrpc\":\"2.0\",\"id\":%lld,\"method\":\"ping\"}",
	      (long long)id);
	m = reply_to(id);
	cr_expect_not_null(get(m, "result"), "ping: %s",
			   json_object_to_json_string(m));
	json_object_put(m);
}

static void initialize(const char *version)
{
	json_object *m;

	sendf("{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":"
	      "{\"protocolVersion\":\"%s\",\"capabilities\":{},\"clientInfo\":"
	      "{\"name\":\"unit\",\"version\":\"1\"}}}",
	      version);
	m = reply_to(0);
	cr_assert_str_eq(get_str(m, "result.protocolVersion"), version);
	json_object_put(m);
	send_line(
		"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
}

static void call_tool(int64_t id, const char *name, const char *args)
{
	sendf("{\"jsonrpc\":\"2.0\",\"id\":%lld,\"method\":\"tools/call\",\"params\":"
	      "{\"name\":\"%s\",\"arguments\":%s}}",
	      (long long)id, name, args);
}

/* ---- version negotiation ------------------------------------------------------ */

Test(wire, negotiate_versions)
{
	cr_expect_str_eq(mcp_negotiate_version("2025-11-25"), "2025-11-25");
	cr_expect_str_eq(mcp_negotiate_version("2025-06-18"), "2025-06-18");
	cr_expect_str_eq(mcp_negotiate_version("2025-03-26"), "2025-03-26");
	cr_expect_str_eq(mcp_negotiate_version("2024-11-05"), "2024-11-05");
	/* Unknown, older or newer: our newest, and the client decides. */
	cr_expect_str_eq(mcp_negotiate_version("2024-10-07"), "2025-11-25");
	cr_expect_str_eq(mcp_negotiate_version("2099-01-01"), "2025-11-25");
	cr_expect_str_eq(mcp_negotiate_version(""), "2025-11-25");
	cr_expect_str_eq(mcp_negotiate_version(NULL), "2025-11-25");

	cr_expect(mcp_version_has_structured("2025-06-18"));
	cr_expect(!mcp_version_has_structured("2025-03-26"));
	cr_expect(mcp_version_has_annotations("2025-03-26"));
	cr_expect(!mcp_version_has_annotations("2024-11-05"));
	cr_expect(mcp_version_args_as_tool_error("2025-11-25"));
	cr_expect(!mcp_version_args_as_tool_error("2025-06-18"));
}

Test(mcp, initialize_answers_the_asked_version)
{
	static const char *const asked[][2] = {
		{ "2025-11-25", "2025-11-25" }, { "2025-06-18", "2025-06-18" },
		{ "2025-03-26", "2025-03-26" }, { "2024-11-05", "2024-11-05" },
		{ "1999-01-01", "2025-11-25" },
	};
	json_object *m;

	start();
	for (size_t i = 0; i < sizeof(asked) / sizeof(asked[0]); i++) {
		sendf("{\"jsonrpc\":\"2.0\",\"id\":%zu,\"method\":\"initialize\",\"params\":"
		      "{\"protocolVersion\":\"%s\",\"capabilities\":{},"
		      "\"clientInfo\":{\"name\":\"u\",\"version\":\"1\"}}}",
		      i + 1, asked[i][0]);
		m = reply_to((int64_t)i + 1);
		cr_expect_str_eq(get_str(m, "result.protocolVersion"),
				 asked[i][1]);
		cr_expect_str_eq(get_str(m, "result.serverInfo.name"), "hutch");
		cr_expect_str_eq(get_str(m, "result.serverInfo.version"),
				 hutch_version());
		cr_expect_not_null(get(m, "result.capabilities.tools"));
		json_object_put(m);
	}
	/* initialize without a version is invalid params. */
	send_line(
		"{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"initialize\",\"params\":{}}");
	expect_error(reply_to(9), MCP_INVALID_PARAMS, "protocolVersion");
	send_line(
		"{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"initialize\",\"params\":"
		"{\"protocolVersion\":20250618}}");
	expect_error(reply_to(10), MCP_INVALID_PARAMS, "protocolVersion");
	expect_alive(11);
}

/* ---- tools/list ------------------------------------------------------------------ */

static json_object *list_tools(int64_t id)
{
	json_object *m, *tools;

	sendf("{\"jsonrpc\":\"2.0\",\"id\":%lld,\"method\":\"tools/list\",\"params\":{}}",
	      (long long)id);
	m = reply_to(id);
	tools = get(m, "result.tools");
	cr_assert_not_null(tools, "%s", json_object_to_json_string(m));
	json_object_get(tools);
	json_object_put(m);
	return tools;
}

Test(mcp, tools_list_has_the_twelve_tools)
{
	static const char *const names[] = {
		"exec",	     "read_file", "write_file",	    "edit_file",
		"grep",	     "find",	  "list_dir",	    "delete_file",
		"move_file", "processes", "process_output", "process_kill"
	};
	json_object *tools;

	start();
	initialize("2025-06-18");
	tools = list_tools(1);
	cr_assert_eq(json_object_array_length(tools), 12);
	for (size_t i = 0; i < 12; i++) {
		json_object *t = json_object_array_get_idx(tools, i);

		cr_expect_str_eq(get_str(t, "name"), names[i]);
		cr_expect_gt(strlen(get_str(t, "description")), 60);
		cr_expect_str_eq(get_str(t, "inputSchema.type"), "object");
		cr_expect_eq(json_object_get_boolean(get(
				     t, "inputSchema.additionalProperties")),
			     0);
		cr_expect_not_null(get(t, "inputSchema.additionalProperties"));
		cr_expect_str_eq(get_str(t, "outputSchema.type"), "object",
				 "%s", names[i]);
		cr_expect_not_null(get(t, "title"));
		cr_expect_not_null(get(t, "annotations"));
	}
	/* Read-only tools say so. */
	cr_expect(
		json_object_get_boolean(get(json_object_array_get_idx(tools, 1),
					    "annotations.readOnlyHint")));
	cr_expect(!json_object_get_boolean(
		get(json_object_array_get_idx(tools, 0),
		    "annotations.readOnlyHint")));
	/* Deleting and moving files change the workspace, and may lose
	 * what was there. */
	for (size_t i = 7; i <= 8; i++) {
		cr_expect(!json_object_get_boolean(
				  get(json_object_array_get_idx(tools, i),
				      "annotations.readOnlyHint")),
			  "%s", names[i]);
		cr_expect(json_object_get_boolean(
				  get(json_object_array_get_idx(tools, i),
				      "annotations.destructiveHint")),
			  "%s", names[i]);
	}
	/* Listing and reading processes change nothing; a kill does. */
	cr_expect(
		json_object_get_boolean(get(json_object_array_get_idx(tools, 9),
					    "annotations.readOnlyHint")));
	cr_expect(json_object_get_boolean(
		get(json_object_array_get_idx(tools, 10),
		    "annotations.readOnlyHint")));
	cr_expect(!json_object_get_boolean(
		get(json_object_array_get_idx(tools, 11),
		    "annotations.readOnlyHint")));
	cr_expect(json_object_get_boolean(
		get(json_object_array_get_idx(tools, 11),
		    "annotations.destructiveHint")));
	json_object_put(tools);
}

/* The grep tool says which regular expressions it takes, in its
 * description and its pattern's: a model writes ripgrep's syntax, and
 * POSIX ERE would read its \d as a literal 'd'. */
Test(mcp, grep_names_its_syntax)
{
	json_object *tools, *grep;
	const char *d;

	start();
	initialize("2025-06-18");
	tools = list_tools(1);
	grep = json_object_array_get_idx(tools, 4);
	cr_assert_str_eq(get_str(grep, "name"), "grep");
	d = get_str(grep, "description");
	cr_expect(strstr(d, "PCRE2 (Perl-compatible, as ripgrep)"), "%s", d);
	cr_expect(strstr(d, "\\d \\w \\s \\b (?i) lazy quantifiers"), "%s", d);
	d = get_str(grep, "inputSchema.properties.pattern.description");
	cr_expect(strstr(d, "PCRE2"), "%s", d);
	cr_expect(strstr(d, "\\d \\w \\s \\b (?i)"), "%s", d);
	cr_expect_null(strstr(d, "POSIX"), "%s", d);
	json_object_put(tools);
}

/* exec with background: true answers {"status":"started","id":...}, which
 * the exec tool's output schema must accept, as a client checks it; the
 * new tools' inputs refuse what their code would not take. */
Test(mcp, background_schemas)
{
	static const char started[] =
		"{\"session\":\"s\",\"argv\":[\"sleep\",\"9\"],"
		"\"exit_code\":null,\"status\":\"started\",\"id\":\"p0a1b2c3d\","
		"\"stdout\":\"\",\"stderr\":\"\"}";
	static const struct {
		const char *tool, *args, *why;
	} bad[] = {
		{ "exec", "{\"command\":\"x\",\"background\":1}",
		  "'background' must be true or false" },
		{ "process_output", "{}", "missing required argument 'id'" },
		{ "process_output", "{\"id\":\"p1\",\"offset\":-1}",
		  "'offset' must be at least 0" },
		{ "process_output", "{\"id\":\"p1\",\"max_bytes\":0}",
		  "'max_bytes' must be at least 1" },
		{ "process_output", "{\"id\":\"p1\",\"max_bytes\":262145}",
		  "'max_bytes' must be at most 262144" },
		{ "process_output", "{\"id\":\"\"}", "'id' must not be empty" },
		{ "process_kill", "{\"id\":\"p1\",\"signal\":9}",
		  "'signal' must be a string" },
		{ "processes", "{\"all\":true}",
		  "unknown argument 'all'; the arguments are" },
		{ "move_file", "{\"from\":\"a\"}",
		  "missing required argument 'to'" },
		{ "delete_file", "{\"path\":\"a\",\"recursive\":\"yes\"}",
		  "'recursive' must be true or false" },
		{ "read_file", "{\"path\":\"a\",\"line_numbers\":1}",
		  "'line_numbers' must be true or false" },
	};
	json_object *tools, *schema = NULL, *doc;
	char msg[300];

	start();
	initialize("2025-06-18");
	tools = list_tools(1);
	for (size_t i = 0; i < json_object_array_length(tools); i++) {
		json_object *t = json_object_array_get_idx(tools, i);

		if (strcmp(get_str(t, "name"), "exec") == 0)
			schema = get(t, "outputSchema");
	}
	cr_assert_not_null(schema);
	doc = json_tokener_parse(started);
	cr_assert_not_null(doc);
	cr_expect_eq(mcp_schema_check(schema, doc, "", msg, sizeof(msg)), 0,
		     "%s", msg);
	json_object_put(doc);
	json_object_put(tools);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const mcp_tool *t = mcp_tool_find(bad[i].tool);
		json_object *v = json_tokener_parse(bad[i].args);

		cr_assert_not_null(t);
		cr_assert_not_null(v);
		msg[0] = '\0';
		cr_expect_eq(mcp_schema_check(mcp_tool_input_schema(t), v, "",
					      msg, sizeof(msg)),
			     -1, "%s %s accepted", bad[i].tool, bad[i].args);
		cr_expect_str_eq(msg, bad[i].why, "%s %s: %s", bad[i].tool,
				 bad[i].args, msg);
		json_object_put(v);
	}
}

Test(mcp, tools_list_for_an_old_client_has_no_new_fields)
{
	json_object *tools;

	start();
	initialize("2024-11-05");
	tools = list_tools(1);
	cr_assert_eq(json_object_array_length(tools), 12);
	for (size_t i = 0; i < 12; i++) {
		json_object *t = json_object_array_get_idx(tools, i);

		cr_expect_null(get(t, "outputSchema"));
		cr_expect_null(get(t, "title"));
		cr_expect_null(get(t, "annotations"));
		cr_expect_not_null(get(t, "inputSchema"));
	}
	json_object_put(tools);
}

/* ---- framing ------------------------------------------------------------------------ */

Test(mcp, two_messages_in_one_write_get_two_replies_in_order)
{
	json_object *m;

	start();
	send_str("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n"
		 "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}\n");
	/* reply_to() takes the next reply and asserts its id: 1, then 2. */
	m = reply_to(1);
	cr_assert_not_null(get(m, "result"), "%s",
			   json_object_to_json_string(m));
	json_object_put(m);
	m = reply_to(2);
	cr_assert_not_null(get(m, "result"), "%s",
			   json_object_to_json_string(m));
	json_object_put(m);
}

Test(mcp, a_message_split_into_single_bytes_is_one_message)
{
	const char *s =
		"{\"jsonrpc\":\"2.0\",\"id\":\"abc\",\"method\":\"ping\"}\n";
	json_object *m;

	start();
	for (size_t i = 0; s[i]; i++) {
		send_raw(s + i, 1);
		if (i % 7 == 0)
			usleep(1000);
	}
	m = next_msg(10000);
	cr_assert_not_null(m);
	cr_expect_str_eq(get_str(m, "id"), "abc",
			 "string ids come back as strings");
	cr_expect_not_null(get(m, "result"));
	json_object_put(m);
}

Test(mcp, crlf_and_blank_lines)
{
	json_object *m;

	start();
	send_str(
		"\n\r\n   \n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\r\n");
	/* Blank lines are no messages: the first thing back is the ping's
	 * (reply_to asserts the id), and it is a result. */
	m = reply_to(1);
	cr_assert(json_object_object_get_ex(m, "result", NULL), "%s",
		  json_object_to_json_string(m));
	json_object_put(m);
	expect_alive(2);
}

Test(mcp, last_message_without_newline_is_answered_at_eof)
{
	json_object *m;

	start();
	send_str("{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"ping\"}");
	close(H.in_w);
	m = next_msg(10000);
	cr_assert_not_null(m);
	cr_expect(is_id(m, 5));
	json_object_put(m);
	pthread_join(H.th, NULL);
	H.running = 0;
	cr_expect_eq(H.rc, 0);
	close(H.in_r);
	close(H.out_r);
}

Test(mcp, oversized_message_is_an_error_and_the_server_goes_on)
{
	mcp_config c = base_config();
	char big[5000];

	c.max_message = 1024;
	start_with(&c);
	memset(big, ' ', sizeof(big));
	memcpy(big,
	       "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"x\":\"",
	       45);
	memcpy(big + sizeof(big) - 2, "\"}", 2);
	send_raw(big, sizeof(big));
	send_raw("\n", 1);
	expect_error(null_reply(), MCP_INVALID_REQUEST,
		     "larger than 1024 bytes");
	expect_alive(2);

	/* Exactly at the cap is fine. */
	memset(big, ' ', 1024);
	memcpy(big, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}", 40);
	send_raw(big, 1024);
	send_raw("\n", 1);
	json_object_put(reply_to(3));

	/* An oversized line cut by EOF is answered too. */
	memset(big, 'x', sizeof(big));
	send_raw(big, sizeof(big));
	close(H.in_w);
	expect_error(null_reply(), MCP_INVALID_REQUEST, "larger");
	pthread_join(H.th, NULL);
	H.running = 0;
	close(H.in_r);
	close(H.out_r);
}

struct writer {
	size_t len;
};

static void *big_writer(void *p)
{
	struct writer *w = p;
	char chunk[65536];
	size_t off = 0;

	memset(chunk, 'a', sizeof(chunk));
	send_str(
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"pad\":\"");
	while (off < w->len) {
		size_t n = w->len - off < sizeof(chunk) ? w->len - off :
							  sizeof(chunk);

		send_raw(chunk, n);
		off += n;
	}
	send_raw("\"}\n", 3);
	return NULL;
}

Test(mcp, a_17_mib_message_over_the_default_cap)
{
	struct writer w = { 17u * 1024u * 1024u };
	pthread_t th;

	start();
	cr_assert_eq(pthread_create(&th, NULL, big_writer, &w), 0);
	expect_error(null_reply(), MCP_INVALID_REQUEST,
		     "larger than 16777216 bytes");
	pthread_join(th, NULL);
	expect_alive(2);
}

/* ---- malformed messages ------------------------------------------------------------ */

Test(mcp, malformed_json_is_a_parse_error)
{
	static const char *const bad[] = {
		"{",
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"",
		"not json",
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"} trailing",
		"{'jsonrpc':'2.0'}",
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",}",
	};

	start();
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		send_line(bad[i]);
		expect_error(null_reply(), MCP_PARSE_ERROR, "parse error");
	}
	expect_alive(100);
}

Test(mcp, invalid_requests)
{
	start();
	/* Not an object. */
	send_line("42");
	expect_error(null_reply(), MCP_INVALID_REQUEST, NULL);
	send_line("\"ping\"");
	expect_error(null_reply(), MCP_INVALID_REQUEST, NULL);
	send_line("null");
	expect_error(null_reply(), MCP_INVALID_REQUEST, NULL);
	/* Batches are refused as a whole. */
	send_line("[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]");
	expect_error(null_reply(), MCP_INVALID_REQUEST, "batch");
	send_line("[]");
	expect_error(null_reply(), MCP_INVALID_REQUEST, "batch");
	/* Bad ids: null, an object, a fraction. */
	send_line("{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"ping\"}");
	expect_error(null_reply(), MCP_INVALID_REQUEST, "id");
	send_line("{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"ping\"}");
	expect_error(null_reply(), MCP_INVALID_REQUEST, "id");
	send_line("{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"ping\"}");
	expect_error(null_reply(), MCP_INVALID_REQUEST, "id");
	/* A good id gets its error back under that id. */
	send_line("{\"id\":7,\"method\":\"ping\"}");
	expect_error(reply_to(7), MCP_INVALID_REQUEST, "jsonrpc");
	send_line("{\"jsonrpc\":\"1.0\",\"id\":8,\"method\":\"ping\"}");
	expect_error(reply_to(8), MCP_INVALID_REQUEST, "jsonrpc");
	send_line("{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":42}");
	expect_error(reply_to(9), MCP_INVALID_REQUEST, "method");
	send_line("{\"jsonrpc\":\"2.0\",\"id\":10}");
	expect_error(reply_to(10), MCP_INVALID_REQUEST, "method");
	/* params must be an object. */
	send_line(
		"{\"jsonrpc\":\"2.0\",\"id\":11,\"method\":\"tools/list\",\"params\":[1]}");
	expect_error(reply_to(11), MCP_INVALID_PARAMS, "params");
	send_line(
		"{\"jsonrpc\":\"2.0\",\"id\":12,\"method\":\"ping\",\"params\":\"x\"}");
	expect_error(reply_to(12), MCP_INVALID_PARAMS, "params");
	expect_alive(13);
}

/* A client's bytes that are not UTF-8 never come back: the line is a parse
 * error (id null), and a name cut in the middle of a character in an error
 * text is repaired. */
Test(mcp, invalid_utf8_is_never_echoed)
{
	char name[400];
	json_object *m;

	start();
	send_line(
		"{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/\xff\xfe\"}");
	expect_error(null_reply(), MCP_PARSE_ERROR, "parse error");
	send_line(
		"{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"tools/call\",\"params\":"
		"{\"name\":\"x\xc0\xaf\",\"arguments\":{}}}");
	expect_error(null_reply(), MCP_PARSE_ERROR, "parse error");
	/* 199 ASCII bytes then "é": "%.200s" cuts inside it. */
	memset(name, 'a', 199);
	strcpy(name + 199, "\xc3\xa9\xc3\xa9");
	sendf("{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"%s\"}", name);
	m = reply_to(7);
	expect_error(m, MCP_METHOD_NOT_FOUND, NULL);
	expect_alive(8);
}

/* An id json-c cannot hold exactly would be answered as another id: such
 * requests are refused with id null. */
Test(mcp, ids_beyond_int64_are_refused_not_changed)
{
	static const char *const ids[] = {
		"18446744073709551616", "99999999999999999999999",
		"9223372036854775808",	"-9223372036854775809",
		"-9223372036854775808",
	};
	json_object *m;

	start();
	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		sendf("{\"jsonrpc\":\"2.0\",\"id\":%s,\"method\":\"ping\"}",
		      ids[i]);
		expect_error(null_reply(), MCP_INVALID_REQUEST, "id");
	}
	/* The largest exact one comes back as sent. */
	send_line(
		"{\"jsonrpc\":\"2.0\",\"id\":9223372036854775807,\"method\":\"ping\"}");
	m = next_msg(10000);
	cr_assert_not_null(m);
	cr_assert(strstr(json_object_to_json_string_ext(m,
							JSON_C_TO_STRING_PLAIN),
			 "\"id\":9223372036854775807") != NULL,
		  "%s", json_object_to_json_string(m));
	json_object_put(m);
	send_line(
		"{\"jsonrpc\":\"2.0\",\"id\":-9223372036854775807,\"method\":\"ping\"}");
	m = next_msg(10000);
	cr_assert_not_null(m);
	cr_assert(strstr(json_object_to_json_string_ext(m,
							JSON_C_TO_STRING_PLAIN),
			 "\"id\":-9223372036854775807") != NULL,
		  "%s", json_object_to_json_string(m));
	json_object_put(m);
	expect_alive(3);
}

Test(mcp, unknown_method)
{
	json_object *m;

	start();
	send_line(
		"{\"jsonrpc\":\"2.0\",\"id\":\"q-1\",\"method\":\"resources/list\"}");
	m = next_msg(10000);
	cr_assert_not_null(m);
	cr_expect_str_eq(get_str(m, "id"), "q-1");
	expect_error(m, MCP_METHOD_NOT_FOUND, "resources/list");
	expect_alive(2);
}

Test(mcp, notifications_and_responses_get_no_reply)
{
	start();
	send_line(
		"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
	send_line(
		"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/whatever\",\"params\":{}}");
	send_line(
		"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":99}}");
	send_line(
		"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":[1]}");
	send_line(
		"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\"}");
	send_line("{\"method\":\"notifications/initialized\"}");
	/* A response to a request we never sent. */
	send_line("{\"jsonrpc\":\"2.0\",\"id\":77,\"result\":{}}");
	/* The first line back must be the ping's. */
	expect_alive(1);
}

/* ---- tools/call: the request and its arguments ------------------------------------ */

Test(mcp, tools_call_request_errors)
{
	start();
	initialize("2025-11-25");
	send_line(
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{}}");
	expect_error(reply_to(1), MCP_INVALID_PARAMS, "name");
	send_line("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\"}");
	expect_error(reply_to(2), MCP_INVALID_PARAMS, "name");
	send_line(
		"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":7}}");
	expect_error(reply_to(3), MCP_INVALID_PARAMS, "name");
	call_tool(4, "rm_rf", "{}");
	expect_error(reply_to(4), MCP_INVALID_PARAMS, "unknown tool 'rm_rf'");
	call_tool(5, "exec", "[\"ls\"]");
	expect_error(reply_to(5), MCP_INVALID_PARAMS, "arguments");
	send_line(
		"{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"tools/call\",\"params\":"
		"{\"name\":\"list_dir\",\"_meta\":{\"progressToken\":true}}}");
	expect_error(reply_to(6), MCP_INVALID_PARAMS, "progressToken");
	send_line(
		"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":"
		"{\"name\":\"list_dir\",\"_meta\":5}}");
	expect_error(reply_to(7), MCP_INVALID_PARAMS, "_meta");
	expect_alive(8);
}

static const struct {
	const char *tool, *args, *words;
} bad_args[] = {
	{ "exec", "{}", "missing required argument 'command'" },
	{ "exec", "{\"command\":5}", "'command' must be a string or an array" },
	{ "exec", "{\"command\":\"\"}", "'command' must not be empty" },
	{ "exec", "{\"command\":[]}", "'command' must not be empty" },
	{ "exec", "{\"command\":[\"ls\",3]}", "'command[1]' must be a string" },
	{ "exec", "{\"command\":\"ls\",\"timeout\":\"10\"}",
	  "'timeout' must be a number" },
	{ "exec", "{\"command\":\"ls\",\"timeout\":0}",
	  "'timeout' must be more than 0" },
	{ "exec", "{\"command\":\"ls\",\"timeout\":7200}",
	  "'timeout' must be at most 3600" },
	{ "exec", "{\"command\":\"ls\",\"cwd\":\"/\"}",
	  "unknown argument 'cwd'" },
	{ "exec", "{\"command\":\"cat\",\"stdin\":[\"a\"]}",
	  "'stdin' must be a string" },
	{ "exec", "{\"command\":\"cat\",\"stdin\":null}",
	  "'stdin' must be a string" },
	{ "exec", "{\"command\":\"id\",\"user\":\"\"}",
	  "'user' must not be empty" },
	{ "exec", "{\"command\":\"id\",\"user\":0}",
	  "'user' must be a string" },
	{ "read_file", "{}", "missing required argument 'path'" },
	{ "read_file", "{\"path\":\"a\",\"offset\":1.5}",
	  "'offset' must be an integer" },
	{ "read_file", "{\"path\":\"a\",\"offset\":0}",
	  "'offset' must be at least 1" },
	{ "read_file", "{\"path\":[\"a\"]}", "'path' must be a string" },
	{ "write_file", "{\"path\":\"a\"}",
	  "missing required argument 'content'" },
	{ "write_file", "{\"path\":\"a\",\"content\":null}",
	  "'content' must be a string" },
	{ "edit_file", "{\"path\":\"a\",\"old_text\":\"\",\"new_text\":\"b\"}",
	  "'old_text' must not be empty" },
	{ "edit_file",
	  "{\"path\":\"a\",\"old_text\":\"x\",\"new_text\":\"b\",\"replace_all\":\"yes\"}",
	  "'replace_all' must be true or false" },
	{ "grep", "{\"pattern\":\"x\",\"include\":\"*.c\"}",
	  "'include' must be an array" },
	{ "grep", "{\"pattern\":\"x\",\"include\":[\"\"]}",
	  "'include[0]' must not be empty" },
	{ "grep", "{\"pattern\":\"x\",\"max_results\":100000}",
	  "'max_results' must be at most" },
	{ "find", "{\"pattern\":\"*\",\"type\":\"f\"}",
	  "'type' must be one of \"file\", \"directory\"" },
	{ "list_dir", "{\"path\":\"\"}", "'path' must not be empty" },
	{ "list_dir", "{\"recursive\":true}",
	  "unknown argument 'recursive'; the arguments are path" },
};

/* Before 2025-11-25, arguments that break the schema are invalid params. */
Test(mcp, bad_arguments_are_invalid_params_before_2025_11_25)
{
	start();
	initialize("2025-06-18");
	for (size_t i = 0; i < sizeof(bad_args) / sizeof(bad_args[0]); i++) {
		call_tool((int64_t)i + 1, bad_args[i].tool, bad_args[i].args);
		expect_error(reply_to((int64_t)i + 1), MCP_INVALID_PARAMS,
			     bad_args[i].words);
	}
	expect_alive(1000);
}

/* From 2025-11-25 on (SEP-1303) they are tool errors, which the model sees. */
Test(mcp, bad_arguments_are_tool_errors_from_2025_11_25)
{
	start();
	initialize("2025-11-25");
	for (size_t i = 0; i < sizeof(bad_args) / sizeof(bad_args[0]); i++) {
		json_object *m, *text;

		call_tool((int64_t)i + 1, bad_args[i].tool, bad_args[i].args);
		m = reply_to((int64_t)i + 1);
		cr_assert_null(get(m, "error"), "%s",
			       json_object_to_json_string(m));
		cr_expect(json_object_get_boolean(get(m, "result.isError")),
			  "%s", json_object_to_json_string(m));
		text = get(json_object_array_get_idx(get(m, "result.content"),
						     0),
			   "text");
		cr_assert_not_null(text);
		cr_expect(strstr(json_object_get_string(text),
				 bad_args[i].words) != NULL,
			  "'%s' lacks '%s'", json_object_get_string(text),
			  bad_args[i].words);
		cr_expect_null(get(m, "result.structuredContent"));
		json_object_put(m);
	}
	expect_alive(1000);
}

/* ---- the schema checker on its own ------------------------------------------------ */

static int check(const char *schema, const char *value, char *msg, size_t msgsz)
{
	json_object *s = json_tokener_parse(schema),
		    *v = json_tokener_parse(value);
	int rc;

	cr_assert_not_null(s);
	cr_assert(v || strcmp(value, "null") == 0);
	rc = mcp_schema_check(s, v, "", msg, msgsz);
	json_object_put(s);
	json_object_put(v);
	return rc;
}

Test(wire, schema_checker)
{
	const char *obj =
		"{\"type\":\"object\",\"properties\":{"
		"\"n\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":10},"
		"\"l\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":"
		"{\"k\":{\"type\":\"string\"}},\"required\":[\"k\"]}}},"
		"\"additionalProperties\":false}";
	char msg[300];

	cr_expect_eq(check(obj, "{}", msg, sizeof(msg)), 0);
	cr_expect_eq(check(obj, "{\"n\":5}", msg, sizeof(msg)), 0);
	/* 5.0 is an integer in JSON Schema; 5.5 is not. */
	cr_expect_eq(check(obj, "{\"n\":5.0}", msg, sizeof(msg)), 0);
	cr_expect_eq(check(obj, "{\"n\":5.5}", msg, sizeof(msg)), -1);
	cr_expect_str_eq(msg, "'n' must be an integer");
	cr_expect_eq(check(obj, "{\"n\":11}", msg, sizeof(msg)), -1);
	cr_expect_str_eq(msg, "'n' must be at most 10");
	cr_expect_eq(check(obj, "{\"n\":true}", msg, sizeof(msg)), -1);
	cr_expect_eq(check(obj, "{\"l\":[{\"k\":\"a\"},{}]}", msg, sizeof(msg)),
		     -1);
	cr_expect_str_eq(msg, "'l[1]' lacks 'k'");
	cr_expect_eq(check(obj, "{\"l\":[{\"k\":1}]}", msg, sizeof(msg)), -1);
	cr_expect_str_eq(msg, "'l[0].k' must be a string");
	cr_expect_eq(check(obj, "[]", msg, sizeof(msg)), -1);
	cr_expect_str_eq(msg, "the arguments must be an object");
	cr_expect_eq(check(obj, "{\"z\":1}", msg, sizeof(msg)), -1);
	cr_expect_str_eq(msg, "unknown argument 'z'; the arguments are n, l");
	/* Type lists, as output schemas use them. */
	cr_expect_eq(check("{\"type\":[\"integer\",\"null\"]}", "null", msg,
			   sizeof(msg)),
		     0);
	cr_expect_eq(check("{\"type\":[\"integer\",\"null\"]}", "\"x\"", msg,
			   sizeof(msg)),
		     -1);
	cr_expect_str_eq(msg, "the arguments must be an integer or null");
	/* A tiny message buffer is cut, never overrun. */
	cr_expect_eq(check(obj, "{\"zzzzzzzzzzzzzzzzzzzz\":1}", msg, 8), -1);
	cr_expect_eq(strlen(msg), 7);
}

/* Every tool's schemas parse, and the input schemas accept a good call. */
Test(wire, tool_schemas_accept_good_arguments)
{
	static const struct {
		const char *tool, *args;
	} good[] = {
		{ "exec", "{\"command\":\"ls -l | wc -l\"}" },
		{ "exec",
		  "{\"command\":[\"ls\",\"-l\"],\"timeout\":0.5,\"workdir\":\"src\"}" },
		{ "exec",
		  "{\"command\":\"env\",\"env\":{\"CI\":\"1\",\"A_B\":\"x y\"}}" },
		{ "exec", "{\"command\":\"cat\",\"stdin\":\"a\\u0000b\\n\"}" },
		{ "exec", "{\"command\":\"cat\",\"stdin\":\"\"}" },
		{ "exec", "{\"command\":[\"id\"],\"user\":\"0:0\"}" },
		{ "exec", "{\"command\":\"id\",\"user\":\"sandbox\"}" },
		{ "read_file",
		  "{\"path\":\"a.c\",\"offset\":10,\"limit\":20}" },
		{ "read_file", "{\"path\":\"a.c\",\"line_numbers\":false}" },
		{ "delete_file", "{\"path\":\"build\",\"recursive\":true}" },
		{ "delete_file", "{\"path\":\"a.c\"}" },
		{ "move_file", "{\"from\":\"a.c\",\"to\":\"src/a.c\"}" },
		{ "move_file",
		  "{\"from\":\"a.c\",\"to\":\"b.c\",\"overwrite\":true}" },
		{ "write_file", "{\"path\":\"a.c\",\"content\":\"\"}" },
		{ "edit_file",
		  "{\"path\":\"a.c\",\"old_text\":\"a\",\"new_text\":\"\",\"replace_all\":true}" },
		{ "grep",
		  "{\"pattern\":\"x\",\"path\":\"src\",\"include\":[\"*.c\"],\"ignore_case\":true,\"max_results\":5}" },
		{ "find",
		  "{\"pattern\":\"*.c\",\"path\":\"src\",\"type\":\"directory\",\"max_results\":5}" },
		{ "list_dir", "{}" },
		{ "exec", "{\"command\":\"python3 -m http.server\","
			  "\"background\":true,\"workdir\":\"www\"}" },
		{ "processes", "{}" },
		{ "process_output", "{\"id\":\"p0a1b2c3d\"}" },
		{ "process_output",
		  "{\"id\":\"p0a1b2c3d\",\"offset\":4096,\"max_bytes\":100}" },
		{ "process_kill", "{\"id\":\"p0a1b2c3d\"}" },
		{ "process_kill",
		  "{\"id\":\"p0a1b2c3d\",\"signal\":\"TERM\"}" },
	};
	char msg[300];

	cr_assert_eq(mcp_tools_init(), 0);
	cr_assert_eq(mcp_tool_count(), 12);
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		const mcp_tool *t = mcp_tool_find(good[i].tool);
		json_object *v = json_tokener_parse(good[i].args);

		cr_assert_not_null(t);
		cr_expect_eq(mcp_schema_check(mcp_tool_input_schema(t), v, "",
					      msg, sizeof(msg)),
			     0, "%s %s: %s", good[i].tool, good[i].args, msg);
		json_object_put(v);
	}
}

/* The exec tool's env holds strings only. */
Test(wire, exec_env_values_are_strings)
{
	const mcp_tool *t;
	json_object *v =
		json_tokener_parse("{\"command\":\"env\",\"env\":{\"CI\":1}}");
	char msg[300];

	cr_assert_eq(mcp_tools_init(), 0);
	t = mcp_tool_find("exec");
	cr_assert_not_null(t);
	cr_expect_eq(mcp_schema_check(mcp_tool_input_schema(t), v, "", msg,
				      sizeof(msg)),
		     -1);
	cr_expect_str_eq(msg, "'env.CI' must be a string");
	json_object_put(v);
}

/* ---- running calls, against the fake engine --------------------------------------- */

/*
 * The fake engine answers for a running container "hutch-mcp-unit".  An
 * exec whose command holds "LONG" writes "tick N" every 50 ms until the
 * test releases it (or the client hangs up); anything else ends at once
 * with exit code 0.
 */
static int released;
static int long_starts;

static int is(const struct fake_request *r, const char *method,
	      const char *prefix)
{
	return strcmp(r->method, method) == 0 &&
	       strncmp(r->path, prefix, strlen(prefix)) == 0;
}

/*
 * The agent's answers to file tools the fake engine plays: an exec whose
 * command line holds `match` (a tool and a path) gets exec id `id`, whose
 * output is `answer`.  They are the agent's refusals, in its own words,
 * which the server must turn into its tools' words.
 */
static const struct {
	const char *match, *id, *answer;
} fs_answers[] = {
	{ "\"delete\",\"--\",\"full\"", "fade01",
	  "{\"error\":{\"code\":\"not_empty\",\"message\":"
	  "\"'full' is a directory that is not empty\"}}\n" },
	{ "\"move\",\"--\",\"a.txt\",\"b.txt\"", "fade02",
	  "{\"error\":{\"code\":\"exists\",\"message\":\"'b.txt' exists\"}}\n" },
	{ "\"amb.txt\"", "fade03",
	  "{\"error\":{\"code\":\"ambiguous\",\"message\":\"the old text "
	  "occurs 2 times in 'amb.txt' (exact match); add context so that it "
	  "occurs once\",\"lines\":[1,3],\"count\":2,\"match\":\"exact\"}}\n" },
	{ "\"nomatch.txt\"", "fade04",
	  "{\"error\":{\"code\":\"no_match\",\"message\":\"the old text was "
	  "not found in 'nomatch.txt'\"}}\n" },
};

static fake_action engine_handler(struct fake_conn *c,
				  const struct fake_request *r, void *p)
{
	(void)p;
	for (size_t i = 0; i < sizeof(fs_answers) / sizeof(*fs_answers); i++) {
		char start[64];

		if (is(r, "POST", "/v1.41/containers/hutch-mcp-unit/exec") &&
		    strstr(r->body, fs_answers[i].match)) {
			char id[64];

			snprintf(id, sizeof(id), "{\"Id\":\"%s\"}",
				 fs_answers[i].id);
			fake_send_json(c, 201, id);
			return FAKE_KEEP;
		}
		snprintf(start, sizeof(start), "/v1.41/exec/%s/start",
			 fs_answers[i].id);
		if (is(r, "POST", start)) {
			fake_sendf(
				c,
				"HTTP/1.1 200 OK\r\nContent-Type: application/vnd.docker.raw-stream\r\n"
				"Api-Version: 1.41\r\n\r\n");
			fake_send_frame(c, 1, fs_answers[i].answer,
					strlen(fs_answers[i].answer));
			return FAKE_CLOSE;
		}
	}
	if (is(r, "POST", "/v1.41/containers/hutch-mcp-unit/exec")) {
		fake_send_json(c, 201,
			       strstr(r->body, "LONG") ? "{\"Id\":\"abc123\"}" :
							 "{\"Id\":\"def456\"}");
		return FAKE_KEEP;
	}
	if (is(r, "POST", "/v1.41/exec/abc123/start")) {
		__atomic_fetch_add(&long_starts, 1, __ATOMIC_SEQ_CST);
		fake_sendf(
			c,
			"HTTP/1.1 200 OK\r\nContent-Type: application/vnd.docker.raw-stream\r\n"
			"Api-Version: 1.41\r\n\r\n");
		for (int i = 0;
		     i < 400 && !__atomic_load_n(&released, __ATOMIC_SEQ_CST);
		     i++) {
			char line[32];
			int n = snprintf(line, sizeof(line), "tick %d\n", i);

			if (fake_send_frame(c, 1, line, (size_t)n) < 0)
				break;
			fake_sleep_ms(50);
		}
		return FAKE_CLOSE;
	}
	if (is(r, "POST", "/v1.41/exec/def456/start")) {
		fake_sendf(
			c,
			"HTTP/1.1 200 OK\r\nContent-Type: application/vnd.docker.raw-stream\r\n"
			"Api-Version: 1.41\r\n\r\n");
		fake_send_frame(c, 1, "short\n", 6);
		return FAKE_CLOSE;
	}
	if (is(r, "GET", "/v1.41/exec/")) {
		fake_send_json(c, 200, "{\"Running\":false,\"ExitCode\":0}");
		return FAKE_KEEP;
	}
	if (is(r, "GET", "/v1.41/containers/hutch-mcp-unit/json")) {
		fake_send_json(
			c, 200,
			"{\"Id\":\"c0ffee\",\"State\":{\"Status\":\"running\","
			"\"Running\":true}}");
		return FAKE_KEEP;
	}
	fake_send_json(c, 404,
		       "{\"message\":\"not played by the fake engine\"}");
	return FAKE_KEEP;
}

static const char *fake_urls[1];

static void start_fake(unsigned max_calls)
{
	mcp_config c = base_config();

	released = 0;
	long_starts = 0;
	cr_assert_eq(fake_engine_start(&fe, engine_handler, NULL), 0,
		     "fake engine: %m");
	fake_urls[0] = fake_engine_url(fe);
	c.engine_urls = fake_urls;
	c.nengines = 1;
	c.max_calls = max_calls;
	c.progress_ms = 100;
	start_with(&c);
}

static void wait_long_starts(int n)
{
	for (int i = 0;
	     i < 200 && __atomic_load_n(&long_starts, __ATOMIC_SEQ_CST) < n;
	     i++)
		usleep(20000);
	if (__atomic_load_n(&long_starts, __ATOMIC_SEQ_CST) < n) {
		static char log[8192];

		json_object *m = next_msg(0);

		fake_engine_log_dump(fe, log, sizeof(log));
		cr_assert_fail(
			"the long command did not start; the engine saw:\n%s\n"
			"the server said: %s",
			log, m ? json_object_to_json_string(m) : "nothing");
	}
}

static const char *result_text(json_object *m)
{
	json_object *t = get(
		json_object_array_get_idx(get(m, "result.content"), 0), "text");

	return t ? json_object_get_string(t) : "";
}

Test(mcp, initialize_and_tools_list_never_touch_the_engine)
{
	json_object *m;

	start_fake(0);
	initialize("2025-06-18");
	json_object_put(list_tools(1));
	expect_alive(2);
	cr_expect_eq(fake_engine_connections(fe), 0,
		     "connections before any tool call");
	cr_expect_eq(fake_engine_request_count(fe), 0);
	/* The first tool call is what reaches it (so the check above can
	 * fail). */
	call_tool(3, "exec", "{\"command\":\"echo\"}");
	m = reply_to(3);
	cr_expect_str_eq(get_str(m, "result.structuredContent.stdout"),
			 "short\n", "%s", json_object_to_json_string(m));
	cr_expect_gt(fake_engine_connections(fe), 0);
	json_object_put(m);
}

Test(mcp, exec_result_has_text_and_structured_content)
{
	json_object *m;

	start_fake(0);
	initialize("2025-06-18");
	call_tool(1, "exec", "{\"command\":[\"echo\",\"x\"]}");
	m = reply_to(1);
	cr_expect_null(get(m, "result.isError"));
	cr_expect_eq(get_int(m, "result.structuredContent.exit_code"), 0);
	cr_expect_str_eq(get_str(m, "result.structuredContent.status"), "ok");
	cr_expect_str_eq(get_str(m, "result.structuredContent.session"),
			 "mcp-unit");
	cr_expect(strstr(result_text(m), "exit code 0") != NULL, "%s",
		  result_text(m));
	cr_expect(strstr(result_text(m), "short") != NULL, "%s",
		  result_text(m));
	json_object_put(m);

	/* An old client gets the text only. */
	initialize("2025-03-26");
	call_tool(2, "exec", "{\"command\":[\"echo\",\"x\"]}");
	m = reply_to(2);
	cr_expect_null(get(m, "result.structuredContent"));
	cr_expect(strstr(result_text(m), "short") != NULL);
	json_object_put(m);
}

Test(mcp, an_unreachable_engine_is_a_tool_error)
{
	json_object *m;

	start();
	initialize("2025-06-18");
	call_tool(1, "read_file", "{\"path\":\"a.txt\"}");
	m = reply_to(1);
	cr_expect(json_object_get_boolean(get(m, "result.isError")), "%s",
		  json_object_to_json_string(m));
	cr_expect(strstr(result_text(m), "hutch-mcp-test.sock") != NULL, "%s",
		  result_text(m));
	json_object_put(m);
	expect_alive(2);
}

Test(mcp, progress_while_a_command_runs)
{
	json_object *m;
	int64_t last = 0;
	size_t n;

	start_fake(0);
	initialize("2025-06-18");
	send_line(
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":"
		"{\"name\":\"exec\",\"arguments\":{\"command\":\"LONG\"},"
		"\"_meta\":{\"progressToken\":\"tok-1\"}}}");
	wait_long_starts(1);
	/* Notifications come every second whether or not there is output;
	 * the command's output ("tick") shows up in one of them once it has
	 * been read, which a slow (sanitizer, valgrind) build may delay. */
	for (int i = 0, seen_tick = 0; !seen_tick; i++) {
		cr_assert_lt(i, 20,
			     "no progress notification showed the output");
		m = next_msg(5000);
		cr_assert_not_null(m, "no progress notification");
		cr_assert_str_eq(get_str(m, "method"), "notifications/progress",
				 "%s", json_object_to_json_string(m));
		cr_expect_str_eq(get_str(m, "params.progressToken"), "tok-1");
		cr_expect_gt(get_int(m, "params.progress"), last,
			     "progress must increase");
		last = get_int(m, "params.progress");
		cr_expect(strstr(get_str(m, "params.message"), "running") !=
			  NULL);
		seen_tick = strstr(get_str(m, "params.message"), "tick") !=
			    NULL;
		json_object_put(m);
	}
	__atomic_store_n(&released, 1, __ATOMIC_SEQ_CST);
	m = reply_to(1);
	cr_expect(strstr(get_str(m, "result.structuredContent.stdout"),
			 "tick 0\n") != NULL);
	json_object_put(m);
	/* Nothing about the call after its reply. */
	n = json_object_array_length(H.notes);
	expect_alive(2);
	usleep(300000);
	expect_alive(3);
	cr_expect_eq(json_object_array_length(H.notes), n,
		     "progress after the reply");
}

Test(mcp, no_progress_without_a_token)
{
	json_object *m;

	start_fake(0);
	initialize("2025-06-18");
	call_tool(1, "exec", "{\"command\":\"LONG\"}");
	wait_long_starts(1);
	usleep(400000);
	__atomic_store_n(&released, 1, __ATOMIC_SEQ_CST);
	m = reply_to(1);
	json_object_put(m);
	cr_expect_eq(json_object_array_length(H.notes), 0);
}

Test(mcp, a_cancelled_call_gets_no_reply)
{
	json_object *m;

	start_fake(0);
	initialize("2025-06-18");
	call_tool(1, "exec", "{\"command\":\"LONG\"}");
	wait_long_starts(1);
	send_line("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\","
		  "\"params\":{\"requestId\":1,\"reason\":\"user\"}}");
	/* The call ends (the stream is abandoned) without a reply. */
	expect_alive(2);
	m = next_msg(1500);
	cr_expect_null(m, "a reply to a cancelled call: %s",
		       m ? json_object_to_json_string(m) : "");
	json_object_put(m);
	/* Its id is free again: no "still running". */
	call_tool(1, "exec", "{\"command\":\"echo\"}");
	m = reply_to(1);
	cr_expect_null(get(m, "error"), "%s", json_object_to_json_string(m));
	json_object_put(m);
	cr_expect_lt(stop(), 5.0);
}

Test(mcp, calls_overlap)
{
	json_object *m;

	start_fake(0);
	initialize("2025-06-18");
	call_tool(1, "exec", "{\"command\":\"LONG\"}");
	wait_long_starts(1);
	/* While it runs: other requests and another tool call are served. */
	json_object_put(list_tools(2));
	call_tool(3, "exec", "{\"command\":\"echo\"}");
	m = reply_to(3);
	cr_expect_str_eq(get_str(m, "result.structuredContent.stdout"),
			 "short\n");
	json_object_put(m);
	/* The same id again while the first runs is refused. */
	call_tool(1, "exec", "{\"command\":\"echo\"}");
	expect_error(reply_to(1), MCP_INVALID_REQUEST, "still running");
	__atomic_store_n(&released, 1, __ATOMIC_SEQ_CST);
	m = reply_to(1);
	cr_expect(strstr(get_str(m, "result.structuredContent.stdout"),
			 "tick") != NULL);
	json_object_put(m);
}

Test(mcp, the_number_of_running_calls_is_capped)
{
	json_object *m;

	start_fake(2);
	initialize("2025-06-18");
	call_tool(1, "exec", "{\"command\":\"LONG\"}");
	call_tool(2, "exec", "{\"command\":\"LONG\"}");
	wait_long_starts(2);
	call_tool(3, "exec", "{\"command\":\"echo\"}");
	m = reply_to(3);
	cr_expect(json_object_get_boolean(get(m, "result.isError")));
	cr_expect(strstr(result_text(m), "2 tool calls are already running") !=
			  NULL,
		  "%s", result_text(m));
	json_object_put(m);
	__atomic_store_n(&released, 1, __ATOMIC_SEQ_CST);
	for (int i = 0; i < 2; i++) {
		m = next_msg(10000);
		cr_assert_not_null(m);
		cr_expect(is_id(m, 1) || is_id(m, 2), "%s",
			  json_object_to_json_string(m));
		json_object_put(m);
	}
	/* Room again. */
	call_tool(4, "exec", "{\"command\":\"echo\"}");
	m = reply_to(4);
	cr_expect_null(get(m, "result.isError"), "%s",
		       json_object_to_json_string(m));
	json_object_put(m);
}

Test(mcp, eof_stops_running_calls)
{
	start_fake(0);
	initialize("2025-06-18");
	call_tool(1, "exec", "{\"command\":\"LONG\"}");
	wait_long_starts(1);
	/* The fake would run for 20 s; EOF must cancel it at once. */
	cr_expect_lt(stop(), 5.0);
	cr_expect_eq(H.rc, 0);
}

Test(mcp, the_wake_fd_stops_the_server)
{
	mcp_config c = base_config();
	int w[2];

	cr_assert_eq(pipe(w), 0);
	c.wake_fd = w[0];
	start_with(&c);
	expect_alive(1);
	cr_assert_eq(write(w[1], "x", 1), 1);
	pthread_join(H.th, NULL);
	H.running = 0;
	cr_expect_eq(H.rc, 0);
	close(H.in_w);
	close(H.in_r);
	close(H.out_r);
	close(w[0]);
	close(w[1]);
}

/*
 * Errors speak the caller's language: a file tool's error names the MCP
 * tool and its parameters (edit_file, old_text, replace_all, recursive,
 * overwrite), never the CLI's command or options (edit:, --all,
 * --recursive, --overwrite), whether the library refused the call or the
 * agent did.
 */
Test(mcp, file_tool_errors_name_the_tools_and_parameters)
{
	static const struct {
		const char *tool, *args, *want;
	} calls[] = {
		/* refused by the library, before any request */
		{ "edit_file",
		  "{\"path\":\"x.txt\",\"old_text\":\"a\",\"new_text\":\"a\"}",
		  "edit_file: old_text and new_text are the same" },
		/* refused by the agent, said in the server's words */
		{ "delete_file", "{\"path\":\"full\"}",
		  "delete_file: 'full' is a directory that is not empty; with "
		  "recursive: true it is deleted with everything in it" },
		{ "move_file", "{\"from\":\"a.txt\",\"to\":\"b.txt\"}",
		  "move_file: 'b.txt' exists; with overwrite: true it is "
		  "replaced" },
		{ "edit_file",
		  "{\"path\":\"amb.txt\",\"old_text\":\"x\",\"new_text\":\"y\"}",
		  "edit_file: old_text occurs 2 times in 'amb.txt' (lines 1, "
		  "3; exact match): add lines around it so that it occurs "
		  "once, or with replace_all: true every occurrence is "
		  "replaced" },
		{ "edit_file",
		  "{\"path\":\"nomatch.txt\",\"old_text\":\"x\",\"new_text\":\"y\"}",
		  "edit_file: old_text was not found in 'nomatch.txt'" },
	};
	static const char *const cli_words[] = { "--all", "--recursive",
						 "--overwrite",
						 "edit:", "the old text" };

	start_fake(0);
	initialize("2025-06-18");
	for (size_t i = 0; i < sizeof(calls) / sizeof(*calls); i++) {
		json_object *m;
		const char *text;

		call_tool((int64_t)i + 1, calls[i].tool, calls[i].args);
		m = reply_to((int64_t)i + 1);
		text = result_text(m);
		cr_expect(json_object_get_boolean(get(m, "result.isError")),
			  "%s %s: %s", calls[i].tool, calls[i].args,
			  json_object_to_json_string(m));
		cr_expect(strncmp(text, calls[i].want, strlen(calls[i].want)) ==
				  0,
			  "%s %s:\n got: %s\nwant: %s", calls[i].tool,
			  calls[i].args, text, calls[i].want);
		for (size_t k = 0; k < sizeof(cli_words) / sizeof(*cli_words);
		     k++)
			cr_expect(strstr(text, cli_words[k]) == NULL,
				  "%s names the CLI's '%s': %s", calls[i].tool,
				  cli_words[k], text);
		json_object_put(m);
	}
}
