/*
 * fs_answer.c - the agent's answer to a file tool, parsed in bounded memory
 * (see fs_answer.h)
 */
#include <stdlib.h>
#include <string.h>

#include "engine_internal.h"
#include "fs_answer.h"
#include "utf8.h"

/* --- secrets ----------------------------------------------------------------- */

enum {
	CUT_NO,
	CUT_IF_ELLIPSIS,
	CUT_YES
};

/* One string of the answer, redacted in place.  Texts the agent cut short
 * (a grep line over its cap, which then ends in "...", a read over
 * max_bytes) may end in the start of a secret: that is masked too. */
static int redact_string(json_object *v, const hutch__secrets *set, int mode)
{
	const char *str = json_object_get_string(v);
	size_t len = (size_t)json_object_get_string_len(v), n, keep = 0;
	int cut = mode == CUT_YES, rc;
	char *clean;

	if (mode == CUT_IF_ELLIPSIS && len >= 3 &&
	    memcmp(str + len - 3, "...", 3) == 0) {
		keep = 3;
		cut = 1;
	}
	clean = hutch__redact_buffer(set, str, len - keep, cut, &n);
	if (!clean)
		return -1;
	if (n != len - keep || memcmp(clean, str, n) != 0) {
		if (keep) {
			char *more = realloc(clean, n + keep + 1);

			if (!more) {
				free(clean);
				return -1;
			}
			clean = more;
			memcpy(clean + n, "...", keep + 1);
			n += keep;
		}
		rc = json_object_set_string_len(v, clean, (int)n) ? 0 : -1;
	} else {
		rc = 0;
	}
	free(clean);
	return rc;
}

/* Every string in a part of the answer: contents, grep lines, paths,
 * names, symlink targets, messages. */
static int redact_json(json_object *v, const hutch__secrets *set, int truncated,
		       const char *key, int depth)
{
	if (depth > 16)
		return 0;
	switch (json_object_get_type(v)) {
	case json_type_string:
		if (key && strcmp(key, "text") == 0)
			return redact_string(v, set, CUT_IF_ELLIPSIS);
		if (key && truncated && strcmp(key, "content") == 0)
			return redact_string(v, set, CUT_YES);
		return redact_string(v, set, CUT_NO);
	case json_type_array:
		for (size_t i = 0; i < json_object_array_length(v); i++)
			if (redact_json(json_object_array_get_idx(v, i), set,
					truncated, key, depth + 1) < 0)
				return -1;
		return 0;
	case json_type_object: {
		json_object_object_foreach(v, k, child)
		{
			if (redact_json(child, set, truncated, k, depth + 1) <
			    0)
				return -1;
		}
		return 0;
	}
	default:
		return 0;
	}
}

/* The same for the keys of every object, which json-c cannot rename in
 * place: an impostor agent could send a file's text as a key.  Returns a
 * new reference (the same value when nothing needed a change), NULL out of
 * memory. */
static json_object *redact_keys(json_object *v, const hutch__secrets *set,
				int depth)
{
	json_object *out;

	if (depth > 16)
		return json_object_get(v);
	switch (json_object_get_type(v)) {
	case json_type_array:
		for (size_t i = 0; i < json_object_array_length(v); i++) {
			json_object *child =
				redact_keys(json_object_array_get_idx(v, i),
					    set, depth + 1);

			/* put_idx releases the old element, the same one
			 * when nothing changed (redact_keys took a
			 * reference). */
			if (!child ||
			    json_object_array_put_idx(v, i, child) < 0) {
				json_object_put(child);
				return NULL;
			}
		}
		return json_object_get(v);
	case json_type_object:
		out = json_object_new_object();
		if (!out)
			return NULL;
		json_object_object_foreach(v, k, child)
		{
			char *key = hutch__redact_buffer(set, k, strlen(k), 0,
							 NULL);
			json_object *c = redact_keys(child, set, depth + 1);

			if (!key || !c ||
			    json_object_object_add(out, key, c) < 0) {
				free(key);
				json_object_put(c);
				json_object_put(out);
				return NULL;
			}
			free(key);
		}
		return out;
	default:
		return json_object_get(v);
	}
}

/* --- scanning ------------------------------------------------------------------ */

/* The scanner only finds where values end; json-c parses (and so checks)
 * every byte of them afterwards. */
