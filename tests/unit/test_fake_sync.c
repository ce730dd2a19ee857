/*
 * Hostile archives for sync-out, crafted here and served by the fake
 * engine: a real engine only ever names entries after real files, but a
 * compromised one (or a future bug) could send anything.  Each test
 * checks that nothing appears or changes outside the host directory.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <archive.h>
#include <archive_entry.h>

#include <hutch/hutch.h>

#include "fake_engine.h"

#define UNTAR_REFUSAL                                                            \
	"{\"error\":{\"code\":\"not_dir\",\"message\":\"'d' is not a directory " \
	"in the workspace (Not a directory)\"}}\n"
#define RUNNING \
	"{\"Id\":\"c0ffee\",\"State\":{\"Status\":\"running\",\"Running\":true}}"

static struct fake_engine *fe;
static hutch_engine *engine;
static hutch_session *session;
static hutch_error *err;
static char tmp[PATH_MAX], host[PATH_MAX + 16], outside[PATH_MAX + 16];
static char tarbuf[1024 * 1024];
static size_t tarlen;
static struct archive *tw;

static fake_action serve(struct fake_conn *c, const struct fake_request *req,
			 void *p)
{
	(void)p;
	if (strcmp(req->path, "/v1.41/containers/hutch-s/json") == 0)
		fake_send_json(c, 200, RUNNING);
	else if (strncmp(req->path,
			 "/v1.41/containers/hutch-s/archive?path=%2Fworkspace",
			 strlen("/v1.41/containers/hutch-s/archive?path=%2Fworkspace")) ==
		 0)
		fake_send_response(c, 200, "application/x-tar", tarbuf, tarlen);
	else if (strcmp(req->path, "/v1.41/containers/hutch-s/exec") == 0)
		fake_send_json(c, 201, "{\"Id\":\"e1\"}");
	else if (strcmp(req->path, "/v1.41/exec/e1/start") == 0) {
		/* The session's unpacker (the agent's untar) answering at
		 * once, before it read a byte of the archive. */
		fake_sendf(c,
			   "HTTP/1.1 101 UPGRADED\r\n"
			   "Content-Type: application/vnd.docker.raw-stream\r\n"
			   "Connection: Upgrade\r\nUpgrade: tcp\r\n\r\n");
		fake_send_frame(c, 1, UNTAR_REFUSAL, strlen(UNTAR_REFUSAL));
		return FAKE_CLOSE;
	} else if (strcmp(req->path, "/v1.41/exec/e1/json") == 0)
		fake_send_json(c, 200,
			       "{\"ID\":\"e1\",\"Running\":false,"
			       "\"ExitCode\":1,\"Pid\":7}");
	else
		fake_send_json(c, 404, "{\"message\":\"no such thing\"}");
	return FAKE_KEEP;
}

static void rm_rf(const char *path)
{
	char cmd[PATH_MAX + 32];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", path);
	cr_assert_eq(system(cmd), 0);
}

static void teardown(void)
{
	hutch_error_free(err);
	hutch_session_free(session);
	hutch_engine_free(engine);
	fake_engine_stop(fe);
	err = NULL;
	session = NULL;
	engine = NULL;
	fe = NULL;
	if (tmp[0])
		rm_rf(tmp);
	tmp[0] = '\0';
}

static void setup(void)
{
	hutch_error *e = NULL;

	snprintf(tmp, sizeof(tmp), "/tmp/hutch-fakesync-XXXXXX");
	cr_assert_not_null(mkdtemp(tmp));
	snprintf(host, sizeof(host), "%s/host", tmp);
	snprintf(outside, sizeof(outside), "%s/outside", tmp);
	cr_assert_eq(mkdir(host, 0755), 0);
	cr_assert_eq(mkdir(outside, 0755), 0);
	cr_assert_eq(fake_engine_start(&fe, serve, NULL), 0, "fake engine: %m");
	cr_assert_eq(hutch_engine_open(&engine, fake_engine_url(fe), &e), 0);
	cr_assert_eq(hutch_session_open(&session, engine, "s", NULL, &e), 0);
	tw = archive_write_new();
	cr_assert_not_null(tw);
	cr_assert_eq(archive_write_set_format_pax_restricted(tw), ARCHIVE_OK);
	cr_assert_eq(archive_write_open_memory(tw, tarbuf, sizeof(tarbuf),
					       &tarlen),
		     ARCHIVE_OK);
}

