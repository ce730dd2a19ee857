/*
 * test_chan.c - the agent's channel (the fast path) answers to hutch only,
 * and hutch talks to nothing else through it (doc/threat-model.md, "the
 * agent's channel")
 *
 * PID 1 serves HUTCH_CHAN_PATH on the session's system volume, and hutch
 * reaches it through the volume's mount point on the host.  The directory
 * is writable by the session's user, so a command can remove the socket
 * and put anything in its place.  The attacks:
 *
 *   1. the name swapped for a symlink to a host socket, a FIFO, a file, a
 *      directory, a symlink to "/": hutch must not follow or open any of
 *      them (a connection to the host's socket would be a host path
 *      touched on the sandbox's say), and the command still runs, on the
 *      engine's exec;
 *   2. a command listening in the agent's place, answering with a HELLO
 *      that looks right: hutch must send it nothing (a request carries
 *      the command's secrets), and run the command on the engine's exec;
 *      the same for one that never accepts (a connect that would wait);
 *   3. a command connecting to the agent's socket to have PID 1 run
 *      something outside its own tree: the agent must close at once,
 *      unread, as the session's user and as root;
 *   4. a command reading the request of another command that runs on the
 *      channel, with its secret: nothing of the secret in any process's
 *      environment or command line.
 *
 * Each test first checks that a command really took the channel ("path":
 * "agent"), so none of them passes for want of a fast path.  With
 * HUTCH_FAST_PATH=0 (the *-engine-path runs) there is no channel to
 * attack, and the tests say so and only check that nothing ran there.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "hostile.h"

#define SECRET "chan-secret-4f1d9a7c0e"
/* A pattern matching SECRET that does not hold it: a scan whose own
 * command line (and its agent's) holds the pattern must not find itself. */
#define SECRET_RE "chan-secret-4f1d9a7c0[e]"

static int fast_path_off(void)
{
	const char *v = getenv("HUTCH_FAST_PATH");

	return v && strcmp(v, "0") == 0;
}

/* A directory for the session's workspace, holding the tool, given to
 * the session's user (`owner`: 1000, or 0 for root), who writes the
 * tool's logs there. */
