/*
 * sync_internal.h - what the two halves of workspace sync share
 *
 * The HTTP transfer (calling thread) and a worker thread running
 * libarchive are joined by a bounded pipe (pipe.h).
 */
#ifndef HUTCH_SYNC_INTERNAL_H
#define HUTCH_SYNC_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <sys/types.h>

#include <hutch/sync.h>

#include "pipe.h"

/* Bytes in flight between libarchive and curl. */
#define HUTCH_SYNC_PIPE_CAP (1024u * 1024u)
/* Block size libarchive reads and writes in. */
#define HUTCH_SYNC_BLOCK (64u * 1024u)

/* Counters a worker updates while the calling thread reads them. */
#define HUTCH__STAT_ADD(field, n) \
	__atomic_add_fetch(&(field), (n), __ATOMIC_RELAXED)
#define HUTCH__STAT_GET(field) __atomic_load_n(&(field), __ATOMIC_RELAXED)

/* ---- sync-in: walking the host tree into a tar ---------------------- */

struct hutch__sync_in {
	int dirfd; /* the host directory, or with `single` a bare (O_PATH)
		      handle of the one file to send; owned */
	const char *single; /* the name that file is sent as, or NULL */
	const char *const *exclude;
	size_t exclude_count;
	struct hutch__pipe *pipe;
	hutch_sync_stats stats; /* updated atomically */
	int rc;			/* worker's result */
	hutch_error *err;	/* worker's error, or NULL */
};

/* Thread body: walk, write the archive into the pipe, close it. */
void *hutch__sync_in_worker(void *job);

/* ---- sync-out: unpacking a tar into the host directory -------------- */

struct hutch__sync_out {
	int dirfd;	 /* the host directory; owned */
	const char *top; /* first component of every entry */
	const char *as;	 /* the name the top takes in the host directory,
			    or NULL (hutch_sync_options.as) */
	struct hutch__pipe *pipe;
	hutch_sync_stats stats; /* updated atomically */
	uint64_t refused;
	char first_refused[512];
	int rc;
	hutch_error *err;
};

void *hutch__sync_out_worker(void *job);

/* Map an engine entry name to the name under the host directory: strip
 * the top component.  Returns the mapped name (pointing into `name` or a
 * static ""), "" for the top directory itself, or NULL when the name does
 * not start with `top` (refused).  Pure; exposed for the unit tests. */
const char *hutch__sync_strip_top(const char *name, const char *top);

#endif
