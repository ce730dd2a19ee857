/*
 * test_secrets.c - --secret against a real engine, through the CLI
 *
 * A secret must reach the command's environment and nothing else: not the
 * container's configuration, not its PID 1's environment (read from the
 * host, /proc/PID/environ of the container's init, so the sandbox's own
 * permissions do not decide the answer).  Every output hutch gives back has
 * it replaced by [REDACTED], also when encoded, cut across two frames of
 * the stream or across the capture's cap.  Each check of a redaction has a
 * control showing the value really was there to hide.
 */
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <json-c/json.h>

#include "harness.h"

/* 21 bytes (a multiple of 3: its base64 has no padding), lower case so
 * `tr a-z A-Z` gives a form of it that is not redacted, and with bytes
 * whose base64 holds '+' or '/' in some alignment. */
#define SECRET "s3cr3t-v4lue>>>?zq~k"
#define SECRET_UPPER "S3CR3T-V4LUE>>>?ZQ~K"

#define MAX_ARGS 24

static it_result run_v(int want, const char *arg, va_list ap)
{
	const char *args[MAX_ARGS + 1];
	size_t n = 0;
	it_result r;

	for (const char *a = arg; a; a = va_arg(ap, const char *)) {
		cr_assert_lt(n, MAX_ARGS, "too many arguments");
		args[n++] = a;
	}
	args[n] = NULL;
	r = it_hutch_v(NULL, args);
	IT_ASSERT_EXIT(r, want, args[0]);
	return r;
}

static it_result run(int want, const char *arg, ...) __attribute__((sentinel));
static it_result run(int want, const char *arg, ...)
{
	va_list ap;
	it_result r;

	va_start(ap, arg);
	r = run_v(want, arg, ap);
	va_end(ap);
	return r;
}

/* No byte string of the secret's (a slice of 7 or more bytes, which is
 * more than any masked run leaves around it) is in `s`. */
static void assert_clean(const char *s, size_t len, const char *what)
{
	size_t slen = strlen(SECRET);

	for (size_t at = 0; at + 7 <= slen; at++)
		cr_assert_null(memmem(s, len, SECRET + at, 7),
			       "%s shows part of the secret (%.7s): %.*s", what,
			       SECRET + at, (int)(len > 2000 ? 2000 : len), s);
}

static size_t count(const char *s, const char *what)
{
	size_t n = 0;

	for (const char *p = s; (p = strstr(p, what)); p += strlen(what))
		n++;
	return n;
}

/* The container's init, seen from the host: /proc/PID/environ. */
static char *init_environ(const char *session, size_t *len)
{
	char path[256], *body, *buf;
	json_object *doc, *state, *pid;
	size_t blen, cap = 1 << 16;
	ssize_t n;
	long status;
	int fd;

	snprintf(path, sizeof(path), "/containers/hutch-%s/json", session);
	status = it_api("GET", path, &body, &blen);
	cr_assert_eq(status, 200, "inspect %s: %ld %s", session, status, body);
	doc = it_json(body, blen);
	state = it_json_get(doc, "State");
	pid = it_json_get(state, "Pid");
	cr_assert_gt(json_object_get_int64(pid), 0);
	snprintf(path, sizeof(path), "/proc/%lld/environ",
		 (long long)json_object_get_int64(pid));
	json_object_put(doc);
	free(body);
	fd = open(path, O_RDONLY);
	cr_assert_geq(fd, 0,
		      "open %s (the tests run as root, beside the engine)",
		      path);
	buf = calloc(1, cap + 1);
	n = read(fd, buf, cap);
	close(fd);
	cr_assert_geq(n, 0);
	*len = (size_t)n;
	return buf;
}

IT_TEST(secrets, only_in_the_command_environment)
{
	const char *s = it_session();
	char *body, *env;
	size_t blen, elen;
	char path[256];
	it_result r;

	setenv("IT_TOKEN", SECRET, 1);
	r = run(0, "up", s, "--env", "IT_VISIBLE=yes", NULL);
	it_result_free(&r);

	/* The command has it, and only it: a form of the value that is not
	 * redacted proves it arrived whole. */
	r = run(0, "sh", s, "--secret", "IT_TOKEN",
		"printf '%s\\n' \"$IT_TOKEN\" | tr a-z A-Z; echo \"$IT_VISIBLE\"",
		NULL);
	cr_assert_str_eq(r.out, SECRET_UPPER "\nyes\n");
	it_result_free(&r);
	/* A command run without --secret does not get it. */
	r = run(0, "sh", s, "echo \"${IT_TOKEN:-unset}\"", NULL);
	cr_assert_str_eq(r.out, "unset\n");
	it_result_free(&r);

	/* Not in the container's configuration... */
	snprintf(path, sizeof(path), "/containers/hutch-%s/json", s);
	cr_assert_eq(it_api("GET", path, &body, &blen), 200);
	cr_assert_not_null(memmem(body, blen, "IT_VISIBLE=yes", 14), "%s",
			   body);
	cr_assert_null(memmem(body, blen, "IT_TOKEN", 8),
		       "inspect shows the secret's name");
	assert_clean(body, blen, "container inspect");
	free(body);
	/* ...nor in its PID 1's environment, which does hold the session's
	 * own environment. */
	env = init_environ(s, &elen);
	cr_assert_not_null(memmem(env, elen, "IT_VISIBLE=yes", 14),
			   "no session env in "
			   "/proc/1/environ: the check would prove nothing");
	cr_assert_null(memmem(env, elen, "IT_TOKEN", 8));
	assert_clean(env, elen, "/proc/1/environ");
	free(env);
	/* From inside, as the command sees it. */
	r = run(0, "sh", s, "--secret", "IT_TOKEN",
		"cat /proc/1/environ 2>/dev/null | tr '\\0' '\\n' | grep -c IT_TOKEN; true",
		NULL);
	cr_assert(strcmp(r.out, "0\n") == 0 || strcmp(r.out, "") == 0, "%s",
		  r.out);
	it_result_free(&r);
}

