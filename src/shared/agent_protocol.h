/*
 * agent_protocol.h - the contract between libhutch and hutch-agent
 *
 * Both sides compile against this one header: the library when it builds
 * an agent command line or reads what the agent said, the agent when it
 * parses one or answers.  doc/agent-protocol.md describes the protocol in
 * prose (commands, output, versioning); what a change here means for a
 * container that still runs an older agent is written there too.
 *
 * Only macros: the agent is built without the library's headers, and
 * HUTCH_AGENT_ERRORS() names the library's HUTCH_E* codes without the
 * agent ever expanding them.
 */
#ifndef HUTCH_SHARED_AGENT_PROTOCOL_H
#define HUTCH_SHARED_AGENT_PROTOCOL_H

/* --- where the agent lives ------------------------------------------------ */

/* The directory the library installs the agent into (a volume of its
 * own, see src/lib/agent_blob.c) and the agent itself. */
#define HUTCH_AGENT_DIR "/.hutch"
#define HUTCH_AGENT_NAME "hutch-agent"
#define HUTCH_AGENT_PATH HUTCH_AGENT_DIR "/" HUTCH_AGENT_NAME
/* Every exec runs the agent from here, under a name that carries its build
 * (HUTCH_AGENT_RUN_PATH in src/lib/agent_blob.h): HUTCH_AGENT_BIN_DIR/
 * hutch-agent-BUILD.  The agent's own checks of a command line ("kill",
 * "ps") accept both names. */
#define HUTCH_AGENT_BIN_DIR HUTCH_AGENT_DIR "/bin"

/* The reserved uid that owns the agent's directory and file in every
 * session: neither a session nor a command may run as it, for the owner
 * of the agent's directory could replace the agent (src/lib/agent_blob.c). */
#define HUTCH_AGENT_OWNER_UID 65533u

/* The session's last-used record: the agent sets the mtime of this file
 * (src/agent/main.c) and hutch gc reads it (src/lib/gc.c).  The directory
 * HUTCH_USE_DIR (relative to HUTCH_AGENT_DIR) comes with the agent. */
#define HUTCH_USE_DIR "use"
#define HUTCH_LAST_USED_FILE "last-used"
#define HUTCH_LAST_USED_PATH \
	HUTCH_AGENT_DIR "/" HUTCH_USE_DIR "/" HUTCH_LAST_USED_FILE

/* Background processes ("spawn"): one directory per process id under
 * HUTCH_AGENT_PROC_DIR, which comes with the agent (root's, mode 01777,
 * as /tmp).  See doc/agent-protocol.md, "Background processes". */
#define HUTCH_PROC_DIR "proc"
#define HUTCH_AGENT_PROC_DIR HUTCH_AGENT_DIR "/" HUTCH_PROC_DIR

/* Homes for users the image has no passwd entry for: the engines give
 * them HOME=/, where they can write nothing, and the agent gives each uid
 * HUTCH_AGENT_HOME_DIR/UID instead (src/agent/spawn.c, agent_give_home).
 * The directory comes with the agent: root's, mode 01777, as /tmp; it is
 * on the system volume, so it is there on a read-only root too and stays
 * when the container is made again. */
#define HUTCH_HOME_DIR "home"
#define HUTCH_AGENT_HOME_DIR HUTCH_AGENT_DIR "/" HUTCH_HOME_DIR

/* --- the agent's channel (the fast path) ------------------------------------
 *
 * PID 1 ("sleep") serves a unix socket at HUTCH_CHAN_PATH, which lies on
 * the session's system volume: hutch on the engine's host reaches it
 * through the volume's mount point, and runs commands through it without
 * the engine's exec (doc/agent-protocol.md, "The channel"; the choice in
 * doc/internals.md).  HUTCH_CHAN_DIR comes with the agent: root's, mode
 * 01777, as HUTCH_USE_DIR.
 *
 * Frames, both ways: an 8-byte head {type, 0, 0, 0, length as a 32-bit
 * big-endian number}, then `length` bytes.  Output frames are Docker's
 * multiplexed stream frames (type 1 stdout, 2 stderr), so the library reads
 * them with the same demultiplexer as an engine's exec stream.
 */
#define HUTCH_CHAN_DIR "chan"
#define HUTCH_CHAN_SOCK "agent.sock"
#define HUTCH_CHAN_PATH HUTCH_AGENT_DIR "/" HUTCH_CHAN_DIR "/" HUTCH_CHAN_SOCK
#define HUTCH_CHAN_VERSION 1u
#define HUTCH_CHAN_HEAD 8u
#define HUTCH_CHAN_FRAME_MAX (1u << 20) /* any frame but REQ */
#define HUTCH_CHAN_REQ_MAX (8u << 20)
/* agent -> hutch */
#define HUTCH_CHAN_STDOUT 1
#define HUTCH_CHAN_STDERR 2
/* First frame, sent at once: u32 version, u32 uid, u32 gid (the agent's,
 * which every command it runs gets), u32 busy (how many other requests
 * PID 1's handlers were serving when this connection came: what "hutch
 * gc" asks, as it asks the engine for running execs), then the
 * container's hostname. */
