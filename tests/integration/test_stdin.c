/*
 * test_stdin.c - a command's standard input and its user, through the CLI:
 * exec -i, --input, --input-file, batch's "stdin" and "user", --user
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <json-c/json.h>

#include "harness.h"

static void warm(const char *s)
{
	it_result r = it_hutch("exec", s, "--", "true", NULL);

	IT_ASSERT_EXIT(r, 0, "hutch exec S -- true");
	it_result_free(&r);
}

/* Read `fd` into `buf` (NUL-terminated) until `needle` shows up; the
 * bound is only a guard against a hung test. */
static void read_until(int fd, char *buf, size_t cap, size_t *len,
		       const char *needle)
{
	double until = it_now() + 60;

	while (!strstr(buf, needle)) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;

		cr_assert(it_now() < until, "never saw '%s'; got: %s", needle,
			  buf);
		if (poll(&p, 1, 1000) <= 0)
			continue;
		cr_assert_lt(*len, cap - 1, "output too long: %s", buf);
		n = read(fd, buf + *len, cap - 1 - *len);
		cr_assert_gt(n, 0, "output ended before '%s': %s", needle, buf);
		*len += (size_t)n;
		buf[*len] = '\0';
	}
}

/* -i: each line reaches the command as it is written (the command answers
 * before hutch's stdin has ended), and the end of hutch's stdin is the
 * end of the command's. */
IT_TEST(stdin, interactive_streams_lines_and_eof)
{
	const char *s = it_session();
	int in[2];
	it_opts o = { 0 };
	it_proc p;
	it_result r;
	char buf[4096] = "";
	size_t len = 0;

	warm(s);
	cr_assert_eq(pipe2(in, O_CLOEXEC), 0);
	o.in_fd = in[0];
	it_spawn(&p, &o,
		 (const char *const[]){
			 "exec", "-i", s, "--", "sh", "-c",
			 "read a; echo \"got:$a\"; read b; echo \"got:$b\"; "
			 "n=$(wc -c); echo \"end:$n\"",
			 NULL });
	close(in[0]);
	cr_assert_eq(write(in[1], "one\n", 4), 4);
	read_until(p.out_fd, buf, sizeof(buf), &len, "got:one\n");
	cr_assert_eq(write(in[1], "two\n", 4), 4);
	read_until(p.out_fd, buf, sizeof(buf), &len, "got:two\n");
	cr_assert_eq(write(in[1], "12345", 5), 5);
	close(in[1]);
	r = it_wait(&p);
	IT_ASSERT_EXIT(r, 0, "hutch exec -i");
	cr_assert(strstr(r.out, "end:5"), "wc -c after EOF: %s", r.out);
	it_result_free(&r);
}

/* Without -i the command's stdin is /dev/null, whatever hutch's is. */
IT_TEST(stdin, without_i_stdin_is_dev_null)
{
	const char *s = it_session();
	int in[2];
	it_opts o = { 0 };
	it_result r;

	cr_assert_eq(pipe2(in, O_CLOEXEC), 0);
	cr_assert_eq(write(in[1], "secret\n", 7), 7);
	o.in_fd = in[0];
	r = it_hutch_o(&o, "exec", s, "--", "sh", "-c",
		       "n=$(wc -c); echo \"n=$n\"; readlink /proc/self/fd/0",
		       NULL);
	close(in[0]);
	close(in[1]);
	IT_ASSERT_EXIT(r, 0, "hutch exec S -- wc -c");
	cr_assert(strstr(r.out, "n=0\n"), "stdin was not empty: %s", r.out);
	cr_assert(strstr(r.out, "/dev/null"), "stdin is not /dev/null: %s",
		  r.out);
	it_result_free(&r);
}

/* 4 MiB of every byte value through -i, --input-file FILE and
 * --input-file - come back unchanged through cat. */
IT_TEST(stdin, binary_input_is_exact)
{
	const char *s = it_session();
	size_t n = 4u << 20;
	char *data = malloc(n), path[] = "/tmp/hutch-it-stdin-XXXXXX";
	unsigned int x = 12345;
	int fd;

	cr_assert_not_null(data);
	for (size_t i = 0; i < n; i++) {
		x = x * 1103515245u + 12345u;
		data[i] = (char)(i < 256 ? i : x >> 16);
	}
	fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, data, n), (ssize_t)n);
	warm(s);
	for (int way = 0; way < 3; way++) {
		it_opts o = { 0 };
		it_result r;
		static const char *const what[] = { "-i", "--input-file FILE",
						    "--input-file -" };

		cr_assert_eq(lseek(fd, 0, SEEK_SET), 0);
		if (way != 1)
			o.in_fd = fd;
		r = way == 0 ?
			    it_hutch_o(&o, "exec", "-i", s, "--", "cat", NULL) :
		    way == 1 ? it_hutch_o(&o, "exec", s, "--input-file", path,
					  "--", "cat", NULL) :
			       it_hutch_o(&o, "exec", s, "--input-file", "-",
					  "--", "cat", NULL);
		IT_ASSERT_EXIT(r, 0, what[way]);
		cr_assert_eq(r.out_len, n, "%s: %zu bytes back, sent %zu",
			     what[way], r.out_len, n);
		cr_assert(memcmp(r.out, data, n) == 0,
			  "%s: the bytes changed on the way", what[way]);
		it_result_free(&r);
	}
	close(fd);
	unlink(path);
	free(data);
}

