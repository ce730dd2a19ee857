/*
 * cmd_fs.c - hutch read, write, edit, grep, find and ls
 *
 * Exit statuses: 0 done; 1 grep found nothing; 2 the tool refused (path
 * outside the workspace, not found, no unique match, binary file, bad
 * pattern...); 125 hutch or the engine failed.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <json-c/json.h>

#include "cli.h"
/* Pure UTF-8 helpers, shared with the library and the agent. */
#include "../shared/utf8.h"

#define EXIT_NOMATCH 1
#define EXIT_REFUSED 2

enum tool {
	T_READ,
	T_WRITE,
	T_EDIT,
	T_GREP,
	T_FIND,
	T_LS
};

static const struct tool_info {
	const char *name;
	const char *usage;
	const char *opts;	/* option letters the tool accepts */
	int min_args, max_args; /* operands after SESSION */
} tools[] = {
	[T_READ] = { "read",
		     "read SESSION PATH [--offset LINE] [--limit N] [--max-bytes BYTES]",
		     "olb", 1, 1 },
	[T_WRITE] = { "write",
		      "write SESSION PATH [--content TEXT]   (else stdin)", "c",
		      1, 1 },
	[T_EDIT] = { "edit", "edit SESSION PATH --old TEXT --new TEXT [--all]",
		     "ONa", 1, 1 },
	[T_GREP] = { "grep",
		     "grep SESSION PATTERN [PATH] [--include GLOB]... [-i] [--max N]",
		     "Iim", 1, 2 },
	[T_FIND] = { "find", "find SESSION GLOB [PATH] [--type f|d] [--max N]",
		     "Tm", 1, 2 },
	[T_LS] = { "ls", "ls SESSION [PATH] [--max N]", "m", 0, 1 },
};

static hutch_cancel *interrupt;

static void on_signal(int sig)
{
	(void)sig;
	hutch_cancel_raise(interrupt);
}

static void usage(enum tool t)
{
	fprintf(stderr,
		"usage: hutch %s [--json] [--timeout SEC] [--secret NAME[=@FILE]]...\n",
		tools[t].usage);
}

/* Short names for --json errors, stable for scripts and agents. */
static const char *code_token(int code)
{
	switch (code) {
	case HUTCH_EESCAPE:
		return "escape";
	case HUTCH_ENOTFOUND:
		return "not_found";
	case HUTCH_EINVALID:
		return "invalid";
	case HUTCH_ENOMATCH:
		return "no_match";
	case HUTCH_EAMBIGUOUS:
		return "ambiguous";
	case HUTCH_ETOOBIG:
		return "too_big";
	case HUTCH_ECONFLICT:
		return "conflict";
	case HUTCH_ETIMEOUT:
		return "timeout";
	case HUTCH_ECANCELLED:
		return "cancelled";
	case HUTCH_EUNREACHABLE:
		return "unreachable";
	default:
		return "failed";
	}
}

static int refused(int code)
{
	return code == HUTCH_EESCAPE || code == HUTCH_ENOTFOUND ||
	       code == HUTCH_EINVALID || code == HUTCH_ENOMATCH ||
	       code == HUTCH_EAMBIGUOUS || code == HUTCH_ETOOBIG ||
	       code == HUTCH_ECONFLICT;
}

static int fail(hutch_error *err, int json)
{
	int code = hutch_error_code(err);
	const char *detail = hutch_error_detail(err);

	if (json) {
		json_object *o = json_object_new_object(),
			    *e = json_object_new_object();

		json_object_object_add(
			e, "code", json_object_new_string(code_token(code)));
		json_object_object_add(
			e, "message",
			json_object_new_string(hutch_error_message(err)));
		if (detail)
			json_object_object_add(e, "detail",
					       json_object_new_string(detail));
		json_object_object_add(o, "error", e);
		printf("%s\n",
		       json_object_to_json_string_ext(
			       o, JSON_C_TO_STRING_PLAIN |
					  JSON_C_TO_STRING_NOSLASHESCAPE));
		json_object_put(o);
	} else {
		cli_error("%s", hutch_error_message(err));
		if (detail)
			fprintf(stderr, "%s\n", detail);
	}
	hutch_error_free(err);
	return refused(code) ? EXIT_REFUSED : EXIT_HUTCH_FAILED;
}

