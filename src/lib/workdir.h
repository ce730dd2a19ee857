/*
 * workdir.h - where a command runs: the one rule for a working directory
 */
#ifndef HUTCH_WORKDIR_H
#define HUTCH_WORKDIR_H

/* Where the workspace is mounted in every session's container. */
#define HUTCH__WORKSPACE_DIR "/workspace"

/* The directory a command runs in, for hutch_exec_options.workdir: NULL is
 * the workspace, a relative path is under it ("src" is /workspace/src, as
 * `hutch exec --workdir`, a batch job's "workdir" and the MCP exec tool
 * mean it), an absolute path stays as it is.  A new string the caller
 * frees, or NULL when out of memory. */
char *hutch__workdir_resolve(const char *workdir);

#endif
