/*
 * redact.h - replace secrets in output with "[REDACTED]", as it streams
 *
 * A secret set is built once from the secret values: for each value, the
 * byte strings under which it may show up in output are
 *
 *   - the raw value;
 *   - its hex encoding, lower and upper case;
 *   - its base64 encoding, standard and URL-safe alphabet, whole (with and
 *     without padding) and, because base64 of a value depends on where it
 *     falls in a 3-byte group of the encoded data, the part of each of the
 *     three alignments' encodings that is made of the value's bits alone
 *     (so `printf 'x%s' "$S" | base64` is caught too);
 *   - its percent-encodings, as the usual encoders write them: RFC 3986
 *     (only unreserved characters kept), JavaScript's encodeURIComponent,
 *     Python's quote (keeps '/'), form encoding (space as '+'), and every
 *     byte encoded; upper-case hex, and lower-case for the first and last;
 *   - its JSON string escapes: the minimal one (`"`, `\` and control
 *     characters), with `\/` (json-c, PHP), with every non-ASCII character
 *     as \uXXXX (Python's default, PHP's), both, and Go's (<, >, & and
 *     U+2028/9 as \uXXXX); the \u digits in lower case, and upper case for
 *     the ASCII-only form.
 *
 * Escapes of escapes (JSON inside JSON, a percent-encoded JSON string) are
 * not patterns: there are too many layers to list.
 *
 * All of them go into one Aho-Corasick automaton.  A redactor runs one
 * stream through it and holds back at most (longest pattern - 1) bytes, so
 * an occurrence cut across two reads, two frames or two calls is still
 * found, in time linear in the output whatever the secrets are.  Every byte
 * covered by an occurrence is masked; each run of overlapping occurrences
 * becomes one "[REDACTED]".
 *
 * Pure: bytes in, bytes out through a callback, no I/O.
 */
#ifndef HUTCH_REDACT_H
#define HUTCH_REDACT_H

#include <stddef.h>
#include <stdint.h>

#define HUTCH_REDACTED "[REDACTED]"

/* Limits: a secret shorter than 4 bytes would mask ordinary output (and
 * its encodings would be a character or two long); the longest pattern
 * sets the bytes held back per stream and the automaton's size. */
#define HUTCH_SECRET_MIN_LEN 4u
#define HUTCH_SECRET_MAX_LEN 4096u
#define HUTCH_SECRETS_MAX 32u
#define HUTCH_SECRETS_MAX_TOTAL (16u * 1024u)

typedef struct hutch__secrets hutch__secrets;

/*
 * Build the set for `n` values (`values[i]`, `lens[i]` bytes each).
 * Returns 0 with `*out` set (free with hutch__secrets_free), -1 when a
 * value or the total is outside the limits above (`*why` says which limit,
 * a static string), -2 out of memory.
 */
int hutch__secrets_new(hutch__secrets **out, const char *const *values,
		       const size_t *lens, size_t n, const char **why);
/* Accepts NULL.  Drops one reference; the last one wipes the patterns
 * and frees them. */
void hutch__secrets_free(hutch__secrets *set);
/* One more reference to an immutable set (thread-safe), so that a result
 * can redact what it shows after its session changed or freed its
 * secrets.  Returns `set`; accepts NULL. */
hutch__secrets *hutch__secrets_ref(const hutch__secrets *set);
/* Length of the longest pattern (0 for an empty set). */
size_t hutch__secrets_max_pattern(const hutch__secrets *set);

/* Where redacted output goes.  A non-zero return stops the feed and is
 * returned by it. */
typedef int (*hutch__redact_emit)(const char *data, size_t len, void *payload);

/* Bytes decided at once beyond the ones held back. */
#define HUTCH_REDACT_BATCH 4096u

typedef struct {
	uint64_t start, end; /* absolute stream positions, end exclusive */
} hutch__redact_run;

typedef struct {
	const hutch__secrets *set; /* borrowed */
	uint32_t state;		   /* automaton state */
	uint64_t pos;		   /* bytes fed so far */
	uint64_t base;		   /* bytes decided (emitted or masked) */
	char *window;		   /* bytes [base, pos), a ring of `size` */
	size_t hold;		   /* longest pattern */
	size_t size;		   /* hold + HUTCH_REDACT_BATCH */
	hutch__redact_run *runs;   /* masked runs in [base, pos), a ring */
	size_t runs_head, runs_len, runs_cap;
	int marked;	/* the first run's "[REDACTED]" is out */
	char out[4096]; /* emitted bytes not yet handed on */
	size_t out_len;
} hutch__redactor;

/* 0, or -1 out of memory.  A NULL or empty set passes bytes through. */
int hutch__redactor_init(hutch__redactor *r, const hutch__secrets *set);
/* Accepts a zeroed or freed redactor. */
void hutch__redactor_free(hutch__redactor *r);

/* Feed bytes; what is decided goes to `emit`.  Returns 0 or emit's
 * non-zero value. */
int hutch__redact_feed(hutch__redactor *r, const char *data, size_t len,
		       hutch__redact_emit emit, void *payload);
/*
 * The stream ended: emit what was held back.  With `cut` (the stream was
 * cut short: a timeout, a cap), its last bytes are masked too when they are
 * the start of a pattern at least HUTCH_SECRET_MIN_LEN long, since what
 * would have completed it was lost.  The redactor may then be fed again as
 * a new stream.
 */
int hutch__redact_flush(hutch__redactor *r, int cut, hutch__redact_emit emit,
			void *payload);

/* Redact a whole buffer (`cut` as above).  A new NUL-terminated string
 * (the caller frees it) of `*outlen` bytes (outlen may be NULL), or NULL
 * out of memory. */
char *hutch__redact_buffer(const hutch__secrets *set, const char *data,
			   size_t len, int cut, size_t *outlen);

#endif