TestSuite(fake_sync, .init = setup, .fini = teardown, .timeout = 30);

static void add(const char *name, mode_t type, mode_t perm, const char *data,
		const char *link, const char *hardlink)
{
	struct archive_entry *e = archive_entry_new();
	size_t len = data ? strlen(data) : 0;

	archive_entry_set_pathname(e, name);
	archive_entry_set_filetype(e, type);
	archive_entry_set_perm(e, perm);
	archive_entry_set_size(e, (la_int64_t)len);
	if (link)
		archive_entry_set_symlink(e, link);
	if (hardlink)
		archive_entry_set_hardlink(e, hardlink);
	if (type == AE_IFCHR)
		archive_entry_set_rdev(e, makedev(1, 3));
	cr_assert_eq(archive_write_header(tw, e), ARCHIVE_OK, "%s: %s", name,
		     archive_error_string(tw));
	if (len)
		cr_assert_eq(archive_write_data(tw, data, len),
			     (la_ssize_t)len);
	archive_entry_free(e);
}

static int run(hutch_sync_stats *st)
{
	cr_assert_eq(archive_write_close(tw), ARCHIVE_OK);
	archive_write_free(tw);
	tw = NULL;
	return hutch_sync_out(st, session, host, NULL, NULL, &err);
}

static void assert_absent(const char *path)
{
	struct stat st;

	cr_assert_eq(lstat(path, &st), -1, "%s exists", path);
}

static void assert_outside_empty(void)
{
	char cmd[3 * PATH_MAX + 128];

	/* Nothing at all was made next to the host directory or in `outside`. */
	snprintf(cmd, sizeof(cmd),
		 "test \"$(ls -A '%s' | wc -l)\" = 0 && "
		 "test \"$(ls -A '%s' | wc -l)\" = 2",
		 outside, tmp);
	cr_assert_eq(system(cmd), 0,
		     "something was written outside the host directory");
}

static void path_in(char *out, size_t outsz, const char *dir, const char *name)
{
	snprintf(out, outsz, "%s/%s", dir, name);
}

static void assert_refused_and_ok_extracted(int rc)
{
	char p[PATH_MAX + 64];
	struct stat st;

	cr_assert_eq(rc, HUTCH_EFAILED, "rc %d: %s", rc,
		     err ? hutch_error_message(err) : "-");
	cr_assert_not_null(strstr(hutch_error_message(err), "refused"), "%s",
			   hutch_error_message(err));
	/* The safe entry after the bad one was still extracted. */
	path_in(p, sizeof(p), host, "ok");
	cr_assert_eq(lstat(p, &st), 0, "ok was not extracted");
	cr_assert(S_ISREG(st.st_mode));
}

Test(fake_sync, dotdot_entries_stay_inside)
{
	hutch_sync_stats st;

	add("workspace/", AE_IFDIR, 0755, NULL, NULL, NULL);
	add("workspace/../outside/x", AE_IFREG, 0644, "pwn", NULL, NULL);
	add("workspace/a/../../../outside/y", AE_IFREG, 0644, "pwn", NULL,
	    NULL);
	add("../outside/z", AE_IFREG, 0644, "pwn", NULL, NULL);
	add("workspace/ok", AE_IFREG, 0644, "fine", NULL, NULL);
	assert_refused_and_ok_extracted(run(&st));
	assert_outside_empty();
}

Test(fake_sync, absolute_entries_stay_inside)
{
	hutch_sync_stats st;
	char abs[PATH_MAX + 64];

	path_in(abs, sizeof(abs), outside, "abs");
	add("workspace/", AE_IFDIR, 0755, NULL, NULL, NULL);
	add(abs, AE_IFREG, 0644, "pwn", NULL, NULL);
	add("/workspace/abs2", AE_IFREG, 0644, "pwn", NULL, NULL);
	add("workspace/ok", AE_IFREG, 0644, "fine", NULL, NULL);
	assert_refused_and_ok_extracted(run(&st));
	assert_outside_empty();
	assert_absent("/workspace/abs2");
}

