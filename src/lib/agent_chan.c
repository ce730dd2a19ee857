/*
 * agent_chan.c - the agent's channel (agent_chan.h)
 *
 * Finding it: the container's inspection gives PID 1's pid (as the
 * engine's host sees it), the hostname, and the host path of the system
 * volume mounted at HUTCH_AGENT_DIR.  The socket is opened below that path
 * without following a symlink and connected through /proc/self/fd, so no
 * name is resolved twice; the peer must be PID 1 before a byte is sent.
 *
 * The sandbox is hostile and shares the socket's directory (mode 01777):
 * a process of the session's user, or of the container's root when the
 * session runs as root, can put a socket, a symlink or anything else at
 * the name, listen on a socket of its own, or fork until a pid it wants
 * comes round (pid_max is small: 32768 on the machines hutch is tested
 * on).  Each check below says which of those it stops.
 *
 * Running: one connection per command.  The agent sends HELLO, hutch a
 * REQ; the agent answers REFUSED (nothing ran: the caller falls back to
 * the engine) or STARTED, then the command's output as Docker's framed
 * stream, then EXIT.  hutch sends the input as STDIN frames, STDIN_END,
 * and a terminal's size as RESIZE.  One poll loop, as http.c's up_loop:
 * deadline and on_deadline, the cancel flags, input read only when poll
 * says so, a terminal's size asked every HUTCH__TICK_MS.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "agent_chan.h"
#include "beneath.h"
#include "buf.h"
#include "common.h"
#include "engine_api.h"
#include "error.h"
#include "http.h"
#include "session_internal.h"
#include "../shared/agent_protocol.h"

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77
#endif
#ifndef PID_FS_MAGIC
#define PID_FS_MAGIC 0x50494446
#endif

/* How long the agent may take to say HELLO: PID 1 forks a handler per
 * connection.  A paused container never answers: then the engine's exec
 * says why (and the session is unpaused by the usual retry). */
#define HELLO_WAIT_MS 3000
/* A control frame's payload (HELLO, STARTED, EXIT, REFUSED). */
#define CTL_MAX 4096
#define CHUNK (256u * 1024u) /* one read, one piece of input */
#define READS_PER_WAKE 16    /* then the input gets its turn */
/* A resize waits while more than one input frame is queued. */
#define PENDING_MAX (CHUNK + HUTCH_CHAN_HEAD)
/* When no channel was found, how long that is believed before the
 * container is inspected again (a long-lived handle; hutch__chan_forget
 * drops it sooner, when the session was brought up again). */
#define NONE_MS 30000

struct hutch__chan {
	int sock;  /* O_PATH of the socket, -1: not found */
	int pidfd; /* PID 1's, opened right after the inspection */
	pid_t pid; /* State.Pid */
	char hostname[256];
	int have_ids; /* uid, gid: HELLO's, the user every command gets */
	uint32_t uid, gid;
	unsigned long long none_until;
};

struct reader {
	unsigned char head[HUTCH_CHAN_HEAD];
	size_t head_len;
	int type;
	uint32_t left; /* payload bytes of this frame still to come */
	char ctl[CTL_MAX];
	size_t ctl_len;
};

struct hutch__chan_call {
	int fd;
	int tty;
	struct reader rd;
	int started, exited, refused, eof, broke;
	int exit_code;
	uint32_t refuse_reason;
	char why[200];
	/* While hutch__chan_exec reads the stream: where output goes. */
	hutch__sink_fn sink;
	void *payload;
	int in_stream;
	int aborted; /* the sink asked to stop */
	int more;    /* the reads stopped before the socket was empty */
	/* CHUNK bytes, malloc'd: not zeroed, so only the pages a read
	 * fills become resident (64 quiet calls at once stay small). */
	char *rbuf;
};

static uint32_t be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static void put32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
}

int hutch__chan_enabled(void)
{
	const char *v = getenv("HUTCH_FAST_PATH");

	return !v || strcmp(v, "0") != 0;
}

/* ---- the cache ---------------------------------------------------------- */

static void chan_reset(struct hutch__chan *c)
{
	if (c->sock >= 0)
		close(c->sock);
	if (c->pidfd >= 0)
		close(c->pidfd);
	c->sock = c->pidfd = -1;
	c->pid = 0;
	c->have_ids = 0;
	c->hostname[0] = '\0';
}

void hutch__chan_free(struct hutch__chan *c)
{
	if (!c)
		return;
	chan_reset(c);
	free(c);
}

static void known_drop(hutch_engine *e, const char *container, pid_t pid);

void hutch__chan_forget(hutch_session *s)
{
	/* The container may have been replaced: what the engine's other
	 * handles knew of it goes too. */
	known_drop(s->engine, s->container, 0);
	if (!s->chan)
		return;
	chan_reset(s->chan);
	s->chan->none_until = 0;
}

/*
 * What every handle of one engine knows: the channels found, so that a new
 * session handle (each batch job, each MCP call, each thread) does not
 * inspect its container again.  Shared by the engine's threads under
 * `lock`; each entry owns its descriptors, and a handle is given
 * duplicates of them, so an entry dropped or evicted under one thread
 * never closes what another is using.  Nothing in it is trusted more than
 * in a handle's own cache: every connection is checked against the pid
 * and pidfd as if just found (chan_connect), and a stale entry is dropped.
 */
#define KNOWN_MAX 256

struct known {
	char *container;
	struct hutch__chan c;
	unsigned long long used;
};

struct hutch__chan_known {
	pthread_mutex_t lock;
	struct known v[KNOWN_MAX];
	size_t n;
};

static struct hutch__chan_known *known_of(hutch_engine *e)
{
	struct hutch__chan_known *k;

