/*
 * edit-racer.c - a hostile tool (tests/hostile/test_races.c), as whatever
 * runs in a session could build one.  File tools run as the session's
 * user, so any command of the session may watch and signal them.
 *  - "hold FILE": take an exclusive flock on FILE, say "locked PID", hold
 *    it until killed;
 *  - "freeze TOOL SIZE GO watch|step": say "armed"; find a process of the
 *    file tool TOOL that has read SIZE bytes (the file it edits) and
 *    SIGSTOP it: with "watch" the first one seen (many run at once), with
 *    "step" the only one, stopped and looked at again and again until it
 *    has read them; say "frozen PID" (0 when it got past), SIGCONT it once
 *    GO exists.
 * Static, so that it runs in any image; built by make check.
 */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

static int slurp(int pid, const char *what, char *buf, int cap)
{
	char path[64];
	int fd, n;

	snprintf(path, sizeof(path), "/proc/%d/%s", pid, what);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	n = (int)read(fd, buf, cap - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = 0;
	return n;
}

/* argv[1] is "fs" and argv[2] is `tool`: the file tool itself. */
static int is_tool(int pid, const char *tool)
{
	char buf[512];
	int n = slurp(pid, "cmdline", buf, sizeof(buf)), a1, a2;

	if (n <= 0)
		return 0;
	a1 = (int)strlen(buf) + 1;
	if (a1 >= n || strcmp(buf + a1, "fs"))
		return 0;
	a2 = a1 + 3;
	return a2 < n && !strcmp(buf + a2, tool);
}

/* Bytes it has read so far. */
static long long rchar(int pid)
{
	char buf[512], *p;

	if (slurp(pid, "io", buf, sizeof(buf)) <= 0 ||
	    !(p = strstr(buf, "rchar: ")))
		return -1;
	return atoll(p + 7);
}

static int stopped(int pid)
{
	char buf[512], *p;

	if (slurp(pid, "stat", buf, sizeof(buf)) <= 0 ||
	    !(p = strrchr(buf, ')')))
		return -1;
	return p[2] == 'T' || p[2] == 't';
}

/* The first `tool` process that has read at least `size` bytes. */
static int find(const char *tool, long long size)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	int pid, found = 0;

	while (d && !found && (e = readdir(d))) {
		pid = atoi(e->d_name);
		if (pid > 0 && pid != getpid() && is_tool(pid, tool) &&
		    rchar(pid) >= size)
			found = pid;
	}
	if (d)
		closedir(d);
	return found;
}

int main(int argc, char **argv)
{
	time_t end = time(NULL) + 10;
	long long size;
	int pid = 0, st;

	if (argc == 3 && !strcmp(argv[1], "hold")) {
		int fd = open(argv[2], O_RDONLY);

		if (fd < 0 || flock(fd, LOCK_EX) < 0)
			return 1;
		printf("locked %d\n", (int)getpid());
		fflush(stdout);
		for (;;)
			pause();
	}
	if (argc != 6 || strcmp(argv[1], "freeze"))
		return 2;
	size = atoll(argv[3]);
	printf("armed\n");
	fflush(stdout);
	if (!strcmp(argv[5], "watch")) {
		/* Many candidates: stop the first one seen past its read. */
		while (!(pid = find(argv[2], size)) && time(NULL) < end)
			;
		if (pid && kill(pid, SIGSTOP) < 0)
			pid = 0;
	} else {
		/* One: stop and look, again and again, until it has read. */
		while (!(pid = find(argv[2], 0)) && time(NULL) < end)
			;
		while (pid) {
			if (kill(pid, SIGSTOP) < 0) {
				pid = 0;
				break;
			}
			while ((st = stopped(pid)) == 0)
				;
			if (st < 0)
				pid = 0;
			if (st < 0 || rchar(pid) >= size)
				break;
			kill(pid, SIGCONT);
		}
	}
	/* 0: it got past us; the round is then a plain race. */
	printf("frozen %d\n", pid);
	fflush(stdout);
	while (access(argv[4], F_OK) != 0 && time(NULL) < end + 60)
		usleep(10000);
	if (pid)
		kill(pid, SIGCONT);
	unlink(argv[4]);
	return 0;
}
