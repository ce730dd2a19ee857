/*
 * agent_blob.h - the in-container agent that libhutch carries
 */
#ifndef HUTCH_AGENT_BLOB_H
#define HUTCH_AGENT_BLOB_H

#include <stddef.h>
#include <sys/types.h>

/* Where the agent lives inside every hutch container. */
#define HUTCH_AGENT_DIR "/.hutch"
#define HUTCH_AGENT_PATH "/.hutch/hutch-agent"
/* The session's last-used record: the mtime of a file the agent touches
 * (src/agent/main.c, AGENT_USE_FILE), in a directory that comes with it
 * (relative to HUTCH_AGENT_DIR). */
#define HUTCH_USE_DIR "use"
#define HUTCH_LAST_USED_PATH "/.hutch/use/last-used"

/*
 * The owner of /.hutch, the agent and its use directory: never the uid the
 * session's commands run as (the session library picks 0 for a session of
 * this uid), so that no command, not even one running as root without
 * capabilities, can replace or remove the agent that runs every later
 * command and file tool.
 */
#define HUTCH_AGENT_OWNER 65534u

/* A tar archive to PUT at "/": the directory .hutch/ (the system
 * volume's root), .hutch/hutch-agent and .hutch/HUTCH_USE_DIR/, owned by
 * `owner` (0 or HUTCH_AGENT_OWNER).  Built once per process; the bytes
 * are borrowed and live until exit.  0, or -1 when out of memory. */
int hutch__agent_tar(unsigned int owner, const char **data, size_t *len);
/* The same entries, and a directory `dir` (0755) owned by uid:gid:
 * malloc'ed, or NULL when out of memory. */
char *hutch__agent_tar_with_dir(unsigned int owner, const char *dir,
				unsigned int uid, unsigned int gid,
				size_t *len);

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
