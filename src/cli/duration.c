/*
 * duration.c - spans of time on the command line
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "duration.h"

int cli_parse_duration(const char *s, long long *out)
{
	static const struct {
		char unit;
		long long seconds;
	} units[] = { { 'd', 86400 }, { 'h', 3600 }, { 'm', 60 }, { 's', 1 } };
	long long total = 0;
	size_t next = 0; /* the first unit still allowed */

	if (!s || !*s)
		return -1;
	if (strcmp(s, "0") == 0) {
		*out = 0;
		return 0;
	}
	while (*s) {
		long long n = 0;
		size_t digits = 0, u;

		while (s[digits] >= '0' && s[digits] <= '9') {
			/* Past the cap already: stop before overflowing. */
			if (n > CLI_DURATION_MAX)
				return -1;
			n = n * 10 + (s[digits] - '0');
			digits++;
		}
		if (digits == 0)
			return -1;
		s += digits;
		for (u = next; u < sizeof(units) / sizeof(units[0]); u++)
			if (*s == units[u].unit)
				break;
		if (u == sizeof(units) / sizeof(units[0]) ||
		    n > CLI_DURATION_MAX)
			return -1;
		total += n * units[u].seconds;
		if (total > CLI_DURATION_MAX)
			return -1;
		next = u + 1;
		s++;
	}
	*out = total;
	return 0;
}

int cli_seconds_to_ms(double seconds, uint64_t *ms)
{
	uint64_t v;

	if (!isfinite(seconds) || seconds < 0 || seconds > 1e7)
		return -1;
	v = (uint64_t)(seconds * 1000.0 + 0.5);
	/* 0.0004 must not round to 0, the library's "none". */
	if (v == 0 && seconds > 0)
		v = 1;
	*ms = v;
	return 0;
}

void cli_format_duration(char *out, size_t outsz, long long v)
{
	if (v < 0)
		v = 0;
	if (v >= 86400)
		snprintf(out, outsz, "%lldd%lldh", v / 86400, v % 86400 / 3600);
	else if (v >= 3600)
		snprintf(out, outsz, "%lldh%lldm", v / 3600, v % 3600 / 60);
	else if (v >= 60)
		snprintf(out, outsz, "%lldm%llds", v / 60, v % 60);
	else
		snprintf(out, outsz, "%llds", v);
}
