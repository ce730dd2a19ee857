/*
 * harness.h - helpers of hutch's integration tests
 *
 * The tests run the real hutch CLI (HUTCH_BIN) against the real engine
 * named by HUTCH_TEST_ENGINE ("unix:///path" or "tcp://host:port") and
 * reach the engine directly, with libcurl, for whatever must happen from
 * outside hutch: killing, stopping or removing a session's container and
 * counting what carries a session's label.
 *
 * Every test is declared with IT_TEST, which
 *   - fails the test when HUTCH_TEST_ENGINE is unset (never skips),
 *   - after the body, removes every session the test made (it_session())
 *     and asserts that no container or volume of them is left,
 *   - removes them again, best effort, when the body failed half-way.
 * Session names are "it-RUNNER-WORKER-N": RUNNER is the pid of the
 * Criterion runner (the parent of the test workers), so one run's sessions
 * share a prefix (it_run_prefix()) and parallel workers and parallel runs
 * never clash.
 */
#ifndef HUTCH_IT_HARNESS_H
#define HUTCH_IT_HARNESS_H

#include <stddef.h>
#include <sys/types.h>
#include <json-c/json.h>
#include <criterion/criterion.h>

#ifndef HUTCH_BIN
#error "HUTCH_BIN must name the hutch binary under test"
#endif

/* Bound of one test (seconds); a hung test fails instead of hanging. */
#define IT_TEST_TIMEOUT 150.0
/* Default bound of one hutch run (seconds); past it the child is killed
 * and the result says timed_out. */
#define IT_RUN_LIMIT 90.0

void it_begin(void);
void it_finish(void);
void it_fini(void);

