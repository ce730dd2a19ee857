/*
 * redact.c - streaming secret redaction (see redact.h)
 *
 * The automaton is a trie of every pattern with Aho-Corasick failure links;
 * each state knows the longest pattern that ends there (its own or one
 * reached through its failure chain), which is all masking needs: every
 * occurrence ending at a position is inside the longest one ending there.
 *
 * A redactor keeps the undecided bytes in a window.  A byte can be decided
 * once it is `hold - 1` bytes behind the newest one (`hold` is the longest
 * pattern): any occurrence that could still cover it would have to be
 * longer.  Decided
 * bytes leave as they are, or as one "[REDACTED]" per masked run.
 */
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "buf.h"
#include "redact.h"
#include "utf8.h"

struct node {
	uint32_t fail;	  /* failure link */
	uint32_t child;	  /* first child, 0 for none (0 is the root) */
	uint32_t sibling; /* next child of the same parent */
	uint32_t out;	  /* longest pattern ending here, 0 for none */
	uint32_t depth;	  /* length of the prefix this node stands for */
	unsigned char byte;
};

struct hutch__secrets {
	struct node *nodes;
	size_t n, alloc;
	uint32_t root_next[256]; /* the root's children, dense: most bytes
				    of ordinary output stop there */
	size_t max_len;
	unsigned int refs;
};

/* --- the automaton ---------------------------------------------------------- */

static uint32_t child_of(const hutch__secrets *set, uint32_t node,
			 unsigned char c)
{
	if (node == 0)
		return set->root_next[c];
	for (uint32_t k = set->nodes[node].child; k; k = set->nodes[k].sibling)
		if (set->nodes[k].byte == c)
			return k;
	return 0;
}

/* One byte through the automaton: amortized constant time, since each
 * failure link taken shortens the match at least by one. */
static uint32_t step(const hutch__secrets *set, uint32_t state, unsigned char c)
{
	uint32_t next;

	for (;;) {
		next = child_of(set, state, c);
		if (next || state == 0)
			return next;
		state = set->nodes[state].fail;
	}
}

static int add_pattern(hutch__secrets *set, const unsigned char *p, size_t len)
{
	uint32_t node = 0, next;

	for (size_t i = 0; i < len; i++) {
		next = child_of(set, node, p[i]);
		if (!next) {
			if (set->n == set->alloc) {
				size_t alloc = set->alloc * 2;
				struct node *nn = realloc(set->nodes,
							  alloc * sizeof(*nn));

				if (!nn)
					return -1;
				set->nodes = nn;
				set->alloc = alloc;
			}
			next = (uint32_t)set->n++;
			memset(&set->nodes[next], 0, sizeof(set->nodes[next]));
			set->nodes[next].byte = p[i];
			set->nodes[next].depth = (uint32_t)i + 1;
			if (node == 0) {
				set->root_next[p[i]] = next;
			} else {
				set->nodes[next].sibling =
					set->nodes[node].child;
				set->nodes[node].child = next;
			}
		}
		node = next;
	}
	if (set->nodes[node].out < len)
		set->nodes[node].out = (uint32_t)len;
	if (len > set->max_len)
		set->max_len = len;
	return 0;
}

/* Failure links, breadth first so a node's link is known before its
 * children's. */
static int link(hutch__secrets *set)
{
	uint32_t *queue = malloc(set->n * sizeof(*queue));
	size_t head = 0, tail = 0;

	if (!queue)
		return -1;
	for (int c = 0; c < 256; c++)
		if (set->root_next[c])
			queue[tail++] = set->root_next[c];
	while (head < tail) {
		uint32_t u = queue[head++];

		for (uint32_t v = set->nodes[u].child; v;
		     v = set->nodes[v].sibling) {
			uint32_t f = step(set, set->nodes[u].fail,
					  set->nodes[v].byte);

			set->nodes[v].fail = f;
			if (set->nodes[v].out < set->nodes[f].out)
				set->nodes[v].out = set->nodes[f].out;
			queue[tail++] = v;
		}
	}
	free(queue);
	return 0;
}

/* --- the patterns of one value ---------------------------------------------- */

/* --- percent-encodings --------------------------------------------------- */

enum {
	PCT_RFC3986, /* keeps ALPHA DIGIT - . _ ~ */
	PCT_URICOMP, /* encodeURIComponent: also ! ' ( ) * */
	PCT_PYQUOTE, /* Python's quote(): also / */
	PCT_FORM,    /* form encoding: as RFC 3986, space as '+' */
	PCT_ALL,     /* every byte */
};

