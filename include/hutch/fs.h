/*
 * hutch/fs.h - file tools confined to a session's workspace
 *
 * read, write, edit, grep, find, ls, delete and move work on /workspace
 * inside the session's container.  They run in hutch's own static agent
 * there, so they behave the same on any image (no shell, grep or find
 * needed), and the agent resolves every path one component at a time
 * beneath /workspace: a path that leads outside it - through "..", an
 * absolute path or a symlink the sandboxed code made, including one
 * swapped in while the tool runs - is refused with HUTCH_EESCAPE and
 * nothing is touched.
 *
 * Paths are relative to /workspace or absolute under it.  Paths in results
 * are relative to /workspace ("." is the workspace itself).  Every result
 * has a cap and says when it was truncated.  Text in results is valid UTF-8:
 * bytes that are not are shown as U+FFFD.
 *
 * Each call is one exec in the container (write and edit hand their texts
 * to it in its environment, or on its stdin past 48 KiB); the container is
 * created or started first when needed, as for hutch_exec_run.
 */
#ifndef HUTCH_FS_H
#define HUTCH_FS_H

#include <stddef.h>
#include <stdint.h>
#include <hutch/error.h>
#include <hutch/exec.h>
#include <hutch/session.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HUTCH_FS_OPTIONS_VERSION 2
#define HUTCH_FS_DEFAULT_TIMEOUT_MS 60000
/* The largest text hutch_fs_write and hutch_fs_edit take (each argument). */
#define HUTCH_FS_MAX_TEXT (64u * 1024u * 1024u)

/*
 * The words the caller's users know a tool and its arguments by.  Error
 * messages are written with them, so that they read in the caller's own
 * terms: a shell user of `hutch edit` is told "edit: ... with --all ...",
 * a model that called the MCP tool edit_file "edit_file: ... with
 * replace_all: true ...".  Every member may be NULL: then the hutch CLI's
 * word, given in parentheses, is used.  Borrowed for the call.
 */
typedef struct {
	const char *tool;     /* the tool ("read", "write", "edit", "grep",
				 "find", "ls", "delete", "move") */
	const char *path;     /* ("the path"); move: the source */
	const char *to;	      /* move: the destination ("the destination") */
	const char *content;  /* write ("the content") */
	const char *old_text; /* edit ("the old text") */
	const char *new_text; /* edit ("the new text") */
	const char *pattern;  /* grep ("the pattern"), find ("the glob") */
	/* How the user turns on the tool's switch: edit ("--all"), delete
	 * ("--recursive"), move ("--overwrite"). */
	const char *flag;
} hutch_fs_words;

typedef struct {
	unsigned int version; /* HUTCH_FS_OPTIONS_VERSION */
	/* read */
	uint64_t offset;    /* first line, 1-based; 0: 1 */
	uint64_t limit;	    /* lines; 0: 2000 */
	uint64_t max_bytes; /* content cap; 0: 256 KiB (max 4 MiB) */
	/* edit */
	int all; /* replace every occurrence */
	/* grep */
	const char *const *include; /* globs a file's path must match */
	size_t include_count;
	int ignore_case;
	/* find: 'f', 'd' or 0 for any type */
	char type;
	/* grep, find, ls: most entries returned; 0: the tool's default
	 * (grep 200, find and ls 1000) */
	uint64_t max;
	uint64_t timeout_ms;  /* 0: HUTCH_FS_DEFAULT_TIMEOUT_MS */
	hutch_cancel *cancel; /* may be NULL; borrowed */
	/* Version 2. */
	/* read: each line starts with its line number in the file, right-
	 * aligned in 6 columns, and a tab, as `cat -n` prints it; max_bytes
	 * counts the numbers too. */
	int line_numbers;
	int recursive; /* delete: a directory with everything in it */
	int overwrite; /* move: replace what is at the destination */
	const hutch_fs_words *words; /* NULL: the CLI's words */
} hutch_fs_options;

#define HUTCH_FS_OPTIONS_INIT                                              \
	{                                                                  \
		HUTCH_FS_OPTIONS_VERSION, 0, 0, 0, 0, NULL, 0, 0, 0, 0, 0, \
			NULL, 0, 0, 0, NULL                                \
	}

