/*
 * test_sync.c - sync-in / sync-out against a real engine
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <json-c/json.h>

#include "harness.h"

#define BIG_SIZE (50u * 1024u * 1024u)

static void tmpdir(char *out, size_t outsz, const char *tag)
{
	snprintf(out, outsz, "/tmp/hutch-it-sync-%s-XXXXXX", tag);
	cr_assert_not_null(mkdtemp(out), "mkdtemp: %s", strerror(errno));
}

static void rm_rf(const char *path)
{
	char cmd[PATH_MAX + 32];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", path);
	cr_assert_eq(system(cmd), 0);
}

static void put(const char *dir, const char *name, const char *text,
		mode_t mode)
{
	char p[PATH_MAX];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	f = fopen(p, "w");
	cr_assert_not_null(f, "%s: %s", p, strerror(errno));
	cr_assert(fputs(text, f) >= 0 && fclose(f) == 0, "writing %s", p);
	cr_assert_eq(chmod(p, mode), 0);
}

static void mkd(const char *dir, const char *name, mode_t mode)
{
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	cr_assert_eq(mkdir(p, mode), 0, "mkdir %s: %s", p, strerror(errno));
	cr_assert_eq(chmod(p, mode), 0);
}

static void lnk(const char *dir, const char *name, const char *target)
{
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	cr_assert_eq(symlink(target, p), 0, "symlink %s: %s", p,
		     strerror(errno));
}

/* 50 MB that no compression or dedup could fake: xorshift64. */
static void put_big(const char *dir, const char *name)
{
	static uint64_t block[1 << 17];
	uint64_t x = 0x9e3779b97f4a7c15ULL;
	char p[PATH_MAX];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	f = fopen(p, "w");
	cr_assert_not_null(f);
	for (size_t done = 0; done < BIG_SIZE; done += sizeof(block)) {
		for (size_t i = 0; i < sizeof(block) / sizeof(block[0]); i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			block[i] = x;
		}
		cr_assert_eq(fwrite(block, 1, sizeof(block), f), sizeof(block));
	}
	cr_assert_eq(fclose(f), 0);
}

/*
 * The tree of the round trip:
 *   a/hello.txt (0640)  a/run.sh (0755)  a/empty/ (0750, empty)
 *   a/obj.o (excluded)  node_modules/x.js (excluded, not descended)
 *   b/link -> ../a/hello.txt   b/etc -> /etc   b/dangling -> nowhere
 *   big.bin (50 MB)     fifo (skipped)
 * Everything is chowned to 1234:1234 on the host: inside the container
 * it must belong to the session user (root) anyway.
 */
static void make_tree(const char *d, int big)
{
	char p[PATH_MAX], cmd[PATH_MAX + 64];

	mkd(d, "a", 0755);
	put(d, "a/hello.txt", "hello\n", 0640);
	put(d, "a/run.sh", "#!/bin/sh\necho ran\n", 0755);
	mkd(d, "a/empty", 0750);
	put(d, "a/obj.o", "object\n", 0644);
	mkd(d, "node_modules", 0755);
	put(d, "node_modules/x.js", "x\n", 0644);
	mkd(d, "b", 0755);
	lnk(d, "b/link", "../a/hello.txt");
	lnk(d, "b/etc", "/etc");
	lnk(d, "b/dangling", "nowhere");
	if (big)
		put_big(d, "big.bin");
	snprintf(p, sizeof(p), "%s/fifo", d);
	cr_assert_eq(mkfifo(p, 0644), 0);
	snprintf(cmd, sizeof(cmd), "chown -hR 1234:1234 '%s'", d);
	cr_assert_eq(system(cmd), 0);
}

static char *host_sha(const char *path)
{
	char cmd[PATH_MAX + 32], buf[128];
	FILE *f;

	snprintf(cmd, sizeof(cmd), "sha256sum '%s'", path);
	f = popen(cmd, "r");
	cr_assert_not_null(f);
	cr_assert_not_null(fgets(buf, sizeof(buf), f));
	pclose(f);
	buf[64] = '\0';
	return strdup(buf);
}

static void expect_out(it_result *r, const char *want, const char *what)
{
	IT_ASSERT_EXIT(*r, 0, what);
	cr_assert_str_eq(r->out, want, "%s: got '%s' want '%s'", what, r->out,
			 want);
	it_result_free(r);
}

