/*
 * test_chan.c - the agent's channel (src/agent/chan.c): the request's
 * parsing and checks, and a handler served over a socketpair end to end,
 * with shell scripts named as agents in a directory of the test's own
 * standing in for HUTCH_AGENT_BIN_DIR (the one thing the test changes).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "../../src/agent/agent.h"

/* chan.c's one dependency on main.c. */
void agent_err(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* main.c's PID 1 command line, and its dispatch, as a fork of a handler
 * calls it for a "run" of this very program (chan.c, run_in_fork): here
 * it says what it was given and how the fork named itself. */
char *agent_cmdline;
size_t agent_cmdline_size;

int agent_dispatch(int argc, char **argv, bool filtered)
{
	char comm[32] = "";
	FILE *f = fopen("/proc/self/comm", "r");

	if (f) {
		if (!fgets(comm, sizeof(comm), f))
			comm[0] = '\0';
		fclose(f);
	}
	comm[strcspn(comm, "\n")] = '\0';
	printf("argc %d, %s %s, %s, CHAN_FOO=%s, comm %s, fds above 2:", argc,
	       argv[1], argv[argc - 1], filtered ? "filtered" : "unfiltered",
	       getenv("CHAN_FOO"), comm);
	for (int fd = 3; fd < 64; fd++)
		if (fcntl(fd, F_GETFD) >= 0)
			printf(" %d", fd);
	printf("\nname:");
	for (size_t i = 0; i < agent_cmdline_size; i++)
		putchar(agent_cmdline[i] ? agent_cmdline[i] : '|');
	printf("\n");
	return 7;
}

static char dir[PATH_MAX];

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/hutch-chan-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
}

static void teardown(void)
{
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		cr_log_warn("could not remove %s", dir);
}

TestSuite(chan, .init = setup, .fini = teardown, .timeout = 60);

/* --- building requests ------------------------------------------------ */

struct req {
	char b[8192];
	size_t len;
};

static void put32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
}

/* A REQ payload: @argv then @env, both NULL-terminated. */
static void make_req(struct req *r, uint32_t flags, uint16_t rows,
		     uint16_t cols, const char *const *argv,
		     const char *const *env)
{
	unsigned char *u = (unsigned char *)r->b;
	uint32_t argc = 0, envc = 0;

	while (argv[argc])
		argc++;
	while (env && env[envc])
		envc++;
	put32(u, flags);
	u[4] = (unsigned char)(rows >> 8);
	u[5] = (unsigned char)rows;
	u[6] = (unsigned char)(cols >> 8);
	u[7] = (unsigned char)cols;
	put32(u + 8, argc);
	put32(u + 12, envc);
	r->len = 16;
	for (uint32_t i = 0; i < argc + envc; i++) {
		const char *s = i < argc ? argv[i] : env[i - argc];
		size_t n = strlen(s) + 1;

		cr_assert_lt(r->len + n, sizeof(r->b));
		memcpy(r->b + r->len, s, n);
		r->len += n;
	}
}

static int parse(const struct req *r, const char **why)
{
	struct agent_chan_req q;
	int rc = agent_chan_parse_req(r->b, r->len, dir, &q, why);

	agent_chan_req_free(&q);
	return rc;
}

static char agent_a[PATH_MAX + 64];

static const char *agent_path(const char *build)
{
	snprintf(agent_a, sizeof(agent_a), "%s/" HUTCH_AGENT_NAME "-%s", dir,
		 build);
	return agent_a;
}

/* --- the request ------------------------------------------------------ */

