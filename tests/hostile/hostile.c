/*
 * hostile.c - what the attacker's tests share (hostile.h)
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hostile.h"

void hostile_sh(const char *fmt, ...)
{
	char cmd[4 * PATH_MAX];
	va_list ap;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	st = system(cmd);
	cr_assert(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
		  "failed: %s", cmd);
}

void hostile_install_tool(const char *name, const char *dir)
{
	hostile_sh("install -m 0755 '%s/%s' '%s/%s'", HOSTILE_TOOLS, name, dir,
		   name);
}

int hostile_race_begin(void)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/tmp/hutch-hostile-race-%d.lock",
		 (int)getppid());
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
	/* Bounded: the limit of a racing test counts this wait apart. */
	for (double t0 = it_now(); flock(fd, LOCK_EX | LOCK_NB) < 0;) {
		cr_assert_eq(errno, EWOULDBLOCK, "flock %s: %s", path,
			     strerror(errno));
		cr_assert_lt(it_now() - t0, HOSTILE_RACE_WAIT,
			     "another racing test held %s for %.0f s", path,
			     HOSTILE_RACE_WAIT);
		it_sleep(0.1);
	}
	return fd;
}

void hostile_race_end(int lock)
{
	close(lock); /* the lock goes with it */
}
