/*
 * probe.c - a hostile tool (tests/hostile/test_setuid.c): "probe OP
 * ARGS...", the raw syscalls that ask the kernel for a set-id file or a
 * device node; says one line "OP: ok" (exit 0) or "OP: strerror" (exit 1).
 * Static, so that it runs in any image; built by make check.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __x86_64__
static long int80(long nr, long a, long b, long c);

/* Whether an i386 syscall (getpid) works at all here. */
static int i386_entry(void)
{
	int status;
	pid_t child = fork();

	if (child == 0)
		_exit(int80(20, 0, 0, 0) == (long)getpid() ? 0 : 1);
	if (child < 0 || waitpid(child, &status, 0) != child)
		return 1; /* unknown: let the real attempt say */
	return !(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV);
}
#endif

static int done(const char *op, long rc)
{
	if (rc < 0) {
		printf("%s: %s\n", op, strerror(errno));
		return 1;
	}
	printf("%s: ok\n", op);
	return 0;
}
#ifdef __x86_64__
static long int80(long nr, long a, long b, long c)
{
	long r;
	__asm__ volatile("int $0x80"
			 : "=a"(r)
			 : "a"(nr), "b"(a), "c"(b), "d"(c)
			 : "memory", "r8", "r9", "r10", "r11");
	if (r < 0 && r > -4096) {
		errno = (int)-r;
		return -1;
	}
	return r;
}
#endif
static int find(const char *whole, const char *tail)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	int found = 0;
	while (d && !found && (e = readdir(d))) {
		char path[64], buf[4096];
		int fd, pid = atoi(e->d_name);
		ssize_t n;
		if (pid <= 0 || pid == getpid())
			continue;
		snprintf(path, sizeof(path), "/proc/%d/cmdline", pid);
		fd = open(path, O_RDONLY);
		if (fd < 0)
			continue;
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n <= 1)
			continue;
		/* A run agent the channel forked is named in PID 1's
		 * room: its command line ends in NULs. */
		while (n > 1 && !buf[n - 2])
			n--;
		buf[--n] = 0;
		for (ssize_t i = 0; i < n; i++)
			if (!buf[i])
				buf[i] = ' ';
		size_t l = strlen(buf), lt = strlen(tail);
		if (whole ? !strcmp(buf, whole) :
			    l > lt && buf[l - lt - 1] == ' ' &&
				    !strcmp(buf + l - lt, tail))
			found = pid;
	}
	if (d)
		closedir(d);
	return found;
}
int main(int argc, char **argv)
{
	const char *op = argc > 2 ? argv[1] : "", *p = argc > 2 ? argv[2] : "";
	if (!strcmp(op, "open"))
		return done(op, open(p, O_CREAT | O_EXCL | O_WRONLY, 04755));
	if (!strcmp(op, "open-sgid"))
		return done(op, openat(AT_FDCWD, p, O_CREAT | O_EXCL | O_RDWR,
				       02755));
	if (!strcmp(op, "tmpfile") && argc > 3) {
		char fdp[64];
		int fd = open(p, O_TMPFILE | O_WRONLY, 04755);
		if (fd < 0)
			return done(op, -1);
		snprintf(fdp, sizeof(fdp), "/proc/self/fd/%d", fd);
		return done(op, linkat(AT_FDCWD, fdp, AT_FDCWD, argv[3],
				       AT_SYMLINK_FOLLOW));
	}
	if (!strcmp(op, "mknod"))
		return done(op, mknod(p, S_IFREG | 04755, 0));
	if (!strcmp(op, "openat2")) {
		struct {
			unsigned long long flags, mode, resolve;
		} how = { O_CREAT | O_WRONLY, 04755, 0 };
		return done(op, syscall(437, AT_FDCWD, p, &how, sizeof(how)));
	}
#ifdef __x86_64__
	if (!strcmp(op, "chmod32")) {
		char *low;

		/* A kernel without an i386 entry kills whoever tries one
		 * (SIGSEGV): tried in a child first; then the route does
		 * not exist, which the caller is told apart. */
		if (!i386_entry()) {
			printf("%s: no i386 syscall entry in this kernel\n",
			       op);
			return 3;
		}
		low = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
		if (low == MAP_FAILED)
			return done(op, -1);
		snprintf(low, 4096, "%s", p);
		return done(op, int80(15, (long)low, 04755, 0));
	}
#endif
	if (!strcmp(op, "ptrace")) {
		char whole[64];
		int sleeper = 0, agent = 0, rc;
		snprintf(whole, sizeof(whole), "sleep %s", p);
		for (int i = 0; i < 300 && !(sleeper && agent); i++) {
			sleeper = find(whole, NULL);
			agent = find(NULL, whole);
			if (!(sleeper && agent))
				usleep(100000);
		}
		if (!sleeper || !agent) {
			printf("ptrace: no agent/sleep %s\n", p);
			return 2;
		}
		rc = done("agent", ptrace(PTRACE_SEIZE, agent, 0, 0));
		int own = fork();
		if (own == 0) {
			pause();
			_exit(0);
		}
		done("own", ptrace(PTRACE_SEIZE, own, 0, 0));
		kill(own, SIGKILL);
		kill(sleeper, SIGKILL);
		return rc;
	}
	printf("usage: probe OP PATH\n");
	return 2;
}
