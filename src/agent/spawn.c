/*
 * spawn.c - the "spawn" subcommand: start a background process
 *
 * hutch-agent spawn --id ID [--workdir DIR] -- ARGV...
 *
 * The exec that runs "spawn" ends as soon as ARGV is running: "spawn"
 * forks a supervisor and exits.  The supervisor leaves the exec's session
 * (setsid), lets go of the exec's stdio, and stays until everything that
 * writes to the command's output has closed it:
 *   - a child subreaper, so all the command starts stays in its tree for
 *     "kill ID" (proctree.c) to find;
 *   - not dumpable, and the command confines itself against it (confine.c)
 *     between fork and exec, exactly as under "run": nothing the command
 *     starts can signal or ptrace it;
 *   - it reads the command's stdout and stderr (pipes) into bounded log
 *     segments in HUTCH_AGENT_PROC_DIR/ID (proc.h), so the command never
 *     sees SIGPIPE nor blocks on a full pipe;
 *   - when the main process ends it records how ("end"), then drains what
 *     the processes it left behind still write, until they close it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proc.h"

/* What the supervisor tells "spawn" through the sync pipe. */
struct started {
	int ok; /* 1: exec'd, val is its pid; 0: val is execve's errno */
	int val;
};

unsigned long long agent_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (unsigned long long)ts.tv_sec * 1000ULL +
	       (unsigned long long)ts.tv_nsec / 1000000ULL;
}

int agent_enter_workdir(const char *dir)
{
	char safe[256];
	size_t i;

	if (chdir(dir) == 0)
		return 0;
	/* One line even if the name holds control characters. */
	for (i = 0; dir[i] && i < sizeof(safe) - 1; i++)
		safe[i] = (unsigned char)dir[i] < 0x20 || dir[i] == 0x7f ?
				  '?' :
				  dir[i];
	safe[i] = '\0';
	{
		char line[512];
		int n = snprintf(line, sizeof(line),
				 HUTCH_AGENT_NO_WORKDIR "%s': %s\n", safe,
				 strerror(errno));

		if (n > (int)sizeof(line) - 1)
			n = (int)sizeof(line) - 1;
		if (n > 0 && write(STDERR_FILENO, line, (size_t)n) < 0) {
			/* Nowhere left to report it. */
		}
	}
	return -1;
}

/*
 * A user the image has no passwd entry for gets HOME=/ from the engines
 * (runc and crun alike), where it can write nothing: `git config
 * --global`, `mkdir ~/.cache`, `pip install --user` all fail.  Such a
 * command gets HUTCH_AGENT_HOME_DIR/UID instead, made here as that user
 * on first use, so it lasts for the session like a home would.  Only
 * HOME unset or "/" is replaced, and "/" only when the user cannot write
 * it: any other value is the image's or the caller's choice.  Best
 * effort: a session whose agent directory has no home directory (made
 * by an older hutch, until its agent is updated) keeps HOME as it is.
 *
 * A command of another user may have put something at that name first,
 * to read what this user keeps in its home: what is there is used only
 * when it is a directory (lstat: not a symlink) of this user's that no
 * one else may write (a directory of this user's left writable to others
 * could have been moved there by another user, with files of its own in
 * it).  Once it is, the directory's sticky bit keeps other users from
 * renaming or removing it (they would need to own it or the directory),
 * so the name stays this user's after the check.
 */
void agent_give_home(void)
{
	const char *home = getenv("HOME");
	char dir[sizeof(HUTCH_AGENT_HOME_DIR) + 16];
	struct stat st;

	if (home && *home && (strcmp(home, "/") != 0 || access("/", W_OK) == 0))
		return;
	snprintf(dir, sizeof(dir), HUTCH_AGENT_HOME_DIR "/%u",
		 (unsigned int)getuid());
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return;
	if (lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode) ||
	    st.st_uid != getuid() || (st.st_mode & 022))
		return;
	setenv("HOME", dir, 1);
}

