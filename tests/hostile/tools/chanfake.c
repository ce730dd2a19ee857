/*
 * chanfake.c - a hostile tool (tests/hostile/test_chan.c): a command that
 * goes after the agent's channel (HUTCH_CHAN_PATH) from inside the
 * session.  Static, so that it runs in any image; built by make check.
 *
 *   chanfake listen PATH LOG [--no-accept]
 *	Take the channel's name: remove the agent's socket and listen at
 *	PATH in its place, as a command of the session's user can.  Each
 *	connection gets a HELLO that looks like the agent's (so a host that
 *	did not check its peer would go on and send its request), and every
 *	byte received is appended to LOG; "accepted" is appended to LOG.acc
 *	per connection.  --no-accept: listen with the smallest backlog and
 *	never accept, so that a connect() beyond it would wait.  Runs until
 *	killed; "listening" on stdout once it does.
 *
 *   chanfake connect PATH
 *	Connect to the agent's socket from inside, as a command would to
 *	get PID 1 to run something outside its own tree: read what comes
 *	first (the agent's HELLO, if it took us), send a request to run
 *	`touch /tmp/chanfake-ran`, and print "hello N" (bytes received
 *	before our request), then "after M" (bytes after it) or the error.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "agent_protocol.h"

static void put32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
}

static void head(unsigned char *h, int type, uint32_t len)
{
	memset(h, 0, HUTCH_CHAN_HEAD);
	h[0] = (unsigned char)type;
	put32(h + 4, len);
}

static int addr(struct sockaddr_un *sa, const char *path)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sa->sun_path))
		return -1;
	strcpy(sa->sun_path, path);
	return 0;
}

static void append(const char *file, const void *data, size_t len)
{
	int fd = open(file, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);

	if (fd < 0)
		return;
	if (write(fd, data, len) < 0) {
		/* Nowhere to say it. */
	}
	close(fd);
}

static int do_listen(const char *path, const char *log, int no_accept)
{
	struct sockaddr_un sa;
	char acc[4096], buf[65536];
	unsigned char hello[HUTCH_CHAN_HEAD + 16 + 65];
	struct utsname u;
	size_t hn;
	int l, c;
	ssize_t n;

	if (addr(&sa, path) < 0)
		return 2;
	snprintf(acc, sizeof(acc), "%s.acc", log);
	unlink(path);
	l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (l < 0 || bind(l, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    chmod(path, 0666) < 0 || listen(l, no_accept ? 0 : 16) < 0) {
		perror("chanfake: listen");
		return 1;
	}
	append(log, "", 0);
	printf("listening\n");
	fflush(stdout);
	if (no_accept)
		for (;;)
			pause();
	uname(&u);
	hn = strlen(u.nodename);
	head(hello, HUTCH_CHAN_HELLO, (uint32_t)(16 + hn));
	put32(hello + HUTCH_CHAN_HEAD, HUTCH_CHAN_VERSION);
	put32(hello + HUTCH_CHAN_HEAD + 4, (uint32_t)getuid());
	put32(hello + HUTCH_CHAN_HEAD + 8, (uint32_t)getgid());
	put32(hello + HUTCH_CHAN_HEAD + 12, 0);
	memcpy(hello + HUTCH_CHAN_HEAD + 16, u.nodename, hn);
	for (;;) {
		c = accept4(l, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0)
			continue;
		append(acc, "accepted\n", 9);
		if (write(c, hello, HUTCH_CHAN_HEAD + 16 + hn) < 0) {
			/* The host may have closed at once. */
		}
		while ((n = read(c, buf, sizeof(buf))) > 0)
			append(log, buf, (size_t)n);
		close(c);
	}
}

/* The first agent under HUTCH_AGENT_BIN_DIR, for a request that would
 * run. */
static int agent_path(char *out, size_t outsz)
{
	DIR *d = opendir(HUTCH_AGENT_BIN_DIR);
	struct dirent *e;
	int found = -1;

	while (d && (e = readdir(d)))
		if (strncmp(e->d_name, HUTCH_AGENT_NAME "-",
			    sizeof(HUTCH_AGENT_NAME)) == 0) {
			snprintf(out, outsz, "%s/%s", HUTCH_AGENT_BIN_DIR,
				 e->d_name);
			found = 0;
			break;
		}
	if (d)
		closedir(d);
	return found;
}

static ssize_t read_some(int fd, char *buf, size_t len)
{
	size_t got = 0;
	ssize_t n;

	while (got < len && (n = read(fd, buf + got, len - got)) > 0)
		got += (size_t)n;
	return (ssize_t)got;
}

static int do_connect(const char *path)
{
	struct sockaddr_un sa;
	struct timeval tv = { .tv_sec = 3 };
	char agent[512], buf[4096];
	const char *argv[] = { agent,
			       "run",
			       "--tag",
			       "chanfake",
			       "--",
			       "touch",
			       "/tmp/chanfake-ran" };
	unsigned char req[8192];
	size_t off = HUTCH_CHAN_HEAD + 16;
	ssize_t n;
	int c;

	if (addr(&sa, path) < 0 || agent_path(agent, sizeof(agent)) < 0) {
		fprintf(stderr, "chanfake: no agent or bad path\n");
		return 2;
	}
	c = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c < 0 || connect(c, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		printf("connect: %s\n", strerror(errno));
		return 0;
	}
	/* A bound on the tool's own wait, not a judgement: the agent that
	 * refuses us closes at once; one that took us sends HELLO at once. */
	setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	n = read(c, buf, sizeof(buf));
	printf("hello %zd\n", n < 0 ? (ssize_t)0 : n);
	memset(req, 0, sizeof(req));
	put32(req + HUTCH_CHAN_HEAD, 0);      /* flags */
	put32(req + HUTCH_CHAN_HEAD + 4, 0);  /* rows, cols */
	put32(req + HUTCH_CHAN_HEAD + 8, 7);  /* argc */
	put32(req + HUTCH_CHAN_HEAD + 12, 0); /* envc */
	for (size_t i = 0; i < 7; i++) {
		size_t len = strlen(argv[i]) + 1;

		memcpy(req + off, argv[i], len);
		off += len;
	}
	head(req, HUTCH_CHAN_REQ, (uint32_t)(off - HUTCH_CHAN_HEAD));
	if (send(c, req, off, MSG_NOSIGNAL) < 0) {
		printf("send: %s\n", strerror(errno));
		return 0;
	}
	n = read_some(c, buf, sizeof(buf));
	printf("after %zd\n", n);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 4 && strcmp(argv[1], "listen") == 0)
		return do_listen(argv[2], argv[3],
				 argc > 4 &&
					 strcmp(argv[4], "--no-accept") == 0);
	if (argc == 3 && strcmp(argv[1], "connect") == 0)
		return do_connect(argv[2]);
	fprintf(stderr, "usage: chanfake listen PATH LOG [--no-accept] | "
			"connect PATH\n");
	return 2;
}
