/*
 * test_portfwd.c - `hutch port-forward` against a real engine: servers
 * started in a session without network answer on the host
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <json-c/json.h>

#include "harness.h"

#define CONCURRENT 50

static void sh(const char *s, const char *cmd)
{
	it_result r = it_hutch("sh", s, cmd, NULL);

	IT_ASSERT_EXIT(r, 0, cmd);
	it_result_free(&r);
}

/* `hutch port-forward S ARGS...` started; returns the host port of its
 * first "forwarding ADDR:PORT" line. */
static unsigned short forward_start(it_proc *p, const char *s, const char *spec)
{
	double until = it_now() + 60;
	char buf[512] = "";
	size_t len = 0;
	const char *at;
	unsigned int port = 0;

	it_spawn(p, NULL,
		 (const char *const[]){ "port-forward", s, spec, NULL });
	while (!(at = strstr(buf, "\n"))) {
		struct pollfd pf = { .fd = p->out_fd, .events = POLLIN };
		ssize_t n;

		cr_assert(it_now() < until, "port-forward never listened");
		if (poll(&pf, 1, 500) <= 0)
			continue;
		n = read(p->out_fd, buf + len, sizeof(buf) - 1 - len);
		if (n <= 0) {
			it_result r = it_wait(p);

			cr_assert_fail("port-forward ended (%d): %s%s",
				       r.status, buf, r.err);
		}
		len += (size_t)n;
		buf[len] = '\0';
	}
	at = strstr(buf, "127.0.0.1:");
	cr_assert(at && sscanf(at, "127.0.0.1:%u", &port) == 1 && port,
		  "no port in: %s", buf);
	return (unsigned short)port;
}

/* Ctrl-C ends it, cleanly. */
static it_result forward_stop(it_proc *p)
{
	it_result r;

	kill(p->pid, SIGINT);
	r = it_wait(p);
	IT_ASSERT_EXIT(r, 0, "port-forward after SIGINT");
	return r;
}

static int dial(unsigned short port)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons(port) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	cr_assert_geq(fd, 0);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0,
		     "connect 127.0.0.1:%u: %s", port, strerror(errno));
	return fd;
}

/* 50 HTTP requests at once, each on its own connection, all answered by
 * busybox httpd listening on the loopback of a session whose network is
 * "none". */
IT_TEST(portfwd, fifty_concurrent_requests_without_network)
{
	const char *s = it_session();
	struct pollfd fds[CONCURRENT];
	char *got[CONCURRENT];
	size_t len[CONCURRENT];
	size_t open_n = CONCURRENT;
	it_proc p;
	it_result r;
	unsigned short port;
	static const char req[] = "GET /index.html HTTP/1.0\r\n\r\n";

	sh(s, "mkdir -p www && echo hello-from-the-session > www/index.html "
	      "&& httpd -p 127.0.0.1:8080 -h /workspace/www");
	/* No way out: the forward is the only path in. */
	r = it_hutch("sh", s, "ls /sys/class/net", NULL);
	IT_ASSERT_EXIT(r, 0, "ls /sys/class/net");
	cr_assert_str_eq(r.out, "lo\n", "the session has a network: %s", r.out);
	it_result_free(&r);
	port = forward_start(&p, s, "0:8080");
	for (int i = 0; i < CONCURRENT; i++) {
		fds[i].fd = dial(port);
		fds[i].events = POLLIN;
		got[i] = calloc(1, 4096);
		len[i] = 0;
		cr_assert_eq(write(fds[i].fd, req, sizeof(req) - 1),
			     (ssize_t)sizeof(req) - 1);
	}
	while (open_n) {
		cr_assert_gt(poll(fds, CONCURRENT, 60000), 0,
			     "answers stopped coming");
		for (int i = 0; i < CONCURRENT; i++) {
			ssize_t n;

			if (fds[i].fd < 0 || !fds[i].revents)
				continue;
			n = read(fds[i].fd, got[i] + len[i], 4095 - len[i]);
			if (n > 0) {
				len[i] += (size_t)n;
				continue;
			}
			close(fds[i].fd);
			fds[i].fd = -1;
			open_n--;
		}
	}
	for (int i = 0; i < CONCURRENT; i++) {
		cr_assert(strstr(got[i], " 200 ") &&
				  strstr(got[i], "hello-from-the-session\n"),
			  "request %d got: %s", i, got[i]);
		free(got[i]);
	}
	r = forward_stop(&p);
	cr_assert_eq(r.err_len, 0, "stderr: %s", r.err);
	it_result_free(&r);
}

/* Bytes of every value, both ways, through an echo server; the client's
 * half-close reaches the server, whose close reaches the client. */
IT_TEST(portfwd, binary_data_both_ways_and_half_close)
{
	const char *s = it_session();
	size_t n = 2u << 20, sent = 0, back = 0;
	char *data = malloc(n), *echo = malloc(n);
	unsigned int x = 7;
	it_proc p;
	it_result r;
	unsigned short port;
	int fd;

	cr_assert(data && echo);
	for (size_t i = 0; i < n; i++) {
		x = x * 1103515245u + 12345u;
		data[i] = (char)(x >> 16);
	}
	/* -ll: a new `cat` for each connection, the server stays. */
	sh(s, "nc -ll -p 9000 -e cat </dev/null >/dev/null 2>&1 &");
	port = forward_start(&p, s, "0:9000");
	fd = dial(port);
	fcntl(fd, F_SETFL, O_NONBLOCK);
	while (back < n) {
		struct pollfd pf = {
			.fd = fd, .events = POLLIN | (sent < n ? POLLOUT : 0)
		};
		ssize_t k;

		cr_assert_gt(poll(&pf, 1, 60000), 0, "echo stalled at %zu",
			     back);
		if ((pf.revents & POLLOUT) && sent < n) {
			k = write(fd, data + sent, n - sent);
			if (k > 0)
				sent += (size_t)k;
			if (sent == n)
				shutdown(fd, SHUT_WR);
		}
		if (pf.revents & (POLLIN | POLLHUP)) {
			k = read(fd, echo + back, n - back);
			if (k == 0)
				break;
			if (k > 0)
				back += (size_t)k;
		}
	}
	cr_assert_eq(back, n, "echoed %zu of %zu bytes", back, n);
	cr_assert(memcmp(data, echo, n) == 0, "the bytes changed");
	close(fd);
	free(data);
	free(echo);
	r = forward_stop(&p);
	it_result_free(&r);
}

