/*
 * run.c - the "sleep" and "run" subcommands
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"

#define DEFAULT_PATH \
	"/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

/* About 31 years: keeps now + deadline far from any overflow. */
#define DEADLINE_MAX_MS 1000000000000ULL

struct run_opts {
	const char *tag;
	unsigned long long deadline_ms; /* 0: none */
	bool kill_leftovers;		/* nothing may outlive the command */
	bool tty;		   /* the exec's terminal is the command's */
	unsigned short rows, cols; /* --tty-size; 0: not given */
	const char *workdir;	   /* NULL: the exec's own */
	char **argv;
};

/* The command's stdout and stderr pipes: our read ends (-1 once
 * closed) and the write ends the child takes as its fds 1 and 2. */
struct relay {
	int rd[2];
	int wr[2];
	bool grown[2]; /* rd[i] grown (relay_grow) */
};

/*
 * An inherited SIG_IGN for SIGCHLD would make the kernel auto-reap our
 * children (no exit status for us) and an inherited SIG_IGN elsewhere would
 * leak into the command, so never trust what the exec API handed us.
 */
void agent_default_signal(int sig)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	sigemptyset(&sa.sa_mask);
	/* Fails harmlessly for SIGKILL, SIGSTOP and glibc's reserved ones. */
	sigaction(sig, &sa, NULL);
}

static void reap_all(void)
{
	pid_t pid;
	int st;

	/* Orphans of the container, and the channel's ended handlers.
	 * WUNTRACED: a stopped child is reported too (once per stop), so
	 * that a handler stopped by a process of the sandbox does not live,
	 * and count as busy, for ever (agent_chan_stopped). */
	while ((pid = waitpid(-1, &st, WNOHANG | WUNTRACED)) > 0) {
		if (WIFSTOPPED(st))
			agent_chan_stopped(pid);
		else
			agent_chan_reaped(pid);
	}
}

/*
 * Whether a signal to the container's init came from the engine, the one
 * sender allowed to end the session.  The engine's stop and kill are
 * kill(2) (or pidfd_send_signal) from outside our pid namespace: si_code
 * SI_USER, and si_pid 0, since the sender has no pid in ours.  Anything
 * else is treated as coming from inside: kill() from a process here
 * carries that process's pid, and a process cannot forge SI_USER for
 * another one (rt_sigqueueinfo refuses si_code >= 0 to anyone but
 * itself), while a signal the kernel raises for a process, such as the
 * SIGIO or F_SETSIG signal of an fd it pointed at us with F_SETOWN, has
 * an si_code of its own (POLL_IN, SI_KERNEL...).
 */
static bool from_engine(int code, pid_t pid)
{
	return code == SI_USER && pid == 0;
}

/* One signal taken from the blocked set: 1 to go on, 0 to end. */
static int on_signal(int sig, int code, pid_t pid)
{
	/*
	 * As the container's init, "kill 1" from a command must not stop
	 * the sandbox: only the engine (from outside) may.  The kernel
	 * already drops SIGKILL and SIGSTOP sent to a namespace's init from
	 * within it.
	 */
	if (sig != SIGCHLD && getpid() == 1 && !from_engine(code, pid))
		return 1;
	if (sig != SIGCHLD)
		return 0;
	/* Only as pid 1 do we have children: orphans of the container,
	 * and the channel's handlers. */
	reap_all();
	return 1;
}

/* Without the channel: wait for the signals alone. */
static int sleep_signals(const sigset_t *set)
{
	siginfo_t info;
	int sig;

	for (;;) {
		sig = sigwaitinfo(set, &info);
		if (sig < 0) {
			if (errno == EINTR) /* e.g. after SIGSTOP/SIGCONT */
				continue;
			agent_err("sigwaitinfo: %m");
			return HUTCH_AGENT_EXIT_FAIL;
		}
		if (!on_signal(sig, info.si_code, info.si_pid))
			return 0;
	}
}

/*
 * With the channel: one poll() on the signals (a signalfd of the same
 * blocked set, so nothing changes for them) and the listening socket.
 * Accepting never blocks and each connection is forked off at once
 * (chan.c): no peer can hold PID 1 here.
 */