Test(chan, argv0_is_an_agent_of_the_directory)
{
	char p[PATH_MAX + 64];

	cr_assert(agent_chan_argv0_ok(HUTCH_AGENT_PATH, HUTCH_AGENT_BIN_DIR));
	cr_assert(agent_chan_argv0_ok(HUTCH_AGENT_BIN_DIR "/hutch-agent-0123",
				      HUTCH_AGENT_BIN_DIR));
	cr_assert_not(agent_chan_argv0_ok("/bin/sh", HUTCH_AGENT_BIN_DIR));
	cr_assert_not(agent_chan_argv0_ok(HUTCH_AGENT_BIN_DIR "/hutch-agent-",
					  HUTCH_AGENT_BIN_DIR));
	cr_assert_not(agent_chan_argv0_ok(HUTCH_AGENT_BIN_DIR "/hutch-agent",
					  HUTCH_AGENT_BIN_DIR));
	cr_assert_not(agent_chan_argv0_ok(HUTCH_AGENT_BIN_DIR
					  "/hutch-agent-x/../../../bin/sh",
					  HUTCH_AGENT_BIN_DIR));
	cr_assert_not(agent_chan_argv0_ok(HUTCH_AGENT_BIN_DIR "/hutch-agent-..",
					  HUTCH_AGENT_BIN_DIR));
	cr_assert_not(agent_chan_argv0_ok(HUTCH_AGENT_BIN_DIR "x/hutch-agent-1",
					  HUTCH_AGENT_BIN_DIR));
	cr_assert_not(agent_chan_argv0_ok("/tmp" HUTCH_AGENT_BIN_DIR
					  "/hutch-agent-1",
					  HUTCH_AGENT_BIN_DIR));
	cr_assert_not(agent_chan_argv0_ok(HUTCH_AGENT_BIN_DIR "//hutch-agent-1",
					  HUTCH_AGENT_BIN_DIR));
	snprintf(p, sizeof(p), "%s/hutch-agent-1", dir);
	cr_assert_not(agent_chan_argv0_ok(p, HUTCH_AGENT_BIN_DIR));
	cr_assert(agent_chan_argv0_ok(p, dir));
}

Test(chan, a_good_request_parses)
{
	const char *argv[] = { agent_path("b1"), "run", "--tag", "t", NULL };
	const char *env[] = { "A=1", "B=", NULL };
	struct agent_chan_req q;
	const char *why = NULL;
	struct req r;

	make_req(&r, HUTCH_CHAN_F_STDIN | HUTCH_CHAN_F_TTY, 24, 80, argv, env);
	cr_assert_eq(agent_chan_parse_req(r.b, r.len, dir, &q, &why), 0, "%s",
		     why);
	cr_assert_eq(q.flags, HUTCH_CHAN_F_STDIN | HUTCH_CHAN_F_TTY);
	cr_assert_eq(q.rows, 24);
	cr_assert_eq(q.cols, 80);
	cr_assert_eq(q.argc, 4);
	cr_assert_eq(q.envc, 2);
	cr_assert_str_eq(q.argv[0], argv[0]);
	cr_assert_str_eq(q.argv[3], "t");
	cr_assert_null(q.argv[4]);
	cr_assert_str_eq(q.env[1], "B=");
	cr_assert_null(q.env[2]);
	agent_chan_req_free(&q);
	agent_chan_req_free(NULL);
}

