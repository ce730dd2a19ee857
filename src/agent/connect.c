/*
 * connect.c - the "connect" subcommand: port forwarding's far end
 *
 * hutch-agent connect PORT
 *
 * Connects to 127.0.0.1:PORT in the container (a session has no network,
 * but its loopback works) and relays: stdin to the socket, the socket to
 * stdout.  End of stdin is passed on as a half-close (shutdown SHUT_WR),
 * so a request-then-answer protocol still gets its answer; the relay ends
 * when the socket's read side has ended and all it said is written.  One
 * poll() loop, two fixed buffers: memory does not grow with the traffic,
 * and a slow side stops the reading of the other (back-pressure) instead
 * of being queued for.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent.h"

#define RELAY_BUF 65536

struct pipe_buf {
	char data[RELAY_BUF];
	size_t off, len;
};

static int parse_port(const char *s)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < 1 || v > 65535)
		return -1;
	return (int)v;
}

/* Read into an empty buffer: >0 bytes, 0 EOF, -1 would block or error. */
static ssize_t fill(int fd, struct pipe_buf *b)
{
	ssize_t n;

	do
		n = read(fd, b->data, sizeof(b->data));
	while (n < 0 && errno == EINTR);
	if (n > 0) {
		b->off = 0;
		b->len = (size_t)n;
	}
	return n;
}

/* Write some of the buffer: 0 progress (or would block), -1 error. */
static int drain(int fd, struct pipe_buf *b, bool sock)
{
	ssize_t n;

	do
		n = sock ? send(fd, b->data + b->off, b->len, MSG_NOSIGNAL) :
			   write(fd, b->data + b->off, b->len);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EAGAIN ? 0 : -1;
	b->off += (size_t)n;
	b->len -= (size_t)n;
	return 0;
}

void agent_drain_fds(int a, int b)
{
	static char buf[65536];
	int fds[2] = { a, b }, i;
	struct pollfd p[2];
	ssize_t n;

	while (fds[0] >= 0 || fds[1] >= 0) {
		for (i = 0; i < 2; i++)
			p[i] = (struct pollfd){ fds[i], POLLIN, 0 };
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			return;
		}
		for (i = 0; i < 2; i++) {
			if (fds[i] < 0 || !p[i].revents)
				continue;
			n = read(fds[i], buf, sizeof(buf));
			if (n == 0 ||
			    (n < 0 && errno != EINTR && errno != EAGAIN)) {
				close(fds[i]);
				fds[i] = -1;
			}
		}
	}
}

/*
 * "drain": what "run" leaves behind when background processes still hold
 * the command's output pipes (run.c, leave_drainer): fds 3 and 4 are read
 * until every writer has closed them, and the bytes thrown away.
 */
int agent_drain(int argc, char **argv)
{
	(void)argv;
	if (argc != 1) {
		agent_err("usage: hutch-agent drain (fds 3 and 4)");
		return HUTCH_AGENT_EXIT_USAGE;
	}
	agent_drain_fds(3, 4);
	return 0;
}

int agent_connect(int argc, char **argv)
{
	static struct pipe_buf up, down; /* stdin->socket, socket->stdout */
	struct sockaddr_in sa;
	struct pollfd p[4];
	bool in_open = true, sock_in = true, wr_shut = false;
	int port, s, rc = 0;
	ssize_t n;

	if (argc != 2 || (port = parse_port(argv[1])) < 0) {
		agent_err("usage: hutch-agent connect PORT (1..65535)");
		return HUTCH_AGENT_EXIT_USAGE;
	}
	/* A reader of stdout that went away is a write error, not death. */
	signal(SIGPIPE, SIG_IGN);
	if (agent_plug_std_fds() < 0) {
		agent_err("cannot open standard fds: %m");
		return HUTCH_AGENT_EXIT_INTERNAL;
	}
	s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0) {
		agent_err("socket: %m");
		return HUTCH_AGENT_EXIT_FAIL;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons((unsigned short)port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(s, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		agent_err("cannot connect to 127.0.0.1:%d: %m", port);
		close(s);
		return HUTCH_AGENT_EXIT_FAIL;
	}
	/* Only the socket is made non-blocking: stdin and stdout may be
	 * shared with others, whose file status we must not change. */
	fcntl(s, F_SETFL, fcntl(s, F_GETFL) | O_NONBLOCK);

	while (sock_in || down.len) {
		/* stdin ended and all of it sent: pass the EOF on. */
		if (!in_open && !up.len && !wr_shut) {
			shutdown(s, SHUT_WR);
			wr_shut = true;
		}
		p[0] = (struct pollfd){ in_open && !up.len ? 0 : -1, POLLIN,
					0 };
		p[1] = (struct pollfd){ up.len ? s : -1, POLLOUT, 0 };
		p[2] = (struct pollfd){ sock_in && !down.len ? s : -1, POLLIN,
					0 };
		p[3] = (struct pollfd){ down.len ? 1 : -1, POLLOUT, 0 };
		if (poll(p, 4, -1) < 0) {
			if (errno == EINTR)
				continue;
			agent_err("poll: %m");
			rc = HUTCH_AGENT_EXIT_FAIL;
			break;
		}
		if (p[0].revents) {
			n = fill(0, &up);
			if (n == 0 || (n < 0 && errno != EAGAIN))
				in_open = false;
		}
		if (p[1].revents && drain(s, &up, true) < 0) {
			/* The peer will not read any more: what stdin still
			 * has goes nowhere. */
			up.len = 0;
			in_open = false;
			wr_shut = true;
		}
		if (p[2].revents) {
			n = fill(s, &down);
			if (n == 0 || (n < 0 && errno != EAGAIN))
				sock_in = false;
		}
		if (p[3].revents && drain(1, &down, false) < 0) {
			agent_err("writing the output: %m");
			rc = HUTCH_AGENT_EXIT_FAIL;
			break;
		}
	}
	close(s);
	return rc;
}