static void workspace(char *dir, size_t dirsz, unsigned int owner)
{
	snprintf(dir, dirsz, "/tmp/hutch-hostile-chan-%ld-XXXXXX",
		 (long)getppid());
	cr_assert_not_null(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
	cr_assert_eq(chmod(dir, 0755), 0);
	cr_assert_eq(chown(dir, owner, owner), 0, "chown: %s", strerror(errno));
	hostile_install_tool("chanfake", dir);
}

static void remove_dir(const char *dir)
{
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_expect_eq(system(cmd), 0);
}

static void up(const char *s, const char *dir, const char *user)
{
	const char *args[8] = { "up", s };
	size_t n = 2;
	it_result r;

	if (dir) {
		args[n++] = "--workspace";
		args[n++] = dir;
	}
	if (user) {
		args[n++] = "--user";
		args[n++] = user;
	}
	args[n] = NULL;
	r = it_hutch_v(NULL, args);
	IT_ASSERT_EXIT(r, 0, "hutch up");
	it_result_free(&r);
}

/* `exec S --json -- echo ok`: it must run and print ok; the path it took
 * ("agent" or "engine") is copied into `path`. */
static void exec_ok(const char *s, char *path, size_t pathsz)
{
	it_result r = it_hutch("exec", s, "--json", "--", "echo", "ok", NULL);
	json_object *o, *p, *out;

	IT_ASSERT_EXIT(r, 0, "exec --json echo ok");
	o = it_json(r.out, r.out_len);
	out = it_json_get(o, "stdout");
	p = it_json_get(o, "path");
	cr_assert(out && strcmp(json_object_get_string(out), "ok\n") == 0,
		  "exec echo ok printed something else: %s", r.out);
	cr_assert_not_null(p, "no \"path\" in %s", r.out);
	snprintf(path, pathsz, "%s", json_object_get_string(p));
	json_object_put(o);
	it_result_free(&r);
}

/* Before the attack: the session's commands take the channel (or, with
 * it switched off, the engine). */
static void expect_channel(const char *s)
{
	char path[16];

	exec_ok(s, path, sizeof(path));
	cr_assert_str_eq(path, fast_path_off() ? "engine" : "agent",
			 "the command took the %s path", path);
}

/*
 * `exec -d` of an attacker through the engine's exec.  A command is kept
 * from signalling the handler that started it (confine.c), and a handler
 * is kept for later commands (chan.c): an attacker started on the
 * channel could not touch the handler that will serve the next commands,
 * its own, and a test of what it does to handlers would find none.  One
 * that the engine started (its parent outside the container) is confined
 * against no handler: it can reach every one, as any other process of
 * the session can reach those it did not come from.
 */
static void start_attacker(const char *s, const char *script)
{
	const char *was = getenv("HUTCH_FAST_PATH");
	char *keep = was ? strdup(was) : NULL;
	it_result r;

	setenv("HUTCH_FAST_PATH", "0", 1);
	r = it_hutch("exec", s, "-d", "--", "sh", "-c", script, NULL);
	if (keep)
		setenv("HUTCH_FAST_PATH", keep, 1);
	else
		unsetenv("HUTCH_FAST_PATH");
	free(keep);
	IT_ASSERT_EXIT(r, 0, "start the attacker");
	it_result_free(&r);
}

static it_result sh(const char *s, const char *script)
{
	return it_hutch("exec", s, "--", "sh", "-c", script, NULL);
}

static void sh_ok(const char *s, const char *script)
{
	it_result r = sh(s, script);

	IT_ASSERT_EXIT(r, 0, script);
	it_result_free(&r);
}

/* A host socket, listening, for the sandbox to point a symlink at. */
static int bait(char *path, size_t pathsz)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	snprintf(path, pathsz, "/tmp/hutch-hostile-bait-%ld-%ld.sock",
		 (long)getppid(), (long)getpid());
	unlink(path);
	cr_assert_lt(strlen(path), sizeof(sa.sun_path));
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	cr_assert_geq(fd, 0);
	cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0, "%s",
		     strerror(errno));
	cr_assert_eq(chmod(path, 0666), 0);
	cr_assert_eq(listen(fd, 16), 0);
	return fd;
}

/* 1. Whatever the name is swapped for, hutch neither follows nor opens it:
 * the host socket a symlink names gets no connection, and each command
 * still runs, on the engine's exec. */
IT_TEST(chan, a_swapped_socket_name_is_not_followed)
{
	const char *s = it_session();
	char bpath[128], script[512], path[16];
	it_result r;
	const char *swaps[] = {
		"ln -s BAIT /.hutch/chan/agent.sock",
		"mkfifo /.hutch/chan/agent.sock",
		"echo x > /.hutch/chan/agent.sock",
		"mkdir /.hutch/chan/agent.sock",
		"ln -s / /.hutch/chan/agent.sock",
		"ln -s /proc/self/fd/0 /.hutch/chan/agent.sock",
	};
	int b = bait(bpath, sizeof(bpath));

	up(s, NULL, NULL);
	expect_channel(s);
	for (size_t i = 0; i < sizeof(swaps) / sizeof(swaps[0]); i++) {
		char swap[256];
		const char *bait_at = strstr(swaps[i], "BAIT");

		/* The host socket's path in place of BAIT. */
		if (bait_at)
			snprintf(swap, sizeof(swap), "%.*s%s%s",
				 (int)(bait_at - swaps[i]), swaps[i], bpath,
				 bait_at + 4);
		else
			snprintf(swap, sizeof(swap), "%s", swaps[i]);
		snprintf(script, sizeof(script),
			 "rm -rf /.hutch/chan/agent.sock && %s", swap);
		sh_ok(s, script);
		exec_ok(s, path, sizeof(path));
		cr_assert_str_eq(path, "engine",
				 "after '%s' a command took the %s path", swap,
				 path);
		/* Nothing came to the host socket the symlink named. */
		cr_assert_lt(accept4(b, NULL, NULL, SOCK_CLOEXEC), 0,
			     "hutch connected to the host socket '%s' "
			     "through the sandbox's symlink",
			     bpath);
		cr_assert(errno == EAGAIN || errno == EWOULDBLOCK, "%s",
			  strerror(errno));
	}
	/* Nor can the directory itself be swapped: /.hutch is not the
	 * session's to write. */
	r = sh(s, "mv /.hutch/chan /.hutch/chan2 || ln -s / /.hutch/chan2; "
		  "test -d /.hutch/chan && test ! -L /.hutch/chan");
	IT_ASSERT_EXIT(r, 0, "the channel's directory moved");
	it_result_free(&r);
	close(b);
	unlink(bpath);
}

