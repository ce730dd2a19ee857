/*
 * glob.h - shell-style path patterns, shared by the library and the agent
 *
 * Used for sync-in's --exclude (on the host) and for the file tools' find
 * and grep --include (inside the container), so that one pattern means the
 * same thing on both sides.
 *
 * `*`, `?` and `[...]` (with `!` or `^` negation and ranges) match within
 * one path component; `**` as a whole component matches any number of
 * components (including none).  A backslash escapes the next character.
 * A pattern without '/' matches the last component of the path ("*.o",
 * "node_modules"); a pattern with '/' matches the whole path relative to
 * the root being walked ("build/out", "src/x.c"; a component that is
 * exactly ** spans any depth; a leading "/" anchors at the root and is
 * otherwise ignored).  Trailing slashes are ignored ("build/" is "build").
 * A leading '.' needs no explicit match ("*" matches ".env").
 * Matching is bytewise, case-sensitive unless `icase` is set (ASCII only),
 * never locale-dependent, and costs at most O(pattern * path): no
 * exponential backtracking, no allocation.
 */
#ifndef HUTCH_SHARED_GLOB_H
#define HUTCH_SHARED_GLOB_H

#include <stdbool.h>

/* `path` is relative, '/'-separated, without a leading "./". */
bool hutch__glob_match(const char *pattern, const char *path, bool icase);

/* true when the pattern is well formed (no unterminated '[', no trailing
 * backslash, not empty). */
bool hutch__glob_valid(const char *pattern);

#endif
