/*
 * util.c - helpers shared by the subcommands
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <json-c/json.h>

#include "cli.h"
#include "duration.h"

void cli_error(const char *fmt, ...)
{
	va_list ap;

	fputs("hutch: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int cli_fail(hutch_error *err)
{
	cli_error("%s", hutch_error_message(err));
	hutch_error_free(err);
	return EXIT_HUTCH_FAILED;
}

void cli_print_json(json_object *o)
{
	puts(json_object_to_json_string_ext(
		o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
}

/* --- cancelling on a signal ------------------------------------------- */

static const int cancel_signals[] = { SIGINT, SIGTERM, SIGHUP };
static hutch_cancel *volatile cancel_current;
static volatile sig_atomic_t cancel_signo;
static struct sigaction cancel_old[3];

static void on_cancel_signal(int sig)
{
	cancel_signo = sig;
	/* hutch_cancel_raise is async-signal-safe (exec.h). */
	hutch_cancel_raise(cancel_current);
}

int cli_cancel_begin(hutch_cancel **out, int sa_flags, hutch_error **err)
{
	struct sigaction sa;

	if (hutch_cancel_new(out, err) < 0)
		return -1;
	cancel_current = *out;
	cancel_signo = 0;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_cancel_signal;
	sa.sa_flags = sa_flags;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < 3; i++)
		sigaction(cancel_signals[i], &sa, &cancel_old[i]);
	return 0;
}

int cli_cancel_signal(void)
{
	return cancel_signo;
}

void cli_cancel_end(void)
{
	hutch_cancel *cancel = cancel_current;

	if (!cancel)
		return;
	/* The handler may still fire: unhook it before freeing. */
	for (size_t i = 0; i < 3; i++)
		sigaction(cancel_signals[i], &cancel_old[i], NULL);
	cancel_current = NULL;
	hutch_cancel_free(cancel);
}

int cli_fleet(cli_globals *g, hutch_fleet **out)
{
	hutch_error *err = NULL;

	if (hutch_fleet_open(out, g->engines, g->nengines, &err) < 0)
		return cli_fail(err);
	return 0;
}

int cli_session_engine(cli_globals *g, const char *name, int flags,
		       hutch_engine **out)
{
	hutch_fleet *fleet;
	hutch_engine *e = NULL;
	hutch_error *err = NULL;
	int rc, found = -1;

	if ((rc = cli_fleet(g, &fleet)) != 0)
		return rc;
	/* An invalid name is refused by the command itself, as with one
	 * engine (its --json error included). */
	if (hutch_fleet_size(fleet) == 1 || !hutch_session_name_valid(name))
		e = hutch_fleet_engine(fleet, 0);
	else if (hutch_fleet_locate(fleet, name, flags, &e, &found, &err) < 0)
		rc = cli_fail(err);
	if (rc == 0 && found == 0) {
		for (size_t i = 0; i < hutch_fleet_size(fleet); i++)
			if (hutch_fleet_engine_down(fleet, i))
				cli_error(
					"warning: %s does not answer; session '%s' is placed on %s",
					hutch_engine_url(
						hutch_fleet_engine(fleet, i)),
					name, hutch_engine_url(e));
	}
	if (rc == 0)
		*out = hutch_fleet_detach(fleet, e);
	hutch_fleet_free(fleet);
	return rc;
}

int cli_strv_add(cli_strv *l, const char *s)
{
	if (l->n == l->alloc) {
		size_t alloc = l->alloc ? l->alloc * 2 : 8;
		const char **v = realloc(l->v, alloc * sizeof(*v));

		if (!v)
			return -1;
		l->v = v;
		l->alloc = alloc;
	}
	l->v[l->n++] = s;
	return 0;
}

void cli_strv_free(cli_strv *l)
{
	free(l->v);
	l->v = NULL;
	l->n = l->alloc = 0;
}

