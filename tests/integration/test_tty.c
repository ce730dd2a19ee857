/*
 * test_tty.c - hutch with a terminal: `hutch shell` and `exec -it` run
 * under a pseudo-terminal this test opens, as a person's terminal would
 * be; the test types keys and reads the screen
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "harness.h"

struct term {
	pid_t pid;
	int master;
	char screen[1 << 16]; /* everything hutch wrote, NUL-terminated */
	size_t len;
	size_t mark; /* expect() looks from here on */
};

/* hutch ARGS under a new pseudo-terminal of ROWS x COLS. */
static void term_start(struct term *t, unsigned short rows, unsigned short cols,
		       const char *const *args)
{
	struct winsize ws = { .ws_row = rows, .ws_col = cols };
	const char *libdir, *prog = it_hutch_program(&libdir);
	const char *argv[32];
	size_t n = 0;

	memset(t, 0, sizeof(*t));
	argv[n++] = prog;
	argv[n++] = "--engine";
	argv[n++] = it_engine();
	for (size_t i = 0; args[i] && n < 31; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	if (libdir)
		setenv("LD_LIBRARY_PATH", libdir, 1);
	fflush(NULL);
	t->pid = forkpty(&t->master, NULL, NULL, &ws);
	cr_assert_neq(t->pid, -1, "forkpty: %s", strerror(errno));
	if (t->pid == 0) {
		/* SIGQUIT is one of the signals sent: no core file. */
		struct rlimit no_core = { 0, 0 };

		setrlimit(RLIMIT_CORE, &no_core);
		execv(prog, (char *const *)argv);
		_exit(126);
	}
}

/* Read what is there (waiting at most `ms`); 0 at the end. */
static int term_read(struct term *t, int ms)
{
	struct pollfd p = { .fd = t->master, .events = POLLIN };
	ssize_t n;

	if (poll(&p, 1, ms) <= 0)
		return 1;
	cr_assert_lt(t->len, sizeof(t->screen) - 1, "screen full");
	n = read(t->master, t->screen + t->len, sizeof(t->screen) - 1 - t->len);
	if (n <= 0)
		return 0; /* EIO: hutch and every holder of the pty ended */
	t->len += (size_t)n;
	t->screen[t->len] = '\0';
	return 1;
}

/* Wait until `text` is on the screen after the mark, then move the mark
 * past it.  The bound only keeps a hung test from hanging. */
static void expect(struct term *t, const char *text)
{
	double until = it_now() + 60;
	char *at;

	while (!(at = strstr(t->screen + t->mark, text))) {
		cr_assert(it_now() < until, "never saw '%s' on the screen:\n%s",
			  text, t->screen + t->mark);
		cr_assert(term_read(t, 500), "hutch ended before '%s':\n%s",
			  text, t->screen + t->mark);
	}
	t->mark = (size_t)(at - t->screen) + strlen(text);
}

static void type(struct term *t, const char *keys)
{
	size_t n = strlen(keys);

	cr_assert_eq(write(t->master, keys, n), (ssize_t)n);
}

/* hutch's exit status, reading the screen to the end meanwhile. */
static int term_wait(struct term *t)
{
	double until = it_now() + 60;
	int st;

	for (;;) {
		pid_t w = waitpid(t->pid, &st, WNOHANG);

		if (w == t->pid)
			break;
		cr_assert(it_now() < until, "hutch did not end:\n%s",
			  t->screen + t->mark);
		term_read(t, 100);
	}
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* The terminal's local modes, as hutch has set them: read through the
 * pty's other side, which this process opens too. */
static tcflag_t lflags(struct term *t)
{
	struct termios tio;
	int fd = open(ptsname(t->master), O_RDWR | O_NOCTTY | O_CLOEXEC);

	cr_assert_geq(fd, 0, "open %s: %s", ptsname(t->master),
		      strerror(errno));
	cr_assert_eq(tcgetattr(fd, &tio), 0);
	close(fd);
	return tio.c_lflag;
}

/* Wait until hutch has put its terminal in raw mode (or back). */
static void await_mode(struct term *t, int raw)
{
	double until = it_now() + 60;

	while (!!(lflags(t) & ICANON) == raw) {
		cr_assert(it_now() < until, "the terminal never became %s",
			  raw ? "raw" : "cooked");
		term_read(t, 50);
	}
}

static void warm(const char *s)
{
	it_result r = it_hutch("exec", s, "--", "true", NULL);

	IT_ASSERT_EXIT(r, 0, "hutch exec S -- true");
	it_result_free(&r);
}

/* A person's shell: commands typed run in /workspace with the session's
 * environment, `stty size` says the window's size and follows a resize,
 * Ctrl-C stops the command in the session but not the shell, `exit N`
 * is hutch's status, and the terminal comes back as it was. */
IT_TEST(tty, shell_at_a_terminal)
{
	const char *s = it_session();
	struct term t;
	struct winsize ws = { .ws_row = 41, .ws_col = 123 };
	tcflag_t before;

	warm(s);
	term_start(&t, 30, 100, (const char *const[]){ "shell", s, NULL });
	before = lflags(&t);
	cr_assert(before & ICANON);
	await_mode(&t, 1);
	type(&t, "echo \"at:$(pwd):$((6 * 7))\"\r");
	expect(&t, "at:/workspace:42");
	type(&t, "stty size\r");
	expect(&t, "30 100");
	/* The kernel tells hutch (SIGWINCH): hutch tells the engine.  The
	 * resize reaches the session a moment later; look until it has. */
	cr_assert_eq(ioctl(t.master, TIOCSWINSZ, &ws), 0);
	for (;;) {
		size_t from = t.mark;
		char answer[64];

		/* "=2=" is printed, not echoed: the answer lies before it. */
		type(&t, "echo \"<$(stty size)>=$((1 + 1))=\"\r");
		expect(&t, ">=2=");
		snprintf(answer, sizeof(answer), "%.*s",
			 (int)(t.mark > from + 40 ? 40 : t.mark - from),
			 t.screen + t.mark -
				 (t.mark > from + 40 ? 40 : t.mark - from));
		if (strstr(answer, "<41 123>"))
			break;
		cr_assert(strstr(answer, "<30 100>"), "stty size: %s", answer);
		usleep(100 * 1000);
	}
	/* Ctrl-C is a key for the session's terminal: it stops the sleep,
	 * the shell goes on. */
	type(&t, "sleep 600; echo after-sleep-$?\r");
	usleep(300 * 1000);
	type(&t, "\x03");
	type(&t, "echo still-$((1 + 1))\r");
	expect(&t, "still-2");
	type(&t, "exit 7\r");
	cr_assert_eq(term_wait(&t), 7, "%s", t.screen);
	cr_assert_eq(lflags(&t), before, "the terminal was not put back");
	close(t.master);
}

/* The terminal comes back from raw mode when hutch is stopped by a
 * signal, and the command is stopped with it. */
IT_TEST(tty, raw_mode_is_undone_on_signals)
{
	static const int sigs[] = { SIGTERM, SIGHUP, SIGQUIT };
	const char *s = it_session();

	warm(s);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		struct term t;
		tcflag_t before;
		int st;

		term_start(&t, 24, 80,
			   (const char *const[]){ "exec", "-it", s, "--", "sh",
						  "-c", "echo ready; sleep 600",
						  NULL });
		before = lflags(&t);
		await_mode(&t, 1);
		expect(&t, "ready");
		cr_assert(before & ICANON);
		kill(t.pid, sigs[i]);
		st = term_wait(&t);
		cr_assert_eq(st, 128 + sigs[i], "status after signal %d: %d",
			     sigs[i], st);
		/* The pty keeps its settings while this side is open. */
		cr_assert_eq(lflags(&t), before,
			     "after signal %d the terminal was left %s",
			     sigs[i], lflags(&t) & ICANON ? "changed" : "raw");
		close(t.master);
	}
}

/* -t without a terminal around hutch: one combined stream on stdout, as
 * the session's terminal wrote it, and the command's status. */
IT_TEST(tty, exec_t_gives_one_combined_stream)
{
	const char *s = it_session();
	it_result r = it_hutch("exec", "-t", s, "--", "sh", "-c",
			       "echo out; echo err >&2; test -t 0 && test -t 1 "
			       "&& echo both-ttys; exit 3",
			       NULL);

	IT_ASSERT_EXIT(r, 3, "hutch exec -t");
	cr_assert(strstr(r.out, "out\r\n"), "%s", r.out);
	cr_assert(strstr(r.out, "err\r\n"), "%s", r.out);
	cr_assert(strstr(r.out, "both-ttys"), "%s", r.out);
	cr_assert_eq(r.err_len, 0, "stderr: %s", r.err);
	it_result_free(&r);
}

/* The terminal has its size before the command first asks: the agent
 * sets it (--tty-size) instead of waiting for the engine's resize, which
 * on Docker's API 1.41 comes only after the start (a 0x0 terminal, and
 * `stty size` failing, in between).  Without a terminal of hutch's own
 * the size is 24x80. */
IT_TEST(tty, size_is_there_when_the_command_starts)
{
	const char *s = it_session();

	for (int i = 0; i < 5; i++) {
		it_result r =
			it_hutch("exec", "-t", s, "--", "stty", "size", NULL);

		IT_ASSERT_EXIT(r, 0, "hutch exec -t S -- stty size");
		cr_assert_str_eq(r.out, "24 80\r\n", "try %d", i + 1);
		it_result_free(&r);
	}
}

/* shell --user at a terminal, and shell reading a script when hutch's
 * stdin is not a terminal. */
IT_TEST(tty, shell_as_another_user_and_from_a_pipe)
{
	const char *s = it_session();
	struct term t;
	it_opts o = { 0 };
	it_result r;
	int in[2];
	static const char script[] = "echo \"sum:$((2 + 3))\"; exit 4\n";

	warm(s);
	term_start(&t, 24, 80,
		   (const char *const[]){ "shell", s, "--user", "1234:2345",
					  NULL });
	type(&t, "echo \"who:$(id -u):$(id -g)\"\r");
	expect(&t, "who:1234:2345");
	type(&t, "exit\r");
	cr_assert_eq(term_wait(&t), 0, "%s", t.screen);
	close(t.master);

	cr_assert_eq(pipe2(in, O_CLOEXEC), 0);
	cr_assert_eq(write(in[1], script, sizeof(script) - 1),
		     (ssize_t)sizeof(script) - 1);
	close(in[1]);
	o.in_fd = in[0];
	r = it_hutch_o(&o, "shell", s, NULL);
	close(in[0]);
	IT_ASSERT_EXIT(r, 4, "echo script | hutch shell S");
	cr_assert_str_eq(r.out, "sum:5\n");
	it_result_free(&r);
}
