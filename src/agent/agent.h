/*
 * agent.h - hutch-agent, the static helper that runs inside every sandbox
 *
 * hutch copies this binary into each container at /.hutch/hutch-agent and
 * uses it as the container's entry point ("sleep") and as a wrapper around
 * every command it runs ("run"), so that a timed-out or cancelled command can
 * be killed together with everything it left behind ("kill").  It also
 * runs the file tools ("fs"), the one place where workspace paths are
 * resolved.  As PID 1 it serves a channel (chan.c) through which hutch
 * runs those commands without the engine's exec.
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
/* A decimal number of digits only, at most `max`: 0 with *out, or -1. */
int agent_parse_num(const char *s, unsigned long long max,
		    unsigned long long *out);
/* Whether a command line's argv[0] names an agent: HUTCH_AGENT_PATH or
 * this build's HUTCH_AGENT_BIN_DIR/hutch-agent-BUILD (any directory). */
bool agent_argv0_ok(const char *argv0);

/* What main() does with its arguments, from the owner check to the
 * command's return: also how a channel handler's fork runs "run" without
 * an execve (chan.c), with @filtered: the fork has PID 1's seccomp filter,
 * this program's, in force already. */
int agent_dispatch(int argc, char **argv, bool filtered);
/* The process's command line as /proc/PID/cmdline shows it (argv[0] to
 * the last argument's NUL), recorded by main(); in a fork, its own copy,
 * which it may overwrite to name itself. */
extern char *agent_cmdline;
extern size_t agent_cmdline_size;

/*
 * seccomp.c: install the filter that refuses set-id bits and device nodes
 * (chmod family, creating opens, mknod) to this process and everything it
 * will start.  0, or -errno when the kernel refused it.
 */
int agent_seccomp_install(void);

/*
 * chan.c: the agent's channel (doc/agent-protocol.md, "The channel").
 * PID 1 calls agent_chan_listen() once (the listening fd, or -1: no
 * channel), agent_chan_accept() when it is readable (each connection
 * from hutch goes to an idle handler, or a forked one; @sfd is PID 1's
 * signalfd, closed in the handler), agent_chan_idled() when
 * agent_chan_idle_fd() (when >= 0) is readable (handlers that finished
 * their connection), agent_chan_reaped() for every child it reaps and
 * agent_chan_stopped() for every child it sees stopped.
 */
#define AGENT_CHAN_HANDLERS_MAX 256
#define AGENT_CHAN_REQ_TIMEOUT_MS 10000
struct agent_chan_req {
	unsigned int flags;	   /* HUTCH_CHAN_F_* */
	unsigned short rows, cols; /* the terminal's size (F_TTY) */
	unsigned int argc, envc;
	char **argv, **env; /* NULL-terminated, into the request's bytes */
};
int agent_chan_listen(void);
void agent_chan_accept(int lfd, int sfd);
int agent_chan_idle_fd(void);
void agent_chan_idled(void);
void agent_chan_reaped(pid_t pid);
/* PID 1's child @pid was stopped: a handler is killed (nothing of hutch's
 * stops one). */
void agent_chan_stopped(pid_t pid);
/* Whether the peer of @fd may use the channel: outside our pid
 * namespace (pid 0) and the container's root. */
bool agent_chan_peer_ok(int fd);
/* Whether @argv0 may be run: HUTCH_AGENT_PATH or @bin_dir/hutch-agent-X
 * with no '/' nor ".." in X. */
bool agent_chan_argv0_ok(const char *argv0, const char *bin_dir);
/* Parse and check a REQ payload: 0 with *@r (free with
 * agent_chan_req_free; its strings point into @p), or -1 with *@why. */
int agent_chan_parse_req(const char *p, size_t len, const char *bin_dir,
			 struct agent_chan_req *r, const char **why);
void agent_chan_req_free(struct agent_chan_req *r);
/* A handler: serve one connection to its end, then close it.  Runs only
 * agents under @bin_dir (HUTCH_AGENT_BIN_DIR; tests pass their own). */
int agent_chan_serve(int conn, const char *bin_dir, int req_timeout_ms);
/* Grow pipe @fd to @size bytes when it is smaller: only ever grown (the
 * other end may have made it bigger itself); refused (EPERM, the user's
 * pipe memory at its soft limit), it stays as it is. */
void agent_grow_pipe(int fd, int size);

/* Subcommands: argv[0] is the subcommand name; return the exit code. */
int agent_sleep(int argc, char **argv);
int agent_run(int argc, char **argv);
int agent_kill(int argc, char **argv);
int agent_untar(int argc, char **argv); /* untar.c: sync-in's unpacking */
int agent_fs(int argc, char **argv);
/* fs.c: ".NAME.hutch-XXXXXX", a random name beside NAME (within
 * NAME_MAX) to make a file or symlink under, then rename over NAME; made
 * with O_EXCL, a collision is a retry, not a risk. */
void agent_temp_name(char *out, size_t cap,
		     const char *name);	  /* fs.c: confined file tools */
int agent_spawn(int argc, char **argv);	  /* spawn.c */
int agent_ps(int argc, char **argv);	  /* procs.c */
int agent_logs(int argc, char **argv);	  /* procs.c */
int agent_wait(int argc, char **argv);	  /* procs.c */
int agent_connect(int argc, char **argv); /* connect.c */
int agent_drain(int argc, char **argv);	  /* connect.c */
/* Read @a and @b (-1: none) to their ends, throwing the bytes away. */
void agent_drain_fds(int a, int b);

/* run.c, shared with spawn.c. */
void agent_default_signal(int sig);
int agent_plug_std_fds(void);
/* execvp() without the /bin/sh fallback: returns the errno of the failure. */
int agent_exec_search(char **argv);
/* "hutch: cannot run 'NAME': strerror(err)" on stderr, one line. */
void agent_report_exec_failure(const char *name, int err);
/* chdir(@dir); on failure "hutch: cannot use working directory 'DIR': ..."
 * on stderr and -1. */
int agent_enter_workdir(const char *dir);
/* HOME for a command whose user has none it can write (see spawn.c). */
void agent_give_home(void);
/* Milliseconds since the Unix epoch. */
unsigned long long agent_now_ms(void);

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
 * proctree.c: send @sig once to every live descendant of @root (never pid
 * 1 nor the caller), each checked against pid reuse.  The number
 * signalled, or -1 when /proc cannot be read.
 */
long proctree_signal_descendants(pid_t root, int sig);

/* proctree.c: the start time (clock ticks after boot, /proc/PID/stat
 * field 22) and parent of @pid; -1 when it is gone. */
int proctree_identity(pid_t pid, unsigned long long *start, pid_t *ppid);

/*
 * procs.c: the supervisor of background process @id, when it still runs:
 * its pid and start time, checked against /proc (start time and command
 * line "spawn --id ID").  0 found, 1 none running (the process has ended
 * or was lost), -1 no such id.
 */
int proc_find_supervisor(const char *id, pid_t *pid, unsigned long long *start);

/*
 * confine.c: called in the child between fork and exec; from then on
 * neither the child nor anything it starts can signal @agent (nor its
 * process group @agent_pgrp, nor everything at once with kill -1, nor
 * @parent when > 1: the agent's own parent, a handler of PID 1's
 * channel) or ptrace any process outside its own tree.  -1 when some of
 * that could not be set up (old kernel, engine profile); the command
 * runs anyway.
 */
int confine_command(pid_t agent, pid_t agent_pgrp, pid_t parent);

#endif /* HUTCH_AGENT_H */
