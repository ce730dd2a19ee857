/*
 * test_procdir.c - background processes' entries are the session's to
 * forge (doc/agent-protocol.md, "Background processes")
 *
 * /.hutch/proc is world-writable (sticky, as /tmp) and an entry belongs to
 * the user who spawned it, so whatever runs in the session can put
 * anything there: fake entries, a log that is a symlink to a file it
 * wants read (or to /etc/shadow), a FIFO where the readers expect a
 * file, a huge log, junk names, invalid UTF-8.  The agent's readers ("ps",
 * "logs", "wait", "kill") must never follow the link, never block, stay
 * bounded and always answer one valid JSON object; a real background
 * process next to the junk must still be listed and read correctly.
 */
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "hostile.h"

#define AGENT "/.hutch/hutch-agent"

/* The forgeries.  "pL": its log is a symlink to /etc/passwd (readable,
 * so that a reader following it would show "root:"), its end record a
 * symlink to /etc/shadow, its argv invalid UTF-8 and control bytes.  "pF":
 * every file a FIFO.  "pH": a 20 MB log of random bytes, with a header
 * that claims a record.  "pS": the entry itself a symlink to /etc.
 * "pM": meta pointing at PID 1 as a supervisor.  And 300 junk entries. */
static const char forge[] =
	"set -e; P=/.hutch/proc; "
	"mkdir $P/pL; printf 'pid 1\\nsup 1 1\\nuid 0\\nstarted 5\\n' > "
	"$P/pL/meta; "
	"printf 'a\\377\\376b\\033[31m\\001\\0x\\0' > $P/pL/argv; "
	"ln -s /etc/passwd $P/pL/log.0000000000000000; "
	"ln -s /etc/shadow $P/pL/end; "
	"mkdir $P/pF; for f in meta argv end log.0000000000000000; do "
	"mkfifo $P/pF/$f; done; "
	"mkdir $P/pH; printf 'pid 7\\nsup 7 7\\nuid 0\\nstarted 6\\n' > "
	"$P/pH/meta; "
	"{ printf '1\\377\\377\\000\\000'; head -c 20000000 /dev/urandom; } > "
	"$P/pH/log.0000000000000000; "
	"{ printf '1\\005\\000\\000\\000\\377\\376abc'; } > "
	"$P/pH/log.00000000000000ff; "
	"ln -s /etc $P/pS; "
	"mkdir $P/pM; printf 'pid 1\\nsup 1 0\\nuid 0\\nstarted 7\\n' > "
	"$P/pM/meta; "
	"i=0; while [ $i -lt 300 ]; do mkdir $P/junk$i; "
	"printf 'pid x\\n' > $P/junk$i/meta; i=$((i+1)); done; "
	"echo forged";

static json_object *agent_json5(const char *s, const char *a1, const char *a2,
				const char *a3, const char *a4, const char *a5,
				int want)
{
	it_result r =
		it_hutch("exec", s, "--", AGENT, a1, a2, a3, a4, a5, NULL);
	json_object *j;

	IT_ASSERT_EXIT(r, want, a1);
	/* One valid JSON document (it_json checks UTF-8 too), bounded. */
	cr_assert(r.out_len < (8u << 20), "%s answered %zu bytes", a1,
		  r.out_len);
	cr_assert(!strstr(r.out, "root:"), "%s showed /etc/passwd: %.300s", a1,
		  r.out);
	j = it_json(r.out, r.out_len);
	it_result_free(&r);
	return j;
}

static json_object *agent_json(const char *s, const char *a1, const char *a2,
			       const char *a3, const char *a4, int want)
{
	return agent_json5(s, a1, a2, a3, a4, NULL, want);
}

static json_object *find_entry(json_object *ps, const char *id)
{
	json_object *list = it_json_get(ps, "processes");

	for (size_t i = 0; i < json_object_array_length(list); i++) {
		json_object *e = json_object_array_get_idx(list, i);

		if (!strcmp(json_object_get_string(it_json_get(e, "id")), id))
			return e;
	}
	return NULL;
}