/* Write all of @buf; -1 on an error. */
static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	ssize_t n;

	while (len) {
		n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* A new file of ours in @dir.  One the session forged there first (same
 * user: it may) is removed, never opened: O_EXCL | O_NOFOLLOW.  Readable
 * by every user of the session (fchmod: whatever the umask), so that
 * "ps", "logs" and "wait" run as the session's user see a process
 * started as another (--user); only its owner can write it. */
static int create_file(int dir, const char *name)
{
	int fd = openat(dir, name,
			O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			0644);

	if (fd < 0 && errno == EEXIST) {
		unlinkat(dir, name, 0);
		fd = openat(dir, name,
			    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
				    O_CLOEXEC,
			    0644);
	}
	if (fd >= 0)
		fchmod(fd, 0644);
	return fd;
}

/* --- pruning ended processes ----------------------------------------- */

struct ended {
	char name[HUTCH_AGENT_TAG_MAX + 1];
	unsigned long long when;
};

/* The time an entry ended ("end" file), or 0 when it has not (or we
 * cannot tell: such an entry is never pruned). */
static unsigned long long ended_at(int procfd, const char *name)
{
	char buf[128], word[16];
	unsigned long long when = 0, out;
	int dir, fd, code;
	struct stat st;
	ssize_t n;

	dir = openat(procfd, name,
		     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dir < 0)
		return 0;
	fd = openat(dir, PROC_END,
		    O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	close(dir);
	if (fd < 0)
		return 0;
	/* A FIFO or a device opened non-blocking is refused here, unread. */
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return 0;
	}
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	if (sscanf(buf, "%15s %d %llu %llu", word, &code, &when, &out) != 4)
		return 0;
	return when ? when : 1;
}

/* Remove one entry: its files (a bounded number), then the directory.
 * Anything the session put there that is not a plain file makes the
 * rmdir fail, and the entry stays: harmless. */
static void remove_entry(int procfd, const char *name)
{
	struct dirent *de;
	int dir, n = 0;
	DIR *d;

	dir = openat(procfd, name,
		     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dir < 0)
		return;
	d = fdopendir(dir);
	if (!d) {
		close(dir);
		return;
	}
	while ((de = readdir(d)) && n++ < 64) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		unlinkat(dirfd(d), de->d_name, 0);
	}
	closedir(d);
	unlinkat(procfd, name, AT_REMOVEDIR);
}

static int cmp_ended(const void *a, const void *b)
{
	const struct ended *x = a, *y = b;

	return (x->when > y->when) - (x->when < y->when);
}

/*
 * Keep at most HUTCH_AGENT_PROC_KEEP - 1 ended entries, so that with the
 * new one there are at most HUTCH_AGENT_PROC_KEEP: the oldest go.  At most
 * PRUNE_SCAN entries are looked at, so a directory the session filled
 * with junk costs a bounded amount of work.
 */
#define PRUNE_SCAN 4096
static void prune(int procfd)
{
	static struct ended list[PRUNE_SCAN];
	size_t n = 0, i, scanned = 0;
	struct dirent *de;
	int fd = dup(procfd);
	DIR *d;

	if (fd < 0)
		return;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return;
	}
	/* The dup shares the offset of every earlier walk: start over. */
	rewinddir(d);
	while ((de = readdir(d)) && scanned++ < PRUNE_SCAN) {
		if (!agent_tag_valid(de->d_name))
			continue;
		list[n].when = ended_at(procfd, de->d_name);
		if (!list[n].when)
			continue;
		/* Fits: agent_tag_valid() bounds the length. */
		memcpy(list[n].name, de->d_name, strlen(de->d_name) + 1);
		n++;
	}
	closedir(d);
	if (n < HUTCH_AGENT_PROC_KEEP)
		return;
	qsort(list, n, sizeof(list[0]), cmp_ended);
	for (i = 0; i + (HUTCH_AGENT_PROC_KEEP - 1) < n; i++)
		remove_entry(procfd, list[i].name);
}

/* --- the supervisor ---------------------------------------------------- */

struct logw {
	int dir;
	int seg;		       /* current segment, or -1 */
	unsigned long long seg_start;  /* its first payload offset */
	unsigned long long seg_bytes;  /* its size on disk */
	unsigned long long prev_start; /* the segment before, if any */
	bool have_prev;
	unsigned long long total; /* payload bytes written so far */
};

static void seg_name(char *buf, size_t cap, unsigned long long off)
{
	snprintf(buf, cap, PROC_LOG_PREFIX "%016llx", off);
}

static void log_open_segment(struct logw *l)
{
	char name[64];

	if (l->seg >= 0) {
		close(l->seg);
		/* Keep the segment just closed, drop the one before. */
		if (l->have_prev) {
			seg_name(name, sizeof(name), l->prev_start);
			unlinkat(l->dir, name, 0);
		}
		l->prev_start = l->seg_start;
		l->have_prev = true;
	}
	l->seg_start = l->total;
	l->seg_bytes = 0;
	seg_name(name, sizeof(name), l->seg_start);
	/* -1 when it cannot be made: the output is then read and dropped. */
	l->seg = create_file(l->dir, name);
}