struct cur {
	const char *p, *end;
};

static void ws(struct cur *c)
{
	while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' ||
				 *c->p == '\n' || *c->p == '\r'))
		c->p++;
}

static int eat(struct cur *c, char ch)
{
	ws(c);
	if (c->p < c->end && *c->p == ch) {
		c->p++;
		return 1;
	}
	return 0;
}

/* At a '"': past the closing one. */
static int skip_string(struct cur *c)
{
	for (c->p++; c->p < c->end; c->p++) {
		if (*c->p == '\\') {
			c->p++;
		} else if (*c->p == '"') {
			c->p++;
			return 0;
		}
	}
	return -1;
}

/* Past one value, at most `max_depth` containers deep; `*nodes` counts
 * the values met (containers, strings, and one per comma). */
static int skip_value(struct cur *c, int max_depth, size_t *nodes)
{
	int depth = 0;

	ws(c);
	if (c->p >= c->end)
		return -1;
	if (*c->p != '{' && *c->p != '[' && *c->p != '"') {
		const char *s = c->p;

		while (c->p < c->end && *c->p &&
		       strchr("0123456789+-.eEtruefalsn", *c->p))
			c->p++;
		(*nodes)++;
		return c->p > s ? 0 : -1;
	}
	while (c->p < c->end) {
		switch (*c->p) {
		case '"':
			if (skip_string(c) < 0)
				return -1;
			(*nodes)++;
			if (depth == 0)
				return 0;
			continue;
		case '{':
		case '[':
			if (++depth > max_depth)
				return -1;
			(*nodes)++;
			break;
		case '}':
		case ']':
			c->p++;
			if (--depth == 0)
				return 0;
			if (depth < 0)
				return -1;
			continue;
		case ',':
			(*nodes)++;
			break;
		default:
			break;
		}
		c->p++;
	}
	return -1;
}

/* --- entries ----------------------------------------------------------------- */

/* A string into the arena: 4 bytes of length, the bytes, a NUL.  Returns
 * its reference (offset + 1), 0 out of memory or past the arena's cap. */
static uint32_t arena_add(struct hutch_fs_result *r, const char *s, size_t n)
{
	uint32_t len = (uint32_t)n, ref = (uint32_t)r->arena.len + 1;

	if (n > UINT32_MAX - 8 ||
	    hutch__buf_add(&r->arena, &len, sizeof(len)) < 0 ||
	    hutch__buf_add(&r->arena, s, n) < 0 ||
	    hutch__buf_add(&r->arena, "", 1) < 0)
		return 0;
	return ref;
}

const char *hutch__fs_answer_str(const struct hutch_fs_result *r, uint32_t ref,
				 size_t *len)
{
	uint32_t n;

	if (!r || !ref)
		return NULL;
	memcpy(&n, r->arena.data + ref - 1, sizeof(n));
	if (len)
		*len = n;
	return r->arena.data + ref - 1 + sizeof(n);
}

/* One entry, parsed alone: a flat object whose "path" is a string. */
static int add_entry(struct hutch_fs_result *r, const char *s, size_t n,
		     const hutch__secrets *set, const char **why)
{
	static const char *const keys[] = { "path", "name", "type", "target",
					    "text" };
	struct hutch__fs_entry e = { 0 };
	json_object *obj = hutch__json_parse(s, n), *v;
	int rc = -1;

	if (!obj || !json_object_is_type(obj, json_type_object) ||
	    !json_object_object_get_ex(obj, "path", &v) ||
	    !json_object_is_type(v, json_type_string)) {
		*why = "an entry is not an object with a path";
		goto out;
	}
	if (set && redact_json(obj, set, 0, NULL, 0) < 0) {
		rc = -2;
		goto out;
	}
	for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
		uint32_t ref = 0;

		if (json_object_object_get_ex(obj, keys[k], &v) &&
		    json_object_is_type(v, json_type_string)) {
			ref = arena_add(r, json_object_get_string(v),
					(size_t)json_object_get_string_len(v));
			if (!ref) {
				rc = -2;
				goto out;
			}
		}
		switch (k) {
		case 0:
			e.path = ref;
			break;
		case 1:
			e.name = ref;
			break;
		case 2:
			e.type = ref;
			break;
		case 3:
			e.target = ref;
			break;
		default:
			e.text = ref;
			break;
		}
	}
	if (json_object_object_get_ex(obj, "size", &v) &&
	    json_object_is_type(v, json_type_int)) {
		e.has |= HUTCH__FS_HAS_SIZE;
		e.size = json_object_get_int64(v) < 0 ?
				 0 :
				 (uint64_t)json_object_get_int64(v);
	}
	if (json_object_object_get_ex(obj, "line", &v) &&
	    json_object_is_type(v, json_type_int)) {
		e.has |= HUTCH__FS_HAS_LINE;
		e.line = json_object_get_int64(v) < 0 ?
				 0 :
				 (uint64_t)json_object_get_int64(v);
	}
	if (r->count == r->alloc) {
		size_t alloc = r->alloc ? r->alloc * 2 : 64;
		struct hutch__fs_entry *more =
			realloc(r->entries, alloc * sizeof(*more));

		if (!more) {
			rc = -2;
			goto out;
		}
		r->entries = more;
		r->alloc = alloc;
	}
	r->entries[r->count++] = e;
	rc = 0;