static void expect_link(const char *dir, const char *name, const char *target)
{
	char p[PATH_MAX], t[PATH_MAX];
	ssize_t n;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	n = readlink(p, t, sizeof(t) - 1);
	cr_assert_gt(n, 0, "%s is not a symlink: %s", p, strerror(errno));
	t[n] = '\0';
	cr_assert_str_eq(t, target, "%s -> %s", p, t);
}

static void expect_mode(const char *dir, const char *name, mode_t type,
			mode_t mode)
{
	char p[PATH_MAX];
	struct stat st;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	cr_assert_eq(lstat(p, &st), 0, "%s: %s", p, strerror(errno));
	cr_assert_eq(st.st_mode & S_IFMT, type, "%s: type %o", p,
		     st.st_mode & S_IFMT);
	cr_assert_eq(st.st_mode & 07777, mode, "%s: mode %o want %o", p,
		     st.st_mode & 07777, mode);
}

static void expect_absent(const char *dir, const char *name)
{
	char p[PATH_MAX];
	struct stat st;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	cr_assert_eq(lstat(p, &st), -1, "%s exists", p);
}

static void expect_same_file(const char *a, const char *b, const char *name)
{
	char pa[PATH_MAX], pb[PATH_MAX];
	char *ha, *hb;

	snprintf(pa, sizeof(pa), "%s/%s", a, name);
	snprintf(pb, sizeof(pb), "%s/%s", b, name);
	ha = host_sha(pa);
	hb = host_sha(pb);
	cr_assert_str_eq(ha, hb, "%s differs after the round trip", name);
	free(ha);
	free(hb);
}

static int64_t jint(json_object *o, const char *key)
{
	return json_object_get_int64(it_json_get(o, key));
}

/*
 * Run a command (Cmd as JSON) in S as root through the engine's exec API
 * itself, not through hutch's agent: what the host's own "docker exec"
 * could leave in a workspace.  A session's own commands cannot make a
 * device node (the agent's seccomp filter, tests/hostile/test_setuid.c).
 */
static void engine_exec(const char *s, const char *cmd)
{
	char path[256], body[512], id[128], *resp = NULL;
	size_t len = 0;
	json_object *o;
	int running = 1;

	snprintf(path, sizeof(path), "/containers/hutch-%s/exec", s);
	snprintf(
		body, sizeof(body),
		"{\"Cmd\":%s,\"User\":\"0:0\",\"AttachStdout\":true,\"AttachStderr\":true}",
		cmd);
	cr_assert_eq(it_api_json("POST", path, body, &resp, &len), 201,
		     "exec create: %s", resp);
	o = it_json(resp, len);
	snprintf(id, sizeof(id), "%s",
		 json_object_get_string(it_json_get(o, "Id")));
	json_object_put(o);
	free(resp);
	snprintf(path, sizeof(path), "/exec/%s/start", id);
	/* Attached: the answer ends with the command (Podman 4.3 reports a
	 * detached exec as running long after it ended). */
	cr_assert_eq(it_api_json("POST", path,
				 "{\"Detach\":false,\"Tty\":false}", NULL,
				 NULL),
		     200);
	snprintf(path, sizeof(path), "/exec/%s/json", id);
	for (int i = 0; i < 600 && running; i++) {
		resp = NULL;
		cr_assert_eq(it_api("GET", path, &resp, &len), 200);
		o = it_json(resp, len);
		free(resp);
		running = json_object_get_boolean(it_json_get(o, "Running"));
		if (!running)
			cr_assert_eq(
				json_object_get_int(it_json_get(o, "ExitCode")),
				0, "%s failed", cmd);
		json_object_put(o);
		if (running)
			it_sleep(0.05);
	}
	cr_assert(!running, "%s still runs", cmd);
}

