/*
 * test_proclist.c - what `hutch ps` and `hutch logs` show of entries the
 * session forged (README, "Background processes")
 *
 * The agent's readers are bounded and answer valid JSON whatever the
 * entries hold (test_procdir.c).  What it then says is still the
 * session's words: a command line full of terminal escapes and newlines,
 * an exit code no process can have, a count of dropped bytes larger than
 * the output.  hutch must show such a command line escaped (it cannot
 * drive the terminal nor add a row), list nothing that cannot be true
 * (the agent reads pX as lost; a record that still claimed exit 999 would
 * be left out by hutch and counted as skipped), and keep listing the real
 * process beside them.
 */
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "hostile.h"

/* pE: a command line with an escape sequence that retitles a terminal,
 * a screen clear and a newline that would start a forged row.  pX: an end
 * record with exit code 999.  pD: dropped bytes past the output. */
static const char forge[] =
	"set -e; P=/.hutch/proc; u=$(id -u); "
	"for e in pE pX pD; do mkdir $P/$e; "
	"printf 'pid 1\\nsup 1 1\\nuid %s\\nstarted 5\\n' $u > $P/$e/meta; "
	"done; "
	"printf 'sh\\0\\033]0;pwned\\007\\033[2J\\nFAKE  running\\0' > "
	"$P/pE/argv; "
	"printf 'true\\0' > $P/pX/argv; printf 'exit 999 6 0\\n' > $P/pX/end; "
	"printf 'true\\0' > $P/pD/argv; "
	"printf 'exit 0 6 5\\n' > $P/pD/end; "
	"echo forged";

IT_TEST(proclist, forged_records_are_shown_safely)
{
	const char *s = it_session();
	json_object *doc, *list;
	size_t listed, rows = 0, real = 0;
	it_result r;

	r = it_hutch("exec", "-d", s, "--", "sh", "-c", "echo real", NULL);
	IT_ASSERT_EXIT(r, 0, "hutch exec -d S -- sh -c 'echo real'");
	it_result_free(&r);
	r = it_hutch("sh", s, forge, NULL);
	IT_ASSERT_EXIT(r, 0, "forging entries");
	it_result_free(&r);

	r = it_hutch("ps", s, "--json", NULL);
	IT_ASSERT_EXIT(r, 0, "hutch ps S --json");
	doc = it_json(r.out, r.out_len);
	it_result_free(&r);
	list = it_json_get(doc, "processes");
	listed = json_object_array_length(list);
	for (size_t i = 0; i < listed; i++) {
		json_object *e = json_object_array_get_idx(list, i);
		json_object *code = it_json_get(e, "exit_code");
		int64_t out = json_object_get_int64(
				it_json_get(e, "output_bytes")),
			dropped = json_object_get_int64(
				it_json_get(e, "dropped_bytes"));

		/* Nothing listed that cannot be true. */
		cr_assert(!code || (json_object_get_int(code) >= 0 &&
				    json_object_get_int(code) <= 255),
			  "%s", json_object_to_json_string(e));
		cr_assert_leq(dropped, out, "%s",
			      json_object_to_json_string(e));
		const char *a2 = json_object_get_string(
			json_object_array_get_idx(it_json_get(e, "argv"), 2));

		if (a2 && !strcmp(a2, "echo real"))
			real++;
	}
	cr_assert_eq(real, 1, "the real process is not listed once: %s",
		     json_object_to_json_string(doc));
	json_object_put(doc);

	r = it_hutch("ps", s, NULL);
	IT_ASSERT_EXIT(r, 0, "hutch ps S");
	/* No byte a terminal obeys, and one row per listed process. */
	for (size_t i = 0; i < r.out_len; i++) {
		unsigned char c = (unsigned char)r.out[i];

		cr_assert(c != 0x1b && c != 0x07 && (c >= 0x20 || c == '\n'),
			  "byte 0x%02x at %zu of hutch ps:\n%s", c, i, r.out);
		rows += c == '\n';
	}
	cr_assert_eq(rows, listed + 1, "hutch ps rows:\n%s", r.out);
	cr_assert(strstr(r.out, "\\x1b]0;pwned"), "pE not shown escaped:\n%s",
		  r.out);
	it_result_free(&r);
}

/* Empty junk directories in /.hutch/proc (cheap for the session to
 * make) must not hide real background processes from `hutch ps`. */
IT_TEST(proclist, junk_entries_do_not_hide_real_processes)
{
	const char *s = it_session();
	it_result r;
	int shown = 0;

	/* One mkdir for all: 6000 of them took over a minute of the
	 * command's 90 s under the sanitizers. */
	r = it_hutch("sh", s, "cd /.hutch/proc && mkdir j$(seq -s ' j' 0 5999)",
		     NULL);
	IT_ASSERT_EXIT(r, 0, "junk");
	it_result_free(&r);
	for (int i = 0; i < 8; i++) {
		r = it_hutch("exec", s, "-d", "--", "sleep", "600", NULL);
		IT_ASSERT_EXIT(r, 0, "exec -d");
		it_result_free(&r);
	}
	r = it_hutch("ps", s, NULL);
	IT_ASSERT_EXIT(r, 0, "ps");
	for (const char *p = r.out; (p = strstr(p, "sleep 600")); p++)
		shown++;
	cr_assert_eq(shown, 8, "hutch ps shows %d of 8 processes:\n%s", shown,
		     r.out);
	it_result_free(&r);
}