#define HUTCH_CHAN_HELLO 0x10
/* The request's process runs (its execve succeeded): u32 its pid. */
#define HUTCH_CHAN_STARTED 0x11
/* The process ended and its output was sent: i32 its status as an
 * engine reports an exec's ExitCode (the code, or 128 + the signal). */
#define HUTCH_CHAN_EXIT 0x12
/* The request was not run: u32 reason (HUTCH_CHAN_REFUSED_*), then one
 * line of text.  Nothing ran; hutch falls back to the engine's exec. */
#define HUTCH_CHAN_REFUSED 0x13
#define HUTCH_CHAN_REFUSED_MISSING 1 /* argv[0] is not there (ENOENT...) */
#define HUTCH_CHAN_REFUSED_BAD 2     /* a malformed request */
#define HUTCH_CHAN_REFUSED_BUSY 3    /* no process could be made */
/* hutch -> agent */
/* The request, once, after HELLO: u32 flags (HUTCH_CHAN_F_*), u16 rows,
 * u16 cols (the terminal's size with F_TTY), u32 argc, u32 envc, then argc
 * and envc NUL-terminated strings.  argv[0] is an agent under
 * HUTCH_AGENT_BIN_DIR; env is added to (and overrides) PID 1's own, which
 * is the container's, as an engine's exec would. */
#define HUTCH_CHAN_REQ 0x20
#define HUTCH_CHAN_F_STDIN 1u	  /* else stdin is /dev/null */
#define HUTCH_CHAN_F_TTY 2u	  /* a terminal for stdin, stdout and stderr */
#define HUTCH_CHAN_STDIN 0x21	  /* bytes for the process's stdin */
#define HUTCH_CHAN_STDIN_END 0x22 /* its end of file (not with F_TTY) */
#define HUTCH_CHAN_RESIZE 0x23	  /* u16 rows, u16 cols */

/* --- commands (argv[1]) and their options ---------------------------------- */

#define HUTCH_AGENT_CMD_SLEEP "sleep" /* PID 1: wait for the engine's stop */
/*
 * PID 1's argv[0]: HUTCH_AGENT_PATH with room in it, as slashes that name
 * the same file.  A handler of the channel starts "run" as a fork of
 * itself, without an execve (chan.c), and the fork names itself in PID 1's
 * command line as an exec'd agent is named, "AGENT run --tag TAG ...":
 * "kill" finds a run agent by its /proc/PID/cmdline alone, and a process
 * cannot grow the command line it was started with.  The room is in
 * argv[0], not an argument of "sleep", so that the agent of an older hutch
 * (which refuses any) still starts the container.  Its 200-odd bytes hold
 * the build's agent path, "run --tag", the longest tag and the usual
 * options.
 */
#define HUTCH_AGENT_PID1_PATH                                                    \
	HUTCH_AGENT_DIR                                                          \
	"////////////////////////////////////////////////////////////"           \
	"//////////////////////////////////////////////////////////////////////" \
	"//////////////////////////////////////////////////////////////////////" \
	"/" HUTCH_AGENT_NAME
#define HUTCH_AGENT_CMD_RUN "run"	  /* run one command, keep its tree */
#define HUTCH_AGENT_CMD_KILL "kill"	  /* kill the tree of a "run" by tag */
#define HUTCH_AGENT_CMD_FS "fs"		  /* file tools, one JSON answer */
#define HUTCH_AGENT_CMD_SPAWN "spawn"	  /* start a background process */
#define HUTCH_AGENT_CMD_PS "ps"		  /* list background processes */
#define HUTCH_AGENT_CMD_LOGS "logs"	  /* a background process's output */
#define HUTCH_AGENT_CMD_WAIT "wait"	  /* wait for one to end */
#define HUTCH_AGENT_CMD_CONNECT "connect" /* relay stdio to a local port */
#define HUTCH_AGENT_CMD_UNTAR "untar" /* sync-in: a tar on stdin, unpacked */
#define HUTCH_AGENT_CMD_USED "used"   /* mark a use of the session, only */
#define HUTCH_AGENT_CMD_DRAIN "drain" /* run's drainer (never the library's) */

/* "run" options.  "--tag TAG" comes first: "kill" finds the agent by
 * argv[1..3] of its /proc/PID/cmdline being exactly "run --tag TAG". */
