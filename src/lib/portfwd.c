/*
 * portfwd.c - forward host ports into a session (include/hutch/portfwd.h)
 *
 * One thread (the caller's) listens and accepts; each accepted connection
 * gets a thread of its own, which runs the agent's "connect PORT" in the
 * session as an exec with its stdin attached: the connection's bytes go
 * to the exec's stdin (the engine's hijacked start reads the socket
 * itself), and what the exec writes on stdout comes back framed and is
 * written to the socket.  When the client half-closes, the exec's stdin
 * ends and the agent half-closes its side; when the service in the
 * session closes, the agent exits and the stream ends.
 *
 * Bounded: at most max_connections relays (threads, execs, buffers) at
 * once; the caller's thread stops accepting meanwhile, so further clients
 * wait in the kernel's backlog.  A slow client is written to in small
 * steps that watch the cancel, so Ctrl-C never waits on it.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <hutch/portfwd.h>

#include "agent_blob.h"
#include "agent_install.h"
#include "common.h"
#include "demux.h"
#include "engine_api_exec.h"
#include "engine_internal.h"
#include "error.h"
#include "exec_internal.h"
#include "session_internal.h"

/* How often the accepting thread looks at the cancel flag. */
#define POLL_MS 100
/* Each relay's thread: it calls into the transport, nothing deep. */
#define RELAY_STACK (512 * 1024)
#define LISTEN_BACKLOG 128

struct pf;

struct relay {
	struct pf *pf;
	const hutch_portfwd_spec *spec;
	int fd; /* the accepted connection */
	char peer[INET6_ADDRSTRLEN + 8];
	pthread_t thread;
	int done; /* atomic: the thread has finished its work */
	hutch_demux demux;
	int client_gone; /* writing to the client failed */
	/* Raised to end this relay alone: its slot went to a new client
	 * (evict_one).  Read by the transport as its second cancel. */
	struct hutch_cancel stop;
	char errtext[256]; /* the start of what the agent said on stderr */
	size_t errlen;
	struct relay *next;
};

struct pf {
	hutch_session *s;
	const hutch_portfwd_options *o;
	pthread_mutex_t lock; /* the event callback, and `ended` */
	pthread_cond_t ended; /* a relay has finished */
	struct relay *relays; /* the accepting thread's alone */
	unsigned int active;
};

static void emit(struct pf *pf, const hutch_portfwd_event *ev)
{
	if (!pf->o->on_event)
		return;
	pthread_mutex_lock(&pf->lock);
	pf->o->on_event(ev, pf->o->payload);
	pthread_mutex_unlock(&pf->lock);
}

static void emit_conn(struct relay *r, hutch_portfwd_event_kind kind,
		      const char *message)
{
	hutch_portfwd_event ev = {
		.kind = kind,
		.forward = r->spec,
		.peer = r->peer,
		.message = message,
	};

	emit(r->pf, &ev);
}

/* ---- the relay of one connection -------------------------------------- */

/* All of `data` to the client, in steps that each wait at most POLL_MS,
 * so a client that stops reading holds up this relay only until the
 * cancel.  -1 when the client is gone or the cancel came. */
static int to_client(struct relay *r, const char *data, size_t len)
{
	while (len) {
		struct pollfd p = { .fd = r->fd, .events = POLLOUT };
		ssize_t n;

		if (hutch_cancel_raised(r->pf->o->cancel))
			return -1;
		if (poll(&p, 1, POLL_MS) < 0 && errno != EINTR)
			return -1;
		if (!(p.revents & (POLLOUT | POLLERR | POLLHUP)))
			continue;
		/* MSG_NOSIGNAL: a client that went away is an error here,
		 * not a SIGPIPE for the whole process. */
		n = send(r->fd, data, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			return -1;
		}
		data += n;
		len -= (size_t)n;
	}
	return 0;
}

static int on_frame(int stream, const char *data, size_t len, void *p)
{
	struct relay *r = p;

	if (stream == HUTCH_DEMUX_STDOUT) {
		if (to_client(r, data, len) < 0) {
			r->client_gone = 1;
			return 1;
		}
		return 0;
	}
	/* The agent's complaint ("connection refused"), or the engine's:
	 * only its start is kept, for one line of error. */
	if (r->errlen < sizeof(r->errtext) - 1) {
		size_t n = sizeof(r->errtext) - 1 - r->errlen;

		if (n > len)
			n = len;
		memcpy(r->errtext + r->errlen, data, n);
		r->errlen += n;
		r->errtext[r->errlen] = '\0';
	}
	return 0;
}

static int on_stream(const char *data, size_t len, void *p)
{
	struct relay *r = p;

	return hutch__demux_feed(&r->demux, data, len, on_frame, r) != 0;
}

/* One line for the error: the agent's text up to its first newline,
 * control characters shown as '?' (the text comes from the session). */
