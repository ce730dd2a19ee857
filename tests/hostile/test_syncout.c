/*
 * test_syncout.c - sync-out into a directory the sandbox can change while
 * it is written (doc/threat-model.md, "sync-out writes only below HOSTDIR")
 *
 * The host directory lies inside the session's own bind-mounted workspace,
 * so the sandbox sees it as /workspace/out.  A static racer runs in the
 * session and swaps out/d (where sync-out writes hundreds of files and
 * hard links) with out/s, a symlink to a canary directory on the host,
 * with renameat2(RENAME_EXCHANGE) in a tight loop, while sync-out runs
 * again and again.  Extraction that checks a path and then uses it by name
 * loses that race within a round.  Afterwards the canary directory must be
 * exactly as it was (same names, inodes, contents, link counts), nothing
 * may appear next to it, and nothing in the workspace may share an inode
 * with a canary file.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hostile.h"

#define FILES 300
#define ROUNDS 12
/* The session's user owns the bind-mounted workspace (a root-owned one
 * would need --user root). */
#define UID 1000
#define GID 1000

static void write_text(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);

	cr_assert(fd >= 0, "%s: %s", path, strerror(errno));
	cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	cr_assert_eq(close(fd), 0);
	cr_assert_eq(chmod(path, mode), 0);
}

static void raced_sync_out(void);

struct canary {
	ino_t ino;
	off_t size;
};

/* The canary directory: FILES files "fN" and "hN" (0600, "canary\n"),
 * named as sync-out's files and hard links, plus "secret". */
static void make_canary(const char *dir, struct canary *c, size_t n)
{
	char p[PATH_MAX];
	struct stat st;

	cr_assert_eq(mkdir(dir, 0755), 0);
	for (size_t i = 0; i < n; i++) {
		if (i == n - 1)
			snprintf(p, sizeof(p), "%s/secret", dir);
		else
			snprintf(p, sizeof(p), "%s/%c%zu", dir,
				 i % 2 ? 'h' : 'f', i / 2);
		write_text(p, "canary\n", 0600);
		cr_assert_eq(lstat(p, &st), 0);
		c[i].ino = st.st_ino;
		c[i].size = st.st_size;
	}
}

/* Exactly the files make_canary made, unchanged. */
static void check_canary(const char *dir, const struct canary *c, size_t n)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	size_t seen = 0;

	cr_assert_not_null(d, "the canary directory %s is gone", dir);
	while ((de = readdir(d))) {
		char p[PATH_MAX], buf[16];
		struct stat st;
		size_t i;
		int fd;
		ssize_t len;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (!strcmp(de->d_name, "secret"))
			i = n - 1;
		else if ((de->d_name[0] == 'f' || de->d_name[0] == 'h') &&
			 strspn(de->d_name + 1, "0123456789") ==
				 strlen(de->d_name + 1))
			i = (size_t)atol(de->d_name + 1) * 2 +
			    (de->d_name[0] == 'h');
		else
			i = n;
		cr_assert(i < n - (strcmp(de->d_name, "secret") != 0),
			  "sync-out created %s/%s outside the host directory",
			  dir, de->d_name);
		snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
		cr_assert_eq(lstat(p, &st), 0);
		cr_assert(
			S_ISREG(st.st_mode) && st.st_ino == c[i].ino &&
				st.st_nlink == 1,
			"canary %s was replaced or linked (ino %lu, was %lu; %lu links)",
			p, (unsigned long)st.st_ino, (unsigned long)c[i].ino,
			(unsigned long)st.st_nlink);
		fd = open(p, O_RDONLY | O_CLOEXEC);
		cr_assert(fd >= 0);
		len = read(fd, buf, sizeof(buf));
		close(fd);
		cr_assert(len == 7 && !memcmp(buf, "canary\n", 7),
			  "canary %s was overwritten", p);
		seen++;
	}
	closedir(d);
	cr_assert_eq(seen, n,
		     "%zu of %zu canary files are left: sync-out removed some",
		     seen, n);
}

