/*
 * exec-loop - hutch's own in-process floor: hutch_exec_run of a command
 * in a loop, on one engine and session handle, as a harness linking
 * libhutch would.  The benchmark sets it beside raw-floor (the engine's
 * exec with nothing around it) with the fast path on and off
 * (HUTCH_FAST_PATH=0).
 *
 *   exec-loop ENGINE_URL SESSION ITERATIONS [CMD...]
 *
 * One warm-up run first (it may create the session), then ITERATIONS
 * runs of CMD (default `true`), output read and dropped.  Prints the mean
 * milliseconds per exec and the path the last one took ("agent" or
 * "engine").  Any run that fails or exits non-zero stops it with status 1.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <hutch/hutch.h>

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int run_one(hutch_session *s, const char *const *argv, size_t argc,
		   char *path, size_t pathsz)
{
	hutch_exec_options o = HUTCH_EXEC_OPTIONS_INIT;
	hutch_exec_result *res = NULL;
	hutch_error *err = NULL;
	int rc;

	o.argv = argv;
	o.argc = argc;
	rc = hutch_exec_run(&res, s, &o, &err);
	if (rc < 0) {
		fprintf(stderr, "exec-loop: %s\n", hutch_error_message(err));
		hutch_error_free(err);
		return -1;
	}
	if (hutch_exec_result_status(res) != HUTCH_EXEC_OK ||
	    hutch_exec_result_exit_code(res) != 0) {
		fprintf(stderr, "exec-loop: %s, exit %d\n",
			hutch_exec_status_name(hutch_exec_result_status(res)),
			hutch_exec_result_exit_code(res));
		hutch_exec_result_free(res);
		return -1;
	}
	snprintf(path, pathsz, "%s", hutch_exec_result_path(res));
	hutch_exec_result_free(res);
	return 0;
}

int main(int argc, char **argv)
{
	static const char *const dflt[] = { "true" };
	const char *const *cmd = dflt;
	size_t cmdc = 1;
	hutch_engine *e = NULL;
	hutch_session *s = NULL;
	hutch_error *err = NULL;
	char path[16] = "";
	long n;
	double t0;

	if (argc < 4 || (n = strtol(argv[3], NULL, 10)) < 1) {
		fprintf(stderr,
			"usage: exec-loop ENGINE_URL SESSION ITERATIONS [CMD...]\n");
		return 2;
	}
	if (argc > 4) {
		cmd = (const char *const *)argv + 4;
		cmdc = (size_t)argc - 4;
	}
	if (hutch_engine_open(&e, argv[1], &err) < 0 ||
	    hutch_session_open(&s, e, argv[2], NULL, &err) < 0) {
		fprintf(stderr, "exec-loop: %s\n", hutch_error_message(err));
		return 1;
	}
	if (run_one(s, cmd, cmdc, path, sizeof(path)) < 0)
		return 1;
	t0 = now_ms();
	for (long i = 0; i < n; i++)
		if (run_one(s, cmd, cmdc, path, sizeof(path)) < 0)
			return 1;
	printf("%.3f %s\n", (now_ms() - t0) / (double)n, path);
	hutch_session_free(s);
	hutch_engine_free(e);
	return 0;
}
