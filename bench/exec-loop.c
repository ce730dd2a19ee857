/*
 * exec-loop - N warm runs of `true` in one session, in one process
 *
 * What hutch_exec_run costs a library caller once the session runs, on
 * whichever path the runs take: run it with HUTCH_FAST_PATH=0 and without
 * to compare the engine's exec with the agent's channel.
 *
 *   bench/exec-loop unix:///var/run/docker.sock SESSION [N]
 *
 * One run first (which may make the session) is not counted.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <hutch/hutch.h>

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	static const char *const cmd[] = { "true" };
	hutch_engine *e = NULL;
	hutch_session *s = NULL;
	hutch_error *err = NULL;
	int n = argc > 3 ? atoi(argv[3]) : 200, agent = 0, rc = 1;
	double t0 = 0;

	if (argc < 3 || n <= 0) {
		fprintf(stderr, "usage: exec-loop ENGINE_URL SESSION [N]\n");
		return 2;
	}
	if (hutch_engine_open(&e, argv[1], &err) < 0 ||
	    hutch_session_open(&s, e, argv[2], NULL, &err) < 0)
		goto out;
	for (int i = -1; i < n; i++) {
		hutch_exec_options o = HUTCH_EXEC_OPTIONS_INIT;
		hutch_exec_result *r = NULL;

		if (i == 0)
			t0 = now();
		o.argv = cmd;
		o.argc = 1;
		if (hutch_exec_run(&r, s, &o, &err) < 0)
			goto out;
		if (hutch_exec_result_exit_code(r) != 0) {
			fprintf(stderr, "run %d: exit %d\n", i,
				hutch_exec_result_exit_code(r));
			hutch_exec_result_free(r);
			goto out;
		}
		if (i >= 0 && strcmp(hutch_exec_result_path(r), "agent") == 0)
			agent++;
		hutch_exec_result_free(r);
	}
	printf("%d runs of true: %.3f s, %.2f ms each, %d on the agent's "
	       "channel\n",
	       n, now() - t0, (now() - t0) * 1000 / n, agent);
	rc = 0;
out:
	if (err)
		fprintf(stderr, "exec-loop: %s\n", hutch_error_message(err));
	hutch_error_free(err);
	hutch_session_free(s);
	hutch_engine_free(e);
	return rc;
}
