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

#endif
