/*
 * agent_chan.h - the agent's channel: running an agent command without the
 * engine's exec (the fast path)
 *
 * The session's PID 1 (the agent's "sleep") serves a unix socket on the
 * session's system volume (HUTCH_CHAN_PATH, src/shared/agent_protocol.h).
 * hutch reaches it through the volume's mount point on the engine's host,
 * checks that the process listening is the container's PID 1, and runs an
 * agent command line through it: one connection per command.
 *
 * This is a transport, as http.c is: it emulates an engine exec of the
 * same spec (struct hutch__exec_spec) with the same stream contract as
 * hutch__api_exec_start (struct hutch__exec_stream).  When the channel
 * cannot be had it says so before anything that could run the command was
 * sent, and the caller takes the engine's exec (exec.c holds the policy).
 */
#ifndef HUTCH_AGENT_CHAN_H
#define HUTCH_AGENT_CHAN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <hutch/session.h>

#include "engine_api_exec.h"

/* hutch__chan_exec: no channel for this command; nothing was sent that
 * could run it.  Positive, so it is never taken for an error. */
#define HUTCH__CHAN_UNAVAILABLE 1

/* The session handle's cache of its channel (hutch_session.chan). */
struct hutch__chan;
/* Accepts NULL. */
void hutch__chan_free(struct hutch__chan *c);
/* The engine's own table of channels found (hutch_engine_free). */
void hutch__chan_known_free(hutch_engine *e);
/* Forget what was found: the container may have been replaced. */
void hutch__chan_forget(hutch_session *s);

/* One command run over the channel.  Its connection stays open after
 * hutch__chan_exec returns, so that its state and exit status can be
 * asked; hutch__chan_call_close ends it. */
struct hutch__chan_call;

/* The same as hutch__api_exec_start for an exec of `spec` (create and
 * start in one): 0 when the stream was read to its end (the command's
 * exit status, or the connection's end), HUTCH_ETIMEOUT / _ECANCELLED /
 * _EFAILED, or HUTCH__CHAN_UNAVAILABLE (with *call NULL and no error)
 * when the channel cannot be used for it.  *streamed is 1 once the agent
 * said the command was started (or once it may have been: the request
 * was sent and the connection broke before the answer).  *call (also on
 * an error) belongs to the caller. */
int hutch__chan_exec(hutch_session *s, const struct hutch__exec_spec *spec,
		     const struct hutch__exec_stream *stream,
		     struct hutch__chan_call **call, int *streamed,
		     const char *what, hutch_error **err);

enum {
	HUTCH__CHAN_RUNS,
	HUTCH__CHAN_ENDED, /* its exit status came */
	HUTCH__CHAN_UNSURE /* the connection ended without one */
};

/* What became of the call's command, reading (without waiting) what the
 * agent has sent meanwhile.  Output read here goes to the stream's sink
 * while hutch__chan_exec is still reading the stream (a call from its
 * on_deadline), and is dropped after. */
int hutch__chan_state(struct hutch__chan_call *call);

/* Wait (at most timeout_ms) for the command's exit status, dropping any
 * output still to come: 1 with *code (as an engine's ExitCode), or
 * HUTCH_EFAILED when the connection ended without it, HUTCH_ETIMEOUT. */
int hutch__chan_wait_exit(struct hutch__chan_call *call,
			  unsigned long long timeout_ms, int *code,
			  hutch_error **err);

/* Close the connection.  Accepts NULL.  The agent does not stop the
 * command when hutch leaves (an engine exec does not either). */
void hutch__chan_call_close(struct hutch__chan_call *call);

/* Whether HUTCH_FAST_PATH allows the channel. */
int hutch__chan_enabled(void);

/*
 * Try the channel of container `container` on engine `e` once, without
 * running anything (hutch doctor, and gc's "busy"): 1 when it was found
 * and its peer verified (the agent's HELLO read; *busy, when not NULL,
 * gets how many requests the agent was serving besides this one), 0 when
 * not (why in `why`), or a negative code when the engine could not be
 * asked.
 */
int hutch__chan_probe(hutch_engine *e, const char *container,
		      unsigned int *busy, char *why, size_t whysz,
		      hutch_error **err);

/* ---- for the unit tests: the parts that need no container ------------- */

/* The peer of connected unix socket `fd` is process `pid`, which `pidfd`
 * (pidfd_open'd for it) still holds: 0, or -1 with why. */
int hutch__chan_verify_peer(int fd, pid_t pid, int pidfd, char *why,
			    size_t whysz);

/* What HELLO said. */
struct hutch__chan_hello {
	uint32_t version, uid, gid;
	uint32_t busy; /* other requests the agent was serving */
	char hostname[256];
};

/* Read HELLO from `fd` (non-blocking) until `deadline_ms`: 0, or -1 with
 * why. */
int hutch__chan_read_hello(int fd, unsigned long long deadline_ms,
			   struct hutch__chan_hello *hello, char *why,
			   size_t whysz);

/* hutch__chan_exec on a connection whose HELLO was read and whose peer
 * was verified (`fd` is taken, whatever the outcome). */
int hutch__chan_exec_on(int fd, const struct hutch__chan_hello *hello,
			const struct hutch__exec_spec *spec,
			const struct hutch__exec_stream *stream,
			struct hutch__chan_call **call, int *streamed,
			const char *what, hutch_error **err);

#endif
