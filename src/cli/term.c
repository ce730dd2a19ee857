/*
 * term.c - hutch's own terminal while a command has one in the session:
 * raw mode, put back on every way out, and the window's size
 *
 * In raw mode every key (Ctrl-C, Ctrl-Z, Ctrl-D included) goes to the
 * command's terminal in the container, whose line discipline makes the
 * signals and the end of file there.  The settings hutch found are put
 * back when the command ends (cli_term_end), at exit(), and from the
 * handler of every signal that would end or stop hutch with its terminal
 * left raw.  SIGINT, SIGTERM and SIGHUP are the cancel's (util.c): they
 * stop the command, and hutch leaves by its normal path, which calls
 * cli_term_end before it prints anything.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "cli.h"

/* Signals whose default action ends hutch: the terminal is put back, then
 * the signal is taken again with that action (SA_RESETHAND). */
static const int fatal_signals[] = { SIGQUIT, SIGABRT, SIGSEGV, SIGBUS,
				     SIGFPE,  SIGILL,  SIGALRM, SIGUSR1,
				     SIGUSR2, SIGXCPU, SIGXFSZ };
#define NFATAL (sizeof(fatal_signals) / sizeof(fatal_signals[0]))

static struct termios saved, raw;
static volatile sig_atomic_t raw_fd = -1; /* whose settings are saved */
static int size_fd = -1;		  /* the terminal whose size is sent */
static volatile sig_atomic_t winch_seen;
static unsigned int winch_used;
static unsigned short last_rows, last_cols;
static int hooked, at_exit_set;
static struct sigaction old_fatal[NFATAL], old_tstp, old_cont, old_winch;

/* tcsetattr is async-signal-safe: the handlers below call this. */
static void put_back(void)
{
	int saved_errno = errno;

	if (raw_fd >= 0)
		tcsetattr(raw_fd, TCSANOW, &saved);
	errno = saved_errno;
}

static void on_fatal(int sig)
{
	put_back();
	/* The handler was reset to the default action (SA_RESETHAND); the
	 * signal, unblocked when this returns, ends hutch as it would have. */
	raise(sig);
}

/* A stop from outside (the keys cannot send one in raw mode): the shell
 * that gets the terminal back must find it as it was. */
static void on_tstp(int sig)
{
	(void)sig;
	put_back();
	raise(SIGSTOP);
}

static void on_cont(int sig)
{
	int saved_errno = errno;

	(void)sig;
	if (raw_fd >= 0)
		tcsetattr(raw_fd, TCSANOW, &raw);
	errno = saved_errno;
}

/* Counted only; cli_term_size reads the size again when this moved.  No
 * SA_RESTART: a wait of the calling thread wakes up, so the library asks
 * for the size soon after the window changed. */
static void on_winch(int sig)
{
	(void)sig;
	winch_seen++;
}

static void hook(int sig, void (*fn)(int), int flags, struct sigaction *old)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = fn;
	sa.sa_flags = flags;
	sigemptyset(&sa.sa_mask);
	sigaction(sig, &sa, old);
}

int cli_term_begin(int make_raw)
{
	if (hooked)
		return 0;
	size_fd = isatty(STDOUT_FILENO) ? STDOUT_FILENO :
		  isatty(STDIN_FILENO)	? STDIN_FILENO :
					  -1;
	winch_used = (unsigned int)winch_seen - 1; /* read it the first time */
	hook(SIGWINCH, on_winch, 0, &old_winch);
	hooked = 1;
	if (!make_raw || !isatty(STDIN_FILENO))
		return 0;
	if (tcgetattr(STDIN_FILENO, &saved) < 0) {
		cli_error("cannot read the terminal's settings: %s",
			  strerror(errno));
		return -1;
	}
	raw = saved;
	cfmakeraw(&raw);
	for (size_t i = 0; i < NFATAL; i++)
		hook(fatal_signals[i], on_fatal, SA_RESETHAND, &old_fatal[i]);
	hook(SIGTSTP, on_tstp, SA_RESTART, &old_tstp);
	hook(SIGCONT, on_cont, SA_RESTART, &old_cont);
	if (!at_exit_set && atexit(put_back) == 0)
		at_exit_set = 1;
	/* Saved first, then raw: a signal in between finds raw_fd set only
	 * once there is something to put back. */
	raw_fd = STDIN_FILENO;
	if (tcsetattr(STDIN_FILENO, TCSADRAIN, &raw) < 0) {
		cli_error("cannot put the terminal in raw mode: %s",
			  strerror(errno));
		cli_term_end();
		return -1;
	}
	return 0;
}

void cli_term_end(void)
{
	if (!hooked)
		return;
	if (raw_fd >= 0) {
		/* Output already written drains first, then the settings
		 * come back; keys typed after the command ended are not
		 * left for the shell to run. */
		tcsetattr(raw_fd, TCSAFLUSH, &saved);
		raw_fd = -1;
		for (size_t i = 0; i < NFATAL; i++)
			sigaction(fatal_signals[i], &old_fatal[i], NULL);
		sigaction(SIGTSTP, &old_tstp, NULL);
		sigaction(SIGCONT, &old_cont, NULL);
	}
	sigaction(SIGWINCH, &old_winch, NULL);
	hooked = 0;
}

int cli_term_size(unsigned short *rows, unsigned short *cols, void *payload)
{
	struct winsize ws;
	unsigned int seen = (unsigned int)winch_seen;

	(void)payload;
	if (size_fd < 0)
		return -1;
	/* Asked again and again while the command runs: the terminal is
	 * only read when a SIGWINCH came since the last time. */
	if (seen != winch_used) {
		winch_used = seen;
		if (ioctl(size_fd, TIOCGWINSZ, &ws) < 0 || !ws.ws_row ||
		    !ws.ws_col)
			return -1;
		last_rows = ws.ws_row;
		last_cols = ws.ws_col;
	}
	if (!last_rows)
		return -1;
	*rows = last_rows;
	*cols = last_cols;
	return 0;
}
