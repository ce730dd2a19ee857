/*
 * pipe.c - the bounded pipe between a transfer and a libarchive worker
 *
 * A ring buffer of fixed capacity under one mutex; see pipe.h.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pipe.h"

int hutch__pipe_init(struct hutch__pipe *p, size_t cap)
{
	pthread_condattr_t ca;

	memset(p, 0, sizeof(*p));
	p->buf = malloc(cap);
	if (!p->buf)
		return -1;
	p->cap = cap;
	pthread_mutex_init(&p->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&p->cv, &ca);
	pthread_condattr_destroy(&ca);
	return 0;
}

void hutch__pipe_destroy(struct hutch__pipe *p)
{
	if (!p->buf)
		return;
	pthread_cond_destroy(&p->cv);
	pthread_mutex_destroy(&p->mu);
	free(p->buf);
	p->buf = NULL;
}

static void wait_ms(struct hutch__pipe *p, int ms)
{
	struct timespec ts;

	if (ms < 0) {
		pthread_cond_wait(&p->cv, &p->mu);
		return;
	}
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_cond_timedwait(&p->cv, &p->mu, &ts);
}

int hutch__pipe_write(struct hutch__pipe *p, const void *data, size_t len,
		      const volatile int *stop)
{
	const char *d = data;
	int rc = 0;

	pthread_mutex_lock(&p->mu);
	while (len > 0) {
		size_t tail, n;

		if (p->rdiscard) {
			p->total += len;
			break;
		}
		if (p->rgone || p->wdone) {
			rc = -1;
			break;
		}
		if (p->len == p->cap) {
			if (stop && __atomic_load_n(stop, __ATOMIC_RELAXED)) {
				rc = -2;
				break;
			}
			wait_ms(p, stop ? 100 : -1);
			continue;
		}
		tail = (p->head + p->len) % p->cap;
		n = p->cap - p->len;
		if (n > p->cap - tail)
			n = p->cap - tail;
		if (n > len)
			n = len;
		memcpy(p->buf + tail, d, n);
		p->len += n;
		p->total += n;
		d += n;
		len -= n;
		pthread_cond_broadcast(&p->cv);
	}
	pthread_mutex_unlock(&p->mu);
	return rc;
}

ssize_t hutch__pipe_read(struct hutch__pipe *p, void *buf, size_t len,
			 int timeout_ms)
{
	ssize_t rc;
	size_t n;

	pthread_mutex_lock(&p->mu);
	for (;;) {
		if (p->wfailed) {
			rc = -1;
			break;
		}
		if (p->len > 0) {
			n = p->cap - p->head;
			if (n > p->len)
				n = p->len;
			if (n > len)
				n = len;
			memcpy(buf, p->buf + p->head, n);
			p->head = (p->head + n) % p->cap;
			p->len -= n;
			rc = (ssize_t)n;
			pthread_cond_broadcast(&p->cv);
			break;
		}
		if (p->wdone) {
			rc = 0;
			break;
		}
		if (timeout_ms >= 0) {
			wait_ms(p, timeout_ms);
			if (p->len == 0 && !p->wdone && !p->wfailed) {
				rc = -2;
				break;
			}
			continue;
		}
		wait_ms(p, -1);
	}
	pthread_mutex_unlock(&p->mu);
	return rc;
}

void hutch__pipe_close_write(struct hutch__pipe *p, int failed)
{
	pthread_mutex_lock(&p->mu);
	p->wdone = 1;
	if (failed)
		p->wfailed = 1;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
}

void hutch__pipe_close_read(struct hutch__pipe *p, int discard)
{
	pthread_mutex_lock(&p->mu);
	if (discard)
		p->rdiscard = 1;
	else
		p->rgone = 1;
	p->len = 0;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
}

uint64_t hutch__pipe_total(struct hutch__pipe *p)
{
	uint64_t t;

	pthread_mutex_lock(&p->mu);
	t = p->total;
	pthread_mutex_unlock(&p->mu);
	return t;
}
