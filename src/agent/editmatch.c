/*
 * editmatch.c - find the text an edit replaces, and build the new file
 *
 * Costs stay bounded whatever the input: exact matching is memmem();
 * line matching compares a rolling hash of per-line hashes, so a window is
 * only compared byte by byte when its hash agrees (O(lines + old lines)
 * plus real matches); scoring near misses stops after a fixed budget.
 * Matches are found twice - once to count them, once to build the output -
 * rather than stored, so a million matches cost no memory.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "editmatch.h"
#include "utf8.h"

#define CLOSEST_BUDGET 50000000u /* line and byte comparisons for near misses */
#define CLOSEST_SIDE 64		 /* bytes compared at each end of a line */
#define CLOSEST_COLS 500	 /* bytes shown of each near-miss line */
#define REINDENT_PAIRS 64	 /* distinct indentations remembered */
#define HASH_BASE 1099511628211ull

const char *em_match_name(enum em_match m)
{
	switch (m) {
	case EM_MATCH_WHITESPACE:
		return "whitespace";
	case EM_MATCH_INDENTATION:
		return "indentation";
	case EM_MATCH_EXACT:
	default:
		return "exact";
	}
}

void em_result_free(struct em_result *res)
{
	if (!res)
		return;
	free(res->out);
	free(res->closest);
	res->out = NULL;
	res->closest = NULL;
}

/* --- output buffer, capped ---------------------------------------------- */

struct ob {
	char *p;
	size_t len, cap;
	int err; /* EM_TOOBIG or EM_NOMEM once something failed */
};

static void ob_put(struct ob *o, const char *s, size_t n)
{
	size_t ncap;
	char *np;

	if (o->err || n == 0)
		return;
	if (n > EM_OUT_MAX - o->len) {
		o->err = EM_TOOBIG;
		return;
	}
	if (o->len + n + 1 > o->cap) {
		ncap = o->cap ? o->cap : 4096;
		while (ncap < o->len + n + 1)
			ncap *= 2;
		np = realloc(o->p, ncap);
		if (!np) {
			o->err = EM_NOMEM;
			return;
		}
		o->p = np;
		o->cap = ncap;
	}
	memcpy(o->p + o->len, s, n);
	o->len += n;
	o->p[o->len] = '\0';
}

/* --- lines ------------------------------------------------------------------ */

struct lines {
	const char *b;
	size_t len;
	size_t n;	/* lines; a last line without "\n" counts */
	size_t *start;	/* n + 1 entries, start[n] == len */
	uint64_t *hash; /* per line, of the trimmed content */
};

static void lines_free(struct lines *l)
{
	free(l->start);
	free(l->hash);
	l->start = NULL;
	l->hash = NULL;
}

static int lines_split(struct lines *l, const char *b, size_t len)
{
	size_t i, n = 0;
	const char *q = b, *end = b + len;

	memset(l, 0, sizeof(*l));
	l->b = b;
	l->len = len;
	while (q < end && (q = memchr(q, '\n', (size_t)(end - q)))) {
		n++;
		q++;
	}
	if (len && b[len - 1] != '\n')
		n++;
	l->n = n;
	l->start = malloc((n + 1) * sizeof(*l->start));
	l->hash = malloc((n + 1) * sizeof(*l->hash));
	if (!l->start || !l->hash) {
		lines_free(l);
		return EM_NOMEM;
	}
	for (i = 0, q = b; i < n; i++) {
		l->start[i] = (size_t)(q - b);
		q = memchr(q, '\n', (size_t)(end - q));
		q = q ? q + 1 : end;
	}
	l->start[n] = len;
	return 0;
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v';
}

/* Content of line i without its "\n"/"\r\n" (keeps other blanks). */
static void line_body(const struct lines *l, size_t i, size_t *a, size_t *e)
{
	*a = l->start[i];
	*e = l->start[i + 1];
	if (*e > *a && l->b[*e - 1] == '\n')
		(*e)--;
	if (*e > *a && l->b[*e - 1] == '\r')
		(*e)--;
}

