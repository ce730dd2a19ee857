/*
 * cli.h - the hutch command line: shared bits of the subcommands
 *
 * The CLI is made only of libhutch's public API.
 */
#ifndef HUTCH_CLI_H
#define HUTCH_CLI_H

#include <stddef.h>
#include <stdint.h>
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

int cmd_exec(cli_globals *g, int argc, char **argv);
int cmd_sh(cli_globals *g, int argc, char **argv);
int cmd_up(cli_globals *g, int argc, char **argv);
int cmd_sessions(cli_globals *g, int argc, char **argv);
int cmd_rm(cli_globals *g, int argc, char **argv);
int cmd_doctor(cli_globals *g, int argc, char **argv);
/* cmd_batch.c */
int cmd_batch(cli_globals *g, int argc, char **argv);
/* cmd_gc.c */
int cmd_gc(cli_globals *g, int argc, char **argv);
/* cmd_mcp.c */
int cmd_mcp(cli_globals *g, int argc, char **argv);
/* cmd_fs.c */
int cmd_read(cli_globals *g, int argc, char **argv);
int cmd_write(cli_globals *g, int argc, char **argv);
int cmd_edit(cli_globals *g, int argc, char **argv);
int cmd_grep(cli_globals *g, int argc, char **argv);
int cmd_find(cli_globals *g, int argc, char **argv);
int cmd_ls(cli_globals *g, int argc, char **argv);
/* cmd_sync.c */
int cmd_sync_in(cli_globals *g, int argc, char **argv);
int cmd_sync_out(cli_globals *g, int argc, char **argv);
/* Progress of a sync on stderr when it is a terminal (<= 4 updates/s). */
typedef struct {
	const char *what;
	int tty, shown;
	unsigned long long last_ms;
} cli_sync_progress_state;
int cli_sync_progress(const hutch_sync_stats *st, void *payload);
/* Clear the progress line. */
void cli_sync_progress_end(cli_sync_progress_state *ps);
/* "VERB N files, ..." on stdout. */
void cli_sync_summary(const char *verb, const hutch_sync_stats *st);

#endif