static void log_write(struct logw *l, char stream, const char *data, size_t len)
{
	unsigned char hdr[LOG_HEADER];
	struct iovec iov[2];
	ssize_t n;

	if (!len)
		return;
	if (l->seg < 0 || l->seg_bytes + LOG_HEADER + len > LOG_SEGMENT_MAX)
		log_open_segment(l);
	l->total += len;
	if (l->seg < 0)
		return;
	hdr[0] = (unsigned char)stream;
	hdr[1] = (unsigned char)len;
	hdr[2] = (unsigned char)(len >> 8);
	hdr[3] = (unsigned char)(len >> 16);
	hdr[4] = (unsigned char)(len >> 24);
	iov[0] = (struct iovec){ hdr, sizeof(hdr) };
	iov[1] = (struct iovec){ (void *)data, len };
	/* One writev per record: readers see whole records or none, except
	 * when the file system is full, which the segment's record format
	 * shows them as a short last record (they stop there). */
	do
		n = writev(l->seg, iov, 2);
	while (n < 0 && errno == EINTR);
	if (n > 0)
		l->seg_bytes += (unsigned long long)n;
}

/* Read into the log: one read, or (@once false) what the pipe holds now
 * (FIONREAD), not what is written meanwhile, so that a leftover writing
 * without pause cannot keep the end record from being written.  0 at EOF
 * (or error), else 1. */
static int pump(struct logw *l, int fd, char stream, bool once)
{
	static char buf[LOG_RECORD_MAX];
	size_t left = sizeof(buf);
	ssize_t n;
	int avail = 0;

	if (!once)
		left = ioctl(fd, FIONREAD, &avail) == 0 && avail > 0 ?
			       (size_t)avail :
			       1;
	while (left > 0) {
		n = read(fd, buf, left < sizeof(buf) ? left : sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return 1;
		if (n <= 0)
			return 0;
		log_write(l, stream, buf, (size_t)n);
		if (once)
			return 1;
		left -= (size_t)n;
	}
	return 1;
}

static void write_end(int dir, int status, unsigned long long total)
{
	char line[128];
	int fd, n;

	if (WIFSIGNALED(status))
		n = snprintf(line, sizeof(line), "signal %d %llu %llu\n",
			     WTERMSIG(status), agent_now_ms(), total);
	else
		n = snprintf(line, sizeof(line), "exit %d %llu %llu\n",
			     WEXITSTATUS(status), agent_now_ms(), total);
	fd = create_file(dir, PROC_END_TMP);
	if (fd < 0)
		return;
	if (write_all(fd, line, (size_t)n) < 0) {
		close(fd);
		return;
	}
	close(fd);
	/* Readers see no "end" or a whole one. */
	renameat(dir, PROC_END_TMP, dir, PROC_END);
}

static int write_meta(int dir, pid_t child, char **argv)
{
	unsigned long long start = 0;
	char buf[256];
	size_t used = 0, len;
	pid_t ppid;
	int fd, n, i, rc = 0;

	proctree_identity(getpid(), &start, &ppid);
	n = snprintf(buf, sizeof(buf),
		     "pid %d\nsup %d %llu\nuid %u\nstarted %llu\n", (int)child,
		     (int)getpid(), start, (unsigned)getuid(), agent_now_ms());
	fd = create_file(dir, PROC_META);
	if (fd < 0 || write_all(fd, buf, (size_t)n) < 0)
		rc = -1;
	if (fd >= 0)
		close(fd);
	fd = create_file(dir, PROC_ARGV);
	if (fd < 0)
		return -1;
	for (i = 0; argv[i] && used < ARGV_KEEP; i++) {
		len = strlen(argv[i]) + 1;
		if (len > ARGV_KEEP - used)
			len = ARGV_KEEP - used;
		if (write_all(fd, argv[i], len) < 0)
			rc = -1;
		used += len;
	}
	close(fd);
	return rc;
}

static void set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl >= 0)
		fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

static void __attribute__((noreturn))
command_child(char **argv, int out, int err, int errpipe, pid_t sup)
{
	sigset_t none;
	int sig, e;

	/* A session of its own: a group signal meant for the command never
	 * lands on the supervisor.  Cannot fail in a fresh child. */
	setsid();
	if (dup2(out, STDOUT_FILENO) < 0 || dup2(err, STDERR_FILENO) < 0)
		_exit(HUTCH_AGENT_EXIT_INTERNAL);
	close(out);
	close(err);
	/* As under "run": from here nothing the command starts can signal
	 * the supervisor (nor its group) or ptrace out of its tree. */
	confine_command(sup, sup, 0);
	for (sig = 1; sig < NSIG; sig++)
		agent_default_signal(sig);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	e = agent_exec_search(argv);
	/* The errno for "spawn" to report; the exit code for "end". */
	if (write(errpipe, &e, sizeof(e)) < 0) {
		/* "spawn" then sees EOF and reports an internal error. */
	}
	_exit(e == ENOENT ? HUTCH_AGENT_EXIT_NOCMD : HUTCH_AGENT_EXIT_NOEXEC);
}