/* Read a host file of the workspace; "" when it is not there. */
static char *slurp(const char *dir, const char *name, size_t *len)
{
	char p[PATH_MAX];
	FILE *f;
	char *buf = calloc(1, 1 << 20);

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	cr_assert_not_null(buf);
	*len = 0;
	f = fopen(p, "rb");
	if (f) {
		*len = fread(buf, 1, (1 << 20) - 1, f);
		fclose(f);
	}
	return buf;
}

/* Start the impostor in the background and wait for it to listen. */
static void start_impostor(const char *s, const char *mode)
{
	char script[512];
	it_result r;

	snprintf(script, sizeof(script),
		 "/workspace/chanfake listen /.hutch/chan/agent.sock "
		 "/workspace/log %s",
		 mode);
	r = it_hutch("exec", s, "-d", "--", "sh", "-c", script, NULL);
	IT_ASSERT_EXIT(r, 0, "start the impostor");
	it_result_free(&r);
	for (int i = 0; i < 100; i++) {
		r = sh(s, "test -e /workspace/log");
		if (r.status == 0) {
			it_result_free(&r);
			return;
		}
		it_result_free(&r);
		it_sleep(0.1);
	}
	cr_assert_fail("the impostor did not start listening");
}

/* 2. A command in the agent's place: hutch connects (the socket is there)
 * but finds the peer is not the container's PID 1, and sends it nothing:
 * not the request, not the secret in it. */
IT_TEST(chan, an_impostor_gets_no_request)
{
	const char *s = it_session();
	char dir[PATH_MAX], path[16];
	size_t len, acc_len;
	char *log, *acc;
	it_result r;

	workspace(dir, sizeof(dir), 1000);
	up(s, dir, NULL);
	expect_channel(s);
	start_impostor(s, "");
	setenv("IT_CHAN_TOKEN", SECRET, 1);
	r = it_hutch("exec", s, "--json", "--secret", "IT_CHAN_TOKEN", "--",
		     "sh", "-c", "echo \"${#IT_CHAN_TOKEN}\"", NULL);
	IT_ASSERT_EXIT(r, 0, "a command with a secret beside the impostor");
	cr_assert(strstr(r.out, "\"path\":\"engine\""),
		  "the command did not fall back to the engine: %s", r.out);
	cr_assert(strstr(r.out, "\"stdout\":\"22\\n\""), "%s", r.out);
	it_result_free(&r);
	exec_ok(s, path, sizeof(path));
	cr_assert_str_eq(path, "engine");
	log = slurp(dir, "log", &len);
	acc = slurp(dir, "log.acc", &acc_len);
	if (!fast_path_off())
		/* Not vacuous: hutch did reach the impostor... */
		cr_assert(strstr(acc, "accepted"),
			  "hutch never connected to the impostor");
	/* ...and sent it not one byte. */
	cr_assert_eq(len, 0,
		     "the impostor received %zu bytes from hutch: %.200s", len,
		     log);
	cr_assert_null(memmem(log, len, SECRET, sizeof(SECRET) - 1));
	free(log);
	free(acc);
	remove_dir(dir);
}

/* 2b. One that listens and never accepts: hutch does not wait on it. */
IT_TEST(chan, an_impostor_that_never_accepts_holds_nothing_up)
{
	const char *s = it_session();
	char dir[PATH_MAX], path[16];

	workspace(dir, sizeof(dir), 1000);
	up(s, dir, NULL);
	expect_channel(s);
	start_impostor(s, "--no-accept");
	/* Beyond its backlog a blocking connect() would wait forever; each
	 * of these must fall back to the engine instead (the test's own
	 * time limit is what catches a hang). */
	for (int i = 0; i < 4; i++) {
		exec_ok(s, path, sizeof(path));
		cr_assert_str_eq(path, "engine");
	}
	remove_dir(dir);
}