static int sleep_serving(const sigset_t *set, int lfd)
{
	struct signalfd_siginfo si;
	struct pollfd p[3];
	int sfd = signalfd(-1, set, SFD_CLOEXEC | SFD_NONBLOCK);

	if (sfd < 0) {
		agent_err("channel: signalfd: %m (no channel)");
		close(lfd);
		return sleep_signals(set);
	}
	for (;;) {
		p[0] = (struct pollfd){ sfd, POLLIN, 0 };
		p[1] = (struct pollfd){ lfd, POLLIN, 0 };
		p[2] = (struct pollfd){ agent_chan_idle_fd(), POLLIN, 0 };
		if (poll(p, 3, -1) < 0) {
			if (errno == EINTR)
				continue;
			agent_err("poll: %m");
			return HUTCH_AGENT_EXIT_FAIL;
		}
		/* First, so that a connection that came just as a handler
		 * finished its last goes to it. */
		if (p[2].revents)
			agent_chan_idled();
		if (p[0].revents)
			while (read(sfd, &si, sizeof(si)) == sizeof(si))
				if (!on_signal((int)si.ssi_signo, si.ssi_code,
					       (pid_t)si.ssi_pid))
					return 0;
		if (p[1].revents)
			agent_chan_accept(lfd, sfd);
	}
}

int agent_sleep(int argc, char **argv)
{
	sigset_t set;
	int lfd = -1;

	if (argc != 1) {
		agent_err("usage: hutch-agent sleep");
		return HUTCH_AGENT_EXIT_USAGE;
	}
	agent_default_signal(SIGCHLD);
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGCHLD);
	/*
	 * Block and wait synchronously instead of pause() plus handlers: no
	 * window between checking a flag and going to sleep.  Blocked signals
	 * are also queued for a namespace's pid 1, where the kernel would drop
	 * SIG_DFL ones, so this works when we are the container's init too.
	 */
	if (sigprocmask(SIG_BLOCK, &set, NULL) < 0) {
		agent_err("sigprocmask: %m");
		return HUTCH_AGENT_EXIT_FAIL;
	}
	/*
	 * Commands run as the same user as we do.  Not dumpable, so they
	 * cannot ptrace us (that takes CAP_SYS_PTRACE, which they lack) nor
	 * write our /proc/1/mem.  The channel's handlers inherit it.
	 */
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	/*
	 * The channel only as the container's init leading its session
	 * (runc and crun make it so): "kill" tells the channel's handlers
	 * from the sandbox's processes by their being in session 1, where
	 * nothing but us and them can be (proctree.c).
	 */
	if (getpid() == 1 && getsid(0) == 1)
		lfd = agent_chan_listen();
	return lfd >= 0 ? sleep_serving(&set, lfd) : sleep_signals(&set);
}

/* "ROWSxCOLS", each 1..65535: 0, or -1. */
static int parse_tty_size(const char *s, unsigned short *rows,
			  unsigned short *cols)
{
	unsigned long v[2];
	char *end;

	for (int i = 0; i < 2; i++) {
		if (*s < '0' || *s > '9')
			return -1;
		errno = 0;
		v[i] = strtoul(s, &end, 10);
		if (errno || v[i] == 0 || v[i] > 65535 ||
		    *end != (i == 0 ? 'x' : '\0'))
			return -1;
		s = end + 1;
	}
	*rows = (unsigned short)v[0];
	*cols = (unsigned short)v[1];
	return 0;
}

static int parse_run_args(int argc, char **argv, struct run_opts *o)
{
	int i;

	/*
	 * "--tag TAG" must come first: "kill" matches argv[1..3] of our
	 * /proc/PID/cmdline exactly, so any other order would leave this
	 * agent unkillable by tag.
	 */
	if (argc < 3 || strcmp(argv[1], HUTCH_AGENT_OPT_TAG))
		goto usage;
	if (!agent_tag_valid(argv[2])) {
		agent_err("invalid tag (want 1-%d of [A-Za-z0-9_-])",
			  HUTCH_AGENT_TAG_MAX);
		return -1;
	}
	o->tag = argv[2];
	for (i = 3; i < argc && strcmp(argv[i], "--"); i++) {
		if (!strcmp(argv[i], HUTCH_AGENT_OPT_KILL_LEFTOVERS)) {
			o->kill_leftovers = true;
		} else if (!strcmp(argv[i], HUTCH_AGENT_OPT_TTY)) {
			o->tty = true;
		} else if (!strcmp(argv[i], HUTCH_AGENT_OPT_TTY_SIZE)) {
			if (i + 1 >= argc ||
			    parse_tty_size(argv[i + 1], &o->rows, &o->cols)) {
				agent_err("--tty-size wants ROWSxCOLS, each "
					  "1..65535");
				return -1;
			}
			i++;
		} else if (!strcmp(argv[i], HUTCH_AGENT_OPT_WORKDIR) &&
			   i + 1 < argc) {
			o->workdir = argv[++i];
		} else if (!strcmp(argv[i], HUTCH_AGENT_OPT_DEADLINE)) {
			if (i + 1 >= argc ||
			    agent_parse_num(argv[i + 1], DEADLINE_MAX_MS,
					    &o->deadline_ms)) {
				agent_err("--deadline-ms wants 0..%llu",
					  DEADLINE_MAX_MS);
				return -1;
			}
			i++;
		} else {
			goto usage;
		}
	}
	if (i >= argc || i + 1 >= argc)
		goto usage;
	o->argv = argv + i + 1;
	return 0;
usage:
	agent_err(
		"usage: hutch-agent run --tag TAG [--deadline-ms N] "
		"[--kill-leftovers] [--workdir DIR] [--tty [--tty-size RxC]] -- "
		"ARGV...");
	return -1;
}

