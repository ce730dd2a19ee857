/*
 * test_image.c - hutch image import against a real engine
 *
 * A small root filesystem (static busybox, sh/ls/cat links, an
 * /etc/passwd with the sandbox user, /workspace) is imported, from the
 * directory and from a tar of it, and a session runs on the image.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <json-c/json.h>

#include "harness.h"

#define BUSYBOX "/bin/busybox"

static void sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void sh(const char *fmt, ...)
{
	char cmd[2 * PATH_MAX + 512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
}

/* The root filesystem in a new temporary directory `dir`.  /etc/evil is
 * a symlink to the host's /etc/shadow: the image must hold the link,
 * never what it points at. */
static void make_rootfs(char *dir, size_t dirsz)
{
	snprintf(dir, dirsz, "/tmp/hutch-it-image-XXXXXX");
	cr_assert_not_null(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
	cr_assert_eq(access(BUSYBOX, X_OK), 0, "%s is needed", BUSYBOX);
	sh("cd '%s' && mkdir -p bin etc workspace tmp && cp " BUSYBOX
	   " bin/busybox && ln -s busybox bin/sh && ln -s busybox bin/ls && "
	   "ln -s busybox bin/cat && ln -s busybox bin/readlink && "
	   "ln -s busybox bin/stat && "
	   "ln bin/busybox bin/bb2 && chmod 1777 tmp && "
	   "printf 'root:x:0:0:root:/root:/bin/sh\\nsandbox:x:1000:1000:"
	   "sandbox:/workspace:/bin/sh\\n' >etc/passwd && "
	   "ln -s /etc/shadow etc/evil",
	   dir);
}

/* NAME:TAG unique to this run (the run's prefix is lowercase). */
static void image_name(char *out, size_t outsz, const char *what)
{
	snprintf(out, outsz, "%simage-%s:t1", it_run_prefix(), what);
}

static void image_gone(const char *image)
{
	char path[512];

	snprintf(path, sizeof(path), "/images/%s/json", image);
	cr_assert_eq(it_api("GET", path, NULL, NULL), 404,
		     "image %s is still there", image);
}

/* The image's Config as the engine has it: "Env WorkingDir User". */
static void assert_config(const char *image, const char *env,
			  const char *workdir, const char *user)
{
	char path[512], *resp = NULL;
	json_object *o, *c, *v;
	size_t len = 0;
	int found = 0;

	snprintf(path, sizeof(path), "/images/%s/json", image);
	cr_assert_eq(it_api("GET", path, &resp, &len), 200, "%s", resp);
	o = it_json(resp, len);
	c = it_json_get(o, "Config");
	cr_assert_not_null(c, "%s", resp);
	v = it_json_get(c, "Env");
	for (size_t i = 0; v && i < json_object_array_length(v); i++)
		found |= strcmp(json_object_get_string(
					json_object_array_get_idx(v, i)),
				env) == 0;
	cr_assert(found, "Env has %s: %s", env, resp);
	v = it_json_get(c, "WorkingDir");
	cr_assert_str_eq(v ? json_object_get_string(v) : "", workdir, "%s",
			 resp);
	v = it_json_get(c, "User");
	cr_assert_str_eq(v ? json_object_get_string(v) : "", user, "%s", resp);
	json_object_put(o);
	free(resp);
}

/* Run `cmd` in a new session on `image`; its stdout. */
static char *run_on(const char *image, const char *cmd)
{
	const char *s = it_session();
	it_result r = it_hutch("up", s, "--image", image, NULL);
	char *out;

	IT_ASSERT_EXIT(r, 0, "up --image");
	it_result_free(&r);
	r = it_hutch("sh", s, cmd, NULL);
	IT_ASSERT_EXIT(r, 0, "sh");
	out = strdup(r.out);
	it_result_free(&r);
	r = it_hutch("rm", s, NULL);
	IT_ASSERT_EXIT(r, 0, "rm");
	it_result_free(&r);
	cr_assert_not_null(out);
	return out;
}

static void remove_image(const char *image)
{
	it_result r = it_hutch("image", "rm", image, NULL);

	IT_ASSERT_EXIT(r, 0, "image rm");
	it_result_free(&r);
	image_gone(image);
}

IT_TEST(image, import_dir)
{
	char dir[PATH_MAX], image[256], *out;
	it_result r;

	make_rootfs(dir, sizeof(dir));
	/* What a root filesystem has and a workspace copy drops (the tests
	 * run as root, as the engines do): a device node, a fifo, a setuid
	 * file, an owner other than root. */
	sh("cd '%s' && mkdir devs srv && mknod devs/null2 c 1 3 && "
	   "mkfifo devs/ff && cp bin/busybox bin/su2 && chmod 4755 bin/su2 && "
	   "chown 1000:1001 srv",
	   dir);
	image_name(image, sizeof(image), "dir");
	r = it_hutch("image", "import", dir, image, "--env", "FOO=bar",
		     "--workdir", "/workspace", NULL);
	IT_ASSERT_EXIT(r, 0, "image import DIR");
	cr_assert(strncmp(r.out, "sha256:", 7) == 0 && r.out_len == 7 + 64 + 1,
		  "prints the ID: '%s'", r.out);
	it_result_free(&r);
	assert_config(image, "FOO=bar", "/workspace", "");

	out = run_on(image, "echo $FOO; pwd; ls -l /bin/sh; "
			    "readlink /etc/evil; "
			    "test -e /etc/evil || echo dangling; "
			    "stat -c '%A %u:%g %t,%T %n' /devs/null2 /devs/ff "
			    "/bin/su2 /srv; "
			    "stat -c %h /bin/bb2");
	cr_assert(strncmp(out, "bar\n/workspace\n", 15) == 0,
		  "ENV and WORKDIR: '%s'", out);
	cr_assert_not_null(strstr(out, "/bin/sh -> busybox\n"),
			   "/bin/sh is a symlink: '%s'", out);
	/* The link itself, pointing at nothing in the image: the host's
	 * /etc/shadow was not followed. */
	cr_assert_not_null(strstr(out, "\n/etc/shadow\ndangling\n"),
			   "/etc/evil is a link, not the host's file: '%s'",
			   out);
	cr_assert_not_null(strstr(out, "crw-r--r-- 0:0 1,3 /devs/null2\n"),
			   "device node kept: '%s'", out);
	cr_assert_not_null(strstr(out, "prw-r--r-- 0:0 "), "fifo kept: '%s'",
			   out);
	cr_assert_not_null(strstr(out, "-rwsr-xr-x 0:0 "),
			   "setuid bit kept: '%s'", out);
	cr_assert_not_null(strstr(out, " 1000:1001 0,0 /srv\n"),
			   "numeric owner kept: '%s'", out);
	/* busybox and bb2 are one inode: the hard link was kept. */
	cr_assert(strlen(out) >= 3 &&
			  strcmp(out + strlen(out) - 3, "\n2\n") == 0,
		  "hard link kept: '%s'", out);
	free(out);
	remove_image(image);
	sh("rm -rf '%s'", dir);
}

IT_TEST(image, import_tar)
{
	char dir[PATH_MAX], tar[PATH_MAX + 8], image[256], *out;
	it_result r;

	make_rootfs(dir, sizeof(dir));
	snprintf(tar, sizeof(tar), "%s.tgz", dir);
	sh("tar -C '%s' -czf '%s' .", dir, tar);
	image_name(image, sizeof(image), "tar");
	r = it_hutch("image", "import", tar, image, "--env", "FOO=from-tar",
		     "--workdir", "/tmp", "--user", "sandbox", NULL);
	IT_ASSERT_EXIT(r, 0, "image import TAR");
	cr_assert(strncmp(r.out, "sha256:", 7) == 0, "prints the ID: '%s'",
		  r.out);
	it_result_free(&r);
	assert_config(image, "FOO=from-tar", "/tmp", "sandbox");
	out = run_on(image, "echo $FOO; cat /etc/passwd");
	cr_assert(strncmp(out, "from-tar\n", 9) == 0, "ENV from a tar: '%s'",
		  out);
	cr_assert_not_null(strstr(out, "sandbox:x:1000:1000:"), "%s", out);
	free(out);
	remove_image(image);
	sh("rm -rf '%s' '%s'", dir, tar);
}

/*
 * Settings that a Dockerfile parser reads as syntax (Docker parses them:
 * quotes, backslashes, $VARIABLE) or that Podman strips (quotes around a
 * value) reach the image byte for byte, and a session sees them so.
 */
IT_TEST(image, settings_are_taken_literally)
{
	static const char *const env[] = {
		"SP=x y",	"DQ=a\"b",    "DOLLAR=$HOME",
		"BS=back\\",	"BSQ=q\\\"z", "SQ=it's",
		"QUOTED=\"q\"", "EMPTY=",     "EQ=a=b c=d"
	};
	const char *workdir = "/a b$c\\x\"q", *user = "u$x";
	char dir[PATH_MAX], image[256], *out;
	const char *argv[64];
	size_t n = 0;
	it_result r;

	make_rootfs(dir, sizeof(dir));
	image_name(image, sizeof(image), "lit");
	argv[n++] = "image";
	argv[n++] = "import";
	argv[n++] = dir;
	argv[n++] = image;
	for (size_t i = 0; i < sizeof(env) / sizeof(env[0]); i++) {
		argv[n++] = "--env";
		argv[n++] = env[i];
	}
	argv[n++] = "--workdir";
	argv[n++] = workdir;
	argv[n++] = "--user";
	argv[n++] = user;
	argv[n] = NULL;
	r = it_hutch_v(NULL, argv);
	IT_ASSERT_EXIT(r, 0, "image import");
	it_result_free(&r);
	for (size_t i = 0; i < sizeof(env) / sizeof(env[0]); i++)
		assert_config(image, env[i], workdir, user);
	remove_image(image);

	/* What a session sees: the values, not their quoting. */
	r = it_hutch("image", "import", dir, image, "--env", "BSQ=q\\\"z $HOME",
		     NULL);
	IT_ASSERT_EXIT(r, 0, "image import");
	it_result_free(&r);
	out = run_on(image, "printf '%s|' \"$BSQ\"");
	cr_assert_str_eq(out, "q\\\"z $HOME|");
	free(out);
	remove_image(image);

	/* A name either engine would read as syntax is refused. */
	r = it_hutch("image", "import", dir, image, "--env", "A B=x", NULL);
	IT_ASSERT_EXIT(r, 125, "a name with a space");
	cr_assert_not_null(strstr(r.err, "is not KEY=VALUE"), "%s", r.err);
	it_result_free(&r);
	image_gone(image);
	sh("rm -rf '%s'", dir);
}

IT_TEST(image, errors)
{
	char dir[PATH_MAX], image[256];
	it_result r;

	make_rootfs(dir, sizeof(dir));
	image_name(image, sizeof(image), "err");

	r = it_hutch("image", "import", "/nonexistent/rootfs", image, NULL);
	IT_ASSERT_EXIT(r, 125, "missing path");
	cr_assert_not_null(strstr(r.err, "No such file"), "%s", r.err);
	it_result_free(&r);

	r = it_hutch("image", "import", "/etc/hostname", image, NULL);
	IT_ASSERT_EXIT(r, 125, "not a dir or tar");
	cr_assert_not_null(strstr(r.err, "neither a directory nor a tar"), "%s",
			   r.err);
	it_result_free(&r);

	/* Its path may go through no symlink: neither one to the tree nor
	 * one on the way to a tar. */
	{
		char via[PATH_MAX + 32];

		snprintf(via, sizeof(via), "%s.via", dir);
		cr_assert_eq(symlink(dir, via), 0, "%s", strerror(errno));
		r = it_hutch("image", "import", via, image, NULL);
		IT_ASSERT_EXIT(r, 125, "a symlink to the tree");
		cr_assert_not_null(strstr(r.err, "goes through a symlink"),
				   "%s", r.err);
		it_result_free(&r);
		snprintf(via, sizeof(via), "%s.via/etc/passwd", dir);
		r = it_hutch("image", "import", via, image, NULL);
		IT_ASSERT_EXIT(r, 125, "a file through a symlink");
		cr_assert_not_null(strstr(r.err, "goes through a symlink"),
				   "%s", r.err);
		it_result_free(&r);
		snprintf(via, sizeof(via), "%s.via", dir);
		unlink(via);
	}

	r = it_hutch("image", "import", dir, "Bad/Name:x", NULL);
	IT_ASSERT_EXIT(r, 125, "invalid name");
	cr_assert_not_null(strstr(r.err, "invalid image name"), "%s", r.err);
	it_result_free(&r);

	r = it_hutch("image", "import", dir, image, "--workdir", "rel", NULL);
	IT_ASSERT_EXIT(r, 125, "relative workdir");
	it_result_free(&r);
	image_gone(image);

	/* One line from the engine when it refuses the tar. */
	sh("head -c 4096 /dev/urandom | gzip >'%s.gz'", dir);
	{
		char gz[PATH_MAX + 8];

		snprintf(gz, sizeof(gz), "%s.gz", dir);
		r = it_hutch("image", "import", gz, image, NULL);
		IT_ASSERT_EXIT(r, 125, "not a tar inside the gzip");
		cr_assert_eq(it_count_lines(r.err, r.err_len), 1, "%s", r.err);
		cr_assert_not_null(strstr(r.err, "import '"), "%s", r.err);
		it_result_free(&r);
		unlink(gz);
	}
	image_gone(image);
	sh("rm -rf '%s'", dir);
}

/* The image's label KEY, as the engine has it ("" when none). */
static char *label_of(const char *image, const char *key)
{
	char path[512], *resp = NULL, *out;
	json_object *o, *c, *l, *v;
	size_t len = 0;

	snprintf(path, sizeof(path), "/images/%s/json", image);
	cr_assert_eq(it_api("GET", path, &resp, &len), 200, "%s", resp);
	o = it_json(resp, len);
	c = it_json_get(o, "Config");
	l = c ? it_json_get(c, "Labels") : NULL;
	v = l ? it_json_get(l, key) : NULL;
	out = strdup(v ? json_object_get_string(v) : "");
	json_object_put(o);
	free(resp);
	return out;
}

/* A recipe's second run: --if-changed imports nothing while the label
 * matches, a new label imports, and --prune removes what the name held
 * before. */
IT_TEST(image, labels_if_changed_and_prune)
{
	char dir[PATH_MAX], image[256], first[128], second[128], keep[256];
	char path[768], *l;
	it_result r;

	make_rootfs(dir, sizeof(dir));
	image_name(image, sizeof(image), "lab");

	r = it_hutch("image", "import", dir, image, "--label",
		     "io.hutch.test.build=one", NULL);
	IT_ASSERT_EXIT(r, 0, "import with a label");
	cr_assert(strncmp(r.out, "sha256:", 7) == 0, "%s", r.out);
	snprintf(first, sizeof(first), "%.*s", (int)strcspn(r.out, "\n"),
		 r.out);
	it_result_free(&r);
	l = label_of(image, "io.hutch.test.build");
	cr_assert_str_eq(l, "one");
	free(l);

	/* The same build: nothing imported, the same ID. */
	sh("echo changed > '%s/etc/motd'", dir);
	r = it_hutch("image", "import", dir, image, "--label",
		     "io.hutch.test.build=one", "--if-changed", NULL);
	IT_ASSERT_EXIT(r, 0, "import --if-changed, same label");
	cr_assert(strncmp(r.out, first, strlen(first)) == 0,
		  "another image: %s (was %s)", r.out, first);
	it_result_free(&r);

	/* Another build: imported.  The one before has another name too
	 * (a user tagged it): --prune leaves it. */
	snprintf(keep, sizeof(keep), "%simage-keep", it_run_prefix());
	snprintf(path, sizeof(path), "/images/%s/tag?repo=%s&tag=t1", first,
		 keep);
	cr_assert_eq(it_api("POST", path, NULL, NULL), 201, "tag %s", first);
	r = it_hutch("image", "import", dir, image, "--label",
		     "io.hutch.test.build=two", "--if-changed", "--prune",
		     NULL);
	IT_ASSERT_EXIT(r, 0, "import --if-changed --prune, new label");
	cr_assert(strncmp(r.out, first, strlen(first)) != 0,
		  "the same image: %s", r.out);
	snprintf(second, sizeof(second), "%.*s", (int)strcspn(r.out, "\n"),
		 r.out);
	it_result_free(&r);
	l = label_of(image, "io.hutch.test.build");
	cr_assert_str_eq(l, "two");
	free(l);
	snprintf(path, sizeof(path), "/images/%s/json", first);
	cr_assert_eq(it_api("GET", path, NULL, NULL), 200,
		     "the image %s, named %s too, was removed", first, keep);
	/* The next: the one before had no other name, and goes. */
	r = it_hutch("image", "import", dir, image, "--label",
		     "io.hutch.test.build=three", "--prune", NULL);
	IT_ASSERT_EXIT(r, 0, "import --prune");
	it_result_free(&r);
	snprintf(path, sizeof(path), "/images/%s/json", second);
	cr_assert_eq(it_api("GET", path, NULL, NULL), 404,
		     "the pruned image %s is still there", second);
	snprintf(path, sizeof(path), "%s:t1", keep);
	remove_image(path);

	/* Labels are checked before anything is sent. */
	r = it_hutch("image", "import", dir, image, "--label", "a b=c", NULL);
	IT_ASSERT_EXIT(r, 125, "a label with a space");
	cr_assert_not_null(strstr(r.err, "is not KEY=VALUE"), "%s", r.err);
	it_result_free(&r);
	r = it_hutch("image", "import", dir, image, "--if-changed", NULL);
	IT_ASSERT_EXIT(r, 125, "--if-changed without a label");
	it_result_free(&r);

	remove_image(image);
	image_gone(image);
	sh("rm -rf '%s'", dir);
}

/*
 * The Debian recipe's image (hutch-image-debian, images/debian/build.sh),
 * which contrib/test.sh builds from Debian's archive with a short package
 * list and names in HUTCH_TEST_DEBIAN_IMAGE: a session on it runs a small
 * pytest project as the image's sandbox user, with a home and a UTF-8
 * locale.  Without the variable the test fails where tests must run (CI,
 * HUTCH_MUST_RUN=1) and says how to get the image.
 */
IT_TEST(image, debian_recipe_runs_pytest)
{
	const char *image = getenv("HUTCH_TEST_DEBIAN_IMAGE");
	const char *s = it_session();
	char dir[PATH_MAX];
	it_result r;

	if (!image || !*image) {
		const char *must = getenv("HUTCH_MUST_RUN");

		cr_assert(!(must && strcmp(must, "1") == 0),
			  "HUTCH_TEST_DEBIAN_IMAGE is not set: build one with "
			  "images/debian/build.sh --packages "
			  "python3,python3-pytest,bash --name NAME");
		cr_skip_test("HUTCH_TEST_DEBIAN_IMAGE is not set");
	}
	snprintf(dir, sizeof(dir), "/tmp/hutch-it-pytest-XXXXXX");
	cr_assert_not_null(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
	sh("mkdir -p '%s/tests' && printf 'def add(a, b):\\n    return a + b\\n' "
	   ">'%s/calc.py' && printf 'from calc import add\\n\\n"
	   "def test_add():\\n    assert add(2, 3) == 5\\n\\n"
	   "def test_text():\\n    assert \"caf\\\\u00e9\".upper() == "
	   "\"CAF\\\\u00c9\"\\n' >'%s/tests/test_calc.py'",
	   dir, dir, dir);

	r = it_hutch("up", s, "--image", image, NULL);
	IT_ASSERT_EXIT(r, 0, "up on the Debian image");
	it_result_free(&r);
	r = it_hutch("sync-in", s, dir, NULL);
	IT_ASSERT_EXIT(r, 0, "sync-in the project");
	it_result_free(&r);
	/* bash counts characters in the locale: 1 for "\u00e9" in UTF-8,
	 * 2 (bytes) in C. */
	r = it_hutch("sh", s,
		     "whoami; echo \"$HOME $LANG\"; test -w \"$HOME\" && "
		     "echo home-writable; bash -c 'x=\xc3\xa9; echo ${#x}'",
		     NULL);
	IT_ASSERT_EXIT(r, 0, "the user, its home, the locale");
	cr_assert_str_eq(r.out,
			 "sandbox\n/home/sandbox C.UTF-8\nhome-writable\n1\n");
	it_result_free(&r);
	r = it_hutch("sh", s,
		     "PYTHONPATH=. python3 -m pytest -q -p no:cacheprovider",
		     NULL);
	IT_ASSERT_EXIT(r, 0, "pytest");
	cr_assert_not_null(strstr(r.out, "2 passed"), "%s", r.out);
	it_result_free(&r);
	sh("rm -rf '%s'", dir);
}