/* Line i as a matching level sees it. */
static void line_key(const struct lines *l, size_t i, bool lead, size_t *a,
		     size_t *e)
{
	line_body(l, i, a, e);
	while (*e > *a && is_blank(l->b[*e - 1]))
		(*e)--;
	if (lead)
		while (*a < *e && (l->b[*a] == ' ' || l->b[*a] == '\t'))
			(*a)++;
}

static uint64_t fnv(const char *s, size_t n)
{
	uint64_t h = 14695981039346656037ull;

	while (n--) {
		h ^= (unsigned char)*s++;
		h *= HASH_BASE;
	}
	return h;
}

static void lines_hash(struct lines *l, bool lead)
{
	size_t i, a, e;

	for (i = 0; i < l->n; i++) {
		line_key(l, i, lead, &a, &e);
		l->hash[i] = fnv(l->b + a, e - a);
	}
}

static size_t lead_len(const char *s, size_t n)
{
	size_t i = 0;

	while (i < n && (s[i] == ' ' || s[i] == '\t'))
		i++;
	return i;
}

/* --- the matcher ------------------------------------------------------- */

struct ctx {
	const char *buf, *old, *new_text;
	size_t len, olen, nlen;
	enum em_match level;
	bool old_nl;	     /* OLD ends with "\n" */
	struct lines fl, ol; /* file and OLD lines (line levels) */
};

struct match {
	size_t rs, re; /* region [rs, re) of the file */
	size_t line;   /* 0-based first line */
	size_t j;      /* line levels: index of the first line */
};

typedef int (*match_fn)(struct ctx *c, const struct match *m, void *arg);

static int scan_exact(struct ctx *c, match_fn fn, void *arg)
{
	const char *p = c->buf, *end = c->buf + c->len, *q, *nl;
	size_t line = 0, from = 0;
	struct match m;
	int rc;

	while ((size_t)(end - p) >= c->olen &&
	       (q = memmem(p, (size_t)(end - p), c->old, c->olen))) {
		m.rs = (size_t)(q - c->buf);
		m.re = m.rs + c->olen;
		/* Count newlines since the previous match only. */
		for (nl = c->buf + from;
		     (nl = memchr(nl, '\n', m.rs - (size_t)(nl - c->buf)));
		     nl++)
			line++;
		from = m.rs;
		m.line = line;
		m.j = 0;
		rc = fn(c, &m, arg);
		if (rc)
			return rc;
		p = q + c->olen;
	}
	return 0;
}

static bool window_equal(const struct ctx *c, size_t j)
{
	bool lead = c->level == EM_MATCH_INDENTATION;
	size_t i, a, e, oa, oe;

	for (i = 0; i < c->ol.n; i++) {
		line_key(&c->fl, j + i, lead, &a, &e);
		line_key(&c->ol, i, lead, &oa, &oe);
		if (e - a != oe - oa || memcmp(c->buf + a, c->old + oa, e - a))
			return false;
	}
	return true;
}

static uint64_t window_hash(const uint64_t *h, size_t j, size_t k)
{
	uint64_t w = 0;

	for (size_t i = 0; i < k; i++)
		w = w * HASH_BASE + h[j + i];
	return w;
}

static int scan_lines(struct ctx *c, match_fn fn, void *arg)
{
	size_t k = c->ol.n, n = c->fl.n, j = 0, i, last, skip;
	uint64_t target, w, top = 1;
	struct match m;
	int rc;

	if (k == 0 || k > n)
		return 0;
	for (i = 1; i < k; i++)
		top *= HASH_BASE;
	target = window_hash(c->ol.hash, 0, k);
	w = window_hash(c->fl.hash, 0, k);
	while (j + k <= n) {
		if (w == target && window_equal(c, j)) {
			last = j + k - 1;
			m.rs = c->fl.start[j];
			if (c->old_nl) {
				m.re = c->fl.start[last + 1];
			} else {
				line_body(&c->fl, last, &skip, &m.re);
			}
			m.line = j;
			m.j = j;
			rc = fn(c, &m, arg);
			if (rc)
				return rc;
			j += k;
			if (j + k <= n)
				w = window_hash(c->fl.hash, j, k);
			continue;
		}
		if (j + k < n)
			w = (w - c->fl.hash[j] * top) * HASH_BASE +
			    c->fl.hash[j + k];
		j++;
	}
	return 0;
}