/*
 * The exec API starts us without stdin attached, and some runtimes leave
 * the fd closed rather than on /dev/null.  A closed 0..2 would be taken by
 * the first file the command opens, which would then receive its output,
 * so plug every hole.  Done in ascending order, so open() lands on @fd.
 * Every runtime creates /dev/null, but rather than fail if it is missing,
 * use a pipe with its other end closed: reads see EOF, and nothing from
 * the image is needed.
 */
static int plug_fd(int fd)
{
	int p[2], nfd;

	if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
		return 0;
	/* No O_CLOEXEC: the command is meant to inherit it. */
	nfd = open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
	if (nfd < 0) {
		if (pipe(p) < 0)
			return -1;
		nfd = fd == 0 ? p[0] : p[1];
		close(fd == 0 ? p[1] : p[0]);
	}
	if (nfd != fd) {
		if (dup2(nfd, fd) < 0) {
			close(nfd);
			return -1;
		}
		close(nfd);
	}
	return 0;
}

int agent_plug_std_fds(void)
{
	int fd;

	for (fd = 0; fd <= 2; fd++)
		if (plug_fd(fd) < 0)
			return -1;
	return 0;
}

/*
 * execvp() by hand: glibc's falls back to /bin/sh on ENOEXEC, and the image
 * may not have a shell at all.  Which errors end the search follows
 * execvp: a missing or inaccessible candidate moves on to the next
 * directory, anything else means we found the file and it cannot run.
 */
int agent_exec_search(char **argv)
{
	const char *name = argv[0], *path, *p, *end;
	size_t nlen = strlen(name), dlen;
	bool eacces = false;
	char buf[PATH_MAX];

	if (!*name)
		return ENOENT;
	if (strchr(name, '/')) {
		execve(name, argv, environ);
		return errno;
	}
	if (nlen + 2 > sizeof(buf))
		return ENAMETOOLONG;
	path = getenv("PATH");
	if (!path)
		path = DEFAULT_PATH;
	for (p = path;; p = end + 1) {
		end = strchrnul(p, ':');
		dlen = (size_t)(end - p);
		if (dlen + nlen + 2 <= sizeof(buf)) {
			/* An empty element means the current directory. */
			memcpy(buf, p, dlen);
			if (dlen)
				buf[dlen++] = '/';
			memcpy(buf + dlen, name, nlen + 1);
			execve(buf, argv, environ);
			switch (errno) {
			case EACCES:
				eacces = true;
				break;
			case ENOENT:
			case ENOTDIR:
			case ESTALE:
			case ENODEV:
			case ETIMEDOUT:
			case ENAMETOOLONG:
				break;
			default:
				return errno;
			}
		}
		if (!*end)
			break;
	}
	return eacces ? EACCES : ENOENT;
}

/* One line even if argv[0] holds control characters. */
void agent_report_exec_failure(const char *name, int err)
{
	char safe[256], line[512];
	size_t i;
	int n;

	for (i = 0; name[i] && i < sizeof(safe) - 1; i++)
		safe[i] = (unsigned char)name[i] < 0x20 || name[i] == 0x7f ?
				  '?' :
				  name[i];
	safe[i] = '\0';
	n = snprintf(line, sizeof(line), HUTCH_AGENT_CANNOT_RUN "%s': %s\n",
		     safe, strerror(err));
	if (n > (int)sizeof(line) - 1)
		n = (int)sizeof(line) - 1;
	if (n > 0 && write(STDERR_FILENO, line, (size_t)n) < 0) {
		/* Nowhere left to report it. */
	}
}