static void one_line(char *s)
{
	for (char *p = s; *p; p++) {
		if (*p == '\n' || *p == '\r') {
			*p = '\0';
			break;
		}
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	}
}

/* The relay: returns NULL with the outcome said through the callback. */
static void *relay_main(void *p)
{
	struct relay *r = p;
	struct pf *pf = r->pf;
	hutch_engine *e = hutch_session_engine(pf->s);
	char port[8], id[129], msg[512];
	const char *argv[] = { HUTCH_AGENT_RUN_PATH, HUTCH_AGENT_CMD_CONNECT,
			       port };
	/* As the session's user (the exec's default): connecting to a port
	 * on the container's loopback needs no privilege. */
	struct hutch__exec_spec spec = {
		.argv = argv,
		.argc = 3,
		.attach_stdin = 1,
	};
	struct hutch__exec_stream stream = {
		.sink = on_stream,
		.payload = r,
		.cancel = pf->o->cancel,
		.cancel2 = &r->stop,
		/* The engine's start reads the client's bytes from the
		 * socket itself until the client half-closes. */
		.input_fd = r->fd,
	};
	hutch_error *err = NULL;
	int streamed = 0, code = -1, rc;

	snprintf(port, sizeof(port), "%u", (unsigned)r->spec->port);
	hutch__demux_init(&r->demux);
	rc = hutch__api_exec_create(e, hutch__session_container(pf->s), &spec,
				    id, sizeof(id), "create connect exec",
				    &err);
	if (rc == 0)
		rc = hutch__api_exec_start(e, id, &stream, &streamed,
					   "start connect exec", &err);
	if (hutch_cancel_raised(pf->o->cancel) ||
	    hutch_cancel_raised(&r->stop)) {
		emit_conn(r, HUTCH_PORTFWD_CLOSED, NULL);
		goto out;
	}
	if (rc < 0 && !(r->client_gone && streamed)) {
		snprintf(msg, sizeof(msg), "%s", hutch_error_message(err));
		one_line(msg);
		emit_conn(r, HUTCH_PORTFWD_FAILED, msg);
		goto out;
	}
	rc = hutch__exec_wait_exit(e, id, pf->o->cancel, &code,
				   "inspect connect exec", NULL);
	if (rc == 1 && code != 0 && !r->client_gone) {
		one_line(r->errtext);
		snprintf(msg, sizeof(msg), "port %u in the session: %s",
			 (unsigned)r->spec->port,
			 r->errtext[0] ? r->errtext :
					 "the relay in the session failed");
		emit_conn(r, HUTCH_PORTFWD_FAILED, msg);
		goto out;
	}
	emit_conn(r, HUTCH_PORTFWD_CLOSED, NULL);
out:
	hutch_error_free(err);
	/* Both ways ended: the client sees the end of the stream.  Under the
	 * lock: evict_one looks at the fd from the accepting thread, and
	 * must never see a number that was closed (and maybe reused). */
	pthread_mutex_lock(&pf->lock);
	shutdown(r->fd, SHUT_RDWR);
	close(r->fd);
	r->fd = -1;
	__atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
	pthread_cond_signal(&pf->ended);
	pthread_mutex_unlock(&pf->lock);
	return NULL;
}

/* Join and free the relays that have ended (all of them with `all`,
 * waiting for each). */
static void reap(struct pf *pf, int all)
{
	struct relay **pp = &pf->relays;

	while (*pp) {
		struct relay *r = *pp;

		if (!all && !__atomic_load_n(&r->done, __ATOMIC_ACQUIRE)) {
			pp = &r->next;
			continue;
		}
		pthread_join(r->thread, NULL);
		*pp = r->next;
		pf->active--;
		free(r);
	}
}

static void peer_name(const struct sockaddr_storage *ss, char *out,
		      size_t outsz)
{
	char a[INET6_ADDRSTRLEN] = "?";

	if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const void *)ss;

		inet_ntop(AF_INET6, &s6->sin6_addr, a, sizeof(a));
		snprintf(out, outsz, "[%s]:%u", a, ntohs(s6->sin6_port));
	} else {
		const struct sockaddr_in *s4 = (const void *)ss;

		inet_ntop(AF_INET, &s4->sin_addr, a, sizeof(a));
		snprintf(out, outsz, "%s:%u", a, ntohs(s4->sin_port));
	}
}

/* Accept one connection on `fd` and start its relay.  A failure to start
 * one closes that connection only. */
