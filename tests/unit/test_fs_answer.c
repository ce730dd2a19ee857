/*
 * Unit tests: the agent's answer to a file tool, parsed in bounded memory
 * (src/lib/fs_answer.c).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_internal.h"
#include "fs_answer.h"

static struct hutch_fs_result *parse(const char *s, const hutch__secrets *set)
{
	struct hutch_fs_result *r = NULL;
	const char *why = NULL;
	int rc = hutch__fs_answer_parse(&r, s, strlen(s), set, &why);

	cr_assert_eq(rc, 0, "%s: %s", s, why ? why : "?");
	return r;
}

static const char *refused(const char *s)
{
	struct hutch_fs_result *r = NULL;
	const char *why = NULL;

	cr_assert_eq(hutch__fs_answer_parse(&r, s, strlen(s), NULL, &why), -1,
		     "%.200s", s);
	cr_assert_null(r);
	cr_assert_not_null(why);
	return why;
}

/* The result's JSON is the agent's answer, member for member. */
Test(fs_answer, round_trip)
{
	static const char *const answers[] = {
		"{\"path\":\".\",\"entries\":[{\"path\":\"a\\nb\",\"name\":\"a\\nb\",\"type\":"
		"\"file\",\"size\":0},{\"path\":\"l\",\"name\":\"l\",\"type\":\"symlink\","
		"\"size\":3,\"target\":\"t\\rx\"}],\"truncated\":false}",
		"{\"matches\":[{\"path\":\"g.txt\",\"line\":2,\"text\":\"tab\\tline\"}],"
		"\"truncated\":false,\"files_scanned\":1}",
		"{\"entries\":[],\"truncated\":false}",
		"{\"path\":\"g.txt\",\"content\":\"x\\u0000y \\u00e9/\",\"offset\":1,"
		"\"truncated\":false}",
		"{\"error\":{\"code\":\"ambiguous\",\"message\":\"m\",\"lines\":[1,5]}}",
	};

	for (size_t i = 0; i < sizeof(answers) / sizeof(answers[0]); i++) {
		struct hutch_fs_result *r = parse(answers[i], NULL);
		json_object *a =
			hutch__json_parse(answers[i], strlen(answers[i]));
		json_object *b = hutch__json_parse(r->json, r->json_len);

		cr_assert_not_null(b, "%s", r->json);
		cr_assert(json_object_equal(a, b), "%s\n%s", answers[i],
			  r->json);
		json_object_put(a);
		json_object_put(b);
		hutch__fs_answer_free(r);
	}
}

Test(fs_answer, entries_are_records)
{
	struct hutch_fs_result *r = parse(
		"{\"entries\":[{\"path\":\"d\",\"type\":\"dir\"},{\"path\":\"d/f\",\"name\":\"f\","
		"\"type\":\"file\",\"size\":12}]}",
		NULL);
	size_t n;

	cr_assert_eq(r->count, 2);
	cr_assert_str_eq(r->entries_key, "entries");
	cr_assert_str_eq(hutch__fs_answer_str(r, r->entries[1].path, &n),
			 "d/f");
	cr_assert_eq(n, 3);
	cr_assert_str_eq(hutch__fs_answer_str(r, r->entries[1].name, NULL),
			 "f");
	cr_assert_null(hutch__fs_answer_str(r, r->entries[0].name, NULL));
	cr_assert_eq(r->entries[1].size, 12);
	hutch__fs_answer_free(r);
}

Test(fs_answer, every_string_is_redacted)
{
	const char *v[1] = { "hunter2-token" };
	size_t l[1] = { 13 };
	hutch__secrets *set = NULL;
	const char *why;
	struct hutch_fs_result *r;

	cr_assert_eq(hutch__secrets_new(&set, v, l, 1, &why), 0);
	r = parse(
		"{\"path\":\"hunter2-token\",\"matches\":[{\"path\":\"p/hunter2-token\","
		"\"line\":1,\"text\":\"x=hunter2-token...\"}]}",
		set);
	cr_assert_null(strstr(r->json, "hunter2"), "%s", r->json);
	cr_assert_str_eq(hutch__fs_answer_str(r, r->entries[0].path, NULL),
			 "p/[REDACTED]");
	hutch__fs_answer_free(r);
	/* Keys too: an impostor could send a file's text as one. */
	r = parse("{\"a hunter2-token\":{\"hunter2-token\":1}}", set);
	cr_assert_null(strstr(r->json, "hunter2"), "%s", r->json);
	hutch__fs_answer_free(r);
	hutch__secrets_free(set);
}

Test(fs_answer, shapes_an_impostor_might_send_are_refused)
{
	char *deep;

	refused("[]");
	refused("{\"entries\":[{\"path\":\"x\",\"more\":{\"a\":1}}]}");
	refused("{\"entries\":[{\"name\":\"no path\"}]}");
	refused("{\"entries\":[1,2,3]}");
	refused("{\"entries\":[{\"path\":\"x\"}]} trailing");
	refused("{\"entries\":[{\"path\":\"x\"}");
	refused("{\"entries\":[],\"matches\":[{\"path\":\"x\"}]}");
	refused("{\"entries\":[],\"entr\\u0069es\":[{\"path\":\"x\"}]}");
	/* Outside the entries, json-c's share is capped. */
	deep = malloc(64 * 1024);
	cr_assert_not_null(deep);
	{
		size_t n = (size_t)sprintf(deep, "{\"other\":[1");

		for (int i = 1; i < 10000; i++)
			n += (size_t)sprintf(deep + n, ",1");
		sprintf(deep + n, "]}");
	}
	cr_assert_str_eq(refused(deep), "the answer holds too many values");
	free(deep);
	refused("{\"a\":[[[[[[[[[[1]]]]]]]]]]}");
}

/* What a 100,000-entry answer keeps: a few bytes per byte of it, where a
 * json-c tree took about 1 KiB per entry. */
Test(fs_answer, memory_follows_the_size_not_the_shape)
{
	size_t cap = 8u << 20, len = 0;
	char *s = malloc(cap);
	struct hutch_fs_result *r;
	size_t kept;

	cr_assert_not_null(s);
	len += (size_t)sprintf(s, "{\"entries\":[");
	for (int i = 0; i < 100000; i++)
		len += (size_t)sprintf(
			s + len, "%s{\"path\":\"d%d/f%d\",\"type\":\"file\"}",
			i ? "," : "", i / 1000, i % 1000);
	len += (size_t)sprintf(s + len, "],\"truncated\":true}");
	r = parse(s, NULL);
	cr_assert_eq(r->count, 100000);
	kept = r->arena.alloc + r->alloc * sizeof(*r->entries) + r->json_len;
	cr_assert_leq(kept, 4 * len, "%zu bytes kept for a %zu-byte answer",
		      kept, len);
	hutch__fs_answer_free(r);
	free(s);
}
