/*
 * base64.c - a streaming base64 decoder (see base64.h)
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
