/*
 * test_input.c - hostile tests (see doc/threat-model.md): malformed and
 * hostile input at hutch's edges
 *
 * The input comes from the caller (a timeout, argv and paths with bytes
 * that are not UTF-8, an argv over the kernel's limit, an MCP client's
 * broken lines) or from the sandbox (names with control characters, junk
 * in place of the last-used record, a large file-tool answer), and each
 * test checks the outcome hutch promises for it: refused with a clear
 * error, escaped, masked, or bounded.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>

#include <criterion/criterion.h>
#include <json-c/json.h>

#include "harness.h"

/* ---- helpers ---------------------------------------------------------- */

static it_result run_ok(const char *what, const char *arg, ...)
	__attribute__((sentinel));
static it_result run_ok(const char *what, const char *arg, ...)
{
	const char *args[32];
	size_t n = 0;
	va_list ap;
	it_result r;

	va_start(ap, arg);
	for (const char *a = arg; a && n < 31; a = va_arg(ap, const char *))
		args[n++] = a;
	va_end(ap);
	args[n] = NULL;
	r = it_hutch_v(NULL, args);
	IT_ASSERT_EXIT(r, 0, what);
	return r;
}

static void up(const char *s)
{
	it_result r = run_ok("hutch up", "up", s, NULL);

	it_result_free(&r);
}

/* The names in the workspace's top directory, as `ls --json` gives them. */
static json_object *ls_json(const char *s)
{
	it_result r = run_ok("hutch ls --json", "ls", s, "--json", NULL);
	json_object *j = it_json(r.out, r.out_len);

	it_result_free(&r);
	return j;
}

static int ls_has(json_object *ls, const char *name)
{
	json_object *e = it_json_get(ls, "entries");

	for (size_t i = 0; i < json_object_array_length(e); i++)
		if (strcmp(json_object_get_string(it_json_get(
				   json_object_array_get_idx(e, i), "name")),
			   name) == 0)
			return 1;
	return 0;
}

/* `hutch mcp --session S [extra]` on pipes: every line of `lines` is sent,
 * then replies are read until the one to request `last_id`; stdin is then
 * closed.  Returns stdout (malloc'ed, NUL-terminated), or fails. */
static char *mcp_talk(const char *session, const char *extra,
		      const char *const *lines, size_t nlines,
		      long long last_id, size_t *out_len)
{
	int in[2], out[2];
	pid_t pid;
	char *buf = NULL, want[64];
	size_t len = 0, alloc = 0;
	double t0 = it_now();
	int status;

	cr_assert_eq(pipe2(in, O_CLOEXEC), 0);
	cr_assert_eq(pipe2(out, O_CLOEXEC), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		const char *argv[] = { HUTCH_BIN, "--engine",  it_engine(),
				       "mcp",	  "--session", session,
				       extra,	  NULL };

		int null = open("/dev/null", O_WRONLY);

		dup2(in[0], 0);
		dup2(out[1], 1);
		dup2(null, 2);
		execv(HUTCH_BIN, (char *const *)argv);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	signal(SIGPIPE, SIG_IGN);
	for (size_t i = 0; i < nlines; i++) {
		cr_assert_eq(write(in[1], lines[i], strlen(lines[i])),
			     (ssize_t)strlen(lines[i]));
		cr_assert_eq(write(in[1], "\n", 1), 1);
	}
	snprintf(want, sizeof(want), "\"id\":%lld,", last_id);
	while (!buf || !strstr(buf, want)) {
		struct pollfd p = { out[0], POLLIN, 0 };
		ssize_t n;

		cr_assert_lt(it_now() - t0, 90.0,
			     "hutch mcp gave no reply to %lld:\n%.2000s",
			     last_id, buf ? buf : "");
		if (poll(&p, 1, 1000) <= 0)
			continue;
		if (len + 65536 + 1 > alloc) {
			alloc = alloc ? alloc * 2 : 131072;
			buf = realloc(buf, alloc);
			cr_assert_not_null(buf);
		}
		n = read(out[0], buf + len, alloc - len - 1);
		cr_assert_gt(n, 0, "hutch mcp ended early:\n%.2000s",
			     buf ? buf : "");
		len += (size_t)n;
		buf[len] = '\0';
	}
	close(in[1]);
	close(out[0]);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	*out_len = len;
	return buf;
}

#define MCP_INIT                                                                           \
	"{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{"             \
	"\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{\"name\":" \
	"\"t\",\"version\":\"1\"}}}"

/* Each line of the MCP output as JSON (valid UTF-8 checked by it_json);
 * the reply to `id`, or NULL. */
static json_object *mcp_reply(const char *out, size_t len, long long id)
{
	const char *p = out, *end = out + len;
	json_object *found = NULL;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		json_object *m = it_json(p, n), *v;

		if (!found && json_object_object_get_ex(m, "id", &v) && v &&
		    json_object_is_type(v, json_type_int) &&
		    json_object_get_int64(v) == id)
			found = json_object_get(m);
		json_object_put(m);
		p += n + 1;
	}
	return found;
}

