/*
 * chanjack.c - a hostile tool (tests/hostile/test_chan.c): a sandbox
 * process that takes the agent's channel over.  The socket is the
 * session user's (PID 1 runs as that user and made it) in a sticky
 * directory, so the user may remove it: chanjack puts a listening socket
 * of its own in its place, answers every connection with a HELLO as the
 * agent's (the same version, uid, gid and hostname), and writes one line
 * per connection to LOG: "conn BYTES", the bytes hutch sent it.  READY is
 * made once it listens.  Static, so that it runs in any image; built by
 * make check.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/utsname.h>

#define SOCK "/.hutch/chan/agent.sock"

static void be32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
}

int main(int argc, char **argv)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	unsigned char hello[8 + 12 + 65];
	struct utsname u;
	size_t name;
	int l, fd;
	FILE *f;

	if (argc != 3) {
		fprintf(stderr, "usage: chanjack LOG READY\n");
		return 2;
	}
	if (uname(&u) < 0)
		return 1;
	name = strlen(u.nodename);
	hello[0] = 0x10;
	hello[1] = hello[2] = hello[3] = 0;
	be32(hello + 4, (uint32_t)(12 + name));
	be32(hello + 8, 1);
	be32(hello + 12, (uint32_t)getuid());
	be32(hello + 16, (uint32_t)getgid());
	memcpy(hello + 20, u.nodename, name);
	unlink(SOCK);
	l = socket(AF_UNIX, SOCK_STREAM, 0);
	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", SOCK);
	umask(0);
	if (l < 0 || bind(l, (struct sockaddr *)&addr, sizeof(addr)) < 0 ||
	    listen(l, 16) < 0) {
		perror("chanjack: listen");
		return 1;
	}
	f = fopen(argv[2], "w");
	if (!f)
		return 1;
	fclose(f);
	while ((fd = accept(l, NULL, NULL)) >= 0) {
		char buf[4096];
		long got = 0;
		ssize_t n;

		send(fd, hello, 20 + name, MSG_NOSIGNAL);
		while ((n = read(fd, buf, sizeof(buf))) > 0)
			got += n;
		close(fd);
		f = fopen(argv[1], "a");
		if (f) {
			fprintf(f, "conn %ld\n", got);
			fclose(f);
		}
	}
	return 0;
}
