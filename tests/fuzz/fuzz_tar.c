/*
 * fuzz_tar.c - sync-out's extraction (src/lib/sync_out.c)
 *
 * The input is the tar the engine would send for /workspace.  It is
 * extracted by the real worker, on its own thread as hutch_sync_out runs
 * it, into a fresh host directory beside a canary directory and file.
 * Whatever the archive says, nothing may appear outside the host
 * directory and the canaries stay as they were.  The engine's transfer is
 * replaced by the input in memory: the worker's pipe is this file's.
 */
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"
#include "fuzz.h"
#include "sync_internal.h"

/* --- the pipe, from memory --------------------------------------------------- */

static const uint8_t *input;
static size_t input_len, input_at;

ssize_t hutch__pipe_read(struct hutch__pipe *p, void *buf, size_t len,
			 int timeout_ms)
{
	size_t n = input_len - input_at;

	(void)p;
	(void)timeout_ms;
	/* Small reads, so entries straddle them. */
	if (n > len)
		n = len;
	if (n > 700)
		n = 700;
	memcpy(buf, input + input_at, n);
	input_at += n;
	return (ssize_t)n;
}

void hutch__pipe_close_read(struct hutch__pipe *p, int discard)
{
	(void)p;
	(void)discard;
}

/* --- the host side -------------------------------------------------------------- */

/* Short enough that every path made from it fits. */
static char base[PATH_MAX / 4];

FUZZ_INIT(tar)
{
	char p[PATH_MAX / 2];
	int fd;

	snprintf(base, sizeof(base), "%s/hutch-fuzz-tar-XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(base))
		return -1;
	snprintf(p, sizeof(p), "%s/canary", base);
	if (mkdir(p, 0755) < 0)
		return -1;
	snprintf(p, sizeof(p), "%s/canary.txt", base);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, "canary\n", 7) != 7)
		return -1;
	close(fd);
	return 0;
}

static int rm_entry(const char *path, const struct stat *st, int flag,
		    struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_DP)
		return rmdir(path);
	return unlink(path);
}

/* The base holds the canaries and the host directory, nothing else. */
static void check_base(void)
{
	char p[PATH_MAX / 2];
	struct stat st;
	DIR *d = opendir(base);
	struct dirent *e;
	int entries = 0;
	char buf[16];
	int fd;

	FUZZ_CHECK(d != NULL);
	while ((e = readdir(d))) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		FUZZ_CHECK(strcmp(e->d_name, "canary") == 0 ||
			   strcmp(e->d_name, "canary.txt") == 0 ||
			   strcmp(e->d_name, "host") == 0);
		entries++;
	}
	closedir(d);
	FUZZ_CHECK(entries == 3);
	snprintf(p, sizeof(p), "%s/canary", base);
	d = opendir(p);
	FUZZ_CHECK(d != NULL);
	while ((e = readdir(d)))
		FUZZ_CHECK(strcmp(e->d_name, ".") == 0 ||
			   strcmp(e->d_name, "..") == 0);
	closedir(d);
	snprintf(p, sizeof(p), "%s/canary.txt", base);
	FUZZ_CHECK(lstat(p, &st) == 0 && S_ISREG(st.st_mode) &&
		   st.st_size == 7 && st.st_nlink == 1);
	fd = open(p, O_RDONLY);
	FUZZ_CHECK(fd >= 0 && read(fd, buf, sizeof(buf)) == 7 &&
		   memcmp(buf, "canary\n", 7) == 0);
	close(fd);
}

static void *run(void *job)
{
	return hutch__sync_out_worker(job);
}

FUZZ_TARGET(tar)
{
	struct hutch__sync_out job;
	char host[PATH_MAX / 2];
	pthread_t t;

	if (!base[0])
		return 0;
	snprintf(host, sizeof(host), "%s/host", base);
	FUZZ_CHECK(mkdir(host, 0755) == 0);
	memset(&job, 0, sizeof(job));
	job.dirfd = open(host, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	FUZZ_CHECK(job.dirfd >= 0);
	job.top = "workspace";
	input = data;
	input_len = size;
	input_at = 0;
	FUZZ_CHECK(pthread_create(&t, NULL, run, &job) == 0);
	FUZZ_CHECK(pthread_join(t, NULL) == 0);
	FUZZ_CHECK(job.rc <= 0);
	FUZZ_CHECK((job.rc < 0) == (job.err != NULL));
	hutch_error_free(job.err);
	check_base();
	/* A directory the archive made 0000 stops nftw without privilege. */
	if (nftw(host, rm_entry, 16, FTW_DEPTH | FTW_PHYS) != 0) {
		char cmd[2 * PATH_MAX + 64];

		snprintf(cmd, sizeof(cmd), "chmod -R u+rwx '%s' && rm -rf '%s'",
			 host, host);
		FUZZ_CHECK(system(cmd) == 0);
	}
	return 0;
}