/* ---- 9. a timeout below the resolution ------------------------------- */

IT_TEST(input, timeout_below_a_millisecond_is_not_none)
{
	const char *s = it_session();
	it_result r;
	char job[256], file[] = "/tmp/hutch-it-batch-XXXXXX";
	json_object *j;
	int fd;

	up(s);
	/* 0.4 ms rounded to 0 ms, which means "no timeout": the sleep ran
	 * to its end and exited 0. */
	r = it_hutch("exec", s, "--timeout", "0.0004", "--", "sleep", "5",
		     NULL);
	IT_ASSERT_EXIT(r, 124, "exec --timeout 0.0004 -- sleep 5");
	it_result_free(&r);

	snprintf(
		job, sizeof(job),
		"{\"session\":\"%s\",\"command\":[\"sleep\",\"5\"],\"timeout\":0.0004}\n",
		s);
	fd = mkstemp(file);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, job, strlen(job)), (ssize_t)strlen(job));
	close(fd);
	r = it_hutch("batch", file, "--keep", NULL);
	unlink(file);
	j = it_json(r.out, r.out_len);
	cr_assert_str_eq(json_object_get_string(it_json_get(j, "status")),
			 "timeout", "batch timeout 0.0004: %s", r.out);
	json_object_put(j);
	it_result_free(&r);
}

/* ---- 10. bytes that are not UTF-8 ------------------------------------ */

IT_TEST(input, bytes_that_are_not_utf8_are_refused)
{
	const char *s = it_session();
	json_object *ls;
	it_result r;

	up(s);
	/* The engine would have run `touch /workspace/caf\uFFFD`. */
	r = it_hutch("exec", s, "--", "touch", "/workspace/caf\xe9", NULL);
	IT_ASSERT_EXIT(r, 125, "exec touch caf\\xe9");
	cr_assert(strstr(r.err, "'/workspace/caf\\xe9' is not valid UTF-8"),
		  "%s", r.err);
	it_result_free(&r);

	r = it_hutch("exec", s, "--env", "NAME=caf\xe9", "--", "sh", "-c",
		     "touch \"/workspace/env-$NAME\"", NULL);
	IT_ASSERT_EXIT(r, 125, "exec --env NAME=caf\\xe9");
	cr_assert(strstr(r.err, "environment entry 'NAME=caf\\xe9'"), "%s",
		  r.err);
	it_result_free(&r);

	r = it_hutch("write", s, "w-caf\xe9", "--content", "x", NULL);
	cr_assert_neq(r.status, 0, "write to w-caf\\xe9 succeeded");
	cr_assert(strstr(r.err, "not valid UTF-8"), "%s", r.err);
	it_result_free(&r);

	/* --json: the error is one valid JSON object (it_json checks UTF-8). */
	r = it_hutch("exec", s, "--json", "--", "touch", "/workspace/j\xff",
		     NULL);
	IT_ASSERT_EXIT(r, 125, "exec --json touch j\\xff");
	json_object_put(it_json(r.out, r.out_len));
	it_result_free(&r);

	ls = ls_json(s);
	cr_assert_not(ls_has(ls, "caf\xef\xbf\xbd"),
		      "a file caf\\uFFFD was made");
	cr_assert_not(ls_has(ls, "env-caf\xef\xbf\xbd"),
		      "a file env-caf\\uFFFD was made");
	cr_assert_not(ls_has(ls, "w-caf\xef\xbf\xbd"),
		      "a file w-caf\\uFFFD was written");
	cr_assert_not(ls_has(ls, "j\xef\xbf\xbd"), "a file j\\uFFFD was made");
	json_object_put(ls);
}

/* ---- 11. secrets in argv and in encoded forms --------------------------- */

