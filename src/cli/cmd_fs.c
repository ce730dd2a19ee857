/*
 * cmd_fs.c - hutch read, write, edit, grep, find, ls, rm-file and mv-file
 *
 * Exit statuses: 0 done; 1 grep found nothing; 2 the tool refused (path
 * outside the workspace, not found, no unique match, binary file, bad
 * pattern...); 125 hutch or the engine failed.
 */
#include <errno.h>
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
	T_LS,
	T_DELETE,
	T_MOVE
};

static const cli_option common_options[] = {
	{ "json", NULL, 'j', "print the result (or the error) as JSON" },
	{ "timeout", "SEC", 't', "give up after SEC seconds" },
	{ "secret", "NAME[=@FILE]", 's',
	  "give $NAME (or FILE's contents) as a secret: redacted from results" },
	{ NULL, NULL, 0, NULL },
};

static const cli_option read_options[] = {
	{ "offset", "LINE", 'o', "start at line LINE (1 is the first)" },
	{ "limit", "N", 'l', "show at most N lines" },
	{ "max-bytes", "BYTES", 'b', "show at most BYTES" },
	{ "line-numbers", NULL, 'n',
	  "start each line with its number and a tab, as cat -n" },
	{ NULL, NULL, 0, NULL },
};

static const cli_option write_options[] = {
	{ "content", "TEXT", 'c', "write TEXT (else what stdin gives)" },
	{ NULL, NULL, 0, NULL },
};

static const cli_option edit_options[] = {
	{ "old", "TEXT", 'O', "the text to replace (needed)" },
	{ "new", "TEXT", 'N', "what replaces it (needed)" },
	{ "all", NULL, 'a', "replace every match, not a unique one" },
	{ NULL, NULL, 0, NULL },
};

static const cli_option grep_options[] = {
	{ "include", "GLOB", 'I', "only files whose name GLOB matches" },
	{ "ignore-case", NULL, 'i', "match without regard to case" },
	{ "max", "N", 'm', "stop after N matches" },
	{ NULL, NULL, 0, NULL },
};

static const cli_option find_options[] = {
	{ "type", "f|d", 'T', "only files (f) or directories (d)" },
	{ "max", "N", 'm', "stop after N entries" },
	{ NULL, NULL, 0, NULL },
};

static const cli_option ls_options[] = {
	{ "max", "N", 'm', "stop after N entries" },
	{ NULL, NULL, 0, NULL },
};

static const cli_option rm_file_options[] = {
	{ "recursive", NULL, 'r', "delete a directory with everything in it" },
	{ NULL, NULL, 0, NULL },
};

static const cli_option mv_file_options[] = {
	{ "overwrite", NULL, 'W', "replace what is at TO" },
	{ NULL, NULL, 0, NULL },
};

static int cmd_read(cli_globals *g, int argc, char **argv);
static int cmd_write(cli_globals *g, int argc, char **argv);
static int cmd_edit(cli_globals *g, int argc, char **argv);
static int cmd_grep(cli_globals *g, int argc, char **argv);
static int cmd_find(cli_globals *g, int argc, char **argv);
static int cmd_ls(cli_globals *g, int argc, char **argv);
static int cmd_rm_file(cli_globals *g, int argc, char **argv);
static int cmd_mv_file(cli_globals *g, int argc, char **argv);