/*
 * With --tty the exec's terminal is the command's: the engine made the
 * agent the leader of a session whose controlling terminal it is (runc
 * and crun: setsid and TIOCSCTTY for an exec with a TTY), so the command
 * cannot have a session of its own (a new session has no terminal, and
 * the terminal cannot be a second session's).  It gets a process group of
 * its own in the agent's session instead, made the terminal's foreground
 * group: job control, ^C and ^Z reach it and its jobs, never the agent.
 * The parent does the same two calls (the usual race: whichever comes
 * first).  SIGTTOU is held (blocked) here: tcsetpgrp from a background
 * group would otherwise stop us.
 *
 * Without a terminal of the agent's session (an engine that did not make
 * one): a session of its own and the terminal, if any, as its own.
 */
static void take_terminal(void)
{
	pid_t self = getpid();

	if (tcgetsid(STDIN_FILENO) == getsid(0)) {
		setpgid(0, 0);
		tcsetpgrp(STDIN_FILENO, self);
		return;
	}
	setsid();
	ioctl(STDIN_FILENO, TIOCSCTTY, 0);
}

static void __attribute__((noreturn))
child_exec(char **argv, pid_t agent, pid_t agent_pgrp, pid_t parent, bool tty,
	   const struct relay *rl)
{
	sigset_t none;
	int sig, err;

	if (tty) {
		take_terminal();
	} else {
		/*
		 * A session (and so process group) of its own: the signals we
		 * forward reach the command and the helpers it keeps in its
		 * group as a unit, and a terminal's or a user's group signal
		 * meant for the command can never land on the agent.  Cannot
		 * fail: a fresh child of ours is not a group leader.
		 */
		setsid();
		/* Output through the agent's pipes (see relay_output). */
		if (dup2(rl->wr[0], STDOUT_FILENO) < 0 ||
		    dup2(rl->wr[1], STDERR_FILENO) < 0)
			_exit(HUTCH_AGENT_EXIT_INTERNAL);
	}
	/*
	 * From here on nothing the command starts can signal us: we stay
	 * alive, a subreaper, for as long as the command runs, so all it
	 * starts stays in our tree for the deadline and "kill" to find.
	 * Failure (old kernel) is not fatal: the command runs as before.
	 * Nor our parent: started through PID 1's channel, that is the
	 * handler (chan.c), and "kill" finds us by it (proctree.c); killed,
	 * it would leave us to PID 1, out of reach of a timeout.  (Started
	 * by the engine's exec, our parent has no pid here: 0.)
	 */
	confine_command(agent, agent_pgrp, parent);
	for (sig = 1; sig < NSIG; sig++)
		agent_default_signal(sig);
	/*
	 * Unblock last: a signal forwarded before setsid() went to this pid
	 * (see forward()) and is still pending; it now takes its default
	 * action, before the command ever runs.
	 */
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);

	err = agent_exec_search(argv);
	agent_report_exec_failure(argv[0], err);
	_exit(err == ENOENT ? HUTCH_AGENT_EXIT_NOCMD : HUTCH_AGENT_EXIT_NOEXEC);
}

/*
 * vfork, not fork: the child shares our memory until its execve, so no
 * page table is copied (on a virtual machine that copy is most of a
 * command's start).  What makes it safe: child_exec() never returns
 * (execve or _exit); it writes only its own stack frames, errno and the
 * seccomp program confine.c builds in a static buffer we never read; it
 * calls no malloc and no FILE stream (snprintf to the stack, write(2));
 * and no handler of ours can run in it: every signal is held from here
 * until it has put each disposition back to the default.  Its
 * dispositions, mask and fd table are its own (no CLONE_SIGHAND or
 * CLONE_FILES).  We are suspended until it has exec'd or exited, which
 * the command's own processes could stretch (a lease on the file it
 * execs, say), but not past hutch's timeout, whose kill by tag ends the
 * child.  With a terminal, fork: there the child's calls (the terminal's
 * process group, an exec failure written to it) can block on a terminal
 * another process of the session holds.  Not inlined, so that no
 * variable of the caller lives across the vfork.
 */
static __attribute__((noinline)) pid_t spawn(char **argv, pid_t agent,
					     pid_t agent_pgrp, pid_t parent,
					     bool tty, const struct relay *rl)
{
	sigset_t held, before;
	pid_t pid;

	sigfillset(&held);
	sigprocmask(SIG_BLOCK, &held, &before);
	pid = tty ? fork() : vfork();
	if (pid == 0)
		child_exec(argv, agent, agent_pgrp, parent, tty, rl);
	sigprocmask(SIG_SETMASK, &before, NULL);
	return pid;
}

