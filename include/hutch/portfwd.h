/*
 * hutch/portfwd.h - forward host ports to ports inside a session
 *
 * hutch listens on the host and relays each connection it accepts to
 * 127.0.0.1:PORT inside the session's container.  The relay goes through
 * the engine, not the network: per connection, an exec of hutch's agent
 * ("connect PORT") with its standard input attached, so it works with the
 * session's network "none" (the container keeps its loopback).  Nothing
 * is published on the container and nothing is opened in it but the
 * connection to PORT.
 *
 * Memory is bounded: at most `max_connections` relays at once, each with
 * fixed buffers; past that, connections wait in the listening socket's
 * backlog until one ends.
 */
#ifndef HUTCH_PORTFWD_H
#define HUTCH_PORTFWD_H

#include <stddef.h>
#include <hutch/error.h>
#include <hutch/exec.h>
#include <hutch/session.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One forward: host address and port -> port in the session. */
typedef struct {
	/* A numeric IPv4 or IPv6 address, or "localhost"; NULL:
	 * "127.0.0.1".  An address that is not loopback is refused unless
	 * hutch_portfwd_options.allow_remote is set. */
	const char *host_addr;
	unsigned short host_port; /* 0: one the kernel picks (see
				     HUTCH_PORTFWD_LISTENING) */
	unsigned short port;	  /* in the session, 1..65535 */
} hutch_portfwd_spec;

typedef enum {
	/* Listening: `addr` and `host_port` say where (the port the kernel
	 * picked when 0 was asked).  Once per forward, before any other. */
	HUTCH_PORTFWD_LISTENING = 1,
	/* A connection was accepted; `peer` says from where. */
	HUTCH_PORTFWD_OPENED,
	/* A connection ended normally. */
	HUTCH_PORTFWD_CLOSED,
	/* A connection could not be relayed (nothing listens on the port
	 * in the session, the engine refused the exec...): `message`
	 * says why.  The forward goes on serving others. */
	HUTCH_PORTFWD_FAILED,
} hutch_portfwd_event_kind;

typedef struct {
	hutch_portfwd_event_kind kind;
	const hutch_portfwd_spec *forward; /* which one (the caller's) */
	const char *addr;	  /* LISTENING: the address bound, numeric */
	unsigned short host_port; /* LISTENING: the port bound */
	const char *peer;	  /* OPENED, CLOSED, FAILED: "ADDR:PORT" */
	const char *message;	  /* FAILED: one line; else NULL */
} hutch_portfwd_event;

/* Called from any of hutch's threads, one call at a time (hutch holds a
 * lock around it); it must not block for long. */
typedef void (*hutch_portfwd_cb)(const hutch_portfwd_event *ev, void *payload);

#define HUTCH_PORTFWD_OPTIONS_VERSION 1
#define HUTCH_PORTFWD_DEFAULT_MAX_CONNECTIONS 64
#define HUTCH_PORTFWD_MAX_FORWARDS 32

typedef struct {
	unsigned int version; /* HUTCH_PORTFWD_OPTIONS_VERSION */
	const hutch_portfwd_spec *forwards;
	size_t count;	  /* 1..HUTCH_PORTFWD_MAX_FORWARDS */
	int allow_remote; /* 1: a host address that is not loopback may be
			     listened on */
	unsigned int max_connections; /* relays at once, over all forwards;
					 0: the default */
	/* Required: raising it stops the call (listeners closed, every
	 * relay ended) and hutch_portfwd_run returns 0. */
	hutch_cancel *cancel;
	hutch_portfwd_cb on_event; /* may be NULL */
	void *payload;
} hutch_portfwd_options;

#define HUTCH_PORTFWD_OPTIONS_INIT                                             \
	{                                                                      \
		HUTCH_PORTFWD_OPTIONS_VERSION, NULL, 0, 0, 0, NULL, NULL, NULL \
	}

/*
 * Listen on every forward, then serve until `opts->cancel` is raised.
 * The session must exist (it is started when stopped; it is never made).
 * Returns 0 after the cancel, or before serving a negative hutch_errcode:
 * HUTCH_EINVALID for a bad forward (a port out of range, an address that
 * is not numeric or not loopback without allow_remote) or a host port
 * already in use, HUTCH_ENOTFOUND when the session does not exist, or
 * the engine's error.
 */
int hutch_portfwd_run(hutch_session *session, const hutch_portfwd_options *opts,
		      hutch_error **err);

#ifdef __cplusplus
}
#endif
#endif