/* The value and, written out by hand, its forms. */
#define SECRET "Tok/3n+v@l\"ue\xc3\xa9"
#define SECRET_PCT "Tok%2F3n%2Bv%40l%22ue%C3%A9" /* encodeURIComponent */
#define SECRET_JSON "Tok\\/3n+v@l\\\"ue\\u00e9"	 /* PHP json_encode */

IT_TEST(input, secrets_are_masked_in_argv_and_encoded_forms)
{
	const char *s = it_session();
	const char *lines[] = {
		MCP_INIT,
		"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}",
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":"
		"\"exec\",\"arguments\":{\"command\":[\"echo\",\""
		"Tok/3n+v@l\\\"ue\xc3\xa9"
		"\"]}}}",
	};
	json_object *j, *argv;
	it_result r;
	char *out;
	size_t len;

	up(s);
	setenv("IT_TOKEN", SECRET, 1);
	/* The value itself on the command line: --json showed it in argv. */
	r = it_hutch("exec", s, "--secret", "IT_TOKEN", "--json", "--", "echo",
		     SECRET, NULL);
	IT_ASSERT_EXIT(r, 0, "exec --secret --json echo SECRET");
	cr_assert_null(strstr(r.out, "Tok/3n"), "--json shows the secret: %s",
		       r.out);
	cr_assert_null(strstr(r.out, "Tok\\/3n"), "--json shows the secret: %s",
		       r.out);
	j = it_json(r.out, r.out_len);
	argv = it_json_get(j, "argv");
	cr_assert_str_eq(
		json_object_get_string(json_object_array_get_idx(argv, 1)),
		"[REDACTED]");
	json_object_put(j);
	it_result_free(&r);

	/* Its percent-encoded and JSON-escaped forms, printed by the command. */
	r = it_hutch("exec", s, "--secret", "IT_TOKEN", "--", "printf",
		     "%s\\n%s\\n", SECRET_PCT, SECRET_JSON, NULL);
	IT_ASSERT_EXIT(r, 0, "exec printf forms");
	cr_assert_str_eq(r.out, "[REDACTED]\n[REDACTED]\n", "forms shown: %s",
			 r.out);
	it_result_free(&r);

	/* MCP: structuredContent's argv. */
	out = mcp_talk(s, "--secret=IT_TOKEN", lines, 3, 1, &len);
	cr_assert_null(memmem(out, len, "Tok/3n", 6),
		       "MCP shows the secret: %s", out);
	cr_assert_null(memmem(out, len, "Tok\\/3n", 7),
		       "MCP shows the secret: %s", out);
	j = mcp_reply(out, len, 1);
	cr_assert_not_null(j, "%s", out);
	cr_assert_not_null(strstr(json_object_to_json_string(j), "[REDACTED]"),
			   "%s", out);
	json_object_put(j);
	free(out);
	unsetenv("IT_TOKEN");
}

/* ---- 12. control characters in names ------------------------------------- */

IT_TEST(input, control_characters_in_names_are_escaped)
{
	const char *s = it_session();
	const char *lines[] = {
		MCP_INIT,
		"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}",
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":"
		"\"list_dir\",\"arguments\":{\"path\":\"n\"}}}",
	};
	json_object *j, *text;
	it_result r;
	char *out;
	size_t len;

	up(s);
	/* Three files: one with a newline (two entries to a naive reader),
	 * one with a terminal escape sequence, one plain. */
	r = run_ok(
		"make names", "exec", s, "--", "sh", "-c",
		"mkdir -p /workspace/n && cd /workspace/n && "
		"touch \"$(printf 'fake\\nentry')\" \"$(printf 'x\\033]0;pwned\\007y')\" plain && "
		"echo match > \"$(printf 'fake\\nentry')\"",
		NULL);
	it_result_free(&r);

	r = run_ok("ls n", "ls", s, "n", NULL);
	cr_assert_eq(it_count_lines(r.out, r.out_len), 3,
		     "ls shows 3 entries as:\n%s", r.out);
	cr_assert_null(memchr(r.out, 0x1b, r.out_len), "ls prints a raw ESC");
	cr_assert_null(memchr(r.out, 0x07, r.out_len), "ls prints a raw BEL");
	cr_assert(strstr(r.out, "fake\\x0aentry"), "%s", r.out);
	it_result_free(&r);

	r = run_ok("find", "find", s, "*", "n", NULL);
	cr_assert_eq(it_count_lines(r.out, r.out_len), 3,
		     "find shows 3 paths as:\n%s", r.out);
	cr_assert_null(memchr(r.out, 0x1b, r.out_len), "find prints a raw ESC");
	it_result_free(&r);

	r = run_ok("grep", "grep", s, "match", "n", NULL);
	cr_assert_eq(it_count_lines(r.out, r.out_len), 1, "grep shows:\n%s",
		     r.out);
	cr_assert(strstr(r.out, "n/fake\\x0aentry:1:match"), "%s", r.out);
	it_result_free(&r);

	/* --json keeps the exact names, as JSON escapes them. */
	r = run_ok("ls --json", "ls", s, "n", "--json", NULL);
	cr_assert(strstr(r.out, "\"fake\\nentry\"") &&
			  strstr(r.out, "x\\u001b]0;pwned"),
		  "%s", r.out);
	it_result_free(&r);

	/* MCP's text content. */
	out = mcp_talk(s, NULL, lines, 3, 1, &len);
	j = mcp_reply(out, len, 1);
	cr_assert_not_null(j, "%s", out);
	cr_assert(json_object_object_get_ex(j, "result", &text));
	text = json_object_array_get_idx(it_json_get(text, "content"), 0);
	text = it_json_get(text, "text");
	cr_assert_eq(it_count_lines(json_object_get_string(text),
				    (size_t)json_object_get_string_len(text)),
		     3, "list_dir text:\n%s", json_object_get_string(text));
	cr_assert_null(strchr(json_object_get_string(text), 0x1b));
	json_object_put(j);
	free(out);
}

