/*
 * fuzz_redact.c - secret redaction (src/lib/redact.c)
 *
 * Input: a count byte, that many secret lengths (a byte each), the
 * secrets' bytes, a byte choosing how the rest is cut into reads, and the
 * rest, the output to redact.  Fed in pieces it must give exactly what the
 * whole buffer gives, and no secret may be left in it.  (Secrets made of
 * the marker's own characters could be spelled by markers next to their
 * leftovers; they are not checked for.)
 */
#include <string.h>

#include "fuzz.h"
#include "redact.h"

struct out {
	char *data;
	size_t len, cap;
};

static int collect(const char *data, size_t len, void *p)
{
	struct out *o = p;

	FUZZ_CHECK(o->len + len <= o->cap);
	memcpy(o->data + o->len, data, len);
	o->len += len;
	return 0;
}

static int marker_free(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (strchr(HUTCH_REDACTED, s[i]) && s[i] != '\0')
			return 0;
	return 1;
}

FUZZ_TARGET(redact)
{
	const char *values[8];
	size_t lens[8], n, at, piece, whole_len;
	hutch__secrets *set = NULL;
	hutch__redactor r;
	struct out o;
	const char *why, *text;
	char *whole;

	if (size < 2)
		return 0;
	n = data[0] % 8 + 1;
	at = 1;
	if (size < at + n + 1)
		return 0;
	for (size_t i = 0; i < n; i++)
		lens[i] = data[at + i] % 24 + 4;
	at += n;
	for (size_t i = 0; i < n; i++) {
		if (size < at + lens[i])
			return 0;
		values[i] = (const char *)data + at;
		at += lens[i];
	}
	if (size < at + 1)
		return 0;
	piece = data[at++] % 61 + 1;
	text = (const char *)data + at;
	size -= at;
	FUZZ_CHECK(hutch__secrets_new(&set, values, lens, n, &why) == 0);

	whole = hutch__redact_buffer(set, text, size, 0, &whole_len);
	FUZZ_CHECK(whole != NULL);
	for (size_t i = 0; i < n; i++)
		if (marker_free(values[i], lens[i]))
			FUZZ_CHECK(memmem(whole, whole_len, values[i],
					  lens[i]) == NULL);

	/* Every masked run is at least 4 bytes and becomes 10. */
	o.cap = size / 4 * 10 + size + 16;
	o.data = malloc(o.cap);
	o.len = 0;
	FUZZ_CHECK(o.data != NULL);
	FUZZ_CHECK(hutch__redactor_init(&r, set) == 0);
	for (size_t i = 0; i < size; i += piece)
		FUZZ_CHECK(
			hutch__redact_feed(&r, text + i,
					   size - i < piece ? size - i : piece,
					   collect, &o) == 0);
	FUZZ_CHECK(hutch__redact_flush(&r, 0, collect, &o) == 0);
	FUZZ_CHECK(o.len == whole_len && memcmp(o.data, whole, whole_len) == 0);
	hutch__redactor_free(&r);
	free(o.data);
	free(whole);
	hutch__secrets_free(set);
	return 0;
}
