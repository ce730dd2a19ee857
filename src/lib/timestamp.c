/*
 * timestamp.c - the engines' times, as unix seconds
 */
#include <string.h>
#include <json-c/json.h>

#include "base64.h"
#include "timestamp.h"

/* Digits at s[0..n), or -1. */
static int digits(const char *s, int n)
{
	int v = 0;

	for (int i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v;
}

/* Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar
 * (Howard Hinnant's days_from_civil): no timegm(), no time zone. */
static long long days_from_civil(long long y, int m, int d)
{
	long long era, yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

int hutch__time_parse(const char *s, long long *out)
{
	static const int mdays[] = { 31, 29, 31, 30, 31, 30,
				     31, 31, 30, 31, 30, 31 };
	int y, mo, d, h, mi, sec, off = 0;
	long long t;

	if (!s || strlen(s) < 20 || s[4] != '-' || s[7] != '-' ||
	    (s[10] != 'T' && s[10] != 't' && s[10] != ' ') || s[13] != ':' ||
	    s[16] != ':')
		return -1;
	y = digits(s, 4);
	mo = digits(s + 5, 2);
	d = digits(s + 8, 2);
	h = digits(s + 11, 2);
	mi = digits(s + 14, 2);
	sec = digits(s + 17, 2);
	if (y < 1 || mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] ||
	    (mo == 2 && d == 29 &&
	     !(y % 4 == 0 && (y % 100 != 0 || y % 400 == 0))) ||
	    h < 0 || h > 23 || mi < 0 || mi > 59 || sec < 0 || sec > 60)
		return -1;
	s += 19;
	if (*s == '.') {
		size_t n = strspn(s + 1, "0123456789");

		if (n == 0)
			return -1;
		s += 1 + n;
	}
	if ((*s == 'Z' || *s == 'z') && s[1] == '\0') {
		off = 0;
	} else if ((*s == '+' || *s == '-') && strlen(s) == 6 && s[3] == ':') {
		int oh = digits(s + 1, 2), om = digits(s + 4, 2);

		if (oh < 0 || oh > 23 || om < 0 || om > 59)
			return -1;
		off = (oh * 60 + om) * 60 * (*s == '-' ? -1 : 1);
	} else {
		return -1;
	}
	t = days_from_civil(y, mo, d) * 86400LL + h * 3600LL + mi * 60LL + sec -
	    off;
	*out = t;
	return 0;
}

int hutch__path_stat_mtime(const char *header, long long *out)
{
	char json[800];
	size_t n = 0;
	hutch__b64 dec = HUTCH__B64_INIT;
	int rc = -1;
	json_object *obj, *v;
	json_tokener *tok;

	if (!header)
		return -1;
	for (const char *p = header; *p && *p != '='; p++) {
		unsigned char byte;
		int b = hutch__b64_feed(&dec, (unsigned char)*p, &byte);

		if (b < 0 || p - header >= 1023)
			return -1;
		if (b == 0)
			continue;
		if (n + 1 >= sizeof(json))
			return -1;
		json[n++] = (char)byte;
	}
	json[n] = '\0';
	if (n == 0 || strlen(json) != n)
		return -1;
	tok = json_tokener_new();
	if (!tok)
		return -1;
	obj = json_tokener_parse_ex(tok, json, (int)n);
	if (obj && json_tokener_get_error(tok) == json_tokener_success &&
	    json_object_is_type(obj, json_type_object) &&
	    json_object_object_get_ex(obj, "mtime", &v) &&
	    json_object_is_type(v, json_type_string))
		rc = hutch__time_parse(json_object_get_string(v), out);
	json_object_put(obj);
	json_tokener_free(tok);
	return rc;
}
