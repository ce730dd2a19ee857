/*
 * base64.h - a streaming base64 decoder, shared by the library and the agent
 *
 * The library reads the engine's X-Docker-Container-Path-Stat header with
 * it; the agent, the texts the library puts in an exec's environment.
 * Both the standard and the URL-safe alphabets are accepted; padding and
 * what follows it are the caller's to stop at.
 */
#ifndef HUTCH_SHARED_BASE64_H
#define HUTCH_SHARED_BASE64_H

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

#endif