#define HUTCH_AGENT_OPT_TAG "--tag"
#define HUTCH_AGENT_OPT_DEADLINE "--deadline-ms"
#define HUTCH_AGENT_OPT_KILL_LEFTOVERS "--kill-leftovers"
#define HUTCH_AGENT_OPT_WORKDIR "--workdir" /* run, spawn */
#define HUTCH_AGENT_OPT_TTY "--tty"	    /* run */
/* run --tty: "ROWSxCOLS", the terminal's size when the command starts. */
#define HUTCH_AGENT_OPT_TTY_SIZE "--tty-size"
#define HUTCH_AGENT_OPT_ID "--id"	  /* spawn */
#define HUTCH_AGENT_OPT_SIGNAL "--signal" /* kill */

/* Background processes: at most this many bytes of a process's output are
 * kept (the last ones; what went before is dropped and counted), and at
 * most HUTCH_AGENT_PROC_KEEP ended processes (the oldest go first). */
#define HUTCH_AGENT_LOG_KEEP (8u << 20)
#define HUTCH_AGENT_PROC_KEEP 64
/* logs --json: --max defaults to this and may not exceed the next. */
#define HUTCH_AGENT_LOGS_MAX_DEFAULT (256u << 10)
#define HUTCH_AGENT_LOGS_MAX (1u << 20)

/* Tags are [A-Za-z0-9_-]{1,HUTCH_AGENT_TAG_MAX}. */
#define HUTCH_AGENT_TAG_MAX 64

/* The "fs" tools (argv[2], or the first operand after options). */
#define HUTCH_AGENT_FS_READ "read"
#define HUTCH_AGENT_FS_WRITE "write"
#define HUTCH_AGENT_FS_EDIT "edit"
#define HUTCH_AGENT_FS_GREP "grep"
#define HUTCH_AGENT_FS_FIND "find"
#define HUTCH_AGENT_FS_LS "ls"
#define HUTCH_AGENT_FS_DELETE "delete"
#define HUTCH_AGENT_FS_MOVE "move"

/* The "type" of a find or ls entry. */
#define HUTCH_AGENT_TYPE_FILE "file"
#define HUTCH_AGENT_TYPE_DIR "dir"
#define HUTCH_AGENT_TYPE_SYMLINK "symlink"
#define HUTCH_AGENT_TYPE_OTHER "other" /* fifo, device, socket */

/* A text source "env:NAME": variable NAME, which starts with
 * HUTCH_AGENT_ENV_PREFIX, holds the text in base64. */
#define HUTCH_AGENT_ENV_SOURCE "env:"
#define HUTCH_AGENT_ENV_PREFIX "HUTCH_FS_"
/* A text source "stdin:LEN": the next LEN bytes (decimal) of the agent's
 * stdin.  Texts too big for the environment come this way, never as files:
 * the engine's archive API extracts as root and sets modes and times by
 * path, so a directory the session can write is no place for its upload
 * (doc/threat-model.md).  The agent reads the sources in the order
 * --from, --old-from, --new-from, each exactly LEN bytes. */
#define HUTCH_AGENT_STDIN_SOURCE "stdin:"

/* --- exit codes ------------------------------------------------------------- */

#define HUTCH_AGENT_EXIT_OK 0
#define HUTCH_AGENT_EXIT_FAIL 1	 /* kill: tree not emptied; fs: tool error */
#define HUTCH_AGENT_EXIT_USAGE 2 /* bad command line (fs: with an answer) */
#define HUTCH_AGENT_EXIT_NOTAG 3 /* kill, logs, wait: no such tag or id */
#define HUTCH_AGENT_EXIT_NOWORKDIR 122 /* run, spawn: --workdir unusable */
#define HUTCH_AGENT_EXIT_DEADLINE 124  /* run: --deadline-ms expired */
#define HUTCH_AGENT_EXIT_INTERNAL 125  /* the agent itself failed */
#define HUTCH_AGENT_EXIT_NOEXEC 126    /* run: command found, not runnable */
#define HUTCH_AGENT_EXIT_NOCMD 127     /* run: command not found */

/* --- lines on stderr the library looks for --------------------------------- */

/* Every message of the agent's own starts with this. */
#define HUTCH_AGENT_PREFIX "hutch-agent: "

/* "run", when the kernel's OOM killer acted in the container while the
 * command ran; " (memory limit N MiB)" may follow.  The library matches
 * HUTCH_AGENT_OOM_START at the start of a line. */
#define HUTCH_AGENT_OOM_START "hutch: out of memory: "
#define HUTCH_AGENT_OOM_LINE              \
	HUTCH_AGENT_OOM_START             \
	"the session reached its memory " \
	"limit and the kernel killed a process while this command ran"

/* "run", when the command could not be executed ("hutch: cannot run
 * 'ARGV0': strerror"), before exiting 126 or 127. */
#define HUTCH_AGENT_CANNOT_RUN "hutch: cannot run '"