	pthread_mutex_lock(&e->lock);
	if (!e->chan_known && (k = calloc(1, sizeof(*k)))) {
		pthread_mutex_init(&k->lock, NULL);
		e->chan_known = k;
	}
	k = e->chan_known;
	pthread_mutex_unlock(&e->lock);
	return k;
}

static void known_clear(struct known *en)
{
	free(en->container);
	en->container = NULL;
	chan_reset(&en->c);
}

void hutch__chan_known_free(hutch_engine *e)
{
	struct hutch__chan_known *k = e->chan_known;

	if (!k)
		return;
	for (size_t i = 0; i < k->n; i++)
		known_clear(&k->v[i]);
	pthread_mutex_destroy(&k->lock);
	free(k);
	e->chan_known = NULL;
}

/* dst (reset) gets src's facts and duplicates of its descriptors: 0, -1. */
static int chan_copy(struct hutch__chan *dst, const struct hutch__chan *src)
{
	chan_reset(dst);
	dst->sock = fcntl(src->sock, F_DUPFD_CLOEXEC, 3);
	dst->pidfd = fcntl(src->pidfd, F_DUPFD_CLOEXEC, 3);
	if (dst->sock < 0 || dst->pidfd < 0) {
		chan_reset(dst);
		return -1;
	}
	dst->pid = src->pid;
	memcpy(dst->hostname, src->hostname, sizeof(dst->hostname));
	dst->have_ids = src->have_ids;
	dst->uid = src->uid;
	dst->gid = src->gid;
	return 0;
}

static struct known *known_find(struct hutch__chan_known *k,
				const char *container)
{
	for (size_t i = 0; i < k->n; i++)
		if (strcmp(k->v[i].container, container) == 0)
			return &k->v[i];
	return NULL;
}

/* A handle's cache from the engine's: 0 when it knew the container. */
static int known_get(hutch_engine *e, const char *container,
		     struct hutch__chan *c)
{
	struct hutch__chan_known *k = known_of(e);
	struct known *en;
	int rc = -1;

	if (!k)
		return -1;
	pthread_mutex_lock(&k->lock);
	en = known_find(k, container);
	if (en && chan_copy(c, &en->c) == 0) {
		en->used = hutch__now_ms();
		rc = 0;
	}
	pthread_mutex_unlock(&k->lock);
	return rc;
}

/* Remember what a handle found and checked (the least recently used entry
 * goes when the table is full). */
static void known_put(hutch_engine *e, const char *container,
		      const struct hutch__chan *c)
{
	struct hutch__chan_known *k = known_of(e);
	struct known *en, fresh = { 0 };

	if (!k)
		return;
	fresh.c.sock = fresh.c.pidfd = -1;
	if (!(fresh.container = strdup(container)) ||
	    chan_copy(&fresh.c, c) < 0) {
		known_clear(&fresh);
		return;
	}
	fresh.used = hutch__now_ms();
	pthread_mutex_lock(&k->lock);
	en = known_find(k, container);
	if (!en && k->n < KNOWN_MAX)
		en = &k->v[k->n++];
	if (!en) {
		en = &k->v[0];
		for (size_t i = 1; i < k->n; i++)
			if (k->v[i].used < en->used)
				en = &k->v[i];
	}
	if (en->container)
		known_clear(en);
	*en = fresh;
	pthread_mutex_unlock(&k->lock);
}

/* Forget `container` (pid 0: whatever was known; else only that pid's:
 * another thread may have put a newer one meanwhile). */
static void known_drop(hutch_engine *e, const char *container, pid_t pid)
{
	struct hutch__chan_known *k = known_of(e);
	struct known *en;

	if (!k)
		return;
	pthread_mutex_lock(&k->lock);
	en = known_find(k, container);
	if (en && (!pid || en->c.pid == pid)) {
		known_clear(en);
		*en = k->v[--k->n];
		k->v[k->n] = (struct known){ .c = { .sock = -1, .pidfd = -1 } };
	}
	pthread_mutex_unlock(&k->lock);
}

static struct hutch__chan *chan_new(void)
{
	struct hutch__chan *c = calloc(1, sizeof(*c));

	if (c)
		c->sock = c->pidfd = -1;
	return c;
}

/* ---- finding the socket ---------------------------------------------------- */

/* 0 with c filled, or -1 with why (no channel). */
static int chan_find(hutch_engine *e, const char *container,
		     struct hutch__chan *c, char *why, size_t whysz)
{
	struct hutch__container_agent_info *info = malloc(sizeof(*info));
	hutch_error *lerr = NULL;
	struct stat st;
	int dir = -1, chan = -1, sock = -1, pidfd = -1, rc = -1;

