/*
 * cmd_cp.c - hutch cp: files and directories in and out, as docker cp
 *
 *   hutch cp HOSTPATH SESSION:PATH    HOSTPATH goes to PATH in the workspace
 *   hutch cp SESSION:PATH HOSTPATH    and back
 *
 * Where the copy lands follows docker cp: into a directory that exists,
 * under the source's name; otherwise as the destination's name; a source
 * ending in "/." copies a directory's contents.  The copying is sync-in's
 * and sync-out's (hutch/sync.h), with their confinement: nothing outside
 * the workspace is written in the session, nothing outside the host
 * destination's directory on the host, and no symlink is followed on the
 * host side.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <json-c/json.h>

#include "cli.h"

/* "SESSION:PATH": 1 with the name and path split (in `buf`), 0 for a
 * host path, -1 when too long for `buf`.  As docker cp: a host path with
 * a ':' is written "./a:b" or "/x/a:b", so whatever has a '/' before its
 * first ':' is the host's. */
static int session_path(const char *arg, char *buf, size_t bufsz,
			const char **name, const char **path)
{
	const char *colon = strchr(arg, ':');
	const char *slash = strchr(arg, '/');

	if (!colon || (slash && slash < colon) || colon == arg)
		return 0;
	if (strlen(arg) >= bufsz)
		return -1;
	snprintf(buf, bufsz, "%s", arg);
	buf[colon - arg] = '\0';
	*name = buf;
	*path = buf + (colon - arg) + 1;
	return 1;
}

/* Whether `path` names a directory's contents: "x/." or "x/./". */
static int contents_of(const char *path)
{
	size_t n = strlen(path);

	while (n > 1 && path[n - 1] == '/')
		n--;
	return (n == 1 && path[0] == '.') ||
	       (n >= 2 && path[n - 1] == '.' && path[n - 2] == '/');
}

/* The last component of `path`, trailing slashes and "/." ignored, into
 * `out`; "" for a path that has none ("/", "."). */
static void last_name(const char *path, char *out, size_t outsz)
{
	size_t n = strlen(path), start;

	for (;;) {
		while (n > 1 && path[n - 1] == '/')
			n--;
		if (n >= 2 && path[n - 1] == '.' && path[n - 2] == '/')
			n -= 2;
		else
			break;
	}
	if (n == 1 && path[0] == '.')
		n = 0;
	start = n;
	while (start > 0 && path[start - 1] != '/')
		start--;
	snprintf(out, outsz, "%.*s", (int)(n - start), path + start);
}

/*
 * What `path` is in the session's workspace: 'd' a directory, 'f'
 * anything else, 0 when it does not exist, -1 on failure (said).  Asked
 * of the agent (ls), which resolves the path as the copy will; a session
 * that changes it meanwhile only changes where in its own workspace the
 * caller's files land.
 */
static int session_type(hutch_session *s, const char *path)
{
	hutch_fs_options fo = HUTCH_FS_OPTIONS_INIT;
	hutch_fs_result *res = NULL;
	hutch_fs_entry e;
	hutch_error *err = NULL;
	int rc;

	fo.max = 1;
	rc = hutch_fs_ls(&res, s, *path ? path : ".", &fo, &err);
	if (rc == HUTCH_ENOTFOUND) {
		hutch_error_free(err);
		return 0;
	}
	if (rc < 0) {
		cli_fail(err);
		return -1;
	}
	/* A file lists itself, under its own path; a directory its
	 * entries, under paths below its own (or none). */
	rc = hutch_fs_result_count(res) == 0 ||
			     (hutch_fs_result_entry(&e, res, 0) == 0 &&
			      strcmp(e.path, hutch_fs_result_path(res)) != 0) ?
		     'd' :
		     'f';
	hutch_fs_result_free(res);
	return rc;
}

/* Join a and b with one '/' into a new string. */
static char *join(const char *a, const char *b)
{
	char *out = NULL;
	size_t n = strlen(a);

	while (n > 0 && a[n - 1] == '/')
		n--;
	if (asprintf(&out, "%.*s%s%s", (int)n, a, n ? "/" : "", b) < 0)
		return NULL;
	return out;
}

static int copy_in(hutch_session *s, const char *host, const char *path,
		   hutch_sync_options *so, hutch_sync_stats *st)
{
	hutch_error *err = NULL;
	char base[4096], *dest = NULL;
	struct stat sb;
	int type, rc;

	/* The host side is opened by the library without following a
	 * symlink; this look only decides the name, as docker cp does. */
	if (stat(host, &sb) < 0) {
		cli_error("cp: host path '%s': %s", host, strerror(errno));
		return EXIT_HUTCH_FAILED;
	}
	if (S_ISDIR(sb.st_mode) && contents_of(host)) {
		so->dest = path;
	} else {
		last_name(host, base, sizeof(base));
		if (!*base || strcmp(base, "..") == 0) {
			cli_error("cp: host path '%s' has no name to copy as: "
				  "give DIR/. for its contents",
				  host);
			return EXIT_HUTCH_FAILED;
		}
		type = session_type(s, path);
		if (type < 0)
			return EXIT_HUTCH_FAILED;
		if (type == 'd' || (!*path) ||
		    (path[strlen(path) - 1] == '/' && !S_ISDIR(sb.st_mode)))
			dest = join(path, base);
		else if (type == 'f' && S_ISDIR(sb.st_mode)) {
			cli_error("cp: cannot copy directory '%s' onto file "
				  "'%s' of the workspace",
				  host, path);
			return EXIT_HUTCH_FAILED;
		}
		if (!dest && !(dest = strdup(path))) {
			cli_error("out of memory");
			return EXIT_HUTCH_FAILED;
		}
		so->dest = dest;
	}
	rc = hutch_sync_in(st, s, host, so, &err);
	free(dest);
	return rc < 0 ? cli_fail(err) : 0;
}

