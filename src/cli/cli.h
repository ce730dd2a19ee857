/*
 * cli.h - the hutch command line: shared bits of the subcommands
 *
 * The CLI is made only of libhutch's public API.
 */
#ifndef HUTCH_CLI_H
#define HUTCH_CLI_H

#include <getopt.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <hutch/hutch.h>

/* Exit statuses of hutch itself (a command's own status passes through). */
#define EXIT_HUTCH_FAILED 125
#define EXIT_TIMEOUT 124

#define CLI_MAX_ENGINES 64

typedef struct {
	const char *engines[CLI_MAX_ENGINES]; /* every --engine */
	size_t nengines;
	const char *prog;
} cli_globals;

typedef int (*cli_cmd_fn)(cli_globals *g, int argc, char **argv);

/* --- options and usage (options.c) -------------------------------------
 * Each command describes its options once, in cli_option tables; getopt's
 * table and the --help text are both made from them, so --help cannot
 * leave out an option the command takes (tests/unit/test_cli_help.c). */

typedef struct {
	const char *name; /* long name without "--"; NULL ends a table */
	const char *arg;  /* the argument's placeholder ("SEC"); NULL: a flag */
	int val;	  /* what getopt_long returns; when it is a letter of
			     the command's `shortopts`, -LETTER works too */
	const char *help; /* one line */
} cli_option;

#define CLI_MAX_OPTIONS 40
#define CLI_MAX_TABLES 8

typedef struct {
	const char *name;      /* "exec" */
	cli_cmd_fn fn;	       /* NULL for a table that only parses */
	const char *synopsis;  /* what follows "hutch NAME" in the usage */
	const char *about;     /* one line for `hutch --help` */
	const char *notes;     /* NULL, or a paragraph for its own --help */
	const char *shortopts; /* getopt_long's; "h" at least */
	const cli_option *opts[CLI_MAX_TABLES]; /* its tables; NULL ends */
} cli_command;

/* Every command, in the order `hutch --help` lists them. */
extern const cli_command *const cli_commands[];
extern const size_t cli_command_count;

/* getopt_long's table for `c`: every option of its tables once (by name),
 * then --help ('h') and the terminator.  `out` holds CLI_MAX_OPTIONS + 2
 * entries.  Returns how many options were written. */
size_t cli_long_options(const cli_command *c, struct option *out);
/* getopt_long over the options of `c`; `lo` is cli_long_options's. */
int cli_next_option(const cli_command *c, const struct option *lo, int argc,
		    char **argv);
/* The option of `c` that getopt_long returns `val` for, or NULL. */
const cli_option *cli_command_option(const cli_command *c, int val);
/* The usage line and every option with its help (--help). */
void cli_help(const cli_command *c, FILE *f);
/* "hutch: usage: hutch NAME SYNOPSIS" on stderr, for a wrong command line. */
void cli_usage_error(const cli_command *c);

/* --- cancelling on a signal ---------------------------------------------
 * SIGINT, SIGTERM and SIGHUP raise one hutch_cancel, so that the library
 * stops what runs in the container (kills the command, stops a copy)
 * before hutch exits, instead of leaving it running.  `sa_flags` are the
 * handlers' (0, or SA_RESETHAND | SA_RESTART where a second signal must
 * end hutch at once).  One at a time per process.  -1 with `*err` set. */
int cli_cancel_begin(hutch_cancel **out, int sa_flags, hutch_error **err);
/* The signal that raised it, or 0. */
int cli_cancel_signal(void);
/* Put the handlers back as they were, then free the cancel object. */
void cli_cancel_end(void);

/* --- a terminal (term.c) -----------------------------------------------
 * For a command that gets a terminal in the session.  cli_term_begin
 * watches SIGWINCH and, with `raw` and a terminal on stdin, puts that
 * terminal in raw mode until cli_term_end, at exit() or on a signal that
 * would end or stop hutch (put back first, then the signal acts).  0, or -1
 * with the error said. */
int cli_term_begin(int raw);
void cli_term_end(void);
/* hutch_tty_size_cb: the size of hutch's terminal (stdout's, else
 * stdin's), read again after each SIGWINCH; -1 when there is none. */
int cli_term_size(unsigned short *rows, unsigned short *cols, void *payload);

/* --- JSON ------------------------------------------------------------------ */

struct json_object;
/* Print `o` on stdout as one plain line (no escaped slashes). */
void cli_print_json(struct json_object *o);

/* Print "hutch: MESSAGE" on stderr. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Print the library error and free it; returns EXIT_HUTCH_FAILED. */
int cli_fail(hutch_error *err);
/* Open the engines of --engine (each one), else of HUTCH_ENGINES, else the
 * one discovery finds. */
