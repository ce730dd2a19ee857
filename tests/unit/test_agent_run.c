/*
 * Unit tests: the built static agent's "run" (output through pipes, a
 * drainer for background children, --workdir, --tty) and "connect",
 * run on the host ($HUTCH_BUILDDIR/src/agent/hutch-agent).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char agent[PATH_MAX], base[256];

static void setup(void)
{
	const char *b = getenv("HUTCH_BUILDDIR");

	snprintf(agent, sizeof(agent), "%s/src/agent/hutch-agent",
		 b && *b ? b : ".");
	cr_assert_eq(access(agent, X_OK), 0,
		     "no agent at %s (set HUTCH_BUILDDIR)", agent);
	snprintf(base, sizeof(base), "/tmp/hutch-agentrun-XXXXXX");
	cr_assert_not_null(mkdtemp(base));
}

static void teardown(void)
{
	char cmd[400];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
	if (system(cmd) != 0)
		cr_log_warn("could not remove %s", base);
}

TestSuite(agent_run, .init = setup, .fini = teardown, .timeout = 60);

struct ran {
	char out[65536], err[4096];
	size_t out_len, err_len;
	int status;
};

/* Run the agent with ARGV (NULL-terminated), stdin from IN (may be NULL:
 * /dev/null), read stdout and stderr to their ends, reap it. */
static void run_agent(struct ran *r, const char *in, const char *const argv[])
{
	int po[2], pe[2], pi[2];
	pid_t pid;
	ssize_t n;

	memset(r, 0, sizeof(*r));
	cr_assert_eq(pipe(po), 0);
	cr_assert_eq(pipe(pe), 0);
	cr_assert_eq(pipe(pi), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		dup2(pi[0], 0);
		dup2(po[1], 1);
		dup2(pe[1], 2);
		/* Only 0..2: a copy of a write end left open in the agent
		 * would be inherited by the background children too. */
		close(pi[0]);
		close(pi[1]);
		close(po[0]);
		close(po[1]);
		close(pe[0]);
		close(pe[1]);
		execv(agent, (char *const *)argv);
		_exit(99);
	}
	close(pi[0]);
	close(po[1]);
	close(pe[1]);
	if (in && write(pi[1], in, strlen(in)) != (ssize_t)strlen(in))
		cr_assert_fail("writing stdin");
	close(pi[1]);
	/* stdout to its end first: the agent's output is small. */
	while ((n = read(po[0], r->out + r->out_len,
			 sizeof(r->out) - 1 - r->out_len)) > 0)
		r->out_len += (size_t)n;
	while ((n = read(pe[0], r->err + r->err_len,
			 sizeof(r->err) - 1 - r->err_len)) > 0)
		r->err_len += (size_t)n;
	close(po[0]);
	close(pe[0]);
	cr_assert_eq(waitpid(pid, &r->status, 0), pid);
}

static int exit_of(const struct ran *r)
{
	return WIFEXITED(r->status) ? WEXITSTATUS(r->status) : -1;
}

static pid_t read_pid(const char *file)
{
	char buf[32] = "";
	int fd = open(file, O_RDONLY);

	cr_assert_geq(fd, 0, "%s: %s", file, strerror(errno));
	cr_assert_gt(read(fd, buf, sizeof(buf) - 1), 0);
	close(fd);
	return (pid_t)atoi(buf);
}

/* The streams end with the main child, though a background child holds
 * them: the read to EOF above returns while it still runs. */
Test(agent_run, background_child_does_not_hold_the_output)
{
	char cmd[512], pidfile[300];
	struct ran r;
	pid_t bg;

	snprintf(pidfile, sizeof(pidfile), "%s/bg", base);
	snprintf(cmd, sizeof(cmd),
		 "sleep 60 & echo $! > %s; echo out; echo err >&2", pidfile);
	run_agent(&r, NULL,
		  (const char *const[]){ agent, "run", "--tag", "t1", "--",
					 "sh", "-c", cmd, NULL });
	cr_assert_eq(exit_of(&r), 0);
	cr_assert_str_eq(r.out, "out\n");
	cr_assert_str_eq(r.err, "err\n");
	bg = read_pid(pidfile);
	cr_assert_eq(kill(bg, 0), 0, "the background child is gone");
	kill(bg, SIGKILL);
}

/* What a background child writes after the end goes to the drainer: it
 * is not killed by SIGPIPE, and finishes. */
Test(agent_run, background_child_writes_after_the_end)
{
	char cmd[800], go[300], done[300];
	struct ran r;
	struct stat st;
	int fd, i;

	snprintf(go, sizeof(go), "%s/go", base);
	snprintf(done, sizeof(done), "%s/done", base);
	snprintf(cmd, sizeof(cmd),
		 "( while [ ! -e %s ]; do sleep 0.02; done; "
		 "i=0; while [ $i -lt 2000 ]; do echo line $i; i=$((i+1)); "
		 "done; touch %s ) & echo started",
		 go, done);
	run_agent(&r, NULL,
		  (const char *const[]){ agent, "run", "--tag", "t2", "--",
					 "sh", "-c", cmd, NULL });
	cr_assert_str_eq(r.out, "started\n");
	fd = open(go, O_WRONLY | O_CREAT, 0644);
	cr_assert_geq(fd, 0);
	close(fd);
	/* Wait for the child to finish its 2000 lines (bounded). */
	for (i = 0; i < 1000 && stat(done, &st) < 0; i++)
		usleep(20000);
	cr_assert_eq(stat(done, &st), 0,
		     "the child did not finish writing (SIGPIPE?)");
}

