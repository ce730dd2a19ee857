/*
 * glob.c - shell-style path patterns (see glob.h)
 *
 * Two levels of the same algorithm: within a component, `*` is matched by
 * the classic "remember the last star and retry one character further"
 * loop; across components, `**` is the star and each other pattern
 * component matches exactly one path component.  Keeping only the LAST
 * star as the backtrack point is enough for patterns whose only variable
 * part is the star, and it makes the cost O(pattern * path) at each level:
 * "*a*a*a*a*b" on a long name is quadratic at worst, never exponential.
 * No allocation, no recursion.
 */
#include <stddef.h>
#include <string.h>

#include "glob.h"

static unsigned char fold(unsigned char c, bool icase)
{
	if (icase && c >= 'A' && c <= 'Z')
		return (unsigned char)(c - 'A' + 'a');
	return c;
}

/*
 * Length of the bracket expression at p[0] == '[' (through the closing
 * ']'), or 0 when it is unterminated within the component: then the '['
 * is an ordinary character, like in fnmatch().
 */
static size_t class_len(const char *p, size_t n)
{
	size_t i = 1;

	if (i < n && (p[i] == '!' || p[i] == '^'))
		i++;
	if (i < n && p[i] == ']') /* a leading ']' is literal */
		i++;
	while (i < n && p[i] != ']') {
		if (p[i] == '\\')
			i++;
		i++;
	}
	return i < n ? i + 1 : 0;
}

static bool class_match(const char *p, size_t len, unsigned char c, bool icase)
{
	size_t i = 1, end = len - 1; /* between '[' and ']' */
	bool neg = false, hit = false;
	unsigned char lo, hi, fc = fold(c, icase);

	if (p[i] == '!' || p[i] == '^') {
		neg = true;
		i++;
	}
	/* class_len() found the end, so every ']' before it is literal. */
	while (i < end) {
		if (p[i] == '\\' && i + 1 < end)
			i++;
		lo = (unsigned char)p[i++];
		hi = lo;
		if (i + 1 < end && p[i] == '-') {
			i++;
			if (p[i] == '\\' && i + 1 < end)
				i++;
			hi = (unsigned char)p[i++];
		}
		if (c >= lo && c <= hi)
			hit = true;
		else if (icase && fc >= fold(lo, true) && fc <= fold(hi, true))
			hit = true;
		else if (icase && c >= 'a' && c <= 'z' &&
			 (unsigned char)(c - 'a' + 'A') >= lo &&
			 (unsigned char)(c - 'a' + 'A') <= hi)
			hit = true;
	}
	return hit != neg;
}

/*
 * Does the pattern element at p[*pi] match the single byte c?  Advances
 * *pi past the element.  Not called for '*'.
 */
static bool one_match(const char *p, size_t pn, size_t *pi, unsigned char c,
		      bool icase)
{
	size_t i = *pi, cl;

	switch (p[i]) {
	case '?':
		*pi = i + 1;
		return true;
	case '[':
		cl = class_len(p + i, pn - i);
		if (cl) {
			*pi = i + cl;
			return class_match(p + i, cl, c, icase);
		}
		break;
	case '\\':
		if (i + 1 < pn)
			i++; /* a trailing backslash is literal */
		break;
	default:
		break;
	}
	*pi = i + 1;
	return fold((unsigned char)p[i], icase) == fold(c, icase);
}

/* One pattern component against one path component. */
static bool comp_match(const char *p, size_t pn, const char *s, size_t sn,
		       bool icase)
{
	size_t pi = 0, si = 0, star_p = 0, star_s = 0, next;
	bool star = false;

	while (si < sn) {
		if (pi < pn && p[pi] == '*') {
			while (pi < pn && p[pi] == '*')
				pi++;
			star = true;
			star_p = pi;
			star_s = si;
			continue;
		}
		if (pi < pn) {
			next = pi;
			if (one_match(p, pn, &next, (unsigned char)s[si],
				      icase)) {
				pi = next;
				si++;
				continue;
			}
		}
		if (!star)
			return false;
		/* Let the last star eat one more byte and retry. */
		pi = star_p;
		si = ++star_s;
	}
	while (pi < pn && p[pi] == '*')
		pi++;
	return pi == pn;
}

