/*
 * editmatch.h - find the text an edit replaces, and build the new file
 *
 * Pure: buffers in, buffers out, no I/O, so the unit tests drive it
 * directly.  The file tools' "edit" is a model saying "replace OLD by NEW";
 * models copy OLD from what they read, so it may differ from the file in
 * line endings, trailing blanks or indentation.  Matching therefore tries,
 * in order, and stops at the first level that finds anything:
 *
 *   exact        OLD's bytes occur in the file;
 *   whitespace   line by line, trailing blanks (and the "\r" of "\r\n")
 *                ignored on both sides;
 *   indentation  leading blanks ignored too; NEW is then re-indented.
 *
 * Matches are counted left to right without overlap, and the replacement
 * is a single pass over the ORIGINAL file, so a NEW that contains OLD is
 * never matched again.  Everything outside the matched regions is kept
 * byte for byte.  Bytes are compared as bytes: UTF-8 needs nothing special.
 */
#ifndef HUTCH_AGENT_EDITMATCH_H
#define HUTCH_AGENT_EDITMATCH_H

#include <stdbool.h>
#include <stddef.h>

#define EM_MAX_LINES 100       /* line numbers reported */
#define EM_OUT_MAX (64u << 20) /* largest file an edit may produce */
#define EM_CLOSEST_MAX 10      /* lines shown for a near miss */

/* Return codes of em_edit(). */
#define EM_OK 0
#define EM_NOMATCH (-1)	  /* res->closest may say where it almost was */
#define EM_AMBIGUOUS (-2) /* res->count matches, lines in res->lines */
#define EM_INVALID (-3)	  /* empty OLD, or OLD == NEW */
#define EM_TOOBIG (-4)	  /* the result would pass EM_OUT_MAX */
#define EM_NOMEM (-5)

enum em_match {
	EM_MATCH_EXACT,
	EM_MATCH_WHITESPACE,
	EM_MATCH_INDENTATION,
};

struct em_result {
	enum em_match match;
	size_t count;		    /* matches replaced, or found (ambiguous) */
	size_t nlines;		    /* entries used in lines[] */
	size_t lines[EM_MAX_LINES]; /* 1-based start lines in the original */
	char *out;		    /* EM_OK: the new file, owned, malloc() */
	size_t out_len;
	size_t closest_line; /* EM_NOMATCH: 1-based, 0 = none */
	char *closest;	     /* "%6d\t%s" lines joined by "\n", owned */
};

/* "exact", "whitespace" or "indentation". */
const char *em_match_name(enum em_match m);

/*
 * Replace @old by @new in @buf.  Without @all, the match must be unique
 * (EM_AMBIGUOUS otherwise, with every match's line); with @all every match
 * of the first level that finds one is replaced.  When the matched region
 * ends its lines with "\r\n", the "\n"s of @new become "\r\n".
 * @res is always initialised; release it with em_result_free().
 */
int em_edit(const char *buf, size_t len, const char *old, size_t olen,
	    const char *new_text, size_t nlen, bool all, struct em_result *res);

/* Frees what @res owns; @res may be NULL. */
void em_result_free(struct em_result *res);

#endif /* HUTCH_AGENT_EDITMATCH_H */