Test(agent_run, missing_workdir)
{
	struct ran r;

	run_agent(&r, NULL,
		  (const char *const[]){ agent, "run", "--tag", "t3",
					 "--workdir", "/no/such", "--", "echo",
					 "ran", NULL });
	cr_assert_eq(exit_of(&r), 122);
	cr_assert_eq(r.out_len, 0, "the command ran: %s", r.out);
	cr_assert_str_eq(r.err, "hutch: cannot use working directory "
				"'/no/such': No such file or directory\n");
	run_agent(&r, NULL,
		  (const char *const[]){ agent, "run", "--tag", "t3",
					 "--workdir", base, "--", "pwd",
					 NULL });
	cr_assert_eq(exit_of(&r), 0);
	cr_assert_eq(strncmp(r.out, base, strlen(base)), 0, "%s", r.out);
}

/* forkpty() by hand: glibc's asks for the terminal with TIOCGPTPEER,
 * which valgrind (contrib/test.sh runs these tests under it) does not
 * know and warns about.  The child leads a new session whose controlling
 * terminal is the new one, on its fds 0-2. */
static pid_t fork_pty(int *master)
{
	int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC), s;
	const char *name;
	pid_t pid;

	if (m < 0 || grantpt(m) < 0 || unlockpt(m) < 0 || !(name = ptsname(m)))
		return -1;
	pid = fork();
	if (pid != 0) {
		*master = m;
		return pid;
	}
	setsid();
	/* Without O_NOCTTY: a session leader with no terminal takes it. */
	s = open(name, O_RDWR);
	if (s < 0 || dup2(s, 0) < 0 || dup2(s, 1) < 0 || dup2(s, 2) < 0)
		_exit(98);
	if (s > 2)
		close(s);
	return 0;
}

/* --tty in a terminal whose session the agent leads (as runc and crun
 * make an exec with a TTY): the command is the foreground group. */
Test(agent_run, tty_makes_the_command_the_foreground_group)
{
	char out[4096];
	size_t len = 0;
	ssize_t n;
	int master = -1, status;
	long pgrp, tpgid;
	pid_t pid = fork_pty(&master);

	cr_assert_geq(pid, 0);
	if (pid == 0) {
		execl(agent, agent, "run", "--tag", "t4", "--tty", "--", "sh",
		      "-c",
		      "set -- $(cat /proc/$$/stat); echo \"G $5 $8\"; exit 4",
		      (char *)NULL);
		_exit(99);
	}
	/* EIO once the terminal's last holder is gone. */
	while (len < sizeof(out) - 1 &&
	       (n = read(master, out + len, sizeof(out) - 1 - len)) > 0)
		len += (size_t)n;
	out[len] = '\0';
	close(master);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 4, "status %d",
		  status);
	cr_assert_eq(sscanf(strstr(out, "G ") ? strstr(out, "G ") : "",
			    "G %ld %ld", &pgrp, &tpgid),
		     2, "output: %s", out);
	cr_assert_eq(pgrp, tpgid, "not the foreground group: %s", out);
}

/* The server of connect_relays_with_half_close: read to EOF (the
 * half-close), then answer.  A thread, not a forked child: a child that
 * ends without exec would have valgrind report the runner's memory. */
static void *half_close_server(void *p)
{
	int ls = *(int *)p, c = accept(ls, NULL, NULL);
	char buf[256];
	ssize_t n, got = 0;

	if (c < 0)
		return NULL;
	while ((n = read(c, buf, sizeof(buf))) > 0)
		got += n;
	n = snprintf(buf, sizeof(buf), "got %zd\n", got);
	if (write(c, buf, (size_t)n) != n) {
		/* The test sees the missing answer. */
	}
	close(c);
	return NULL;
}

Test(agent_run, connect_relays_with_half_close)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t slen = sizeof(sa);
	char port[16];
	struct ran r;
	int ls;
	pthread_t srv;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ls = socket(AF_INET, SOCK_STREAM, 0);
	cr_assert_geq(ls, 0);
	cr_assert_eq(bind(ls, (struct sockaddr *)&sa, sizeof(sa)), 0);
	cr_assert_eq(listen(ls, 1), 0);
	cr_assert_eq(getsockname(ls, (struct sockaddr *)&sa, &slen), 0);
	snprintf(port, sizeof(port), "%d", ntohs(sa.sin_port));
	cr_assert_eq(pthread_create(&srv, NULL, half_close_server, &ls), 0);
	run_agent(&r, "hello world",
		  (const char *const[]){ agent, "connect", port, NULL });
	pthread_join(srv, NULL);
	close(ls);
	cr_assert_eq(exit_of(&r), 0, "stderr: %s", r.err);
	cr_assert_str_eq(r.out, "got 11\n");

	/* Nobody listens there any more. */
	run_agent(&r, NULL,
		  (const char *const[]){ agent, "connect", port, NULL });
	cr_assert_eq(exit_of(&r), 1);
	cr_assert(strstr(r.err, "cannot connect to 127.0.0.1:"), "%s", r.err);
}