/*
 * Next '/'-separated component of [*pos, end), skipping empty ones.  In a
 * pattern a backslash protects the next byte, so "\/" does not split (and
 * then never matches, as a path component holds no '/').
 */
static bool next_comp(const char **pos, const char *end, bool is_pattern,
		      const char **c, size_t *n)
{
	const char *s = *pos, *e;

	while (s < end && *s == '/')
		s++;
	if (s == end)
		return false;
	for (e = s; e < end && *e != '/'; e++)
		if (is_pattern && *e == '\\' && e + 1 < end)
			e++;
	*c = s;
	*n = (size_t)(e - s);
	*pos = e;
	return true;
}

static bool is_globstar(const char *c, size_t n)
{
	return n == 2 && c[0] == '*' && c[1] == '*';
}

/* Pattern length without trailing slashes (but keep an escaped one). */
static size_t trim_slashes(const char *p, size_t n)
{
	while (n > 0 && p[n - 1] == '/') {
		size_t bs = 0;

		while (bs + 1 < n && p[n - 2 - bs] == '\\')
			bs++;
		if (bs % 2)
			break;
		n--;
	}
	return n;
}

static bool has_slash(const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (p[i] == '\\')
			i++;
		else if (p[i] == '/')
			return true;
	}
	return false;
}

bool hutch__glob_match(const char *pattern, const char *path, bool icase)
{
	size_t pn, sn, cn, dn;
	const char *pend, *send, *pp, *sp, *c, *d, *star_pp = NULL;
	const char *star_sp = NULL, *last;

	if (!pattern || !path)
		return false;
	pn = trim_slashes(pattern, strlen(pattern));
	sn = strlen(path);
	pend = pattern + pn;
	send = path + sn;
	if (pn == 0)
		return false;

	if (!has_slash(pattern, pn)) {
		/* Basename pattern: the last component of the path. */
		sn = trim_slashes(path, sn);
		last = memrchr(path, '/', sn);
		last = last ? last + 1 : path;
		return comp_match(pattern, pn, last, (size_t)(path + sn - last),
				  icase);
	}

	pp = pattern;
	sp = path;
	for (;;) {
		const char *pp_next = pp, *sp_next = sp;
		bool have_p = next_comp(&pp_next, pend, true, &c, &cn);
		bool have_s = next_comp(&sp_next, send, false, &d, &dn);

		if (!have_s)
			break;
		if (have_p && is_globstar(c, cn)) {
			/* "**" first tries to match nothing. */
			star_pp = pp_next;
			star_sp = sp;
			pp = pp_next;
			continue;
		}
		if (have_p && comp_match(c, cn, d, dn, icase)) {
			pp = pp_next;
			sp = sp_next;
			continue;
		}
		if (!star_pp)
			return false;
		/* Let the last "**" eat one more path component. */
		next_comp(&star_sp, send, false, &d, &dn);
		pp = star_pp;
		sp = star_sp;
	}
	/* Path used up: only "**" components may remain. */
	while (next_comp(&pp, pend, true, &c, &cn))
		if (!is_globstar(c, cn))
			return false;
	return true;
}

bool hutch__glob_valid(const char *pattern)
{
	size_t n, i;

	if (!pattern)
		return false;
	n = trim_slashes(pattern, strlen(pattern));
	if (n == 0)
		return false;
	for (i = 0; i < n; i++) {
		if (pattern[i] == '\\') {
			if (i + 1 >= n)
				return false;
			i++;
		} else if (pattern[i] == '[') {
			/* The class must close within the component. */
			const char *slash = memchr(pattern + i, '/', n - i);
			size_t lim = slash ? (size_t)(slash - pattern) : n;
			size_t cl = class_len(pattern + i, lim - i);

			if (!cl)
				return false;
			i += cl - 1;
		}
	}
	return true;
}
