/*
 * session_internal.h - what exec needs to know about a session
 */
#ifndef HUTCH_SESSION_INTERNAL_H
#define HUTCH_SESSION_INTERNAL_H

#include <hutch/session.h>

#define HUTCH_LABEL_SESSION "dev.hutch.session"
#define HUTCH_LABEL_VERSION "dev.hutch.version"
#define HUTCH_LABEL_CREATED "dev.hutch.created"
#define HUTCH_LABEL_IMAGE "dev.hutch.image"
#define HUTCH_LABEL_WORKSPACE "dev.hutch.workspace"
#define HUTCH_LABEL_ENV "dev.hutch.env"
#define HUTCH_LABEL_CONFIG "dev.hutch.config"

struct hutch_session {
	hutch_engine *engine;   /* borrowed */
	char *name;
	char *container;        /* "hutch-NAME" */
	char *volume;           /* "hutch-NAME" */
	char *image;
	char *workspace;        /* absolute host path, or NULL for the volume */
	char **env;
	size_t env_count;
	int new_record;         /* the last ensure found no volume and made it:
				   the session is brand new, not recovered */
};

/* Container name of the session.  Borrowed. */
const char *hutch__session_container(const hutch_session *s);

/* GET the container's state: 1 running, 0 exists but not running or
 * paused (its status in `state`), HUTCH_ENOTFOUND, HUTCH_ECONFLICT when the
 * name belongs to a container hutch did not make, or another error. */
int hutch__session_state(hutch_session *s, char *state, size_t statesz,
			 hutch_error **err);

/* PUT a tar archive (in memory) at "/" in the session's container, which
 * must exist (it may be stopped).  `what` starts the error message. */
int hutch__session_put_tar(hutch_session *s, const char *data, size_t len,
			   const char *what, hutch_error **err);

#endif