static int scan(struct ctx *c, match_fn fn, void *arg)
{
	return c->level == EM_MATCH_EXACT ? scan_exact(c, fn, arg) :
					    scan_lines(c, fn, arg);
}

static int count_cb(struct ctx *c, const struct match *m, void *arg)
{
	struct em_result *res = arg;

	if (res->nlines < EM_MAX_LINES)
		res->lines[res->nlines++] = m->line + 1;
	res->count++;
	return 0;
}

/* --- building the replacement ------------------------------------------ */

/*
 * Does the region starting at @rs end its lines with "\r\n"?  Judged by
 * the first line end at or after it (a one-line match inside a CRLF line
 * counts too), else by the line end just before it.
 */
static bool region_crlf(const struct ctx *c, size_t rs)
{
	const char *nl = memchr(c->buf + rs, '\n', c->len - rs);

	if (nl)
		return nl > c->buf && nl[-1] == '\r';
	for (size_t i = rs; i > 0; i--)
		if (c->buf[i - 1] == '\n')
			return i >= 2 && c->buf[i - 2] == '\r';
	return false;
}

/* Append s[0..n), turning a lone "\n" into "\r\n" when @crlf. */
static void put_eol(struct ob *o, const char *s, size_t n, bool crlf)
{
	size_t i, from = 0;

	if (!crlf) {
		ob_put(o, s, n);
		return;
	}
	for (i = 0; i < n; i++) {
		if (s[i] != '\n' || (i > 0 && s[i - 1] == '\r'))
			continue;
		ob_put(o, s + from, i - from);
		ob_put(o, "\r\n", 2);
		from = i + 1;
	}
	ob_put(o, s + from, n - from);
}

struct indent_map {
	size_t n;
	struct {
		const char *from, *to;
		size_t flen, tlen;
	} pair[REINDENT_PAIRS];
	const char *ocommon, *fcommon; /* common leading blanks */
	size_t oclen, fclen;
};

static size_t common_prefix(const char *a, size_t an, const char *b, size_t bn)
{
	size_t i = 0;

	while (i < an && i < bn && a[i] == b[i])
		i++;
	return i;
}

/*
 * What OLD's indentation maps to in the file, learnt from the matched
 * lines: each indentation seen in OLD maps to the file's on the same line,
 * and OLD's common indentation maps to the file's common one.
 */
static void indent_learn(const struct ctx *c, size_t j, struct indent_map *im)
{
	size_t i, a, e, oa, oe, fl, ol, p;
	bool first = true;

	memset(im, 0, sizeof(*im));
	for (i = 0; i < c->ol.n; i++) {
		line_body(&c->fl, j + i, &a, &e);
		line_body(&c->ol, i, &oa, &oe);
		fl = lead_len(c->buf + a, e - a);
		ol = lead_len(c->old + oa, oe - oa);
		if (ol == oe - oa)
			continue; /* blank: says nothing */
		if (first) {
			im->ocommon = c->old + oa;
			im->oclen = ol;
			im->fcommon = c->buf + a;
			im->fclen = fl;
			first = false;
		} else {
			im->oclen = common_prefix(im->ocommon, im->oclen,
						  c->old + oa, ol);
			im->fclen = common_prefix(im->fcommon, im->fclen,
						  c->buf + a, fl);
		}
		for (p = 0; p < im->n; p++)
			if (im->pair[p].flen == ol &&
			    !memcmp(im->pair[p].from, c->old + oa, ol))
				break;
		if (p == im->n && im->n < REINDENT_PAIRS) {
			im->pair[p].from = c->old + oa;
			im->pair[p].flen = ol;
			im->pair[p].to = c->buf + a;
			im->pair[p].tlen = fl;
			im->n++;
		}
	}
}