	chan_reset(c);
	if (!info) {
		snprintf(why, whysz, "out of memory");
		return -1;
	}
	if (hutch__api_container_agent_info(e, container, info,
					    "inspect the session's container",
					    &lerr) < 0) {
		snprintf(why, whysz, "%s", hutch_error_message(lerr));
		hutch_error_free(lerr);
		goto out;
	}
	if (!info->running || info->pid <= 1 || !info->agent_source[0] ||
	    !info->hostname[0]) {
		snprintf(why, whysz,
			 info->running ?
				 "the engine gives no PID 1, hostname or "
				 "agent volume for the container" :
				 "the container does not run");
		goto out;
	}
	/* Held from now on: while this process lives, no other can get its
	 * number, so a pid that matches later is this process's (checked at
	 * every connection: hutch__chan_verify_peer).  Taken right after the
	 * inspection; had PID 1 ended in between, its container ended with
	 * it, and with it every process of the sandbox that could listen. */
	pidfd = (int)syscall(SYS_pidfd_open, (pid_t)info->pid, 0);
	if (pidfd < 0) {
		snprintf(why, whysz, "PID 1 (%ld) cannot be held: %s",
			 info->pid, strerror(errno));
		goto out;
	}
	/* The engine's host path of the volume: its parents are the
	 * engine's, not the sandbox's, which sees only what is below it.
	 * (A remote engine behind a forwarded socket gives a path of another
	 * machine: not there, or not a socket below it, or no such pid.) */
	dir = open(info->agent_source,
		   O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dir < 0) {
		snprintf(why, whysz, "the agent's volume at %.200s: %s",
			 info->agent_source, strerror(errno));
		goto out;
	}
	/* Below it the sandbox writes.  No symlink on the way (a sandbox
	 * that swaps "chan" or the socket's name for a link to a host
	 * socket, the engine's say, gets refused), and the socket itself is
	 * taken as an O_PATH descriptor: connect() goes through it, never
	 * through the name again. */
	chan = hutch__open_beneath(dir, HUTCH_CHAN_DIR, O_PATH);
	if (chan >= 0)
		sock = openat(chan, HUTCH_CHAN_SOCK,
			      O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (sock < 0) {
		snprintf(why, whysz, "%s: %s", HUTCH_CHAN_PATH,
			 strerror(errno));
		goto out;
	}
	/* O_NOFOLLOW with O_PATH opens a symlink itself: refused here. */
	if (fstat(sock, &st) < 0 || !S_ISSOCK(st.st_mode)) {
		snprintf(why, whysz, "%s is not a socket", HUTCH_CHAN_PATH);
		goto out;
	}
	c->sock = sock;
	c->pidfd = pidfd;
	c->pid = (pid_t)info->pid;
	snprintf(c->hostname, sizeof(c->hostname), "%s", info->hostname);
	sock = pidfd = -1;
	rc = 0;
out:
	if (sock >= 0)
		close(sock);
	if (chan >= 0)
		close(chan);
	if (dir >= 0)
		close(dir);
	if (pidfd >= 0)
		close(pidfd);
	free(info);
	return rc;
}

/* ---- the peer ------------------------------------------------------------ */

/* A pidfd's process has not ended (a pidfd polls readable once it has). */
static int alive(int pidfd)
{
	struct pollfd p = { .fd = pidfd, .events = POLLIN };

	return poll(&p, 1, 0) == 0;
}

/* The pid a pidfd holds, in this process's namespace (its fdinfo), or -1. */
static long pidfd_pid(int pidfd)
{
	char path[64], buf[1024], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", pidfd);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	p = strstr(buf, "\nPid:");
	if (!p)
		return -1;
	return strtol(p + 5, NULL, 10);
}

/* Two pidfds hold the same process: on pidfs (Linux 6.9+) every process
 * has an inode of its own; before it, all pidfds share one, and the pid
 * (pidfd_pid) is what tells. */
static int same_process(int a, int b)
{
	struct statfs fa, fb;
	struct stat sa, sb;

	if (fstatfs(a, &fa) < 0 || fstatfs(b, &fb) < 0)
		return 0;
	if ((unsigned long)fa.f_type != PID_FS_MAGIC ||
	    (unsigned long)fb.f_type != PID_FS_MAGIC)
		return 1;
	return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 &&
	       sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

int hutch__chan_verify_peer(int fd, pid_t pid, int pidfd, char *why,
			    size_t whysz)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	int peer = -1, ok;

	/* The process that listens on the socket we reached (the kernel's
	 * record of who called listen()).  A sandbox process that replaced
	 * the socket with its own, or listens on one it made, is another
	 * process: its pid is not PID 1's. */
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 ||
	    len != sizeof(cred)) {
		snprintf(why, whysz, "SO_PEERCRED: %s", strerror(errno));
		return -1;
	}
	if (cred.pid != pid) {
		snprintf(why, whysz,
			 "the socket's listener is pid %ld, not the "
			 "container's PID 1 (%ld)",
			 (long)cred.pid, (long)pid);
		return -1;
	}
	/* Numbers are reused: PID 1 as the engine named it still holds its
	 * number (our pidfd of it has not ended), so no process that cycled
	 * pids can hold it now. */
	if (!alive(pidfd)) {
		snprintf(why, whysz, "the container's PID 1 (%ld) has ended",
			 (long)pid);
		return -1;
	}
	/* SO_PEERCRED keeps the listener's number even after it ended (and
	 * the number went to someone else): where the kernel has it (6.5+),
	 * the listener's own process must still be there, and be the one
	 * our pidfd holds. */
	len = sizeof(peer);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &peer, &len) < 0) {
		if (errno == ENOPROTOOPT)
			return 0; /* older kernel: the checks above */
		snprintf(why, whysz, "SO_PEERPIDFD: %s", strerror(errno));
		return -1;
	}
	ok = alive(peer) && pidfd_pid(peer) == (long)pid &&
	     same_process(peer, pidfd);
	close(peer);
	if (!ok) {
		snprintf(why, whysz,
			 "the socket's listener is not the container's PID 1 "
			 "(%ld) any more",
			 (long)pid);
		return -1;
	}
	return 0;
}

/* Wait until fd is readable, or the deadline: 1, 0 past it, -1. */
static int wait_in(int fd, unsigned long long deadline)
{
	unsigned long long now = hutch__now_ms();
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int n;

	if (now >= deadline)
		return 0;
	n = poll(&p, 1, (int)(deadline - now));
	if (n < 0 && errno == EINTR)
		return 1;
	return n < 0 ? -1 : n > 0;
}

