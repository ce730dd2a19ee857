/*
 * demux.c - exec stream demultiplexer
 */
#include <string.h>

#include "demux.h"

void hutch__demux_init(hutch_demux *d)
{
	memset(d, 0, sizeof(*d));
}

static int parse_header(hutch_demux *d)
{
	const unsigned char *h = d->header;

	/* Stream ids are 0 (Podman's stdout), 1, 2 and 3 (Docker's system
	 * error); the three padding bytes are always zero.  Anything else
	 * means we are not reading a multiplexed stream at all, and guessing
	 * would hand garbage to the caller as output. */
	if (h[0] > 3 || h[1] || h[2] || h[3])
		return -1;
	d->stream = h[0] == 0 ? HUTCH_DEMUX_STDOUT : h[0];
	d->remaining = (uint32_t)h[4] << 24 | (uint32_t)h[5] << 16 |
		       (uint32_t)h[6] << 8 | (uint32_t)h[7];
	d->header_len = 0;
	d->frames++;
	return 0;
}

int hutch__demux_feed(hutch_demux *d, const char *data, size_t len,
		      hutch_demux_cb cb, void *payload)
{
	size_t n;
	int rc;

	if (d->failed)
		return -1;
	while (len > 0) {
		if (d->remaining == 0) {
			n = sizeof(d->header) - d->header_len;
			if (n > len)
				n = len;
			memcpy(d->header + d->header_len, data, n);
			d->header_len += n;
			data += n;
			len -= n;
			if (d->header_len < sizeof(d->header))
				break;
			if (parse_header(d) < 0) {
				d->failed = 1;
				return -1;
			}
			continue;
		}
		n = d->remaining < len ? d->remaining : len;
		d->remaining -= (uint32_t)n;
		rc = cb(d->stream, data, n, payload);
		if (rc)
			return rc;
		data += n;
		len -= n;
	}
	return 0;
}

int hutch__demux_at_boundary(const hutch_demux *d)
{
	return !d->failed && d->remaining == 0 && d->header_len == 0;
}