/* stdin for write, bounded like the library's text argument. */
static int read_stdin(char **out, size_t *len)
{
	size_t cap = 65536, n = 0;
	char *buf = malloc(cap);
	ssize_t got;

	if (!buf)
		return -1;
	for (;;) {
		if (n == cap) {
			char *nb;

			if (cap >= HUTCH_FS_MAX_TEXT + 1)
				break;
			cap *= 2;
			nb = realloc(buf, cap);
			if (!nb) {
				free(buf);
				return -1;
			}
			buf = nb;
		}
		got = read(STDIN_FILENO, buf + n, cap - n);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			cli_error("write: reading stdin: %s", strerror(errno));
			free(buf);
			return -1;
		}
		if (got == 0)
			break;
		n += (size_t)got;
	}
	*out = buf;
	*len = n;
	return 0;
}

static const char *type_name(hutch_fs_type t)
{
	switch (t) {
	case HUTCH_FS_FILE:
		return "file";
	case HUTCH_FS_DIR:
		return "dir";
	case HUTCH_FS_SYMLINK:
		return "symlink";
	default:
		return "other";
	}
}

/* Text output: what a person (or a shell pipeline) wants to see. */
static int print_text(enum tool t, const hutch_fs_result *res)
{
	size_t n = hutch_fs_result_count(res), len;
	hutch_fs_entry e;
	const char *text;
	uint64_t a, b, c, d;
	int created;

	switch (t) {
	case T_READ:
		text = hutch_fs_result_content(res, &len);
		if (cli_write_all(STDOUT_FILENO, text ? text : "", len) < 0)
			return EXIT_HUTCH_FAILED;
		hutch_fs_result_lines(res, &a, &b, &c, &d);
		if (hutch_fs_result_truncated(res) && d)
			cli_error("read: %s: lines %" PRIu64 "-%" PRIu64
				  " of %" PRIu64
				  " shown; go on with --offset %" PRIu64,
				  hutch_fs_result_path(res), a, a + b - 1, c,
				  d);
		return 0;
	case T_WRITE:
		hutch_fs_result_write(res, &a, &created);
		printf("%s: %" PRIu64 " bytes written%s\n",
		       hutch_fs_result_path(res), a,
		       created ? " (new file)" : "");
		return 0;
	case T_EDIT:
		hutch_fs_result_edit(res, &a, &text);
		printf("%s: %" PRIu64 " replacement%s (%s match)\n",
		       hutch_fs_result_path(res), a, a == 1 ? "" : "s",
		       text ? text : "?");
		return 0;
	case T_GREP:
	case T_FIND:
	case T_LS:
		for (size_t i = 0; i < n; i++) {
			char *own[3];
			const char *name, *target, *line;

			if (hutch_fs_result_entry(&e, res, i) < 0)
				break;
			/* Names come from the sandbox: a newline would make two
			 * entries of one, an escape sequence would drive the
			 * terminal.  --json keeps them exact. */
			name = hutch__utf8_shown(e.name ? e.name : e.path, 0,
						 &own[0]);
			target = hutch__utf8_shown(e.target ? e.target : "?", 0,
						   &own[1]);
			line = hutch__utf8_shown(e.text ? e.text : "",
						 HUTCH__ESC_TEXT, &own[2]);
			if (t == T_GREP)
				printf("%s:%" PRIu64 ":%s\n", name, e.line,
				       line);
			else if (t == T_FIND)
				printf("%s\n", name);
			else if (e.type == HUTCH_FS_SYMLINK)
				printf("%-7s %10" PRIu64 "  %s -> %s\n",
				       type_name(e.type), e.size, name, target);
			else
				printf("%-7s %10" PRIu64 "  %s%s\n",
				       type_name(e.type), e.size, name,
				       e.type == HUTCH_FS_DIR ? "/" : "");
			for (size_t k = 0; k < 3; k++)
				free(own[k]);
		}
		if (hutch_fs_result_truncated(res))
			cli_error(
				"%s: stopped after %zu entries; narrow the search or "
				"raise --max",
				tools[t].name, n);
		return t == T_GREP && n == 0 ? EXIT_NOMATCH : 0;
	}
	return 0;
}

