/*
 * chan.c - the agent's channel: PID 1 runs agent commands for hutch
 *
 * PID 1 ("sleep", run.c) serves a unix socket at HUTCH_CHAN_PATH, on the
 * session's system volume, which hutch on the engine's host reaches
 * through the volume's mount point.  Every connection hutch makes gets a
 * handler, a fork of PID 1 (one kept from an earlier connection, or a new
 * one), that does what an engine's exec of an agent command line would:
 * runs it (execve, PID 1's environment plus the request's; a "run" of
 * this very agent as a fork, run_in_fork), relays
 * its stdin, stdout and stderr (Docker's multiplexed frames) or a
 * terminal, and reports its exit status as an engine's ExitCode.  Frames
 * and order: src/shared/agent_protocol.h and doc/agent-protocol.md, "The
 * channel".
 *
 * Who may connect: only a peer outside the container's pid namespace
 * that is the container's root (see chan_peer_ok).  Nothing here trusts
 * the request beyond that: it is parsed within bounds, and only an agent
 * under HUTCH_AGENT_BIN_DIR is ever executed.
 *
 * PID 1 never blocks on a connection: it accepts (non-blocking), checks
 * the peer, passes it to a kept handler or forks one, and goes back to
 * its loop; all reading and writing is the handler's.  Every fd made
 * here is close-on-exec, so none reaches a command.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

/* Output is read in pieces of at most this many bytes, one frame each;
 * a pipe that fills a pipe's default size (64 KiB) in one read is grown
 * to it, once: heavy output then costs a quarter of the calls and
 * wake-ups, and a quiet command's pipes keep their default size (they
 * count against the user's pipe memory, shared by every session). */
#define CHAN_OUT_CHUNK 262144u
#define PIPE_DEFAULT 65536
/* After the process has ended: how long its output may still come (a
 * background process holding the pipes or terminal must not keep the
 * EXIT from hutch). */
#define CHAN_DRAIN_MS 2000
/* At the end, how long and how much of hutch's input is read and
 * dropped so that it sees EOF, not ECONNRESET (linger_close). */
#define CHAN_LINGER_MS 1000
#define CHAN_LINGER_MAX (16u << 20)
/* Frames from hutch handled per round of the handler's loop. */
#define CHAN_FRAMES_A_ROUND 64
/* Accepted per wake-up of PID 1, so that signals are not starved. */
#define CHAN_ACCEPT_BATCH 64

/* --- PID 1: the listening socket and the handlers ---------------------- */

/*
 * Live handlers.  Bounded: past AGENT_CHAN_HANDLERS_MAX a connection is
 * refused BUSY, so a flood of connections costs a bounded number of
 * processes.
 *
 * A handler that has served its connection is kept, up to
 * CHAN_IDLE_MAX of them, and given the next one (fd passing over its
 * `ctl` socket, with HELLO's busy count): on the channel a command's
 * cost is mostly starting processes, and a fork of PID 1 and its exit
 * are one of the three (doc/internals.md, "What a command costs
 * there").  It says it is idle by writing its note to `idle_note`;
 * until then PID 1 counts it as serving.  One kept must be as good as a
 * new one: handler_serve() leaves nothing of its connection behind (every
 * fd closed, its process reaped, the request's bytes wiped, its buffers
 * unmapped: handler_prepare), and a handler whose connection did not end
 * cleanly is not kept.
 */
#define CHAN_IDLE_MAX 4
struct handler_slot {
	pid_t pid;    /* 0: a free slot */
	uint32_t gen; /* which fork this is (idle_note) */
	int ctl;      /* PID 1's end of its socket, -1: none (not kept) */
	bool idle;    /* waiting on ctl for a connection */
};
static struct handler_slot handlers[AGENT_CHAN_HANDLERS_MAX];
static unsigned int n_handlers, n_idle;
/* A handler's note: its pid and its fork's number, so that the note of
 * one that ended since cannot be taken for a new handler given its pid
 * (a wrapped pid counter), which would then be counted idle while it
 * serves. */
struct idle_note {
	pid_t pid;
	uint32_t gen;
};
static int idle_note[2] = { -1, -1 };
/* PID 1: the number of the last fork; in a handler, its own. */
static uint32_t handler_gen;
/* In a handler: how many other handlers were serving when its connection
 * came (HELLO's busy, what "hutch gc" asks). */
static unsigned int hello_busy;
/* In a handler: its end of ctl, -1 for one used once. */
static int handler_ctl = -1;

int agent_chan_listen(void)
{
	struct sockaddr_un sa;
	struct stat st;
	mode_t old;
	int fd, rc;

	/* A session made by an older hutch has no such directory: no
	 * channel, silently (hutch uses the engine's exec). */
	if (lstat(HUTCH_AGENT_DIR "/" HUTCH_CHAN_DIR, &st) < 0 ||
	    !S_ISDIR(st.st_mode))
		return -1;
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	_Static_assert(sizeof(HUTCH_CHAN_PATH) <= sizeof(sa.sun_path),
		       "HUTCH_CHAN_PATH fits a sockaddr_un");
	memcpy(sa.sun_path, HUTCH_CHAN_PATH, sizeof(HUTCH_CHAN_PATH));
	/*
	 * The socket of an earlier start of the container.  unlink() never
	 * follows a symlink, so whatever the name is now, only the name goes.
	 * The directory is sticky (root's, 01777): an entry another user made
	 * stays, bind() then fails and there is no channel (hutch falls back).
	 */
	if (unlink(HUTCH_CHAN_PATH) < 0 && errno != ENOENT) {
		agent_err("channel: cannot remove the old %s: %m",
			  HUTCH_CHAN_PATH);
		return -1;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		agent_err("channel: socket: %m");
		return -1;
	}
	/*
	 * Mode 0666: hutch may connect as another uid than ours (rootless
	 * Podman's user is the container's root, we may be any user).  Who
	 * may actually talk is decided per connection (agent_chan_peer_ok), not by
	 * the file's mode, which a command run as our user could change.
	 */
	old = umask(0111);
	rc = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (rc < 0 || listen(fd, 64) < 0) {
		agent_err("channel: cannot serve %s: %m", HUTCH_CHAN_PATH);
		close(fd);
		return -1;
	}
	/* Without it no handler is kept: each serves one connection. */
	if (pipe2(idle_note, O_CLOEXEC | O_NONBLOCK) < 0)
		idle_note[0] = idle_note[1] = -1;
	return fd;
}

int agent_chan_idle_fd(void)
{
	return idle_note[0];
}

