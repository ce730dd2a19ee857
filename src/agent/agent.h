/*
 * agent.h - hutch-agent, the static helper that runs inside every sandbox
 *
 * hutch copies this binary into each container at /.hutch/hutch-agent and
 * uses it as the container's entry point ("sleep") and as a wrapper around
 * every command it runs ("run"), so that a timed-out or cancelled command can
 * be killed together with everything it left behind ("kill").  It also
 * runs the file tools ("fs"), the one place where workspace paths are
 * resolved.
 *
 * It is linked statically and must work in any image, including ones with
 * no shell and no libc: it touches nothing in the image but /proc and
 * /dev/null (and copes without the latter), and makes no NSS calls.
 */
#ifndef HUTCH_AGENT_H
#define HUTCH_AGENT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Paths, commands, exit codes, the OOM line and the error words are the
 * protocol's: src/shared/agent_protocol.h, doc/agent-protocol.md. */
#include "agent_protocol.h"

/* main.c */
void agent_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
bool agent_tag_valid(const char *tag);

/*
 * seccomp.c: install the filter that refuses set-id bits and device nodes
 * (chmod family, creating opens, mknod) to this process and everything it
 * will start.  0, or -errno when the kernel refused it.
 */
int agent_seccomp_install(void);

/* Subcommands: argv[0] is the subcommand name; return the exit code. */
int agent_sleep(int argc, char **argv);
int agent_run(int argc, char **argv);
int agent_kill(int argc, char **argv);
int agent_fs(int argc, char **argv); /* fs.c: confined file tools */

/*
 * proctree.c: SIGSTOP then SIGKILL every descendant of @root (never @root
 * itself, pid 1 or the caller), rescanning /proc until none is left or the
 * round/time bound is hit.  Returns 0 when the subtree is empty, -1 when
 * something survived (e.g. a setuid descendant the caller may not signal).
 * When @root is the caller itself, its zombies are reaped along the way.
 * *@killed (may be NULL) gets how many SIGKILLs were sent: 0 when there
 * was nothing to kill (a process slow to die may be counted twice).
 */
int proctree_kill_descendants(pid_t root, size_t *killed);

/*
 * confine.c: called in the child between fork and exec; from then on
 * neither the child nor anything it starts can signal @agent (nor its
 * process group @agent_pgrp, nor everything at once with kill -1) or
 * ptrace any process outside its own tree.  -1 when some of that could
 * not be set up (old kernel, engine profile); the command runs anyway.
 */
int confine_command(pid_t agent, pid_t agent_pgrp);

#endif /* HUTCH_AGENT_H */