/* Exactly len bytes (never more: what follows stays in the socket). */
static int read_exact(int fd, void *buf, size_t len,
		      unsigned long long deadline, char *why, size_t whysz)
{
	size_t off = 0;
	ssize_t n;

	while (off < len) {
		n = recv(fd, (char *)buf + off, len - off, MSG_DONTWAIT);
		if (n > 0) {
			off += (size_t)n;
			continue;
		}
		if (n == 0) {
			snprintf(why, whysz, "the agent closed the channel");
			return -1;
		}
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
			snprintf(why, whysz, "recv: %s", strerror(errno));
			return -1;
		}
		if (wait_in(fd, deadline) <= 0) {
			snprintf(why, whysz, "no HELLO from the agent");
			return -1;
		}
	}
	return 0;
}

int hutch__chan_read_hello(int fd, unsigned long long deadline_ms,
			   struct hutch__chan_hello *hello, char *why,
			   size_t whysz)
{
	unsigned char head[HUTCH_CHAN_HEAD], body[16 + 256];
	uint32_t len;
	size_t name;

	if (read_exact(fd, head, sizeof(head), deadline_ms, why, whysz) < 0)
		return -1;
	len = be32(head + 4);
	if (head[0] != HUTCH_CHAN_HELLO || head[1] || head[2] || head[3] ||
	    len < 16 || len > sizeof(body)) {
		snprintf(why, whysz, "the agent's first frame is not a HELLO");
		return -1;
	}
	if (read_exact(fd, body, len, deadline_ms, why, whysz) < 0)
		return -1;
	hello->version = be32(body);
	hello->uid = be32(body + 4);
	hello->gid = be32(body + 8);
	hello->busy = be32(body + 12);
	name = len - 16;
	/* A trailing NUL is allowed, none inside. */
	if (name && body[16 + name - 1] == '\0')
		name--;
	if (name >= sizeof(hello->hostname) || memchr(body + 16, '\0', name)) {
		snprintf(why, whysz, "the agent's HELLO is malformed");
		return -1;
	}
	memcpy(hello->hostname, body + 16, name);
	hello->hostname[name] = '\0';
	return 0;
}

/* connect() to the cached socket and check its peer: the connected fd,
 * -1 (no channel now), or -2 (stale: the container's PID 1 or socket is
 * not the one found: look again). */
static int chan_connect(struct hutch__chan *c, char *why, size_t whysz)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	if (fd < 0) {
		snprintf(why, whysz, "socket: %s", strerror(errno));
		return -1;
	}
	/* The inode opened in chan_find, by its descriptor: a name the
	 * sandbox swapped since then is not looked at. */
	snprintf(addr.sun_path, sizeof(addr.sun_path), "/proc/self/fd/%d",
		 c->sock);
	if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
		int e = errno;

		close(fd);
		snprintf(why, whysz, "connect: %s", strerror(e));
		/* No one listens on that inode: PID 1 made a new socket
		 * (the container started again), or is gone.  EAGAIN: its
		 * backlog is full; the engine's exec does not wait on it. */
		return e == ECONNREFUSED || e == ENOENT ? -2 : -1;
	}
	/* Nothing is sent before this. */
	if (hutch__chan_verify_peer(fd, c->pid, c->pidfd, why, whysz) < 0) {
		close(fd);
		return -2;
	}
	return fd;
}

/* ---- reading frames ------------------------------------------------------ */

static void call_broke(struct hutch__chan_call *c, const char *why)
{
	if (!c->broke)
		snprintf(c->why, sizeof(c->why), "%s", why);
	c->broke = 1;
}

static void deliver(struct hutch__chan_call *c, const char *data, size_t len)
{
	if (!len || !c->sink || c->aborted)
		return;
	if (c->sink(data, len, c->payload))
		c->aborted = 1;
}

static int output_type(int type)
{
	return type == HUTCH_CHAN_STDOUT || type == HUTCH_CHAN_STDERR;
}

/* A control frame is complete in rd->ctl. */
static void control(struct hutch__chan_call *c)
{
	struct reader *rd = &c->rd;
	const unsigned char *p = (const unsigned char *)rd->ctl;

	switch (rd->type) {
	case HUTCH_CHAN_STARTED:
		if (rd->ctl_len != 4 || c->started) {
			call_broke(c, "a misplaced STARTED from the agent");
			return;
		}
		c->started = 1;
		return;
	case HUTCH_CHAN_EXIT:
		if (rd->ctl_len != 4 || !c->started) {
			call_broke(c, "a misplaced EXIT from the agent");
			return;
		}
		c->exited = 1;
		c->exit_code = (int)(int32_t)be32(p);
		return;
	case HUTCH_CHAN_REFUSED:
		if (rd->ctl_len < 4 || c->started) {
			call_broke(c, "a misplaced REFUSED from the agent");
			return;
		}
		c->refused = 1;
		c->refuse_reason = be32(p);
		snprintf(c->why, sizeof(c->why), "the agent refused (%u): %.*s",
			 (unsigned int)c->refuse_reason,
			 (int)(rd->ctl_len - 4 > 150 ? 150 : rd->ctl_len - 4),
			 rd->ctl + 4);
		return;
	default:
		call_broke(c, "an unknown frame from the agent");
	}
}