typedef enum {
	HUTCH_FS_FILE = 0,
	HUTCH_FS_DIR,
	HUTCH_FS_SYMLINK,
	HUTCH_FS_OTHER,
} hutch_fs_type;

/* The type's word, as find and ls print it and their JSON carries it:
 * "file", "dir", "symlink" or "other" (a static string). */
const char *hutch_fs_type_name(hutch_fs_type type);

/* One line of a list result (grep, find, ls).  Every pointer is borrowed
 * from the result. */
typedef struct {
	const char *path;   /* relative to /workspace */
	const char *name;   /* ls: the entry's name; else NULL */
	hutch_fs_type type; /* find, ls */
	uint64_t size;	    /* ls */
	const char *target; /* ls: a symlink's target; else NULL */
	uint64_t line;	    /* grep: 1-based line number; else 0 */
	const char *text;   /* grep: the matching line (capped); else NULL */
} hutch_fs_entry;

typedef struct hutch_fs_result hutch_fs_result;

/*
 * The tools.  Each returns 0 with `*out` set (the caller frees it with
 * hutch_fs_result_free), or a negative hutch_errcode with `*out` untouched:
 *   HUTCH_EESCAPE     the path resolves outside /workspace
 *   HUTCH_ENOTFOUND   no such file or directory
 *   HUTCH_EINVALID    bad argument, binary file (read, edit), a directory
 *                     where a file is needed, bad regex or glob
 *   HUTCH_ENOMATCH    edit: the old text is not there; hutch_error_detail()
 *                     shows the closest region with line numbers
 *   HUTCH_EAMBIGUOUS  edit: more than one match without `all`; the message
 *                     lists the lines
 *   HUTCH_ETOOBIG     text over HUTCH_FS_MAX_TEXT, file too large to edit
 *   HUTCH_ECONFLICT   write, edit: another writer of the file held its
 *                     lock too long, or (edit) changed it between the read
 *                     and the replace; nothing was written.  delete: a
 *                     directory that is not empty, without `recursive`.
 *                     move: the destination exists, without `overwrite`,
 *                     or is a directory that is not empty
 *   HUTCH_ETIMEOUT, HUTCH_ECANCELLED, or an engine error.
 * `opts` may be NULL.
 */

/* Lines [offset, offset + limit) of a text file, with the file's total line
 * count.  Binary files (a NUL byte early on) are refused.  With
 * opts->line_numbers each line carries its number in the file. */
int hutch_fs_read(hutch_fs_result **out, hutch_session *session,
		  const char *path, const hutch_fs_options *opts,
		  hutch_error **err);

/* Replace the file with `data` atomically, creating parent directories; an
 * existing file keeps its mode.  Waits for an edit of the file under way
 * (up to 15 s, then HUTCH_ECONFLICT). */
int hutch_fs_write(hutch_fs_result **out, hutch_session *session,
		   const char *path, const char *data, size_t len,
		   const hutch_fs_options *opts, hutch_error **err);

/*
 * Replace `old_text` with `new_text`.  An exact match is tried first and must
 * be unique unless opts->all; then a match that ignores trailing whitespace
 * and line endings, then one that also ignores indentation (the new text is
 * re-indented to the file's).  Everything else in the file stays byte for
 * byte; in a CRLF file the new text gets CRLF line endings.
 * Edits and writes of one file at once run one after the other, each on
 * what the one before wrote (they wait up to 15 s for each other); an edit
 * that finds the file changed by something else between its read and its
 * replace edits it again, and after a few times gives HUTCH_ECONFLICT.
 * Either way a 0 means the change is in the file.
 */
int hutch_fs_edit(hutch_fs_result **out, hutch_session *session,
		  const char *path, const char *old_text, size_t old_len,
		  const char *new_text, size_t new_len,
		  const hutch_fs_options *opts, hutch_error **err);

/* Lines matching a PCRE2 regular expression (Perl-compatible, as ripgrep:
 * \d \w \s \b (?i), lazy quantifiers), in `path` (a file or a directory
 * searched recursively; NULL: the workspace).  Binary files and .git
 * directories are skipped; symlinks are not followed.  A bad pattern, or
 * one that backtracks past the agent's limits on some line, is
 * HUTCH_EINVALID. */
int hutch_fs_grep(hutch_fs_result **out, hutch_session *session,
		  const char *pattern, const char *path,
		  const hutch_fs_options *opts, hutch_error **err);

