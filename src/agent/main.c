/*
 * main.c - hutch-agent subcommand dispatch
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent.h"

struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *args;
	const char *help;
	bool use; /* counts as a use of the session (agent_mark_used) */
};

/* "used": the use is marked by main() before any command runs. */
static int agent_used(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return HUTCH_AGENT_EXIT_OK;
}

static const struct command commands[] = {
	{ HUTCH_AGENT_CMD_SLEEP, agent_sleep, "",
	  "sleep until SIGTERM/SIGINT/SIGHUP (container entry point); "
	  "serve hutch's channel (" HUTCH_CHAN_PATH ")",
	  true },
	{ HUTCH_AGENT_CMD_RUN, agent_run,
	  "--tag TAG [--deadline-ms N] [--kill-leftovers] -- ARGV...",
	  "run ARGV, keep its orphans until it exits (kill them then with "
	  "--kill-leftovers)",
	  true },
	{ HUTCH_AGENT_CMD_KILL, agent_kill, "TAG [--signal N]",
	  "kill the 'run' agent with TAG, or the background process with "
	  "that id, and all its descendants (--signal: send N to each of "
	  "them instead)",
	  false },
	{ HUTCH_AGENT_CMD_SPAWN, agent_spawn,
	  "--id ID [--workdir DIR] -- ARGV...",
	  "start ARGV in the background, its output kept in "
	  "/.hutch/proc/ID; {\"id\",\"pid\"} on stdout",
	  true },
	{ HUTCH_AGENT_CMD_PS, agent_ps, "",
	  "list the background processes (JSON)", false },
	{ HUTCH_AGENT_CMD_LOGS, agent_logs,
	  "ID [--from N] [--tail LINES] [--follow] | ID --json [--from N] "
	  "[--max BYTES]",
	  "the output of a background process", false },
	{ HUTCH_AGENT_CMD_WAIT, agent_wait, "ID",
	  "wait until a background process ends; its ps entry (JSON)", false },
	{ HUTCH_AGENT_CMD_DRAIN, agent_drain, "",
	  "(run's own) read fds 3 and 4 to their end, throwing the bytes "
	  "away",
	  false },
	{ HUTCH_AGENT_CMD_CONNECT, agent_connect, "PORT",
	  "relay stdin and stdout to 127.0.0.1:PORT", true },
	{ HUTCH_AGENT_CMD_UNTAR, agent_untar, "[--root DIR] [--] [DEST]",
	  "unpack a tar from stdin into DEST under the workspace (made when "
	  "missing), as the session's user; one JSON object on stdout",
	  true },
	{ HUTCH_AGENT_CMD_USED, agent_used, "",
	  "count as a use of the session, and do nothing else", true },
	{ HUTCH_AGENT_CMD_FS, agent_fs,
	  "[--root DIR] read|write|edit|grep|find|ls ARGS...",
	  "file tools confined to the workspace; one JSON object on stdout",
	  true },
};

#define N_COMMANDS (sizeof(commands) / sizeof(commands[0]))

/*
 * Format the whole line first and emit it with one write(): stderr is
 * shared with the command's own output, and a line split over several
 * writes could be interleaved with it.  Also safe in a forked child.
 */