out:
	json_object_put(obj);
	return rc;
}

/* At a '[': every entry of the list. */
static int parse_entries(struct hutch_fs_result *r, struct cur *c,
			 const hutch__secrets *set, const char **why)
{
	c->p++;
	if (eat(c, ']'))
		return 0;
	for (;;) {
		const char *s;
		size_t nodes = 0;
		int rc;

		ws(c);
		s = c->p;
		/* Flat objects only: one level of nesting. */
		if (c->p >= c->end || *c->p != '{' ||
		    skip_value(c, 1, &nodes) < 0) {
			*why = "an entry is not a flat object";
			return -1;
		}
		if ((rc = add_entry(r, s, (size_t)(c->p - s), set, why)) < 0)
			return rc;
		if (eat(c, ','))
			continue;
		if (eat(c, ']'))
			return 0;
		*why = "the entry list is not closed";
		return -1;
	}
}

/* --- the result as JSON -------------------------------------------------------- */

/* A JSON string, as json-c writes one (no "\/"), and valid UTF-8 whatever
 * the bytes (U+FFFD for a bad one). */
static int json_str(hutch_buf *b, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, run;

	if (hutch__buf_add(b, "\"", 1) < 0)
		return -1;
	while (i < n) {
		size_t k = hutch__utf8_seq_len(u + i, n - i);
		char esc[8];
		const char *out = esc;
		size_t olen = 2;

		if (k > 1 ||
		    (k == 1 && u[i] >= 0x20 && u[i] != '"' && u[i] != '\\')) {
			/* A run of bytes that go as they are. */
			for (run = i; run < n; run += k) {
				k = hutch__utf8_seq_len(u + run, n - run);
				if (k == 0 || (k == 1 && (u[run] < 0x20 ||
							  u[run] == '"' ||
							  u[run] == '\\')))
					break;
			}
			if (hutch__buf_add(b, s + i, run - i) < 0)
				return -1;
			i = run;
			continue;
		}
		esc[0] = '\\';
		if (k == 0) {
			out = "\xef\xbf\xbd";
			olen = 3;
		} else if (u[i] == '"' || u[i] == '\\') {
			esc[1] = (char)u[i];
		} else if (u[i] == '\n') {
			esc[1] = 'n';
		} else if (u[i] == '\t') {
			esc[1] = 't';
		} else if (u[i] == '\r') {
			esc[1] = 'r';
		} else if (u[i] == '\b') {
			esc[1] = 'b';
		} else if (u[i] == '\f') {
			esc[1] = 'f';
		} else {
			memcpy(esc, "\\u00", 4);
			esc[4] = hex[u[i] >> 4];
			esc[5] = hex[u[i] & 15];
			olen = 6;
		}
		if (hutch__buf_add(b, out, olen) < 0)
			return -1;
		i++;
	}
	return hutch__buf_add(b, "\"", 1);
}

static int member_str(hutch_buf *b, const struct hutch_fs_result *r,
		      const char *key, uint32_t ref)
{
	size_t n;
	const char *s = hutch__fs_answer_str(r, ref, &n);

	if (!s)
		return 0;
	return hutch__buf_printf(b, ",\"%s\":", key) < 0 ||
			       json_str(b, s, n) < 0 ?
		       -1 :
		       0;
}

