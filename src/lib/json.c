/*
 * json.c - parsing the JSON documents engines (and the agent) send
 */
#include <json-c/json.h>

#include "json.h"

json_object *hutch__json_parse(const char *data, size_t len)
{
	json_tokener *tok;
	json_object *obj;

	if (!data || len == 0 || len > (size_t)0x7fffffff)
		return NULL;
	tok = json_tokener_new();
	if (!tok)
		return NULL;
	obj = json_tokener_parse_ex(tok, data, (int)len);
	/* Refuse trailing garbage and truncated documents alike. */
	if (!obj || json_tokener_get_error(tok) != json_tokener_success ||
	    json_tokener_get_parse_end(tok) != len) {
		json_object_put(obj);
		obj = NULL;
	}
	json_tokener_free(tok);
	return obj;
}
