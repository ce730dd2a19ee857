/*
 * hostile.h - what the attacker's tests share (tests/hostile)
 */
#ifndef HUTCH_HOSTILE_H
#define HUTCH_HOSTILE_H

#include "harness.h"

#ifndef HOSTILE_TOOLS
#error "HOSTILE_TOOLS must name the directory of the built attacker's tools"
#endif

/* Run a shell command on the host; the test fails unless it exits 0. */
void hostile_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Copy the static tool NAME (tests/hostile/tools/NAME.c, built by make
 * check) to DIR/NAME on the host, executable by anyone. */
void hostile_install_tool(const char *name, const char *dir);

/*
 * Held while a racer spins: the suite's races take turns.  A racer keeps
 * a CPU busy, and two at once on a two-core machine starve everything
 * else, the calls raced against and the racers' own execs included (one
 * ran into its 120 s timeout in CI).  One lock per test program (its
 * runner's pid): the programs make runs side by side race as before.
 */
int hostile_race_begin(void);
void hostile_race_end(int lock);

/*
 * How long hostile_race_begin() waits for the lock at most (seconds): the
 * longest the other racing tests of one program hold it between them.
 * A racing test's time limit is its own work's plus this, or the wait
 * for its turn would count against its own work (a test timed out in CI
 * while it only waited).
 */
#define HOSTILE_RACE_WAIT 300.0

/* A test that races (takes hostile_race_begin's lock): IT_TEST with a
 * limit of `own` seconds for its own work, plus its wait for the lock. */
#define HOSTILE_RACE_TEST(suite, name, own)         \
	static void it_body_##suite##_##name(void); \
	Test(suite, name, .fini = it_fini,          \
	     .timeout = (own) + HOSTILE_RACE_WAIT)  \
	{                                           \
		it_begin();                         \
		it_body_##suite##_##name();         \
		it_finish();                        \
	}                                           \
	static void it_body_##suite##_##name(void)

#endif
