/*
 * utf8.c - UTF-8 validation and repair
 */
#include <stdlib.h>
#include <string.h>

#include "utf8.h"

size_t hutch__utf8_seq_len(const unsigned char *s, size_t len)
{
	unsigned char c = s[0];
	size_t n;
	unsigned int cp, min;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		n = 2;
		cp = c & 0x1f;
		min = 0x80;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		cp = c & 0x0f;
		min = 0x800;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		cp = c & 0x07;
		min = 0x10000;
	} else {
		return 0; /* continuation byte, 0xc0/0xc1 or 0xf5.. */
	}
	if (len < n)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

char *hutch__utf8_repair(const char *in, size_t len, size_t *out_len)
{
	const unsigned char *s = (const unsigned char *)in;
	size_t i = 0, o = 0, n;
	char *out;

	/* Worst case every byte becomes the 3-byte replacement character. */
	if (len > ((size_t)-1 - 1) / 3)
		return NULL;
	out = malloc(len * 3 + 1);
	if (!out)
		return NULL;
	while (i < len) {
		n = hutch__utf8_seq_len(s + i, len - i);
		if (n == 0) {
			memcpy(out + o, "\xef\xbf\xbd", 3);
			o += 3;
			i++;
			continue;
		}
		memcpy(out + o, s + i, n);
		o += n;
		i += n;
	}
	out[o] = '\0';
	if (out_len)
		*out_len = o;
	return out;
}

size_t hutch__utf8_cut(const char *s, size_t n, size_t max)
{
	if (n <= max)
		return n;
	while (max > 0 && ((unsigned char)s[max] & 0xc0) == 0x80)
		max--;
	return max;
}

size_t hutch__utf8_valid_len(const char *s, size_t len)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, n;

	while (i < len) {
		n = hutch__utf8_seq_len(u + i, len - i);
		if (n == 0)
			return i;
		i += n;
	}
	return len;
}

/* Bytes of the sequence at u[i] (n from hutch__utf8_seq_len) to write as
 * \xNN, or 0 to copy it. */
static size_t escaped_bytes(const unsigned char *u, size_t n, int flags)
{
	if (n == 0)
		return 1; /* not UTF-8 */
	if (n == 1 && u[0] == '\t' && (flags & HUTCH__ESC_TEXT))
		return 0;
	if (n == 1 && (u[0] < 0x20 || u[0] == 0x7f))
		return 1; /* C0, DEL */
	if (n == 2 && u[0] == 0xc2 && u[1] < 0xa0)
		return 2; /* C1 */
	return 0;
}

int hutch__utf8_needs_escape(const char *s, size_t len, int flags)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, n;

	while (i < len) {
		n = hutch__utf8_seq_len(u + i, len - i);
		if (escaped_bytes(u + i, n, flags) ||
		    (u[i] == '\\' && !(flags & HUTCH__ESC_TEXT)))
			return 1;
		i += n;
	}
	return 0;
}

char *hutch__utf8_escape(const char *s, size_t len, size_t max, int flags)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *u = (const unsigned char *)s;
	size_t shown = len < max ? len : max, i = 0, o = 0, n, k;
	char *out;

	/* Worst case every byte becomes four ("\xNN"), then "...". */
	if (shown > ((size_t)-1 - 4) / 4)
		return NULL;
	out = malloc(shown * 4 + 4);
	if (!out)
		return NULL;
	while (i < shown) {
		n = hutch__utf8_seq_len(u + i, len - i);
		/* A sequence that runs past the cut is not shown whole. */
		if (n > shown - i)
			break;
		k = escaped_bytes(u + i, n, flags);
		if (k) {
			for (size_t j = 0; j < k; j++) {
				out[o++] = '\\';
				out[o++] = 'x';
				out[o++] = hex[u[i + j] >> 4];
				out[o++] = hex[u[i + j] & 15];
			}
			i += k;
			continue;
		}
		if (u[i] == '\\' && !(flags & HUTCH__ESC_TEXT)) {
			out[o++] = '\\';
			out[o++] = '\\';
		} else {
			memcpy(out + o, u + i, n);
			o += n;
		}
		i += n;
	}
	if (i < len) {
		memcpy(out + o, "...", 3);
		o += 3;
	}
	out[o] = '\0';
	return out;
}

const char *hutch__utf8_shown(const char *s, int flags, char **owned)
{
	size_t len = strlen(s);

	*owned = NULL;
	if (!hutch__utf8_needs_escape(s, len, flags))
		return s;
	*owned = hutch__utf8_escape(s, len, (size_t)-1, flags);
	return *owned ? *owned : "?";
}