static int pct_keeps(int style, unsigned char c)
{
	if (style == PCT_ALL)
		return 0;
	if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
	    (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' ||
	    c == '~')
		return 1;
	if (style == PCT_URICOMP)
		return c && strchr("!'()*", c) != NULL;
	if (style == PCT_PYQUOTE)
		return c == '/';
	return 0;
}

/* Into `out` (room for 3 * len); returns the length. */
static size_t pct(char *out, const unsigned char *v, size_t len, int style,
		  const char *digits)
{
	size_t o = 0;

	for (size_t i = 0; i < len; i++) {
		if (pct_keeps(style, v[i])) {
			out[o++] = (char)v[i];
		} else if (style == PCT_FORM && v[i] == ' ') {
			out[o++] = '+';
		} else {
			out[o++] = '%';
			out[o++] = digits[v[i] >> 4];
			out[o++] = digits[v[i] & 15];
		}
	}
	return o;
}

/* --- JSON string escapes -------------------------------------------------- */

enum {
	JSON_SLASH = 1, /* "/" as "\/" */
	JSON_ASCII = 2, /* non-ASCII as \uXXXX (surrogate pairs past U+FFFF) */
	JSON_HTML = 4,	/* <, >, & and U+2028/9 as \uXXXX (Go) */
	JSON_UPPER = 8, /* \u digits in upper case */
};

/* The code point of the UTF-8 sequence at v[0..n), n from
 * hutch__utf8_seq_len. */
static uint32_t code_point(const unsigned char *v, size_t n)
{
	static const unsigned char lead_mask[] = { 0, 0x7f, 0x1f, 0x0f, 0x07 };
	uint32_t cp = v[0] & lead_mask[n];

	for (size_t i = 1; i < n; i++)
		cp = cp << 6 | (v[i] & 0x3f);
	return cp;
}

static size_t put_u(char *out, uint32_t unit, const char *digits)
{
	out[0] = '\\';
	out[1] = 'u';
	out[2] = digits[unit >> 12 & 15];
	out[3] = digits[unit >> 8 & 15];
	out[4] = digits[unit >> 4 & 15];
	out[5] = digits[unit & 15];
	return 6;
}

/* Into `out` (room for 6 * len: a byte grows at most to one \u00XX, a
 * 4-byte sequence to a 12-byte surrogate pair); returns the length.  The
 * values are valid UTF-8 (hutch refuses others); a stray byte is escaped
 * as \u00XX, which no encoder writes, so it only makes a pattern that
 * never matches. */
static size_t json_escape(char *out, const unsigned char *v, size_t len,
			  int flags)
{
	const char *digits = flags & JSON_UPPER ? "0123456789ABCDEF" :
						  "0123456789abcdef";
	size_t o = 0, i = 0;

	while (i < len) {
		size_t n = hutch__utf8_seq_len(v + i, len - i);
		uint32_t cp = n ? code_point(v + i, n) : v[i];
		const char *shortf = NULL;

		if (n == 0)
			n = 1;
		switch (cp) {
		case '"':
			shortf = "\\\"";
			break;
		case '\\':
			shortf = "\\\\";
			break;
		case '\b':
			shortf = "\\b";
			break;
		case '\f':
			shortf = "\\f";
			break;
		case '\n':
			shortf = "\\n";
			break;
		case '\r':
			shortf = "\\r";
			break;
		case '\t':
			shortf = "\\t";
			break;
		case '/':
			if (flags & JSON_SLASH)
				shortf = "\\/";
			break;
		default:
			break;
		}
		if (shortf) {
			memcpy(out + o, shortf, 2);
			o += 2;
		} else if (cp < 0x20 || (flags & JSON_ASCII && cp >= 0x80) ||
			   (flags & JSON_HTML &&
			    (cp == '<' || cp == '>' || cp == '&' ||
			     cp == 0x2028 || cp == 0x2029))) {
			if (cp >= 0x10000) {
				o += put_u(out + o,
					   0xd800 + ((cp - 0x10000) >> 10),
					   digits);
				o += put_u(out + o,
					   0xdc00 + ((cp - 0x10000) & 0x3ff),
					   digits);
			} else {
				o += put_u(out + o, cp, digits);
			}
		} else {
			memcpy(out + o, v + i, n);
			o += n;
		}
		i += n;
	}
	return o;
}