/* 3. A command connecting to the agent's socket gets nothing: no HELLO,
 * and its request runs nothing. */
static void inside_connect(const char *user)
{
	const char *s = it_session();
	char dir[PATH_MAX];
	it_result r;

	workspace(dir, sizeof(dir), user ? 0 : 1000);
	up(s, dir, user);
	expect_channel(s);
	r = sh(s, "/workspace/chanfake connect /.hutch/chan/agent.sock");
	IT_ASSERT_EXIT(r, 0, "connect from inside");
	if (!fast_path_off())
		cr_assert(strstr(r.out, "hello 0\n"),
			  "the agent answered a command: %s", r.out);
	cr_assert(!strstr(r.out, "after") || strstr(r.out, "after 0\n") ||
			  strstr(r.out, "after -1\n"),
		  "the agent answered a command's request: %s", r.out);
	it_result_free(&r);
	r = sh(s, "test ! -e /tmp/chanfake-ran");
	IT_ASSERT_EXIT(r, 0, "PID 1 ran a command's request");
	it_result_free(&r);
	remove_dir(dir);
}

IT_TEST(chan, a_command_cannot_use_the_agents_socket)
{
	inside_connect(NULL);
}

IT_TEST(chan, nor_can_root_without_capabilities)
{
	inside_connect("root");
}

/* 4. A command on the channel with a secret, and a command beside it
 * reading every process's environment and command line: the handler PID 1
 * forks for the request, and the agent it starts, hold the request's
 * environment; neither may be readable. */
IT_TEST(chan, a_request_is_not_readable_beside_it)
{
	const char *s = it_session();
	const char *args[] = {
		"exec",
		s,
		"--json",
		"--timeout",
		"60",
		"--secret",
		"IT_CHAN_TOKEN",
		"--",
		"sh",
		"-c",
		"echo up; while [ ! -e /tmp/stop ]; do sleep 0.1; "
		"done",
		NULL
	};
	it_opts bg = { .limit = 90 };
	it_proc p;
	it_result r;
	int seen = 0;

	up(s, NULL, NULL);
	expect_channel(s);
	setenv("IT_CHAN_TOKEN", SECRET, 1);
	it_spawn(&p, &bg, args);
	for (int tries = 0; tries < 100 && !seen; tries++) {
		r = sh(s, "ps -o args | grep -c '^sh -c echo u[p]'");
		seen = r.status == 0 && strcmp(r.out, "0\n") != 0;
		it_result_free(&r);
		if (!seen)
			it_sleep(0.2);
	}
	cr_assert(seen, "the command given the secret did not start");
	r = sh(s, "for p in /proc/[0-9]*; do cat $p/environ $p/cmdline; "
		  "done 2>/dev/null </dev/null | tr '\\0' '\\n' "
		  "| grep -c '" SECRET_RE "'; true");
	IT_ASSERT_EXIT(r, 0, "reading every process beside the command");
	cr_assert_str_eq(r.out, "0\n", "a command beside it read the secret");
	it_result_free(&r);
	sh_ok(s, "touch /tmp/stop");
	r = it_wait(&p);
	IT_ASSERT_EXIT(r, 0, "the command given the secret");
	cr_assert(strstr(r.out, fast_path_off() ? "\"path\":\"engine\"" :
						  "\"path\":\"agent\""),
		  "the command with the secret took another path: %s", r.out);
	it_result_free(&r);
}

/* 5. gc cannot be stopped by its session (doc/threat-model.md): a command
 * that stops (SIGSTOP) the channel's handler of another command keeps
 * that handler, and so HELLO's "busy", alive for ever unless PID 1 does
 * something about it; gc would then skip the idle session for ever.  The
 * stopper runs in the background, finds the handler as proctree.c does
 * (the parent, a child of PID 1 in session 1, of the agent whose command
 * line holds the victim's marker), stops it and exits. */
