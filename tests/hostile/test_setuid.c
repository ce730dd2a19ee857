/*
 * test_setuid.c - hostile tests (see doc/threat-model.md): set-id files
 * and device nodes planted in a host workspace
 *
 * The attacker runs in a session whose workspace is a host directory
 * (hutch up S --workspace DIR), as root (--user root) or as the default
 * user, and wants a file in DIR that the host's other users can use
 * against it: a set-user-ID or set-group-ID file (the host runs it through
 * its own mount, where neither nosuid nor no-new-privileges applies, as
 * the file's owner: root, or DIR's owner), or a device node.  Every way a
 * program asks the kernel for such a file is tried: the chmod family
 * (busybox), creating opens and mknod with a set-id mode, O_TMPFILE
 * linked in, openat2, the i386 syscalls (int 0x80), device nodes with
 * CAP_MKNOD given back; then the ways around the agent's filter: replacing
 * the agent, and ptracing it.  Each attempt must fail with the command
 * reporting it, and DIR, looked at from the host, must hold no set-id
 * file and no device node.
 *
 * The probe making the raw syscalls is tests/hostile/tools/probe.c,
 * copied into DIR.
 */
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hostile.h"

/*
 * Remove what failed runs left: a test that stops half-way (on a build
 * that lets set-id files through) leaves its directory, holding set-uid
 * files.  Directories are named after the Criterion runner's pid, so only
 * those of runs that have ended are touched, never a running test's.
 */
static void remove_stale(void)
{
	DIR *d = opendir("/tmp");
	struct dirent *e;
	char cmd[PATH_MAX + 32];
	long pid;

	while (d && (e = readdir(d)))
		if (sscanf(e->d_name, "hutch-hostile-setuid-%ld-", &pid) == 1 &&
		    pid > 0 && kill((pid_t)pid, 0) < 0 && errno == ESRCH) {
			snprintf(cmd, sizeof(cmd), "rm -rf '/tmp/%s'",
				 e->d_name);
			cr_expect_eq(system(cmd), 0, "%s", cmd);
		}
	if (d)
		closedir(d);
}

/* The session's host directory, in `dir`: made (0700, so that what a
 * failed run leaves is no one else's), given to `owner`, the probe put
 * into it. */