const cli_command cli_cmd_read = {
	.name = "read",
	.fn = cmd_read,
	.synopsis = "SESSION PATH [options]",
	.about = "print a text file of the workspace",
	.shortopts = "hn",
	.opts = { read_options, common_options },
};
const cli_command cli_cmd_write = {
	.name = "write",
	.fn = cmd_write,
	.synopsis = "SESSION PATH [options]",
	.about = "write a file of the workspace (stdin without --content)",
	.shortopts = "h",
	.opts = { write_options, common_options },
};
const cli_command cli_cmd_edit = {
	.name = "edit",
	.fn = cmd_edit,
	.synopsis = "SESSION PATH --old TEXT --new TEXT [options]",
	.about = "replace text in a file of the workspace",
	.shortopts = "h",
	.opts = { edit_options, common_options },
};
const cli_command cli_cmd_grep = {
	.name = "grep",
	.fn = cmd_grep,
	.synopsis = "SESSION PATTERN [PATH] [options]",
	.about = "search the workspace's files for a regular expression",
	.notes = "PATTERN is PCRE2 (Perl-compatible, as ripgrep): \\d \\w \\s "
		 "\\b (?i) lazy quantifiers (.*?), lookaround; Unicode-aware, "
		 "matched against each line (bytes that are not UTF-8 match "
		 "nothing). A pattern that backtracks too much, such as "
		 "(a+)+$, ends with an error.",
	.shortopts = "hi",
	.opts = { grep_options, common_options },
};
const cli_command cli_cmd_find = {
	.name = "find",
	.fn = cmd_find,
	.synopsis = "SESSION GLOB [PATH] [options]",
	.about = "find files of the workspace by name",
	.shortopts = "h",
	.opts = { find_options, common_options },
};
const cli_command cli_cmd_ls = {
	.name = "ls",
	.fn = cmd_ls,
	.synopsis = "SESSION [PATH] [options]",
	.about = "list a directory of the workspace",
	.shortopts = "h",
	.opts = { ls_options, common_options },
};
/* Not "rm" and "mv": `hutch rm` removes sessions. */
const cli_command cli_cmd_rm_file = {
	.name = "rm-file",
	.fn = cmd_rm_file,
	.synopsis = "SESSION PATH [options]",
	.about = "delete a file or directory of the workspace",
	.shortopts = "hr",
	.opts = { rm_file_options, common_options },
};
const cli_command cli_cmd_mv_file = {
	.name = "mv-file",
	.fn = cmd_mv_file,
	.synopsis = "SESSION FROM TO [options]",
	.about = "move or rename a file or directory of the workspace",
	.shortopts = "h",
	.opts = { mv_file_options, common_options },
};

/* Every tool's options, for parsing: an option of another tool is then
 * refused by name ("does not apply") rather than as unknown. */
static const cli_command any_tool = {
	.name = "fs",
	.fn = NULL,
	.synopsis = "",
	.about = NULL,
	.shortopts = "hinr",
	.opts = { read_options, write_options, edit_options, grep_options,
		  find_options, rm_file_options, mv_file_options,
		  common_options },
};

static const struct tool_info {
	const cli_command *cmd;
	int min_args, max_args; /* operands after SESSION */
} tools[] = {
	[T_READ] = { &cli_cmd_read, 1, 1 },
	[T_WRITE] = { &cli_cmd_write, 1, 1 },
	[T_EDIT] = { &cli_cmd_edit, 1, 1 },
	[T_GREP] = { &cli_cmd_grep, 1, 2 },
	[T_FIND] = { &cli_cmd_find, 1, 2 },
	[T_LS] = { &cli_cmd_ls, 0, 1 },
	[T_DELETE] = { &cli_cmd_rm_file, 1, 1 },
	[T_MOVE] = { &cli_cmd_mv_file, 2, 2 },
};

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
		cli_print_json(o);
		json_object_put(o);
	} else {
		/* The message is in the CLI's words (the default
		 * hutch_fs_words): it names --all, --recursive... */
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

/* "PATH: deleted" or "FROM -> TO".  The paths are the resolved ones,
 * which a symlink made in the sandbox can spell: shown escaped. */
static void print_delete_move(enum tool t, const hutch_fs_result *res)
{
	char *own[2] = { NULL, NULL };
	const char *path = hutch__utf8_shown(hutch_fs_result_path(res), 0,
					     &own[0]),
		   *from;
	hutch_fs_type type;
	uint64_t removed;
	int replaced;

	if (t == T_DELETE) {
		hutch_fs_result_delete(res, &removed, &type);
		if (type == HUTCH_FS_DIR)
			printf("%s: directory deleted (%" PRIu64 " entr%s)\n",
			       path, removed, removed == 1 ? "y" : "ies");
		else
			printf("%s: %s deleted\n", path,
			       hutch_fs_type_name(type));
	} else {
		hutch_fs_result_move(res, &from, &type, &replaced);
		from = hutch__utf8_shown(from ? from : "?", 0, &own[1]);
		printf("%s -> %s%s\n", from, path,
		       replaced ? " (replaced what was there)" : "");
	}
	free(own[0]);
	free(own[1]);
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
	case T_DELETE:
	case T_MOVE:
		print_delete_move(t, res);
		return 0;
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
				       hutch_fs_type_name(e.type), e.size, name,
				       target);
			else
				printf("%-7s %10" PRIu64 "  %s%s\n",
				       hutch_fs_type_name(e.type), e.size, name,
				       e.type == HUTCH_FS_DIR ? "/" : "");
			for (size_t k = 0; k < 3; k++)
				free(own[k]);
		}
		if (hutch_fs_result_truncated(res))
			cli_error(
				"%s: stopped after %zu entries; narrow the search or "
				"raise --max",
				tools[t].cmd->name, n);
		return t == T_GREP && n == 0 ? EXIT_NOMATCH : 0;
	}
	return 0;
}