static void accept_one(struct pf *pf, int fd, const hutch_portfwd_spec *spec)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	pthread_attr_t attr;
	struct relay *r;
	int c = accept4(fd, (struct sockaddr *)&ss, &sl, SOCK_CLOEXEC);

	if (c < 0)
		return; /* EAGAIN (another took it), or the client left */
	r = calloc(1, sizeof(*r));
	if (!r) {
		close(c);
		return;
	}
	r->pf = pf;
	r->spec = spec;
	r->fd = c;
	peer_name(&ss, r->peer, sizeof(r->peer));
	emit_conn(r, HUTCH_PORTFWD_OPENED, NULL);
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, RELAY_STACK);
	if (pthread_create(&r->thread, &attr, relay_main, r) != 0) {
		pthread_attr_destroy(&attr);
		emit_conn(r, HUTCH_PORTFWD_FAILED, "no thread for the relay");
		close(c);
		free(r);
		return;
	}
	pthread_attr_destroy(&attr);
	r->next = pf->relays;
	pf->relays = r;
	pf->active++;
}

/* ---- listening --------------------------------------------------------- */

static int loopback(int family, const void *addr)
{
	if (family == AF_INET)
		return (ntohl(((const struct in_addr *)addr)->s_addr) >> 24) ==
		       127;
	return IN6_IS_ADDR_LOOPBACK((const struct in6_addr *)addr) ||
	       (IN6_IS_ADDR_V4MAPPED((const struct in6_addr *)addr) &&
		((const struct in6_addr *)addr)->s6_addr[12] == 127);
}

/* Bind and listen for `spec`: the socket, or a negative code. */
static int listen_on(struct pf *pf, const hutch_portfwd_spec *spec,
		     hutch_error **err)
{
	const char *addr = spec->host_addr ? spec->host_addr : "127.0.0.1";
	struct sockaddr_storage ss;
	socklen_t sl;
	union {
		struct in_addr v4;
		struct in6_addr v6;
	} a;
	int family, fd, one = 1, e;
	char shown[INET6_ADDRSTRLEN + 2];
	hutch_portfwd_event ev = { .kind = HUTCH_PORTFWD_LISTENING,
				   .forward = spec };

	if (strcmp(addr, "localhost") == 0)
		addr = "127.0.0.1";
	/* Numbers only: a name could resolve to an address nobody meant to
	 * open the session to. */
	if (inet_pton(AF_INET, addr, &a.v4) == 1)
		family = AF_INET;
	else if (inet_pton(AF_INET6, addr, &a.v6) == 1)
		family = AF_INET6;
	else
		return hutch__error_set(
			err, HUTCH_EINVALID,
			"host address '%.64s' is not a numeric IPv4 or IPv6 "
			"address (or localhost)",
			addr);
	if (!loopback(family, &a) && !pf->o->allow_remote)
		return hutch__error_set(
			err, HUTCH_EINVALID,
			"host address '%.64s' is not loopback: it would open "
			"the session's port %u to other machines; allow it "
			"explicitly to do so",
			addr, (unsigned)spec->port);
	memset(&ss, 0, sizeof(ss));
	if (family == AF_INET) {
		struct sockaddr_in *s4 = (void *)&ss;

		s4->sin_family = AF_INET;
		s4->sin_port = htons(spec->host_port);
		s4->sin_addr = a.v4;
		sl = sizeof(*s4);
	} else {
		struct sockaddr_in6 *s6 = (void *)&ss;

		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(spec->host_port);
		s6->sin6_addr = a.v6;
		sl = sizeof(*s6);
	}
	fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return hutch__error_set(err, HUTCH_EFAILED, "socket: %s",
					strerror(errno));
	/* A forward stopped a moment ago leaves its port in TIME_WAIT;
	 * SO_REUSEADDR lets it listen again (it does not let two listen at
	 * once: a port in use still fails below). */
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	snprintf(shown, sizeof(shown), family == AF_INET6 ? "[%s]" : "%s",
		 addr);
	if (bind(fd, (struct sockaddr *)&ss, sl) < 0 ||
	    listen(fd, LISTEN_BACKLOG) < 0) {
		e = errno;
		close(fd);
		if (e == EADDRINUSE)
			return hutch__error_set(
				err, HUTCH_EINVALID,
				"%s:%u is already in use on the host", shown,
				(unsigned)spec->host_port);
		return hutch__error_set(err,
					e == EADDRNOTAVAIL || e == EACCES ?
						HUTCH_EINVALID :
						HUTCH_EFAILED,
					"cannot listen on %s:%u: %s", shown,
					(unsigned)spec->host_port, strerror(e));
	}
	sl = sizeof(ss);
	getsockname(fd, (struct sockaddr *)&ss, &sl);
	ev.addr = addr;
	ev.host_port = ntohs(family == AF_INET ?
				     ((struct sockaddr_in *)&ss)->sin_port :
				     ((struct sockaddr_in6 *)&ss)->sin6_port);
	emit(pf, &ev);
	return fd;
}

