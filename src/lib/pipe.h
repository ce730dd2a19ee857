/*
 * pipe.h - a bounded pipe between two threads
 *
 * curl pulls a request body and pushes an answer; libarchive pushes when
 * it writes and pulls when it reads.  A bounded pipe between the HTTP
 * transfer (calling thread) and a worker thread running libarchive joins
 * the two without buffering more than its capacity.
 */
#ifndef HUTCH_PIPE_H
#define HUTCH_PIPE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

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

#endif