/* Raw, base64 at three alignments and in the URL alphabet, hex, stderr,
 * and a value printed in two pieces with a pause between, so that it
 * arrives in two frames. */
#define LEAKS                                                                       \
	"echo \"$IT_TOKEN\"; "                                                      \
	"printf %s \"$IT_TOKEN\" | base64; "                                        \
	"printf x%s \"$IT_TOKEN\" | base64; "                                       \
	"printf xy%s \"$IT_TOKEN\" | base64 | tr +/ -_; "                           \
	"printf %s \"$IT_TOKEN\" | od -An -tx1 | tr -d ' \\n'; echo; "              \
	"printf %s \"$IT_TOKEN\" | od -An -tx1 | tr -d ' \\n' | tr a-f A-F; echo; " \
	"printf %s \"$IT_TOKEN\" | head -c 9; sleep 0.5; "                          \
	"printf '%s\\n' \"$IT_TOKEN\" | tail -c +10; "                              \
	"echo \"err:$IT_TOKEN\" >&2"

static void check_leaks(const char *out, size_t len, const char *err,
			size_t elen)
{
	assert_clean(out, len, "stdout");
	assert_clean(err, elen, "stderr");
	cr_assert_eq(count(out, "[REDACTED]"), 7, "%s", out);
	cr_assert_eq(count(err, "[REDACTED]"), 1, "%s", err);
	/* The whole value alone, as the value or its encodings: nothing of
	 * it is left around the mask. */
	cr_assert_eq(strncmp(out, "[REDACTED]\n[REDACTED]\n", 22), 0, "%s",
		     out);
}

IT_TEST(secrets, redacted_in_exec_output)
{
	const char *s = it_session();
	json_object *doc;
	it_result r;

	setenv("IT_TOKEN", SECRET, 1);
	/* Control: without --secret the same command shows the value. */
	r = run(0, "sh", s, "--env", "IT_TOKEN=" SECRET,
		"printf %s \"${IT_TOKEN:-x}\"", NULL);
	cr_assert_str_eq(r.out, SECRET);
	it_result_free(&r);

	r = run(0, "sh", s, "--secret", "IT_TOKEN", LEAKS, NULL);
	check_leaks(r.out, r.out_len, r.err, r.err_len);
	it_result_free(&r);

	r = run(0, "sh", s, "--secret", "IT_TOKEN", "--json", LEAKS, NULL);
	doc = it_json(r.out, r.out_len);
	{
		const char *o =
			json_object_get_string(it_json_get(doc, "stdout"));
		const char *e =
			json_object_get_string(it_json_get(doc, "stderr"));

		check_leaks(o, strlen(o), e, strlen(e));
	}
	json_object_put(doc);
	it_result_free(&r);

	/* $HUTCH_SECRETS names secrets for every command. */
	setenv("HUTCH_SECRETS", "IT_TOKEN", 1);
	r = run(0, "sh", s, LEAKS, NULL);
	check_leaks(r.out, r.out_len, r.err, r.err_len);
	it_result_free(&r);
	unsetenv("HUTCH_SECRETS");
}

/* The capture keeps 32 bytes of head: the value straddles that boundary
 * and the tail's start, and the head would end with its first bytes had
 * the capture seen the stream before redaction. */
