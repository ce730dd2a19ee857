/*
 * replay.c - feed every corpus file to its fuzz target (make check)
 *
 *   replay [TARGET...]      every target (or the ones named), each with
 *                           the files of FUZZ_CORPUS_DIR/TARGET/
 *
 * A target whose corpus directory is missing or empty fails: a replay of
 * nothing would pass and prove nothing.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"

#ifndef FUZZ_CORPUS_DIR
#error "FUZZ_CORPUS_DIR must name tests/fuzz/corpus"
#endif

#define TARGETS(X)   \
	X(demux)     \
	X(engine)    \
	X(jsonrpc)   \
	X(path)      \
	X(editmatch) \
	X(tar)       \
	X(redact)    \
	X(timestamp) \
	X(fsanswer)

#define DECLARE(name)                                            \
	int hutch_fuzz_##name(const uint8_t *data, size_t size); \
	int hutch_fuzz_init_##name(void) __attribute__((weak));
TARGETS(DECLARE)

static const struct {
	const char *name;
	int (*fn)(const uint8_t *, size_t);
	int (*init)(void);
} targets[] = {
#define ENTRY(name) { #name, hutch_fuzz_##name, hutch_fuzz_init_##name },
	TARGETS(ENTRY)
};

static int read_file(int dirfd, const char *name, uint8_t **data, size_t *len)
{
	struct stat st;
	int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	/* The input's exact size, so ASan sees reads past its end. */
	*data = malloc(st.st_size ? (size_t)st.st_size : 1);
	*len = 0;
	while (*data && *len < (size_t)st.st_size) {
		n = read(fd, *data + *len, (size_t)st.st_size - *len);
		if (n <= 0)
			break;
		*len += (size_t)n;
	}
	close(fd);
	return *data && *len == (size_t)st.st_size ? 0 : -1;
}

static int replay(size_t t)
{
	char path[4096];
	struct dirent **names = NULL;
	int dirfd, n, count = 0;

	snprintf(path, sizeof(path), "%s/%s", FUZZ_CORPUS_DIR, targets[t].name);
	dirfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	n = dirfd < 0 ? -1 : scandir(path, &names, NULL, alphasort);
	if (n < 0) {
		printf("not ok - %s: %s: %s\n", targets[t].name, path,
		       strerror(errno));
		return 1;
	}
	if (targets[t].init && targets[t].init() < 0) {
		printf("not ok - %s: its setup failed\n", targets[t].name);
		return 1;
	}
	for (int i = 0; i < n; i++) {
		uint8_t *data = NULL;
		size_t len;

		if (names[i]->d_name[0] != '.' &&
		    read_file(dirfd, names[i]->d_name, &data, &len) == 0) {
			/* A failed check aborts: the log's last line names
			 * the input. */
			fprintf(stderr, "%s: %s\n", targets[t].name,
				names[i]->d_name);
			targets[t].fn(data, len);
			count++;
		}
		free(data);
		free(names[i]);
	}
	free(names);
	close(dirfd);
	if (count == 0) {
		printf("not ok - %s: no inputs in %s\n", targets[t].name, path);
		return 1;
	}
	printf("ok - %s: %d inputs\n", targets[t].name, count);
	return 0;
}

int main(int argc, char **argv)
{
	int failed = 0, ran = 0;

	for (size_t t = 0; t < sizeof(targets) / sizeof(targets[0]); t++) {
		int wanted = argc < 2;

		for (int i = 1; i < argc; i++)
			wanted |= strcmp(argv[i], targets[t].name) == 0;
		if (wanted) {
			failed |= replay(t);
			ran++;
		}
	}
	if (ran == 0) {
		fprintf(stderr, "replay: no such target\n");
		return 2;
	}
	return failed;
}