int cli_fleet(cli_globals *g, hutch_fleet **out);
/* The engine session `name` lives on, or the one to create it on with
 * HUTCH_FLEET_CREATE in `flags` (hutch_fleet_locate); with a single engine
 * no request is made.  The caller owns `*out`.  Errors are said. */
int cli_session_engine(cli_globals *g, const char *name, int flags,
		       hutch_engine **out);

/* A growable list of strings that the caller does not own. */
typedef struct {
	const char **v;
	size_t n, alloc;
} cli_strv;
int cli_strv_add(cli_strv *l, const char *s);
void cli_strv_free(cli_strv *l);

/* "K=V" as given, or "K" taken from hutch's own environment.  Returns the
 * entry (possibly newly allocated into *owned) or NULL with an error said. */
const char *cli_env_entry(const char *arg, char **owned);

/* 1 when environment variable NAME is set to something other than "" or
 * "0" (HUTCH_NO_CREATE=1). */
int cli_env_flag(const char *name);

/* Add an --env argument to `env`; entries allocated for it are kept in
 * `owned`.  Both are released by cli_env_free.  -1 with an error said. */
int cli_env_add(cli_strv *env, cli_strv *owned, const char *arg);
void cli_env_free(cli_strv *env, cli_strv *owned);

/* Secrets for a session handle (hutch_session_set_secrets), as "NAME=VALUE"
 * entries that `secrets` owns: --secret NAME takes hutch's own $NAME,
 * --secret NAME=@FILE the file's contents (one trailing newline dropped);
 * a value on the command line is refused, `ps` would show it.
 * cli_secrets_from_env adds each NAME of $HUTCH_SECRETS ("A,B") not given
 * already.  -1 with an error said.  cli_secrets_free wipes the values. */
int cli_secret_add(cli_strv *secrets, const char *arg);
int cli_secrets_from_env(cli_strv *secrets);
void cli_secrets_free(cli_strv *secrets);

/* Parse "120", "1.5" seconds into milliseconds; -1 when invalid. */
int64_t cli_parse_seconds(const char *s);
/* Parse "1048576", "64k", "1M", "2G"; -1 when invalid. */
int64_t cli_parse_size(const char *s);
/* --timeout SEC (0 for none) and --max-output BYTES of exec and batch:
 * 0, or -1 with the error said. */
int cli_opt_timeout(const char *arg, uint64_t *ms);
int cli_opt_max_output(const char *arg, size_t *bytes);

/* Write all of buf to fd; -1 on error. */
int cli_write_all(int fd, const char *buf, size_t len);

/* The commands, each in its file (cmd_NAME.c); the table is commands.c's. */
extern const cli_command cli_cmd_up, cli_cmd_exec, cli_cmd_sh, cli_cmd_sync_in,
	cli_cmd_cp, cli_cmd_sync_out, cli_cmd_read, cli_cmd_write, cli_cmd_edit,
	cli_cmd_grep, cli_cmd_find, cli_cmd_ls, cli_cmd_rm_file,
	cli_cmd_mv_file, cli_cmd_sessions, cli_cmd_rm, cli_cmd_gc,
	cli_cmd_doctor, cli_cmd_batch, cli_cmd_mcp;
/* Background processes (cmd_process.c). */
extern const cli_command cli_cmd_ps, cli_cmd_logs, cli_cmd_kill, cli_cmd_wait;
/* Interactive use and port forwarding (cmd_shell.c, cmd_portfwd.c). */
extern const cli_command cli_cmd_shell, cli_cmd_port_forward;
/* Images without a registry (cmd_image.c). */
extern const cli_command cli_cmd_image;

/* Progress of a sync on stderr when it is a terminal (<= 4 updates/s). */
typedef struct {
	const char *what;
	int tty, shown;
	unsigned long long last_ms;
} cli_sync_progress_state;
/* "512 B", "1.5 MiB": a size (or a rate's bytes) for people. */
void cli_human_size(char *out, size_t outsz, double v);
int cli_sync_progress(const hutch_sync_stats *st, void *payload);
/* Clear the progress line. */
void cli_sync_progress_end(cli_sync_progress_state *ps);
/* "VERB N files, ..." on stdout. */
void cli_sync_summary(const char *verb, const hutch_sync_stats *st);
/* The session a copy goes into (`in`: made when missing) or comes out of
 * (must exist), on its engine.  0, or the exit code (the error said). */
int cli_copy_session(cli_globals *g, const char *name, int in,
		     hutch_engine **engine, hutch_session **s);
/* The counts of a copy into the JSON object `o`, in `sync-in --json`'s
 * order; `all` 0 leaves out hardlinks and archive_bytes, which the "seed"
 * of `up --json` never had. */
void cli_sync_stats_json(struct json_object *o, const hutch_sync_stats *st,
			 int all);

#endif
