/*
 * proctree.c - find and kill process subtrees through /proc; "kill"
 *
 * Nothing here trusts a pid for longer than it must: processes exit and pids
 * get reused while we walk /proc, so every signal is sent only after
 * checking that the pid still names the process we scanned (same start
 * time), through a pidfd where the kernel has them.  ENOENT and ESRCH from
 * vanished processes are the normal case, not errors.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"

/* Tracked per scan; a bigger tree is finished off in later rounds. */
#define MAX_PROCS 65536
/* comm is at most 64 bytes; the 22 fields we need fit with room to spare. */
#define STAT_MAX 1024
/* Enough for argv[0] up to PATH_MAX plus "run\0--tag\0TAG\0". */
#define CMDLINE_MAX (PATH_MAX + 128)

#define KILL_ROUNDS 200
#define KILL_PAUSE_NS 10000000L /* 10 ms */
#define KILL_TIME_MS 5000

struct proc {
	pid_t pid;
	pid_t ppid;
	pid_t pgid;
	pid_t sid;
	unsigned long long start; /* starttime: identifies the process */
	bool live;		  /* not a zombie (yet) */
	bool mark;		  /* a descendant of the root */
};

/*
 * Static rather than malloc()ed: the deadline path runs in whatever memory
 * the command has left us (perhaps none), and untouched .bss costs nothing.
 */
static struct proc procs[MAX_PROCS];
static unsigned int queue[MAX_PROCS];
static size_t nprocs;

static bool have_pidfd = true;

/* Read at most @cap - 1 bytes of /proc/@pid/@what, NUL-terminated. */
static ssize_t read_proc(pid_t pid, const char *what, char *buf, size_t cap)
{
	char path[64];
	size_t total = 0;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, what);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	while (total < cap - 1) {
		n = read(fd, buf + total, cap - 1 - total);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			close(fd);
			return -1; /* ESRCH: it exited meanwhile */
		}
		if (n == 0)
			break;
		total += (size_t)n;
	}
	close(fd);
	buf[total] = '\0';
	return (ssize_t)total;
}

/*
 * Parse /proc/PID/stat.  comm (field 2) may hold spaces and parentheses,
 * so the fields start after the LAST ')'.  We want 3 (state), 4 (ppid),
 * 5 (pgrp), 6 (session) and 22 (starttime).
 */
static int parse_stat(const char *buf, struct proc *p)
{
	const char *s = strrchr(buf, ')');
	int field;

	if (!s || s[1] != ' ' || !s[2])
		return -1;
	/* Z: zombie, X: dead.  Neither can be signalled nor fork again. */
	p->live = s[2] != 'Z' && s[2] != 'X';
	s += 3;
	for (field = 4; field <= 22; field++) {
		char *end;
		long long v;

		while (*s == ' ')
			s++;
		v = strtoll(s, &end, 10);
		if (end == s)
			return -1;
		if (field == 4)
			p->ppid = (pid_t)v;
		else if (field == 5)
			p->pgid = (pid_t)v;
		else if (field == 6)
			p->sid = (pid_t)v;
		else if (field == 22)
			p->start = (unsigned long long)v;
		s = end;
	}
	return 0;
}

static int read_stat(pid_t pid, struct proc *p)
{
	char buf[STAT_MAX];

	if (read_proc(pid, "stat", buf, sizeof(buf)) < 0)
		return -1;
	memset(p, 0, sizeof(*p));
	p->pid = pid;
	return parse_stat(buf, p);
}

static pid_t parse_pid(const char *name)
{
	long v = 0;

	if (!*name || strlen(name) > 10)
		return 0;
	for (; *name; name++) {
		if (*name < '0' || *name > '9')
			return 0;
		v = v * 10 + (*name - '0');
	}
	return v > INT_MAX ? 0 : (pid_t)v;
}

/* Call @fn for each /proc/PID entry; stops early when @fn returns < 0. */
static int for_each_pid(int (*fn)(pid_t pid, void *arg), void *arg)
{
	struct dirent *de;
	DIR *d;
	pid_t pid;

	d = opendir("/proc");
	if (!d) {
		agent_err("cannot open /proc: %m");
		return -1;
	}
	while ((de = readdir(d))) {
		pid = parse_pid(de->d_name);
		if (pid > 0 && fn(pid, arg) < 0)
			break;
	}
	closedir(d);
	return 0;
}