/* Paths under `path` (NULL: the workspace) matching `glob`: "*.c" matches
 * names, "src/x.c" or "src/ ** /x.c" (without spaces) relative paths. */
int hutch_fs_find(hutch_fs_result **out, hutch_session *session,
		  const char *glob, const char *path,
		  const hutch_fs_options *opts, hutch_error **err);

/* The entries of a directory (NULL: the workspace), sorted by name. */
int hutch_fs_ls(hutch_fs_result **out, hutch_session *session, const char *path,
		const hutch_fs_options *opts, hutch_error **err);

/*
 * Delete the file, symlink or empty directory at `path`; with
 * opts->recursive also a directory and everything in it (symlinks are
 * removed, never followed; the walk stays on the workspace's filesystem
 * and goes at most 128 levels down, and a failure part way leaves what
 * was not reached, the message says where it stopped).  The last
 * component of `path` is never followed: a symlink there is removed
 * itself.  The workspace itself is never deleted (HUTCH_EINVALID).
 */
int hutch_fs_delete(hutch_fs_result **out, hutch_session *session,
		    const char *path, const hutch_fs_options *opts,
		    hutch_error **err);

/*
 * Rename `from` to `to` (both under the workspace), as rename(2) does:
 * `to` is the new name, not a directory to move into.  Missing parent
 * directories of `to` are made.  What is at `to` is left alone
 * (HUTCH_ECONFLICT) unless opts->overwrite, then replaced atomically (a
 * directory only by a directory, and only when it is empty).  Neither
 * last component is followed: a symlink moves as a link, and one at
 * `to` is replaced, not written through.  The workspace itself is never
 * moved nor replaced.
 */
int hutch_fs_move(hutch_fs_result **out, hutch_session *session,
		  const char *from, const char *to,
		  const hutch_fs_options *opts, hutch_error **err);

/* The whole result as one JSON object (NUL-terminated, borrowed): what the
 * CLI's --json prints and the MCP server returns. */
const char *hutch_fs_result_json(const hutch_fs_result *res);

/* 1 when a cap cut the result short (lines, bytes or entries). */
int hutch_fs_result_truncated(const hutch_fs_result *res);

/* The workspace-relative path the tool worked on (read, write, edit, ls,
 * delete; move: the destination), or NULL.  Borrowed. */
const char *hutch_fs_result_path(const hutch_fs_result *res);

/* read: the text (borrowed; NUL-terminated) and its length. */
const char *hutch_fs_result_content(const hutch_fs_result *res, size_t *len);

/* read: first line returned, lines returned, lines in the file, and the
 * offset to ask for next (0 when nothing is left).  Any pointer may be
 * NULL. */
void hutch_fs_result_lines(const hutch_fs_result *res, uint64_t *offset,
			   uint64_t *lines, uint64_t *total_lines,
			   uint64_t *next_offset);

/* write: bytes written, 1 when the file is new. edit: number of
 * replacements; "exact", "whitespace" or "indentation" (borrowed).
 * Any pointer may be NULL. */
void hutch_fs_result_write(const hutch_fs_result *res, uint64_t *bytes,
			   int *created);
void hutch_fs_result_edit(const hutch_fs_result *res, uint64_t *replacements,
			  const char **match);

/* delete: the entries removed (1 but for a recursive delete) and the
 * type of what was at the path.  move: the source's workspace-relative
 * path (borrowed), its type, and 1 when something at the destination was
 * replaced.  Any pointer may be NULL. */
void hutch_fs_result_delete(const hutch_fs_result *res, uint64_t *removed,
			    hutch_fs_type *type);
void hutch_fs_result_move(const hutch_fs_result *res, const char **from,
			  hutch_fs_type *type, int *replaced);

/* grep, find, ls: the entries.  `*entry` is filled with borrowed pointers;
 * returns 0, or HUTCH_EINVALID when `i` is out of range. */
size_t hutch_fs_result_count(const hutch_fs_result *res);
int hutch_fs_result_entry(hutch_fs_entry *entry, const hutch_fs_result *res,
			  size_t i);

/* Accepts NULL. */
void hutch_fs_result_free(hutch_fs_result *res);

#ifdef __cplusplus
}
#endif
#endif
