/*
 * hutch/fleet.h - sessions spread over several engines
 *
 * A fleet is a list of engines (`--engine` given more than once, or
 * HUTCH_ENGINES).  Each session lives on one of them: it is found again
 * there on every later call, and a session that exists nowhere yet is
 * placed on the reachable engine running the fewest hutch sessions.  An
 * engine that does not answer gets no new sessions.
 *
 * A fleet of one engine makes no request to place a session: it is the
 * engine, exactly as hutch_engine_open gives it.
 *
 * Threads: hutch_fleet_locate may be called from several threads at once
 * (placements made by one fleet are counted, so a batch of new sessions
 * started together spreads too); hutch_fleet_detach and hutch_fleet_free
 * only when no other thread uses the fleet.
 */
#ifndef HUTCH_FLEET_H
#define HUTCH_FLEET_H

#include <stddef.h>
#include <hutch/engine.h>
#include <hutch/error.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct hutch_fleet hutch_fleet;

/*
 * Open a fleet of the `n` engines at `urls`.  With n == 0, the URLs are
 * taken from HUTCH_ENGINES (separated by commas or white space); when that
 * is unset or empty, the fleet is the single engine hutch_engine_open(NULL)
 * finds.  No request is made here.  A URL given twice is refused, as is
 * one hutch cannot use (HUTCH_EINVALID).  `*out` belongs to the caller.
 */
int hutch_fleet_open(hutch_fleet **out, const char *const *urls, size_t n,
		     hutch_error **err);

/* Accepts NULL.  Frees every engine still in the fleet. */
void hutch_fleet_free(hutch_fleet *fleet);

/* Number of engines, and the i-th (borrowed; valid until it is detached
 * or the fleet is freed). */
size_t hutch_fleet_size(const hutch_fleet *fleet);
hutch_engine *hutch_fleet_engine(hutch_fleet *fleet, size_t i);

/* Flags of hutch_fleet_locate. */
#define HUTCH_FLEET_CREATE 1 /* place the session when it exists nowhere */

/*
 * The engine session `name` lives on: the one holding its container or its
 * workspace volume.  Asks every engine at once.
 *
 * When no engine has it: with HUTCH_FLEET_CREATE, the engine to create it
 * on (the reachable one running the fewest hutch sessions, counting the
 * sessions this fleet placed and whose containers may not exist yet; ties
 * go to the engine the name hashes highest with, so two processes placing
 * the same new name at once choose alike), else HUTCH_ENOTFOUND.
 * `*found` (may be NULL) is 1 when the session exists, 0 when it was
 * placed, -1 in a fleet of one engine, which is not asked.
 *
 * HUTCH_EAMBIGUOUS when the session exists on two engines (the message
 * names them; remove one with `hutch --engine URL rm NAME`).
 * HUTCH_EUNREACHABLE when no engine answers, or when the session exists
 * on no engine that answered and HUTCH_FLEET_CREATE is not given.  With
 * HUTCH_FLEET_CREATE and an engine down, a session that lives only on the
 * engine that is down cannot be seen; it is placed on one that answers.
 *
 * `*engine` is borrowed from the fleet.
 */
int hutch_fleet_locate(hutch_fleet *fleet, const char *name, int flags,
		       hutch_engine **engine, int *found, hutch_error **err);

/* 1 when the i-th engine did not answer during the last locate. */
int hutch_fleet_engine_down(const hutch_fleet *fleet, size_t i);

/* Remove `engine` from the fleet and give it to the caller, who frees it
 * with hutch_engine_free.  NULL when it is not in the fleet. */
hutch_engine *hutch_fleet_detach(hutch_fleet *fleet, hutch_engine *engine);

#ifdef __cplusplus
}
#endif

#endif