IT_TEST(chan, a_stopped_handler_does_not_keep_gc_away)
{
	const char *s = it_session();
	/* The marker split in the stopper's own text, so that it does not
	 * find itself. */
	const char *stopper =
		"touch /tmp/stopper-on; "
		"while [ ! -e /tmp/stopper-off ]; do "
		"for d in /proc/[0-9]*; do "
		"case \"$(tr '\\0' ' ' < $d/cmdline 2>/dev/null)\" in "
		"*vic\"\"tim-7q*) ;; *) continue;; esac; "
		"set -- $(cat $d/stat 2>/dev/null); pp=$4; "
		"set -- $(cat /proc/$pp/stat 2>/dev/null); "
		"if [ \"$4 $6\" = \"1 1\" ]; then "
		"kill -STOP $pp && echo $pp > /tmp/stopped && exit 0; fi; "
		"done; done";
	int on = 0, stopped;
	it_result r;

	up(s, NULL, NULL);
	expect_channel(s);
	start_attacker(s, stopper);
	for (int i = 0; i < 100 && !on; i++) {
		r = sh(s, "test -e /tmp/stopper-on");
		on = r.status == 0;
		it_result_free(&r);
		if (!on)
			it_sleep(0.1);
	}
	cr_assert(on, "the stopper did not start");
	/* The victim: long enough for the stopper to find it; its outcome
	 * is not what is tested (hutch gives up on it after its timeout). */
	r = it_hutch("exec", s, "--timeout", "3", "--", "sh", "-c",
		     ": victim-7q; sleep 1", NULL);
	it_result_free(&r);
	r = sh(s, "touch /tmp/stopper-off; test -s /tmp/stopped");
	stopped = r.status == 0;
	it_result_free(&r);
	if (!fast_path_off())
		/* Not vacuous: the handler was found and stopped. */
		cr_assert(stopped, "the stopper found no handler to stop");
	r = it_hutch("gc", "--idle", "0", "--match", s, NULL);
	IT_ASSERT_EXIT(r, 0, "gc");
	it_result_free(&r);
	cr_assert_eq(it_count_containers(s), 0,
		     "gc did not remove the idle session whose command "
		     "stopped a handler of PID 1's channel (busy for ever)");
}

/*
 * 6. A handler PID 1 keeps for a later command (src/agent/chan.c) waits
 * as the session's user, which may stop or kill it.  Either costs no
 * command: PID 1 kills a stopped handler and forgets a dead one, and
 * the next command gets a new one.  The sweep runs in the background,
 * started by the engine (start_attacker), once no command runs, so every
 * handler it finds is a kept one; it writes how many it found to the
 * workspace, which the test reads on the host (a command run to ask
 * would be swept too).
 */
static void sweep_kept_handlers(const char *sig)
{
	const char *s = it_session();
	char dir[PATH_MAX], path[16], *found = NULL, script[600];
	size_t len = 0;

	workspace(dir, sizeof(dir), 1000);
	up(s, dir, NULL);
	expect_channel(s);
	for (int i = 0; i < 3; i++)
		exec_ok(s, path, sizeof(path));
	snprintf(script, sizeof(script),
		 "sleep 1; n=0; for d in /proc/[0-9]*; do "
		 "set -- $(cat $d/stat 2>/dev/null); "
		 "if [ \"$4 $6\" = \"1 1\" ] && kill -%s $1; then "
		 "n=$((n+1)); fi; done; echo $n > /workspace/.swept.tmp; "
		 "mv /workspace/.swept.tmp /workspace/swept",
		 sig);
	start_attacker(s, script);
	for (int i = 0; i < 100 && !len; i++) {
		free(found);
		found = slurp(dir, "swept", &len);
		if (!len)
			it_sleep(0.1);
	}
	cr_assert(len, "the sweep did not finish");
	if (!fast_path_off())
		/* Not vacuous: kept handlers were there to hit. */
		cr_assert(atoi(found) >= 1, "the sweep found no handler");
	free(found);
	/* The next commands run, on the channel. */
	for (int i = 0; i < 3; i++) {
		exec_ok(s, path, sizeof(path));
		cr_assert_str_eq(path, fast_path_off() ? "engine" : "agent");
	}
	remove_dir(dir);
}

IT_TEST(chan, a_kept_handler_stopped_costs_no_command)
{
	sweep_kept_handlers("STOP");
}

IT_TEST(chan, a_kept_handler_killed_costs_no_command)
{
	sweep_kept_handlers("KILL");
}
