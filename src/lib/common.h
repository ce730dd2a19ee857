/*
 * common.h - small helpers shared by the library's files
 */
#ifndef HUTCH_COMMON_H
#define HUTCH_COMMON_H

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"

#define HUTCH_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Up to 24 random hex digits from getrandom(), NUL-terminated in `out`
 * (which holds outsz - 1 digits at most); -1 when the kernel refuses. */
int hutch__random_hex(char *out, size_t outsz);

/* Milliseconds on the monotonic clock. */
unsigned long long hutch__now_ms(void);

/* Sleep `ms` milliseconds, or until a signal is handled. */
void hutch__sleep_ms(unsigned int ms);

#endif
