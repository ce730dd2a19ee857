/*
 * utf8.h - making untrusted bytes safe to put in a JSON string
 */
#ifndef HUTCH_UTF8_H
#define HUTCH_UTF8_H

#include <stddef.h>

/* Length of the valid UTF-8 sequence at s[0..len), or 0 when the bytes
 * there do not start one (overlong forms, surrogates, code points past
 * U+10FFFF and truncated sequences are all invalid). */
size_t hutch__utf8_seq_len(const unsigned char *s, size_t len);

/* Copy `in` to a new NUL-terminated string in which every byte that is not
 * part of valid UTF-8 is replaced by U+FFFD.  `*out_len` gets the length
 * (the result may contain NUL bytes, which JSON escapes).  NULL when out of
 * memory. */
char *hutch__utf8_repair(const char *in, size_t len, size_t *out_len);

/* How many of the `n` bytes at `s` to keep so that at most `max` are kept
 * and no UTF-8 sequence is split. */
size_t hutch__utf8_cut(const char *s, size_t n, size_t max);

#endif
