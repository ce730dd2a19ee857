/*
 * json.h - parsing the JSON documents engines (and the agent) send
 */
#ifndef HUTCH_JSON_H
#define HUTCH_JSON_H

#include <stddef.h>
#include <json-c/json.h>

/* Parse a JSON document of exactly `len` bytes; NULL when it is not one
 * (trailing bytes, a truncated document, nothing at all).  Caller puts. */
json_object *hutch__json_parse(const char *data, size_t len);

#endif