IT_TEST(procdir, forged_entries_stay_bounded_and_valid)
{
	const char *s = it_session();
	json_object *j, *e;
	it_result r;

	r = it_hutch("exec", s, "--", AGENT, "spawn", "--id", "preal", "--",
		     "sh", "-c", "echo real-out; echo real-err >&2", NULL);
	IT_ASSERT_EXIT(r, 0, "spawn");
	it_result_free(&r);
	r = it_hutch("sh", s, forge, NULL);
	IT_ASSERT_EXIT(r, 0, "forging entries");
	it_result_free(&r);

	j = agent_json(s, "ps", NULL, NULL, NULL, 0);
	/* The forged entry with a meta is listed as what it says, its argv
	 * repaired; the FIFO, the symlinked entry and the junk are not. */
	e = find_entry(j, "pL");
	cr_assert(e, "pL not listed");
	cr_assert_str_eq(json_object_get_string(it_json_get(e, "state")),
			 "lost");
	cr_assert_eq(json_object_get_int64(it_json_get(e, "output_bytes")), 0,
		     "the symlinked log was read");
	cr_assert(!find_entry(j, "pF"), "the FIFO entry was listed");
	cr_assert(!find_entry(j, "pS"), "the symlinked entry was followed");
	cr_assert(find_entry(j, "preal"), "the real process is not listed");
	json_object_put(j);

	j = agent_json(s, "logs", "pL", "--json", NULL, 0);
	cr_assert_str_eq(json_object_get_string(it_json_get(j, "stdout")), "");
	json_object_put(j);
	/* A FIFO is neither read nor waited on: an answer, at once. */
	r = it_hutch("exec", s, "--", AGENT, "logs", "pF", "--json", NULL);
	IT_ASSERT_EXIT(r, 0, "logs of the FIFO entry");
	json_object_put(it_json(r.out, r.out_len));
	it_result_free(&r);
	r = it_hutch("exec", s, "--", AGENT, "logs", "pF", NULL);
	IT_ASSERT_EXIT(r, 0, "plain logs of the FIFO entry");
	cr_assert_eq(r.out_len, 0);
	it_result_free(&r);
	/* The huge log: --max bounds the answer; the bad record ends it. */
	j = agent_json5(s, "logs", "pH", "--json", "--max", "1048576", 0);
	cr_assert((size_t)json_object_get_string_len(
			  it_json_get(j, "stdout")) <= 3 * 1048576,
		  "over --max");
	json_object_put(j);
	j = agent_json(s, "logs", "pH", "--json", NULL, 0);
	cr_assert((size_t)json_object_get_string_len(it_json_get(j, "stdout")) <
			  (2u << 20),
		  "an unbounded answer");
	json_object_put(j);
	r = it_hutch("exec", s, "--", AGENT, "logs", "pS", NULL);
	IT_ASSERT_EXIT(r, 3, "logs of the symlinked entry");
	it_result_free(&r);

	/* wait and kill on forgeries end at once, and harm nothing. */
	j = agent_json(s, "wait", "pM", NULL, NULL, 0);
	cr_assert_str_eq(json_object_get_string(it_json_get(j, "state")),
			 "lost");
	json_object_put(j);
	r = it_hutch("exec", s, "--", AGENT, "kill", "pM", NULL);
	IT_ASSERT_EXIT(r, 0, "kill of a forged entry (nothing to kill)");
	it_result_free(&r);
	cr_assert_eq(it_container_running(s), 1, "the session went down");

	/* The real one reads as it was written. */
	j = agent_json(s, "wait", "preal", NULL, NULL, 0);
	cr_assert_str_eq(json_object_get_string(it_json_get(j, "state")),
			 "exited");
	json_object_put(j);
	j = agent_json(s, "logs", "preal", "--json", NULL, 0);
	cr_assert_str_eq(json_object_get_string(it_json_get(j, "stdout")),
			 "real-out\n");
	cr_assert_str_eq(json_object_get_string(it_json_get(j, "stderr")),
			 "real-err\n");
	json_object_put(j);
}

/* A spawned tree cannot stop its supervisor, and kill finds all of it. */
IT_TEST(procdir, spawned_tree_cannot_kill_its_supervisor)
{
	const char *s = it_session();
	json_object *j;
	it_result r;

	r = it_hutch("exec", s, "--", AGENT, "spawn", "--id", "pk", "--", "sh",
		     "-c",
		     "sup=$(cut -d' ' -f4 /proc/$$/stat); "
		     "kill -9 $sup 2>/dev/null; kill -9 -$sup 2>/dev/null; "
		     "kill -9 -1 2>/dev/null; "
		     "echo tried; (sleep 300 & sleep 300) & sleep 300",
		     NULL);
	IT_ASSERT_EXIT(r, 0, "spawn");
	it_result_free(&r);
	r = it_hutch("sh", s,
		     "until grep -q tried /.hutch/proc/pk/log.*; do "
		     "sleep 0.05; done; echo seen",
		     NULL);
	IT_ASSERT_EXIT(r, 0, "the attack ran");
	it_result_free(&r);
	j = agent_json(s, "ps", NULL, NULL, NULL, 0);
	cr_assert_str_eq(json_object_get_string(
				 it_json_get(find_entry(j, "pk"), "state")),
			 "running", "the supervisor was killed by its command");
	json_object_put(j);
	r = it_hutch("exec", s, "--", AGENT, "kill", "pk", NULL);
	IT_ASSERT_EXIT(r, 0, "kill pk");
	it_result_free(&r);
	j = agent_json(s, "wait", "pk", NULL, NULL, 0);
	cr_assert_str_eq(json_object_get_string(it_json_get(j, "state")),
			 "killed");
	cr_assert_eq(json_object_get_int(it_json_get(j, "signal")), 9);
	json_object_put(j);
	r = it_hutch("sh", s,
		     "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline "
		     "2>/dev/null; echo; done | grep -c '^sleep 300' || true",
		     NULL);
	IT_ASSERT_EXIT(r, 0, "ps");
	cr_assert_str_eq(r.out, "0\n", "left running after kill");
	it_result_free(&r);
}