static struct handler_slot *find_slot(pid_t pid)
{
	for (unsigned int i = 0; pid > 0 && i < AGENT_CHAN_HANDLERS_MAX; i++)
		if (handlers[i].pid == pid)
			return &handlers[i];
	return NULL;
}

/* @h is kept no longer: closing its ctl ends it (its recvmsg reads EOF). */
static void let_go(struct handler_slot *h)
{
	if (h->idle)
		n_idle--;
	h->idle = false;
	if (h->ctl >= 0)
		close(h->ctl);
	h->ctl = -1;
}

void agent_chan_idled(void)
{
	struct idle_note n;

	/* Whole notes: a pipe write of a few bytes is atomic.  Only handlers
	 * hold the pipe's write end (close-on-exec; /proc/1/fd is closed to
	 * the sandbox as we are not dumpable), and a note that is not a
	 * serving handler's is ignored. */
	while (read(idle_note[0], &n, sizeof(n)) == sizeof(n)) {
		struct handler_slot *h = find_slot(n.pid);

		if (!h || h->gen != n.gen || h->idle || h->ctl < 0)
			continue;
		if (n_idle >= CHAN_IDLE_MAX) {
			let_go(h);
			continue;
		}
		h->idle = true;
		n_idle++;
	}
}

void agent_chan_reaped(pid_t pid)
{
	struct handler_slot *h = find_slot(pid);

	if (h) {
		let_go(h);
		h->pid = 0;
		n_handlers--;
	}
}

/*
 * A handler stopped (SIGSTOP, SIGTSTP...): never hutch's doing, so a
 * process of the sandbox, which runs as our user and may signal a handler
 * (only the command a handler started is kept from it: confine.c).
 * Stopped, it would never end nor let go of its slot: HELLO's busy would
 * count it for ever and gc would never take the session.  Killed, it is
 * what a process of the sandbox could have done itself (killed the
 * handler): its command's result is lost.  @pid is our unreaped child, so
 * it cannot be another process by now.
 */
void agent_chan_stopped(pid_t pid)
{
	struct handler_slot *h = find_slot(pid);

	if (h) {
		/* Given no connection from now on (one passed to it would
		 * be lost with it). */
		let_go(h);
		kill(pid, SIGKILL);
	}
}

/*
 * Who may use the channel.  pid 0: the peer has no pid in our pid
 * namespace, so it is outside the container; every process of the
 * sandbox, whatever it does, has one.  uid 0: the container's root as
 * the kernel maps the peer's uid into our user namespace (host root, or
 * with rootless Podman the user whose container this is); any other
 * host user maps to the overflow uid.  SO_PEERCRED is what the peer was
 * at connect(), recorded by the kernel: nothing the peer sends can
 * change it.
 */
bool agent_chan_peer_ok(int fd)
{
	struct ucred uc;
	socklen_t len = sizeof(uc);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &len) < 0 ||
	    len != sizeof(uc))
		return false;
	return uc.pid == 0 && uc.uid == 0;
}

static void put_u32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
}

static uint32_t get_u32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static uint16_t get_u16(const unsigned char *p)
{
	return (uint16_t)((unsigned)p[0] << 8 | p[1]);
}

/* A frame head for @type and @len at @p. */
static void put_head(unsigned char *p, unsigned char type, uint32_t len)
{
	p[0] = type;
	p[1] = p[2] = p[3] = 0;
	put_u32(p + 4, len);
}

/* HELLO and REFUSED BUSY in one non-blocking send, then nothing: what
 * PID 1 says itself when it cannot fork a handler.  A connection whose
 * buffer cannot take these few bytes gets nothing (it is brand new). */
static void refuse_busy_now(int fd, const char *why)
{
	struct utsname u;
	unsigned char
		buf[HUTCH_CHAN_HEAD * 2 + 16 + sizeof(u.nodename) + 4 + 128];
	size_t len = 0, wlen = strlen(why), hlen = 0;

	if (wlen > 127)
		wlen = 127;
	if (uname(&u) == 0)
		hlen = strnlen(u.nodename, sizeof(u.nodename));
	put_head(buf, HUTCH_CHAN_HELLO, (uint32_t)(16 + hlen));
	put_u32(buf + 8, HUTCH_CHAN_VERSION);
	put_u32(buf + 12, (uint32_t)getuid());
	put_u32(buf + 16, (uint32_t)getgid());
	put_u32(buf + 20, n_handlers);
	memcpy(buf + 24, u.nodename, hlen);
	len = 24 + hlen;
	put_head(buf + len, HUTCH_CHAN_REFUSED, (uint32_t)(4 + wlen));
	put_u32(buf + len + 8, HUTCH_CHAN_REFUSED_BUSY);
	memcpy(buf + len + 12, why, wlen);
	len += 12 + wlen;
	if (send(fd, buf, len, MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
		/* Nothing more to do: hutch sees the connection close. */
	}
}

/* The one message PID 1 sends a kept handler: a connection's fd
 * (SCM_RIGHTS) and HELLO's busy count. */
struct conn_msg {
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} u;
	uint32_t busy;
	struct iovec iov;
	struct msghdr m;
};

static void conn_msg_init(struct conn_msg *cm)
{
	memset(cm, 0, sizeof(*cm));
	cm->iov = (struct iovec){ &cm->busy, sizeof(cm->busy) };
	cm->m.msg_iov = &cm->iov;
	cm->m.msg_iovlen = 1;
	cm->m.msg_control = cm->u.buf;
	cm->m.msg_controllen = sizeof(cm->u.buf);
}

/* Pass @fd and @busy over @ctl: 0, or -1. */
static int pass_conn(int ctl, int fd, uint32_t busy)
{
	struct conn_msg cm;
	struct cmsghdr *c;

	conn_msg_init(&cm);
	cm.busy = busy;
	c = CMSG_FIRSTHDR(&cm.m);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	return sendmsg(ctl, &cm.m, MSG_DONTWAIT | MSG_NOSIGNAL) ==
			       (ssize_t)sizeof(busy) ?
		       0 :
		       -1;
}

/* Give @fd to a kept handler: true when one took it. */
static bool to_idle(int fd)
{
	for (unsigned int i = 0; n_idle && i < AGENT_CHAN_HANDLERS_MAX; i++) {
		struct handler_slot *h = &handlers[i];

		if (!h->idle)
			continue;
		/* Those serving, as a new handler would count them. */
		if (pass_conn(h->ctl, fd, n_handlers - n_idle) == 0) {
			h->idle = false;
			n_idle--;
			return true;
		}
		/* Ended (or stopped with a full queue): not kept. */
		let_go(h);
	}
	return false;
}

