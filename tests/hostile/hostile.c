/*
 * hostile.c - what the attacker's tests share (hostile.h)
 */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

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