IT_TEST(secrets, redacted_across_the_capture_cap)
{
	const char *s = it_session();
	json_object *doc;
	const char *o;
	it_result r;

	setenv("IT_TOKEN", SECRET, 1);
	r = run(0, "sh", s, "--secret", "IT_TOKEN", "--json", "--max-output",
		"64",
		"printf 'aaaaaaaaaaaaaaaaaaaaaaaaa%sbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb' "
		"\"$IT_TOKEN\"; sleep 0.3; "
		"printf 'cccccccccccccccccccccccccccccccccccccccccccccccccccc%sdd' \"$IT_TOKEN\"",
		NULL);
	doc = it_json(r.out, r.out_len);
	cr_assert(
		json_object_get_boolean(it_json_get(doc, "stdout_truncated")));
	o = json_object_get_string(it_json_get(doc, "stdout"));
	cr_assert_eq(strncmp(o, "aaaaaaaaaaaaaaaaaaaaaaaaa[REDACT", 32), 0,
		     "%s", o);
	assert_clean(o, strlen(o), "capped stdout");
	cr_assert_not_null(strstr(o, "[REDACTED]dd"), "%s", o);
	json_object_put(doc);
	it_result_free(&r);
}

IT_TEST(secrets, from_a_file)
{
	const char *s = it_session();
	char file[] = "/tmp/hutch-it-secret-XXXXXX", arg[64];
	int fd = mkstemp(file);
	it_result r;

	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, SECRET "\n", strlen(SECRET) + 1),
		     (ssize_t)strlen(SECRET) + 1);
	close(fd);
	snprintf(arg, sizeof(arg), "FILE_TOKEN=@%s", file);
	/* The trailing newline is not part of the value. */
	r = run(0, "sh", s, "--secret", arg,
		"printf '%s|\\n' \"$FILE_TOKEN\" | tr a-z A-Z; echo \"$FILE_TOKEN\"",
		NULL);
	cr_assert_str_eq(r.out, SECRET_UPPER "|\n[REDACTED]\n");
	it_result_free(&r);
	unlink(file);

	/* A value on the command line is refused, and not echoed. */
	r = run(125, "sh", s, "--secret", "FILE_TOKEN=" SECRET, "true", NULL);
	assert_clean(r.err, r.err_len, "the refusal");
	it_result_free(&r);
	/* Too short to redact. */
	setenv("IT_SHORT", "abc", 1);
	r = run(125, "sh", s, "--secret", "IT_SHORT", "true", NULL);
	cr_assert_not_null(strstr(r.err, "IT_SHORT"), "%s", r.err);
	it_result_free(&r);
}

/* read, grep and ls give back what is in the workspace: the secret, its
 * encodings and a file named after it are masked there too. */
IT_TEST(secrets, redacted_in_file_tools)
{
	const char *s = it_session();
	json_object *doc;
	it_result r;

	setenv("IT_TOKEN", SECRET, 1);
	r = run(0, "sh", s, "--secret", "IT_TOKEN",
		"mkdir -p d && printf 'line one\\ntoken=%s\\n' \"$IT_TOKEN\" > d/conf && "
		"printf %s \"$IT_TOKEN\" | base64 >> d/conf && : > \"d/$IT_TOKEN.key\"",
		NULL);
	it_result_free(&r);

	/* Control: the file does hold the value. */
	r = run(0, "read", s, "d/conf", NULL);
	cr_assert_not_null(strstr(r.out, "token=" SECRET), "%s", r.out);
	it_result_free(&r);

	r = run(0, "read", s, "d/conf", "--secret", "IT_TOKEN", NULL);
	cr_assert_str_eq(r.out, "line one\ntoken=[REDACTED]\n[REDACTED]\n");
	it_result_free(&r);
	r = run(0, "read", s, "d/conf", "--secret", "IT_TOKEN", "--json", NULL);
	assert_clean(r.out, r.out_len, "read --json");
	doc = it_json(r.out, r.out_len);
	cr_assert_str_eq(json_object_get_string(it_json_get(doc, "content")),
			 "line one\ntoken=[REDACTED]\n[REDACTED]\n");
	json_object_put(doc);
	it_result_free(&r);

	r = run(0, "grep", s, "token|key", "--secret", "IT_TOKEN", NULL);
	cr_assert_str_eq(r.out, "d/conf:2:token=[REDACTED]\n", "%s", r.out);
	it_result_free(&r);
	r = run(0, "grep", s, "s3cr", "--secret", "IT_TOKEN", "--json", NULL);
	assert_clean(r.out, r.out_len, "grep --json");
	cr_assert_geq(count(r.out, "[REDACTED]"), 1, "%s", r.out);
	it_result_free(&r);

	r = run(0, "ls", s, "d", "--secret", "IT_TOKEN", NULL);
	assert_clean(r.out, r.out_len, "ls");
	cr_assert_not_null(strstr(r.out, "[REDACTED].key"), "%s", r.out);
	it_result_free(&r);
	r = run(0, "find", s, "*.key", "--secret", "IT_TOKEN", "--json", NULL);
	assert_clean(r.out, r.out_len, "find --json");
	it_result_free(&r);
	/* An error that quotes the path is masked too. */
	r = run(2, "read", s, "d/" SECRET ".missing", "--secret", "IT_TOKEN",
		NULL);
	assert_clean(r.err, r.err_len, "read's error");
	it_result_free(&r);
}