/* Stdio on /dev/null (or a dead pipe): the exec's own must be let go of,
 * or the exec would not end while we run. */
static void detach_stdio(void)
{
	int fd = open("/dev/null", O_RDWR), p[2];

	if (fd < 0 && pipe(p) == 0) {
		close(p[1]);
		fd = p[0];
	}
	for (int i = 0; i <= 2; i++)
		if (fd >= 0 && fd != i)
			dup2(fd, i);
		else if (fd < 0)
			close(i);
	if (fd > 2)
		close(fd);
}

static void __attribute__((noreturn)) supervise(int dir, char **argv, int sync)
{
	struct logw l = { .dir = dir, .seg = -1 };
	struct started msg = { 0, 0 };
	int out[2], err[2], ep[2], sfd, e, status;
	bool out_open = true, err_open = true, ended = false;
	struct signalfd_siginfo si;
	struct pollfd pfd[3];
	sigset_t set;
	pid_t child, pid, self;
	ssize_t n;

	setsid();
	detach_stdio();
	/* As "run" (see there): orphans stay in our tree; not dumpable. */
	prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	agent_default_signal(SIGCHLD);
	/* Every signal that could end us by default is held: only SIGKILL
	 * (and SIGSTOP, which "kill" uses) still acts.  The command cannot
	 * send either to us (confine.c); another command of the session
	 * could, as it could to a "run" agent: the entry is then "lost". */
	sigfillset(&set);
	sigprocmask(SIG_BLOCK, &set, NULL);
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0 || pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0 ||
	    pipe2(ep, O_CLOEXEC) < 0)
		_exit(HUTCH_AGENT_EXIT_INTERNAL);
	self = getpid();
	child = fork();
	if (child < 0)
		_exit(HUTCH_AGENT_EXIT_INTERNAL);
	if (child == 0) {
		close(out[0]);
		close(err[0]);
		close(ep[0]);
		close(sync);
		command_child(argv, out[1], err[1], ep[1], self);
	}
	close(out[1]);
	close(err[1]);
	close(ep[1]);
	/* EOF: execve succeeded (the pipe is close-on-exec). */
	do
		n = read(ep[0], &e, sizeof(e));
	while (n < 0 && errno == EINTR);
	close(ep[0]);
	if (n == sizeof(e)) {
		msg.val = e;
		if (write(sync, &msg, sizeof(msg)) < 0) {
			/* "spawn" reports the EOF. */
		}
		waitpid(child, NULL, 0);
		/* Nothing ran: the entry goes, the id may be used again. */
		_exit(HUTCH_AGENT_EXIT_NOEXEC);
	}
	write_meta(dir, child, argv);
	msg.ok = 1;
	msg.val = child;
	if (write(sync, &msg, sizeof(msg)) < 0) {
		/* "spawn" is gone: the command runs anyway. */
	}
	close(sync);
	set_nonblock(out[0]);
	set_nonblock(err[0]);

	while (out_open || err_open || !ended) {
		pfd[0] = (struct pollfd){ out_open ? out[0] : -1, POLLIN, 0 };
		pfd[1] = (struct pollfd){ err_open ? err[0] : -1, POLLIN, 0 };
		pfd[2] = (struct pollfd){ ended ? -1 : sfd, POLLIN, 0 };
		if (poll(pfd, 3, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		/* One read per stream per round keeps their order close to
		 * the order they were written in. */
		if (pfd[0].revents && !pump(&l, out[0], '1', true)) {
			out_open = false;
			close(out[0]);
		}
		if (pfd[1].revents && !pump(&l, err[0], '2', true)) {
			err_open = false;
			close(err[0]);
		}
		if (!ended && pfd[2].revents) {
			while (read(sfd, &si, sizeof(si)) > 0)
				;
			/* Collect the orphans we inherit too. */
			while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
				if (pid != child)
					continue;
				/* What is already in the pipes belongs to
				 * the output the end record counts. */
				if (out_open && !pump(&l, out[0], '1', false)) {
					out_open = false;
					close(out[0]);
				}
				if (err_open && !pump(&l, err[0], '2', false)) {
					err_open = false;
					close(err[0]);
				}
				write_end(dir, status, l.total);
				ended = true;
			}
		}
	}
	/* Orphans still ours that do not write any more: reap what has
	 * ended, leave the rest to init as we exit. */
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
	_exit(0);
}

