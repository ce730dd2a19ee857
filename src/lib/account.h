/*
 * account.h - who a session's commands and files belong to
 *
 * Read from the container itself: its Config.User and its /etc/passwd
 * and /etc/group (account.c).  Sync-in writes these ids into every tar
 * header; session creation gives the workspace and the agent's files to
 * them.
 */
#ifndef HUTCH_ACCOUNT_H
#define HUTCH_ACCOUNT_H

#include <hutch/engine.h>
#include <hutch/error.h>
#include <hutch/session.h>

/* The uid and gid the commands of `container` run as.  0, or the engine's
 * error, or HUTCH_EFAILED when a named user or group is not in the
 * container's files. */
int hutch__container_owner(hutch_engine *e, const char *container,
			   unsigned int *uid, unsigned int *gid,
			   hutch_error **err);

/* The uid of NAME in the container's /etc/passwd (and its group in *gid,
 * may be NULL), -1 when the file or the entry is missing, -2 when the
 * engine could not be asked. */
long hutch__container_account_id(hutch_engine *e, const char *container,
				 const char *name, long *gid);

/*
 * A command's own user (hutch_exec_options.user), "USER[:GROUP]" with
 * names or numbers, as the numbers the engine is to be given: names are
 * looked up in the container's /etc/passwd and /etc/group; a uid alone
 * gets its passwd entry's group (0 when none), as the engines do.
 * Numbers alone ("UID:GID") need no file.  Returns 0, HUTCH_EINVALID (bad
 * syntax, an unknown name, the reserved HUTCH_AGENT_OWNER_UID),
 * HUTCH_ENOTFOUND when /etc/passwd was needed and not there and
 * `running` is 0 (the container may be missing: the caller may bring it
 * up and ask again with `running` 1, when a missing file is read as an
 * empty one), or HUTCH_EFAILED when the engine could not be asked.
 */
int hutch__container_user(hutch_engine *e, const char *container,
			  const char *spec, int running, unsigned int *uid,
			  unsigned int *gid, hutch_error **err);
/* 1 when `spec` has the shape of USER[:GROUP] (nothing is looked up). */
int hutch__user_spec_valid(const char *spec);

/* The same for a session's container (also declared, for the session files, in
 * session_internal.h). */
int hutch__session_owner(hutch_session *s, unsigned int *uid, unsigned int *gid,
			 hutch_error **err);
long hutch__account_id(hutch_session *s, const char *name, long *gid);

#endif
