/*
 * timestamp.h - the engines' times, as unix seconds
 *
 * Pure functions (no I/O), for the unit tests and the fuzz replay.
 */
#ifndef HUTCH_TIMESTAMP_H
#define HUTCH_TIMESTAMP_H

#include <stddef.h>

/*
 * An RFC 3339 time as the engines write it: "2024-05-01T12:00:00Z",
 * "2024-05-01T12:00:00.123456789+02:00".  Fractions are dropped.  Years
 * 0001 to 9999 (Docker says "0001-01-01T00:00:00Z" for "never": a large
 * negative number).  0, or -1 when `s` is not such a time.
 */
int hutch__time_parse(const char *s, long long *out);

/*
 * The mtime in the value of an archive answer's X-Docker-Container-Path-Stat
 * header: base64 of a JSON object with "mtime" (both engines).  At most
 * 1023 bytes are looked at.  0, or -1 when it has none.
 */
int hutch__path_stat_mtime(const char *header, long long *out);

#endif