#define IT_TEST(suite, name, ...)                                      \
	static void it_body_##suite##_##name(void);                    \
	Test(suite, name, .fini = it_fini, .timeout = IT_TEST_TIMEOUT, \
	     ##__VA_ARGS__)                                            \
	{                                                              \
		it_begin();                                            \
		it_body_##suite##_##name();                            \
		it_finish();                                           \
	}                                                              \
	static void it_body_##suite##_##name(void)

/* ---- environment ----------------------------------------------------- */

/* HUTCH_TEST_ENGINE; the calling test fails when it is unset. */
const char *it_engine(void);
/* HUTCH_TEST_ENGINE_NAME ("docker", "podman") or "engine". */
const char *it_engine_name(void);
/* "it-RUNNER-": the prefix of every session name of this run. */
const char *it_run_prefix(void);

/* A new unique session name, registered for removal at the end of the
 * test.  Static storage owned by the harness; valid for the whole test. */
const char *it_session(void);

/* ---- running hutch ------------------------------------------------- */

typedef struct {
	double t;   /* seconds since the process was started */
	size_t end; /* stdout length after this chunk */
} it_chunk;

typedef struct {
	int status; /* exit status; 128+N when killed by signal N */
	int signaled;
	int timed_out; /* the harness killed it at its limit */
	char *out;     /* stdout, NUL-terminated, may hold NUL bytes */
	size_t out_len;
	char *err; /* stderr, NUL-terminated */
	size_t err_len;
	double wall;	  /* seconds from start to exit */
	it_chunk *chunks; /* stdout arrivals (only when asked for) */
	size_t nchunks;
} it_result;

typedef struct {
	int no_engine;	 /* do not add "--engine $HUTCH_TEST_ENGINE" */
	int record;	 /* record when each stdout chunk arrived */
	double limit;	 /* seconds; 0: IT_RUN_LIMIT */
	const int *gate; /* a pipe: when set, the child waits until its write
			     end is closed everywhere before it runs hutch, so
			     several children can be let go at once */
	int in_fd;	 /* > 0: the child's stdin (the caller keeps and
			    closes it); 0: /dev/null */
} it_opts;

typedef struct {
	pid_t pid;
	int out_fd, err_fd;
	double t0;
	it_opts o;
} it_proc;

/* The program HUTCH_BIN runs (libtool's wrapper skipped); `*libdir` is
 * set when LD_LIBRARY_PATH must name it. */
const char *it_hutch_program(const char **libdir);
/* Start `HUTCH_BIN [--engine URL] args...` (args NULL-terminated) with
 * stdin on /dev/null and stdout/stderr on pipes. */
void it_spawn(it_proc *p, const it_opts *o, const char *const *args);
/* Read both pipes to their end (poll, no deadlock whatever the volume),
 * reap the process.  `p` is spent afterwards. */
it_result it_wait(it_proc *p);

it_result it_hutch_v(const it_opts *o, const char *const *args);
/* it_hutch("exec", s, "--", "true", NULL) */
it_result it_hutch(const char *arg, ...) __attribute__((sentinel));
it_result it_hutch_o(const it_opts *o, const char *arg, ...)
	__attribute__((sentinel));
void it_result_free(it_result *r);

/* Assert a run exited with `code`; show its output when it did not. */
#define IT_ASSERT_EXIT(r, code, what)                                          \
	cr_assert(!(r).timed_out && (r).status == (code),                      \
		  "%s: exit %d%s (want %d)\n--- stdout (%zu bytes):\n%.600s\n" \
		  "--- stderr:\n%.2000s",                                      \
		  (what), (r).status, (r).timed_out ? " (hung: killed)" : "",  \
		  (code), (r).out_len, (r).out, (r).err)

/* Number of '\n' in s[0..len). */
size_t it_count_lines(const char *s, size_t len);

/* Parse a whole document strictly (trailing whitespace allowed, UTF-8
 * validated); the test fails when it is not valid JSON.  Caller puts. */
json_object *it_json(const char *s, size_t len);
/* Member of an object, asserting it is there (NULL values allowed). */
json_object *it_json_get(json_object *o, const char *key);

/* ---- the engine, from outside hutch ---------------------------------- */

/* One request to the engine: returns the HTTP status (the test fails on a
 * transport error).  `resp`/`resp_len` may be NULL; *resp is malloc'ed. */
long it_api(const char *method, const char *path, char **resp,
	    size_t *resp_len);
/* The same with a JSON request body (NULL: none). */
long it_api_json(const char *method, const char *path, const char *json,
		 char **resp, size_t *resp_len);

/* POST /containers/hutch-S/kill, then wait until it no longer runs. */
void it_container_kill(const char *session);
/* POST /containers/hutch-S/stop?t=1 (waits by itself). */
void it_container_stop(const char *session);
/* DELETE /containers/hutch-S?force=1, then wait until it is gone. */
void it_container_remove(const char *session);
/* Best effort: `hutch rm --force S`, then the raw API removes whatever of
 * hutch-S is left (container, volume). */
void it_force_remove(const char *session);
/* 1 running, 0 exists but does not run, -1 absent. */
int it_container_running(const char *session);
/* The container's Id, malloc'ed, or NULL when there is none. */
char *it_container_id(const char *session);
/* Containers (all states) / volumes with label dev.hutch.session=S. */
int it_count_containers(const char *session);
int it_count_volumes(const char *session);
/* Processes of the session's container but the agent's own (PID 1 and
 * the channel's handlers it keeps, which show PID 1's command line), as
 * the engine's top lists them: counted from outside, as a full pids
 * limit leaves no room for a command inside.  Podman may answer an empty
 * body while a process vanishes under it (a fork bomb): asked again, up
 * to 20 times. */
size_t it_count_processes(const char *session);
/* Names (without '/') of every container / volume on the engine, as a
 * JSON array of strings; also label values of dev.hutch.session. */
json_object *it_all_names(void);

/* Wait until no other test of this run is running (their marker files are
 * gone or their processes died).  Returns how many still run when `limit`
 * seconds passed. */
int it_wait_other_tests(double limit);
/* The calling test is not one the others wait for (the last suite's
 * leftover check, which itself waits for all of them). */
void it_not_waited_for(void);

void it_sleep(double seconds);
double it_now(void);

#endif