/* No file below `dir` shares an inode with a canary file. */
static void check_no_links(const char *dir, const struct canary *c, size_t n)
{
	char cmd[PATH_MAX + 64], line[64];
	FILE *f;

	snprintf(cmd, sizeof(cmd), "find '%s' -xdev -type f -printf '%%i\\n'",
		 dir);
	f = popen(cmd, "r");
	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f)) {
		ino_t ino = (ino_t)strtoull(line, NULL, 10);

		for (size_t i = 0; i < n; i++)
			cr_assert_neq(
				ino, c[i].ino,
				"a canary file is hard-linked into the workspace");
	}
	cr_assert_eq(pclose(f), 0);
}

/* Longer than IT_TEST's bound: twelve sync-outs of 600 entries on a busy
 * machine, each raced. */
HOSTILE_RACE_TEST(syncout, racing_sandbox_cannot_reach_outside_hostdir, 400.0)
{
	raced_sync_out();
}

static void raced_sync_out(void)
{
	const char *s = it_session();
	struct canary canary[2 * FILES + 1];
	char base[64], ws[128], canarydir[128], out[192], p[PATH_MAX];
	it_opts bg = { .limit = 200 };
	it_proc racer;
	int race;
	it_result r;
	int refused = 0;

	snprintf(base, sizeof(base), "/tmp/hutch-hostile-syncout-XXXXXX");
	cr_assert_not_null(mkdtemp(base));
	cr_assert_eq(chmod(base, 0755), 0);
	snprintf(ws, sizeof(ws), "%s/ws", base);
	snprintf(canarydir, sizeof(canarydir), "%s/canary", base);
	snprintf(out, sizeof(out), "%s/out", ws);
	make_canary(canarydir, canary, 2 * FILES + 1);

	/* The workspace: src/d holds the files and hard links sync-out
	 * copies; out/ (HOSTDIR) is made by the sandbox's user, with out/d
	 * and out/s -> the canary directory. */
	cr_assert_eq(mkdir(ws, 0755), 0);
	hostile_install_tool("racer", ws);
	hostile_sh(
		"mkdir -p '%s/src/d' '%s/d' && cd '%s/src/d' && i=0 && while [ $i -lt %d ]; do "
		"echo new > f$i && ln f$i h$i && i=$((i+1)); done",
		ws, out, ws, FILES);
	cr_assert_eq(symlink(canarydir,
			     (snprintf(p, sizeof(p), "%s/s", out), p)),
		     0);
	hostile_sh("chown -R -h %d:%d '%s'", UID, GID, ws);

	r = it_hutch("up", s, "--workspace", ws, NULL);
	IT_ASSERT_EXIT(r, 0, "hutch up S --workspace WS");
	it_result_free(&r);

	{
		const char *args[] = { "exec",
				       s,
				       "--",
				       "/workspace/racer",
				       "/workspace/out",
				       "d",
				       "s",
				       canarydir,
				       "/workspace/stop",
				       NULL };

		race = hostile_race_begin();
		it_spawn(&racer, &bg, args);
	}
	/* The racer is running once out/s has moved at least once. */
	for (int i = 0; i < 200; i++) {
		struct stat st;

		snprintf(p, sizeof(p), "%s/d", out);
		if (lstat(p, &st) == 0 && S_ISLNK(st.st_mode))
			break;
		it_sleep(0.05);
	}

	for (int round = 0; round < ROUNDS; round++) {
		r = it_hutch("sync-out", s, out, "src", NULL);
		/* Entries the racer turned into symlinks are refused, and
		 * say so; nothing else may go wrong. */
		if (r.status != 0) {
			cr_assert(strstr(r.err, "refused") != NULL,
				  "round %d: sync-out failed otherwise: %s",
				  round, r.err);
			refused++;
		}
		it_result_free(&r);
	}

	snprintf(p, sizeof(p), "%s/stop", ws);
	write_text(p, "", 0644);
	r = it_wait(&racer);
	hostile_race_end(race);
	IT_ASSERT_EXIT(r, 0, "the racer");
	cr_assert(strstr(r.out, " swaps") && atol(r.out) > 1000,
		  "the racer did not race: %s", r.out);
	cr_log_info("racer: %.*s; %d of %d rounds saw refused entries",
		    (int)strcspn(r.out, "\n"), r.out, refused, ROUNDS);
	it_result_free(&r);

	check_canary(canarydir, canary, 2 * FILES + 1);
	check_no_links(ws, canary, 2 * FILES + 1);
	/* Next to the workspace and the canary, nothing appeared. */
	hostile_sh("test \"$(ls -A '%s' | tr '\\n' ' ')\" = 'canary ws '",
		   base);
	/* And the race did not stop sync-out from doing its job when the
	 * sandbox stops racing. */
	r = it_hutch("sync-out", s, out, "src", NULL);
	IT_ASSERT_EXIT(r, 0, "sync-out once the racer stopped");
	it_result_free(&r);
	hostile_sh(
		"test \"$(cat '%s/d/f7')\" = new && test \"$(cat '%s/d/h7')\" = new",
		out, out);

	hostile_sh("rm -rf '%s'", base);
}