/* The percent and JSON forms of one value; `enc` has room for 6 * len. */
static int add_escaped(hutch__secrets *set, const unsigned char *v, size_t len,
		       char *enc)
{
	static const struct {
		int style;
		const char *digits;
	} pcts[] = {
		{ PCT_RFC3986, "0123456789ABCDEF" },
		{ PCT_RFC3986, "0123456789abcdef" },
		{ PCT_URICOMP, "0123456789ABCDEF" },
		{ PCT_PYQUOTE, "0123456789ABCDEF" },
		{ PCT_FORM, "0123456789ABCDEF" },
		{ PCT_ALL, "0123456789ABCDEF" },
		{ PCT_ALL, "0123456789abcdef" },
	};
	static const int jsons[] = {
		0,
		JSON_SLASH,
		JSON_ASCII,
		JSON_ASCII | JSON_SLASH,
		JSON_HTML,
		JSON_ASCII | JSON_UPPER,
		JSON_ASCII | JSON_SLASH | JSON_UPPER,
	};
	size_t n;

	/* A form equal to the raw value (or to another form) adds no node. */
	for (size_t i = 0; i < sizeof(pcts) / sizeof(pcts[0]); i++) {
		n = pct(enc, v, len, pcts[i].style, pcts[i].digits);
		if (add_pattern(set, (unsigned char *)enc, n) < 0)
			return -1;
	}
	for (size_t i = 0; i < sizeof(jsons) / sizeof(jsons[0]); i++) {
		n = json_escape(enc, v, len, jsons[i]);
		if (add_pattern(set, (unsigned char *)enc, n) < 0)
			return -1;
	}
	return 0;
}

static int add_value(hutch__secrets *set, const unsigned char *v, size_t len)
{
	/* Room for the longest form: a JSON escape (6 bytes per byte). */
	size_t enc_max = 6 * len + 8, n;
	unsigned char *shifted = malloc(len + 4);
	char *enc = malloc(enc_max);
	int rc = -1;

	if (!shifted || !enc)
		goto out;
	if (add_pattern(set, v, len) < 0)
		goto out;
	for (int upper = 0; upper < 2; upper++) {
		const char *digits = upper ? "0123456789ABCDEF" :
					     "0123456789abcdef";

		for (size_t i = 0; i < len; i++) {
			enc[2 * i] = digits[v[i] >> 4];
			enc[2 * i + 1] = digits[v[i] & 15];
		}
		if (add_pattern(set, (unsigned char *)enc, 2 * len) < 0)
			goto out;
	}
	for (size_t a = 0; a < 2; a++) {
		/* The value encoded alone, padded or not. */
		for (int pad = 0; pad < 2; pad++) {
			int form = (a ? HUTCH__B64_URL : 0) |
				   (pad ? HUTCH__B64_PAD : 0);

			n = hutch__b64_encode(enc, v, len, form);
			if (add_pattern(set, (unsigned char *)enc, n) < 0)
				goto out;
		}
		/* Preceded by k bytes: the value's bits run from bit 8k to
		 * 8(k + len); the characters whose six bits all lie inside
		 * are the same whatever surrounds the value. */
		for (size_t k = 0; k < 3; k++) {
			size_t first = (8 * k + 5) / 6,
			       end = (8 * (k + len)) / 6;

			memset(shifted, 0, len + 4);
			memcpy(shifted + k, v, len);
			hutch__b64_encode(enc, shifted, k + len + 2,
					  a ? HUTCH__B64_URL : 0);
			if (add_pattern(set, (unsigned char *)enc + first,
					end - first) < 0)
				goto out;
		}
	}
	if (add_escaped(set, v, len, enc) < 0)
		goto out;
	rc = 0;
out:
	if (shifted)
		explicit_bzero(shifted, len + 4);
	if (enc)
		explicit_bzero(enc, enc_max);
	free(shifted);
	free(enc);
	return rc;
}