/* What the command line asks of a tool. */
struct fs_args {
	enum tool t;
	hutch_fs_options o;
	hutch_fs_words words; /* the command's name; else the defaults */
	cli_strv include, secrets;
	const char *content, *old_text, *new_text;
	size_t content_len;
	char *stdin_buf, **args; /* args[0] is SESSION */
	int nargs;		 /* operands after SESSION */
	int json;
};

static void fs_args_free(struct fs_args *a)
{
	cli_strv_free(&a->include);
	cli_secrets_free(&a->secrets);
	free(a->stdin_buf);
}

/* --offset, --limit, --max and --max-bytes: 0, or -1 with the error said. */
static int fs_count(struct fs_args *a, int c, const char *arg)
{
	int64_t v = cli_parse_size(arg);

	if (v <= 0 || (c != 'b' && strspn(arg, "0123456789") != strlen(arg))) {
		cli_error("invalid --%s '%s': a positive number",
			  c == 'o' ? "offset" :
			  c == 'l' ? "limit" :
			  c == 'm' ? "max" :
				     "max-bytes",
			  arg);
		return -1;
	}
	if (c == 'o')
		a->o.offset = (uint64_t)v;
	else if (c == 'l')
		a->o.limit = (uint64_t)v;
	else if (c == 'm')
		a->o.max = (uint64_t)v;
	else
		a->o.max_bytes = (uint64_t)v;
	return 0;
}

/* One option, known to apply to the tool: 0, 1 after --help, -1 (said). */
static int fs_option(struct fs_args *a, int c, const char *arg)
{
	int64_t v;

	switch (c) {
	case 'h':
		cli_help(tools[a->t].cmd, stdout);
		return 1;
	case 'j':
		a->json = 1;
		return 0;
	case 's':
		return cli_secret_add(&a->secrets, arg);
	case 't':
		v = cli_parse_seconds(arg);
		if (v <= 0) {
			cli_error("invalid --timeout '%s': seconds", arg);
			return -1;
		}
		a->o.timeout_ms = (uint64_t)v;
		return 0;
	case 'o':
	case 'l':
	case 'm':
	case 'b':
		return fs_count(a, c, arg);
	case 'c':
		a->content = arg;
		a->content_len = strlen(arg);
		return 0;
	case 'O':
		a->old_text = arg;
		return 0;
	case 'N':
		a->new_text = arg;
		return 0;
	case 'a':
		a->o.all = 1;
		return 0;
	case 'n':
		a->o.line_numbers = 1;
		return 0;
	case 'r':
		a->o.recursive = 1;
		return 0;
	case 'W':
		a->o.overwrite = 1;
		return 0;
	case 'I':
		if (cli_strv_add(&a->include, arg) < 0) {
			cli_error("out of memory");
			return -1;
		}
		return 0;
	case 'i':
		a->o.ignore_case = 1;
		return 0;
	case 'T':
		if (strcmp(arg, "f") != 0 && strcmp(arg, "d") != 0) {
			cli_error("invalid --type '%s': f or d", arg);
			return -1;
		}
		a->o.type = arg[0];
		return 0;
	}
	return -1;
}

/* Parse a tool's command line: 0, 1 after --help, -1 (error said). */
static int fs_parse(struct fs_args *a, int argc, char **argv)
{
	const struct tool_info *ti = &tools[a->t];
	struct option lo[CLI_MAX_OPTIONS + 2];
	int c, r;

	cli_long_options(&any_tool, lo);
	while ((c = cli_next_option(&any_tool, lo, argc, argv)) != -1) {
		if (c == '?' || !cli_command_option(ti->cmd, c)) {
			if (c != '?')
				cli_error(
					"%s: option '--%s' does not apply",
					ti->cmd->name,
					cli_command_option(&any_tool, c)->name);
			cli_usage_error(ti->cmd);
			return -1;
		}
		if ((r = fs_option(a, c, optarg)) != 0)
			return r;
	}
	a->args = argv + optind;
	a->nargs = argc - optind - 1;
	if (a->nargs < ti->min_args || a->nargs > ti->max_args) {
		cli_usage_error(ti->cmd);
		return -1;
	}
	if (a->t == T_EDIT && (!a->old_text || !a->new_text)) {
		cli_error("edit: --old and --new are both needed");
		cli_usage_error(ti->cmd);
		return -1;
	}
	a->o.include = a->include.v;
	a->o.include_count = a->include.n;
	if (cli_secrets_from_env(&a->secrets) < 0)
		return -1;
	if (a->t == T_WRITE && !a->content) {
		if (read_stdin(&a->stdin_buf, &a->content_len) < 0)
			return -1;
		a->content = a->stdin_buf;
	}
	return 0;
}

