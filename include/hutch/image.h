/*
 * hutch/image.h - images without a registry: import a root filesystem
 *
 * hutch_image_import() turns a root filesystem on the host (a directory a
 * tool such as debootstrap made, or a tar of one) into an image of the
 * engine, through its REST API (POST /images/create?fromSrc=-), as
 * `docker import` does.  The tar is made while it travels, so memory stays
 * bounded whatever the size of the tree: the first names of up to 65536
 * hard-linked files (16 MiB of names at most) are kept to link their later
 * names to; past that, a further hard-linked file is stored as a copy.
 *
 * A directory is stored as it is: symlinks as symlinks, never followed
 * (one pointing at /etc/shadow stays a link to /etc/shadow of the image);
 * hard links, device nodes, fifos, set-id bits, modes, mtimes and numeric
 * owners as the tree has them.  Sockets are left out.  Extended
 * attributes (file capabilities, SELinux labels) and ACLs are not stored.
 * The directory itself becomes the image's "/".
 *
 * A tar file (plain, or compressed with gzip, bzip2, xz or zstd) is sent
 * as it is; the engine unpacks it.  Both Docker and Podman unpack gzip and
 * xz; zstd is the engine's choice (Podman reads it, older Dockers
 * answer "invalid tar header").
 */
#ifndef HUTCH_IMAGE_H
#define HUTCH_IMAGE_H

#include <stddef.h>
#include <stdint.h>
#include <hutch/engine.h>
#include <hutch/error.h>
#include <hutch/exec.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HUTCH_IMAGE_IMPORT_OPTIONS_VERSION 2

/* Called at most ten times a second while the tar is sent, and once at
 * the end: `bytes` of it sent so far in `elapsed_ms`.  Non-zero stops the
 * import (HUTCH_ECANCELLED). */
typedef int (*hutch_image_progress_fn)(uint64_t bytes, uint64_t elapsed_ms,
				       void *payload);

typedef struct {
	unsigned int version; /* HUTCH_IMAGE_IMPORT_OPTIONS_VERSION */
	/* The image's environment, "KEY=VALUE" each (ENV). */
	const char *const *env;
	size_t env_count;
	const char *workdir; /* WORKDIR, an absolute path; NULL: none */
	const char *user;    /* USER ("name", "uid" or "uid:gid"); NULL */
	hutch_image_progress_fn progress; /* may be NULL */
	void *payload;
	const hutch_cancel *cancel; /* may be NULL */
	/* Version 2. */
	/* The image's labels, "KEY=VALUE" each (LABEL): KEY of
	 * [A-Za-z0-9._/-], VALUE of [A-Za-z0-9._/:@+,=-] (no quoting). */
	const char *const *labels;
	size_t label_count;
	/* 1: when `ref` already names an image whose labels hold every one
	 * given (at least one), import nothing: hutch_image_import returns 1
	 * with that image's ID.  A recipe labels its build with a hash of
	 * what went into it, so that running it again costs nothing. */
	int if_changed;
	/* 1: the image `ref` named before is removed once the import has
	 * taken the name from it, when it has no other name and nothing
	 * uses it (else it stays, as the engine keeps it). */
	int prune;
} hutch_image_import_options;

#define HUTCH_IMAGE_IMPORT_OPTIONS_INIT                                        \
	{                                                                      \
		HUTCH_IMAGE_IMPORT_OPTIONS_VERSION, NULL, 0, NULL, NULL, NULL, \
			NULL, NULL, NULL, 0, 0, 0                              \
	}

/*
 * 1 when `ref` is a reference an image may be imported as: NAME or
 * NAME:TAG, NAME being lowercase path components ("a/b", separators
 * '.', '_', "__" and runs of '-' inside a component) after an optional
 * registry host ("host.example:5000/"), TAG one of [A-Za-z0-9_.-] up to
 * 128 characters not starting with '.' or '-'.  No digest ("@sha256:").
 * 0 otherwise.
 */
int hutch_image_ref_valid(const char *ref);

/*
 * Import `source` (a directory, or a tar file) as image `ref` (NAME or
 * NAME:TAG; without a tag, "latest").  The source's own path may not go
 * through a symlink (a tree a session can write could swap one in: give
 * its real path), and nothing inside a directory is followed.  On success, *id (may be NULL) gets the image's ID
 * ("sha256:..."), which the caller frees.
 *
 * Returns 0 (imported), 1 (opts->if_changed, and `ref` already holds
 * that build: nothing sent), HUTCH_EINVALID (bad reference or option, a
 * source that is neither a directory nor a tar), HUTCH_ENOTFOUND (no such
 * source), HUTCH_ECANCELLED, or the engine's or the walk's error.
 */
int hutch_image_import(hutch_engine *engine, const char *source,
		       const char *ref, const hutch_image_import_options *opts,
		       char **id, hutch_error **err);

/*
 * Remove image `ref` (a reference or an ID) from the engine; with `force`
 * also when a stopped container uses it.  HUTCH_ENOTFOUND when there is
 * no such image.
 */
int hutch_image_remove(hutch_engine *engine, const char *ref, int force,
		       hutch_error **err);

#ifdef __cplusplus
}
#endif
#endif