/* Nothing listens on the port in the session: the client's connection
 * ends, hutch says why, and the forward goes on. */
IT_TEST(portfwd, a_closed_port_is_reported_and_the_forward_goes_on)
{
	const char *s = it_session();
	it_proc p;
	it_result r;
	unsigned short port;
	char c;
	int fd;

	sh(s, "true");
	port = forward_start(&p, s, "0:9");
	for (int i = 0; i < 2; i++) {
		fd = dial(port);
		cr_assert_eq(read(fd, &c, 1), 0, "a closed port sent data");
		close(fd);
	}
	r = forward_stop(&p);
	cr_assert(strstr(r.err, "port 9") && strstr(r.err, "efused"),
		  "stderr: %s", r.err);
	it_result_free(&r);
}

/* A host port in use, an address that is not loopback, a session that
 * does not exist: one clear line each, nothing listens. */
IT_TEST(portfwd, bad_forwards_are_clear_errors)
{
	const char *s = it_session(), *missing;
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t al = sizeof(a);
	char spec[64];
	it_result r;
	int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	sh(s, "true");
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	cr_assert_eq(listen(fd, 1), 0);
	getsockname(fd, (struct sockaddr *)&a, &al);
	snprintf(spec, sizeof(spec), "%u:80", ntohs(a.sin_port));
	r = it_hutch("port-forward", s, spec, NULL);
	IT_ASSERT_EXIT(r, 125, "port-forward onto a port in use");
	cr_assert(strstr(r.err, "already in use"), "%s", r.err);
	it_result_free(&r);
	close(fd);

	r = it_hutch("port-forward", s, "0.0.0.0:0:80", NULL);
	IT_ASSERT_EXIT(r, 125, "port-forward 0.0.0.0");
	cr_assert(strstr(r.err, "not loopback"), "%s", r.err);
	it_result_free(&r);

	r = it_hutch("port-forward", s, "example.com:0:80", NULL);
	IT_ASSERT_EXIT(r, 125, "port-forward by name");
	cr_assert(strstr(r.err, "numeric"), "%s", r.err);
	it_result_free(&r);

	r = it_hutch("port-forward", s, "8080:0", NULL);
	IT_ASSERT_EXIT(r, 125, "port-forward to port 0");
	it_result_free(&r);

	missing = it_session();
	r = it_hutch("port-forward", missing, "0:80", NULL);
	IT_ASSERT_EXIT(r, 125, "port-forward into a missing session");
	cr_assert_eq(it_count_volumes(missing), 0,
		     "port-forward made a session");
	it_result_free(&r);
}

/* Remove this build's agent as its owner would (an exec straight through
 * the engine as uid 65533): the container then looks like one made by
 * another hutch build, whose agent does not know "connect". */
static void remove_run_agent(const char *s)
{
	char path[256], id[128], *resp = NULL;
	size_t len = 0;
	json_object *o;

	snprintf(path, sizeof(path), "/containers/hutch-%s/exec", s);
	cr_assert_eq(
		it_api_json("POST", path,
			    "{\"Cmd\":[\"sh\",\"-c\",\"rm -f "
			    "/.hutch/bin/hutch-agent-*\"],\"User\":\"65533\","
			    "\"AttachStdout\":true,\"AttachStderr\":true}",
			    &resp, &len),
		201, "exec create: %s", resp);
	o = it_json(resp, len);
	snprintf(id, sizeof(id), "%s",
		 json_object_get_string(it_json_get(o, "Id")));
	json_object_put(o);
	free(resp);
	snprintf(path, sizeof(path), "/exec/%s/start", id);
	cr_assert_eq(it_api_json("POST", path,
				 "{\"Detach\":false,\"Tty\":false}", NULL,
				 NULL),
		     200);
}

/* A session without this build's agent gets it before the forward
 * listens, and its connections are relayed. */
IT_TEST(portfwd, a_session_without_this_agent_gets_it)
{
	const char *s = it_session();
	static const char req[] = "GET /index.html HTTP/1.0\r\n\r\n";
	char got[4096] = "";
	size_t len = 0;
	ssize_t n;
	it_proc p;
	it_result r;
	unsigned short port;
	int fd;

	sh(s, "mkdir -p www && echo fresh-agent > www/index.html "
	      "&& httpd -p 127.0.0.1:8081 -h /workspace/www");
	remove_run_agent(s);
	port = forward_start(&p, s, "0:8081");
	fd = dial(port);
	cr_assert_eq(write(fd, req, sizeof(req) - 1), (ssize_t)sizeof(req) - 1);
	while ((n = read(fd, got + len, sizeof(got) - 1 - len)) > 0)
		len += (size_t)n;
	got[len] = '\0';
	close(fd);
	cr_assert(strstr(got, "fresh-agent\n"), "got: %s", got);
	r = forward_stop(&p);
	cr_assert_eq(r.err_len, 0, "stderr: %s", r.err);
	it_result_free(&r);
}
