/*
 * agent_blob.c - the agent as a tar archive for the engine's archive API
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <archive.h>
#include <archive_entry.h>

#include "agent_blob.h"
#include "buf.h"
#include "dl.h"

extern const char hutch__agent_start[];
extern const char hutch__agent_end[];

int hutch__tar_add(struct archive *a, const char *path, mode_t type,
		   mode_t perm, const char *data, size_t len)
{
	return hutch__tar_add_owned(a, path, type, perm, 0, 0, data, len);
}

int hutch__tar_add_owned(struct archive *a, const char *path, mode_t type,
			 mode_t perm, unsigned int uid, unsigned int gid,
			 const char *data, size_t len)
{
	struct archive_entry *entry = archive_entry_new();
	int ok;

	if (!entry)
		return -1;
	archive_entry_set_pathname(entry, path);
	archive_entry_set_filetype(entry, type);
	archive_entry_set_perm(entry, perm);
	archive_entry_set_uid(entry, uid);
	archive_entry_set_gid(entry, gid);
	archive_entry_set_size(entry, (la_int64_t)len);
	archive_entry_set_mtime(entry, time(NULL), 0);
	ok = archive_write_header(a, entry) == ARCHIVE_OK &&
	     (len == 0 || archive_write_data(a, data, len) == (la_ssize_t)len);
	archive_entry_free(entry);
	return ok ? 0 : -1;
}

/* A hard link `path` to `target` (both relative to the archive's root):
 * PID 1's path and this build's name share the agent's one inode, so the
 * archive carries it once.  The engines extract a link as a link to the
 * entry already extracted, inside the directory the archive goes to. */
static int add_link(struct archive *a, const char *path, const char *target,
		    unsigned int owner)
{
	struct archive_entry *entry = archive_entry_new();
	int ok;

	if (!entry)
		return -1;
	archive_entry_set_pathname(entry, path);
	archive_entry_set_hardlink(entry, target);
	archive_entry_set_filetype(entry, AE_IFREG);
	archive_entry_set_perm(entry, 0111);
	archive_entry_set_uid(entry, owner);
	archive_entry_set_gid(entry, owner);
	archive_entry_set_size(entry, 0);
	archive_entry_set_mtime(entry, time(NULL), 0);
	ok = archive_write_header(a, entry) == ARCHIVE_OK;
	archive_entry_free(entry);
	return ok ? 0 : -1;
}

/*
 * The agent's archive, to PUT at "/" (see agent_blob.h).  Why the owner
 * and the modes:
 *   - HUTCH_AGENT_DIR and the agent belong to `owner`
 *     (HUTCH_AGENT_OWNER_UID), a user neither the session nor any of its
 *     commands runs as (account.c refuses it for a command's own user),
 *     and neither is writable by others (nor by their group): a command cannot
 *     rename the agent away and put its own in its place (that needs write
 *     access to the directory), write it, or chmod either (that needs to
 *     own them; the session has no CAP_FOWNER).  The engine starts the
 *     agent for every command, and the agent installs the seccomp filter
 *     (src/agent/seccomp.c) before it runs anything, so replacing it would
 *     run the next command without the filter.
 *   - The agent is 0111, executable and not readable: the kernel makes a
 *     process whose executable it cannot read undumpable from its execve on,
 *     so a command cannot ptrace the agent (or write its memory) in the
 *     instant before the filter is in place.
 *   - HUTCH_USE_DIR is root's, sticky and writable by all, as /tmp (see
 *     agent_mark_used), and so is HUTCH_PROC_DIR, where every user's
 *     background processes keep their output (src/agent/spawn.c): the
 *     sticky bit keeps one user from removing another's entries.
 *   - HUTCH_CHAN_DIR too: PID 1 makes its channel's socket there as the
 *     session's user.  The sticky bit keeps a command run as another user
 *     from replacing it; one run as the session's user can, and what keeps
 *     hutch from talking to its socket is the peer check on the host
 *     (src/lib/agent_chan.c).
 *   - HUTCH_AGENT_HOME_DIR too: the agent makes a home there for each
 *     user the image has no passwd entry for (src/agent/spawn.c), as that
 *     user, 0700; the sticky bit keeps other users from taking it away.
 */
static char *agent_archive(unsigned int owner, const char *dir,
			   unsigned int uid, unsigned int gid, size_t *len)
{
	size_t agent_len = (size_t)(hutch__agent_end - hutch__agent_start);
	/* A ustar archive is the file plus headers, padded to 10 KiB. */
	size_t cap = agent_len + 64 * 1024;
	struct archive *a;
	char *buf = malloc(cap);

	*len = 0;
	/* The caller loaded libarchive, to report a failure; this keeps a
	 * new caller that did not from calling through an empty table. */
	if (!buf || hutch__dl_archive(NULL) < 0) {
		free(buf);
		return NULL;
	}
	a = archive_write_new();
	if (!a || archive_write_set_format_pax_restricted(a) != ARCHIVE_OK ||
	    archive_write_open_memory(a, buf, cap, len) != ARCHIVE_OK ||
	    /* Names relative to "/": "HUTCH_AGENT_DIR + 1" drops the '/'. */
	    hutch__tar_add_owned(a, HUTCH_AGENT_DIR + 1, AE_IFDIR, 0755, owner,
				 owner, NULL, 0) < 0 ||
	    hutch__tar_add_owned(a, HUTCH_AGENT_BIN_DIR + 1, AE_IFDIR, 0755,
				 owner, owner, NULL, 0) < 0 ||
	    hutch__tar_add_owned(a, HUTCH_AGENT_RUN_PATH + 1, AE_IFREG, 0111,
				 owner, owner, hutch__agent_start,
				 agent_len) < 0 ||
	    add_link(a, HUTCH_AGENT_PATH + 1, HUTCH_AGENT_RUN_PATH + 1, owner) <
		    0 ||
	    hutch__tar_add(a, (HUTCH_AGENT_DIR "/" HUTCH_USE_DIR) + 1, AE_IFDIR,
			   01777, NULL, 0) < 0 ||
	    hutch__tar_add(a, HUTCH_AGENT_PROC_DIR + 1, AE_IFDIR, 01777, NULL,
			   0) < 0 ||
	    hutch__tar_add(a, (HUTCH_AGENT_DIR "/" HUTCH_CHAN_DIR) + 1,
			   AE_IFDIR, 01777, NULL, 0) < 0 ||
	    hutch__tar_add(a, HUTCH_AGENT_HOME_DIR + 1, AE_IFDIR, 01777, NULL,
			   0) < 0 ||
	    (dir && hutch__tar_add_owned(a, dir, AE_IFDIR, 0755, uid, gid, NULL,
					 0) < 0) ||
	    archive_write_close(a) != ARCHIVE_OK) {
		archive_write_free(a);
		free(buf);
		return NULL;
	}
	archive_write_free(a);
	return buf;
}

unsigned int hutch__agent_owner(unsigned int session_uid)
{
	/* Not root's: a command may run as root (hutch_exec_options.user),
	 * and root without capabilities is still the owner of what root
	 * owns.  The same uid whatever the session's, so the commands'
	 * check is one number (exec.c, account.c). */
	(void)session_uid;
	return HUTCH_AGENT_OWNER_UID;
}

char *hutch__agent_tar(unsigned int session_uid, const char *dir,
		       unsigned int uid, unsigned int gid, size_t *len)
{
	return agent_archive(hutch__agent_owner(session_uid), dir, uid, gid,
			     len);
}
