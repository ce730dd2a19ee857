/*
 * agent_blob.c - the agent as a tar archive for the engine's archive API
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <archive.h>
#include <archive_entry.h>

#include "agent_blob.h"
#include "buf.h"

extern const char hutch__agent_start[];
extern const char hutch__agent_end[];

static pthread_once_t once = PTHREAD_ONCE_INIT;

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

/*
 * The agent's archive, to PUT at "/": the directory ".hutch/" itself (the
 * system volume's root), the agent and its use directory, all owned by
 * `owner`; and the entry `dir` owned by uid:gid when it is not NULL.  A
 * malloc'ed archive.
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
	if (!buf)
		return NULL;
	a = archive_write_new();
	if (!a || archive_write_set_format_pax_restricted(a) != ARCHIVE_OK ||
	    archive_write_open_memory(a, buf, cap, len) != ARCHIVE_OK ||
	    /* Owned by someone the session's commands never run as: the
	     * only one who may rename, replace or remove what is in a
	     * directory (without CAP_FOWNER or CAP_DAC_OVERRIDE, which a
	     * session does not have) is its owner, and the mount point
	     * itself cannot be renamed. */
	    hutch__tar_add_owned(a, ".hutch/", AE_IFDIR, 0755, owner, owner,
				 NULL, 0) < 0 ||
	    hutch__tar_add_owned(a, ".hutch/hutch-agent", AE_IFREG, 0755, owner,
				 owner, hutch__agent_start, agent_len) < 0 ||
	    /* Where the agent records the session's use: sticky and
	     * writable by all, as /tmp (see agent_mark_used). */
	    hutch__tar_add_owned(a, ".hutch/" HUTCH_USE_DIR "/", AE_IFDIR,
				 01777, owner, owner, NULL, 0) < 0 ||
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

/* Built once per owner: root's, or HUTCH_AGENT_OWNER's. */
static char *tar_data[2];
static size_t tar_len[2];

static void build(void)
{
	tar_data[0] = agent_archive(HUTCH_AGENT_OWNER, NULL, 0, 0, &tar_len[0]);
	tar_data[1] = agent_archive(0, NULL, 0, 0, &tar_len[1]);
}

char *hutch__agent_tar_with_dir(unsigned int owner, const char *dir,
				unsigned int uid, unsigned int gid, size_t *len)
{
	return agent_archive(owner, dir, uid, gid, len);
}

int hutch__agent_tar(unsigned int owner, const char **data, size_t *len)
{
	int i = owner == 0;

	if (owner != 0 && owner != HUTCH_AGENT_OWNER)
		return -1;
	pthread_once(&once, build);
	if (!tar_data[i])
		return -1;
	*data = tar_data[i];
	*len = tar_len[i];
	return 0;
}