/* ---- 13. MCP: bad UTF-8 and huge ids ------------------------------------- */

IT_TEST(input, mcp_never_echoes_bad_utf8_or_changes_an_id)
{
	const char *s = it_session();
	const char *lines[] = {
		MCP_INIT,
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"bad\xff\xfe method\"}",
		"{\"jsonrpc\":\"2.0\",\"id\":18446744073709551616,\"method\":\"ping\"}",
		"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}",
	};
	const char *p, *end;
	char *out;
	size_t len;
	int nulls = 0;

	out = mcp_talk(s, NULL, lines, 4, 2, &len);
	/* it_json fails the test on a line that is not valid UTF-8 JSON. */
	json_object_put(mcp_reply(out, len, 0));
	cr_assert_null(memmem(out, len, "\xff", 1),
		       "the bad byte came back:\n%s", out);
	cr_assert_null(strstr(out, "18446744073709551615"),
		       "another id came back:\n%s", out);
	for (p = out, end = out + len; p < end;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		json_object *m = it_json(p, n), *id;

		if (json_object_object_get_ex(m, "id", &id) && !id) {
			cr_assert(json_object_object_get_ex(m, "error", NULL),
				  "%.*s", (int)n, p);
			nulls++;
		}
		json_object_put(m);
		p += n + 1;
	}
	cr_assert_eq(nulls, 2, "want two errors with id null:\n%s", out);
	free(out);
}

/* ---- 14. an argv over the kernel's limit --------------------------------- */

IT_TEST(input, argv_over_the_kernel_limit_is_hutch_error)
{
	const char *s = it_session();
	struct rlimit big = { 256u << 20, 256u << 20 };
	const char *args[40];
	char *chunk = malloc(100001);
	size_t n = 0;
	it_result r;

	cr_assert_not_null(chunk);
	memset(chunk, 'b', 100000);
	chunk[100000] = '\0';
	up(s);
	/* 3 MB of arguments: hutch itself may take them (its stack limit is
	 * raised here), the container's runtime may not. */
	cr_assert_eq(setrlimit(RLIMIT_STACK, &big), 0, "setrlimit: %s",
		     strerror(errno));
	args[n++] = "exec";
	args[n++] = s;
	args[n++] = "--";
	args[n++] = "true";
	for (int i = 0; i < 30; i++)
		args[n++] = chunk;
	args[n] = NULL;
	r = it_hutch_v(NULL, args);
	IT_ASSERT_EXIT(r, 125, "exec with 3 MB of argv");
	cr_assert(strstr(r.err, "argument list too long") &&
			  strstr(r.err, "not started"),
		  "%s", r.err);
	it_result_free(&r);

	/* One argument over MAX_ARG_STRLEN (no execve takes it, so it
	 * comes in a batch line): refused before the engine. */
	{
		char file[] = "/tmp/hutch-it-batch-XXXXXX";
		int fd = mkstemp(file);
		FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
		json_object *j;

		cr_assert_not_null(f);
		fprintf(f, "{\"session\":\"%s\",\"command\":[\"echo\",\"", s);
		for (int i = 0; i < 131072; i++)
			fputc('c', f);
		fprintf(f, "\"]}\n");
		fclose(f);
		r = it_hutch("batch", file, "--keep", NULL);
		unlink(file);
		j = it_json(r.out, r.out_len);
		cr_assert_str_eq(
			json_object_get_string(it_json_get(j, "status")),
			"error", "%.300s", r.out);
		cr_assert(
			strstr(json_object_get_string(it_json_get(j, "error")),
			       "over the kernel's limit"),
			"%.300s", r.out);
		json_object_put(j);
		it_result_free(&r);
	}
	free(chunk);
}