/* 1. a full round trip through the session's volume */
IT_TEST(sync, round_trip_volume)
{
	const char *s = it_session();
	char src[256], out[256], p[PATH_MAX], want[256], *sha;
	json_object *o;
	it_result r;

	tmpdir(src, sizeof(src), "src");
	tmpdir(out, sizeof(out), "out");
	make_tree(src, 1);

	r = it_hutch("sync-in", s, src, "--exclude", "node_modules",
		     "--exclude", "*.o", "--json", NULL);
	IT_ASSERT_EXIT(r, 0, "hutch sync-in S SRC --exclude ... --json");
	o = it_json(r.out, r.out_len);
	cr_assert_eq(jint(o, "files"), 3, "%s", r.out); /* hello, run.sh, big */
	cr_assert_eq(jint(o, "dirs"), 3, "%s", r.out);	/* a, a/empty, b */
	cr_assert_eq(jint(o, "symlinks"), 3, "%s", r.out);
	cr_assert_eq(jint(o, "skipped"), 1, "%s", r.out); /* the fifo */
	cr_assert_eq(jint(o, "excluded"), 2, "%s",
		     r.out); /* node_modules, a/obj.o */
	cr_assert_eq(jint(o, "bytes"), BIG_SIZE + 6 + 19, "%s", r.out);
	cr_assert_geq(jint(o, "archive_bytes"), BIG_SIZE, "%s", r.out);
	json_object_put(o);
	it_result_free(&r);

	/* Inside: owned by the session user, modes and links as on the host. */
	r = it_hutch("exec", s, "--", "stat", "-c", "%n %u:%g %a %F", "a",
		     "a/hello.txt", "a/run.sh", "a/empty", "b", "big.bin",
		     NULL);
	expect_out(&r,
		   "a 1000:1000 755 directory\n"
		   "a/hello.txt 1000:1000 640 regular file\n"
		   "a/run.sh 1000:1000 755 regular file\n"
		   "a/empty 1000:1000 750 directory\n"
		   "b 1000:1000 755 directory\n"
		   "big.bin 1000:1000 644 regular file\n",
		   "stat inside the container");
	r = it_hutch(
		"exec", s, "--", "sh", "-c",
		"stat -c '%u:%g' b/link; readlink b/link; readlink b/etc; readlink b/dangling; "
		"ls -A a/empty | wc -l; ls -A",
		NULL);
	expect_out(
		&r,
		"1000:1000\n../a/hello.txt\n/etc\nnowhere\n0\na\nb\nbig.bin\n",
		"links, the empty dir, nothing excluded or skipped arrived");
	r = it_hutch("exec", s, "--", "./a/run.sh", NULL);
	expect_out(&r, "ran\n", "the executable bit survived");
	snprintf(p, sizeof(p), "%s/big.bin", src);
	sha = host_sha(p);
	snprintf(want, sizeof(want), "%s  big.bin\n", sha);
	free(sha);
	r = it_hutch("exec", s, "--", "sha256sum", "big.bin", NULL);
	expect_out(&r, want, "the 50 MB file is byte-exact inside");

	/* And back out, into a directory that does not exist yet. */
	snprintf(p, sizeof(p), "%s/back", out);
	r = it_hutch("sync-out", s, p, "--json", NULL);
	IT_ASSERT_EXIT(r, 0, "hutch sync-out S OUT --json");
	o = it_json(r.out, r.out_len);
	cr_assert_eq(jint(o, "files"), 3, "%s", r.out);
	cr_assert_eq(jint(o, "dirs"), 3, "%s", r.out);
	cr_assert_eq(jint(o, "symlinks"), 3, "%s", r.out);
	json_object_put(o);
	it_result_free(&r);
	expect_same_file(src, p, "big.bin");
	expect_same_file(src, p, "a/hello.txt");
	expect_same_file(src, p, "a/run.sh");
	expect_mode(p, "a/hello.txt", S_IFREG, 0640);
	expect_mode(p, "a/run.sh", S_IFREG, 0755);
	expect_mode(p, "a/empty", S_IFDIR, 0750);
	expect_link(p, "b/link", "../a/hello.txt");
	expect_link(p, "b/etc", "/etc");
	expect_link(p, "b/dangling", "nowhere");
	expect_absent(p, "fifo");
	expect_absent(p, "node_modules");
	expect_absent(p, "a/obj.o");
	expect_absent(p, "workspace"); /* the contents, not the directory */

	/* One path under the workspace: its contents land in HOSTDIR. */
	snprintf(p, sizeof(p), "%s/sub", out);
	r = it_hutch("sync-out", s, p, "a", NULL);
	IT_ASSERT_EXIT(r, 0, "hutch sync-out S OUT a");
	it_result_free(&r);
	expect_mode(p, "hello.txt", S_IFREG, 0640);
	expect_mode(p, "empty", S_IFDIR, 0750);
	expect_absent(p, "a");
	/* A single file lands as HOSTDIR/BASENAME. */
	snprintf(p, sizeof(p), "%s/one", out);
	r = it_hutch("sync-out", s, p, "/workspace/a/run.sh", NULL);
	IT_ASSERT_EXIT(r, 0, "hutch sync-out S OUT /workspace/a/run.sh");
	it_result_free(&r);
	expect_mode(p, "run.sh", S_IFREG, 0755);

	rm_rf(src);
	rm_rf(out);
}