static int entries_json(hutch_buf *b, const struct hutch_fs_result *r)
{
	if (json_str(b, r->entries_key, strlen(r->entries_key)) < 0 ||
	    hutch__buf_add(b, ":[", 2) < 0)
		return -1;
	for (size_t i = 0; i < r->count; i++) {
		const struct hutch__fs_entry *e = &r->entries[i];
		size_t n = 0;
		const char *path = hutch__fs_answer_str(r, e->path, &n);

		/* The agent's order of members: path, name, type, size,
		 * target for ls; path, type for find; path, line, text for
		 * grep. */
		if (hutch__buf_add(b, i ? ",{\"path\":" : "{\"path\":",
				   i ? 9 : 8) < 0 ||
		    json_str(b, path, n) < 0 ||
		    member_str(b, r, "name", e->name) < 0 ||
		    member_str(b, r, "type", e->type) < 0 ||
		    (e->has & HUTCH__FS_HAS_SIZE &&
		     hutch__buf_printf(b, ",\"size\":%llu",
				       (unsigned long long)e->size) < 0) ||
		    member_str(b, r, "target", e->target) < 0 ||
		    (e->has & HUTCH__FS_HAS_LINE &&
		     hutch__buf_printf(b, ",\"line\":%llu",
				       (unsigned long long)e->line) < 0) ||
		    member_str(b, r, "text", e->text) < 0 ||
		    hutch__buf_add(b, "}", 1) < 0)
			return -1;
	}
	return hutch__buf_add(b, "]", 1);
}

static int to_json(struct hutch_fs_result *r, size_t cap)
{
	hutch_buf b = HUTCH_BUF_INIT(cap);
	size_t i = 0;
	int first = 1;

	if (hutch__buf_add(&b, "{", 1) < 0)
		goto fail;
	json_object_object_foreach(r->doc, key, v)
	{
		if (r->has_entries && i == r->entries_at) {
			if ((!first && hutch__buf_add(&b, ",", 1) < 0) ||
			    entries_json(&b, r) < 0)
				goto fail;
			first = 0;
		}
		i++;
		if ((!first && hutch__buf_add(&b, ",", 1) < 0) ||
		    json_str(&b, key, strlen(key)) < 0 ||
		    hutch__buf_add(&b, ":", 1) < 0 ||
		    hutch__buf_addstr(
			    &b,
			    json_object_to_json_string_ext(
				    v,
				    JSON_C_TO_STRING_PLAIN |
					    JSON_C_TO_STRING_NOSLASHESCAPE)) <
			    0)
			goto fail;
		first = 0;
	}
	if (r->has_entries && i == r->entries_at &&
	    ((!first && hutch__buf_add(&b, ",", 1) < 0) ||
	     entries_json(&b, r) < 0))
		goto fail;
	if (hutch__buf_add(&b, "}", 1) < 0)
		goto fail;
	r->json = hutch__buf_detach(&b, &r->json_len);
	if (r->json &&
	    hutch__utf8_valid_len(r->json, r->json_len) != r->json_len) {
		/* A member json-c wrote as it got it: bytes of 0x80 and up are
		 * only inside strings, so repairing keeps the JSON's shape. */
		char *fixed =
			hutch__utf8_repair(r->json, r->json_len, &r->json_len);

		free(r->json);
		r->json = fixed;
	}
	return r->json ? 0 : -1;
fail:
	hutch__buf_free(&b);
	return -1;
}

/* --- the answer ---------------------------------------------------------------- */

/* The members of the answer's object, from after its '{' through its
 * '}': the first entry list goes into the records, the other members are
 * copied into `rest`.  0, -1 (*why says why) or -2 (out of memory). */