/* ---- 15. junk in place of the last-used record ----------------------------- */

/* "2026-11-25T20:35:00.123456789Z" -> seconds (fraction dropped). */
static long long rfc3339(const char *s)
{
	struct tm tm = { 0 };

	if (!s || !strptime(s, "%Y-%m-%dT%H:%M:%S", &tm))
		return 0;
	return (long long)timegm(&tm);
}

IT_TEST(input, gc_decides_by_container_times_when_the_record_is_junk)
{
	const char *s = it_session();
	char path[256], *body = NULL, match[128];
	json_object *c, *st, *j, *e;
	long long want = 0, t;
	size_t blen;
	it_result r;

	up(s);
	/* A symlink with a 4 KiB target where the record was: the engines
	 * answer the archive HEAD with HTTP 500. */
	r = run_ok(
		"plant", "exec", s, "--", "sh", "-c",
		"L=$(head -c 4000 /dev/zero | tr '\\0' x); rm -f /.hutch/use/last-used && "
		"ln -s \"/$L\" /.hutch/use/last-used",
		NULL);
	it_result_free(&r);

	snprintf(path, sizeof(path), "/containers/hutch-%s/json", s);
	cr_assert_eq(it_api("GET", path, &body, &blen), 200);
	c = it_json(body, blen);
	free(body);
	st = it_json_get(c, "State");
	want = rfc3339(json_object_get_string(it_json_get(c, "Created")));
	if ((t = rfc3339(json_object_get_string(
		     it_json_get(st, "StartedAt")))) > want)
		want = t;
	if ((t = rfc3339(json_object_get_string(
		     it_json_get(st, "FinishedAt")))) > want)
		want = t;
	json_object_put(c);
	cr_assert_gt(want, 0);

	snprintf(match, sizeof(match), "%s", s);
	r = it_hutch("gc", "--idle", "0", "--match", match, "--dry-run",
		     "--json", NULL);
	IT_ASSERT_EXIT(r, 0, "gc --dry-run with a junk record");
	j = it_json(r.out, r.out_len);
	e = json_object_array_get_idx(it_json_get(j, "would_remove"), 0);
	cr_assert_not_null(e, "%s", r.out);
	cr_assert_str_eq(json_object_get_string(it_json_get(e, "name")), s);
	cr_assert_eq(json_object_get_int64(it_json_get(e, "last_used")), want,
		     "last_used is not the container's times: %s", r.out);
	json_object_put(j);
	it_result_free(&r);

	r = it_hutch("gc", "--idle", "0", "--match", match, NULL);
	IT_ASSERT_EXIT(r, 0, "gc with a junk record");
	it_result_free(&r);
	cr_assert_eq(it_count_containers(s), 0,
		     "gc did not remove the session");
}

/* ---- 16. the memory of a large file-tool answer ----------------------------- */

IT_TEST(input, a_large_find_is_parsed_in_bounded_memory)
{
	const char *s = it_session();
	const char *argv[] = { HUTCH_BIN, "--engine", it_engine(), "find",
			       s,	  "*",	      "m",	   "--max",
			       "100000",  "--json",   NULL };
	struct rusage ru;
	int out, status;
	pid_t pid;
	char file[] = "/tmp/hutch-it-find-XXXXXX";
	it_result r;
	json_object *j;
	FILE *f;
	char *data = NULL;
	size_t len = 0;

	up(s);
	r = run_ok(
		"make 100000 files", "exec", s, "--", "sh", "-c",
		"mkdir -p /workspace/m && cd /workspace/m && for d in $(seq 0 99); do "
		"mkdir $d && (cd $d && seq 0 999 | xargs touch) || exit 1; done",
		NULL);
	it_result_free(&r);

	/* Peak RSS of the hutch process alone: wait4's rusage. */
	out = mkstemp(file);
	cr_assert_geq(out, 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		dup2(out, 1);
		execv(HUTCH_BIN, (char *const *)argv);
		_exit(127);
	}
	cr_assert_eq(wait4(pid, &status, 0, &ru), pid);
	close(out);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "find exited %d", status);
	f = fopen(file, "r");
	cr_assert_not_null(f);
	cr_assert_eq(getdelim(&data, &len, '\0', f) > 0, 1);
	fclose(f);
	unlink(file);
	j = it_json(data, strlen(data));
	cr_assert_eq(json_object_array_length(it_json_get(j, "entries")),
		     100000);
	json_object_put(j);
	len = strlen(data);
	free(data);
