/*
 * poke.c - a hostile tool (tests/hostile/test_process.c): the calls a
 * command may make against the processes that run it and those beside it
 * which no busybox tool makes (F_SETOWN with F_SETSIG, FIOSETOWN,
 * pidfd_send_signal, i386 int $0x80, prlimit).  Static, so that it runs in
 * any image; built by make check.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>

/* poke MODE PID SIG: send SIG to PID the MODE way; one line says
 * whether the kernel took it.  Exit 0 when it did. */
static int async_fd(int rd, int wr, int sig)
{
	if (fcntl(rd, F_SETSIG, sig) < 0 ||
	    fcntl(rd, F_SETFL, fcntl(rd, F_GETFL) | O_ASYNC | O_NONBLOCK) < 0)
		return -1;
	return write(wr, "x", 1) == 1 ? 0 : -1;
}

#ifdef __x86_64__
/* Whether an i386 syscall (getpid) works at all here. */
static int i386_entry(void)
{
	int status;
	pid_t child = fork();

	if (child == 0) {
		long ret;

		__asm__ volatile("int $0x80" : "=a"(ret) : "a"(20L) : "memory");
		_exit(ret == (long)getpid() ? 0 : 1);
	}
	if (child < 0 || waitpid(child, &status, 0) != child)
		return 1; /* unknown: let the real attempt say */
	return !(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV);
}
#endif

int main(int argc, char **argv)
{
	const char *m;
	pid_t pid;
	int sig, rc = -1, p[2], fd;

	if (argc != 4)
		return 2;
	m = argv[1];
	pid = atoi(argv[2]);
	sig = atoi(argv[3]);
	errno = 0;
	if (!strcmp(m, "kill")) {
		rc = kill(pid, sig);
	} else if (!strcmp(m, "tkill")) {
		rc = (int)syscall(SYS_tkill, pid, sig);
	} else if (!strcmp(m, "tgkill")) {
		rc = (int)syscall(SYS_tgkill, pid, pid, sig);
	} else if (!strcmp(m, "sigqueue")) {
		union sigval v = { 0 };
		rc = sigqueue(pid, sig, v);
	} else if (!strcmp(m, "pidfd")) {
		fd = (int)syscall(SYS_pidfd_open, pid, 0);
		rc = fd < 0 ? -1 :
			      (int)syscall(SYS_pidfd_send_signal, fd, sig, NULL,
					   0);
	} else if (!strcmp(m, "procfd")) {
		char path[32];
		snprintf(path, sizeof(path), "/proc/%d", (int)pid);
		fd = open(path, O_RDONLY | O_DIRECTORY);
		rc = fd < 0 ? -1 :
			      (int)syscall(SYS_pidfd_send_signal, fd, sig, NULL,
					   0);
	} else if (!strcmp(m, "sigio") || !strcmp(m, "sigio-group")) {
		if (pipe(p) == 0 &&
		    fcntl(p[0], F_SETOWN, !strcmp(m, "sigio") ? pid : -pid) ==
			    0)
			rc = async_fd(p[0], p[1], sig);
	} else if (!strcmp(m, "sigio-ex")) {
		struct f_owner_ex o = { F_OWNER_PID, pid };
		if (pipe(p) == 0 && fcntl(p[0], F_SETOWN_EX, &o) == 0)
			rc = async_fd(p[0], p[1], sig);
	} else if (!strcmp(m, "fiosetown")) {
		if (socketpair(AF_UNIX, SOCK_STREAM, 0, p) == 0 &&
		    ioctl(p[0], FIOSETOWN, &pid) == 0)
			rc = async_fd(p[0], p[1], sig);
	} else if (!strcmp(m, "prlimit")) {
		struct rlimit r = { 0, 0 };
		rc = prlimit(pid, RLIMIT_CPU, &r, NULL);
	} else if (!strcmp(m, "int80")) {
#ifdef __x86_64__
		long ret;

		/* A kernel without an i386 entry (no IA32 emulation, or
		 * a hypervisor that refuses it) kills whoever tries it:
		 * tried in a child first, and then the route is closed. */
		if (!i386_entry()) {
			printf("int80: refused (no i386 syscall entry in "
			       "this kernel)\n");
			fflush(stdout);
			return 1;
		}
		__asm__ volatile("int $0x80"
				 : "=a"(ret)
				 : "a"(37L), "b"((long)pid), "c"((long)sig)
				 : "memory");
		errno = ret < 0 ? (int)-ret : 0;
		rc = ret < 0 ? -1 : 0;
#else
		errno = ENOSYS;
#endif
	} else {
		return 2;
	}
	if (rc == 0)
		printf("%s: sent\n", m);
	else
		printf("%s: refused (%s)\n", m, strerror(errno));
	fflush(stdout);
	/* SIGIO goes out at the write; a SIGKILL lands before we exit. */
	usleep(100000);
	return rc == 0 ? 0 : 1;
}