/*
 * The host directory's own path is no way out either: a sandbox that can
 * write where HOSTDIR lies puts a symlink there (to a host directory) just
 * before sync-out opens it, or before sync-in reads it.  hutch follows no
 * symlink on that path and says how to name it instead.
 */
IT_TEST(syncout, hostdir_path_through_a_symlink_is_refused)
{
	const char *s = it_session();
	struct canary canary[3];
	char base[64], ws[128], canarydir[128], p[256];
	it_result r;

	snprintf(base, sizeof(base), "/tmp/hutch-hostile-hostdir-XXXXXX");
	cr_assert_not_null(mkdtemp(base));
	snprintf(ws, sizeof(ws), "%s/ws", base);
	snprintf(canarydir, sizeof(canarydir), "%s/canary", base);
	make_canary(canarydir, canary, 3);
	cr_assert_eq(mkdir(ws, 0755), 0);
	hostile_sh("chown %d:%d '%s'", UID, GID, ws);
	r = it_hutch("up", s, "--workspace", ws, NULL);
	IT_ASSERT_EXIT(r, 0, "hutch up S --workspace WS");
	it_result_free(&r);
	/* What the sandbox does: its workspace gets f0 and secret, and
	 * out -> the canary directory. */
	snprintf(p, sizeof(p),
		 "echo pwn > f0 && echo pwn > secret && ln -s %s out",
		 canarydir);
	r = it_hutch("sh", s, p, NULL);
	IT_ASSERT_EXIT(r, 0, "the sandbox plants out -> canary");
	it_result_free(&r);

	snprintf(p, sizeof(p), "%s/out", ws);
	r = it_hutch("sync-out", s, p, NULL);
	cr_assert(r.status != 0 && strstr(r.err, "symlink"),
		  "sync-out into a path through a symlink: exit %d: %s",
		  r.status, r.err);
	it_result_free(&r);
	snprintf(p, sizeof(p), "%s/out/sub", ws);
	r = it_hutch("sync-out", s, p, NULL);
	cr_assert(r.status != 0 && strstr(r.err, "symlink"),
		  "sync-out below a symlink: exit %d: %s", r.status, r.err);
	it_result_free(&r);
	check_canary(canarydir, canary, 3);

	/* sync-in the other way: nothing of the canary reaches the sandbox. */
	snprintf(p, sizeof(p), "%s/out", ws);
	r = it_hutch("sync-in", s, p, NULL);
	cr_assert(r.status != 0 && strstr(r.err, "symlink"),
		  "sync-in from a path through a symlink: exit %d: %s",
		  r.status, r.err);
	it_result_free(&r);
	r = it_hutch("exec", s, "--", "cat", "/workspace/f0", NULL);
	IT_ASSERT_EXIT(r, 0, "cat f0");
	cr_assert_str_eq(r.out, "pwn\n",
			 "the canary was copied into the sandbox");
	it_result_free(&r);
	hostile_sh("rm -rf '%s'", base);
}