Test(fake_sync, no_write_through_symlink_in_archive)
{
	hutch_sync_stats st;
	char p[PATH_MAX + 64];
	struct stat sb;

	add("workspace/", AE_IFDIR, 0755, NULL, NULL, NULL);
	add("workspace/l", AE_IFLNK, 0777, NULL, outside, NULL);
	add("workspace/l/x", AE_IFREG, 0644, "pwn", NULL, NULL);
	add("workspace/ok", AE_IFREG, 0644, "fine", NULL, NULL);
	add("workspace/rel", AE_IFLNK, 0777, NULL, "../outside", NULL);
	add("workspace/rel/y", AE_IFREG, 0644, "pwn", NULL, NULL);
	/* libarchive (ARCHIVE_EXTRACT_UNLINK + SECURE_SYMLINKS) replaces a
	 * symlink in the way of a later entry by a real directory rather than
	 * following it: the later entry lands inside the host directory. */
	cr_assert_eq(run(&st), 0, "%s", err ? hutch_error_message(err) : "");
	assert_outside_empty();
	path_in(p, sizeof(p), host, "l/x");
	cr_assert_eq(lstat(p, &sb), 0);
	cr_assert(S_ISREG(sb.st_mode));
	path_in(p, sizeof(p), host, "l");
	cr_assert_eq(lstat(p, &sb), 0);
	cr_assert(S_ISDIR(sb.st_mode));
	path_in(p, sizeof(p), host, "ok");
	cr_assert_eq(lstat(p, &sb), 0);
}

Test(fake_sync, symlinks_arrive_as_symlinks)
{
	hutch_sync_stats st;
	char p[PATH_MAX + 64], t[PATH_MAX];
	ssize_t n;

	add("workspace/", AE_IFDIR, 0755, NULL, NULL, NULL);
	add("workspace/etc", AE_IFLNK, 0777, NULL, "/etc", NULL);
	add("workspace/up", AE_IFLNK, 0777, NULL, "../outside", NULL);
	cr_assert_eq(run(&st), 0, "%s", err ? hutch_error_message(err) : "");
	cr_assert_eq(st.symlinks, 2);
	path_in(p, sizeof(p), host, "etc");
	n = readlink(p, t, sizeof(t) - 1);
	cr_assert_gt(n, 0);
	t[n] = '\0';
	cr_assert_str_eq(t, "/etc");
	assert_outside_empty();
}

Test(fake_sync, no_write_through_symlink_already_on_host)
{
	hutch_sync_stats st;
	char p[PATH_MAX + 64];
	struct stat sb;

	/* An earlier sync-out left host/evil -> outside. */
	path_in(p, sizeof(p), host, "evil");
	cr_assert_eq(symlink(outside, p), 0);
	add("workspace/", AE_IFDIR, 0755, NULL, NULL, NULL);
	add("workspace/evil/x", AE_IFREG, 0644, "pwn", NULL, NULL);
	add("workspace/ok", AE_IFREG, 0644, "fine", NULL, NULL);
	cr_assert_eq(run(&st), 0, "%s", err ? hutch_error_message(err) : "");
	assert_outside_empty();
	/* The symlink in the way was replaced by a real directory. */
	cr_assert_eq(lstat(p, &sb), 0);
	cr_assert(S_ISDIR(sb.st_mode));
}

Test(fake_sync, hardlinks_only_inside)
{
	hutch_sync_stats st;
	char p[PATH_MAX + 64], target[PATH_MAX + 64];
	struct stat sb;
	FILE *f;

	memset(&st, 0, sizeof(st));
	path_in(target, sizeof(target), outside, "secret");
	f = fopen(target, "w");
	cr_assert_not_null(f);
	fputs("secret", f);
	fclose(f);
	add("workspace/", AE_IFDIR, 0755, NULL, NULL, NULL);
	add("workspace/h1", AE_IFREG, 0644, NULL, NULL, target);
	add("workspace/h2", AE_IFREG, 0644, NULL, NULL,
	    "workspace/../outside/secret");
	add("workspace/sl", AE_IFLNK, 0777, NULL, target, NULL);
	add("workspace/h3", AE_IFREG, 0644, NULL, NULL, "workspace/sl");
	add("workspace/ok", AE_IFREG, 0644, "fine", NULL, NULL);
	add("workspace/h4", AE_IFREG, 0644, NULL, NULL, "workspace/ok");
	assert_refused_and_ok_extracted(run(&st));
	cr_assert_eq(stat(target, &sb), 0);
	cr_assert_eq(sb.st_nlink, 1, "the outside file got %lu links",
		     (unsigned long)sb.st_nlink);
	path_in(p, sizeof(p), host, "h1");
	assert_absent(p);
	path_in(p, sizeof(p), host, "h2");
	assert_absent(p);
	path_in(p, sizeof(p), host, "h3");
	assert_absent(p);
	/* A link between two files inside is made. */
	path_in(p, sizeof(p), host, "h4");
	cr_assert_eq(stat(p, &sb), 0);
	cr_assert_eq(sb.st_nlink, 2);
	cr_assert_eq(st.hardlinks, 0); /* none counted: the extraction failed */
}