static void make_workspace(char *dir, size_t cap, uid_t owner)
{
	remove_stale();
	/* The runner is the parent of the test workers (it_run_prefix). */
	snprintf(dir, cap, "/tmp/hutch-hostile-setuid-%ld-XXXXXX",
		 (long)getppid());
	cr_assert_not_null(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
	cr_assert_eq(chmod(dir, 0700), 0);
	cr_assert_eq(chown(dir, owner, owner), 0, "chown: %s", strerror(errno));
	hostile_install_tool("probe", dir);
}

static void remove_workspace(const char *dir)
{
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}

/* `hutch up S --workspace DIR [--user root] [more...]`, asserting success. */
static void up(const char *s, const char *dir, int root, const char *more)
{
	const char *args[12] = { "up", s, "--workspace", dir };
	size_t n = 4;
	it_result r;

	if (root) {
		args[n++] = "--user";
		args[n++] = "root";
	}
	if (more) {
		args[n++] = "--cap-add";
		args[n++] = more;
	}
	args[n] = NULL;
	r = it_hutch_v(NULL, args);
	IT_ASSERT_EXIT(r, 0, "hutch up");
	it_result_free(&r);
}

/* `sh -c SCRIPT` in S must exit 0 (preparation, not an attack). */
static void sh_ok(const char *s, const char *script)
{
	it_result r = it_hutch("exec", s, "--", "sh", "-c", script, NULL);

	IT_ASSERT_EXIT(r, 0, script);
	it_result_free(&r);
}

/*
 * One attempt, a command of ARGV in S: it must report failure (exit 1)
 * with `why` (strerror of the errno the filter answers) in its output.
 * Not fatal: every attempt of a test runs, and each one that got through
 * is reported.
 */
#define refused(s, why, ...) \
	refused_v((s), (why), (const char *const[]){ __VA_ARGS__, NULL })
static void refused_v(const char *s, const char *why, const char *const *argv)
{
	const char *args[16] = { "exec", s, "--" };
	char what[512] = "";
	size_t n = 3;
	it_result r;

	for (size_t i = 0; argv[i]; i++) {
		cr_assert_lt(n, 15);
		args[n++] = argv[i];
		snprintf(what + strlen(what), sizeof(what) - strlen(what),
			 "%s%s", i ? " " : "", argv[i]);
	}
	args[n] = NULL;
	r = it_hutch_v(NULL, args);
	cr_expect(
		!r.timed_out && r.status == 1 &&
			(strstr(r.out, why) || strstr(r.err, why)),
		"%s: exit %d (want 1 and '%s')\nstdout: %.600s\nstderr: %.600s",
		what, r.status, why, r.out, r.err);
	it_result_free(&r);
}

static int bad_entry(const char *path, const struct stat *st, int type,
		     struct FTW *ftw)
{
	(void)type;
	(void)ftw;
	cr_expect(!(st->st_mode & (S_ISUID | S_ISGID)),
		  "%s is set-id on the host: mode %o", path,
		  (unsigned int)st->st_mode);
	cr_expect(!S_ISCHR(st->st_mode) && !S_ISBLK(st->st_mode),
		  "%s is a device node on the host: mode %o", path,
		  (unsigned int)st->st_mode);
	return 0;
}

/* From the host: no set-id file and no device node anywhere in DIR. */
static void host_clean(const char *dir)
{
	cr_assert_eq(nftw(dir, bad_entry, 16, FTW_PHYS), 0, "nftw %s: %s", dir,
		     strerror(errno));
}

static mode_t host_mode(const char *dir, const char *name)
{
	char path[PATH_MAX + 64];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	cr_assert_eq(lstat(path, &st), 0, "%s: %s", path, strerror(errno));
	return st.st_mode;
}

#define EPERM_TEXT "Operation not permitted"

/* Every way to ask for a set-id file, then what must keep working. */
static void set_id_attempts(const char *s, const char *dir)
{
	sh_ok(s, "cp /workspace/probe /workspace/f && mkdir /workspace/d");
	refused(s, EPERM_TEXT, "chmod", "4755", "/workspace/f");
	refused(s, EPERM_TEXT, "chmod", "2755", "/workspace/f");
	refused(s, EPERM_TEXT, "chmod", "u+s", "/workspace/f");
	refused(s, EPERM_TEXT, "chmod", "g+s", "/workspace/d");
	refused(s, EPERM_TEXT, "/workspace/probe", "open", "/workspace/o");
	refused(s, EPERM_TEXT, "/workspace/probe", "open-sgid",
		"/workspace/og");
	refused(s, EPERM_TEXT, "/workspace/probe", "tmpfile", "/workspace",
		"/workspace/t");
	refused(s, EPERM_TEXT, "/workspace/probe", "mknod", "/workspace/m");
#ifdef __x86_64__
	{
		/* Refused by the filter, or not there at all: a kernel
		 * without an i386 syscall entry (the probe says so; the
		 * file's mode is checked below either way). */
		it_result r = it_hutch("exec", s, "--", "/workspace/probe",
				       "chmod32", "/workspace/f", NULL);

		cr_expect((r.status == 1 && strstr(r.out, EPERM_TEXT)) ||
				  (r.status == 3 &&
				   strstr(r.out, "no i386 syscall entry")),
			  "chmod32: exit %d\nstdout: %.600s\nstderr: %.600s",
			  r.status, r.out, r.err);
		it_result_free(&r);
	}
#endif
	/* Its mode is out of the filter's sight: as if the kernel lacked it. */
	refused(s, "Function not implemented", "/workspace/probe", "openat2",
		"/workspace/o2");
	host_clean(dir);
	cr_assert_eq(host_mode(dir, "f") & 07777, 0755);

	/* Normal use is untouched: plain modes, the sticky bit, mkdir -p,
	 * an archive and copies made and unpacked. */
	sh_ok(s,
	      "cd /workspace && chmod 700 f && chmod 755 f && chmod 1777 d && chmod g-s d &&"
	      " mkdir -p a/b/c && echo hi >a/b/c/x && chmod 640 a/b/c/x &&"
	      " tar -cf t.tar a && mkdir u && tar -xf t.tar -C u && cp -a a v &&"
	      " test \"$(cat u/a/b/c/x v/b/c/x)\" = \"$(printf 'hi\\nhi')\" && mkfifo fifo");
	cr_assert_eq(host_mode(dir, "d") & 07777, 01777);
	cr_assert_eq(host_mode(dir, "u/a/b/c/x") & 07777, 0640);
	host_clean(dir);
}

/* 1. root in the session (no capability needed to chmod its own file) */
IT_TEST(setuid, root_plants_no_set_id_file_in_a_host_workspace)
{
	const char *s = it_session();
	char dir[PATH_MAX];

	make_workspace(dir, sizeof(dir), 0);
	up(s, dir, 1, NULL);
	set_id_attempts(s, dir);
	remove_workspace(dir);
}

/* 2. the default user: a set-id file of its own would be a way into the
 * directory owner's account for the host's other users */
IT_TEST(setuid, user_plants_no_set_id_file_in_a_host_workspace)
{
	const char *s = it_session();
	char dir[PATH_MAX];

	make_workspace(dir, sizeof(dir), 1000);
	up(s, dir, 0, NULL);
	set_id_attempts(s, dir);
	remove_workspace(dir);
}

/* 3. device nodes: even with CAP_MKNOD given back, and the whiteout (char
 * 0:0) that needs no capability; FIFOs stay allowed */
IT_TEST(setuid, no_device_node_in_a_host_workspace)
{
	const char *s = it_session(), *s2 = it_session();
	char dir[PATH_MAX];
	char dir2[PATH_MAX];

	make_workspace(dir, sizeof(dir), 0);
	up(s, dir, 1, "MKNOD");
	refused(s, EPERM_TEXT, "mknod", "/workspace/null", "c", "1", "3");
	refused(s, EPERM_TEXT, "mknod", "/workspace/sda", "b", "8", "0");
	refused(s, EPERM_TEXT, "mknod", "/workspace/wh", "c", "0", "0");
	sh_ok(s, "mkfifo /workspace/fifo && test -p /workspace/fifo");
	host_clean(dir);
	cr_assert(S_ISFIFO(host_mode(dir, "fifo")));
	remove_workspace(dir);

	make_workspace(dir2, sizeof(dir2), 1000);
	up(s2, dir2, 0, NULL);
	refused(s2, EPERM_TEXT, "mknod", "/workspace/wh", "c", "0", "0");
	host_clean(dir2);
	remove_workspace(dir2);
}

/* 4. around the filter: root replaces the agent the engine starts for
 * every command, so that the next one runs unfiltered */
IT_TEST(setuid, root_cannot_replace_the_agent)
{
	const char *s = it_session();
	char dir[PATH_MAX];
	const char *fake =
		"printf '#!/bin/sh\\nwhile [ \"$1\" != -- ]; do shift; done; shift;"
		" exec \"$@\"\\n' >/workspace/fake && chmod 755 /workspace/fake";
	it_result r;

	make_workspace(dir, sizeof(dir), 0);
	up(s, dir, 1, NULL);
	sh_ok(s, fake);
	sh_ok(s, "touch /workspace/f");
	/* Each way in: rename it away, write over it, unlink it, chmod it. */
	r = it_hutch(
		"exec", s, "--", "sh", "-c",
		"mv /.hutch/hutch-agent /.hutch/old && cp /workspace/fake /.hutch/hutch-agent",
		NULL);
	cr_expect_neq(r.status, 0, "the agent was renamed away: %s", r.err);
	it_result_free(&r);
	r = it_hutch("exec", s, "--", "sh", "-c",
		     "cat /workspace/fake >/.hutch/hutch-agent", NULL);
	cr_expect_neq(r.status, 0, "the agent was written over");
	it_result_free(&r);
	r = it_hutch(
		"exec", s, "--", "sh", "-c",
		"rm -f /.hutch/hutch-agent; cp /workspace/fake /.hutch/hutch-agent",
		NULL);
	cr_expect_neq(r.status, 0, "the agent was replaced");
	it_result_free(&r);
	r = it_hutch("exec", s, "--", "chmod", "755", "/.hutch/hutch-agent",
		     NULL);
	cr_expect_neq(r.status, 0, "the agent was made readable");
	it_result_free(&r);
	r = it_hutch("exec", s, "--", "mv", "/.hutch", "/hutch-old", NULL);
	cr_expect_neq(r.status, 0, "the agent's directory was moved");
	it_result_free(&r);

	/* The next command still runs under the filter. */
	refused(s, EPERM_TEXT, "chmod", "4755", "/workspace/f");
	host_clean(dir);
	remove_workspace(dir);
}

/* 5. around the filter: a command ptraces a starting agent before it has
 * installed its filter and makes it chmod.  The agent is undumpable from
 * its execve on (it is not readable by the session), so no command may
 * trace it at any time; the control: a command may trace a child of its
 * own, so ptrace itself is not what the engine refuses. */
IT_TEST(setuid, a_command_cannot_ptrace_the_agent)
{
	const char *s = it_session();
	char dir[PATH_MAX];
	const char *sleeper[] = { "exec", s, "--", "sleep", "97", NULL };
	it_proc p;
	it_result r, bg;

	make_workspace(dir, sizeof(dir), 1000);
	up(s, dir, 0, NULL);
	it_spawn(&p, NULL, sleeper);
	r = it_hutch("exec", s, "--", "/workspace/probe", "ptrace", "97", NULL);
	bg = it_wait(&p);
	cr_assert(strstr(r.out, "own: ok"),
		  "control: its own child could not be traced: %s %s", r.out,
		  r.err);
	cr_assert(strstr(r.out, "agent: " EPERM_TEXT),
		  "the agent could be traced: %s %s", r.out, r.err);
	IT_ASSERT_EXIT(r, 1, "probe ptrace");
	it_result_free(&r);
	it_result_free(&bg);
	remove_workspace(dir);
}

/* 6. the file tools rewrite a file the host made set-id: the new file
 * keeps its mode without the set-id bits (as the kernel does for a write),
 * and the tool works */
IT_TEST(setuid, file_tools_drop_set_id_bits_they_find)
{
	const char *s = it_session();
	char dir[PATH_MAX], path[PATH_MAX + 16];
	FILE *f;
	it_result r;

	make_workspace(dir, sizeof(dir), 0);
	snprintf(path, sizeof(path), "%s/tool", dir);
	f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs("#!/bin/sh\necho old\n", f);
	cr_assert_eq(fclose(f), 0);
	cr_assert_eq(chmod(path, 06755), 0);
	up(s, dir, 1, NULL);
	r = it_hutch("edit", s, "tool", "--old", "old", "--new", "new", NULL);
	IT_ASSERT_EXIT(r, 0, "hutch edit");
	it_result_free(&r);
	cr_assert_eq(host_mode(dir, "tool") & 07777, 0755);
	r = it_hutch("write", s, "tool", "--content", "#!/bin/sh\necho newer\n",
		     NULL);
	IT_ASSERT_EXIT(r, 0, "hutch write");
	it_result_free(&r);
	cr_assert_eq(host_mode(dir, "tool") & 07777, 0755);
	host_clean(dir);
	remove_workspace(dir);
}