/* Take bytes the agent sent. */
static void feed(struct hutch__chan_call *c, const char *p, size_t n)
{
	struct reader *rd = &c->rd;

	while (n > 0 && !c->broke && !c->exited && !c->refused) {
		if (rd->head_len < HUTCH_CHAN_HEAD) {
			size_t k = HUTCH_CHAN_HEAD - rd->head_len;

			if (k > n)
				k = n;
			memcpy(rd->head + rd->head_len, p, k);
			rd->head_len += k;
			p += k;
			n -= k;
			if (rd->head_len < HUTCH_CHAN_HEAD)
				return;
			rd->type = rd->head[0];
			rd->left = be32(rd->head + 4);
			rd->ctl_len = 0;
			if (rd->head[1] || rd->head[2] || rd->head[3]) {
				call_broke(c,
					   "a malformed frame from the agent");
				return;
			}
			if (output_type(rd->type)) {
				if (!c->started ||
				    rd->left > HUTCH_CHAN_FRAME_MAX) {
					call_broke(c, "output from the agent "
						      "before STARTED, or too "
						      "large a frame");
					return;
				}
				/* The frame head is Docker's: passed on as
				 * the engine's stream would carry it; a
				 * terminal's stream has none. */
				if (!c->tty)
					deliver(c, (const char *)rd->head,
						HUTCH_CHAN_HEAD);
			} else if (rd->left > CTL_MAX) {
				call_broke(c,
					   "too large a frame from the agent");
				return;
			}
		} else {
			size_t k = rd->left < n ? rd->left : n;

			if (output_type(rd->type)) {
				deliver(c, p, k);
			} else {
				memcpy(rd->ctl + rd->ctl_len, p, k);
				rd->ctl_len += k;
			}
			rd->left -= (uint32_t)k;
			p += k;
			n -= k;
		}
		if (rd->left == 0) {
			if (!output_type(rd->type))
				control(c);
			rd->head_len = 0;
		}
	}
}

/* Read what the socket has (at most READS_PER_WAKE pieces). */
static void pump(struct hutch__chan_call *c)
{
	ssize_t n;

	c->more = 0;
	for (int i = 0; i < READS_PER_WAKE; i++) {
		if (c->eof || c->broke || c->exited || c->refused || c->aborted)
			return;
		n = recv(c->fd, c->rbuf, CHUNK, MSG_DONTWAIT);
		if (n > 0) {
			feed(c, c->rbuf, (size_t)n);
			continue;
		}
		if (n == 0 || errno == ECONNRESET) {
			/* A reset is the agent's close while input it did
			 * not read was still in its socket: what it sent
			 * before was read first. */
			c->eof = 1;
			return;
		}
		if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
			return;
		call_broke(c, strerror(errno));
		return;
	}
	c->more = 1;
}

int hutch__chan_state(struct hutch__chan_call *c)
{
	if (!c)
		return HUTCH__CHAN_UNSURE;
	pump(c);
	if (c->exited)
		return HUTCH__CHAN_ENDED;
	if (c->eof || c->broke || c->refused)
		return HUTCH__CHAN_UNSURE;
	return HUTCH__CHAN_RUNS;
}

int hutch__chan_wait_exit(struct hutch__chan_call *c,
			  unsigned long long timeout_ms, int *code,
			  hutch_error **err)
{
	unsigned long long until = hutch__now_ms() + timeout_ms;

	if (!c)
		return hutch__error_set(err, HUTCH_EFAILED,
					"no connection to the agent");
	/* No one reads the output any more. */
	c->sink = NULL;
	for (;;) {
		pump(c);
		if (c->exited) {
			*code = c->exit_code;
			return 1;
		}
		if (c->eof || c->broke || c->refused)
			return hutch__error_set(
				err, HUTCH_EFAILED,
				"the agent's channel ended without the "
				"command's exit status%s%s",
				c->broke ? ": " : "", c->broke ? c->why : "");
		if (!c->more && wait_in(c->fd, until) == 0)
			return hutch__error_set(
				err, HUTCH_ETIMEOUT,
				"the command's exit status did not come "
				"within %llu ms",
				timeout_ms);
	}
}

void hutch__chan_call_close(struct hutch__chan_call *c)
{
	if (!c)
		return;
	if (c->fd >= 0)
		close(c->fd);
	free(c->rbuf);
	free(c);
}

/* ---- running a command ------------------------------------------------------ */

/* The numeric "UID:GID" hutch gives an exec (exec.c), or NULL for the
 * container's own user, which is PID 1's: the agent runs every command
 * as itself, having no capability to become another user. */
static int user_ok(const char *user, uint32_t uid, uint32_t gid)
{
	unsigned long u, g;
	char *end;

	if (!user)
		return 1;
	errno = 0;
	u = strtoul(user, &end, 10);
	if (end == user || *end != ':' || errno)
		return 0;
	g = strtoul(end + 1, &end, 10);
	if (*end || errno || end[-1] == ':')
		return 0;
	return u == uid && g == gid;
}

/* The agent runs its commands at "/"; exec.c asks for nothing else. */
static int workdir_ok(const struct hutch__exec_spec *spec)
{
	return spec->workdir && strcmp(spec->workdir, "/") == 0;
}

struct loop {
	struct hutch__chan_call *c;
	const struct hutch__exec_stream *st;
	hutch_buf out; /* to send, from `off` */
	size_t off;
	int req_sent;
	int in_end;	/* the input ended (or is dropped) */
	int end_sent;	/* STDIN_END queued */
	int fd_ready;	/* poll said input_fd can be read */
	int want_write; /* the socket was full */
	int wr_closed;	/* the agent takes nothing more */
	const char *in; /* what is left of st->input */
	size_t in_left;
	unsigned long long taken;
	int size_sent;
	unsigned short rows, cols;
	char *inbuf; /* CHUNK bytes, with an input fd only (as rbuf) */
};

static void loop_free(struct loop *l)
{
	if (!l)
		return;
	hutch__buf_free(&l->out);
	free(l->inbuf);
	free(l);
}

static int queue_frame(struct loop *l, int type, const void *data, size_t len)
{
	unsigned char head[HUTCH_CHAN_HEAD] = { (unsigned char)type };

	put32(head + 4, (uint32_t)len);
	if (l->off == l->out.len) {
		hutch__buf_reset(&l->out);
		l->off = 0;
	}
	if (hutch__buf_add(&l->out, head, sizeof(head)) < 0 ||
	    hutch__buf_add(&l->out, data, len) < 0)
		return -1;
	return 0;
}

