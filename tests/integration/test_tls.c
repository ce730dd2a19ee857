/*
 * test_tls.c - hutch against a Docker Engine that listens on 127.0.0.1
 * with --tlsverify (contrib/engines.sh starts it, with a private CA whose
 * client certificate is in HUTCH_TEST_DOCKER_CERTS).
 *
 * Run by tls.test with HUTCH_TEST_ENGINE set to the same daemon's unix
 * socket, which the harness uses for its own checks and cleanup, and
 * HUTCH_TEST_TLS_ENGINE (tcp://127.0.0.1:PORT) and HUTCH_TEST_TLS_CERTS
 * (a DOCKER_CERT_PATH: ca.pem, cert.pem, key.pem).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "harness.h"

static const char *tls_url(void)
{
	const char *u = getenv("HUTCH_TEST_TLS_ENGINE");

	cr_assert(
		u && strncmp(u, "tcp://", 6) == 0,
		"HUTCH_TEST_TLS_ENGINE must be tcp://127.0.0.1:PORT (contrib/engines.sh env)");
	return u;
}

static const char *certs(void)
{
	const char *c = getenv("HUTCH_TEST_TLS_CERTS");

	cr_assert(c && *c, "HUTCH_TEST_TLS_CERTS must name a DOCKER_CERT_PATH");
	return c;
}

/* A directory for a DOCKER_CERT_PATH of the test's own making. */
static void cert_dir(char *out, size_t outsz)
{
	snprintf(out, outsz, "/tmp/hutch-it-tls-XXXXXX");
	cr_assert_not_null(mkdtemp(out), "mkdtemp: %s", strerror(errno));
}

static void copy(const char *from_dir, const char *name, const char *to_dir)
{
	char cmd[3 * PATH_MAX];

	snprintf(cmd, sizeof(cmd), "cp '%s/%s' '%s/%s'", from_dir, name, to_dir,
		 name);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
}

static void rm_rf(const char *dir)
{
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}

/* hutch --engine TLS_URL ARGS... with the TLS environment given. */
static it_result tls_hutch(const char *verify, const char *cert_path,
			   const char *url, const char *const *args)
{
	const char *argv[32] = { "--engine", url };
	it_opts o = { .no_engine = 1 };
	size_t n = 2;

	if (verify)
		setenv("DOCKER_TLS_VERIFY", verify, 1);
	else
		unsetenv("DOCKER_TLS_VERIFY");
	if (cert_path)
		setenv("DOCKER_CERT_PATH", cert_path, 1);
	else
		unsetenv("DOCKER_CERT_PATH");
	for (; *args && n < 31; args++)
		argv[n++] = *args;
	argv[n] = NULL;
	return it_hutch_v(&o, argv);
}

IT_TEST(tls, exec_and_batch_over_tls)
{
	const char *s = it_session(), *t = it_session();
	const char *exec_args[] = { "exec", s, "--", "echo", "over tls", NULL };
	const char *doctor_args[] = { "doctor", "--json", NULL };
	char dir[PATH_MAX], file[PATH_MAX + 32];
	const char *batch_args[4];
	FILE *f;
	it_result r;

	r = tls_hutch("1", certs(), tls_url(), exec_args);
	IT_ASSERT_EXIT(r, 0, "hutch exec over TLS");
	cr_expect_str_eq(r.out, "over tls\n");
	it_result_free(&r);

	r = tls_hutch("1", certs(), tls_url(), doctor_args);
	IT_ASSERT_EXIT(r, 0, "hutch doctor over TLS");
	cr_expect(strstr(r.out, "\"engine_tls\":true"), "%s", r.out);
	it_result_free(&r);

	/* Many threads on one TLS engine: the pool's connections. */
	cert_dir(dir, sizeof(dir));
	snprintf(file, sizeof(file), "%s/jobs.jsonl", dir);
	f = fopen(file, "w");
	cr_assert_not_null(f);
	for (int i = 0; i < 16; i++)
		fprintf(f,
			"{\"session\":\"%s\",\"command\":[\"echo\",\"%d\"]}\n",
			i % 2 ? s : t, i);
	cr_assert_eq(fclose(f), 0);
	batch_args[0] = "batch";
	batch_args[1] = file;
	batch_args[2] = "--parallel=8";
	batch_args[3] = NULL;
	r = tls_hutch("1", certs(), tls_url(), batch_args);
	rm_rf(dir);
	IT_ASSERT_EXIT(r, 0, "hutch batch over TLS");
	cr_expect_eq(it_count_lines(r.out, r.out_len), 16, "%s", r.out);
	cr_expect(strstr(r.err, "16 ok"), "%s", r.err);
	it_result_free(&r);

	/* https:// needs no DOCKER_TLS_VERIFY. */
	{
		char https[256];

		snprintf(https, sizeof(https), "https://%s", tls_url() + 6);
		r = tls_hutch(NULL, certs(), https, exec_args);
		IT_ASSERT_EXIT(r, 0, "hutch exec over https://");
		cr_expect_str_eq(r.out, "over tls\n");
		it_result_free(&r);
	}
}