static void forward(pid_t child, int sig)
{
	/*
	 * Until the child has called setsid() its group does not exist; then
	 * signal the child itself.  Its mask, inherited from us, keeps the
	 * signal pending until it has reset its dispositions.
	 */
	if (kill(-child, sig) < 0 && errno == ESRCH)
		kill(child, sig);
}

static int exit_code(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return HUTCH_AGENT_EXIT_INTERNAL;
}

/* Reap every zombie we have; the main child's exit code, or -1. */
static int reap(pid_t child)
{
	int status, code = -1;
	pid_t pid;

	/*
	 * As a subreaper we inherit the command's orphans: collect them all,
	 * not just the child, or they would pile up as zombies while we live.
	 */
	while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
		if (pid == child)
			code = exit_code(status);
	return code;
}

static void deadline_from_now(unsigned long long ms, struct timespec *ts)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec += (time_t)(ms / 1000);
	ts->tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

/* Milliseconds to @deadline for poll(): -1 none, 0 passed. */
static int poll_timeout(const struct timespec *deadline)
{
	struct timespec now;
	long long ms;

	if (!deadline)
		return -1;
	clock_gettime(CLOCK_MONOTONIC, &now);
	ms = (long long)(deadline->tv_sec - now.tv_sec) * 1000 +
	     (deadline->tv_nsec - now.tv_nsec) / 1000000;
	if (ms <= 0)
		return 0;
	/* Round up: waking a millisecond early would spin. */
	return ms > 1000000 ? 1000000 : (int)ms + 1;
}

static bool passed(const struct timespec *deadline)
{
	return deadline && poll_timeout(deadline) == 0;
}

/*
 * The main child of a command given secrets is gone: end whatever it left
 * behind, which as our descendants still have the secrets in their
 * environment, and say so (stderr, one line) if there was anything.
 */
static void kill_leftovers(void)
{
	static const char line[] = "hutch: the command was given secrets: the "
				   "processes it left running were stopped\n";
	size_t killed = 0;

	if (proctree_kill_descendants(getpid(), &killed) < 0)
		agent_err("not all it left running could be stopped");
	if (killed && write(STDERR_FILENO, line, sizeof(line) - 1) < 0) {
		/* Nowhere left to report it. */
	}
}

/* --- relaying the command's output ------------------------------------ */

/*
 * The command's stdout and stderr are pipes to us, not the exec's own
 * streams, which we copy them to.  Why: the exec ends (for the engine and
 * so for hutch) only once every holder of its streams has closed them, and
 * a background process the command started ('server &') would hold them
 * for as long as it runs.  With the pipes in between, we decide when the
 * exec's output ends: when the main child has ended and what is already
 * in the pipes is copied (leave_drainer for the rest).
 */
#define RELAY_BUF 65536
#define RELAY_PIPE 262144

static char relay_buf[RELAY_BUF];

/* Whether splice() may copy stream i: until it refuses the exec's stream
 * (a terminal, a file opened to append, an older kernel's socket). */
static bool relay_spliced[2] = { true, true };

static void relay_close(struct relay *rl, int i)
{
	close(rl->rd[i]);
	rl->rd[i] = -1;
}

/* A pipe that gave a whole default pipe's worth (64 KiB) in one call is
 * grown to RELAY_PIPE, once: heavy output then costs fewer calls and
 * wake-ups, and a quiet command's pipes keep their default size (they
 * count against the user's pipe memory, which every session shares). */
static void relay_grow(struct relay *rl, int i, size_t moved)
{
	if (moved < RELAY_BUF || rl->grown[i] || rl->rd[i] < 0)
		return;
	rl->grown[i] = true;
	agent_grow_pipe(rl->rd[i], RELAY_PIPE);
}

/* Copy from pipe @i to our fd 1 or 2: one read, or with @all what the
 * pipe holds now (FIONREAD), not what is written meanwhile: a background
 * process writing without pause must not keep us here.  A pipe at EOF is
 * closed; so is one whose copy cannot be written any more (the exec's
 * stream is gone): the command then sees EPIPE as it would have without
 * us. */
