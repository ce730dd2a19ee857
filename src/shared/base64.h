/*
 * base64.h - base64, shared by the library and the agent
 *
 * The decoder streams: the library reads the engine's
 * X-Docker-Container-Path-Stat header with it; the agent, the texts the
 * library puts in an exec's environment (which the library encodes).  The
 * redactor encodes secrets to recognise them in output.
 */
#ifndef HUTCH_SHARED_BASE64_H
#define HUTCH_SHARED_BASE64_H

#include <stddef.h>

/* --- decoding ------------------------------------------------------------- */

/* Both the standard and the URL-safe alphabets are accepted; padding and
 * what follows it are the caller's to stop at. */
typedef struct {
	unsigned int acc; /* bits not yet output */
	int bits;	  /* how many */
} hutch__b64;

#define HUTCH__B64_INIT \
	{               \
		0, 0    \
	}

/* Feed one character: 1 with *byte set when it completes a byte, 0 when
 * it does not yet, -1 when it is not a base64 digit. */
int hutch__b64_feed(hutch__b64 *d, unsigned char c, unsigned char *byte);

/* --- encoding ------------------------------------------------------------- */

/* hutch__b64_encode flags. */
enum {
	HUTCH__B64_URL = 1, /* '-' and '_' for '+' and '/' (RFC 4648 s. 5) */
	HUTCH__B64_PAD = 2, /* '=' to a multiple of 4 */
};

/* Room hutch__b64_encode needs for `len` bytes, with the NUL. */
#define HUTCH__B64_ENCODED_SIZE(len) (((len) + 2) / 3 * 4 + 1)

/* Base64 of in[0..len) into `out` (HUTCH__B64_ENCODED_SIZE(len) bytes),
 * NUL-terminated; returns the length without the NUL. */
size_t hutch__b64_encode(char *out, const unsigned char *in, size_t len,
			 int flags);

#endif
