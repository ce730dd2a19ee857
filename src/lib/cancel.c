/*
 * cancel.c - the cancellation flag (public: include/hutch/exec.h)
 *
 * Raised from signal handlers and other threads while a call runs; the
 * HTTP transport polls it (http.c), and so do sync's driver and exec.
 * It has a file of its own so that neither the transport nor sync has to
 * reach into exec for it.
 */
#include <stdlib.h>

#include <hutch/exec.h>

#include "engine_internal.h"
#include "error.h"

int hutch_cancel_new(hutch_cancel **out, hutch_error **err)
{
	hutch_cancel *c = calloc(1, sizeof(*c));

	if (!c)
		return hutch__error_oom(err);
	*out = c;
	return 0;
}

void hutch_cancel_raise(hutch_cancel *c)
{
	if (c)
		__atomic_store_n(&c->raised, 1, __ATOMIC_SEQ_CST);
}

int hutch_cancel_raised(const hutch_cancel *c)
{
	return c ? __atomic_load_n(&c->raised, __ATOMIC_SEQ_CST) : 0;
}

void hutch_cancel_free(hutch_cancel *c)
{
	free(c);
}
