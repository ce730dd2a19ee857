/*
 * session_image_user.c - the "sandbox" account of the images sessions were
 * made from
 *
 * A process making many sessions (a batch) reads an image's /etc/passwd
 * once, also when they all start at once: the first asks, the others wait
 * for its answer.  The cache is the process's, keyed by image ID alone:
 * an image ID is the digest of the image's configuration, which names its
 * layers by digest, so two engines that report one ID hold the same
 * /etc/passwd, and an answer read through one handle holds for another.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common.h"
#include "session_internal.h"

/* How long a caller waits for another's read of the same image. */
#define IMAGE_USER_WAIT_S 10

/* A ring, oldest replaced; `cond` signals an answer.  All guarded by
 * `lock`. */
static struct image_user {
	char id[80];
	long uid, gid; /* -1: the image has none */
	int pending;   /* being read by one caller */
} users[16];
static size_t users_next;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;

static struct image_user *find(const char *id)
{
	for (size_t i = 0; i < HUTCH_ARRAY_SIZE(users); i++)
		if (strcmp(users[i].id, id) == 0)
			return &users[i];
	return NULL;
}

/* The next slot of the ring; waiters on what it held read for themselves. */
static struct image_user *slot(const char *id)
{
	struct image_user *u;

	u = &users[users_next++ % HUTCH_ARRAY_SIZE(users)];
	if (u->pending)
		pthread_cond_broadcast(&cond);
	snprintf(u->id, sizeof(u->id), "%s", id);
	u->pending = 0;
	return u;
}

int hutch__image_user(const char *id, long *uid, long *gid)
{
	struct image_user *u;
	struct timespec until;
	int found = 0;

	if (!*id || strlen(id) >= sizeof(users[0].id))
		return 0;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += IMAGE_USER_WAIT_S;
	pthread_mutex_lock(&lock);
	for (;;) {
		u = find(id);
		if (!u) {
			/* This caller reads it; the next ones wait. */
			slot(id)->pending = 1;
			break;
		}
		if (!u->pending) {
			*uid = u->uid;
			*gid = u->gid;
			found = 1;
			break;
		}
		if (pthread_cond_timedwait(&cond, &lock, &until) != 0)
			break; /* slow: read it too, as if nobody were */
	}
	pthread_mutex_unlock(&lock);
	return found;
}

void hutch__image_user_keep(const char *id, long uid, long gid)
{
	struct image_user *u;

	if (!*id || strlen(id) >= sizeof(users[0].id))
		return;
	pthread_mutex_lock(&lock);
	u = find(id);
	if (!u)
		u = slot(id);
	u->uid = uid;
	u->gid = gid;
	u->pending = 0;
	pthread_cond_broadcast(&cond);
	pthread_mutex_unlock(&lock);
}

void hutch__image_user_drop(const char *id)
{
	struct image_user *u;

	pthread_mutex_lock(&lock);
	u = *id ? find(id) : NULL;
	if (u && u->pending) {
		u->id[0] = '\0';
		u->pending = 0;
		pthread_cond_broadcast(&cond);
	}
	pthread_mutex_unlock(&lock);
}
