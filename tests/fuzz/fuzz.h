/*
 * fuzz.h - one source per fuzz target, two ways to build it
 *
 * contrib/fuzz.sh builds each target alone with clang and libFuzzer
 * (-fsanitize=fuzzer,address,undefined): FUZZ_TARGET is then
 * LLVMFuzzerTestOneInput.  `make check` builds every target into one
 * replay program with the ordinary compiler (HUTCH_FUZZ_REPLAY): each
 * target becomes hutch_fuzz_NAME and replay.c feeds it every file of
 * tests/fuzz/corpus/NAME/, so what fuzzing found stays tested.
 *
 * Targets check their invariants with FUZZ_CHECK, which aborts: a crash
 * for libFuzzer, a failed test for the replay.
 */
#ifndef HUTCH_FUZZ_H
#define HUTCH_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define FUZZ_CHECK(cond)                                                       \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, \
				__LINE__, #cond);                              \
			abort();                                               \
		}                                                              \
	} while (0)

#ifdef HUTCH_FUZZ_REPLAY
#define FUZZ_TARGET(name)                                        \
	int hutch_fuzz_##name(const uint8_t *data, size_t size); \
	int hutch_fuzz_##name(const uint8_t *data, size_t size)
/* Once before the first input; 0 or -1. */
#define FUZZ_INIT(name)                   \
	int hutch_fuzz_init_##name(void); \
	int hutch_fuzz_init_##name(void)
#else
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);
#define FUZZ_TARGET(name) \
	int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
#define FUZZ_INIT(name)                                   \
	static int fuzz_init(void);                       \
	int LLVMFuzzerInitialize(int *argc, char ***argv) \
	{                                                 \
		(void)argc;                               \
		(void)argv;                               \
		if (fuzz_init() < 0)                      \
			abort();                          \
		return 0;                                 \
	}                                                 \
	static int fuzz_init(void)
#endif

#endif