/* 2. what the container puts in its workspace cannot reach outside HOSTDIR */
/* Names are bytes both ways: UTF-8, and bytes that are not UTF-8 at all
 * (a Latin-1 name), in a directory and a symlink's target too.  Before,
 * libarchive refused every name that was not ASCII (the library runs in
 * the "C" locale) and sync-in failed on the first. */
IT_TEST(sync, names_that_are_not_ascii)
{
	static const char utf8[] = "caf\xc3\xa9-\xe6\x97\xa5\xe6\x9c\xac.txt";
	static const char latin1[] = "na\xefve.txt";
	static const char dir[] = "r\xc3\xa9pertoire";
	const char *s = it_session();
	char src[256], out[256], sub[PATH_MAX], p[PATH_MAX];
	it_result r;

	tmpdir(src, sizeof(src), "u8src");
	tmpdir(out, sizeof(out), "u8out");
	put(src, utf8, "one\n", 0644);
	put(src, latin1, "two\n", 0644);
	mkd(src, dir, 0755);
	snprintf(sub, sizeof(sub), "%s/%s", src, dir);
	put(sub, utf8, "three\n", 0644);
	lnk(src, "to-utf8", utf8);

	r = it_hutch("sync-in", s, src, NULL);
	IT_ASSERT_EXIT(r, 0, "sync-in of names that are not ASCII");
	it_result_free(&r);
	/* Inside, by name (the Latin-1 one by a pattern: hutch passes only
	 * UTF-8 in a command line). */
	snprintf(p, sizeof(p),
		 "cat '%s' na?ve.txt '%s/%s' && ls | grep -c '^na.ve.txt$' "
		 "&& readlink to-utf8 | od -An -tx1 | tr -d ' \\n' && echo",
		 utf8, dir, utf8);
	r = it_hutch("exec", s, "--", "sh", "-c", p, NULL);
	expect_out(&r,
		   "one\ntwo\nthree\n1\n"
		   /* caf\xc3\xa9-\xe6\x97\xa5\xe6\x9c\xac.txt\n */
		   "636166c3a92de697a5e69cac2e7478740a\n",
		   "the files inside");

	r = it_hutch("sync-out", s, out, NULL);
	IT_ASSERT_EXIT(r, 0, "sync-out of names that are not ASCII");
	it_result_free(&r);
	expect_same_file(src, out, utf8);
	expect_same_file(src, out, latin1);
	snprintf(p, sizeof(p), "%s/%s", dir, utf8);
	expect_same_file(src, out, p);
	expect_link(out, "to-utf8", utf8);
	rm_rf(src);
	rm_rf(out);
}

IT_TEST(sync, hostile_workspace_stays_in_hostdir)
{
	const char *s = it_session();
	char base[256], host[300], outside[300], cmd[3 * PATH_MAX];
	it_result r;

	tmpdir(base, sizeof(base), "hostile");
	snprintf(host, sizeof(host), "%s/host", base);
	snprintf(outside, sizeof(outside), "%s/outside", base);
	cr_assert_eq(mkdir(host, 0755), 0);
	cr_assert_eq(mkdir(outside, 0755), 0);
	/* Left by an "earlier sync-out": symlinks out of HOSTDIR. */
	lnk(host, "evil", outside);
	snprintf(cmd, sizeof(cmd), "%s/f", outside);
	lnk(host, "evilf", cmd);

	/* A device node takes root and CAP_MKNOD, and a session's commands
	 * cannot make one even then: this one comes from outside hutch. */
	r = it_hutch("up", s, "--user", "root", "--cap-add", "MKNOD", NULL);
	IT_ASSERT_EXIT(r, 0, "hutch up S --user root --cap-add MKNOD");
	it_result_free(&r);
	r = it_hutch(
		"sh", s,
		"mkdir evil && echo pwn > evil/x && echo pwn > evilf && "
		"ln -s /etc etc && mkdir d && ln -s ../../../../../.. d/up && "
		"mkfifo fifo && echo ok > ok",
		NULL);
	IT_ASSERT_EXIT(r, 0, "the container prepares a hostile workspace");
	it_result_free(&r);
	engine_exec(s, "[\"mknod\", \"/workspace/null\", \"c\", \"1\", \"3\"]");

	r = it_hutch("sync-out", s, host, "--json", NULL);
	IT_ASSERT_EXIT(r, 0, "hutch sync-out S HOST");
	{
		json_object *o = it_json(r.out, r.out_len);

		cr_assert_eq(jint(o, "skipped"), 2, "%s",
			     r.out); /* null, fifo */
		json_object_put(o);
	}
	it_result_free(&r);
	/* Nothing in `outside`; the symlinks in the way were replaced. */
	snprintf(cmd, sizeof(cmd), "test -z \"$(ls -A '%s')\"", outside);
	cr_assert_eq(system(cmd), 0, "something was written into %s", outside);
	expect_mode(host, "evil", S_IFDIR, 0755);
	expect_mode(host, "evil/x", S_IFREG, 0644);
	expect_mode(host, "evilf", S_IFREG, 0644);
	expect_link(host, "etc", "/etc");
	expect_link(host, "d/up", "../../../../../..");
	expect_absent(host, "null");
	expect_absent(host, "fifo");
	expect_mode(host, "ok", S_IFREG, 0644);
	/* Only what the workspace held, next to HOSTDIR nothing new. */
	snprintf(cmd, sizeof(cmd),
		 "test \"$(ls -A '%s' | tr '\\n' ' ')\" = 'host outside '",
		 base);
	cr_assert_eq(system(cmd), 0, "something appeared next to HOSTDIR");

	rm_rf(base);
}