static int scan_one(pid_t pid, void *arg)
{
	if (nprocs >= MAX_PROCS)
		return -1;
	if (read_stat(pid, &procs[nprocs]) == 0)
		nprocs++;
	return 0;
}

static int cmp_ppid(const void *a, const void *b)
{
	const struct proc *x = a, *y = b;

	return (x->ppid > y->ppid) - (x->ppid < y->ppid);
}

/* First index whose ppid is >= @ppid; procs[] is sorted by ppid. */
static size_t first_child(pid_t ppid)
{
	size_t lo = 0, hi = nprocs, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (procs[mid].ppid < ppid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * Mark everything below @root, breadth first.  Sorting by ppid keeps this
 * O(n log n) even for a chain thousands deep; the mark check also guards
 * against cycles a racy snapshot with a reused pid could show.
 */
static void mark_descendants(pid_t root)
{
	size_t head = 0, tail = 0, i;
	pid_t parent = root;

	qsort(procs, nprocs, sizeof(procs[0]), cmp_ppid);
	for (;;) {
		for (i = first_child(parent);
		     i < nprocs && procs[i].ppid == parent; i++) {
			if (procs[i].mark || procs[i].pid == root)
				continue;
			procs[i].mark = true;
			queue[tail++] = (unsigned int)i;
		}
		if (head == tail)
			break;
		parent = procs[queue[head++]].pid;
	}
}

static int pidfd_open_(pid_t pid)
{
#ifdef SYS_pidfd_open
	return (int)syscall(SYS_pidfd_open, pid, 0);
#else
	errno = ENOSYS;
	return -1;
#endif
}

static int pidfd_signal_(int fd, int sig)
{
#ifdef SYS_pidfd_send_signal
	return (int)syscall(SYS_pidfd_send_signal, fd, sig, NULL, 0);
#else
	errno = ENOSYS;
	return -1;
#endif
}

/*
 * Send @sig to @p only if its pid still names the process we scanned: it
 * may have been reaped and the pid handed to a stranger since.  A pidfd
 * pins the process before the start-time check, making it exact; without
 * pidfds (old kernel, or a seccomp profile that predates them and answers
 * ENOSYS or EPERM) the check narrows the window to microseconds.
 */
static int signal_proc(const struct proc *p, int sig)
{
	struct proc now;
	int fd = -1, ret, err;

	/* Never pid 1 (the container dies with it) nor ourselves. */
	if (p->pid <= 1 || p->pid == getpid()) {
		errno = EPERM;
		return -1;
	}
	if (have_pidfd) {
		fd = pidfd_open_(p->pid);
		if (fd < 0 && errno == ESRCH)
			return -1;
		if (fd < 0 && (errno == ENOSYS || errno == EPERM))
			have_pidfd = false;
	}
	if (read_stat(p->pid, &now) < 0 || now.start != p->start) {
		errno = ESRCH;
		ret = -1;
	} else if (fd >= 0) {
		ret = pidfd_signal_(fd, sig);
		/* Filtered (as under a "run" agent's confinement, confine.c):
		 * the checked kill() then. */
		if (ret < 0 && errno == ENOSYS) {
			have_pidfd = false;
			ret = kill(p->pid, sig);
		}
	} else {
		ret = kill(p->pid, sig);
	}
	err = errno;
	if (fd >= 0)
		close(fd);
	errno = err;
	return ret;
}

/*
 * Signal, with one kill(), the whole process group that @p leads - but
 * only where that cannot reach outside the tree.  Every descendant is in
 * the root's session or in one that a descendant created with setsid(), and
 * a session can only be entered by being forked from a member, so a session
 * other than the root's holds nothing but descendants (orphans included:
 * the root is a subreaper and still alive), and so does any group in it.
 * Signalling the verified leader first proves the group id still is that
 * group: it cannot be recycled while its leader, even as a zombie, exists.
 */
static void signal_group(const struct proc *p, pid_t root_sid, int sig)
{
	if (p->pgid != p->pid || p->sid == root_sid || p->sid <= 0)
		return;
	if (signal_proc(p, sig) == 0)
		kill(-p->pid, sig);
}

struct tally {
	size_t live;   /* live descendants found */
	size_t denied; /* of which we may not signal (EPERM) */
	size_t sent;   /* of which were signalled */
};

static void signal_marked(int sig, pid_t root_sid, struct tally *t)
{
	size_t i;

	/*
	 * Whole groups first: a CPU-bound fork bomb leaves us a sliver of the
	 * CPU, and one kill() per group freezes thousands at a time.
	 */
	for (i = 0; i < nprocs; i++)
		if (procs[i].mark)
			signal_group(&procs[i], root_sid, sig);

	memset(t, 0, sizeof(*t));
	for (i = 0; i < nprocs; i++) {
		if (!procs[i].mark || !procs[i].live)
			continue;
		t->live++;
		if (signal_proc(&procs[i], sig) == 0)
			t->sent++;
		else if (errno == EPERM)
			t->denied++;
	}
}

/*
 * Before the first (maybe very slow) scan, freeze the groups led by the
 * root's direct children: the main child's group holds the bulk of almost
 * any runaway tree.  /proc/PID/task/PID/children needs CONFIG_PROC_CHILDREN
 * and is only a hint (hence the ppid check; it may also be cut short by
 * our buffer); without it we go straight to the scan.
 */
static void freeze_child_groups(pid_t root, pid_t root_sid)
{
	char what[48], buf[4096], *s, *end;
	struct proc p;
	long v;

	snprintf(what, sizeof(what), "task/%d/children", (int)root);
	if (read_proc(root, what, buf, sizeof(buf)) <= 0)
		return;
	for (s = buf;; s = end) {
		v = strtol(s, &end, 10);
		if (end == s)
			break;
		if (v > 1 && v <= INT_MAX && read_stat((pid_t)v, &p) == 0 &&
		    p.ppid == root)
			signal_group(&p, root_sid, SIGSTOP);
	}
}

static long elapsed_ms(const struct timespec *since)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (long)(now.tv_sec - since->tv_sec) * 1000 +
	       (now.tv_nsec - since->tv_nsec) / 1000000;
}

static void reap_own_children(pid_t root)
{
	/*
	 * Our own tree (the deadline): what we killed are, or through the
	 * subreaper became, our children.  Reap them so /proc shrinks; the
	 * start-time check covers any pid reused since.
	 */
	if (root == getpid())
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
}

int proctree_kill_descendants(pid_t root, size_t *killed)
{
	static const struct timespec pause_ts = { 0, KILL_PAUSE_NS };
	struct timespec start;
	struct proc r;
	struct tally t;
	pid_t root_sid;
	size_t dummy;
	int round;

	if (!killed)
		killed = &dummy;
	*killed = 0;
	clock_gettime(CLOCK_MONOTONIC, &start);
	/* Gone: its orphans have left the tree, nothing is ours to kill. */
	if (read_stat(root, &r) < 0)
		return 0;
	/*
	 * A session led from outside our pid namespace reads as 0, for the
	 * root and its descendants alike, and signal_group() refuses it.
	 */
	root_sid = r.sid;
	freeze_child_groups(root, root_sid);

	for (round = 0; round < KILL_ROUNDS; round++) {
		/*
		 * Rescan at once after the first round (most victims are
		 * gone by then); afterwards give dying processes a moment.
		 */
		if (round > 1)
			nanosleep(&pause_ts, NULL);
		if (round > 0 && elapsed_ms(&start) > KILL_TIME_MS)
			break;
		reap_own_children(root);
		nprocs = 0;
		if (for_each_pid(scan_one, NULL) < 0)
			return -1;
		mark_descendants(root);
		/*
		 * Freeze the whole tree before killing any of it: otherwise a
		 * fork bomb refills the tree as fast as we empty it, and a
		 * parent killed first lets its children re-parent out of our
		 * sight.  Stopped processes cannot fork; whatever was forked
		 * between the scan and the stop shows up in the next round.
		 */
		signal_marked(SIGSTOP, root_sid, &t);
		if (t.live == 0)
			return 0;
		signal_marked(SIGKILL, root_sid, &t);
		/* A process still dying at the next scan is counted again:
		 * callers only tell none from some. */
		*killed += t.sent;
		if (t.denied == t.live) {
			/* e.g. a setuid child of a non-root agent. */
			agent_err("%zu descendant(s) of %d cannot be killed",
				  t.live, (int)root);
			return -1;
		}
	}
	agent_err("gave up killing the descendants of %d after %d rounds",
		  (int)root, round);
	return -1;
}

int proctree_identity(pid_t pid, unsigned long long *start, pid_t *ppid)
{
	struct proc p;

	if (read_stat(pid, &p) < 0)
		return -1;
	*start = p.start;
	*ppid = p.ppid;
	return 0;
}

long proctree_signal_descendants(pid_t root, int sig)
{
	struct proc r;
	struct tally t;

	if (read_stat(root, &r) < 0)
		return 0;
	nprocs = 0;
	if (for_each_pid(scan_one, NULL) < 0)
		return -1;
	mark_descendants(root);
	/* One signal each, groups not used: a process that handles the
	 * signal must get it once, not once per group it leads. */
	memset(&t, 0, sizeof(t));
	for (size_t i = 0; i < nprocs; i++)
		if (procs[i].mark && procs[i].live &&
		    signal_proc(&procs[i], sig) == 0)
			t.sent++;
	return (long)t.sent;
}

/* --- the "kill" subcommand ------------------------------------------- */

struct find {
	const char *tag;
	struct proc agent;
	bool found;
};

/* argv[0] names an agent (agent_argv0_ok) and argv[1..3] are exactly
 * run --tag TAG. */
static bool is_agent(const char *buf, size_t len, const char *tag)
{
	const char *want[] = { HUTCH_AGENT_CMD_RUN, HUTCH_AGENT_OPT_TAG, tag };
	const char *p = buf, *end = buf + len;
	size_t alen, wlen, i;

	alen = strnlen(p, len);
	if (alen == len || !agent_argv0_ok(p))
		return false;
	p += alen + 1;
	for (i = 0; i < 3; i++) {
		wlen = strlen(want[i]) + 1; /* with the NUL */
		if ((size_t)(end - p) < wlen || memcmp(p, want[i], wlen))
			return false;
		p += wlen;
	}
	return true;
}

/*
 * A handler of PID 1's channel: a child of PID 1 in session 1.  PID 1
 * serves the channel only when it leads session 1 (run.c), its only
 * children in that session are its handlers, and the processes a
 * handler starts take a session of their own before they execve.
 * Nothing else can ever join session 1 (setsid makes a new session, and
 * setpgid moves only within one's own), so no process of the sandbox,
 * orphans re-parented to PID 1 included, passes.  Read after the
 * agent's own stat: a handler that ended meanwhile and whose pid was
 * reused is, if it passes, another handler.
 */
static bool is_chan_handler(pid_t pid)
{
	struct proc p;

	return pid > 1 && read_stat(pid, &p) == 0 && p.live && p.ppid == 1 &&
	       p.sid == 1;
}

static int find_one(pid_t pid, void *arg)
{
	static char buf[CMDLINE_MAX];
	struct find *f = arg;
	ssize_t len;

	if (pid == getpid())
		return 0;
	len = read_proc(pid, "cmdline", buf, sizeof(buf));
	if (len <= 0 || !is_agent(buf, (size_t)len, f->tag))
		return 0;
	if (read_stat(pid, &f->agent) < 0 || !f->agent.live)
		return 0;
	/*
	 * Started by the engine's exec, from outside our pid namespace, so
	 * its parent has no pid here, or by the channel (chan.c), so its
	 * parent is one of PID 1's handlers.  Nothing a command starts can
	 * have either: a decoy with the same command line (the tag is in
	 * every agent's /proc/PID/cmdline) and a lower pid would otherwise
	 * be found, and killed, instead of the agent.
	 */
	if (f->agent.ppid != 0 && !is_chan_handler(f->agent.ppid))
		return 0;
	/*
	 * Stop at the first match: tags are unique, and /proc lists pids in
	 * ascending order, so the agent comes before the (maybe thousands
	 * of) descendants it forked, which we need not wade through while a
	 * fork bomb starves us of CPU.
	 */
	f->found = true;
	return -1;
}

static int kill_agent(const struct proc *agent)
{
	int ret;

	/*
	 * Stop the agent first.  While it runs it would reap the children we
	 * kill, and when it saw the main child die it would exit, handing the
	 * rest of the tree (subreaper orphans included) to the container's
	 * init, out of our sight.  Stopped, it holds the tree together: the
	 * orphans of everything we kill keep re-parenting to it.
	 */
	if (signal_proc(agent, SIGSTOP) < 0)
		return errno == ESRCH ? 0 : -1; /* finished by itself */
	ret = proctree_kill_descendants(agent->pid, NULL);
	/* Last, so it cannot exit before its tree is gone. */
	if (signal_proc(agent, SIGKILL) < 0 && errno != ESRCH) {
		agent_err("cannot kill agent %d: %m", (int)agent->pid);
		ret = -1;
	}
	return ret;
}

/*
 * A background process ("spawn"): its supervisor, found through its
 * entry (procs.c checks the pid against its start time and command
 * line).  The entry is the session's to forge, so at worst a forged one
 * points "kill ID" at another process of the session: one the session's
 * commands could signal anyway, and never pid 1 nor this process
 * (signal_proc refuses both).
 */
static int kill_spawned(const char *id, int sig)
{
	unsigned long long start;
	struct proc sup;
	pid_t pid;
	int rc = proc_find_supervisor(id, &pid, &start);

	if (rc < 0) {
		agent_err("no command or background process '%s'", id);
		return HUTCH_AGENT_EXIT_NOTAG;
	}
	if (rc > 0)
		return 0; /* ended, nothing left running under it */
	memset(&sup, 0, sizeof(sup));
	sup.pid = pid;
	sup.start = start;
	if (sig != SIGKILL)
		return proctree_signal_descendants(pid, sig) < 0 ?
			       HUTCH_AGENT_EXIT_FAIL :
			       0;
	/* Stopped, the supervisor holds the tree together while it is
	 * killed (see kill_agent); continued, it records how its command
	 * ended ("killed", signal 9) and exits once the output is closed. */
	if (signal_proc(&sup, SIGSTOP) < 0)
		return errno == ESRCH ? 0 : HUTCH_AGENT_EXIT_FAIL;
	rc = proctree_kill_descendants(pid, NULL);
	signal_proc(&sup, SIGCONT);
	return rc < 0 ? HUTCH_AGENT_EXIT_FAIL : 0;
}

static int parse_signal(const char *s, int *sig)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < 1 || v >= NSIG)
		return -1;
	*sig = (int)v;
	return 0;
}

