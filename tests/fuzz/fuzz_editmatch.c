/*
 * fuzz_editmatch.c - the edit matcher (src/agent/editmatch.c)
 *
 * Input: a flags byte, the old text's and new text's lengths (a byte
 * each), the old text, the new text, and the file.  Whatever the match
 * level, the result keeps the documented shape.
 */
#include <string.h>

#include "editmatch.h"
#include "fuzz.h"

FUZZ_TARGET(editmatch)
{
	struct em_result res;
	const char *old, *new_text, *buf;
	size_t olen, nlen, len;
	bool all;
	int rc;

	if (size < 3)
		return 0;
	all = data[0] & 1;
	olen = data[1];
	nlen = data[2];
	data += 3;
	size -= 3;
	if (olen > size)
		olen = size;
	if (nlen > size - olen)
		nlen = size - olen;
	old = (const char *)data;
	new_text = old + olen;
	buf = new_text + nlen;
	len = size - olen - nlen;

	rc = em_edit(buf, len, old, olen, new_text, nlen, all, &res);
	switch (rc) {
	case EM_OK:
		FUZZ_CHECK(res.out != NULL || res.out_len == 0);
		FUZZ_CHECK(res.count >= 1);
		FUZZ_CHECK(res.out_len <= EM_OUT_MAX);
		if (res.match == EM_MATCH_EXACT) {
			/* Exact: every match is OLD's bytes, replaced by NEW's
			 * (line endings of NEW may grow to CRLF). */
			FUZZ_CHECK(res.out_len + res.count * olen >=
				   len + res.count * nlen);
			if (!all)
				FUZZ_CHECK(res.count == 1);
		}
		break;
	case EM_AMBIGUOUS:
		FUZZ_CHECK(!all && res.count >= 2);
		FUZZ_CHECK(res.nlines <= EM_MAX_LINES);
		break;
	case EM_NOMATCH:
	case EM_INVALID:
	case EM_TOOBIG:
		FUZZ_CHECK(res.out == NULL);
		break;
	default:
		FUZZ_CHECK(rc == EM_NOMEM);
	}
	if (rc == EM_INVALID)
		FUZZ_CHECK(olen == 0 ||
			   (olen == nlen && memcmp(old, new_text, olen) == 0));
	em_result_free(&res);
	return 0;
}