void agent_err(const char *fmt, ...)
{
	char line[512];
	size_t len = sizeof(HUTCH_AGENT_PREFIX) - 1;
	size_t room = sizeof(line) - len - 1; /* keep one byte for '\n' */
	va_list ap;
	int saved = errno;
	int n;

	memcpy(line, HUTCH_AGENT_PREFIX, len);
	va_start(ap, fmt);
	n = vsnprintf(line + len, room, fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	else if ((size_t)n >= room)
		n = (int)room - 1; /* truncated, still one line */
	len += (size_t)n;
	line[len++] = '\n';
	if (write(STDERR_FILENO, line, len) < 0) {
		/* Nowhere left to report it. */
	}
	errno = saved;
}

bool agent_tag_valid(const char *tag)
{
	size_t len = strlen(tag);

	if (len == 0 || len > HUTCH_AGENT_TAG_MAX)
		return false;
	return strspn(tag, "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
			   "abcdefghijklmnopqrstuvwxyz"
			   "0123456789_-") == len;
}

int agent_parse_num(const char *s, unsigned long long max,
		    unsigned long long *out)
{
	unsigned long long v = 0;

	if (!*s)
		return -1;
	for (; *s; s++) {
		unsigned long long d = (unsigned long long)(*s - '0');

		if (*s < '0' || *s > '9')
			return -1;
		/* Checked before the step, so that it never wraps. */
		if (d > max || v > (max - d) / 10)
			return -1;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

bool agent_argv0_ok(const char *argv0)
{
	const char *base = strrchr(argv0, '/');
	size_t n = sizeof(HUTCH_AGENT_NAME) - 1;

	base = base ? base + 1 : argv0;
	return strncmp(base, HUTCH_AGENT_NAME, n) == 0 &&
	       (base[n] == '\0' || base[n] == '-');
}

/*
 * Record that the session is in use: HUTCH_LAST_USED_PATH's mtime, which
 * "hutch gc" reads through the engine's archive API (no request is added
 * to a command for it).  The container's start counts ("sleep" is PID 1),
 * and so does every command and file tool.
 *
 * Best effort and silent: a command never fails for it, and nothing here
 * is trusted by the host beyond "used at about this time" (hutch gc
 * ignores a record from the future).  The directory is made by hutch,
 * root's and mode 1777, on the session's volume, so it is writable with a
 * read-only root filesystem and by whatever user the session runs as.
 * The first user to get here owns the file and makes it writable by all:
 * updating the time to now needs only write access, so later commands as
 * another user (root without capabilities has no CAP_FOWNER) still count.
 * An existing file is never opened with O_CREAT: in a sticky directory,
 * fs.protected_regular refuses that to anyone but its owner.
 */
static void agent_mark_used(void)
{
	int fd, saved = errno;

	if (utimensat(AT_FDCWD, HUTCH_LAST_USED_PATH, NULL,
		      AT_SYMLINK_NOFOLLOW) == 0 ||
	    errno != ENOENT)
		goto out;
	fd = open(HUTCH_LAST_USED_PATH,
		  O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC |
			  O_NONBLOCK,
		  0666);
	if (fd < 0) {
		if (errno == EEXIST) /* another command made it meanwhile */
			utimensat(AT_FDCWD, HUTCH_LAST_USED_PATH, NULL,
				  AT_SYMLINK_NOFOLLOW);
		goto out;
	}
	if (fchmod(fd, 0666) < 0) {
		/* The umask stays: only the owner's commands count. */
	}
	close(fd);
out:
	errno = saved;
}

static void usage(FILE *f)
{
	size_t i;

	fprintf(f, "usage: hutch-agent COMMAND [ARGS...]\n\n");
	for (i = 0; i < N_COMMANDS; i++)
		fprintf(f, "  %s %s\n      %s\n", commands[i].name,
			commands[i].args, commands[i].help);
}

char *agent_cmdline;
size_t agent_cmdline_size;

int main(int argc, char **argv)
{
	/* The kernel's /proc/PID/cmdline is this span: argv[0]'s first byte
	 * to the NUL of the last argument (the strings lie end to end). */
	if (argc > 0) {
		agent_cmdline = argv[0];
		agent_cmdline_size = (size_t)(argv[argc - 1] - argv[0]) +
				     strlen(argv[argc - 1]) + 1;
	}
	return agent_dispatch(argc, argv, false);
}

int agent_dispatch(int argc, char **argv, bool filtered)
{
	size_t i;

	/*
	 * Never as the agent's owner.  No session and no command may run as
	 * HUTCH_AGENT_OWNER_UID, which owns HUTCH_AGENT_DIR and this file
	 * (the library refuses it for a session and for a command's own
	 * user), but a session whose user is a name leaves the engine to
	 * look that name up in the container's /etc/passwd at every exec,
	 * and a command run as root can rewrite that file: the next exec
	 * would run as the owner, which could replace the agent for every
	 * later command (and their secrets).  Every exec starts here, so
	 * refusing here, before anything runs, is what holds, whatever the
	 * name resolves to.  Nothing can become the owner later: the
	 * session has no CAP_SETUID, and the seccomp filter refuses set-id
	 * files.
	 */
	if (getuid() == HUTCH_AGENT_OWNER_UID ||
	    geteuid() == HUTCH_AGENT_OWNER_UID) {
		agent_err(
			"refusing to run as uid %u, the owner of hutch's agent "
			"(the session's user now resolves to it: its "
			"/etc/passwd was changed)",
			HUTCH_AGENT_OWNER_UID);
		return HUTCH_AGENT_EXIT_INTERNAL;
	}
	if (argc < 2) {
		usage(stderr);
		return HUTCH_AGENT_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(stdout);
		return 0;
	}
	for (i = 0; i < N_COMMANDS; i++)
		if (!strcmp(argv[1], commands[i].name)) {
			/*
			 * Before anything else, whatever the command: PID 1,
			 * every command and every file tool, and all they
			 * start, run under the filter.  Without it nothing
			 * runs (a session whose PID 1 cannot install it does
			 * not start), as the workspace may be a host
			 * directory that a set-id file would open up.  A
			 * fork of PID 1 has PID 1's filter, this program's
			 * own, in force already (@filtered): a second copy
			 * would only slow every system call of the command.
			 */
			int rc = filtered ? 0 : agent_seccomp_install();

			if (rc < 0) {
				agent_err(
					"cannot install the seccomp filter that keeps "
					"set-id files and device nodes out of the "
					"workspace: %s",
					strerror(-rc));
				return HUTCH_AGENT_EXIT_INTERNAL;
			}
			if (commands[i].use)
				agent_mark_used();
			return commands[i].fn(argc - 1, argv + 1);
		}

	agent_err(HUTCH_AGENT_UNKNOWN_COMMAND " '%s' (try --help)", argv[1]);
	return HUTCH_AGENT_EXIT_USAGE;
}