static void relay_pump(struct relay *rl, int i, bool all)
{
	size_t left = RELAY_PIPE, want;
	ssize_t n, w;
	size_t off;
	int avail = 0;

	if (all && rl->rd[i] >= 0)
		/* 0 (or unknown): one read still tells EOF from empty. */
		left = ioctl(rl->rd[i], FIONREAD, &avail) == 0 && avail > 0 ?
			       (size_t)avail :
			       1;
	while (rl->rd[i] >= 0 && left > 0) {
		want = left < sizeof(relay_buf) ? left : sizeof(relay_buf);
		if (relay_spliced[i]) {
			/* Pipe to pipe: the pages move, no copy through us,
			 * one call instead of two. */
			n = splice(rl->rd[i], NULL, i + 1, NULL,
				   left < RELAY_PIPE ? left : RELAY_PIPE,
				   SPLICE_F_MOVE);
			if (n > 0) {
				relay_grow(rl, i, (size_t)n);
				if (!all)
					return;
				left -= (size_t)n;
				continue;
			}
			if (n == 0) {
				relay_close(rl, i);
				return;
			}
			if (errno == EINTR)
				continue;
			if (errno == EPIPE) {
				/* The exec's stream is gone. */
				relay_close(rl, i);
				return;
			}
			/*
			 * EAGAIN: our pipe empty, or the exec's one full (a
			 * non-blocking pipe makes the whole splice so, and
			 * the full output is reported before our EOF).  The
			 * read below tells which: EAGAIN when empty, 0 at
			 * EOF, else bytes whose write waits as before;
			 * never poll() spinning on a pipe that stays
			 * readable.  Anything else (EINVAL: our fd i + 1
			 * takes no splice, a file opened to append, a
			 * terminal): copy from now on.
			 */
			if (errno != EAGAIN)
				relay_spliced[i] = false;
		}
		n = read(rl->rd[i], relay_buf, want);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0) {
			relay_close(rl, i);
			return;
		}
		for (off = 0; off < (size_t)n; off += (size_t)w) {
			w = write(i + 1, relay_buf + off, (size_t)n - off);
			if (w < 0 && errno == EINTR) {
				w = 0;
				continue;
			}
			if (w <= 0) {
				relay_close(rl, i);
				return;
			}
		}
		relay_grow(rl, i, (size_t)n);
		if (!all)
			return;
		left -= (size_t)n;
	}
}

/*
 * The main child has ended and its output is copied, but processes it
 * left behind still hold the pipes.  We must exit (the exec ends with
 * us), and they must not get SIGPIPE, nor block on a full pipe, for
 * writing after that.  So a drainer is left behind: a child of ours that
 * lets go of the exec's streams and reads the pipes until every writer
 * has closed them, throwing the bytes away.  It is forked only in that
 * case (a command that leaves nothing running costs nothing), stays in
 * the tree it serves (re-parented to init with it when we exit), and is
 * a copy of us: not dumpable, under the agent's seccomp filter.  It holds
 * no signal we forward: it ends when the pipes do.
 */
static void leave_drainer(struct relay *rl)
{
	pid_t pid;
	int fd, i, hi[2];

	if (rl->rd[0] < 0 && rl->rd[1] < 0)
		return;
	pid = fork();
	if (pid != 0) {
		/* Ours are closed either way; without a drainer (fork
		 * failed) the leftovers get EPIPE, as before relaying. */
		for (i = 0; i < 2; i++)
			if (rl->rd[i] >= 0)
				relay_close(rl, i);
		return;
	}
	/*
	 * Re-executed as "hutch-agent drain" with the pipes on fds 3 and 4:
	 * as a copy of us it would show our command line, the command's
	 * included, and be taken for the command (ps, pgrep) or for a "run"
	 * agent.  Through high fds first, so that neither lands on the
	 * other; a closed pipe becomes /dev/null (EOF at once).
	 */
	fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	for (i = 0; i < 2; i++)
		hi[i] = rl->rd[i] >= 0 ? fcntl(rl->rd[i], F_DUPFD_CLOEXEC, 10) :
					 fcntl(fd, F_DUPFD_CLOEXEC, 10);
	for (i = 0; i <= 2; i++)
		if (fd >= 0)
			dup2(fd, i);
		else
			close(i);
	if (hi[0] >= 0 && hi[1] >= 0 && dup2(hi[0], 3) == 3 &&
	    dup2(hi[1], 4) == 4) {
		/* An empty environment: the command's (its secrets
		 * included) must not live on in the drainer. */
		static char *const no_env[] = { NULL };

		execle("/proc/self/exe", HUTCH_AGENT_NAME,
		       HUTCH_AGENT_CMD_DRAIN, (char *)NULL, no_env);
	}
	/* No /proc/self/exe: drain here, under our own name. */
	agent_drain_fds(hi[0], hi[1]);
	_exit(0);
}