int hutch__secrets_new(hutch__secrets **out, const char *const *values,
		       const size_t *lens, size_t n, const char **why)
{
	hutch__secrets *set;
	size_t total = 0;

	if (n > HUTCH_SECRETS_MAX) {
		*why = "too many secrets (at most 32)";
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		if (lens[i] < HUTCH_SECRET_MIN_LEN) {
			*why = "a secret's value is shorter than 4 bytes, too short to "
			       "redact without masking ordinary output";
			return -1;
		}
		if (lens[i] > HUTCH_SECRET_MAX_LEN) {
			*why = "a secret's value is longer than 4096 bytes";
			return -1;
		}
		total += lens[i];
	}
	if (total > HUTCH_SECRETS_MAX_TOTAL) {
		*why = "the secrets' values add up to more than 16 KiB";
		return -1;
	}
	set = calloc(1, sizeof(*set));
	if (!set)
		return -2;
	set->refs = 1;
	set->alloc = 256;
	set->nodes = calloc(set->alloc, sizeof(*set->nodes));
	set->n = 1;
	if (!set->nodes)
		goto oom;
	for (size_t i = 0; i < n; i++)
		if (add_value(set, (const unsigned char *)values[i], lens[i]) <
		    0)
			goto oom;
	if (link(set) < 0)
		goto oom;
	*out = set;
	return 0;
oom:
	hutch__secrets_free(set);
	return -2;
}

hutch__secrets *hutch__secrets_ref(const hutch__secrets *set)
{
	/* The patterns never change once built; only the count does. */
	hutch__secrets *mine = (hutch__secrets *)set;

	if (mine)
		__atomic_add_fetch(&mine->refs, 1, __ATOMIC_RELAXED);
	return mine;
}

void hutch__secrets_free(hutch__secrets *set)
{
	if (!set || __atomic_sub_fetch(&set->refs, 1, __ATOMIC_ACQ_REL) != 0)
		return;
	if (set->nodes)
		explicit_bzero(set->nodes, set->alloc * sizeof(*set->nodes));
	explicit_bzero(set->root_next, sizeof(set->root_next));
	free(set->nodes);
	free(set);
}

size_t hutch__secrets_max_pattern(const hutch__secrets *set)
{
	return set ? set->max_len : 0;
}

/* --- streams ------------------------------------------------------------------ */

int hutch__redactor_init(hutch__redactor *r, const hutch__secrets *set)
{
	memset(r, 0, sizeof(*r));
	if (!set || set->max_len == 0)
		return 0;
	r->set = set;
	r->hold = set->max_len;
	/* Room to decide in batches rather than a byte at a time. */
	r->size = r->hold + HUTCH_REDACT_BATCH;
	/* Every run covers a pattern's worth of window (patterns are at least
	 * HUTCH_SECRET_MIN_LEN long) and runs do not overlap. */
	r->runs_cap = r->size / HUTCH_SECRET_MIN_LEN + 2;
	r->window = malloc(r->size);
	r->runs = malloc(r->runs_cap * sizeof(*r->runs));
	if (!r->window || !r->runs) {
		hutch__redactor_free(r);
		return -1;
	}
	return 0;
}

void hutch__redactor_free(hutch__redactor *r)
{
	if (!r)
		return;
	if (r->window)
		explicit_bzero(r->window, r->size);
	explicit_bzero(r->out, sizeof(r->out));
	free(r->window);
	free(r->runs);
	memset(r, 0, sizeof(*r));
}

static int hand_on(hutch__redactor *r, hutch__redact_emit emit, void *payload)
{
	int rc = 0;

	if (r->out_len)
		rc = emit(r->out, r->out_len, payload);
	r->out_len = 0;
	return rc;
}

static int put(hutch__redactor *r, const char *data, size_t len,
	       hutch__redact_emit emit, void *payload)
{
	size_t n;
	int rc;

	while (len > 0) {
		if (r->out_len == sizeof(r->out) &&
		    (rc = hand_on(r, emit, payload)))
			return rc;
		n = sizeof(r->out) - r->out_len;
		if (n > len)
			n = len;
		memcpy(r->out + r->out_len, data, n);
		r->out_len += n;
		data += n;
		len -= n;
	}
	return 0;
}

#define RUN(r, i) ((r)->runs[((r)->runs_head + (i)) % (r)->runs_cap])

/* Mask [start, pos): merge with the runs it overlaps, which are the last
 * ones, since occurrences are found in order of their ends.  Runs that
 * only touch stay apart ("[REDACTED][REDACTED]"). */
static void mask(hutch__redactor *r, uint64_t start)
{
	while (r->runs_len && RUN(r, r->runs_len - 1).end > start) {
		if (RUN(r, r->runs_len - 1).start < start)
			start = RUN(r, r->runs_len - 1).start;
		r->runs_len--;
	}
	RUN(r, r->runs_len).start = start;
	RUN(r, r->runs_len).end = r->pos;
	r->runs_len++;
}