/* 3. a bind-mounted workspace, with the container stopped */
IT_TEST(sync, bind_workspace_stopped_container)
{
	const char *s = it_session();
	char src[256], ws[256], out[256];
	it_result r;

	tmpdir(src, sizeof(src), "src");
	tmpdir(ws, sizeof(ws), "ws");
	tmpdir(out, sizeof(out), "out");
	make_tree(src, 0);
	/* The session runs as the workspace's owner (root's is refused). */
	cr_assert_eq(chown(ws, 1000, 1000), 0, "chown: %s", strerror(errno));
	r = it_hutch("up", s, "--workspace", ws, NULL);
	IT_ASSERT_EXIT(r, 0, "hutch up S --workspace WS");
	it_result_free(&r);
	it_container_stop(s);
	cr_assert_eq(it_container_running(s), 0);

	r = it_hutch("sync-in", s, src, NULL);
	IT_ASSERT_EXIT(r, 0, "hutch sync-in S SRC (stopped, bind mount)");
	it_result_free(&r);
	/* The contents landed directly in the host workspace. */
	expect_mode(ws, "a/hello.txt", S_IFREG, 0640);
	expect_mode(ws, "a/empty", S_IFDIR, 0750);
	expect_link(ws, "b/link", "../a/hello.txt");
	expect_same_file(src, ws, "a/run.sh");
	r = it_hutch("exec", s, "--", "stat", "-c", "%u:%g", "a/hello.txt",
		     NULL);
	expect_out(&r, "1000:1000\n",
		   "owned by the session user on a bind mount too");

	it_container_stop(s);
	r = it_hutch("sync-out", s, out, "a", NULL);
	IT_ASSERT_EXIT(r, 0, "hutch sync-out S OUT a (stopped, bind mount)");
	it_result_free(&r);
	expect_mode(out, "hello.txt", S_IFREG, 0640);
	expect_mode(out, "run.sh", S_IFREG, 0755);
	expect_mode(out, "empty", S_IFDIR, 0750);

	rm_rf(src);
	rm_rf(ws);
	rm_rf(out);
}

