/*
 * fuzz_timestamp.c - the engines' times (src/lib/timestamp.c)
 *
 * Input: the bytes an engine sends as an RFC 3339 time, then as the value
 * of the X-Docker-Container-Path-Stat header.  Whatever they are, a time
 * taken is within years 1 to 9999 (give or take a day of offset).
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "timestamp.h"

#define MIN_TIME (-62135596800LL - 86400) /* 0001-01-01, less a day */
#define MAX_TIME (253402300800LL + 86400) /* 10000-01-01, plus a day */

FUZZ_TARGET(timestamp)
{
	char *s = malloc(size + 1);
	long long t = 0;

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	if (hutch__time_parse(s, &t) == 0)
		FUZZ_CHECK(t >= MIN_TIME && t <= MAX_TIME);
	t = 0;
	if (hutch__path_stat_mtime(s, &t) == 0)
		FUZZ_CHECK(t >= MIN_TIME && t <= MAX_TIME);
	free(s);
	return 0;
}
