/*
 * fuzz_jsonrpc.c - the MCP server's wire (src/mcp/jsonrpc.c)
 *
 * The input is what an MCP client writes on our stdin: lines go through
 * the bounded line reader (with a small cap, so over-long lines are
 * exercised), each line through message parsing, and the arguments of a
 * tools/call through the schema checker with a schema shaped like the
 * tools' own.
 */
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"
#include "mcp.h"

static const char schema_text[] =
	"{\"type\":\"object\",\"properties\":{"
	"\"command\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":100},"
	"\"argv\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"minItems\":1,\"maxItems\":8},"
	"\"timeout\":{\"type\":\"number\",\"exclusiveMinimum\":0,\"maximum\":3600},"
	"\"max\":{\"type\":\"integer\",\"minimum\":1},"
	"\"mode\":{\"enum\":[\"a\",\"b\"]},"
	"\"x\":{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"null\"}]},"
	"\"env\":{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"}}},"
	"\"required\":[\"command\"],\"additionalProperties\":false}";

static void one_line(const char *line, size_t len, json_object *schema)
{
	mcp_message msg;
	json_object *reply = NULL, *args;
	char why[256];

	if (mcp_message_parse(&msg, line, len, &reply) < 0) {
		if (reply) {
			size_t n;
			char *owned;
			const char *w = mcp_to_wire(reply, &n, &owned);

			FUZZ_CHECK(w != NULL);
			/* What goes out is always valid UTF-8. */
			FUZZ_CHECK(hutch__utf8_valid_len(w, n) == n);
			free(owned);
		}
		json_object_put(reply);
		return;
	}
	FUZZ_CHECK(reply == NULL);
	FUZZ_CHECK(msg.root != NULL);
	if (msg.params &&
	    json_object_object_get_ex(msg.params, "arguments", &args)) {
		why[0] = '\0';
		if (mcp_schema_check(schema, args, "", why, sizeof(why)) < 0)
			FUZZ_CHECK(why[0] != '\0');
	}
	if (msg.id) {
		json_object *r =
			mcp_error_reply(msg.id, MCP_INTERNAL_ERROR, "x");

		FUZZ_CHECK(mcp_id_equal(msg.id, msg.id));
		json_object_put(r);
	}
	if (msg.method)
		(void)mcp_negotiate_version(msg.method);
	mcp_message_clear(&msg);
}

FUZZ_TARGET(jsonrpc)
{
	static json_object *schema;
	mcp_reader *r = NULL;
	const char *line;
	size_t len;
	int fds[2], rc, lines = 0;

	if (!schema)
		schema = json_tokener_parse(schema_text);
	FUZZ_CHECK(schema != NULL);
	/* The whole input at once, as one line.  mcp_message_parse reads
	 * the byte after the line (a NUL spares it a copy), so there must be
	 * one: NUL or not, as the first byte says. */
	{
		char *whole = malloc(size + 1);

		FUZZ_CHECK(whole != NULL);
		memcpy(whole, data, size);
		whole[size] = size && (data[0] & 1) ? 'x' : '\0';
		one_line(whole, size, schema);
		free(whole);
	}

	/* A pipe holds 64 KiB; inputs are far smaller. */
	if (size > 60000 || pipe2(fds, O_CLOEXEC) < 0)
		return 0;
	FUZZ_CHECK(write(fds[1], data, size) == (ssize_t)size);
	close(fds[1]);
	FUZZ_CHECK(mcp_reader_new(&r, fds[0], -1, 512) == 0);
	while ((rc = mcp_reader_next(r, &line, &len)) != MCP_READ_EOF) {
		FUZZ_CHECK(rc == MCP_READ_LINE || rc == MCP_READ_TOOBIG);
		if (rc == MCP_READ_LINE) {
			FUZZ_CHECK(len <= 512);
			FUZZ_CHECK(memchr(line, '\n', len) == NULL);
			one_line(line, len, schema);
		}
		FUZZ_CHECK(++lines <= (int)size + 1);
	}
	mcp_reader_free(r);
	close(fds[0]);
	return 0;
}