/* 4. up --seed fills a new session, and only a new one */
IT_TEST(sync, up_seed)
{
	const char *s = it_session(), *s2 = it_session();
	char src[256], ws[256], missing[300];
	json_object *o, *seed;
	it_result r;

	tmpdir(src, sizeof(src), "seed");
	tmpdir(ws, sizeof(ws), "ws");
	make_tree(src, 0);
	r = it_hutch("up", s, "--seed", src, "--exclude", "*.o", "--json",
		     NULL);
	IT_ASSERT_EXIT(r, 0, "hutch up S --seed SRC --exclude '*.o'");
	o = it_json(r.out, r.out_len);
	cr_assert(json_object_get_boolean(it_json_get(o, "created_now")));
	{
		char vol[128];

		/* The workspace is the session's own volume, not a bind mount. */
		snprintf(vol, sizeof(vol), "volume:hutch-%s", s);
		cr_assert_str_eq(
			json_object_get_string(it_json_get(o, "workspace")),
			vol, "%s", r.out);
	}
	seed = it_json_get(o, "seed");
	cr_assert_eq(jint(seed, "files"), 3, "%s",
		     r.out); /* hello, run.sh, x.js */
	cr_assert_eq(jint(seed, "excluded"), 1, "%s", r.out);
	json_object_put(o);
	it_result_free(&r);
	r = it_hutch(
		"exec", s, "--", "sh", "-c",
		"stat -c '%u:%g %a' a/hello.txt; cat node_modules/x.js; ls a",
		NULL);
	expect_out(&r, "1000:1000 640\nx\nempty\nhello.txt\nrun.sh\n",
		   "the seeded workspace");

	/* Seeding an existing session is refused and changes nothing. */
	r = it_hutch("up", s, "--seed", src, NULL);
	IT_ASSERT_EXIT(r, 125, "hutch up EXISTING --seed SRC");
	cr_assert_not_null(strstr(r.err, "already exists"), "%s", r.err);
	cr_assert_not_null(strstr(r.err, "sync-in"), "%s", r.err);
	cr_assert_eq(it_count_lines(r.err, r.err_len), 1, "%s", r.err);
	it_result_free(&r);

	r = it_hutch("up", s2, "--seed", src, "--workspace", ws, NULL);
	IT_ASSERT_EXIT(r, 125, "--seed with --workspace");
	it_result_free(&r);
	snprintf(missing, sizeof(missing), "%s/nope", src);
	r = it_hutch("up", s2, "--seed", missing, NULL);
	IT_ASSERT_EXIT(r, 125, "--seed of a missing directory");
	cr_assert_not_null(strstr(r.err, "nope"), "%s", r.err);
	it_result_free(&r);
	cr_assert_eq(it_count_containers(s2), 0,
		     "a failed seed left a container");
	cr_assert_eq(it_count_volumes(s2), 0, "a failed seed left a volume");

	rm_rf(src);
	rm_rf(ws);
}

/* 5. clear one-line errors */
IT_TEST(sync, errors)
{
	const char *s = it_session();
	char dir[256], p[PATH_MAX];
	it_result r;

	tmpdir(dir, sizeof(dir), "err");
	/* sync-out never makes a session (fs::no_such_session). */
	r = it_hutch("up", s, NULL);
	IT_ASSERT_EXIT(r, 0, "up");
	it_result_free(&r);
	snprintf(p, sizeof(p), "%s/missing", dir);
	r = it_hutch("sync-in", s, p, NULL);
	IT_ASSERT_EXIT(r, 125, "sync-in of a missing directory");
	cr_assert_not_null(strstr(r.err, "missing"), "%s", r.err);
	cr_assert_eq(it_count_lines(r.err, r.err_len), 1, "%s", r.err);
	it_result_free(&r);

	r = it_hutch("sync-out", s, dir, "no/such/file", NULL);
	IT_ASSERT_EXIT(r, 125, "sync-out of a missing path");
	cr_assert_not_null(strstr(r.err,
				  "'no/such/file' not found in the workspace"),
			   "%s", r.err);
	cr_assert_eq(it_count_lines(r.err, r.err_len), 1, "%s", r.err);
	it_result_free(&r);

	r = it_hutch("sync-out", s, dir, "../etc", NULL);
	IT_ASSERT_EXIT(r, 125, "sync-out of ../etc");
	cr_assert_not_null(strstr(r.err, "under /workspace"), "%s", r.err);
	it_result_free(&r);
	r = it_hutch("sync-out", s, dir, "/etc", NULL);
	IT_ASSERT_EXIT(r, 125, "sync-out of /etc");
	cr_assert_not_null(strstr(r.err, "outside the workspace"), "%s", r.err);
	it_result_free(&r);

	snprintf(p, sizeof(p), "%s/no/parent", dir);
	r = it_hutch("sync-out", s, p, NULL);
	IT_ASSERT_EXIT(r, 125,
		       "sync-out into a directory whose parent is missing");
	cr_assert_not_null(strstr(r.err, "no/parent"), "%s", r.err);
	it_result_free(&r);
	rm_rf(dir);
}

/* What `cmd` prints in session `s` (trailing newline dropped), into a
 * static buffer. */
static const char *in_session(const char *s, const char *cmd)
{
	static char out[4096];
	it_result r = it_hutch("exec", s, "--", "sh", "-c", cmd, NULL);

	IT_ASSERT_EXIT(r, 0, cmd);
	snprintf(out, sizeof(out), "%.*s", (int)strcspn(r.out, "\n"), r.out);
	it_result_free(&r);
	return out;
}

/*
 * sync-in to a destination, and of a single file: where each lands, with
 * the session's user as owner (the agent unpacks, as that user).
 */