const char *cli_env_entry(const char *arg, char **owned)
{
	const char *v;

	*owned = NULL;
	if (!arg[0] || arg[0] == '=') {
		cli_error("invalid --env '%s': expected K=V or K", arg);
		return NULL;
	}
	if (strchr(arg, '='))
		return arg;
	/* "--env NAME" passes hutch's own value on, as docker does. */
	v = getenv(arg);
	if (!v) {
		cli_error("--env %s: %s is not set in hutch's environment", arg,
			  arg);
		return NULL;
	}
	if (asprintf(owned, "%s=%s", arg, v) < 0) {
		cli_error("out of memory");
		return NULL;
	}
	return *owned;
}

int64_t cli_parse_seconds(const char *s)
{
	char *end;
	double d;
	uint64_t ms;

	errno = 0;
	d = strtod(s, &end);
	if (errno || end == s || *end || cli_seconds_to_ms(d, &ms) < 0)
		return -1;
	return (int64_t)ms;
}

int64_t cli_parse_size(const char *s)
{
	char *end;
	unsigned long long v;
	int shift = 0;

	if (!*s || *s == '-')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -1;
	switch (*end) {
	case '\0':
		break;
	case 'k':
	case 'K':
		shift = 10;
		end++;
		break;
	case 'm':
	case 'M':
		shift = 20;
		end++;
		break;
	case 'g':
	case 'G':
		shift = 30;
		end++;
		break;
	default:
		return -1;
	}
	if (*end == 'i' || *end == 'B' || *end == 'b')
		end += (*end == 'i' && end[1] == 'B') ? 2 : 1;
	if (*end || v > (1ULL << (62 - shift)))
		return -1;
	return (int64_t)(v << shift);
}

int cli_opt_timeout(const char *arg, uint64_t *ms)
{
	int64_t v = cli_parse_seconds(arg);

	if (v < 0) {
		cli_error("invalid --timeout '%s': seconds, 0 for none", arg);
		return -1;
	}
	*ms = (uint64_t)v;
	return 0;
}

int cli_opt_max_output(const char *arg, size_t *bytes)
{
	int64_t v = cli_parse_size(arg);

	if (v <= 0) {
		cli_error("invalid --max-output '%s': bytes, e.g. 65536 or 1M",
			  arg);
		return -1;
	}
	*bytes = (size_t)v;
	return 0;
}

