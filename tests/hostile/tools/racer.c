/*
 * racer.c - swaps two names in a directory as fast as it can (tests/hostile)
 *
 *   racer DIR A B TARGET STOPFILE
 *
 * Exchanges DIR/A and DIR/B with renameat2(RENAME_EXCHANGE) until STOPFILE
 * exists (at most 120 s), then prints how many swaps it made.  One of the
 * two is kept a symlink to TARGET: when neither is one (whatever hutch did
 * replaced it), B moves aside and a new symlink takes its name.  Built
 * static, so it runs in any session image.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <linux/fs.h>

int main(int argc, char **argv)
{
	unsigned long n, swaps = 0;
	time_t end = time(NULL) + 120;
	char b[8], aside[32];
	int dfd;

	if (argc != 6) {
		fprintf(stderr, "usage: racer DIR A B TARGET STOPFILE\n");
		return 2;
	}
	dfd = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		perror(argv[1]);
		return 2;
	}
	for (n = 0;; n++) {
		if (syscall(SYS_renameat2, dfd, argv[2], dfd, argv[3],
			    RENAME_EXCHANGE) == 0) {
			swaps++;
		} else if (errno == ENOENT) {
			/* One was removed: it comes back as the symlink. */
			(void)symlinkat(argv[4], dfd, argv[2]);
			(void)symlinkat(argv[4], dfd, argv[3]);
		}
		if ((n & 63) == 0 &&
		    readlinkat(dfd, argv[2], b, sizeof(b)) < 0 &&
		    readlinkat(dfd, argv[3], b, sizeof(b)) < 0) {
			snprintf(aside, sizeof(aside), "aside%lu", n);
			(void)renameat(dfd, argv[3], dfd, aside);
			(void)symlinkat(argv[4], dfd, argv[3]);
		}
		if ((n & 1023) == 0 &&
		    (access(argv[5], F_OK) == 0 || time(NULL) > end))
			break;
	}
	printf("%lu swaps\n", swaps);
	return 0;
}
