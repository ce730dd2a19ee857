/*
 * workdir.c - where a command runs: the one rule for a working directory
 *
 * The CLI, batch and the MCP server pass what the user gave; the library
 * resolves it here, once.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workdir.h"

char *hutch__workdir_resolve(const char *workdir)
{
	char *out;

	if (!workdir)
		return strdup(HUTCH__WORKSPACE_DIR);
	if (workdir[0] == '/')
		return strdup(workdir);
	if (asprintf(&out, "%s/%s", HUTCH__WORKSPACE_DIR, workdir) < 0)
		return NULL;
	return out;
}
