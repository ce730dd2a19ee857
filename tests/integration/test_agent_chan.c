/*
 * test_agent_chan.c - PID 1's channel in a real session, spoken to
 * directly (not through the library): a command's frames and exit status,
 * stdin, a terminal, and kill by tag reaching a run agent the channel
 * started (its parent is a handler, not the engine).  The test process is
 * root on the engine's host, as the channel requires.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <json-c/json.h>

#include "harness.h"
#include "../../src/shared/agent_protocol.h"

/* The host path of the session's system volume (malloc'ed). */
static char *system_volume(const char *s)
{
	char path[256], *body = NULL, *src = NULL;
	json_object *j, *mounts;
	size_t len;

	snprintf(path, sizeof(path), "/containers/hutch-%s/json", s);
	cr_assert_eq(it_api("GET", path, &body, &len), 200);
	j = it_json(body, len);
	free(body);
	mounts = it_json_get(j, "Mounts");
	for (size_t i = 0; i < json_object_array_length(mounts); i++) {
		json_object *m = json_object_array_get_idx(mounts, i);

		if (!strcmp(json_object_get_string(
				    it_json_get(m, "Destination")),
			    HUTCH_AGENT_DIR))
			src = strdup(json_object_get_string(
				it_json_get(m, "Source")));
	}
	json_object_put(j);
	cr_assert_not_null(src, "no mount at " HUTCH_AGENT_DIR);
	return src;
}

struct chan {
	char sock[PATH_MAX];
	char agent[PATH_MAX]; /* the agent's path in the container */
};

static void chan_find(const char *s, struct chan *c)
{
	char *vol = system_volume(s), bin[PATH_MAX];
	struct dirent *d;
	DIR *dir;
	int n = 0;

	snprintf(c->sock, sizeof(c->sock),
		 "%s/" HUTCH_CHAN_DIR "/" HUTCH_CHAN_SOCK, vol);
	snprintf(bin, sizeof(bin), "%s/bin", vol);
	dir = opendir(bin);
	cr_assert_not_null(dir, "%s: %s", bin, strerror(errno));
	/* A fresh session holds this build's agent only. */
	while ((d = readdir(dir)))
		if (!strncmp(d->d_name, HUTCH_AGENT_NAME "-",
			     sizeof(HUTCH_AGENT_NAME))) {
			snprintf(c->agent, sizeof(c->agent),
				 HUTCH_AGENT_BIN_DIR "/%s", d->d_name);
			n++;
		}
	closedir(dir);
	cr_assert_eq(n, 1, "agents in %s: %d", bin, n);
	free(vol);
}

static int chan_connect(const struct chan *c)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	cr_assert_geq(fd, 0);
	cr_assert_lt(strlen(c->sock), sizeof(sa.sun_path));
	strcpy(sa.sun_path, c->sock);
	cr_assert_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0,
		     "connect %s: %s", c->sock, strerror(errno));
	return fd;
}

static void put32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
}

static uint32_t get32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

static void send_frame(int fd, int type, const void *p, size_t len)
{
	static unsigned char b[8 + 65536];
	size_t off = 0;

	cr_assert_leq(len, sizeof(b) - 8);
	b[0] = (unsigned char)type;
	b[1] = b[2] = b[3] = 0;
	put32(b + 4, (uint32_t)len);
	if (len)
		memcpy(b + 8, p, len);
	while (off < 8 + len) {
		ssize_t n = send(fd, b + off, 8 + len - off, MSG_NOSIGNAL);

		cr_assert_gt(n, 0, "send: %s", strerror(errno));
		off += (size_t)n;
	}
}

/* The request: argv (NULL-terminated), no environment. */
static void send_req(int fd, uint32_t flags, const char *const *argv)
{
	static unsigned char b[8192];
	size_t len = 16;
	uint32_t argc = 0;

	while (argv[argc])
		argc++;
	put32(b, flags);
	b[4] = 0;
	b[5] = 24;
	b[6] = 0;
	b[7] = 80;
	put32(b + 8, argc);
	put32(b + 12, 0);
	for (uint32_t i = 0; i < argc; i++) {
		size_t n = strlen(argv[i]) + 1;

		cr_assert_lt(len + n, sizeof(b));
		memcpy(b + len, argv[i], n);
		len += n;
	}
	send_frame(fd, HUTCH_CHAN_REQ, b, len);
}

static int read_n(int fd, void *p, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = read(fd, (char *)p + got, len - got);

		if (n == 0 && got == 0)
			return 0;
		cr_assert_gt(n, 0, "a frame cut short");
		got += (size_t)n;
	}
	return 1;
}

struct outcome {
	bool hello, started, exited, refused;
	int32_t code;
	char out[8192], err[8192];
	size_t out_len, err_len;
};