/* What the main child has left in the pipes, then the drainer. */
static void relay_finish(struct relay *rl)
{
	relay_pump(rl, 0, true);
	relay_pump(rl, 1, true);
	leave_drainer(rl);
}

/*
 * Wait for the main child, copying its output and forwarding signals
 * (read from @sfd, a signalfd of the blocked set) to it.  The exit code,
 * HUTCH_AGENT_EXIT_DEADLINE once @deadline has passed.
 */
static int supervise(pid_t child, const struct run_opts *o, int sfd,
		     struct relay *rl, const struct timespec *deadline)
{
	struct signalfd_siginfo si;
	struct pollfd p[3];
	int code, n;

	for (;;) {
		/*
		 * Return as soon as the main child is gone, without waiting for
		 * background descendants: they re-parent to the container's
		 * init when we exit, so servers started with '&' keep running.
		 * Unless the command was given secrets: then nothing it
		 * started outlives it (README, "Secrets").
		 */
		code = reap(child);
		if (code >= 0) {
			/* Copy what it wrote before it ended first: the
			 * secrets line comes after its output. */
			relay_pump(rl, 0, true);
			relay_pump(rl, 1, true);
			if (o->kill_leftovers)
				kill_leftovers();
			relay_finish(rl);
			return code;
		}
		if (passed(o->deadline_ms ? deadline : NULL)) {
			/*
			 * Backstop for a hutch that went away and so will never
			 * run "kill".  Our zombies stay unreaped meanwhile; the
			 * tree walk skips them and init inherits them.
			 */
			proctree_kill_descendants(getpid(), NULL);
			relay_finish(rl);
			return HUTCH_AGENT_EXIT_DEADLINE;
		}
		p[0] = (struct pollfd){ sfd, POLLIN, 0 };
		p[1] = (struct pollfd){ rl->rd[0], POLLIN, 0 };
		p[2] = (struct pollfd){ rl->rd[1], POLLIN, 0 };
		n = poll(p, 3, poll_timeout(o->deadline_ms ? deadline : NULL));
		if (n < 0 && errno != EINTR) {
			agent_err("waiting for the command: %m");
			proctree_kill_descendants(getpid(), NULL);
			return HUTCH_AGENT_EXIT_INTERNAL;
		}
		if (n <= 0)
			continue;
		/* One read a stream a round: their order stays close to the
		 * order they were written in. */
		if (p[1].revents)
			relay_pump(rl, 0, false);
		if (p[2].revents)
			relay_pump(rl, 1, false);
		if (p[0].revents)
			while (read(sfd, &si, sizeof(si)) == sizeof(si))
				if (si.ssi_signo != SIGCHLD)
					forward(child, (int)si.ssi_signo);
	}
}

/* One "KEY N" line of a small cgroup file, or with no key the number it
 * holds ("max": -1); -1 when it cannot be read. */
