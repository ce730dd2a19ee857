/*
 * fuzz_engine.c - what the engine answers (src/lib/engine_errors.c)
 *
 * Any body, under any status, becomes a typed error whose message is one
 * line; the JSON parser takes exactly `len` bytes or nothing.
 */
#include <string.h>
#include <json-c/json.h>

#include "engine_internal.h"
#include "error.h"
#include "fuzz.h"

FUZZ_TARGET(engine)
{
	static const long statuses[] = {
		304, 400, 404, 409, 500, 503, 200, 418
	};
	hutch_error *err = NULL;
	json_object *doc;
	char *msg;
	int rc;

	if (size < 1)
		return 0;
	doc = hutch__json_parse((const char *)data + 1, size - 1);
	json_object_put(doc);
	msg = hutch__engine_error_message((const char *)data + 1, size - 1);
	free(msg);
	rc = hutch__engine_error(&err, statuses[data[0] % 8],
				 (const char *)data + 1, size - 1, "fuzz");
	FUZZ_CHECK(rc < 0);
	FUZZ_CHECK(err != NULL && hutch_error_code(err) == rc);
	FUZZ_CHECK(strchr(hutch_error_message(err), '\n') == NULL);
	hutch_error_free(err);
	return 0;
}
