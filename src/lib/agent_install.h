/*
 * agent_install.h - this build's agent in a session made by another
 */
#ifndef HUTCH_AGENT_INSTALL_H
#define HUTCH_AGENT_INSTALL_H

#include <stddef.h>

#include <hutch/session.h>

/* 1 when @data (an exec's first output) names HUTCH_AGENT_RUN_PATH, as
 * the runtime does when it cannot find it. */
int hutch__agent_missing_text(const char *data, size_t len);

/* When HUTCH_AGENT_RUN_PATH is missing in the session's container
 * (archive HEAD: 404), install the agent (hutch__session_put_agent) and
 * return 1: the exec that failed ran nothing, run it again.  0 when the
 * file is there (do not run again), or a negative HUTCH_E* code. */
int hutch__agent_install_if_missing(hutch_session *s, hutch_error **err);

#endif
