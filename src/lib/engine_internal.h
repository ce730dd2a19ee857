/*
 * engine_internal.h - what the library's modules share about an engine
 *
 * Layers, bottom up: the handle's fields (engine_handle.h, filled by
 * engine.c), the transport (http.h, http.c), the engine's error answers
 * (engine_errors.c), the generic JSON call below and the typed engine
 * calls on top of it (engine_api.h, engine_api.c).
 */
#ifndef HUTCH_ENGINE_INTERNAL_H
#define HUTCH_ENGINE_INTERNAL_H

#include <stddef.h>
#include <json-c/json.h>

#include <hutch/engine.h>
#include <hutch/exec.h>

#include "buf.h"
#include "engine_handle.h"
#include "http.h"
#include "json.h"

/*
 * The usual request: JSON body in (may be NULL), JSON answer out (may be
 * NULL).  Statuses outside 2xx and 304 become a typed error whose message
 * starts with `what`.  `*status` (may be NULL) gets the HTTP status
 * (engine_api.c).
 */
int hutch__engine_call(hutch_engine *e, const char *method, const char *path,
		       json_object *body, json_object **out, long *status,
		       const char *what, hutch_error **err);

/*
 * GET `path` for something that may not be there: 1 with its JSON in *out
 * (may be NULL), 0 when the engine answers 404 (no error set, *out NULL),
 * or a negative code with the error set (engine_api.c).
 */
int hutch__engine_get(hutch_engine *e, const char *path, const char *what,
		      json_object **out, hutch_error **err);

/* Turn an engine's error answer into a typed error (both body shapes:
 * {"message"} and Podman's {"cause","message","response"}). */
int hutch__engine_error(hutch_error **err, long status, const char *body,
			size_t len, const char *what);
/* The code for an HTTP status and engine message. */
int hutch__engine_error_code(long status, const char *message);
/* The engine's message from an error body, newly allocated, or NULL. */
char *hutch__engine_error_message(const char *body, size_t len);

#endif