IT_TEST(sync, into_a_destination_and_single_files)
{
	const char *s = it_session();
	char dir[256], file[PATH_MAX];
	it_result r;

	tmpdir(dir, sizeof(dir), "dest");
	mkd(dir, "t", 0755);
	mkd(dir, "t/a", 0750);
	put(dir, "t/a/b.txt", "bee\n", 0640);
	put(dir, "one.txt", "one\n", 0644);

	snprintf(file, sizeof(file), "%s/t", dir);
	r = it_hutch("sync-in", s, file, "sub/dest", NULL);
	IT_ASSERT_EXIT(r, 0, "sync-in DIR sub/dest");
	it_result_free(&r);
	cr_assert_str_eq(in_session(s, "cat /workspace/sub/dest/a/b.txt"),
			 "bee");
	cr_assert_str_eq(
		in_session(s, "stat -c '%u %a' /workspace/sub/dest/a/b.txt "
			      "/workspace/sub/dest/a | tr '\\n' ' '"),
		"1000 640 1000 750 ");

	snprintf(file, sizeof(file), "%s/one.txt", dir);
	r = it_hutch("sync-in", s, file, NULL);
	IT_ASSERT_EXIT(r, 0, "sync-in FILE");
	it_result_free(&r);
	cr_assert_str_eq(in_session(s, "cat /workspace/one.txt"), "one");

	r = it_hutch("sync-in", s, file, "/workspace/x/y/renamed.txt", NULL);
	IT_ASSERT_EXIT(r, 0, "sync-in FILE x/y/renamed.txt");
	it_result_free(&r);
	cr_assert_str_eq(in_session(s, "cat /workspace/x/y/renamed.txt"),
			 "one");

	/* A directory of the workspace is not replaced by a file. */
	r = it_hutch("sync-in", s, file, "sub", NULL);
	IT_ASSERT_EXIT(r, 125, "sync-in FILE onto a directory");
	cr_assert_not_null(strstr(r.err, "is a directory"), "%s", r.err);
	cr_assert_eq(it_count_lines(r.err, r.err_len), 1, "%s", r.err);
	it_result_free(&r);

	r = it_hutch("sync-in", s, dir, "../up", NULL);
	IT_ASSERT_EXIT(r, 125, "sync-in to ../up");
	cr_assert_not_null(strstr(r.err, "'..' is not allowed"), "%s", r.err);
	it_result_free(&r);
	r = it_hutch("sync-in", s, dir, "/etc", NULL);
	IT_ASSERT_EXIT(r, 125, "sync-in to /etc");
	cr_assert_not_null(strstr(r.err, "outside the workspace"), "%s", r.err);
	it_result_free(&r);

	/* A destination the session made a symlink out of the workspace:
	 * the agent resolves it beneath /workspace and refuses. */
	in_session(s, "ln -s /.hutch /workspace/esc");
	r = it_hutch("sync-in", s, file, "esc/planted", NULL);
	IT_ASSERT_EXIT(r, 125, "sync-in through a symlink out");
	cr_assert_not_null(strstr(r.err, "outside"), "%s", r.err);
	it_result_free(&r);
	cr_assert_str_eq(in_session(s, "ls /.hutch | grep -c planted || true"),
			 "0");
	rm_rf(dir);
}

