/*
 * agent_blob.h - the in-container agent that libhutch carries
 */
#ifndef HUTCH_AGENT_BLOB_H
#define HUTCH_AGENT_BLOB_H

#include <stddef.h>
#include <sys/types.h>

/* Where the agent lives inside every hutch container (HUTCH_AGENT_DIR,
 * HUTCH_AGENT_PATH), the last-used record the agent keeps (HUTCH_USE_DIR,
 * HUTCH_LAST_USED_PATH) and the rest of the protocol. */
#include "agent_protocol.h"
/* HUTCH_AGENT_BUILD, generated from the agent (Makefile.am). */
#include "agent_build.h"

/* Where every exec runs the agent: a name of this build's own, so a
 * container with another build's agent (a session made by an older
 * hutch) is found out by the path missing (agent_install.c). */
#define HUTCH_AGENT_RUN_PATH \
	HUTCH_AGENT_BIN_DIR "/" HUTCH_AGENT_NAME "-" HUTCH_AGENT_BUILD

/* The owner of HUTCH_AGENT_DIR and the agent: HUTCH_AGENT_OWNER_UID for
 * every session, a uid that neither the session nor any of its commands
 * runs as (hutch_exec_options.user may name root, so root may not own
 * it either). */
unsigned int hutch__agent_owner(unsigned int session_uid);

/* A tar archive to PUT at "/": the directories HUTCH_AGENT_DIR and
 * HUTCH_AGENT_BIN_DIR and the agent at HUTCH_AGENT_PATH and
 * HUTCH_AGENT_RUN_PATH (mode 0111), all owned by
 * hutch__agent_owner(session_uid), the directories HUTCH_USE_DIR and
 * HUTCH_PROC_DIR in it, and when `dir` is not NULL a directory `dir` (0755)
 * owned by uid:gid.  malloc'ed, or NULL when out of memory. */
char *hutch__agent_tar(unsigned int session_uid, const char *dir,
		       unsigned int uid, unsigned int gid, size_t *len);

struct archive;

/* Write one entry from memory (owner 0:0, mtime now) into a tar being
 * written; 0 or -1.  `type` is AE_IFREG or AE_IFDIR. */
int hutch__tar_add(struct archive *a, const char *path, mode_t type,
		   mode_t perm, const char *data, size_t len);
/* The same with an owner. */
int hutch__tar_add_owned(struct archive *a, const char *path, mode_t type,
			 mode_t perm, unsigned int uid, unsigned int gid,
			 const char *data, size_t len);

#endif