/* REQ: flags, rows, cols, argc, envc, then the strings. */
static int queue_req(struct loop *l, const struct hutch__exec_spec *spec)
{
	const struct hutch__exec_stream *st = l->st;
	unsigned char fixed[16];
	unsigned short rows = 24, cols = 80;
	uint32_t flags = 0;
	size_t len = sizeof(fixed);
	char *req, *p;
	int rc;

	for (size_t i = 0; i < spec->argc; i++)
		len += strlen(spec->argv[i]) + 1;
	for (size_t i = 0; i < spec->env_count; i++)
		len += strlen(spec->env[i]) + 1;
	if (len > HUTCH_CHAN_REQ_MAX || spec->argc == 0)
		return 1; /* too large for the channel: the engine's exec */
	if (spec->attach_stdin)
		flags |= HUTCH_CHAN_F_STDIN;
	if (spec->tty) {
		flags |= HUTCH_CHAN_F_TTY;
		if (st->tty_size &&
		    (st->tty_size(&rows, &cols, st->tty_payload) < 0 || !rows ||
		     !cols)) {
			rows = 24;
			cols = 80;
		}
	}
	put32(fixed, flags);
	fixed[4] = (unsigned char)(rows >> 8);
	fixed[5] = (unsigned char)rows;
	fixed[6] = (unsigned char)(cols >> 8);
	fixed[7] = (unsigned char)cols;
	put32(fixed + 8, (uint32_t)spec->argc);
	put32(fixed + 12, (uint32_t)spec->env_count);
	req = malloc(len);
	if (!req)
		return -1;
	memcpy(req, fixed, sizeof(fixed));
	p = req + sizeof(fixed);
	for (size_t i = 0; i < spec->argc; i++) {
		size_t n = strlen(spec->argv[i]) + 1;

		memcpy(p, spec->argv[i], n);
		p += n;
	}
	for (size_t i = 0; i < spec->env_count; i++) {
		size_t n = strlen(spec->env[i]) + 1;

		memcpy(p, spec->env[i], n);
		p += n;
	}
	rc = queue_frame(l, HUTCH_CHAN_REQ, req, len);
	free(req);
	return rc;
}

/* The terminal's size as the caller tells it, sent on when it changed
 * (as engine_api_exec.c's resize_tick). */
static void tick(struct loop *l)
{
	const struct hutch__exec_stream *st = l->st;
	unsigned short rows = 24, cols = 80;
	unsigned char p[4];

	if (st->tty_size && st->tty_size(&rows, &cols, st->tty_payload) < 0) {
		if (l->size_sent)
			return; /* unknown now: keep what it had */
		rows = 24;
		cols = 80;
	}
	if (rows == 0 || cols == 0 ||
	    (l->size_sent && rows == l->rows && cols == l->cols))
		return;
	/* Input fills the queue: the next tick tries again. */
	if (l->wr_closed || l->out.len - l->off > PENDING_MAX)
		return;
	p[0] = (unsigned char)(rows >> 8);
	p[1] = (unsigned char)rows;
	p[2] = (unsigned char)(cols >> 8);
	p[3] = (unsigned char)cols;
	if (queue_frame(l, HUTCH_CHAN_RESIZE, p, sizeof(p)) == 0) {
		l->rows = rows;
		l->cols = cols;
		l->size_sent = 1;
	}
}

/* The next piece of input, once what was queued has gone. */
static void next_input(struct loop *l)
{
	const struct hutch__exec_stream *st = l->st;
	ssize_t r;

	if (l->off < l->out.len || l->wr_closed || l->end_sent ||
	    !l->c->started)
		return;
	if (l->in_end) {
		/* The command's end of file; a terminal has none but its
		 * own (a ^D in the input). */
		if (!l->c->tty)
			queue_frame(l, HUTCH_CHAN_STDIN_END, NULL, 0);
		l->end_sent = 1;
		return;
	}
	if (st->input) {
		size_t k = l->in_left < CHUNK ? l->in_left : CHUNK;

		/* All of a buffer counts as taken once it began to go. */
		l->taken = st->input_len;
		if (k && queue_frame(l, HUTCH_CHAN_STDIN, l->in, k) < 0)
			return;
		l->in += k;
		l->in_left -= k;
		if (!l->in_left)
			l->in_end = 1;
		return;
	}
	if (st->input_fd < 0 || !l->fd_ready)
		return;
	l->fd_ready = 0;
	/* Only after poll said it is readable: a blocking fd does not
	 * block here. */
	r = read(st->input_fd, l->inbuf, CHUNK);
	if (r < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	/* A read error (EIO: a terminal hung up) ends the input as its end
	 * of file does. */
	if (r <= 0) {
		l->in_end = 1;
		return;
	}
	l->taken += (unsigned long long)r;
	queue_frame(l, HUTCH_CHAN_STDIN, l->inbuf, (size_t)r);
}

/* Send what is queued without ever waiting for the socket. */
static void write_out(struct loop *l)
{
	ssize_t n;

	l->want_write = 0;
	for (int i = 0; i < READS_PER_WAKE && !l->wr_closed; i++) {
		next_input(l);
		if (l->off == l->out.len)
			return;
		/* MSG_NOSIGNAL: an agent gone is EPIPE, never a SIGPIPE. */
		n = send(l->c->fd, l->out.data + l->off, l->out.len - l->off,
			 MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK ||
			      errno == EINTR)) {
			l->want_write = 1;
			return;
		}
		if (n <= 0) {
			/* The agent takes no more: the command ended, or
			 * the connection is going; the reads say which.
			 * The rest of the input is dropped. */
			l->wr_closed = 1;
			l->in_end = 1;
			return;
		}
		l->off += (size_t)n;
		if (l->off == l->out.len && !l->req_sent)
			l->req_sent = 1;
	}
}