int cli_write_all(int fd, const char *buf, size_t len)
{
	ssize_t n;

	while (len > 0) {
		n = write(fd, buf, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

int cli_env_add(cli_strv *env, cli_strv *owned, const char *arg)
{
	char *mine = NULL;
	const char *entry = cli_env_entry(arg, &mine);

	if (!entry)
		return -1;
	if (cli_strv_add(env, entry) < 0 ||
	    (mine && cli_strv_add(owned, mine) < 0)) {
		free(mine);
		cli_error("out of memory");
		return -1;
	}
	return 0;
}

void cli_env_free(cli_strv *env, cli_strv *owned)
{
	for (size_t i = 0; i < owned->n; i++)
		free((char *)owned->v[i]);
	cli_strv_free(owned);
	cli_strv_free(env);
}

/* --- secrets ------------------------------------------------------------ */

/* The value of NAME=@FILE: the file's bytes without one trailing newline
 * (what `echo TOKEN > FILE` adds), bounded like the library's values. */
static char *secret_file(const char *name, size_t nlen, const char *path)
{
	char buf[4096 + 3];
	size_t len = 0;
	ssize_t n;
	char *entry = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		cli_error("--secret %.*s: %s: %s", (int)nlen, name, path,
			  strerror(errno));
		return NULL;
	}
	while (len < sizeof(buf)) {
		n = read(fd, buf + len, sizeof(buf) - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			cli_error("--secret %.*s: %s: %s", (int)nlen, name,
				  path, strerror(errno));
			goto out;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	if (len > 0 && buf[len - 1] == '\n')
		len--;
	if (len > 0 && buf[len - 1] == '\r')
		len--;
	if (len > 4096) {
		cli_error("--secret %.*s: %s holds more than 4096 bytes",
			  (int)nlen, name, path);
		goto out;
	}
	if (memchr(buf, '\0', len)) {
		cli_error(
			"--secret %.*s: %s holds a NUL byte, which no environment "
			"variable can",
			(int)nlen, name, path);
		goto out;
	}
	if (asprintf(&entry, "%.*s=%.*s", (int)nlen, name, (int)len, buf) < 0) {
		cli_error("out of memory");
		entry = NULL;
	}
out:
	explicit_bzero(buf, sizeof(buf));
	close(fd);
	return entry;
}

static int secret_given(const cli_strv *secrets, const char *name, size_t nlen)
{
	for (size_t i = 0; i < secrets->n; i++)
		if (strncmp(secrets->v[i], name, nlen) == 0 &&
		    secrets->v[i][nlen] == '=')
			return 1;
	return 0;
}

int cli_secret_add(cli_strv *secrets, const char *arg)
{
	const char *eq = strchr(arg, '='), *v;
	size_t nlen = eq ? (size_t)(eq - arg) : strlen(arg);
	char *entry = NULL;

	if (nlen == 0) {
		cli_error("invalid --secret '%s': expected NAME or NAME=@FILE",
			  arg);
		return -1;
	}
	if (eq && eq[1] != '@') {
		/* A value on the command line is in every `ps` listing. */
		cli_error(
			"--secret %.*s: give the value in hutch's environment "
			"(--secret NAME) or a file (--secret NAME=@FILE), not on the "
			"command line",
			(int)nlen, arg);
		return -1;
	}
	if (secret_given(secrets, arg, nlen)) {
		cli_error("--secret %.*s is given twice", (int)nlen, arg);
		return -1;
	}
	if (eq) {
		entry = secret_file(arg, nlen, eq + 2);
	} else {
		v = getenv(arg);
		if (!v) {
			cli_error(
				"--secret %s: %s is not set in hutch's environment",
				arg, arg);
			return -1;
		}
		if (asprintf(&entry, "%s=%s", arg, v) < 0) {
			cli_error("out of memory");
			entry = NULL;
		}
	}
	if (!entry)
		return -1;
	if (cli_strv_add(secrets, entry) < 0) {
		explicit_bzero(entry, strlen(entry));
		free(entry);
		cli_error("out of memory");
		return -1;
	}
	return 0;
}

int cli_secrets_from_env(cli_strv *secrets)
{
	const char *list = getenv("HUTCH_SECRETS"), *p, *end;
	char name[256];

	for (p = list; p && *p; p = *end ? end + 1 : end) {
		size_t n;

		end = p + strcspn(p, ", ");
		n = (size_t)(end - p);
		if (n == 0)
			continue;
		if (n >= sizeof(name)) {
			cli_error("HUTCH_SECRETS: a name is too long");
			return -1;
		}
		memcpy(name, p, n);
		name[n] = '\0';
		/* --secret NAME=@FILE given as well: the option wins. */
		if (secret_given(secrets, name, n))
			continue;
		if (cli_secret_add(secrets, name) < 0)
			return -1;
	}
	return 0;
}

void cli_secrets_free(cli_strv *secrets)
{
	for (size_t i = 0; i < secrets->n; i++) {
		explicit_bzero((char *)secrets->v[i], strlen(secrets->v[i]));
		free((char *)secrets->v[i]);
	}
	cli_strv_free(secrets);
}

int cli_env_flag(const char *name)
{
	const char *v = getenv(name);

	return v && *v && strcmp(v, "0") != 0;
}

void cli_human_size(char *out, size_t outsz, double v)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	size_t u = 0;

	while (v >= 1024.0 && u + 1 < sizeof(units) / sizeof(units[0])) {
		v /= 1024.0;
		u++;
	}
	snprintf(out, outsz, u ? "%.1f %s" : "%.0f %s", v, units[u]);
}