int agent_kill(int argc, char **argv)
{
	struct find f = { 0 };
	int sig = SIGKILL;

	if (argc == 4 && !strcmp(argv[2], HUTCH_AGENT_OPT_SIGNAL)) {
		if (parse_signal(argv[3], &sig) < 0) {
			agent_err("--signal wants 1..%d", NSIG - 1);
			return HUTCH_AGENT_EXIT_USAGE;
		}
	} else if (argc != 2) {
		agent_err("usage: hutch-agent kill TAG [--signal N]");
		return HUTCH_AGENT_EXIT_USAGE;
	}
	if (!agent_tag_valid(argv[1])) {
		agent_err("invalid tag (want 1-%d of [A-Za-z0-9_-])",
			  HUTCH_AGENT_TAG_MAX);
		return HUTCH_AGENT_EXIT_USAGE;
	}
	/*
	 * Outrun a CPU-bound tree if we may.  Containers rarely grant
	 * CAP_SYS_NICE, so failure is expected and harmless.
	 */
	setpriority(PRIO_PROCESS, 0, -20);

	f.tag = argv[1];
	if (for_each_pid(find_one, &f) < 0)
		return HUTCH_AGENT_EXIT_FAIL;
	if (!f.found)
		return kill_spawned(argv[1], sig);
	if (sig != SIGKILL)
		return proctree_signal_descendants(f.agent.pid, sig) < 0 ?
			       HUTCH_AGENT_EXIT_FAIL :
			       0;
	return kill_agent(&f.agent) < 0 ? HUTCH_AGENT_EXIT_FAIL : 0;
}