static int raised(const hutch_cancel *c)
{
	return c && __atomic_load_n(&c->raised, __ATOMIC_SEQ_CST);
}

enum {
	LOOP_DONE,
	LOOP_TIMEOUT,
	LOOP_CANCELLED,
	LOOP_FAILED
};

static int run_loop(struct loop *l)
{
	const struct hutch__exec_stream *st = l->st;
	struct hutch__chan_call *c = l->c;
	unsigned long long now, deadline = st->deadline_ms, next, last_tick = 0;
	struct pollfd p[2];
	int timeout, nfds;

	l->in_end = !st->input && st->input_fd < 0;
	for (;;) {
		if (raised(st->cancel) || raised(st->cancel2))
			return LOOP_CANCELLED;
		now = hutch__now_ms();
		if (deadline && now >= deadline) {
			/* The connection stays open meanwhile: what the
			 * agent sends waits in the socket (or is read by
			 * on_deadline's questions, hutch__chan_state). */
			next = st->on_deadline ? st->on_deadline(st->payload) :
						 0;
			if (next <= hutch__now_ms())
				return LOOP_TIMEOUT;
			deadline = next;
			continue;
		}
		pump(c);
		if (c->exited || c->refused || c->aborted || c->eof)
			return LOOP_DONE;
		if (c->broke)
			return LOOP_FAILED;
		/* Before any input: a terminal has its size before the
		 * command reads its first line. */
		if (c->started && c->tty &&
		    (!l->size_sent || now - last_tick >= HUTCH__TICK_MS)) {
			tick(l);
			last_tick = now;
		}
		write_out(l);
		timeout = hutch__loop_timeout(
			deadline, st->cancel || st->cancel2 || c->tty, c->more);
		p[0] = (struct pollfd){ .fd = c->fd, .events = POLLIN };
		if (l->want_write)
			p[0].events |= POLLOUT;
		nfds = 1;
		if (c->started && !l->wr_closed && !l->in_end &&
		    l->off == l->out.len && st->input_fd >= 0 && !l->fd_ready) {
			p[1] = (struct pollfd){ .fd = st->input_fd,
						.events = POLLIN };
			nfds = 2;
		}
		if (poll(p, (nfds_t)nfds, timeout) < 0 && errno != EINTR) {
			call_broke(c, strerror(errno));
			return LOOP_FAILED;
		}
		if (nfds == 2 && p[1].revents & POLLNVAL)
			l->in_end = 1; /* closed under us: no more input */
		else if (nfds == 2 && p[1].revents)
			l->fd_ready = 1; /* readable, or its end */
	}
}

int hutch__chan_exec_on(int fd, const struct hutch__chan_hello *hello,
			const struct hutch__exec_spec *spec,
			const struct hutch__exec_stream *stream,
			struct hutch__chan_call **call, int *streamed,
			const char *what, hutch_error **err)
{
	struct hutch__chan_call *c;
	struct loop *l = NULL;
	int rc, how;

	*call = NULL;
	*streamed = 0;
	if (stream->input_taken)
		*stream->input_taken = 0;
	if (!user_ok(spec->user, hello->uid, hello->gid) || !workdir_ok(spec)) {
		close(fd);
		return HUTCH__CHAN_UNAVAILABLE;
	}
	c = calloc(1, sizeof(*c));
	l = calloc(1, sizeof(*l));
	if (c) {
		c->fd = fd; /* closed with c from here on */
		c->rbuf = malloc(CHUNK);
	}
	if (l && stream->input_fd >= 0)
		l->inbuf = malloc(CHUNK);
	if (!c || !l || !c->rbuf || (stream->input_fd >= 0 && !l->inbuf)) {
		if (!c)
			close(fd);
		hutch__chan_call_close(c);
		loop_free(l);
		return hutch__error_oom(err);
	}
	c->tty = spec->tty;
	c->sink = stream->sink;
	c->payload = stream->payload;
	c->in_stream = 1;
	l->c = c;
	l->st = stream;
	l->out = (hutch_buf)HUTCH_BUF_INIT(HUTCH_CHAN_REQ_MAX +
					   2 * HUTCH_CHAN_HEAD + CHUNK);
	l->in = stream->input;
	l->in_left = stream->input ? stream->input_len : 0;
	/* Without stdin the agent gives the command /dev/null: no end of
	 * file to send. */
	l->end_sent = !spec->attach_stdin;
	rc = queue_req(l, spec);
	if (rc != 0) {
		loop_free(l);
		hutch__chan_call_close(c);
		return rc > 0 ? HUTCH__CHAN_UNAVAILABLE : hutch__error_oom(err);
	}
	/* The caller's already while the stream is read: on_deadline asks
	 * it how the command is doing (hutch__chan_state). */
	*call = c;
	how = run_loop(l);
	c->sink = NULL;
	c->in_stream = 0;
	if (stream->input_taken)
		*stream->input_taken = l->taken;
	/* Nothing ran: REFUSED before STARTED, or the connection ended
	 * before the whole request was sent (the agent runs nothing on a
	 * part of one). */
	if (!c->started &&
	    (c->refused || (!l->req_sent && (c->eof || c->broke)))) {
		loop_free(l);
		*call = NULL;
		hutch__chan_call_close(c);
		return HUTCH__CHAN_UNAVAILABLE;
	}
	/* Stopped (cancel, deadline) before the whole request went: the
	 * agent runs nothing on a part of one, and is told so at once, so
	 * that the state asked next is the connection's end, not a command
	 * that runs. */
	if (!l->req_sent && !c->started)
		shutdown(c->fd, SHUT_RDWR);
	/* The request went: the command may have started even when the
	 * connection broke before the agent said so. */
	*streamed = c->started || l->req_sent;
	switch (how) {
	case LOOP_CANCELLED:
		rc = hutch__error_set(err, HUTCH_ECANCELLED, "cancelled");
		break;
	case LOOP_TIMEOUT:
		rc = hutch__error_set(err, HUTCH_ETIMEOUT,
				      "%s: deadline passed", what);
		break;
	case LOOP_FAILED:
		rc = hutch__error_set(err, HUTCH_EFAILED,
				      "%s: the agent's channel: %s", what,
				      c->why);
		break;
	default:
		rc = 0;
		if (!c->started && !c->aborted)
			rc = hutch__error_set(
				err, HUTCH_EFAILED,
				"%s: the agent's channel closed before the "
				"command started",
				what);
	}
	loop_free(l);
	return rc;
}