static void put_reindented(struct ob *o, const struct indent_map *im,
			   const char *s, size_t n, bool crlf)
{
	const char *end = s + n, *nl, *line;
	size_t ll, lead, p;

	for (line = s; line < end; line = nl) {
		nl = memchr(line, '\n', (size_t)(end - line));
		nl = nl ? nl + 1 : end;
		ll = (size_t)(nl - line);
		lead = lead_len(line, ll);
		if (lead == ll || line[lead] == '\n' || line[lead] == '\r') {
			put_eol(o, line, ll, crlf); /* blank line */
			continue;
		}
		for (p = 0; p < im->n; p++)
			if (im->pair[p].flen == lead &&
			    !memcmp(im->pair[p].from, line, lead))
				break;
		if (p < im->n) {
			ob_put(o, im->pair[p].to, im->pair[p].tlen);
			line += lead;
			ll -= lead;
		} else if (lead >= im->oclen &&
			   !memcmp(line, im->ocommon, im->oclen)) {
			ob_put(o, im->fcommon, im->fclen);
			line += im->oclen;
			ll -= im->oclen;
		}
		put_eol(o, line, ll, crlf);
	}
}

struct build {
	struct ob o;
	size_t prev; /* end of the last region copied over */
};

static int build_cb(struct ctx *c, const struct match *m, void *arg)
{
	struct build *b = arg;
	bool crlf = region_crlf(c, m->rs);
	size_t nlen = c->nlen;
	struct indent_map im;

	ob_put(&b->o, c->buf + b->prev, m->rs - b->prev);
	/*
	 * OLD ended with a newline but matched the file's last line, which
	 * has none: keep the file without one rather than add it.
	 */
	if (c->level != EM_MATCH_EXACT && c->old_nl && m->re == c->len &&
	    (c->len == 0 || c->buf[c->len - 1] != '\n') && nlen &&
	    c->new_text[nlen - 1] == '\n') {
		nlen--;
		if (nlen && c->new_text[nlen - 1] == '\r')
			nlen--;
	}
	if (c->level == EM_MATCH_INDENTATION) {
		indent_learn(c, m->j, &im);
		put_reindented(&b->o, &im, c->new_text, nlen, crlf);
	} else {
		put_eol(&b->o, c->new_text, nlen, crlf);
	}
	b->prev = m->re;
	return b->o.err;
}

/* --- near misses -------------------------------------------------------- */

static double line_sim(const char *a, size_t an, const char *b, size_t bn,
		       size_t *cost)
{
	size_t p = 0, s = 0, lim;

	if (!an || !bn)
		return an == bn ? 1.0 : 0.0;
	lim = an < bn ? an : bn;
	if (lim > CLOSEST_SIDE)
		lim = CLOSEST_SIDE;
	while (p < lim && a[p] == b[p])
		p++;
	lim = (an < bn ? an : bn) - p;
	if (lim > CLOSEST_SIDE)
		lim = CLOSEST_SIDE;
	while (s < lim && a[an - 1 - s] == b[bn - 1 - s])
		s++;
	*cost += p + s;
	return (double)(p + s) / (double)(an > bn ? an : bn);
}

