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
static char *tar_data;
static size_t tar_len;

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

/* The agent's entries under `prefix` ("" or ".hutch/"), and the entry
 * `dir` owned by uid:gid when it is not NULL; a malloc'ed archive. */
static char *agent_archive(const char *prefix, const char *dir, unsigned int uid,
			   unsigned int gid, size_t *len)
{
	size_t agent_len = (size_t)(hutch__agent_end - hutch__agent_start);
	/* A ustar archive is the file plus headers, padded to 10 KiB. */
	size_t cap = agent_len + 64 * 1024;
	char agent[64], use[64];
	struct archive *a;
	char *buf = malloc(cap);

	*len = 0;
	if (!buf)
		return NULL;
	snprintf(agent, sizeof(agent), "%shutch-agent", prefix);
	snprintf(use, sizeof(use), "%s%s", prefix, HUTCH_USE_DIR);
	a = archive_write_new();
	if (!a ||
	    archive_write_set_format_pax_restricted(a) != ARCHIVE_OK ||
	    archive_write_open_memory(a, buf, cap, len) != ARCHIVE_OK ||
	    hutch__tar_add(a, agent, AE_IFREG, 0755, hutch__agent_start, agent_len) < 0 ||
	    /* Where the agent records the session's use: root's, sticky
	     * and writable by all, as /tmp (see agent_mark_used). */
	    hutch__tar_add(a, use, AE_IFDIR, 01777, NULL, 0) < 0 ||
	    (dir && hutch__tar_add_owned(a, dir, AE_IFDIR, 0755, uid, gid, NULL, 0) < 0) ||
	    archive_write_close(a) != ARCHIVE_OK) {
		archive_write_free(a);
		free(buf);
		return NULL;
	}
	archive_write_free(a);
	return buf;
}

static void build(void)
{
	tar_data = agent_archive("", NULL, 0, 0, &tar_len);
}

char *hutch__agent_tar_with_dir(const char *dir, unsigned int uid, unsigned int gid,
				size_t *len)
{
	return agent_archive(".hutch/", dir, uid, gid, len); /* HUTCH_AGENT_DIR */
}

int hutch__agent_tar(const char **data, size_t *len)
{
	pthread_once(&once, build);
	if (!tar_data)
		return -1;
	*data = tar_data;
	*len = tar_len;
	return 0;
}