/* hutch cp both ways, as docker cp places things. */
IT_TEST(sync, cp_both_ways)
{
	const char *s = it_session();
	char dir[256], src[PATH_MAX], arg[PATH_MAX], out[512];
	it_result r;

	tmpdir(dir, sizeof(dir), "cp");
	mkd(dir, "src", 0755);
	mkd(dir, "src/sub", 0755);
	put(dir, "src/a", "a\n", 0644);
	put(dir, "src/sub/b", "b\n", 0600);
	mkd(dir, "out", 0755);
	snprintf(src, sizeof(src), "%s/src", dir);
	snprintf(out, sizeof(out), "%s/out", dir);

	/* In: a directory into the workspace keeps its name. */
	snprintf(arg, sizeof(arg), "%s:/workspace", s);
	r = it_hutch("cp", src, arg, NULL);
	IT_ASSERT_EXIT(r, 0, "cp DIR S:/workspace");
	it_result_free(&r);
	/* A file to a new name; a file into an existing directory. */
	snprintf(arg, sizeof(arg), "%s:renamed", s);
	snprintf(src, sizeof(src), "%s/src/a", dir);
	r = it_hutch("cp", src, arg, NULL);
	IT_ASSERT_EXIT(r, 0, "cp FILE S:renamed");
	it_result_free(&r);
	snprintf(arg, sizeof(arg), "%s:src/sub", s);
	r = it_hutch("cp", src, arg, NULL);
	IT_ASSERT_EXIT(r, 0, "cp FILE S:existing-dir");
	it_result_free(&r);
	/* DIR/. : the contents, into a new directory. */
	snprintf(src, sizeof(src), "%s/src/.", dir);
	snprintf(arg, sizeof(arg), "%s:flat", s);
	r = it_hutch("cp", src, arg, NULL);
	IT_ASSERT_EXIT(r, 0, "cp DIR/. S:flat");
	it_result_free(&r);
	cr_assert_str_eq(
		in_session(s, "cd /workspace && find . | sort | tr '\\n' ' '"),
		". ./flat ./flat/a ./flat/sub ./flat/sub/b ./renamed ./src "
		"./src/a ./src/sub ./src/sub/a ./src/sub/b ");

	/* Out: a directory into an existing one, under its name; a file to
	 * a new name; a directory to a new name; the contents of one. */
	snprintf(arg, sizeof(arg), "%s:src", s);
	r = it_hutch("cp", arg, out, NULL);
	IT_ASSERT_EXIT(r, 0, "cp S:src OUT");
	it_result_free(&r);
	snprintf(arg, sizeof(arg), "%s:renamed", s);
	snprintf(src, sizeof(src), "%s/file2", out);
	r = it_hutch("cp", arg, src, NULL);
	IT_ASSERT_EXIT(r, 0, "cp S:renamed OUT/file2");
	it_result_free(&r);
	snprintf(arg, sizeof(arg), "%s:flat", s);
	snprintf(src, sizeof(src), "%s/flat2", out);
	r = it_hutch("cp", arg, src, NULL);
	IT_ASSERT_EXIT(r, 0, "cp S:flat OUT/flat2");
	it_result_free(&r);
	snprintf(arg, sizeof(arg), "%s:flat/.", s);
	snprintf(src, sizeof(src), "%s/flat3", out);
	r = it_hutch("cp", arg, src, NULL);
	IT_ASSERT_EXIT(r, 0, "cp S:flat/. OUT/flat3");
	it_result_free(&r);
	{
		char cmd[PATH_MAX + 64], got[1024] = "";
		FILE *p;

		snprintf(cmd, sizeof(cmd),
			 "cd '%s' && find . | sort | tr '\\n' ' '", out);
		p = popen(cmd, "r");
		cr_assert_not_null(p);
		cr_assert_not_null(fgets(got, sizeof(got), p));
		pclose(p);
		cr_assert_str_eq(got,
				 ". ./file2 ./flat2 ./flat2/a ./flat2/sub "
				 "./flat2/sub/b ./flat3 ./flat3/a ./flat3/sub "
				 "./flat3/sub/b ./src ./src/a ./src/sub "
				 "./src/sub/a ./src/sub/b ");
	}
	expect_mode(out, "src/sub/b", S_IFREG, 0600);

	/* Refusals, each one line: a directory onto a file, both sides
	 * local, a session path that is missing, a host path through a
	 * symlink. */
	snprintf(arg, sizeof(arg), "%s:src", s);
	r = it_hutch("cp", arg, src, NULL); /* src: OUT/flat3, a dir: fine */
	IT_ASSERT_EXIT(r, 0, "cp S:src into an existing directory");
	it_result_free(&r);
	snprintf(src, sizeof(src), "%s/file2", out);
	r = it_hutch("cp", arg, src, NULL);
	IT_ASSERT_EXIT(r, 125, "cp S:dir onto a host file");
	cr_assert_eq(it_count_lines(r.err, r.err_len), 1, "%s", r.err);
	it_result_free(&r);
	r = it_hutch("cp", src, out, NULL);
	IT_ASSERT_EXIT(r, 125, "cp with no session side");
	it_result_free(&r);
	snprintf(arg, sizeof(arg), "%s:no/such", s);
	r = it_hutch("cp", arg, out, NULL);
	IT_ASSERT_EXIT(r, 125, "cp S:missing");
	cr_assert_not_null(strstr(r.err, "not found"), "%s", r.err);
	it_result_free(&r);
	lnk(dir, "link", out);
	snprintf(src, sizeof(src), "%s/link/via-link", dir);
	snprintf(arg, sizeof(arg), "%s:renamed", s);
	r = it_hutch("cp", arg, src, NULL);
	IT_ASSERT_EXIT(r, 125, "cp out through a host symlink");
	cr_assert_not_null(strstr(r.err, "symlink"), "%s", r.err);
	it_result_free(&r);
	expect_absent(out, "via-link");
	rm_rf(dir);
}