IT_TEST(tls, wrong_ca_is_refused)
{
	const char *s = it_session();
	const char *args[] = { "exec", s, "--", "true", NULL };
	char dir[256], cmd[2 * PATH_MAX + 256];
	it_result r;

	/* The right client certificate, but a CA that never signed the
	 * engine's certificate. */
	cert_dir(dir, sizeof(dir));
	copy(certs(), "cert.pem", dir);
	copy(certs(), "key.pem", dir);
	snprintf(
		cmd, sizeof(cmd),
		"openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "
		"-days 1 -subj /CN=not-the-engines-ca -keyout '%s/ca-key.pem' -out '%s/ca.pem' "
		">/dev/null 2>&1",
		dir, dir);
	cr_assert_eq(system(cmd), 0, "openssl failed: %s", cmd);
	r = tls_hutch("1", dir, tls_url(), args);
	IT_ASSERT_EXIT(r, 125,
		       "hutch exec against a CA that did not sign the engine");
	cr_expect(strstr(r.err, "TLS certificate is not signed by") &&
			  strstr(r.err, dir),
		  "stderr: %s", r.err);
	cr_expect_eq(it_count_lines(r.err, r.err_len), 1, "one line: %s",
		     r.err);
	it_result_free(&r);
	rm_rf(dir);
	/* Nothing was made. */
	cr_expect_eq(it_count_containers(s), 0);
}

IT_TEST(tls, no_client_certificate_is_refused)
{
	const char *s = it_session();
	const char *args[] = { "exec", s, "--", "true", NULL };
	char dir[PATH_MAX], https[256];
	it_result r;

	cert_dir(dir, sizeof(dir));
	copy(certs(), "ca.pem", dir);
	snprintf(https, sizeof(https), "https://%s", tls_url() + 6);
	r = tls_hutch(NULL, dir, https, args);
	IT_ASSERT_EXIT(r, 125, "hutch exec without a client certificate");
	cr_expect(strstr(r.err, "TLS handshake failed") &&
			  strstr(r.err, "no client certificate was offered"),
		  "stderr: %s", r.err);
	cr_expect_eq(it_count_lines(r.err, r.err_len), 1, "one line: %s",
		     r.err);
	it_result_free(&r);

	/* DOCKER_TLS_VERIFY with an incomplete DOCKER_CERT_PATH: said before
	 * any connection, naming the missing file. */
	r = tls_hutch("1", dir, tls_url(), args);
	IT_ASSERT_EXIT(r, 125, "DOCKER_TLS_VERIFY with only ca.pem");
	cr_expect(strstr(r.err, "cert.pem cannot be read"), "stderr: %s",
		  r.err);
	it_result_free(&r);
	rm_rf(dir);

	/* Plain HTTP to the TLS port. */
	r = tls_hutch(NULL, NULL, tls_url(), args);
	IT_ASSERT_EXIT(r, 125, "plain HTTP to a TLS engine");
	cr_expect(strstr(r.err, "speaks TLS") &&
			  strstr(r.err, "DOCKER_TLS_VERIFY"),
		  "stderr: %s", r.err);
	it_result_free(&r);
	cr_expect_eq(it_count_containers(s), 0);
}

