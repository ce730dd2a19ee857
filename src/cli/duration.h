/*
 * duration.h - "90s", "30m", "2h", "7d", "1h30m": spans of time for the CLI
 *
 * Pure (no I/O, no allocation), so the unit tests build it directly.
 */
#ifndef HUTCH_CLI_DURATION_H
#define HUTCH_CLI_DURATION_H

#include <stddef.h>
#include <stdint.h>

/* The longest duration taken: 100 years, in seconds. */
#define CLI_DURATION_MAX (100LL * 365 * 86400)

/*
 * Parse a duration: one or more NUMBER UNIT groups, units d, h, m, s, each
 * at most once and in that order ("1d12h", "1h30m", "90s", "90m"), or a
 * bare "0".  No signs, spaces, fractions or other units; at most
 * CLI_DURATION_MAX.  0 with the seconds in *out, or -1 (*out untouched).
 */
int cli_parse_duration(const char *s, long long *out);

/*
 * Seconds (a non-negative finite number, fractions allowed) to whole
 * milliseconds, rounded to the nearest, except that a positive value below
 * one millisecond is one millisecond: 0 means "no timeout" to the library,
 * so only a typed 0 may become 0.  0 with *ms set, or -1 when `seconds` is
 * negative, not finite or above 1e7 (*ms untouched).
 */
int cli_seconds_to_ms(double seconds, uint64_t *ms);

/* Seconds as the parser takes them, the two largest units: "0s", "45s",
 * "2h5m", "3d4h".  Negative values print as "0s". */
void cli_format_duration(char *out, size_t outsz, long long seconds);

#endif