/* ---- the whole way ---------------------------------------------------------- */

static int engine_local(hutch_engine *e)
{
	const char *url = hutch_engine_url(e);

	/* Only a unix socket's engine is on this host, where the volume's
	 * path and PID 1's pid mean what they say. */
	return url && strncmp(url, "unix://", 7) == 0;
}

/* A connection to c's PID 1 with its HELLO read and checked: the fd, or
 * -1 (no channel), with one new look at the container when what was
 * found is stale. */
static int chan_open(hutch_engine *e, const char *container,
		     struct hutch__chan *c, const char *user,
		     struct hutch__chan_hello *hello, char *why, size_t whysz)
{
	int fd, known = 0;

	for (int attempt = 0; attempt < 2; attempt++) {
		if (c->sock < 0 && attempt == 0 &&
		    known_get(e, container, c) == 0) {
			known = 1;
		} else if (c->sock < 0) {
			known = 0;
			if (hutch__now_ms() < c->none_until) {
				snprintf(why, whysz, "none found lately");
				return -1;
			}
			if (chan_find(e, container, c, why, whysz) < 0) {
				c->none_until = hutch__now_ms() + NONE_MS;
				return -1;
			}
		}
		/* A user the agent is not: the engine's exec, without a
		 * connection for nothing. */
		if (c->have_ids && !user_ok(user, c->uid, c->gid)) {
			snprintf(why, whysz, "another user");
			return -1;
		}
		fd = chan_connect(c, why, whysz);
		if (fd == -2) {
			known_drop(e, container, c->pid);
			chan_reset(c);
			continue;
		}
		if (fd < 0)
			return -1;
		if (hutch__chan_read_hello(fd, hutch__now_ms() + HELLO_WAIT_MS,
					   hello, why, whysz) < 0) {
			close(fd);
			return -1;
		}
		/* Another agent than this hutch speaks to: the engine's exec. */
		if (hello->version != HUTCH_CHAN_VERSION) {
			snprintf(why, whysz, "the agent speaks version %u",
				 (unsigned int)hello->version);
			close(fd);
			return -1;
		}
		/* The same name on two engines (or a container replaced
		 * between the inspection and now) is told apart by its
		 * hostname, which is the container's own. */
		if (strcmp(hello->hostname, c->hostname) != 0) {
			snprintf(why, whysz,
				 "the agent's hostname is not the container's");
			close(fd);
			known_drop(e, container, c->pid);
			chan_reset(c);
			return -1;
		}
		c->uid = hello->uid;
		c->gid = hello->gid;
		c->have_ids = 1;
		/* Checked as a fresh find is: the engine's other handles may
		 * start from it (each of their connections checked again). */
		if (!known)
			known_put(e, container, c);
		return fd;
	}
	return -1;
}

int hutch__chan_exec(hutch_session *s, const struct hutch__exec_spec *spec,
		     const struct hutch__exec_stream *stream,
		     struct hutch__chan_call **call, int *streamed,
		     const char *what, hutch_error **err)
{
	struct hutch__chan_hello hello;
	char why[256];
	int fd;

	*call = NULL;
	*streamed = 0;
	if (!hutch__chan_enabled() || !engine_local(s->engine) ||
	    !workdir_ok(spec))
		return HUTCH__CHAN_UNAVAILABLE;
	if (!s->chan && !(s->chan = chan_new()))
		return hutch__error_oom(err);
	fd = chan_open(s->engine, s->container, s->chan, spec->user, &hello,
		       why, sizeof(why));
	if (fd < 0)
		return HUTCH__CHAN_UNAVAILABLE;
	return hutch__chan_exec_on(fd, &hello, spec, stream, call, streamed,
				   what, err);
}

int hutch__chan_probe(hutch_engine *e, const char *container,
		      unsigned int *busy, char *why, size_t whysz,
		      hutch_error **err)
{
	struct hutch__chan_hello hello;
	struct hutch__chan *c;
	int fd;

	(void)err;
	if (!hutch__chan_enabled()) {
		snprintf(why, whysz, "off (HUTCH_FAST_PATH=0)");
		return 0;
	}
	if (!engine_local(e)) {
		snprintf(why, whysz, "the engine is not on a unix socket");
		return 0;
	}
	c = chan_new();
	if (!c)
		return hutch__error_oom(err);
	fd = chan_open(e, container, c, NULL, &hello, why, whysz);
	hutch__chan_free(c);
	if (fd < 0)
		return 0;
	close(fd);
	if (busy)
		*busy = hello.busy;
	return 1;
}

int hutch_session_fast_path(hutch_session *s, char *why, size_t whysz,
			    hutch_error **err)
{
	return hutch__chan_probe(s->engine, s->container, NULL, why, whysz,
				 err);
}
