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

/* The owner of HUTCH_AGENT_DIR and the agent: HUTCH_AGENT_OWNER_UID, a
 * uid reserved for it, whatever the session's user (which may not be
 * that uid).  Never the session's user. */
unsigned int hutch__agent_owner(unsigned int session_uid);

/* A tar archive to PUT at "/": the directory HUTCH_AGENT_DIR and the agent
 * (mode 0111), both owned by hutch__agent_owner(session_uid), the directory
 * HUTCH_USE_DIR in it, and when `dir` is not NULL a directory `dir` (0755)
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