/* --- the "spawn" command ---------------------------------------------- */

static void usage(void)
{
	agent_err("usage: hutch-agent spawn --id ID [--workdir DIR] -- "
		  "ARGV...");
}

int agent_spawn(int argc, char **argv)
{
	const char *id, *workdir = NULL;
	struct started msg;
	int procfd, dir, sync[2], i;
	char **cmd;
	pid_t sup;
	ssize_t n;

	/* "--id ID" first, as "run --tag": "kill" and "ps" recognise the
	 * supervisor by argv[1..3] of its command line. */
	if (argc < 4 || strcmp(argv[1], HUTCH_AGENT_OPT_ID)) {
		usage();
		return HUTCH_AGENT_EXIT_USAGE;
	}
	id = argv[2];
	if (!agent_tag_valid(id)) {
		agent_err("invalid id (want 1-%d of [A-Za-z0-9_-])",
			  HUTCH_AGENT_TAG_MAX);
		return HUTCH_AGENT_EXIT_USAGE;
	}
	for (i = 3; i < argc && strcmp(argv[i], "--"); i++) {
		if (!strcmp(argv[i], HUTCH_AGENT_OPT_WORKDIR) && i + 1 < argc) {
			workdir = argv[++i];
		} else {
			usage();
			return HUTCH_AGENT_EXIT_USAGE;
		}
	}
	if (i + 1 >= argc) {
		usage();
		return HUTCH_AGENT_EXIT_USAGE;
	}
	cmd = argv + i + 1;
	if (agent_plug_std_fds() < 0) {
		agent_err("cannot open standard fds: %m");
		return HUTCH_AGENT_EXIT_INTERNAL;
	}
	if (workdir && agent_enter_workdir(workdir) < 0)
		return HUTCH_AGENT_EXIT_NOWORKDIR;
	agent_give_home();
	/*
	 * HUTCH_AGENT_PROC_DIR comes with the agent, owned by root in a
	 * directory the session cannot write: it cannot be a symlink put
	 * there by a command, and O_NOFOLLOW says so at the line.
	 */
	procfd = open(HUTCH_AGENT_PROC_DIR,
		      O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (procfd < 0) {
		agent_err("cannot open %s: %m", HUTCH_AGENT_PROC_DIR);
		return HUTCH_AGENT_EXIT_INTERNAL;
	}
	prune(procfd);
	/* Readable by all the session's users, writable by its owner only
	 * (see create_file); the sticky HUTCH_AGENT_PROC_DIR keeps others
	 * from removing or renaming it. */
	if (mkdirat(procfd, id, 0755) < 0) {
		if (errno == EEXIST)
			agent_err("process id '%s' is already in use", id);
		else
			agent_err("cannot make %s/%s: %m", HUTCH_AGENT_PROC_DIR,
				  id);
		return HUTCH_AGENT_EXIT_FAIL;
	}
	dir = openat(procfd, id,
		     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dir >= 0)
		fchmod(dir, 0755);
	if (dir < 0 || pipe2(sync, O_CLOEXEC) < 0) {
		agent_err("cannot open %s/%s: %m", HUTCH_AGENT_PROC_DIR, id);
		return HUTCH_AGENT_EXIT_INTERNAL;
	}
	sup = fork();
	if (sup < 0) {
		agent_err("fork: %m");
		remove_entry(procfd, id);
		return HUTCH_AGENT_EXIT_INTERNAL;
	}
	if (sup == 0) {
		close(sync[0]);
		close(procfd);
		supervise(dir, cmd, sync[1]);
	}
	close(sync[1]);
	close(dir);
	do
		n = read(sync[0], &msg, sizeof(msg));
	while (n < 0 && errno == EINTR);
	if (n != sizeof(msg)) {
		agent_err("the supervisor of '%s' failed to start", id);
		remove_entry(procfd, id);
		return HUTCH_AGENT_EXIT_INTERNAL;
	}
	if (!msg.ok) {
		/* Reap it: it exits right after telling us. */
		waitpid(sup, NULL, 0);
		remove_entry(procfd, id);
		agent_report_exec_failure(cmd[0], msg.val);
		return msg.val == ENOENT ? HUTCH_AGENT_EXIT_NOCMD :
					   HUTCH_AGENT_EXIT_NOEXEC;
	}
	close(procfd);
	printf("{\"id\":\"%s\",\"pid\":%d}\n", id, msg.val);
	return fflush(stdout) == 0 ? 0 : HUTCH_AGENT_EXIT_INTERNAL;
}