/* "run" and "spawn", when --workdir cannot be used ("hutch: cannot use
 * working directory 'DIR': strerror"), before exiting 122. */
#define HUTCH_AGENT_NO_WORKDIR "hutch: cannot use working directory '"

/* An agent that does not know a command says this (exit 2). */
#define HUTCH_AGENT_UNKNOWN_COMMAND "unknown command"

/* --- limits ---------------------------------------------------------------- */

/* An "fs" answer stays below this; the library refuses more. */
#define HUTCH_AGENT_FS_ANSWER_MAX ((8 << 20) - 4096)
/* write's text, the largest LEN of its "stdin:LEN" (HUTCH_FS_MAX_TEXT). */
#define HUTCH_AGENT_FS_TEXT_MAX (64 << 20)
/* An environment text up to this size (decoded) may be passed through a
 * pipe when memfd_create is filtered: what a pipe holds without a reader. */
#define HUTCH_AGENT_ENV_TEXT_MAX (60 * 1024)

/* --- error words: "fs" answers {"error":{"code":WORD,"message":...}} ---- */

#define HUTCH_AGENT_ERR_ESCAPE "escape"	      /* resolves outside the root */
#define HUTCH_AGENT_ERR_NOT_FOUND "not_found" /* no such file or directory */
#define HUTCH_AGENT_ERR_NOT_DIR "not_dir"     /* a component is a file */
#define HUTCH_AGENT_ERR_IS_DIR "is_dir"	      /* a file was wanted */
#define HUTCH_AGENT_ERR_NOT_FILE "not_file"   /* fifo, device, socket */
#define HUTCH_AGENT_ERR_BINARY "binary"	      /* NUL in the first 8 KiB */
#define HUTCH_AGENT_ERR_NO_MATCH "no_match"   /* edit: old text not found */
#define HUTCH_AGENT_ERR_AMBIGUOUS "ambiguous" /* edit: found more than once */
#define HUTCH_AGENT_ERR_INVALID "invalid"     /* a bad argument value */
#define HUTCH_AGENT_ERR_USAGE "usage"	      /* a bad command line: exit 2 */
#define HUTCH_AGENT_ERR_TOO_BIG "too_big"     /* over a size limit */
#define HUTCH_AGENT_ERR_CONFLICT "conflict"   /* another writer of the file */
#define HUTCH_AGENT_ERR_IO "io"		      /* any other failure */
#define HUTCH_AGENT_ERR_NOT_EMPTY "not_empty" /* a directory with entries */
#define HUTCH_AGENT_ERR_EXISTS "exists"	      /* move: TO is there */

/*
 * Every error word with the library's code for it, and the spelling the
 * agents of older hutch versions sent (NULL: the same).  Those agents
 * keep running in the containers they were installed in (see "Versioning"
 * in doc/agent-protocol.md), so the library takes both.
 * X(word, legacy word, HUTCH_E* code).
 */
#define HUTCH_AGENT_ERRORS(X)                                     \
	X(HUTCH_AGENT_ERR_ESCAPE, NULL, HUTCH_EESCAPE)            \
	X(HUTCH_AGENT_ERR_NOT_FOUND, "notfound", HUTCH_ENOTFOUND) \
	X(HUTCH_AGENT_ERR_NOT_DIR, "notdir", HUTCH_EINVALID)      \
	X(HUTCH_AGENT_ERR_IS_DIR, "isdir", HUTCH_EINVALID)        \
	X(HUTCH_AGENT_ERR_NOT_FILE, "notfile", HUTCH_EINVALID)    \
	X(HUTCH_AGENT_ERR_BINARY, NULL, HUTCH_EINVALID)           \
	X(HUTCH_AGENT_ERR_NO_MATCH, "nomatch", HUTCH_ENOMATCH)    \
	X(HUTCH_AGENT_ERR_AMBIGUOUS, NULL, HUTCH_EAMBIGUOUS)      \
	X(HUTCH_AGENT_ERR_INVALID, NULL, HUTCH_EINVALID)          \
	X(HUTCH_AGENT_ERR_USAGE, NULL, HUTCH_EINVALID)            \
	X(HUTCH_AGENT_ERR_TOO_BIG, "toobig", HUTCH_ETOOBIG)       \
	X(HUTCH_AGENT_ERR_IO, NULL, HUTCH_EFAILED)                \
	X(HUTCH_AGENT_ERR_CONFLICT, NULL, HUTCH_ECONFLICT)        \
	X(HUTCH_AGENT_ERR_NOT_EMPTY, NULL, HUTCH_ECONFLICT)       \
	X(HUTCH_AGENT_ERR_EXISTS, NULL, HUTCH_ECONFLICT)

#endif /* HUTCH_SHARED_AGENT_PROTOCOL_H */