static long long cgroup_value(const char *path, const char *key)
{
	char buf[4096], *p;
	size_t klen = key ? strlen(key) : 0;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	if (!key)
		return strncmp(buf, "max", 3) == 0 ? -1 :
						     strtoll(buf, NULL, 10);
	for (p = buf; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (strncmp(p, key, klen) == 0 && p[klen] == ' ')
			return strtoll(p + klen + 1, NULL, 10);
	return -1;
}

/*
 * How many times the kernel's OOM killer has acted in this container's
 * memory cgroup: cgroup v2 memory.events, or v1 memory.oom_control (which
 * has the count since Linux 4.13).  Both are readable by any user.
 */
static long long oom_kills(void)
{
	long long n = cgroup_value("/sys/fs/cgroup/memory.events", "oom_kill");

	return n >= 0 ? n :
			cgroup_value("/sys/fs/cgroup/memory/memory.oom_control",
				     "oom_kill");
}

static void report_oom(void)
{
	long long limit = cgroup_value("/sys/fs/cgroup/memory.max", NULL);
	char line[256];
	int n;

	if (limit < 0)
		limit = cgroup_value(
			"/sys/fs/cgroup/memory/memory.limit_in_bytes", NULL);
	if (limit > 0 && limit < (1LL << 50))
		n = snprintf(line, sizeof(line),
			     HUTCH_AGENT_OOM_LINE " (memory limit %lld MiB)\n",
			     limit >> 20);
	else
		n = snprintf(line, sizeof(line), HUTCH_AGENT_OOM_LINE "\n");
	if (n > 0 && write(STDERR_FILENO, line, (size_t)n) < 0) {
		/* Nowhere left to report it. */
	}
}

/* Pipes for the command's output; the read ends ours, non-blocking. */
static int relay_open(struct relay *rl)
{
	int p[2], i;

	rl->rd[0] = rl->rd[1] = rl->wr[0] = rl->wr[1] = -1;
	for (i = 0; i < 2; i++) {
		if (pipe2(p, O_CLOEXEC) < 0)
			return -1;
		rl->rd[i] = p[0];
		rl->wr[i] = p[1];
		fcntl(p[0], F_SETFL, O_NONBLOCK);
	}
	return 0;
}

int agent_run(int argc, char **argv)
{
	struct run_opts o = { 0 };
	struct timespec deadline = { 0 };
	struct relay rl = { { -1, -1 }, { -1, -1 }, { false, false } };
	sigset_t set;
	pid_t child, self, pgrp, parent;
	long long ooms;
	int code, sfd;

	if (parse_run_args(argc, argv, &o) < 0)
		return HUTCH_AGENT_EXIT_USAGE;
	if (agent_plug_std_fds() < 0) {
		agent_err("cannot open standard fds: %m");
		return HUTCH_AGENT_EXIT_INTERNAL;
	}
	/* Ours, so the command inherits it; nothing runs when it fails. */
	if (o.workdir && agent_enter_workdir(o.workdir) < 0)
		return HUTCH_AGENT_EXIT_NOWORKDIR;
	agent_give_home();
	/*
	 * Subreaper before fork: from then on anything the command detaches
	 * (double fork, setsid, nohup) re-parents to us rather than to the
	 * container's init, so it stays in our subtree where "kill TAG" and
	 * the deadline can find it for as long as we live.
	 */
	if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0) {
		agent_err("PR_SET_CHILD_SUBREAPER: %m");
		return HUTCH_AGENT_EXIT_INTERNAL;
	}
	/*
	 * Not dumpable: the command, as the same user, could otherwise
	 * ptrace us or write our memory through /proc/PID/mem and so end us
	 * without a signal (confine.c covers the signals), or read our
	 * environment, secrets included.  Both then need CAP_SYS_PTRACE.
	 */
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	agent_default_signal(SIGCHLD);
	/* A copy to an exec stream that is gone is an error, not our death
	 * (the child puts every signal back to its default). */
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGQUIT);
	/*
	 * Block before fork so that neither a quick child exit nor an early
	 * SIGTERM can slip in before we start waiting: both stay pending.
	 */
	if (sigprocmask(SIG_BLOCK, &set, NULL) < 0) {
		agent_err("sigprocmask: %m");
		return HUTCH_AGENT_EXIT_INTERNAL;
	}
	if (o.tty) {
		/* Held (not part of the forwarded set): tcsetpgrp and our
		 * own lines from what is then a background group. */
		sigset_t tt;

		/* The size hutch's terminal had when it started the exec:
		 * the engine's first resize may come after the command has
		 * asked (Docker's API 1.41 makes the terminal 0x0 until
		 * then).  A resize from the engine later still wins. */
		if (o.rows && o.cols) {
			struct winsize ws = { .ws_row = o.rows,
					      .ws_col = o.cols };

			ioctl(STDIN_FILENO, TIOCSWINSZ, &ws);
		}
		sigemptyset(&tt);
		sigaddset(&tt, SIGTTOU);
		sigaddset(&tt, SIGTTIN);
		sigprocmask(SIG_BLOCK, &tt, NULL);
	}
	sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0 || (!o.tty && relay_open(&rl) < 0)) {
		agent_err("cannot set up the command's output: %m");
		return HUTCH_AGENT_EXIT_INTERNAL;
	}
	if (o.deadline_ms)
		deadline_from_now(o.deadline_ms, &deadline);

	ooms = oom_kills();
	self = getpid();
	pgrp = getpgrp();
	parent = getppid();
	child = spawn(o.argv, self, pgrp, parent, o.tty, &rl);
	if (child < 0) {
		agent_err("cannot start the command: %m");
		return HUTCH_AGENT_EXIT_INTERNAL;
	}
	if (o.tty && tcgetsid(STDIN_FILENO) == getsid(0)) {
		/* The other half of take_terminal(). */
		setpgid(child, child);
		tcsetpgrp(STDIN_FILENO, child);
	}
	if (!o.tty) {
		close(rl.wr[0]);
		close(rl.wr[1]);
	}
	code = supervise(child, &o, sfd, &rl, &deadline);
	/* The count is the container's: a kill while this command ran may
	 * have hit a command running beside it, which the line says. */
	if (ooms >= 0 && oom_kills() > ooms)
		report_oom();
	return code;
}
