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

/* Length of the longest valid UTF-8 prefix of s[0..len): `len` when the
 * whole is valid, else the offset of the first bad byte. */
size_t hutch__utf8_valid_len(const char *s, size_t len);

/* hutch__utf8_escape flags. */
enum {
	/* A line of a file's text rather than a name: tabs and backslashes
	 * stay as they are (code is full of both), only the characters a
	 * terminal obeys or that break the line are escaped. */
	HUTCH__ESC_TEXT = 1,
};

/*
 * `s` as one visible, unambiguous line: a backslash becomes "\\", a control
 * character (C0, DEL, and the C1 range U+0080..U+009F, which some terminals
 * obey) and every byte that is not part of valid UTF-8 becomes "\xNN" (one
 * per byte), everything else is copied.  At most `max` bytes of `s` are
 * shown; past them "..." is added.  New NUL-terminated string (valid UTF-8,
 * no control character but tabs with HUTCH__ESC_TEXT), or NULL when out of
 * memory.
 */
char *hutch__utf8_escape(const char *s, size_t len, size_t max, int flags);

/* 1 when hutch__utf8_escape would change s[0..len). */
int hutch__utf8_needs_escape(const char *s, size_t len, int flags);

/* The NUL-terminated `s` ready to print: `s` itself when nothing needs
 * escaping (*owned NULL), else its escaped copy, which *owned holds for the
 * caller to free ("?" when out of memory). */
const char *hutch__utf8_shown(const char *s, int flags, char **owned);

#endif
