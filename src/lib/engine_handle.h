/*
 * engine_handle.h - the fields of an engine handle
 *
 * engine.c fills them (hutch_engine_open: where the engine is, how to
 * speak TLS to it); http.c uses them to connect and keeps its pool here.
 * Nothing above the transport reads them: the engine layer
 * (engine_api.h) and the sessions go through http.h and the public
 * getters.
 */
#ifndef HUTCH_ENGINE_HANDLE_H
#define HUTCH_ENGINE_HANDLE_H

#include <pthread.h>
#include <stddef.h>

#include <hutch/engine.h>
#include <hutch/error.h>

struct hutch__conn;

/*
 * Threads: everything below is written by hutch_engine_open only, except
 * what the comments say.  The URL and socket of every candidate are made
 * up front and never freed before the handle, so a pointer handed out by
 * hutch_engine_url() stays valid while another thread moves discovery on
 * to the next socket.
 */
struct hutch_engine {
	const char *source; /* where the URL came from */
	char **urls;	    /* candidate URLs, as the user or discovery
				   gave them; one unless discovery found more */
	char **sockets;	    /* their unix socket paths (NULL for tcp) */
	size_t ncandidates;
	size_t current; /* index in use; atomic (see http.c) */
	char *base;	/* "http://localhost", "https://host:port" */

	/* TLS (tcp:// with DOCKER_TLS_VERIFY, or https://): the peer is
	 * always verified, against tls_ca or the system's CAs. */
	int tls;
	char *tls_ca;	/* ca.pem, or NULL: the system's CAs */
	char *tls_cert; /* client certificate and key, or NULL */
	char *tls_key;

	/* The API version prefix.  Points at a static "1.41" until an older
	 * engine makes hutch negotiate; then at negotiated_version, which is
	 * written once, before the pointer is published (atomic). */
	const char *api_version;
	char negotiated_version[16];
	int negotiated; /* guarded by lock */
	/* Asks the engine which API version it speaks and hands the answer
	 * to hutch__http_use_api_version (hutch__api_negotiate, set by
	 * hutch_engine_open): the transport knows when to ask, the engine
	 * layer how. */
	int (*negotiate)(hutch_engine *e, hutch_error **err);

	pthread_mutex_t lock; /* guards the pool and negotiation */
	struct hutch__conn *pool;
	size_t nconns;	   /* idle connections in the pool */
	size_t busy, peak; /* connections in use now / at most so far */
	void *share;	   /* CURLSH: TLS sessions and DNS for the pool */
	pthread_mutex_t share_lock;
	/* The agents' channels found through this engine (agent_chan.c),
	 * made at first use under `lock`. */
	struct hutch__chan_known *chan_known;
};

#endif
