/*
 * secrets.h - a session handle's secrets, inside the library
 *
 * The values live only in this process: in the exec create request of each
 * command (its Env, for that exec alone) and in the redaction automaton
 * that every output of the handle goes through.
 */
#ifndef HUTCH_SECRETS_H
#define HUTCH_SECRETS_H

#include <stddef.h>
#include <hutch/exec.h>
#include <hutch/session.h>

#include "redact.h"
#include "session_internal.h"

struct hutch__session_secrets {
	char **env; /* "NAME=VALUE", wiped when freed */
	size_t count;
	hutch__secrets *set; /* their patterns */
};

/* The handle's patterns, or NULL when it has no secrets.  Borrowed. */
const hutch__secrets *hutch__session_redaction(const hutch_session *s);

/* Replace the secrets in an error's message, engine message and detail.
 * Accepts NULL for either.  Out of memory, the text is dropped rather than
 * kept unredacted. */
void hutch__error_redact(hutch_error *err, const hutch__secrets *set);

#endif