/* ---- standard input over TLS: the upgraded connection ----------------- */

#include <hutch/engine.h>
#include <hutch/exec.h>
#include <hutch/session.h>

/* Run argv over TLS with `input` and capture; stdout in *out (malloc'ed). */
static void tls_run(hutch_session *s, const char *const *argv, size_t argc,
		    const char *input, size_t input_len, int tty, char **out,
		    size_t *out_len)
{
	hutch_exec_options o = HUTCH_EXEC_OPTIONS_INIT;
	hutch_exec_result *r = NULL;
	hutch_error *err = NULL;
	const char *d;

	o.argv = argv;
	o.argc = argc;
	o.input = input;
	o.input_len = input_len;
	o.tty = tty;
	o.capture = 1;
	o.max_output = input_len + 1024;
	cr_assert_eq(hutch_exec_run(&r, s, &o, &err), 0, "%s: %s", argv[0],
		     hutch_error_message(err));
	cr_assert_eq(hutch_exec_result_status(r), HUTCH_EXEC_OK);
	cr_assert_eq(hutch_exec_result_exit_code(r), 0, "%s", argv[0]);
	hutch_exec_result_output(r, HUTCH_STREAM_STDOUT, &d, out_len, NULL,
				 NULL);
	*out = malloc(*out_len + 1);
	cr_assert_not_null(*out);
	memcpy(*out, d, *out_len + 1);
	hutch_exec_result_free(r);
}

/* The end of input is a half-close of the TCP connection under TLS (no
 * close_notify: libcurl cannot send one alone); Docker reads it as the
 * end of the command's stdin. */
IT_TEST(tls, stdin_over_tls)
{
	static const char *const cat[] = { "cat" };
	static const char *const wc[] = { "wc", "-c" };
	static const char *const t[] = { "true" };
	static const char *const head[] = { "head", "-c", "10" };
	static const char *const term[] = { "sh", "-c", "read x; stty size" };
	size_t n = 10u * 1024u * 1024u, len;
	char *big = malloc(n), *out;
	hutch_engine *e = NULL;
	hutch_session *s = NULL;
	hutch_error *err = NULL;

	cr_assert_not_null(big);
	for (size_t i = 0; i < n; i++)
		big[i] = (char)(i * 13 + i / 256);
	setenv("DOCKER_TLS_VERIFY", "1", 1);
	setenv("DOCKER_CERT_PATH", certs(), 1);
	cr_assert_eq(hutch_engine_open(&e, tls_url(), &err), 0, "%s",
		     hutch_error_message(err));
	cr_assert(hutch_engine_tls(e));
	cr_assert_eq(hutch_session_open(&s, e, it_session(), NULL, &err), 0,
		     "%s", hutch_error_message(err));

	tls_run(s, cat, 1, big, n, 0, &out, &len);
	cr_assert_eq(len, n, "cat gave back %zu of %zu bytes", len, n);
	cr_assert(memcmp(out, big, n) == 0, "the bytes changed over TLS");
	free(out);
	tls_run(s, wc, 2, big, n, 0, &out, &len);
	cr_assert_eq(strtoul(out, NULL, 10), n, "wc -c: %s", out);
	free(out);
	tls_run(s, t, 1, big, n, 0, &out, &len);
	cr_assert_eq(len, 0);
	free(out);
	tls_run(s, head, 3, big, n, 0, &out, &len);
	cr_assert_eq(len, 10);
	cr_assert(memcmp(out, big, 10) == 0);
	free(out);
	tls_run(s, term, 3, "go\n", 3, 1, &out, &len);
	cr_assert_not_null(strstr(out, "24 80"), "stty size: %s", out);
	free(out);

	hutch_session_free(s);
	hutch_engine_free(e);
	free(big);
}
