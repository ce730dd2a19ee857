/*
 * fuzz_fsanswer.c - a file tool's answer from the agent (src/lib/fs_answer.c)
 *
 * Input: what the agent (or an impostor in its place) prints.  Whatever it
 * is, a parse that succeeds gives one valid JSON object in valid UTF-8 with
 * as many entries as it counts, every string redacted, and keeps memory
 * within a fixed multiple of the input's size.
 */
#include <stdlib.h>
#include <string.h>

#include "engine_internal.h"
#include "fs_answer.h"
#include "fuzz.h"
#include "utf8.h"

static hutch__secrets *set;

FUZZ_INIT(fsanswer)
{
	const char *v[1] = { "s3cret" };
	size_t l[1] = { 6 };
	const char *why;

	return hutch__secrets_new(&set, v, l, 1, &why) == 0 ? 0 : -1;
}

FUZZ_TARGET(fsanswer)
{
	struct hutch_fs_result *r = NULL;
	const char *why = NULL;
	int rc =
		hutch__fs_answer_parse(&r, (const char *)data, size, set, &why);

	FUZZ_CHECK(rc == 0 || rc == -1 || rc == -2);
	if (rc == -1)
		FUZZ_CHECK(why != NULL);
	if (rc == 0) {
		json_object *doc = hutch__json_parse(r->json, r->json_len), *v;

		FUZZ_CHECK(doc != NULL &&
			   json_object_is_type(doc, json_type_object));
		FUZZ_CHECK(hutch__utf8_valid_len(r->json, r->json_len) ==
			   r->json_len);
		FUZZ_CHECK(memmem(r->json, r->json_len, "s3cret", 6) == NULL);
		if (r->has_entries) {
			FUZZ_CHECK(json_object_object_get_ex(
				doc, r->entries_key, &v));
			FUZZ_CHECK(json_object_array_length(v) == r->count);
		}
		/* Bounded by the input, not by its shape. */
		FUZZ_CHECK(r->arena.len + r->count * sizeof(*r->entries) +
				   r->json_len <=
			   16 * size + 4096);
		json_object_put(doc);
	}
	hutch__fs_answer_free(r);
	return 0;
}
