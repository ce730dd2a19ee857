/*
 * exec_internal.h - what the library's own runs of the agent share with
 * exec.c: the file tools (fs.c), background processes (process.c) and
 * port forwarding (portfwd.c)
 */
#ifndef HUTCH_EXEC_INTERNAL_H
#define HUTCH_EXEC_INTERNAL_H

#include <stdint.h>

#include <hutch/exec.h>

#include "engine_internal.h"

/* hutch__exec_run flags. */
enum {
	/* The file tools: no secrets in the command's environment, output
	 * not redacted as it streams (the caller parses it, then redacts
	 * every string of the result). */
	HUTCH__EXEC_RAW = 1,
};

/* hutch_exec_run with flags. */
int hutch__exec_run(hutch_exec_result **out, hutch_session *s,
		    const hutch_exec_options *o, unsigned int flags,
		    hutch_error **err);

/* A run of the agent that did not end by itself (timed out, cancelled,
 * lost its container): the error that says so, starting with `what`;
 * 0 when it ended by itself. */
int hutch__exec_failure(const hutch_exec_result *res, const char *what,
			uint64_t timeout_ms, hutch_error **err);

/*
 * Inspect exec `id` until the engine says it has ended (Podman can answer
 * "exit code 0" for a moment while it still runs), for at most 10 s after
 * its output ended, or until `cancel` (may be NULL) is raised: 1 with
 * *code set, 0 when it ended without a code or the cancel came, or
 * negative (HUTCH_ETIMEOUT when it is still said to run).
 */
int hutch__exec_wait_exit(hutch_engine *e, const char *id,
			  const hutch_cancel *cancel, int *code,
			  const char *what, hutch_error **err);

#endif