Test(chan, bad_requests_are_refused)
{
	const char *good[] = { agent_path("b1"), "ps", NULL };
	const char *sh[] = { "/bin/sh", "-c", "id", NULL };
	const char *noeq[] = { "A", NULL };
	const char *noname[] = { "=1", NULL };
	const char *why;
	struct req r;

	make_req(&r, 0, 0, 0, sh, NULL);
	cr_assert_eq(parse(&r, &why), -1);
	make_req(&r, 0, 0, 0, good, noeq);
	cr_assert_eq(parse(&r, &why), -1);
	make_req(&r, 0, 0, 0, good, noname);
	cr_assert_eq(parse(&r, &why), -1);
	make_req(&r, 4, 0, 0, good, NULL); /* unknown flag */
	cr_assert_eq(parse(&r, &why), -1);

	/* argc 0. */
	make_req(&r, 0, 0, 0, good, NULL);
	put32((unsigned char *)r.b + 8, 0);
	put32((unsigned char *)r.b + 12, 2);
	cr_assert_eq(parse(&r, &why), -1);
	/* Counts larger than the strings there: never read past the end. */
	make_req(&r, 0, 0, 0, good, NULL);
	put32((unsigned char *)r.b + 8, 3);
	cr_assert_eq(parse(&r, &why), -1);
	put32((unsigned char *)r.b + 8, 0xffffffffu);
	cr_assert_eq(parse(&r, &why), -1);
	put32((unsigned char *)r.b + 8, 2);
	put32((unsigned char *)r.b + 12, 0xffffffffu);
	cr_assert_eq(parse(&r, &why), -1);
	/* The last string without its NUL. */
	make_req(&r, 0, 0, 0, good, NULL);
	r.len--;
	cr_assert_eq(parse(&r, &why), -1);
	/* Bytes after the last string. */
	make_req(&r, 0, 0, 0, good, NULL);
	r.b[r.len++] = 'x';
	cr_assert_eq(parse(&r, &why), -1);
	/* Shorter than the fixed part. */
	make_req(&r, 0, 0, 0, good, NULL);
	r.len = 15;
	cr_assert_eq(parse(&r, &why), -1);
	/* And the unchanged one passes: the failures above are theirs. */
	make_req(&r, 0, 0, 0, good, NULL);
	cr_assert_eq(parse(&r, &why), 0);
}

Test(chan, a_peer_inside_our_pid_namespace_is_refused)
{
	int sv[2];

	/* The peer is this process: it has a pid here, which no peer that
	 * may use the channel (outside the container) has. */
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	cr_assert_not(agent_chan_peer_ok(sv[0]));
	close(sv[0]);
	close(sv[1]);
}

/* --- a handler over a socketpair --------------------------------------- */

struct conv {
	int fd;	    /* hutch's end */
	pid_t hpid; /* the handler */
};

/* A script at dir/hutch-agent-NAME. */
static void script(const char *name, const char *body)
{
	FILE *f = fopen(agent_path(name), "w");

	cr_assert_not_null(f);
	fprintf(f, "#!/bin/sh\n%s\n", body);
	cr_assert_eq(fclose(f), 0);
	cr_assert_eq(chmod(agent_a, 0755), 0);
}

static void serve(struct conv *c, int timeout_ms)
{
	int sv[2];

	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	c->hpid = fork();
	cr_assert_geq(c->hpid, 0);
	if (c->hpid == 0) {
		close(sv[0]);
		_exit(agent_chan_serve(sv[1], dir, timeout_ms));
	}
	close(sv[1]);
	c->fd = sv[0];
}

static void send_all(int fd, const void *p, size_t len)
{
	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		cr_assert_gt(n, 0, "send: %s", strerror(errno));
		p = (const char *)p + n;
		len -= (size_t)n;
	}
}

/* Head and payload in one send: a handler that refuses after the head
 * closes without reading the rest, and a second send would see EPIPE. */
static void send_frame(struct conv *c, int type, const void *p, size_t len)
{
	static unsigned char b[8 + 65536];

	cr_assert_leq(len, sizeof(b) - 8);
	b[0] = (unsigned char)type;
	b[1] = b[2] = b[3] = 0;
	put32(b + 4, (uint32_t)len);
	if (len)
		memcpy(b + 8, p, len);
	send_all(c->fd, b, 8 + len);
}

/* 0 at EOF, else 1 with the frame. */
static int read_n(int fd, void *p, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = read(fd, (char *)p + got, len - got);

		if (n == 0 && got == 0)
			return 0;
		cr_assert_gt(n, 0, "short frame");
		got += (size_t)n;
	}
	return 1;
}

struct frame {
	int type;
	uint32_t len;
	unsigned char p[HUTCH_CHAN_FRAME_MAX]; /* the protocol's bound */
};