static int closest(struct ctx *c, struct em_result *res)
{
	size_t k = c->ol.n, n = c->fl.n, j, i, cost = 0, best_j = 0;
	size_t a, e, oa, oe, shown, cut;
	double score, best = -1.0;
	struct ob o = { 0 };
	char num[32];
	int len;

	if (k == 0 || n == 0)
		return 0;
	lines_hash(&c->fl, true);
	lines_hash(&c->ol, true);
	for (j = 0; j + (k < n ? k : n) <= n && cost < CLOSEST_BUDGET; j++) {
		score = 0.0;
		for (i = 0; i < k && j + i < n; i++) {
			cost++;
			line_key(&c->fl, j + i, true, &a, &e);
			line_key(&c->ol, i, true, &oa, &oe);
			if (c->fl.hash[j + i] == c->ol.hash[i] &&
			    e - a == oe - oa &&
			    !memcmp(c->buf + a, c->old + oa, e - a))
				score += 1.0;
			else
				score += line_sim(c->buf + a, e - a,
						  c->old + oa, oe - oa, &cost);
		}
		score /= (double)k;
		if (score > best) {
			best = score;
			best_j = j;
		}
		if (k >= n)
			break;
	}
	/* Below half similar is noise, not a near miss. */
	if (best < 0.5)
		return 0;
	shown = k < EM_CLOSEST_MAX ? k : EM_CLOSEST_MAX;
	for (i = 0; i < shown && best_j + i < n; i++) {
		line_body(&c->fl, best_j + i, &a, &e);
		len = snprintf(num, sizeof(num), "%s%6zu\t", i ? "\n" : "",
			       best_j + i + 1);
		ob_put(&o, num, (size_t)len);
		cut = hutch__utf8_cut(c->buf + a, e - a, CLOSEST_COLS);
		ob_put(&o, c->buf + a, cut);
	}
	if (o.err) {
		free(o.p);
		return o.err;
	}
	res->closest_line = best_j + 1;
	res->closest = o.p ? o.p : strdup("");
	return res->closest ? 0 : EM_NOMEM;
}

/* --- entry point --------------------------------------------------------- */

static bool old_has_text(const char *old, size_t olen)
{
	for (size_t i = 0; i < olen; i++)
		if (!is_blank(old[i]) && old[i] != '\n')
			return true;
	return false;
}

int em_edit(const char *buf, size_t len, const char *old, size_t olen,
	    const char *new_text, size_t nlen, bool all, struct em_result *res)
{
	struct ctx c = { .buf = buf,
			 .old = old,
			 .new_text = new_text,
			 .len = len,
			 .olen = olen,
			 .nlen = nlen };
	struct build b = { { 0 }, 0 };
	bool lines_ready = false;
	int rc, level;

	memset(res, 0, sizeof(*res));
	if (olen == 0 || (olen == nlen && !memcmp(old, new_text, olen)))
		return EM_INVALID;
	c.old_nl = old[olen - 1] == '\n';

	for (level = EM_MATCH_EXACT; level <= EM_MATCH_INDENTATION; level++) {
		c.level = (enum em_match)level;
		if (level != EM_MATCH_EXACT) {
			/* Blank-only OLD would match any blank lines. */
			if (!old_has_text(old, olen))
				break;
			if (!lines_ready) {
				if (lines_split(&c.fl, buf, len) ||
				    lines_split(&c.ol, old, olen)) {
					rc = EM_NOMEM;
					goto out;
				}
				lines_ready = true;
			}
			lines_hash(&c.fl, level == EM_MATCH_INDENTATION);
			lines_hash(&c.ol, level == EM_MATCH_INDENTATION);
		}
		res->count = 0;
		res->nlines = 0;
		scan(&c, count_cb, res);
		if (res->count)
			break;
	}
	if (res->count == 0) {
		rc = EM_NOMATCH;
		if (old_has_text(old, olen) && lines_ready)
			rc = closest(&c, res) ? EM_NOMEM : EM_NOMATCH;
		goto out;
	}
	res->match = c.level;
	if (res->count > 1 && !all) {
		rc = EM_AMBIGUOUS;
		goto out;
	}
	rc = scan(&c, build_cb, &b);
	if (!rc) {
		ob_put(&b.o, buf + b.prev, len - b.prev);
		rc = b.o.err;
	}
	if (rc) {
		free(b.o.p);
		goto out;
	}
	res->out = b.o.p ? b.o.p : calloc(1, 1);
	res->out_len = b.o.len;
	rc = res->out ? EM_OK : EM_NOMEM;
out:
	lines_free(&c.fl);
	lines_free(&c.ol);
	return rc;
}