static void __attribute__((noreturn)) handler_main(int conn);

void agent_chan_accept(int lfd, int sfd)
{
	for (int round = 0; round < CHAN_ACCEPT_BATCH; round++) {
		struct handler_slot *h;
		int sv[2] = { -1, -1 };
		pid_t pid;
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

		if (fd < 0)
			return; /* EAGAIN: all taken; anything else: next wake */
		if (!agent_chan_peer_ok(fd)) {
			/* Not hutch: closed without a byte read or sent. */
			close(fd);
			continue;
		}
		if (to_idle(fd)) {
			close(fd);
			continue;
		}
		if (n_handlers >= AGENT_CHAN_HANDLERS_MAX) {
			refuse_busy_now(fd, "too many commands at once");
			close(fd);
			continue;
		}
		h = NULL;
		for (unsigned int i = 0; !h; i++)
			if (!handlers[i].pid)
				h = &handlers[i];
		hello_busy = n_handlers - n_idle;
		handler_gen++;
		/* No socket: a handler for this connection only. */
		if (idle_note[1] >= 0 &&
		    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) <
			    0)
			sv[0] = sv[1] = -1;
		pid = fork();
		if (pid < 0) {
			refuse_busy_now(fd, "cannot fork");
			close(fd);
			if (sv[0] >= 0) {
				close(sv[0]);
				close(sv[1]);
			}
			continue;
		}
		if (pid == 0) {
			/* None of PID 1's fds is the handler's business (all
			 * are close-on-exec anyway); another handler's ctl
			 * held here would keep it from seeing its end. */
			close(lfd);
			if (sfd >= 0)
				close(sfd);
			close(idle_note[0]);
			for (unsigned int i = 0; i < AGENT_CHAN_HANDLERS_MAX;
			     i++)
				if (handlers[i].ctl >= 0)
					close(handlers[i].ctl);
			if (sv[0] >= 0)
				close(sv[0]);
			handler_ctl = sv[1];
			handler_main(fd);
		}
		if (sv[1] >= 0)
			close(sv[1]);
		*h = (struct handler_slot){ .pid = pid,
					    .gen = handler_gen,
					    .ctl = sv[0] };
		n_handlers++;
		close(fd);
	}
}

/* --- the request -------------------------------------------------------- */

/* A string of @p[0..@len) that ends with a NUL inside it: its length
 * plus one, or 0 when there is none. */
static size_t str_in(const char *p, size_t len)
{
	const char *nul = memchr(p, '\0', len);

	return nul ? (size_t)(nul - p) + 1 : 0;
}

/*
 * What may be executed: an agent of any build under @bin_dir
 * ("BIN_DIR/hutch-agent-BUILD"), or HUTCH_AGENT_PATH.  Nothing else: the
 * channel runs hutch's agent, which then runs the command (run, spawn),
 * so the agent's own checks and confinement hold as on the engine path.
 * The build part may hold neither '/' nor "..": one name, directly in
 * the directory, which only the agent's owner can write.
 */
bool agent_chan_argv0_ok(const char *argv0, const char *bin_dir)
{
	static const char name[] = HUTCH_AGENT_NAME "-";
	size_t dlen = strlen(bin_dir);
	const char *build;

	if (!strcmp(argv0, HUTCH_AGENT_PATH))
		return true;
	if (strncmp(argv0, bin_dir, dlen) || argv0[dlen] != '/' ||
	    strncmp(argv0 + dlen + 1, name, sizeof(name) - 1))
		return false;
	build = argv0 + dlen + 1 + sizeof(name) - 1;
	return *build && !strchr(build, '/') && !strstr(build, "..");
}

void agent_chan_req_free(struct agent_chan_req *r)
{
	if (!r)
		return;
	free(r->argv);
	free(r->env);
	r->argv = r->env = NULL;
}

int agent_chan_parse_req(const char *p, size_t len, const char *bin_dir,
			 struct agent_chan_req *r, const char **why)
{
	const unsigned char *u = (const unsigned char *)p;
	size_t off = 16, n, i;

	memset(r, 0, sizeof(*r));
	if (len < 16) {
		*why = "request too short";
		return -1;
	}
	r->flags = get_u32(u);
	r->rows = get_u16(u + 4);
	r->cols = get_u16(u + 6);
	r->argc = get_u32(u + 8);
	r->envc = get_u32(u + 12);
	if (r->flags & ~(HUTCH_CHAN_F_STDIN | HUTCH_CHAN_F_TTY)) {
		*why = "unknown flags";
		return -1;
	}
	/* Every string takes at least its NUL: counts past what the
	 * payload can hold are refused before anything is allocated. */
	if (r->argc < 1 || r->argc > len - off ||
	    r->envc > len - off - r->argc) {
		*why = "bad argument or environment count";
		return -1;
	}
	r->argv = calloc((size_t)r->argc + 1, sizeof(char *));
	r->env = calloc((size_t)r->envc + 1, sizeof(char *));
	if (!r->argv || !r->env) {
		*why = "out of memory";
		goto fail;
	}
	for (i = 0; i < (size_t)r->argc + r->envc; i++) {
		n = off < len ? str_in(p + off, len - off) : 0;
		if (!n) {
			*why = "a string is not NUL-terminated";
			goto fail;
		}
		if (i < r->argc)
			r->argv[i] = (char *)p + off;
		else
			r->env[i - r->argc] = (char *)p + off;
		off += n;
	}
	if (off != len) {
		*why = "bytes after the last string";
		goto fail;
	}
	for (i = 0; i < r->envc; i++)
		/* NAME=VALUE with a name, as an engine's exec takes them. */
		if (r->env[i][0] == '=' || !strchr(r->env[i], '=')) {
			*why = "an environment entry is not NAME=VALUE";
			goto fail;
		}
	if (!agent_chan_argv0_ok(r->argv[0], bin_dir)) {
		*why = "argv[0] is not hutch's agent";
		goto fail;
	}
	return 0;
fail:
	agent_chan_req_free(r);
	return -1;
}

/* --- the handler ----------------------------------------------------------- */

