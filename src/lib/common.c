/*
 * common.c - the clock and randomness helpers common.h declares
 */
#include <errno.h>
#include <stdio.h>
#include <sys/random.h>
#include <time.h>

#include "common.h"

int hutch__random_hex(char *out, size_t outsz)
{
	unsigned char raw[12];
	size_t got = 0;
	ssize_t n;

	while (got < sizeof(raw)) {
		n = getrandom(raw + got, sizeof(raw) - got, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		got += (size_t)n;
	}
	for (size_t i = 0; i < sizeof(raw) && 2 * i + 2 < outsz; i++)
		snprintf(out + 2 * i, 3, "%02x", raw[i]);
	return 0;
}

unsigned long long hutch__now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000ULL +
	       (unsigned long long)ts.tv_nsec / 1000000ULL;
}

void hutch__sleep_ms(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}