static int next_frame(struct conv *c, struct frame *f)
{
	unsigned char h[8];

	if (!read_n(c->fd, h, 8))
		return 0;
	f->type = h[0];
	f->len = (uint32_t)h[4] << 24 | (uint32_t)h[5] << 16 |
		 (uint32_t)h[6] << 8 | h[7];
	cr_assert_eq(h[1] | h[2] | h[3], 0);
	cr_assert_leq(f->len, sizeof(f->p));
	if (f->len)
		cr_assert(read_n(c->fd, f->p, f->len));
	return 1;
}

static uint32_t u32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

static void expect_hello(struct conv *c)
{
	static struct frame f;

	cr_assert(next_frame(c, &f));
	cr_assert_eq(f.type, HUTCH_CHAN_HELLO);
	cr_assert_geq(f.len, 16);
	cr_assert_eq(u32(f.p), HUTCH_CHAN_VERSION);
	cr_assert_eq(u32(f.p + 4), (uint32_t)getuid());
	cr_assert_eq(u32(f.p + 8), (uint32_t)getgid());
}

struct result {
	bool started, exited, refused;
	uint32_t reason;
	int32_t code;
	char out[1 << 20], err[65536];
	size_t out_len, err_len;
};

/* Read to the end: STARTED, output, EXIT (or REFUSED), then EOF. */
static void collect(struct conv *c, struct result *r)
{
	static struct frame f;
	int status;

	memset(r, 0, sizeof(*r));
	while (next_frame(c, &f)) {
		cr_assert_not(r->exited || r->refused, "a frame after the end");
		switch (f.type) {
		case HUTCH_CHAN_STARTED:
			cr_assert_eq(f.len, 4);
			cr_assert_not(r->started);
			r->started = true;
			break;
		case HUTCH_CHAN_STDOUT:
		case HUTCH_CHAN_STDERR:
			cr_assert(r->started);
			if (f.type == HUTCH_CHAN_STDOUT) {
				cr_assert_lt(r->out_len + f.len,
					     sizeof(r->out));
				memcpy(r->out + r->out_len, f.p, f.len);
				r->out_len += f.len;
			} else {
				cr_assert_lt(r->err_len + f.len,
					     sizeof(r->err));
				memcpy(r->err + r->err_len, f.p, f.len);
				r->err_len += f.len;
			}
			break;
		case HUTCH_CHAN_EXIT:
			cr_assert(r->started);
			cr_assert_eq(f.len, 4);
			r->exited = true;
			r->code = (int32_t)u32(f.p);
			break;
		case HUTCH_CHAN_REFUSED:
			cr_assert_not(r->started);
			cr_assert_geq(f.len, 4);
			r->refused = true;
			r->reason = u32(f.p);
			break;
		default:
			cr_assert_fail("unexpected frame type %d", f.type);
		}
	}
	close(c->fd);
	cr_assert_eq(waitpid(c->hpid, &status, 0), c->hpid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void request(struct conv *c, uint32_t flags, const char *const *argv,
		    const char *const *env)
{
	static struct req r;

	make_req(&r, flags, 0, 0, argv, env);
	send_frame(c, HUTCH_CHAN_REQ, r.b, r.len);
}

Test(chan, runs_the_agent_with_its_output_and_exit_status)
{
	const char *argv[] = { NULL, "one", "two", NULL };
	const char *env[] = { "CHAN_FOO=new", NULL };
	struct conv c;
	static struct result r;

	script("b1", "echo \"out $1 $2 $CHAN_FOO $CHAN_KEEP $(pwd)\"\n"
		     "echo err >&2\nread x || echo eof\nexit 3");
	argv[0] = agent_path("b1");
	/* PID 1's environment, which the request's adds to and overrides. */
	setenv("CHAN_FOO", "old", 1);
	setenv("CHAN_KEEP", "kept", 1);
	serve(&c, 10000);
	expect_hello(&c);
	request(&c, 0, argv, env);
	collect(&c, &r);
	cr_assert(r.started);
	cr_assert(r.exited);
	cr_assert_eq(r.code, 3);
	cr_assert_eq(r.out_len, strlen("out one two new kept /\neof\n"));
	cr_assert_arr_eq(r.out, "out one two new kept /\neof\n", r.out_len);
	cr_assert_eq(r.err_len, 4);
	cr_assert_arr_eq(r.err, "err\n", 4);
}

/*
 * A "run" of this very program (the request's agent is a hard link of the
 * running one) is a fork that goes on as the agent would after its execve:
 * the request's argv and environment, no fd of the handler's, named in
 * PID 1's room as the exec'd agent would be ("kill" finds it so).
 */
Test(chan, a_run_of_this_agent_is_a_fork_named_as_the_agent)
{
	const char *argv[] = {
		NULL,	"run", "--tag",		 "t1", "--deadline-ms",
		"5000", "--",  "a-long-command", NULL
	};
	const char *env[] = { "CHAN_FOO=new", NULL };
	static char exe[PATH_MAX], want[PATH_MAX + 256];
	struct conv c;
	static struct result r;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	size_t named;

	/* The link must be on the binary's file system: a directory beside
	 * it, removed by the suite's teardown. */
	cr_assert_gt(n, 0);
	exe[n] = '\0';
	teardown();
	cr_assert_lt(snprintf(dir, sizeof(dir), "%s.chan-XXXXXX", exe),
		     (int)sizeof(dir));
	cr_assert_not_null(mkdtemp(dir));
	cr_assert_eq(link(exe, agent_path("self")), 0, "%s: %s", agent_a,
		     strerror(errno));
	argv[0] = agent_path("self");
	/* Room for "AGENT run --tag t1" and 10 bytes: not "--deadline-ms". */
	named = strlen(argv[0]) + 1 + sizeof("run") + sizeof("--tag") +
		sizeof("t1");
	agent_cmdline_size = named + 10;
	agent_cmdline = malloc(agent_cmdline_size);
	cr_assert_not_null(agent_cmdline);
	memset(agent_cmdline, 'x', agent_cmdline_size - 1);
	agent_cmdline[agent_cmdline_size - 1] = '\0';
	setenv("CHAN_FOO", "old", 1);

	serve(&c, 10000);
	expect_hello(&c);
	request(&c, 0, argv, env);
	collect(&c, &r);
	cr_assert(r.started);
	cr_assert(r.exited);
	cr_assert_eq(r.code, 7, "exit %d: %.*s", r.code, (int)r.err_len, r.err);
	/* As many whole arguments as fit, the rest of the room zeroed, its
	 * last byte a NUL; comm cut to the kernel's 15 bytes. */
	snprintf(want, sizeof(want),
		 "argc 8, run a-long-command, filtered, CHAN_FOO=new, comm "
		 "hutch-agent-sel, fds above 2:\nname:%s|run|--tag|t1|"
		 "||||||||||\n",
		 argv[0]);
	cr_assert_eq(r.out_len, strlen(want), "%.*s", (int)r.out_len, r.out);
	cr_assert_arr_eq(r.out, want, r.out_len, "%.*s", (int)r.out_len, r.out);

	/* Another program of the directory is exec'd as ever. */
	script("other", "echo \"exec'd $1\"");
	argv[0] = agent_path("other");
	serve(&c, 10000);
	expect_hello(&c);
	request(&c, 0, argv, env);
	collect(&c, &r);
	cr_assert_eq(r.code, 0);
	cr_assert_eq(r.out_len, strlen("exec'd run\n"), "%.*s", (int)r.out_len,
		     r.out);
	free(agent_cmdline);
	agent_cmdline = NULL;
	agent_cmdline_size = 0;
}

Test(chan, relays_stdin_to_its_end)
{
	const char *argv[] = { NULL, NULL };
	static char big[600000];
	struct conv c;
	pid_t writer;
	int status;
	static struct result r;

	script("cat", "exec cat");
	argv[0] = agent_path("cat");
	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (char)('a' + i % 26);
	serve(&c, 10000);
	expect_hello(&c);
	request(&c, HUTCH_CHAN_F_STDIN, argv, NULL);
	/* More than a pipe or a socket holds, sent by a process of its own
	 * while this one reads the output back. */
	writer = fork();
	cr_assert_geq(writer, 0);
	if (writer == 0) {
		for (size_t off = 0; off < sizeof(big); off += 50000) {
			size_t n = sizeof(big) - off < 50000 ?
					   sizeof(big) - off :
					   50000;

			send_frame(&c, HUTCH_CHAN_STDIN, big + off, n);
		}
		send_frame(&c, HUTCH_CHAN_STDIN_END, NULL, 0);
		_exit(0);
	}
	collect(&c, &r);
	cr_assert_eq(waitpid(writer, &status, 0), writer);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	cr_assert(r.exited);
	cr_assert_eq(r.code, 0);
	cr_assert_eq(r.out_len, sizeof(big));
	cr_assert_arr_eq(r.out, big, sizeof(big));
}

Test(chan, a_terminal_with_its_size)
{
	const char *argv[] = { NULL, NULL };
	static struct req q;
	struct conv c;
	static struct result r;

	script("tty", "tty; stty size; read line; echo \"got $line\"");
	argv[0] = agent_path("tty");
	serve(&c, 10000);
	expect_hello(&c);
	make_req(&q, HUTCH_CHAN_F_TTY | HUTCH_CHAN_F_STDIN, 30, 100, argv,
		 NULL);
	send_frame(&c, HUTCH_CHAN_REQ, q.b, q.len);
	send_frame(&c, HUTCH_CHAN_STDIN, "hi\n", 3);
	collect(&c, &r);
	cr_assert(r.exited);
	cr_assert_eq(r.code, 0);
	cr_assert_eq(r.err_len, 0, "a terminal has one stream");
	r.out[r.out_len] = '\0';
	/* "hi" may come first: the terminal echoes it when it arrives. */
	cr_assert_not_null(strstr(r.out, "/dev/pts/"), "%s", r.out);
	cr_assert_not_null(strstr(r.out, "\r\n30 100\r\n"), "%s", r.out);
	cr_assert_not_null(strstr(r.out, "got hi\r\n"), "%s", r.out);
}

Test(chan, a_resize_reaches_the_terminal)
{
	const char *argv[] = { NULL, NULL };
	static struct req q;
	struct conv c;
	static struct result r;
	unsigned char rs[4] = { 0, 40, 0, 132 };

	/* The resize is sent before the line that lets the script ask. */
	script("rs", "read line; stty size");
	argv[0] = agent_path("rs");
	serve(&c, 10000);
	expect_hello(&c);
	make_req(&q, HUTCH_CHAN_F_TTY | HUTCH_CHAN_F_STDIN, 30, 100, argv,
		 NULL);
	send_frame(&c, HUTCH_CHAN_REQ, q.b, q.len);
	send_frame(&c, HUTCH_CHAN_RESIZE, rs, 4);
	send_frame(&c, HUTCH_CHAN_STDIN, "go\n", 3);
	collect(&c, &r);
	cr_assert(r.exited);
	r.out[r.out_len] = '\0';
	cr_assert_not_null(strstr(r.out, "40 132\r\n"), "%s", r.out);
}

Test(chan, a_signal_is_128_plus_its_number)
{
	const char *argv[] = { NULL, NULL };
	struct conv c;
	static struct result r;

	script("sig", "kill -9 $$");
	argv[0] = agent_path("sig");
	serve(&c, 10000);
	expect_hello(&c);
	request(&c, 0, argv, NULL);
	collect(&c, &r);
	cr_assert(r.exited);
	cr_assert_eq(r.code, 128 + 9);
}

Test(chan, refusals)
{
	const char *missing[] = { NULL, NULL };
	const char *sh[] = { "/bin/sh", "-c", "touch /tmp/never", NULL };
	struct conv c;
	static struct result r;
	char *m;

	m = strdup(agent_path("missing"));
	missing[0] = m;
	serve(&c, 10000);
	expect_hello(&c);
	request(&c, 0, missing, NULL);
	collect(&c, &r);
	cr_assert(r.refused);
	cr_assert_eq(r.reason, HUTCH_CHAN_REFUSED_MISSING);

	/* Not executable: MISSING too (EACCES), hutch falls back. */
	script("noexec", "exit 0");
	cr_assert_eq(chmod(agent_a, 0644), 0);
	missing[0] = agent_a;
	serve(&c, 10000);
	expect_hello(&c);
	request(&c, 0, missing, NULL);
	collect(&c, &r);
	cr_assert(r.refused);
	cr_assert_eq(r.reason, HUTCH_CHAN_REFUSED_MISSING);

	serve(&c, 10000);
	expect_hello(&c);
	request(&c, 0, sh, NULL);
	collect(&c, &r);
	cr_assert(r.refused);
	cr_assert_eq(r.reason, HUTCH_CHAN_REFUSED_BAD);

	/* Not a REQ first. */
	serve(&c, 10000);
	expect_hello(&c);
	send_frame(&c, HUTCH_CHAN_STDIN, "x", 1);
	collect(&c, &r);
	cr_assert(r.refused);
	cr_assert_eq(r.reason, HUTCH_CHAN_REFUSED_BAD);
	free(m);
}

Test(chan, a_silent_peer_is_dropped_after_the_request_time)
{
	struct conv c;
	static struct result r;

	/* Nothing sent: the handler ends by itself (EOF, nothing else),
	 * or this test hangs until its timeout. */
	serve(&c, 300);
	expect_hello(&c);
	collect(&c, &r);
	cr_assert_not(r.started || r.refused);
}

Test(chan, when_hutch_leaves_the_process_runs_on_with_stdin_closed)
{
	const char *argv[] = { NULL, NULL };
	static struct frame f;
	char mark[PATH_MAX + 8], cmd[PATH_MAX * 2];
	struct conv c;
	int status;

	snprintf(mark, sizeof(mark), "%s/mark", dir);
	snprintf(cmd, sizeof(cmd),
		 "cat >/dev/null; i=0; while [ $i -lt 100 ]; do echo "
		 "filler; i=$((i+1)); done; echo done > '%s'",
		 mark);
	script("left", cmd);
	argv[0] = agent_path("left");
	serve(&c, 10000);
	expect_hello(&c);
	request(&c, HUTCH_CHAN_F_STDIN, argv, NULL);
	cr_assert(next_frame(&c, &f));
	cr_assert_eq(f.type, HUTCH_CHAN_STARTED);
	close(c.fd);
	/* The handler ends once the process has: stdin closed by the
	 * handler (cat ends), its output read and thrown away, and the
	 * process not killed, so it wrote its mark. */
	cr_assert_eq(waitpid(c.hpid, &status, 0), c.hpid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	cr_assert_eq(access(mark, F_OK), 0, "the process did not finish");
}

Test(chan, an_oversize_frame_ends_the_conversation)
{
	const char *argv[] = { NULL, NULL };
	unsigned char h[8] = { HUTCH_CHAN_STDIN, 0, 0, 0 };
	struct conv c;
	static struct result r;

	script("cat2", "exec cat");
	argv[0] = agent_path("cat2");
	serve(&c, 10000);
	expect_hello(&c);
	request(&c, HUTCH_CHAN_F_STDIN, argv, NULL);
	put32(h + 4, HUTCH_CHAN_FRAME_MAX + 1);
	send_all(c.fd, h, 8);
	/* Taken as hutch gone: stdin closed (cat ends), no EXIT sent. */
	collect(&c, &r);
	cr_assert(r.started);
	cr_assert_not(r.exited);
}