#ifndef __SANITIZE_ADDRESS__
	/* A json-c tree of the ~4 MB answer took ~120 MB; the parse keeps a
	 * few bytes per byte of it.  (Not under AddressSanitizer, whose
	 * shadow memory and quarantine make a peak RSS say nothing about the
	 * program's own use.) */
	cr_assert_lt(ru.ru_maxrss, 64 * 1024,
		     "hutch find --json peaked at %ld KiB for %zu bytes",
		     ru.ru_maxrss, len);
#endif
}

/* ---- standard input against a command that does not cooperate -------- */

#include <hutch/engine.h>
#include <hutch/exec.h>
#include <hutch/session.h>

static long endless_input(char *buf, size_t len, void *p)
{
	(void)p;
	memset(buf, 'z', len);
	return (long)len;
}

/*
 * The command writes 30 MB before it reads a byte, while hutch has 10 MiB
 * to send it: hutch never blocks on a write, so the output keeps flowing
 * and both ends finish (a blocking writer would deadlock against the
 * command's full stdout).  Then a command that closes its stdin and never
 * ends, fed without end: the timeout ends it, and the run returns.
 */
IT_TEST(input, stdin_a_command_that_does_not_read_cannot_hang_hutch)
{
	static const char *const flood[] = {
		"sh", "-c", "head -c 30000000 /dev/zero; wc -c"
	};
	static const char *const closer[] = { "sh", "-c",
					      "exec 0<&-; sleep 300" };
	size_t n = 10u * 1024u * 1024u, len, head;
	char *big = calloc(1, n);
	hutch_exec_options o = HUTCH_EXEC_OPTIONS_INIT;
	hutch_engine *e = NULL;
	hutch_session *s = NULL;
	hutch_exec_result *r = NULL;
	hutch_error *err = NULL;
	uint64_t total, omitted;
	const char *d;

	cr_assert_not_null(big);
	cr_assert_eq(hutch_engine_open(&e, it_engine(), &err), 0, "%s",
		     hutch_error_message(err));
	cr_assert_eq(hutch_session_open(&s, e, it_session(), NULL, &err), 0,
		     "%s", hutch_error_message(err));
	o.argv = flood;
	o.argc = 3;
	o.input = big;
	o.input_len = n;
	o.capture = 1;
	cr_assert_eq(hutch_exec_run(&r, s, &o, &err), 0, "%s",
		     hutch_error_message(err));
	cr_assert_eq(hutch_exec_result_status(r), HUTCH_EXEC_OK);
	cr_assert_eq(hutch_exec_result_exit_code(r), 0);
	hutch_exec_result_output(r, HUTCH_STREAM_STDOUT, &d, &len, &total,
				 &omitted);
	head = hutch_exec_result_head_len(r, HUTCH_STREAM_STDOUT);
	cr_assert_eq(total, 30000000 + 9, "stdout carried %llu bytes",
		     (unsigned long long)total);
	cr_assert(len > head + 9 && memcmp(d + len - 9, "10485760\n", 9) == 0,
		  "wc -c did not count the whole input: '%.*s'", 9,
		  len >= 9 ? d + len - 9 : d);
	hutch_exec_result_free(r);

	o = (hutch_exec_options)HUTCH_EXEC_OPTIONS_INIT;
	o.argv = closer;
	o.argc = 3;
	o.on_input = endless_input;
	o.timeout_ms = 1500;
	cr_assert_eq(hutch_exec_run(&r, s, &o, &err), 0, "%s",
		     hutch_error_message(err));
	cr_assert_eq(hutch_exec_result_status(r), HUTCH_EXEC_TIMEOUT,
		     "status %s",
		     hutch_exec_status_name(hutch_exec_result_status(r)));
	hutch_exec_result_free(r);
	hutch_session_free(s);
	hutch_engine_free(e);
	free(big);
}