static int run_tool(cli_globals *g, enum tool t, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "timeout", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ "offset", required_argument, NULL, 'o' },
		{ "limit", required_argument, NULL, 'l' },
		{ "max-bytes", required_argument, NULL, 'b' },
		{ "content", required_argument, NULL, 'c' },
		{ "old", required_argument, NULL, 'O' },
		{ "new", required_argument, NULL, 'N' },
		{ "all", no_argument, NULL, 'a' },
		{ "include", required_argument, NULL, 'I' },
		{ "ignore-case", no_argument, NULL, 'i' },
		{ "max", required_argument, NULL, 'm' },
		{ "type", required_argument, NULL, 'T' },
		{ "secret", required_argument, NULL, 's' },
		{ NULL, 0, NULL, 0 },
	};
	hutch_fs_options o = HUTCH_FS_OPTIONS_INIT;
	const struct tool_info *ti = &tools[t];
	cli_strv include = { 0 }, secrets = { 0 };
	hutch_engine *engine = NULL;
	hutch_session *session = NULL;
	hutch_fs_result *res = NULL;
	hutch_error *err = NULL;
	const char *content = NULL, *old_text = NULL, *new_text = NULL;
	char *stdin_buf = NULL, **args;
	size_t content_len = 0;
	int c, json = 0, rc = EXIT_HUTCH_FAILED, nargs, call;
	int64_t v;
	struct sigaction sa;

	while ((c = getopt_long(argc, argv, "hi", opts, NULL)) != -1) {
		if (c != 'j' && c != 't' && c != 'h' && c != 's' &&
		    (c == '?' || !strchr(ti->opts, c))) {
			if (c != '?')
				cli_error("%s: option '%s' does not apply",
					  ti->name, argv[optind - 1]);
			usage(t);
			goto out;
		}
		switch (c) {
		case 'h':
			printf("usage: hutch %s [--json] [--timeout SEC] [--secret NAME[=@FILE]]...\n",
			       ti->usage);
			rc = 0;
			goto out;
		case 'j':
			json = 1;
			break;
		case 's':
			if (cli_secret_add(&secrets, optarg) < 0)
				goto out;
			break;
		case 't':
			v = cli_parse_seconds(optarg);
			if (v <= 0) {
				cli_error("invalid --timeout '%s': seconds",
					  optarg);
				goto out;
			}
			o.timeout_ms = (uint64_t)v;
			break;
		case 'o':
		case 'l':
		case 'm':
		case 'b':
			v = cli_parse_size(optarg);
			if (v <= 0 ||
			    (c != 'b' &&
			     strspn(optarg, "0123456789") != strlen(optarg))) {
				cli_error(
					"invalid --%s '%s': a positive number",
					c == 'o' ? "offset" :
					c == 'l' ? "limit" :
					c == 'm' ? "max" :
						   "max-bytes",
					optarg);
				goto out;
			}
			if (c == 'o')
				o.offset = (uint64_t)v;
			else if (c == 'l')
				o.limit = (uint64_t)v;
			else if (c == 'm')
				o.max = (uint64_t)v;
			else
				o.max_bytes = (uint64_t)v;
			break;
		case 'c':
			content = optarg;
			content_len = strlen(optarg);
			break;
		case 'O':
			old_text = optarg;
			break;
		case 'N':
			new_text = optarg;
			break;
		case 'a':
			o.all = 1;
			break;
		case 'I':
			if (cli_strv_add(&include, optarg) < 0) {
				cli_error("out of memory");
				goto out;
			}
			break;
		case 'i':
			o.ignore_case = 1;
			break;
		case 'T':
			if (strcmp(optarg, "f") != 0 &&
			    strcmp(optarg, "d") != 0) {
				cli_error("invalid --type '%s': f or d",
					  optarg);
				goto out;
			}
			o.type = optarg[0];
			break;
		}
	}
	args = argv + optind;
	nargs = argc - optind - 1; /* operands after SESSION */
	if (nargs < ti->min_args || nargs > ti->max_args) {
		usage(t);
		goto out;
	}
	if (t == T_EDIT && (!old_text || !new_text)) {
		cli_error("edit: --old and --new are both needed");
		usage(t);
		goto out;
	}
	o.include = include.v;
	o.include_count = include.n;
	if (cli_secrets_from_env(&secrets) < 0)
		goto out;

	if (t == T_WRITE && !content) {
		if (read_stdin(&stdin_buf, &content_len) < 0)
			goto out;
		content = stdin_buf;
	}

	if ((rc = cli_session_engine(g, args[0], HUTCH_FLEET_CREATE,
				     &engine)) != 0)
		goto out;
	if (hutch_session_open(&session, engine, args[0], NULL, &err) < 0 ||
	    (secrets.n && hutch_session_set_secrets(session, secrets.v,
						    secrets.n, &err) < 0)) {
		rc = fail(err, json);
		goto out;
	}
	if (hutch_cancel_new(&interrupt, &err) < 0) {
		rc = fail(err, json);
		goto out;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	o.cancel = interrupt;

	switch (t) {
	case T_READ:
		call = hutch_fs_read(&res, session, args[1], &o, &err);
		break;
	case T_WRITE:
		call = hutch_fs_write(&res, session, args[1], content,
				      content_len, &o, &err);
		break;
	case T_EDIT:
		call = hutch_fs_edit(&res, session, args[1], old_text,
				     strlen(old_text), new_text,
				     strlen(new_text), &o, &err);
		break;
	case T_GREP:
		call = hutch_fs_grep(&res, session, args[1],
				     nargs > 1 ? args[2] : NULL, &o, &err);
		break;
	case T_FIND:
		call = hutch_fs_find(&res, session, args[1],
				     nargs > 1 ? args[2] : NULL, &o, &err);
		break;
	case T_LS:
	default:
		call = hutch_fs_ls(&res, session, nargs > 0 ? args[1] : NULL,
				   &o, &err);
		break;
	}
	if (call < 0) {
		rc = fail(err, json);
		goto out;
	}
	if (json) {
		printf("%s\n", hutch_fs_result_json(res));
		rc = t == T_GREP && hutch_fs_result_count(res) == 0 ?
			     EXIT_NOMATCH :
			     0;
	} else {
		rc = print_text(t, res);
	}
	if (fflush(stdout) != 0 && rc == 0) {
		cli_error("%s: writing the result: %s", ti->name,
			  strerror(errno));
		rc = EXIT_HUTCH_FAILED;
	}
out:
	hutch_fs_result_free(res);
	hutch_session_free(session);
	hutch_engine_free(engine);
	hutch_cancel_free(interrupt);
	interrupt = NULL;
	cli_strv_free(&include);
	cli_secrets_free(&secrets);
	free(stdin_buf);
	return rc;
}

int cmd_read(cli_globals *g, int argc, char **argv)
{
	return run_tool(g, T_READ, argc, argv);
}

int cmd_write(cli_globals *g, int argc, char **argv)
{
	return run_tool(g, T_WRITE, argc, argv);
}

int cmd_edit(cli_globals *g, int argc, char **argv)
{
	return run_tool(g, T_EDIT, argc, argv);
}

int cmd_grep(cli_globals *g, int argc, char **argv)
{
	return run_tool(g, T_GREP, argc, argv);
}

int cmd_find(cli_globals *g, int argc, char **argv)
{
	return run_tool(g, T_FIND, argc, argv);
}

int cmd_ls(cli_globals *g, int argc, char **argv)
{
	return run_tool(g, T_LS, argc, argv);
}