static int copy_out(hutch_session *s, const char *path, const char *host,
		    hutch_sync_options *so, hutch_sync_stats *st)
{
	hutch_error *err = NULL;
	char name[4096], *parent = NULL, *slash;
	const char *hostdir = host;
	struct stat sb;
	int type, rc, exists = lstat(host, &sb) == 0;

	if (contents_of(path)) {
		/* Into HOST itself, made when missing. */
	} else if (exists && S_ISDIR(sb.st_mode)) {
		last_name(path, name, sizeof(name));
		so->as = *name ? name : "workspace";
	} else {
		if (exists) {
			type = session_type(s, path);
			if (type < 0)
				return EXIT_HUTCH_FAILED;
			if (type == 'd') {
				cli_error(
					"cp: cannot copy directory '%s' of the "
					"workspace onto file '%s'",
					path, host);
				return EXIT_HUTCH_FAILED;
			}
		}
		/* As HOST's own name, in its directory. */
		if (!(parent = strdup(host))) {
			cli_error("out of memory");
			return EXIT_HUTCH_FAILED;
		}
		for (size_t n = strlen(parent); n > 1 && parent[n - 1] == '/';
		     n--)
			parent[n - 1] = '\0';
		slash = strrchr(parent, '/');
		if (slash) {
			snprintf(name, sizeof(name), "%s", slash + 1);
			*(slash == parent ? slash + 1 : slash) = '\0';
			hostdir = parent;
		} else {
			snprintf(name, sizeof(name), "%s", parent);
			hostdir = ".";
		}
		so->as = name;
	}
	rc = hutch_sync_out(st, s, hostdir, path, so, &err);
	free(parent);
	return rc < 0 ? cli_fail(err) : 0;
}

static const cli_option cp_options[] = {
	{ "json", NULL, 'j', "print the counts as JSON" },
	{ NULL, NULL, 0, NULL },
};

static int cmd_cp(cli_globals *g, int argc, char **argv);

const cli_command cli_cmd_cp = {
	.name = "cp",
	.fn = cmd_cp,
	.synopsis = "HOSTPATH SESSION:PATH | SESSION:PATH HOSTPATH [options]",
	.about = "copy a file or directory into the workspace or out of it, "
		 "as docker cp",
	.shortopts = "h",
	.opts = { cp_options },
};

static int cmd_cp(cli_globals *g, int argc, char **argv)
{
	struct option lo[CLI_MAX_OPTIONS + 2];
	hutch_sync_options so = HUTCH_SYNC_OPTIONS_INIT;
	cli_sync_progress_state ps = { "cp", 0, 0, 0 };
	hutch_sync_stats st;
	hutch_engine *engine = NULL;
	hutch_session *s = NULL;
	hutch_error *err = NULL;
	char sbuf[2][4096];
	const char *name = NULL, *path = NULL, *host;
	int c, json = 0, in, rc = EXIT_HUTCH_FAILED;

	cli_long_options(&cli_cmd_cp, lo);
	while ((c = cli_next_option(&cli_cmd_cp, lo, argc, argv)) != -1) {
		switch (c) {
		case 'j':
			json = 1;
			break;
		case 'h':
			cli_help(&cli_cmd_cp, stdout);
			return 0;
		default:
			return EXIT_HUTCH_FAILED;
		}
	}
	if (argc - optind != 2) {
		cli_usage_error(&cli_cmd_cp);
		return EXIT_HUTCH_FAILED;
	}
	{
		const char *n0, *p0, *n1, *p1;
		int a = session_path(argv[optind], sbuf[0], sizeof(sbuf[0]),
				     &n0, &p0);
		int b = session_path(argv[optind + 1], sbuf[1], sizeof(sbuf[1]),
				     &n1, &p1);

		if (a < 0 || b < 0) {
			cli_error("cp: a SESSION:PATH argument is too long");
			return EXIT_HUTCH_FAILED;
		}
		if (a == b) {
			cli_error("cp: give one side as SESSION:PATH and the "
				  "other as a host path (a host path with a "
				  "':' is written ./NAME)");
			return EXIT_HUTCH_FAILED;
		}
		in = b;
		name = in ? n1 : n0;
		path = in ? p1 : p0;
		host = argv[optind + (in ? 0 : 1)];
	}
	if (!hutch_session_name_valid(name)) {
		cli_error("cp: '%s' is not a session name", name);
		return EXIT_HUTCH_FAILED;
	}
	ps.tty = isatty(STDERR_FILENO);
	so.progress = cli_sync_progress;
	so.payload = &ps;
	if (cli_cancel_begin(&so.cancel, 0, &err) < 0)
		return cli_fail(err);
	if ((rc = cli_copy_session(g, name, in, &engine, &s)) != 0)
		goto out;
	rc = in ? copy_in(s, host, path, &so, &st) :
		  copy_out(s, path, host, &so, &st);
	cli_sync_progress_end(&ps);
	if (rc != 0)
		goto out;
	if (json) {
		json_object *o = json_object_new_object();

		if (o) {
			json_object_object_add(o, "session",
					       json_object_new_string(name));
			json_object_object_add(
				o, "direction",
				json_object_new_string(in ? "in" : "out"));
			json_object_object_add(o, "host",
					       json_object_new_string(host));
			json_object_object_add(o, "path",
					       json_object_new_string(path));
			cli_sync_stats_json(o, &st, 1);
			cli_print_json(o);
			json_object_put(o);
		}
	} else {
		cli_sync_summary("copied", &st);
	}
out:
	hutch_session_free(s);
	hutch_engine_free(engine);
	cli_cancel_end();
	return rc;
}
