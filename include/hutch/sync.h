/*
 * hutch/sync.h - copy a host directory into a session's workspace and back
 *
 * Both directions stream a tar archive, made or unpacked with libarchive
 * while it travels, so memory stays the same whatever the size of the
 * tree.  No process is spawned on the host.
 *
 * sync-in copies the *contents* of a host directory into /workspace, or
 * into a directory under it (as `docker cp DIR/. C:/workspace/DEST`), or
 * one regular file: symlinks are stored as symlinks and never followed,
 * modes (without set-id bits), mtimes and empty directories are kept,
 * sockets, fifos and devices are skipped.  The archive goes on the stdin
 * of hutch's agent in the session (an exec, as a command's), which
 * unpacks it as the session's user: never through the engine's archive
 * API, which extracts as root through whatever the session put in the way.
 * Existing files and symlinks are replaced, directories never; others are
 * left alone.  sync-out reads through the engine's archive API (GET).
 *
 * sync-out copies the contents of /workspace, or of one path under it, into
 * a host directory (as `docker cp C:/workspace/. DIR`).  Whatever the
 * container put in its workspace, and whatever a process in the container
 * renames or swaps inside the host directory while it is written (when
 * the host directory lies in a bind-mounted workspace), nothing is written,
 * linked or removed outside that host directory: no absolute names, no
 * "..", no symlink is ever followed (also none left by an earlier
 * sync-out), no device nodes, fifos or sockets, no setuid/setgid bits, no
 * ownership, extended attributes, ACLs or file flags.  Modes, mtimes and
 * symlinks are kept.
 *
 * The host directory's own path may not go through a symlink (for either
 * direction): a sandbox that can write where it lies could otherwise put
 * one there just before it is opened.
 *
 * Both work on a running or stopped session, on its volume or on a bind
 * mounted host workspace; a session that does not exist yet is created.
 */
#ifndef HUTCH_SYNC_H
#define HUTCH_SYNC_H

#include <stddef.h>
#include <stdint.h>
#include <hutch/error.h>
#include <hutch/exec.h>
#include <hutch/session.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What a sync moved.  Counts are of entries; directories excluded by a
 * pattern count once and are not descended. */
typedef struct {
	uint64_t files; /* regular files */
	uint64_t dirs;	/* directories (not the top one) */
	uint64_t symlinks;
	uint64_t hardlinks;	/* sync-out: hard links made */
	uint64_t skipped;	/* sockets, fifos, devices: not copied */
	uint64_t excluded;	/* sync-in: entries matched by an exclude */
	uint64_t bytes;		/* contents of regular files */
	uint64_t archive_bytes; /* tar bytes that went through the engine */
	uint64_t duration_ms;	/* wall time of the whole call */
} hutch_sync_stats;

/* Called on the calling thread while data flows, at most ten times a
 * second, with the figures so far (`stats` is borrowed for the call).
 * Return 0 to go on; non-zero cancels the sync (HUTCH_ECANCELLED). */
typedef int (*hutch_sync_progress_cb)(const hutch_sync_stats *stats,
				      void *payload);

/* Version 1 ends at `cancel`; both versions are taken. */
#define HUTCH_SYNC_OPTIONS_VERSION 2

typedef struct {
	unsigned int version; /* HUTCH_SYNC_OPTIONS_VERSION */
	/* sync-in: glob.h patterns of entries to leave out, matched against
	 * the path relative to the host directory ("*.o", "node_modules",
	 * "build/out").  Borrowed; ignored by sync-out. */
	const char *const *exclude;
	size_t exclude_count;
	hutch_sync_progress_cb progress; /* may be NULL */
	void *payload;
	hutch_cancel *cancel; /* may be NULL; borrowed */
	/* Version 2.  sync-in: where in the workspace the copy lands
	 * (relative to /workspace, or absolute under it; no ".."): a
	 * directory's contents go into it, made when missing, a single file
	 * is written as it.  NULL or "": /workspace itself, where a single
	 * file keeps its name.  Ignored by sync-out. */
	const char *dest;
	/* Version 2.  sync-out: the name the copied path takes in the host
	 * directory (one component): a directory is made as HOSTDIR/AS with
	 * its contents below, a file lands as HOSTDIR/AS.  NULL: a
	 * directory's contents land in HOSTDIR itself, a file as
	 * HOSTDIR/BASENAME.  Ignored by sync-in. */
	const char *as;
} hutch_sync_options;

#define HUTCH_SYNC_OPTIONS_INIT                                              \
	{                                                                    \
		HUTCH_SYNC_OPTIONS_VERSION, NULL, 0, NULL, NULL, NULL, NULL, \
			NULL                                                 \
	}

/*
 * Copy the contents of directory `hostdir`, or the regular file it names,
 * into the session's /workspace (opts->dest: where in it, version 2).  The
 * session is created or started when needed.  `opts` may be NULL.  `out`
 * (may be NULL) receives the figures on success and is untouched on
 * failure.
 *
 * Returns 0; HUTCH_EINVALID (hostdir missing or neither a directory nor a
 * regular file, dest outside /workspace or a directory where a file is to
 * go, bad exclude pattern, bad options); HUTCH_EESCAPE (dest resolves
 * outside the workspace through a symlink in it); HUTCH_ECANCELLED; an
 * engine error (its message kept); HUTCH_EFAILED when reading the host
 * tree or writing the workspace failed (the message names the file).  What
 * was sent before a failure stays in the workspace.
 */
int hutch_sync_in(hutch_sync_stats *out, hutch_session *session,
		  const char *hostdir, const hutch_sync_options *opts,
		  hutch_error **err);

/*
 * Copy the contents of /workspace/`path` (`path` NULL or "" or "." for the
 * whole workspace; relative to /workspace, or absolute under /workspace)
 * into `hostdir`, which is created when missing (its parent must exist).
 * A directory's contents land directly in hostdir; a single file (or
 * symlink) lands as hostdir/BASENAME.  Existing files are replaced, others
 * are left alone.  `opts` may be NULL.  `out` as for hutch_sync_in.
 *
 * Returns 0; HUTCH_EINVALID (path outside /workspace, hostdir not usable);
 * HUTCH_ENOTFOUND (path not in the workspace); HUTCH_ECANCELLED; an engine
 * error; HUTCH_EFAILED when writing failed or when the archive held
 * entries that were refused as unsafe (the rest is extracted, the message
 * names the first refused entry and how many there were).
 *
 * Threads: the extraction runs on a thread of its own, relative to a
 * descriptor of the host directory; the process's working directory is
 * never used or changed.
 */
int hutch_sync_out(hutch_sync_stats *out, hutch_session *session,
		   const char *hostdir, const char *path,
		   const hutch_sync_options *opts, hutch_error **err);

#ifdef __cplusplus
}
#endif
#endif
