/*
 * base64.c - base64 decoding (streaming) and encoding (see base64.h)
 */
#include "base64.h"

static int digit(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+' || c == '-')
		return 62;
	if (c == '/' || c == '_')
		return 63;
	return -1;
}

int hutch__b64_feed(hutch__b64 *d, unsigned char c, unsigned char *byte)
{
	int v = digit(c);

	if (v < 0)
		return -1;
	d->acc = (d->acc << 6) | (unsigned int)v;
	d->bits += 6;
	if (d->bits < 8)
		return 0;
	d->bits -= 8;
	*byte = (unsigned char)(d->acc >> d->bits);
	d->acc &= (1u << d->bits) - 1;
	return 1;
}

size_t hutch__b64_encode(char *out, const unsigned char *in, size_t len,
			 int flags)
{
	static const char std[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
				  "abcdefghijklmnopqrstuvwxyz0123456789+/";
	static const char url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
				  "abcdefghijklmnopqrstuvwxyz0123456789-_";
	const char *alphabet = flags & HUTCH__B64_URL ? url : std;
	size_t i, o = 0;

	for (i = 0; i + 2 < len; i += 3) {
		unsigned long v = (unsigned long)in[i] << 16 |
				  (unsigned long)in[i + 1] << 8 | in[i + 2];

		out[o++] = alphabet[v >> 18];
		out[o++] = alphabet[(v >> 12) & 63];
		out[o++] = alphabet[(v >> 6) & 63];
		out[o++] = alphabet[v & 63];
	}
	if (i < len) {
		unsigned long v =
			(unsigned long)in[i] << 16 |
			(i + 1 < len ? (unsigned long)in[i + 1] << 8 : 0);

		out[o++] = alphabet[v >> 18];
		out[o++] = alphabet[(v >> 12) & 63];
		if (i + 1 < len)
			out[o++] = alphabet[(v >> 6) & 63];
		if (flags & HUTCH__B64_PAD) {
			if (i + 1 >= len)
				out[o++] = '=';
			out[o++] = '=';
		}
	}
	out[o] = '\0';
	return o;
}