struct handler {
	int conn;
	int sfd;    /* signalfd: SIGCHLD */
	int out[2]; /* stdout, stderr (pty: the master in out[0]); -1 */
	int in;	    /* stdin pipe's write end, or the master; -1 */
	bool tty;
	bool grown[2];	/* out[i] grown to CHAN_OUT_CHUNK (pump_out) */
	bool grown_in;	/* in, the same (on_frame) */
	bool host_gone; /* EOF or error on conn: stop relaying to it */
	pid_t child;	/* 0 once reaped */
	int status;	/* its wait status */
	struct timespec ended;
	/* One output frame on its way to hutch: HUTCH_CHAN_HEAD +
	 * CHAN_OUT_CHUNK bytes, malloc'd (not in the struct that is zeroed,
	 * so only the pages output fills are charged to the session). */
	unsigned char *obuf;
	size_t olen, ooff;
	/* One input frame being read, then (STDIN) written to the process. */
	unsigned char ihead[HUTCH_CHAN_HEAD];
	size_t ihave; /* bytes of head + payload read */
	unsigned char *ibuf;
	uint32_t ilen;
	size_t ioff;   /* STDIN: payload bytes written to the process */
	bool ipending; /* a STDIN payload waiting to be written */
};

static long long ms_since(const struct timespec *t)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (long long)(now.tv_sec - t->tv_sec) * 1000 +
	       (now.tv_nsec - t->tv_nsec) / 1000000;
}

/*
 * Write all of @buf to the connection, waiting for it (the handler has
 * nothing else to do while it sends HELLO, STARTED, REFUSED or EXIT).
 * -1 once hutch is gone.
 */
