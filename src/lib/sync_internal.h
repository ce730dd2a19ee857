/*
 * sync_internal.h - what the two halves of workspace sync share
 *
 * curl pulls a request body and pushes an answer; libarchive pushes when
 * it writes and pulls when it reads.  A bounded pipe between the HTTP
 * transfer (calling thread) and a worker thread running libarchive joins
 * the two without buffering more than its capacity.
 */
#ifndef HUTCH_SYNC_INTERNAL_H
#define HUTCH_SYNC_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <sys/types.h>

#include <hutch/sync.h>

/* Bytes in flight between libarchive and curl. */
#define HUTCH_SYNC_PIPE_CAP (1024u * 1024u)
/* Block size libarchive reads and writes in. */
#define HUTCH_SYNC_BLOCK (64u * 1024u)

struct hutch__pipe {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	char *buf;
	size_t cap, head, len;
	int wdone;	/* the writer finished (EOF after the data) */
	int wfailed;	/* the writer gave up: the reader sees an error */
	int rgone;	/* the reader gave up: writes fail */
	int rdiscard;	/* the reader is done and content: writes are dropped */
	uint64_t total; /* bytes written so far */
};

int hutch__pipe_init(struct hutch__pipe *p, size_t cap);
void hutch__pipe_destroy(struct hutch__pipe *p);
/* Write all of data, waiting for room.  0; -1 when the reader is gone;
 * -2 when *stop became non-zero while waiting (checked every 100 ms). */
int hutch__pipe_write(struct hutch__pipe *p, const void *data, size_t len,
		      const volatile int *stop);
/* Up to len bytes.  >0; 0 at the end; -1 when the writer failed; -2 when
 * nothing came within timeout_ms (timeout_ms < 0: wait for ever). */
ssize_t hutch__pipe_read(struct hutch__pipe *p, void *buf, size_t len,
			 int timeout_ms);
void hutch__pipe_close_write(struct hutch__pipe *p, int failed);
/* discard: the reader is done and later writes are silently dropped
 * (trailing padding); otherwise later writes fail. */
void hutch__pipe_close_read(struct hutch__pipe *p, int discard);
uint64_t hutch__pipe_total(struct hutch__pipe *p);

/* Counters a worker updates while the calling thread reads them. */
#define HUTCH__STAT_ADD(field, n) \
	__atomic_add_fetch(&(field), (n), __ATOMIC_RELAXED)
#define HUTCH__STAT_GET(field) __atomic_load_n(&(field), __ATOMIC_RELAXED)

/* ---- sync-in: walking the host tree into a tar ---------------------- */

struct hutch__sync_in {
	int dirfd; /* the host directory; owned */
	const char *const *exclude;
	size_t exclude_count;
	unsigned int uid, gid; /* owner written into every header */
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