/* The library call behind the tool. */
static int fs_call(hutch_fs_result **res, hutch_session *s,
		   const struct fs_args *a, hutch_error **err)
{
	char *const *args = a->args;
	const char *where = a->nargs > 1 ? args[2] : NULL;

	switch (a->t) {
	case T_READ:
		return hutch_fs_read(res, s, args[1], &a->o, err);
	case T_WRITE:
		return hutch_fs_write(res, s, args[1], a->content,
				      a->content_len, &a->o, err);
	case T_EDIT:
		return hutch_fs_edit(res, s, args[1], a->old_text,
				     strlen(a->old_text), a->new_text,
				     strlen(a->new_text), &a->o, err);
	case T_GREP:
		return hutch_fs_grep(res, s, args[1], where, &a->o, err);
	case T_FIND:
		return hutch_fs_find(res, s, args[1], where, &a->o, err);
	case T_DELETE:
		return hutch_fs_delete(res, s, args[1], &a->o, err);
	case T_MOVE:
		return hutch_fs_move(res, s, args[1], args[2], &a->o, err);
	case T_LS:
	default:
		return hutch_fs_ls(res, s, a->nargs > 0 ? args[1] : NULL, &a->o,
				   err);
	}
}

static int run_tool(cli_globals *g, enum tool t, int argc, char **argv)
{
	struct fs_args a = { .t = t,
			     .o = HUTCH_FS_OPTIONS_INIT,
			     .words = { .tool = tools[t].cmd->name } };
	hutch_engine *engine = NULL;
	hutch_session *session = NULL;
	hutch_fs_result *res = NULL;
	hutch_error *err = NULL;
	int rc = EXIT_HUTCH_FAILED, r;

	a.o.words = &a.words;
	if ((r = fs_parse(&a, argc, argv)) != 0) {
		rc = r > 0 ? 0 : EXIT_HUTCH_FAILED;
		goto out;
	}
	/* A file tool never makes a session: a mistyped name is an
	 * error, not a new, empty workspace. */
	if ((rc = cli_session_engine(g, a.args[0], 0, &engine)) != 0)
		goto out;
	if (hutch_session_open(&session, engine, a.args[0], NULL, &err) == 0)
		hutch_session_set_create(session, 0);
	if (!session ||
	    (a.secrets.n && hutch_session_set_secrets(session, a.secrets.v,
						      a.secrets.n, &err) < 0) ||
	    cli_cancel_begin(&a.o.cancel, 0, &err) < 0 ||
	    fs_call(&res, session, &a, &err) < 0) {
		rc = fail(err, a.json);
		goto out;
	}
	if (a.json) {
		printf("%s\n", hutch_fs_result_json(res));
		rc = t == T_GREP && hutch_fs_result_count(res) == 0 ?
			     EXIT_NOMATCH :
			     0;
	} else {
		rc = print_text(t, res);
	}
	if (fflush(stdout) != 0 && rc == 0) {
		cli_error("%s: writing the result: %s", tools[t].cmd->name,
			  strerror(errno));
		rc = EXIT_HUTCH_FAILED;
	}
out:
	hutch_fs_result_free(res);
	hutch_session_free(session);
	hutch_engine_free(engine);
	cli_cancel_end();
	fs_args_free(&a);
	return rc;
}

static int cmd_read(cli_globals *g, int argc, char **argv)
{
	return run_tool(g, T_READ, argc, argv);
}

static int cmd_write(cli_globals *g, int argc, char **argv)
{
	return run_tool(g, T_WRITE, argc, argv);
}

static int cmd_edit(cli_globals *g, int argc, char **argv)
{
	return run_tool(g, T_EDIT, argc, argv);
}

static int cmd_grep(cli_globals *g, int argc, char **argv)
{
	return run_tool(g, T_GREP, argc, argv);
}

static int cmd_find(cli_globals *g, int argc, char **argv)
{
	return run_tool(g, T_FIND, argc, argv);
}

static int cmd_ls(cli_globals *g, int argc, char **argv)
{
	return run_tool(g, T_LS, argc, argv);
}

static int cmd_rm_file(cli_globals *g, int argc, char **argv)
{
	return run_tool(g, T_DELETE, argc, argv);
}

static int cmd_mv_file(cli_globals *g, int argc, char **argv)
{
	return run_tool(g, T_MOVE, argc, argv);
}