/* Decide every byte before `upto`. */
static int decide(hutch__redactor *r, uint64_t upto, hutch__redact_emit emit,
		  void *payload)
{
	int rc;

	while (r->base < upto) {
		if (r->runs_len && r->base >= RUN(r, 0).start) {
			uint64_t end = RUN(r, 0).end < upto ? RUN(r, 0).end :
							      upto;

			if (!r->marked) {
				rc = put(r, HUTCH_REDACTED,
					 sizeof(HUTCH_REDACTED) - 1, emit,
					 payload);
				if (rc)
					return rc;
				r->marked = 1;
			}
			r->base = end;
			if (r->base >= RUN(r, 0).end) {
				r->runs_head = (r->runs_head + 1) % r->runs_cap;
				r->runs_len--;
				r->marked = 0;
			}
		} else {
			uint64_t lim = upto;
			size_t at, n;

			if (r->runs_len && RUN(r, 0).start < lim)
				lim = RUN(r, 0).start;
			at = (size_t)(r->base % r->size);
			n = (size_t)(lim - r->base);
			if (n > r->size - at)
				n = r->size - at;
			rc = put(r, r->window + at, n, emit, payload);
			if (rc)
				return rc;
			r->base += n;
		}
	}
	return 0;
}

int hutch__redact_feed(hutch__redactor *r, const char *data, size_t len,
		       hutch__redact_emit emit, void *payload)
{
	const hutch__secrets *set = r->set;
	uint32_t state, m;
	int rc;

	if (!set)
		return len ? emit(data, len, payload) : 0;
	state = r->state;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)data[i];

		/* The window is full: decide all but the last hold - 1 bytes,
		 * which an occurrence not yet complete may still cover. */
		if (r->pos - r->base == r->size &&
		    (rc = decide(r, r->pos - r->hold + 1, emit, payload))) {
			r->state = state;
			return rc;
		}
		r->window[r->pos % r->size] = (char)c;
		r->pos++;
		/* Most bytes of most output start nothing. */
		if (state == 0 && set->root_next[c] == 0)
			continue;
		state = step(set, state, c);
		m = set->nodes[state].out;
		if (m)
			mask(r, r->pos - m);
	}
	r->state = state;
	/* Hand on what is decided now rather than a window later: output
	 * should flow as it comes. */
	if (r->pos - r->base >= r->hold &&
	    (rc = decide(r, r->pos - r->hold + 1, emit, payload)))
		return rc;
	return hand_on(r, emit, payload);
}

int hutch__redact_flush(hutch__redactor *r, int cut, hutch__redact_emit emit,
			void *payload)
{
	uint32_t depth;
	int rc;

	if (!r->set)
		return 0;
	/* The state's depth is the longest tail of the stream that begins a
	 * pattern; it is still in the window (shorter than any pattern). */
	depth = r->set->nodes[r->state].depth;
	if (cut && depth >= HUTCH_SECRET_MIN_LEN)
		mask(r, r->pos - depth);
	rc = decide(r, r->pos, emit, payload);
	if (!rc)
		rc = hand_on(r, emit, payload);
	r->state = 0;
	r->marked = 0;
	r->runs_len = 0;
	r->base = r->pos;
	return rc;
}

static int buf_emit(const char *data, size_t len, void *p)
{
	return hutch__buf_add(p, data, len);
}

char *hutch__redact_buffer(const hutch__secrets *set, const char *data,
			   size_t len, int cut, size_t *outlen)
{
	/* Every masked run is at least HUTCH_SECRET_MIN_LEN (4) bytes and
	 * becomes one "[REDACTED]" (10): the text grows at most 2.5 times. */
	hutch_buf b = HUTCH_BUF_INIT(3 * len + 64);
	hutch__redactor r;
	char *out;
	int rc;

	if (hutch__redactor_init(&r, set) < 0)
		return NULL;
	rc = hutch__redact_feed(&r, data, len, buf_emit, &b);
	if (!rc)
		rc = hutch__redact_flush(&r, cut, buf_emit, &b);
	hutch__redactor_free(&r);
	if (rc) {
		hutch__buf_free(&b);
		return NULL;
	}
	out = hutch__buf_detach(&b, outlen);
	return out;
}
