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
		n = 2; cp = c & 0x1f; min = 0x80;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3; cp = c & 0x0f; min = 0x800;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4; cp = c & 0x07; min = 0x10000;
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
