/*
 * test_surface.c - hostile tests (see doc/threat-model.md) of what a
 * person or a program reaches a session through: standard input, another
 * user for one command, and a forwarded port
 *
 * The session's side is the attacker: a server that floods a client who
 * does not read, a command that closes its stdin while hutch's never ends,
 * a command line asking for the uid that owns hutch's agent.
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
#include <sys/stat.h>
#include <sys/socket.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "harness.h"
#include "hostile.h"

static void sh_ok(const char *s, const char *cmd)
{
	it_result r = it_hutch("sh", s, cmd, NULL);

	IT_ASSERT_EXIT(r, 0, cmd);
	it_result_free(&r);
}

/* The peak resident size of process `pid`, in KiB (VmHWM). */
static long peak_kib(pid_t pid)
{
	char path[64], line[256];
	long kib = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	cr_assert_not_null(f, "%s: %s", path, strerror(errno));
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmHWM: %ld kB", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

/* A server in the session writes without end (`yes`) to a client that
 * reads slowly and then not at all: hutch relays only what the client
 * takes, its memory stays bounded, and Ctrl-C still ends the forward
 * (a relay blocked on the client watches the cancel). */
IT_TEST(hostile_surface, a_flooding_server_cannot_grow_the_forward)
{
	const char *s = it_session();
	char buf[1 << 16], out[256] = "";
	struct sockaddr_in a = { .sin_family = AF_INET };
	size_t got = 0, len = 0;
	unsigned int port = 0;
	double until = it_now() + 60;
	it_proc p;
	it_result r;
	int fd;
	long kib;

	sh_ok(s, "nc -ll -p 9001 -e yes </dev/null >/dev/null 2>&1 &");
	it_spawn(&p, NULL,
		 (const char *const[]){ "port-forward", s, "0:9001", NULL });
	while (!strchr(out, '\n')) {
		ssize_t n;

		cr_assert(it_now() < until, "port-forward never listened");
		n = read(p.out_fd, out + len, sizeof(out) - 1 - len);
		cr_assert_gt(n, 0, "port-forward ended: %s", out);
		len += (size_t)n;
		out[len] = '\0';
	}
	cr_assert(sscanf(strstr(out, "127.0.0.1:"), "127.0.0.1:%u", &port) ==
		  1);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	a.sin_port = htons((unsigned short)port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	/* 256 MiB read, while the server writes as fast as it can. */
	while (got < (256u << 20)) {
		ssize_t n = read(fd, buf, sizeof(buf));

		cr_assert_gt(n, 0, "the relay ended after %zu bytes", got);
		got += (size_t)n;
	}
	/* Its peak over that flood, and now the client stops reading: the
	 * relay must wait for it, not buffer. */
	kib = peak_kib(p.pid);
	cr_assert_lt(kib, 64 * 1024,
		     "the forward grew to %ld KiB relaying a flood", kib);
	kill(p.pid, SIGINT);
	r = it_wait(&p);
	IT_ASSERT_EXIT(r, 0, "port-forward after SIGINT, its client stalled");
	it_result_free(&r);
	close(fd);
}

/* A command that shuts its stdin and ends does not keep hutch reading an
 * endless input. */
IT_TEST(hostile_surface, an_endless_stdin_does_not_outlive_the_command)
{
	const char *s = it_session();
	it_opts o = { 0 };
	it_result r;

	sh_ok(s, "true");
	o.in_fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
	cr_assert_geq(o.in_fd, 0);
	/* What it read is told by its exit status, which the engine keeps
	 * (Podman's attach may drop output written after a command stopped
	 * reading an input still being sent: podman#11446). */
	r = it_hutch_o(&o, "exec", "-i", s, "--", "sh", "-c",
		       "n=$(head -c 1000000 | wc -c); exec 0<&-; "
		       "[ \"$n\" = 1000000 ] && exit 5",
		       NULL);
	close(o.in_fd);
	IT_ASSERT_EXIT(r, 5, "hutch exec -i S <&/dev/zero");
	it_result_free(&r);
}

/* --user cannot name the uid that owns hutch's agent (who could replace
 * the agent every later command runs under), by number or with a group. */
IT_TEST(hostile_surface, no_command_runs_as_the_agents_owner)
{
	static const char *const users[] = { "65533", "65533:0",
					     "65533:65533" };
	const char *s = it_session();

	sh_ok(s, "true");
	for (size_t i = 0; i < sizeof(users) / sizeof(users[0]); i++) {
		it_result r = it_hutch("exec", s, "--user", users[i], "--",
				       "id", "-u", NULL);

		IT_ASSERT_EXIT(r, 125, users[i]);
		cr_assert_eq(r.out_len, 0, "ran as %s: %s", users[i], r.out);
		it_result_free(&r);
	}
}

/* A server in the session that never closes a connection: each client
 * reads its greeting and closes.  A relay whose client has gone must end
 * (or at least give back its slot), else a hostile service fills
 * --max-connections (default 64) and no later client is ever served. */
IT_TEST(hostile_surface, clients_that_left_do_not_hold_the_forwards_slots)
{
	const char *s = it_session();
	char out[256] = "", buf[16];
	struct sockaddr_in a = { .sin_family = AF_INET };
	size_t len = 0;
	unsigned int port = 0;
	double until = it_now() + 60;
	it_proc p;
	it_result r;

	sh_ok(s, "nc -ll -p 9002 -e sh -c 'echo hi; exec sleep 100000' "
		 "</dev/null >/dev/null 2>&1 &");
	it_spawn(&p, NULL,
		 (const char *const[]){ "port-forward", s, "--max-connections",
					"2", "0:9002", NULL });
	while (!strchr(out, '\n')) {
		ssize_t n;

		cr_assert(it_now() < until, "port-forward never listened");
		n = read(p.out_fd, out + len, sizeof(out) - 1 - len);
		cr_assert_gt(n, 0, "port-forward ended: %s", out);
		len += (size_t)n;
		out[len] = '\0';
	}
	cr_assert(sscanf(strstr(out, "127.0.0.1:"), "127.0.0.1:%u", &port) ==
		  1);
	a.sin_port = htons((unsigned short)port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	for (int i = 0; i < 3; i++) {
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		struct pollfd pf = { .fd = fd, .events = POLLIN };

		cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
		/* A bound only so that the failure is reported, not hung. */
		cr_assert_eq(poll(&pf, 1, 20000), 1,
			     "client %d was never served: the slots are held "
			     "by clients that left",
			     i + 1);
		cr_assert_eq(read(fd, buf, sizeof(buf)), 3);
		close(fd);
	}
	kill(p.pid, SIGINT);
	r = it_wait(&p);
	it_result_free(&r);
}

/* --input-file naming a file in a session's bind-mounted workspace, which
 * the sandbox swapped for a symlink to a host file: hutch does not follow
 * it, so the host file never reaches the session. */
IT_TEST(hostile_surface, input_file_symlink_is_not_followed)
{
	const char *s = it_session();
	char base[64], ws[128], secret[160], link[160];
	it_result r;

	snprintf(base, sizeof(base), "/tmp/hutch-inputfile-XXXXXX");
	cr_assert_not_null(mkdtemp(base));
	snprintf(ws, sizeof(ws), "%s/ws", base);
	snprintf(secret, sizeof(secret), "%s/host-secret", base);
	snprintf(link, sizeof(link), "%s/input", ws);
	cr_assert_eq(mkdir(ws, 0755), 0);
	hostile_sh("chown 1000:1000 '%s' && echo host-only-secret > '%s' && "
		   "chmod 644 '%s'",
		   ws, secret, secret);
	r = it_hutch("up", s, "--workspace", ws, NULL);
	IT_ASSERT_EXIT(r, 0, "hutch up S --workspace WS");
	it_result_free(&r);
	/* From inside: the input the caller meant is now a link out. */
	r = it_hutch("exec", s, "--", "ln", "-sf", secret, "/workspace/input",
		     NULL);
	IT_ASSERT_EXIT(r, 0, "the sandbox plants the link");
	it_result_free(&r);
	r = it_hutch("exec", "--input-file", link, s, "--", "cat", NULL);
	IT_ASSERT_EXIT(r, 125, "exec --input-file LINK");
	cr_assert(strstr(r.err, "a symbolic link (not followed"), "%s", r.err);
	cr_assert(!strstr(r.out, "host-only-secret"), "%s", r.out);
	it_result_free(&r);
	hostile_sh("rm -rf '%s'", base);
}