static int send_all(int conn, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = send(conn, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0 && errno == EAGAIN) {
			struct pollfd pf = { conn, POLLOUT, 0 };

			if (poll(&pf, 1, -1) < 0 && errno != EINTR)
				return -1;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int send_frame(int conn, unsigned char type, const void *payload,
		      size_t len)
{
	unsigned char head[HUTCH_CHAN_HEAD];

	put_head(head, type, (uint32_t)len);
	if (send_all(conn, head, sizeof(head)) < 0)
		return -1;
	return len ? send_all(conn, payload, len) : 0;
}

static int send_u32(int conn, unsigned char type, uint32_t v)
{
	unsigned char b[4];

	put_u32(b, v);
	return send_frame(conn, type, b, 4);
}

static void send_refused(int conn, uint32_t reason, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void send_refused(int conn, uint32_t reason, const char *fmt, ...)
{
	char line[4 + 512];
	va_list ap;
	int n;

	put_u32((unsigned char *)line, reason);
	va_start(ap, fmt);
	n = vsnprintf(line + 4, sizeof(line) - 4, fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	if ((size_t)n >= sizeof(line) - 4)
		n = (int)sizeof(line) - 5;
	send_frame(conn, HUTCH_CHAN_REFUSED, line, 4 + (size_t)n);
}

static int send_hello(int conn)
{
	struct utsname u;
	unsigned char buf[16 + sizeof(u.nodename)];
	size_t hlen = 0;

	if (uname(&u) == 0)
		hlen = strnlen(u.nodename, sizeof(u.nodename));
	put_u32(buf, HUTCH_CHAN_VERSION);
	put_u32(buf + 4, (uint32_t)getuid());
	put_u32(buf + 8, (uint32_t)getgid());
	put_u32(buf + 12, hello_busy);
	memcpy(buf + 16, u.nodename, hlen);
	return send_frame(conn, HUTCH_CHAN_HELLO, buf, 16 + hlen);
}

/*
 * Read exactly @len bytes before @deadline_ms (since @start) passes.
 * 0, or -1 (EOF, error or too late).
 */
static int recv_by(int conn, void *buf, size_t len,
		   const struct timespec *start, int deadline_ms)
{
	char *p = buf;

	while (len) {
		ssize_t n = recv(conn, p, len, MSG_DONTWAIT);

		if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
			struct pollfd pf = { conn, POLLIN, 0 };
			long long left = deadline_ms - ms_since(start);

			if (left <= 0)
				return -1;
			if (poll(&pf, 1, (int)left + 1) < 0 && errno != EINTR)
				return -1;
			continue;
		}
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* PID 1's environment with @req's entries added; an entry of PID 1's
 * whose name the request sets is left out (the request's wins). */
static char **make_env(char **req, uint32_t nreq)
{
	size_t n = 0, k = 0;
	char **env;

	while (environ && environ[n])
		n++;
	env = calloc(n + nreq + 1, sizeof(char *));
	if (!env)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		const char *eq = strchr(environ[i], '=');
		size_t nl = eq ? (size_t)(eq - environ[i]) : strlen(environ[i]);
		bool over = false;

		for (uint32_t j = 0; j < nreq && !over; j++)
			over = !strncmp(req[j], environ[i], nl) &&
			       req[j][nl] == '=';
		if (!over)
			env[k++] = environ[i];
	}
	for (uint32_t j = 0; j < nreq; j++)
		env[k++] = req[j];
	env[k] = NULL;
	return env;
}

static void reset_signals(void)
{
	struct sigaction sa;
	sigset_t none;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	sigemptyset(&sa.sa_mask);
	for (int sig = 1; sig < NSIG; sig++)
		sigaction(sig, &sa, NULL); /* fails for SIGKILL...: fine */
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
}

/*
 * Whether the request's "run" can be a fork of this handler that goes on
 * as the agent would after its execve (agent_dispatch), rather than a
 * vfork and an execve: starting a program is most of what a command
 * costs on the channel (doc/internals.md, "What a command costs there").
 * Only when:
 * - the request's agent is this very program: PID 1's path and the
 *   build's name are hard links of one inode (agent_blob.c), and an agent
 *   of another build (a newer hutch) is exec'd as ever, so what runs is
 *   what the execve would have run;
 * - and PID 1's command line has room (HUTCH_AGENT_PID1_PATH) for the
 *   fork's name, "AGENT run --tag TAG", by which "kill" finds it
 *   (proctree.c).  PID 1 of a session made by an older hutch has none.
 */
static bool run_in_fork(const struct agent_chan_req *r)
{
	struct stat self, want;
	size_t need = 0;

	if (r->argc < 4 || strcmp(r->argv[1], HUTCH_AGENT_CMD_RUN) != 0 ||
	    strcmp(r->argv[2], HUTCH_AGENT_OPT_TAG) != 0)
		return false;
	for (int i = 0; i < 4; i++)
		need += strlen(r->argv[i]) + 1;
	if (!agent_cmdline || need > agent_cmdline_size)
		return false;
	return stat("/proc/self/exe", &self) == 0 &&
	       fstatat(AT_FDCWD, r->argv[0], &want, AT_SYMLINK_NOFOLLOW) == 0 &&
	       S_ISREG(want.st_mode) && want.st_dev == self.st_dev &&
	       want.st_ino == self.st_ino;
}

/* In the fork: its command line becomes the request's argv, as many
 * whole arguments as fit (at least "AGENT run --tag TAG": run_in_fork),
 * the rest of the room zeroed.  The room's last byte stays a NUL, so
 * the kernel shows just this span (a last byte overwritten would have it
 * read on into the environment, as for setproctitle). */
static void name_self(const struct agent_chan_req *r)
{
	size_t used = 0, n;

	for (uint32_t i = 0; i < r->argc; i++) {
		n = strlen(r->argv[i]) + 1;
		if (n > agent_cmdline_size - used)
			break;
		memcpy(agent_cmdline + used, r->argv[i], n);
		used += n;
	}
	memset(agent_cmdline + used, 0, agent_cmdline_size - used);
	/* What an execve would have named it: its file's name, cut to the
	 * 15 bytes the kernel keeps. */
	n = strlen(r->argv[0]);
	while (n > 0 && r->argv[0][n - 1] != '/')
		n--;
	prctl(PR_SET_NAME, r->argv[0] + n, 0, 0, 0);
}

/*
 * The process, between fork and execve.  A session of its own, as an
 * engine's exec is not in the container init's session: only PID 1 and
 * its handlers are in session 1, which is how "kill" tells a handler
 * from a process of the sandbox (proctree.c).  With a terminal, the
 * terminal is its controlling one.  Its execve's errno goes to @errfd.
 *
 * @in_fork: a fork that runs "run" in place of its execve (run_in_fork),
 * made what an execve would leave: the request's environment, default
 * signal dispositions, and no fd above 2 (the engine's, PID 1's and ours
 * alike; @errfd closing with them tells the handler it started).  What is
 * left of the handler's memory is never seen by the command, which is
 * exec'd in turn, and the fork is not dumpable (PID 1's
 * PR_SET_DUMPABLE).  Without it, this is a vfork's child: it only makes
 * system calls and writes no memory of its parent's.
 */
static void __attribute__((noreturn, noinline))
child_start(const struct agent_chan_req *r, char **env, int in, int out,
	    int err, int errfd, bool in_fork)
{
	int e;

	if (setsid() < 0)
		goto fail;
	if (r->flags & HUTCH_CHAN_F_TTY && ioctl(in, TIOCSCTTY, 0) < 0)
		goto fail;
	if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
		goto fail;
	if (chdir("/") < 0)
		goto fail;
	if (in_fork) {
		name_self(r);
		reset_signals();
		environ = env;
		if (syscall(SYS_close_range, 3u, ~0u, 0u) < 0) {
			long max = sysconf(_SC_OPEN_MAX);

			for (long fd = 3; fd < (max > 0 ? max : 65536); fd++)
				close((int)fd);
		}
		/* As main() returns, but without PID 1's atexit handlers
		 * (it has none; a test's harness does). */
		e = agent_dispatch((int)r->argc, r->argv, true);
		fflush(NULL);
		_exit(e);
	}
	/* Nothing PID 1 may have inherited from the engine reaches the
	 * command: everything above 2 closes at execve (our own fds are
	 * close-on-exec already; @errfd must stay so). */
	syscall(SYS_close_range, 3u, ~0u, CLOSE_RANGE_CLOEXEC);
	reset_signals();
	execve(r->argv[0], r->argv, env);
fail:
	e = errno;
	if (write(errfd, &e, sizeof(e)) < 0) {
		/* The handler sees no STARTED either way. */
	}
	_exit(127);
}

/*
 * vfork, not fork, as run.c starts the command: no copy of our page
 * tables on a command's path.  Safe for the same reasons: without
 * @in_fork child_start() ends in execve or _exit, makes system calls only
 * (@r and @env are read, not written), and every signal is held until it
 * has reset its own dispositions.  We resume once it has exec'd or
 * exited.  A function of its own, so that no variable of the caller lives
 * across the vfork, calling child_start() out of line (noinline), so
 * that the fork's branch shares no stack slot of ours.  @in_fork
 * (run_in_fork): a fork, which goes on as the agent.
 */
static __attribute__((noinline)) pid_t spawn(const struct agent_chan_req *r,
					     char **env, int in, int out,
					     int err, int errfd, bool in_fork)
{
	sigset_t held, before;
	pid_t pid;

	sigfillset(&held);
	sigprocmask(SIG_BLOCK, &held, &before);
	pid = in_fork ? fork() : vfork();
	if (pid == 0)
		child_start(r, env, in, out, err, errfd, in_fork);
	sigprocmask(SIG_SETMASK, &before, NULL);
	return pid;
}

/* Open a terminal pair: the master (ours) and the slave (the process's),
 * both close-on-exec; the slave is dup2()ed onto 0..2 in the child. */
static int open_pty(int *master, int *slave, uint16_t rows, uint16_t cols)
{
	struct winsize ws = { .ws_row = rows, .ws_col = cols };
	char *name;

	/* Not TIOCGPTPEER: valgrind does not know it. */
	*master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (*master < 0)
		return -1;
	if (grantpt(*master) < 0 || unlockpt(*master) < 0 ||
	    !(name = ptsname(*master)))
		goto fail;
	*slave = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (*slave < 0)
		goto fail;
	if (rows && cols)
		ioctl(*master, TIOCSWINSZ, &ws);
	return 0;
fail:
	close(*master);
	*master = -1;
	return -1;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/*
 * Start the request's process.  0 with h->child and our ends of its
 * stdio set, STARTED sent; -1 with REFUSED sent (nothing ran).
 */
static int start_process(struct handler *h, const struct agent_chan_req *r)
{
	int pin[2] = { -1, -1 }, pout[2] = { -1, -1 }, perr[2] = { -1, -1 };
	int ep[2] = { -1, -1 }, master = -1, slave = -1, e = 0;
	char **env = make_env(r->env, r->envc);
	ssize_t n;
	pid_t pid;

	if (!env) {
		send_refused(h->conn, HUTCH_CHAN_REFUSED_BUSY, "out of memory");
		return -1;
	}
	if (pipe2(ep, O_CLOEXEC) < 0)
		goto busy;
	if (h->tty) {
		if (open_pty(&master, &slave, r->rows, r->cols) < 0)
			goto busy;
	} else {
		if (pipe2(pout, O_CLOEXEC) < 0 || pipe2(perr, O_CLOEXEC) < 0)
			goto busy;
		if (r->flags & HUTCH_CHAN_F_STDIN) {
			if (pipe2(pin, O_CLOEXEC) < 0)
				goto busy;
		} else {
			pin[0] = open("/dev/null", O_RDONLY | O_CLOEXEC);
			if (pin[0] < 0)
				goto busy;
		}
	}
	if (h->tty)
		pid = spawn(r, env, slave, slave, slave, ep[1], run_in_fork(r));
	else
		pid = spawn(r, env, pin[0], pout[1], perr[1], ep[1],
			    run_in_fork(r));
	if (pid < 0)
		goto busy;
	h->child = pid;
	close_fd(&ep[1]);
	close_fd(&slave);
	close_fd(&pin[0]);
	close_fd(&pout[1]);
	close_fd(&perr[1]);
	free(env);
	env = NULL;
	/* EOF: execve succeeded (the pipe closed with it); else its errno. */
	do
		n = read(ep[0], &e, sizeof(e));
	while (n < 0 && errno == EINTR);
	close_fd(&ep[0]);
	if (n == sizeof(e)) {
		/* It exits (127) right after saying so: reaped here. */
		waitpid(pid, NULL, 0);
		h->child = 0;
		close_fd(&master);
		close_fd(&pin[1]);
		close_fd(&pout[0]);
		close_fd(&perr[0]);
		if (e == ENOENT || e == EACCES || e == ENOEXEC || e == ENOTDIR)
			send_refused(h->conn, HUTCH_CHAN_REFUSED_MISSING,
				     "%s: %s", r->argv[0], strerror(e));
		else
			send_refused(h->conn, HUTCH_CHAN_REFUSED_BUSY,
				     "cannot start %s: %s", r->argv[0],
				     strerror(e));
		return -1;
	}
	if (h->tty) {
		h->out[0] = master;
		h->in = master;
	} else {
		h->out[0] = pout[0];
		h->out[1] = perr[0];
		h->in = pin[1];
	}
	for (int i = 0; i < 2; i++)
		if (h->out[i] >= 0)
			fcntl(h->out[i], F_SETFL, O_NONBLOCK);
	if (h->in >= 0 && h->in != h->out[0])
		fcntl(h->in, F_SETFL, O_NONBLOCK);
	send_u32(h->conn, HUTCH_CHAN_STARTED, (uint32_t)pid);
	return 0;
busy:
	e = errno;
	close_fd(&ep[0]);
	close_fd(&ep[1]);
	close_fd(&master);
	close_fd(&slave);
	close_fd(&pin[0]);
	close_fd(&pin[1]);
	close_fd(&pout[0]);
	close_fd(&pout[1]);
	close_fd(&perr[0]);
	close_fd(&perr[1]);
	free(env);
	send_refused(h->conn, HUTCH_CHAN_REFUSED_BUSY, "cannot start %s: %s",
		     r->argv[0], strerror(e));
	return -1;
}

static void host_left(struct handler *h)
{
	h->host_gone = true;
	h->olen = h->ooff = 0;
	h->ipending = false;
	/* An engine exec whose client left gets EOF on stdin; the process
	 * itself runs on (hutch kills by tag when it means to). */
	if (!h->tty)
		close_fd(&h->in);
}

void agent_grow_pipe(int fd, int size)
{
	int now = fcntl(fd, F_GETPIPE_SZ);

	if (now > 0 && now < size)
		fcntl(fd, F_SETPIPE_SZ, size);
}

/* Read one piece of output from out[@i] into a frame, when none waits
 * to be sent (one frame at most: memory stays bounded whatever the
 * process writes, and a slow hutch slows the reading, not the memory).
 * With hutch gone, the piece is thrown away. */
static void pump_out(struct handler *h, int i)
{
	ssize_t n;

	n = read(h->out[i], h->obuf + HUTCH_CHAN_HEAD, CHAN_OUT_CHUNK);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n >= PIPE_DEFAULT && !h->tty && !h->grown[i]) {
		h->grown[i] = true;
		agent_grow_pipe(h->out[i], (int)CHAN_OUT_CHUNK);
	}
	if (n <= 0) {
		/* EOF, or EIO on a master whose slave is closed by all. */
		if (h->tty)
			h->in = -1; /* the same fd */
		close_fd(&h->out[i]);
		return;
	}
	if (h->host_gone)
		return;
	put_head(h->obuf,
		 (unsigned char)(i == 0 ? HUTCH_CHAN_STDOUT :
					  HUTCH_CHAN_STDERR),
		 (uint32_t)n);
	h->olen = HUTCH_CHAN_HEAD + (size_t)n;
	h->ooff = 0;
}

static void flush_out(struct handler *h)
{
	while (h->ooff < h->olen) {
		ssize_t n = send(h->conn, h->obuf + h->ooff, h->olen - h->ooff,
				 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0) {
			host_left(h);
			return;
		}
		h->ooff += (size_t)n;
	}
	h->olen = h->ooff = 0;
}

/* Write what is left of the pending STDIN payload, without blocking. */
static void flush_in(struct handler *h)
{
	while (h->ipending && h->ioff < h->ilen) {
		ssize_t n;

		if (h->in < 0) {
			h->ipending = false;
			return;
		}
		n = write(h->in, h->ibuf + h->ioff, h->ilen - h->ioff);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n < 0) {
			/* EPIPE (the process closed its stdin) or EIO: the
			 * rest of the input is dropped, as an engine does. */
			if (!h->tty)
				close_fd(&h->in);
			h->ipending = false;
			return;
		}
		h->ioff += (size_t)n;
	}
	h->ipending = false;
}

/* One complete frame from hutch.  -1: a protocol error (hutch broken). */
static int on_frame(struct handler *h, unsigned char type)
{
	struct winsize ws;

	switch (type) {
	case HUTCH_CHAN_STDIN:
		if (h->ilen >= PIPE_DEFAULT && h->in >= 0 && !h->tty &&
		    !h->grown_in) {
			/* As pump_out grows an output pipe. */
			h->grown_in = true;
			agent_grow_pipe(h->in, (int)CHAN_OUT_CHUNK);
		}
		if (h->ilen && h->in >= 0) {
			h->ipending = true;
			h->ioff = 0;
			flush_in(h);
		}
		return 0;
	case HUTCH_CHAN_STDIN_END:
		if (h->ilen)
			return -1;
		/* With a terminal, EOF is a byte (^D) hutch sends itself. */
		if (!h->tty)
			close_fd(&h->in);
		return 0;
	case HUTCH_CHAN_RESIZE:
		if (h->ilen != 4)
			return -1;
		if (h->tty && h->out[0] >= 0) {
			memset(&ws, 0, sizeof(ws));
			ws.ws_row = get_u16(h->ibuf);
			ws.ws_col = get_u16(h->ibuf + 2);
			ioctl(h->out[0], TIOCSWINSZ, &ws);
		}
		return 0;
	default:
		return -1;
	}
}

/* Read from hutch what is there: at most CHAN_FRAMES_A_ROUND frames,
 * and none after a STDIN frame that waits to be written, so that input
 * never keeps the loop from the process's output. */
static void pump_conn(struct handler *h)
{
	for (int frames = 0; frames < CHAN_FRAMES_A_ROUND;) {
		size_t want;
		unsigned char *dst;
		ssize_t n;

		if (h->ihave < HUTCH_CHAN_HEAD) {
			dst = h->ihead + h->ihave;
			want = HUTCH_CHAN_HEAD - h->ihave;
		} else {
			dst = h->ibuf + (h->ihave - HUTCH_CHAN_HEAD);
			want = h->ilen - (h->ihave - HUTCH_CHAN_HEAD);
		}
		n = want ? recv(h->conn, dst, want, MSG_DONTWAIT) : 0;
		if (want && n < 0 && errno == EINTR)
			continue;
		if (want && n < 0 && errno == EAGAIN)
			return;
		if (want && n <= 0) {
			host_left(h);
			return;
		}
		h->ihave += (size_t)n;
		if (h->ihave == HUTCH_CHAN_HEAD) {
			h->ilen = get_u32(h->ihead + 4);
			/* Oversize, or a head that is not ours: hutch is
			 * broken; nothing it sends can be trusted now. */
			if (h->ilen > HUTCH_CHAN_FRAME_MAX || h->ihead[1] ||
			    h->ihead[2] || h->ihead[3]) {
				host_left(h);
				return;
			}
		}
		if (h->ihave < HUTCH_CHAN_HEAD ||
		    h->ihave < HUTCH_CHAN_HEAD + (size_t)h->ilen)
			continue;
		h->ihave = 0;
		frames++;
		if (on_frame(h, h->ihead[0]) < 0) {
			host_left(h);
			return;
		}
		if (h->ipending)
			return; /* no more input until this one is written */
	}
}

static void reap_child(struct handler *h)
{
	struct signalfd_siginfo si;
	int status;

	while (read(h->sfd, &si, sizeof(si)) == sizeof(si))
		;
	if (h->child > 0 && waitpid(h->child, &status, WNOHANG) == h->child) {
		h->status = status;
		h->child = 0;
		clock_gettime(CLOCK_MONOTONIC, &h->ended);
	}
}

static int32_t exit_status(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return HUTCH_AGENT_EXIT_INTERNAL;
}

/* Relay until the process has ended and its output is sent (or the
 * drain time has passed), then EXIT. */
static void relay(struct handler *h)
{
	struct pollfd p[5];

	for (;;) {
		bool ended = h->child == 0;
		int timeout = -1, np;
		short cev;

		if (ended) {
			long long left = CHAN_DRAIN_MS - ms_since(&h->ended);

			if ((h->out[0] < 0 && h->out[1] < 0) || left <= 0)
				break;
			timeout = (int)left + 1;
		}
		np = 0;
		p[np++] = (struct pollfd){ h->sfd, POLLIN, 0 };
		/* Not at all while it has nothing to do: a hung-up peer's
		 * POLLHUP would otherwise wake us for ever while a STDIN
		 * frame waits for the process to read. */
		cev = (short)((h->olen ? POLLOUT : 0) |
			      (h->ipending ? 0 : POLLIN));
		p[np++] = (struct pollfd){ h->host_gone || !cev ? -1 : h->conn,
					   cev, 0 };
		/* No reading while a frame waits to be sent. */
		p[np++] =
			(struct pollfd){ h->olen ? -1 : h->out[0], POLLIN, 0 };
		p[np++] =
			(struct pollfd){ h->olen ? -1 : h->out[1], POLLIN, 0 };
		p[np++] =
			(struct pollfd){ h->ipending && h->in >= 0 ? h->in : -1,
					 POLLOUT, 0 };
		if (poll(p, (nfds_t)np, timeout) < 0) {
			if (errno == EINTR)
				continue;
			return;
		}
		if (p[0].revents)
			reap_child(h);
		if (p[4].revents)
			flush_in(h);
		if (p[1].revents & POLLOUT)
			flush_out(h);
		if (!h->host_gone && !h->ipending &&
		    (p[1].revents & (POLLIN | POLLHUP | POLLERR)))
			pump_conn(h);
		for (int i = 0; i < 2; i++)
			if (!h->olen && h->out[i] >= 0 && p[2 + i].revents)
				pump_out(h, i);
		if (h->olen && !h->host_gone)
			flush_out(h);
	}
	/* What the process wrote was sent (or hutch is gone): EXIT. */
	if (!h->host_gone && (!h->olen || send_all(h->conn, h->obuf + h->ooff,
						   h->olen - h->ooff) == 0))
		send_u32(h->conn, HUTCH_CHAN_EXIT,
			 (uint32_t)exit_status(h->status));
}

/*
 * Close the connection so that hutch reads all we sent, then EOF.  A unix
 * socket closed with bytes it never read makes the peer's next read fail
 * (ECONNRESET) instead of reporting EOF, and a refusal may come before
 * the request's end was read.  So: our end of writing first, then what
 * hutch still sends is read and dropped until it closes, for at most
 * @ms and CHAN_LINGER_MAX bytes.
 */
static void linger_close(int conn, int ms)
{
	static char sink[4096];
	struct timespec t0;
	size_t total = 0;

	shutdown(conn, SHUT_WR);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (total < CHAN_LINGER_MAX) {
		struct pollfd pf = { conn, POLLIN, 0 };
		long long left = ms - ms_since(&t0);
		ssize_t n = recv(conn, sink, sizeof(sink), MSG_DONTWAIT);

		if (n > 0) {
			total += (size_t)n;
			continue;
		}
		if (n == 0 || (errno != EAGAIN && errno != EINTR) || left <= 0)
			break;
		if (poll(&pf, 1, (int)left + 1) < 0 && errno != EINTR)
			break;
	}
	/* What hutch sent last, dropped: nothing of it is kept. */
	explicit_bzero(sink, sizeof(sink));
	close(conn);
}

static struct handler the_handler;

/* What a handler sets up once, before its first connection: 0, or -1
 * (it cannot serve). */
static int handler_prepare(struct handler *h)
{
	sigset_t chld;

	h->sfd = -1;
	/* PID 1's mask and dispositions are not ours; SIGPIPE is ignored
	 * (writes to a closed stdin are EPIPE, sends use MSG_NOSIGNAL), and
	 * SIGCHLD comes through a signalfd. */
	reset_signals();
	signal(SIGPIPE, SIG_IGN);
	/*
	 * Out of PID 1's process group (still in its session, which is how
	 * kill tells a handler: proctree.c): a signal a command routes at
	 * group 1 (F_SETOWN -1 with F_SETSIG, which init ignores) would
	 * otherwise end every handler and lose their commands' results
	 * (process::sigio_at_init_does_not_end_the_sandbox).  The group of
	 * our own is refused to the command we run, as we are (confine.c).
	 */
	if (setpgid(0, 0) < 0)
		return -1;
	/* PID 1's 0..2 are the container's log and such; were one closed,
	 * a pipe made below could take its number and be dup2()ed over in
	 * the process.  Held open on /dev/null (the process gets its own). */
	for (int fd = 0; fd <= 2; fd++)
		if (fcntl(fd, F_GETFD) < 0 && errno == EBADF &&
		    open("/dev/null", O_RDWR) != fd)
			return -1;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, NULL);
	h->sfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
	/* A kept handler must not keep a connection's output and input
	 * (obuf, ibuf): with a fixed threshold they are mapped for each
	 * connection and unmapped at their free, their pages gone.  glibc
	 * would otherwise raise the threshold at the first such free and
	 * serve them from the heap from then on, old bytes and all. */
	mallopt(M_MMAP_THRESHOLD, 128 * 1024);
	return h->sfd < 0 ? -1 : 0;
}

static int handler_serve(struct handler *h, int conn, const char *bin_dir,
			 int req_timeout_ms);

int agent_chan_serve(int conn, const char *bin_dir, int req_timeout_ms)
{
	struct handler *h = &the_handler;
	int rc = 0;

	if (handler_prepare(h) == 0)
		rc = handler_serve(h, conn, bin_dir, req_timeout_ms);
	else
		close(conn);
	if (h->sfd >= 0)
		close(h->sfd);
	h->sfd = -1;
	return rc;
}

/* The next connection PID 1 passes (pass_conn), or -1: PID 1 let us go
 * (EOF) or something is wrong; either way this handler ends. */
static int next_conn(int ctl)
{
	struct conn_msg cm;
	struct cmsghdr *c;
	ssize_t n;
	int fd;

	conn_msg_init(&cm);
	do
		n = recvmsg(ctl, &cm.m, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	c = n == (ssize_t)sizeof(cm.busy) ? CMSG_FIRSTHDR(&cm.m) : NULL;
	if (!c || c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS ||
	    c->cmsg_len != CMSG_LEN(sizeof(int)) ||
	    (cm.m.msg_flags & MSG_CTRUNC))
		return -1;
	memcpy(&fd, CMSG_DATA(c), sizeof(int));
	hello_busy = cm.busy;
	return fd;
}

/*
 * A forked handler: serves @conn, then, when PID 1 gave it a ctl socket
 * and the connection ended cleanly, says it is idle and serves the next
 * connection PID 1 passes it, until PID 1 lets it go.
 */
static void __attribute__((noreturn)) handler_main(int conn)
{
	struct handler *h = &the_handler;
	struct idle_note me = { getpid(), handler_gen };

	if (handler_prepare(h) < 0)
		_exit(0);
	for (;;) {
		if (handler_serve(h, conn, HUTCH_AGENT_BIN_DIR,
				  AGENT_CHAN_REQ_TIMEOUT_MS) < 0 ||
		    handler_ctl < 0 ||
		    write(idle_note[1], &me, sizeof(me)) != sizeof(me))
			_exit(0);
		conn = next_conn(handler_ctl);
		if (conn < 0)
			_exit(0);
	}
}

/*
 * One connection, to its end; @conn is closed.  0 when nothing of it is
 * left in this process (a kept handler may serve another), -1 when
 * something may be (its process not reaped).
 */
static int handler_serve(struct handler *h, int conn, const char *bin_dir,
			 int req_timeout_ms)
{
	struct agent_chan_req r;
	unsigned char head[HUTCH_CHAN_HEAD];
	struct timespec start;
	const char *why = NULL;
	uint32_t len = 0;
	char *req = NULL;
	int sfd = h->sfd;

	memset(h, 0, sizeof(*h));
	h->conn = conn;
	h->sfd = sfd;
	h->out[0] = h->out[1] = h->in = -1;
	if (send_hello(conn) < 0)
		goto out;
	clock_gettime(CLOCK_MONOTONIC, &start);
	/* The request, in time: a peer that connects and says nothing must
	 * not hold a handler (one of a bounded number) for ever. */
	if (recv_by(conn, head, sizeof(head), &start, req_timeout_ms) < 0)
		goto out;
	len = get_u32(head + 4);
	if (head[0] != HUTCH_CHAN_REQ || len > HUTCH_CHAN_REQ_MAX) {
		send_refused(conn, HUTCH_CHAN_REFUSED_BAD,
			     "expected a request of at most %u bytes",
			     HUTCH_CHAN_REQ_MAX);
		goto out;
	}
	req = malloc(len ? len : 1);
	if (!req) {
		send_refused(conn, HUTCH_CHAN_REFUSED_BUSY, "out of memory");
		goto out;
	}
	if (recv_by(conn, req, len, &start, req_timeout_ms) < 0)
		goto out;
	if (agent_chan_parse_req(req, len, bin_dir, &r, &why) < 0) {
		send_refused(conn, HUTCH_CHAN_REFUSED_BAD, "%s", why);
		goto out;
	}
	h->tty = r.flags & HUTCH_CHAN_F_TTY;
	h->ibuf = malloc(HUTCH_CHAN_FRAME_MAX);
	h->obuf = malloc(HUTCH_CHAN_HEAD + CHAN_OUT_CHUNK);
	if (!h->ibuf || !h->obuf) {
		send_refused(conn, HUTCH_CHAN_REFUSED_BUSY, "out of memory");
		agent_chan_req_free(&r);
		goto out;
	}
	if (start_process(h, &r) == 0) {
		/* The request is in the process now: its memory goes
		 * before the relay, which may last. */
		agent_chan_req_free(&r);
		explicit_bzero(req, len);
		free(req);
		req = NULL;
		relay(h);
	}
	agent_chan_req_free(&r);
out:
	/* The request's environment may hold secrets: none stays in a
	 * handler that serves another connection. */
	if (req)
		explicit_bzero(req, len);
	free(req);
	free(h->ibuf);
	free(h->obuf);
	h->ibuf = NULL;
	h->obuf = NULL;
	close_fd(&h->out[1]);
	if (h->in != h->out[0])
		close_fd(&h->in);
	close_fd(&h->out[0]);
	linger_close(conn, h->host_gone ? 0 : CHAN_LINGER_MS);
	return h->child > 0 ? -1 : 0;
}