/*
 * Every slot is taken and a client waits: end the oldest relay whose
 * client has finished sending (its end of file is there to read; a peek
 * takes nothing from the transport that reads the socket).  Such a relay
 * waits only for the service in the session to close, which a hostile
 * or careless one never does; a client that left looks the same, since
 * nothing is written to it.  A client that half-closed and still waits
 * for a slow answer loses it, but only when its slot is needed.
 */
static void evict_one(struct pf *pf)
{
	struct relay *oldest = NULL;
	char c;

	pthread_mutex_lock(&pf->lock);
	for (struct relay *r = pf->relays; r; r = r->next)
		if (r->fd >= 0 && !hutch_cancel_raised(&r->stop) &&
		    recv(r->fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 0)
			oldest = r; /* the list is newest first */
	if (oldest)
		hutch_cancel_raise(&oldest->stop);
	pthread_mutex_unlock(&pf->lock);
}

/* Wait until a relay has ended, at most POLL_MS. */
static void wait_for_end(struct pf *pf)
{
	struct timespec until;

	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_nsec += POLL_MS * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&pf->lock);
	for (struct relay *r = pf->relays; r; r = r->next)
		if (__atomic_load_n(&r->done, __ATOMIC_ACQUIRE))
			goto out;
	pthread_cond_timedwait(&pf->ended, &pf->lock, &until);
out:
	pthread_mutex_unlock(&pf->lock);
}

static int validate(const hutch_portfwd_options *o, hutch_error **err)
{
	if (!o || o->version != HUTCH_PORTFWD_OPTIONS_VERSION)
		return hutch__error_set(err, HUTCH_EINVALID,
					"unsupported hutch_portfwd_options");
	if (!o->cancel)
		return hutch__error_set(
			err, HUTCH_EINVALID,
			"port forwarding needs a cancel to end it");
	if (!o->forwards || o->count == 0)
		return hutch__error_set(err, HUTCH_EINVALID,
					"no port to forward");
	if (o->count > HUTCH_PORTFWD_MAX_FORWARDS)
		return hutch__error_set(err, HUTCH_EINVALID,
					"%zu forwards, at most %d", o->count,
					HUTCH_PORTFWD_MAX_FORWARDS);
	for (size_t i = 0; i < o->count; i++)
		if (o->forwards[i].port == 0)
			return hutch__error_set(
				err, HUTCH_EINVALID,
				"port 0 in the session: give 1 to 65535");
	return 0;
}

int hutch_portfwd_run(hutch_session *s, const hutch_portfwd_options *o,
		      hutch_error **err)
{
	struct pf pf = { .s = s, .o = o };
	struct pollfd fds[HUTCH_PORTFWD_MAX_FORWARDS];
	pthread_condattr_t ca;
	unsigned int max;
	size_t n = 0;
	int rc;

	if ((rc = validate(o, err)) < 0)
		return rc;
	max = o->max_connections ? o->max_connections :
				   HUTCH_PORTFWD_DEFAULT_MAX_CONNECTIONS;
	/* The container runs before anything listens: a client never
	 * waits on a session being brought up. */
	if ((rc = hutch_session_ensure(s, NULL, err)) < 0)
		goto out_err;
	/* This build's agent, which knows "connect": a session made by
	 * another hutch gets it now (one HEAD when it is there), not once
	 * per connection. */
	if ((rc = hutch__agent_install_if_missing(s, err)) < 0)
		goto out_err;
	rc = 0;
	pthread_mutex_init(&pf.lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&pf.ended, &ca);
	pthread_condattr_destroy(&ca);
	for (n = 0; n < o->count; n++) {
		rc = listen_on(&pf, &o->forwards[n], err);
		if (rc < 0)
			goto out;
		fds[n].fd = rc;
		fds[n].events = POLLIN;
	}
	rc = 0;
	while (!hutch_cancel_raised(o->cancel)) {
		reap(&pf, 0);
		if (pf.active >= max) {
			/* Full: the next clients wait in the backlog until a
			 * relay ends (or the cancel is seen), and one that
			 * waits there makes room (evict_one). */
			if (poll(fds, n, 0) > 0)
				evict_one(&pf);
			wait_for_end(&pf);
			continue;
		}
		if (poll(fds, n, POLL_MS) <= 0)
			continue;
		for (size_t i = 0; i < n; i++)
			if (fds[i].revents & POLLIN)
				accept_one(&pf, fds[i].fd, &o->forwards[i]);
	}
out:
	for (size_t i = 0; i < n; i++)
		close(fds[i].fd);
	/* The relays saw the cancel too (their transfers and their writes
	 * watch it): each ends soon. */
	reap(&pf, 1);
	pthread_cond_destroy(&pf.ended);
	pthread_mutex_destroy(&pf.lock);
out_err:
	if (rc < 0)
		hutch__error_wrap(err, rc, "session '%s'",
				  hutch_session_name(s));
	return rc;
}