static int parse_members(struct hutch_fs_result *r, struct cur *c,
			 hutch_buf *rest, const hutch__secrets *set,
			 const char **why)
{
	size_t nodes = 0, members = 0;
	int rc;

	if (eat(c, '}'))
		return 0;
	for (;;) {
		const char *k, *v;
		size_t klen;

		ws(c);
		k = c->p;
		if (c->p >= c->end || *c->p != '"' || skip_string(c) < 0)
			return -1;
		klen = (size_t)(c->p - k);
		if (!eat(c, ':'))
			return -1;
		ws(c);
		v = c->p;
		if (!r->has_entries && c->p < c->end && *c->p == '[' &&
		    ((klen == 9 && memcmp(k, "\"entries\"", 9) == 0) ||
		     (klen == 9 && memcmp(k, "\"matches\"", 9) == 0))) {
			r->has_entries = 1;
			r->entries_at = members;
			r->entries_key = strndup(k + 1, 7);
			if (!r->entries_key)
				return -2;
			if ((rc = parse_entries(r, c, set, why)) < 0)
				return rc;
		} else {
			if (skip_value(c, HUTCH__FS_MAX_DEPTH, &nodes) < 0)
				return -1;
			if (nodes > HUTCH__FS_MAX_NODES) {
				*why = "the answer holds too many values";
				return -1;
			}
			if ((members && hutch__buf_add(rest, ",", 1) < 0) ||
			    hutch__buf_add(rest, k, klen) < 0 ||
			    hutch__buf_add(rest, ":", 1) < 0 ||
			    hutch__buf_add(rest, v, (size_t)(c->p - v)) < 0)
				return -2;
			members++;
		}
		if (eat(c, ','))
			continue;
		if (eat(c, '}'))
			return 0;
		return -1;
	}
}

static int parse(struct hutch_fs_result *r, const char *data, size_t len,
		 const hutch__secrets *set, const char **why)
{
	struct cur c = { data, data + len };
	hutch_buf rest = HUTCH_BUF_INIT(len + 2);
	json_object *t = NULL;
	int rc = -1;

	*why = "the answer is not a JSON object";
	if (!eat(&c, '{'))
		goto out;
	if (hutch__buf_add(&rest, "{", 1) < 0)
		goto oom;
	if ((rc = parse_members(r, &c, &rest, set, why)) < 0)
		goto out;
	rc = -1;
	ws(&c);
	if (c.p != c.end || hutch__buf_add(&rest, "}", 1) < 0)
		goto out;
	r->doc = hutch__json_parse(rest.data, rest.len);
	if (!r->doc || !json_object_is_type(r->doc, json_type_object))
		goto out;
	/* An entry list goes through the records only: a second one, or
	 * one spelt with escapes or not as an array, would show entries the
	 * records do not hold. */
	if (json_object_object_get_ex(r->doc, "entries", NULL) ||
	    json_object_object_get_ex(r->doc, "matches", NULL)) {
		*why = "the answer has more than one entry list";
		goto out;
	}
	/* "truncated" says whether a read's content was cut short. */
	if (set &&
	    redact_json(r->doc, set,
			json_object_object_get_ex(r->doc, "truncated", &t) &&
				json_object_get_boolean(t),
			NULL, 0) < 0)
		goto oom;
	if (set) {
		json_object *clean = redact_keys(r->doc, set, 0);

		if (!clean)
			goto oom;
		json_object_put(r->doc);
		r->doc = clean;
	}
	/* The JSON is at most the answer re-encoded: each byte of a string
	 * grows to at most six (\u00XX), each entry by its keys. */
	if (to_json(r, 6 * len + 64 * r->count + 64) < 0)
		goto oom;
	rc = 0;
	goto out;
oom:
	rc = -2;
out:
	hutch__buf_free(&rest);
	return rc;
}

int hutch__fs_answer_parse(struct hutch_fs_result **out, const char *data,
			   size_t len, const hutch__secrets *set,
			   const char **why)
{
	struct hutch_fs_result *r = calloc(1, sizeof(*r));
	int rc;

	if (!r)
		return -2;
	/* Strings are never longer than the answer, but redaction can make
	 * one 2.5 times longer (4 bytes become "[REDACTED]"). */
	r->arena = (hutch_buf)HUTCH_BUF_INIT(3 * len + 64);
	rc = parse(r, data, len, set, why);
	if (rc < 0) {
		hutch__fs_answer_free(r);
		return rc;
	}
	*out = r;
	return 0;
}

void hutch__fs_answer_free(struct hutch_fs_result *r)
{
	if (!r)
		return;
	json_object_put(r->doc);
	free(r->entries);
	free(r->entries_key);
	hutch__buf_free(&r->arena);
	free(r->json);
	free(r);
}