/* --input TEXT on exec and sh; one source of stdin at a time. */
IT_TEST(stdin, input_text_and_one_source_only)
{
	const char *s = it_session();
	it_opts o = { 0 };
	int in[2];
	it_result r = it_hutch("exec", s, "--input", "hello\nworld", "--", "sh",
			       "-c", "cat; echo; echo done", NULL);

	IT_ASSERT_EXIT(r, 0, "hutch exec --input");
	cr_assert_str_eq(r.out, "hello\nworld\ndone\n");
	it_result_free(&r);
	r = it_hutch("sh", s, "--input", "abc", "wc -c", NULL);
	IT_ASSERT_EXIT(r, 0, "hutch sh --input");
	cr_assert(strstr(r.out, "3"), "wc -c: %s", r.out);
	it_result_free(&r);
	/* sh -i: the shell command line reads hutch's stdin. */
	cr_assert_eq(pipe2(in, O_CLOEXEC), 0);
	cr_assert_eq(write(in[1], "piped\n", 6), 6);
	close(in[1]);
	o.in_fd = in[0];
	r = it_hutch_o(&o, "sh", s, "-i", "tr a-z A-Z", NULL);
	close(in[0]);
	IT_ASSERT_EXIT(r, 0, "hutch sh -i");
	cr_assert_str_eq(r.out, "PIPED\n");
	it_result_free(&r);
	r = it_hutch("exec", s, "-i", "--input", "x", "--", "cat", NULL);
	IT_ASSERT_EXIT(r, 125, "hutch exec -i --input");
	cr_assert(strstr(r.err, "use one"), "%s", r.err);
	it_result_free(&r);
	r = it_hutch("exec", s, "--input-file", "/nonexistent/x", "--", "cat",
		     NULL);
	IT_ASSERT_EXIT(r, 125, "hutch exec --input-file MISSING");
	cr_assert(strstr(r.err, "/nonexistent/x"), "%s", r.err);
	it_result_free(&r);
}

/* A command that never reads its stdin ends, and hutch with it, while
 * hutch's stdin stays open. */
IT_TEST(stdin, a_command_that_does_not_read_does_not_hold_hutch)
{
	const char *s = it_session();
	int in[2];
	it_opts o = { 0 };
	it_result r;

	warm(s);
	cr_assert_eq(pipe2(in, O_CLOEXEC), 0);
	o.in_fd = in[0];
	r = it_hutch_o(&o, "exec", "-i", s, "--", "sh", "-c", "echo ok; exit 4",
		       NULL);
	close(in[0]);
	close(in[1]);
	IT_ASSERT_EXIT(r, 4, "hutch exec -i S -- sh -c 'exit 4'");
	cr_assert_str_eq(r.out, "ok\n");
	it_result_free(&r);
}

/* --user on exec and sh; "user" and "stdin" on batch lines. */
IT_TEST(stdin, user_overrides_the_session_user_for_one_command)
{
	const char *s = it_session();
	char path[] = "/tmp/hutch-it-batch-XXXXXX", line[512];
	it_result r = it_hutch("exec", s, "--user", "1234:2345", "--", "sh",
			       "-c", "echo $(id -u):$(id -g)", NULL);
	json_object *j;
	int fd;

	IT_ASSERT_EXIT(r, 0, "hutch exec --user 1234:2345");
	cr_assert_str_eq(r.out, "1234:2345\n");
	it_result_free(&r);
	r = it_hutch("sh", s, "-u", "root", "id -u", NULL);
	IT_ASSERT_EXIT(r, 0, "hutch sh -u root");
	cr_assert_str_eq(r.out, "0\n");
	it_result_free(&r);
	/* Only that command: the next runs as the session's user again. */
	r = it_hutch("exec", s, "--", "id", "-u", NULL);
	IT_ASSERT_EXIT(r, 0, "hutch exec -- id -u");
	cr_assert_str_neq(r.out, "1234\n");
	cr_assert_str_neq(r.out, "0\n");
	it_result_free(&r);

	fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	snprintf(line, sizeof(line),
		 "{\"session\":\"%s\",\"id\":1,\"command\":\"od -An -c\","
		 "\"stdin\":\"a\\u0000b\"}\n"
		 "{\"session\":\"%s\",\"id\":2,\"command\":\"id -u\","
		 "\"user\":\"4321\"}\n",
		 s, s);
	cr_assert_eq(write(fd, line, strlen(line)), (ssize_t)strlen(line));
	close(fd);
	r = it_hutch("batch", path, "--keep", NULL);
	unlink(path);
	IT_ASSERT_EXIT(r, 0, "hutch batch with stdin and user");
	for (char *l = r.out, *nl; l && *l; l = nl ? nl + 1 : NULL) {
		int id;
		const char *out;

		nl = strchr(l, '\n');
		j = it_json(l, nl ? (size_t)(nl - l) : strlen(l));
		id = json_object_get_int(it_json_get(j, "id"));
		out = json_object_get_string(it_json_get(j, "stdout"));
		if (id == 1)
			cr_assert(strstr(out, "a  \\0   b"),
				  "od of a NUL b: %s", out);
		else
			cr_assert_str_eq(out, "4321\n");
		json_object_put(j);
	}
	it_result_free(&r);
}
