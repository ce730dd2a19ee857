/*
 * fs_answer.h - the agent's answer to a file tool, parsed in bounded memory
 *
 * The agent prints one JSON object.  As a json-c tree, a find or ls answer
 * costs about 1 KiB per entry (an object with its hash table, a string per
 * member): 120 MB of host memory for the 4 MB answer of a 100,000-entry
 * find.  Here the entries ("entries" of find and ls, "matches" of grep) go
 * into a table of fixed-size records and one arena of strings, parsed one
 * entry at a time; the other members (a few scalars, a file's content as
 * one string) go through json-c, at most HUTCH__FS_MAX_NODES values.  What
 * the parse keeps is a few times the answer's size whatever the answer
 * holds, and the answer itself is capped (an impostor agent included: the
 * sandbox can replace the agent's file on some engines).
 *
 * Pure apart from json-c: bytes in, a result out.
 */
#ifndef HUTCH_FS_ANSWER_H
#define HUTCH_FS_ANSWER_H

#include <stddef.h>
#include <stdint.h>
#include <json-c/json.h>

#include "buf.h"
#include "redact.h"

/* Values outside the entries (json-c's share of the answer). */
#define HUTCH__FS_MAX_NODES 4096u
/* Nesting, anywhere in the answer. */
#define HUTCH__FS_MAX_DEPTH 8

struct hutch__fs_entry {
	/* Offsets + 1 into the arena of a length-prefixed string; 0 when
	 * the entry has no such member. */
	uint32_t path, name, type, target, text;
	uint32_t has; /* HUTCH__FS_HAS_SIZE, HUTCH__FS_HAS_LINE */
	uint64_t size, line;
};

enum {
	HUTCH__FS_HAS_SIZE = 1,
	HUTCH__FS_HAS_LINE = 2
};

struct hutch_fs_result {
	json_object *doc; /* the members other than the entries */
	struct hutch__fs_entry *entries;
	size_t count, alloc;
	int has_entries;   /* the answer had an entry list */
	char *entries_key; /* "entries" or "matches" */
	size_t entries_at; /* members of doc before it */
	hutch_buf arena;
	char *json; /* the whole result, as the CLI's --json shows it */
	size_t json_len;
};

/*
 * Parse `len` bytes of the agent's answer.  Every string in it is redacted
 * with `set` (may be NULL) as it is parsed.  0 with *out set (free with
 * hutch__fs_answer_free), -1 when the answer is not an object of the
 * expected shape or passes a limit (`*why` says what, static), -2 out of
 * memory.
 */
int hutch__fs_answer_parse(struct hutch_fs_result **out, const char *data,
			   size_t len, const hutch__secrets *set,
			   const char **why);

/* An entry's string member (NUL-terminated, borrowed) and its length (may
 * be NULL), or NULL when absent. */
const char *hutch__fs_answer_str(const struct hutch_fs_result *r, uint32_t ref,
				 size_t *len);

/* Accepts NULL. */
void hutch__fs_answer_free(struct hutch_fs_result *r);

#endif