Test(fake_sync, devices_fifos_skipped_setuid_dropped)
{
	hutch_sync_stats st;
	char p[PATH_MAX + 64];
	struct stat sb;

	memset(&st, 0, sizeof(st));
	add("workspace/", AE_IFDIR, 0755, NULL, NULL, NULL);
	add("workspace/null", AE_IFCHR, 0666, NULL, NULL, NULL);
	add("workspace/fifo", AE_IFIFO, 0644, NULL, NULL, NULL);
	add("workspace/suid", AE_IFREG, 06755, "#!/bin/sh\n", NULL, NULL);
	add("workspace/sdir", AE_IFDIR, 02775, NULL, NULL, NULL);
	cr_assert_eq(run(&st), 0, "%s", err ? hutch_error_message(err) : "");
	cr_assert_eq(st.skipped, 2);
	cr_assert_eq(st.files, 1);
	cr_assert_eq(st.dirs, 1);
	path_in(p, sizeof(p), host, "null");
	assert_absent(p);
	path_in(p, sizeof(p), host, "fifo");
	assert_absent(p);
	path_in(p, sizeof(p), host, "suid");
	cr_assert_eq(stat(p, &sb), 0);
	cr_assert_eq(sb.st_mode & 07777, 0755, "mode %o", sb.st_mode & 07777);
	path_in(p, sizeof(p), host, "sdir");
	cr_assert_eq(stat(p, &sb), 0);
	cr_assert_eq(sb.st_mode & 07777, 0775, "mode %o", sb.st_mode & 07777);
	assert_outside_empty();
}

Test(fake_sync, cwd_of_the_process_unchanged)
{
	hutch_sync_stats st;
	char before[PATH_MAX], after[PATH_MAX];

	cr_assert_not_null(getcwd(before, sizeof(before)));
	add("workspace/", AE_IFDIR, 0755, NULL, NULL, NULL);
	add("workspace/ok", AE_IFREG, 0644, "fine", NULL, NULL);
	cr_assert_eq(run(&st), 0, "%s", err ? hutch_error_message(err) : "");
	cr_assert_not_null(getcwd(after, sizeof(after)));
	cr_assert_str_eq(before, after);
	cr_assert_eq(st.files, 1);
	cr_assert_eq(st.bytes, 4);
}

/*
 * sync-in: the session's unpacker refuses the copy before it read a byte.
 * The error is the agent's, in one line; the walker, stopped with most of
 * the tree (4 MiB, past the 1 MiB pipe) unsent, is cut and leaves nothing
 * allocated (the valgrind and sanitizer rounds run this test: libarchive
 * 3.6's archive_write_fail() leaked its write buffer here).
 */
Test(fake_sync, sync_in_refused_by_the_unpacker)
{
	char path[PATH_MAX + 32];
	static char block[64 * 1024];
	hutch_sync_stats st;
	const char *m;
	FILE *f;
	int rc;

	path_in(path, sizeof(path), host, "big");
	f = fopen(path, "w");
	cr_assert_not_null(f);
	memset(block, 'x', sizeof(block));
	for (int i = 0; i < 64; i++)
		cr_assert_eq(fwrite(block, sizeof(block), 1, f), 1);
	cr_assert_eq(fclose(f), 0);

	rc = hutch_sync_in(&st, session, host, NULL, &err);
	m = err ? hutch_error_message(err) : "";
	cr_assert_eq(rc, HUTCH_EINVALID, "rc %d: %s", rc, m);
	cr_expect(strstr(m, "'d' is not a directory in the workspace"), "%s",
		  m);
	cr_expect_null(strchr(m, '\n'), "%s", m);
}