/* HELLO, then everything to EOF. */
static void read_all(int fd, struct outcome *o)
{
	static unsigned char p[1 << 20];
	unsigned char h[8];

	memset(o, 0, sizeof(*o));
	while (read_n(fd, h, 8)) {
		uint32_t len = get32(h + 4);

		cr_assert_leq(len, sizeof(p));
		if (len)
			cr_assert(read_n(fd, p, len));
		switch (h[0]) {
		case HUTCH_CHAN_HELLO:
			cr_assert_not(o->hello);
			cr_assert_geq(len, 16);
			cr_assert_eq(get32(p), HUTCH_CHAN_VERSION);
			o->hello = true;
			break;
		case HUTCH_CHAN_STARTED:
			o->started = true;
			break;
		case HUTCH_CHAN_STDOUT:
		case HUTCH_CHAN_STDERR: {
			char *b = h[0] == HUTCH_CHAN_STDOUT ? o->out : o->err;
			size_t *bl = h[0] == HUTCH_CHAN_STDOUT ? &o->out_len :
								 &o->err_len;

			cr_assert(o->started);
			cr_assert_lt(*bl + len, sizeof(o->out));
			memcpy(b + *bl, p, len);
			*bl += len;
			break;
		}
		case HUTCH_CHAN_EXIT:
			cr_assert_eq(len, 4);
			o->exited = true;
			o->code = (int32_t)get32(p);
			break;
		case HUTCH_CHAN_REFUSED:
			o->refused = true;
			break;
		default:
			cr_assert_fail("frame type %d", h[0]);
		}
	}
	close(fd);
}

static void up(const char *s, struct chan *c)
{
	it_result r = it_hutch("up", s, NULL);

	IT_ASSERT_EXIT(r, 0, "up");
	it_result_free(&r);
	chan_find(s, c);
}

IT_TEST(agent_chan, runs_an_agent_command_like_an_exec)
{
	const char *s = it_session();
	struct chan c;
	struct outcome o;
	int fd;

	up(s, &c);
	const char *argv[] = { c.agent, "run",
			       "--tag", "chan1",
			       "--",	"sh",
			       "-c",	"echo out; echo err >&2; exit 3",
			       NULL };
	fd = chan_connect(&c);
	send_req(fd, 0, argv);
	read_all(fd, &o);
	cr_assert(o.hello && o.started && o.exited);
	cr_assert_eq(o.code, 3);
	cr_assert_eq(o.out_len, 4);
	cr_assert_arr_eq(o.out, "out\n", 4);
	cr_assert_eq(o.err_len, 4);
	cr_assert_arr_eq(o.err, "err\n", 4);

	/* stdin, to its end. */
	const char *cat[] = { c.agent, "run", "--tag", "chan2",
			      "--",    "cat", NULL };
	fd = chan_connect(&c);
	send_req(fd, HUTCH_CHAN_F_STDIN, cat);
	send_frame(fd, HUTCH_CHAN_STDIN, "hello ", 6);
	send_frame(fd, HUTCH_CHAN_STDIN, "world\n", 6);
	send_frame(fd, HUTCH_CHAN_STDIN_END, NULL, 0);
	read_all(fd, &o);
	cr_assert(o.exited);
	cr_assert_eq(o.code, 0);
	cr_assert_eq(o.out_len, 12);
	cr_assert_arr_eq(o.out, "hello world\n", 12);

	/* A terminal, of the request's size. */
	const char *tty[] = { c.agent,		"run", "--tag", "chan3",
			      "--tty",		"--",  "sh",	"-c",
			      "tty; stty size", NULL };
	fd = chan_connect(&c);
	send_req(fd, HUTCH_CHAN_F_TTY, tty);
	read_all(fd, &o);
	cr_assert(o.exited);
	cr_assert_eq(o.code, 0);
	o.out[o.out_len] = '\0';
	cr_assert(!strncmp(o.out, "/dev/pts/", 9), "%s", o.out);
	cr_assert_not_null(strstr(o.out, "24 80\r\n"), "%s", o.out);

	/* Anything but the agent is refused, and nothing runs. */
	const char *sh[] = { "/bin/sh", "-c", "touch /workspace/ran", NULL };
	fd = chan_connect(&c);
	send_req(fd, 0, sh);
	read_all(fd, &o);
	cr_assert(o.refused);
	cr_assert_not(o.started);
	it_result r =
		it_hutch("sh", s, "test -e /workspace/ran || echo no", NULL);
	IT_ASSERT_EXIT(r, 0, "test -e");
	cr_assert_str_eq(r.out, "no\n");
	it_result_free(&r);
}

IT_TEST(agent_chan, kill_by_tag_finds_an_agent_the_channel_started)
{
	const char *s = it_session();
	struct chan c;
	struct outcome o, k;
	int fd, kfd;
	it_result r;

	up(s, &c);
	const char *argv[] = { c.agent, "run",
			       "--tag", "chanlong",
			       "--",	"sh",
			       "-c",	"echo up; sleep 300 & sleep 300",
			       NULL };
	const char *kill[] = { c.agent, "kill", "chanlong", NULL };
	fd = chan_connect(&c);
	send_req(fd, 0, argv);
	/* Started once "up" is out: read HELLO, STARTED and that frame. */
	for (int seen = 0; seen < 3;) {
		unsigned char h[8], p[64];
		uint32_t len;

		cr_assert(read_n(fd, h, 8));
		len = get32(h + 4);
		cr_assert_leq(len, sizeof(p));
		if (len)
			cr_assert(read_n(fd, p, len));
		seen++;
		if (seen == 3)
			cr_assert_eq(h[0], HUTCH_CHAN_STDOUT);
	}
	kfd = chan_connect(&c);
	send_req(kfd, 0, kill);
	read_all(kfd, &k);
	cr_assert(k.exited);
	cr_assert_eq(k.code, 0, "kill: %.*s", (int)k.err_len, k.err);
	read_all(fd, &o);
	cr_assert(o.exited);
	cr_assert_eq(o.code, 128 + 9);
	r = it_hutch("sh", s, "ps -o args | grep -c '^sleep 300' || true",
		     NULL);
	IT_ASSERT_EXIT(r, 0, "ps");
	cr_assert_str_eq(r.out, "0\n", "left running");
	it_result_free(&r);
}
