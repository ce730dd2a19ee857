/*
 * test_cli_help.c - every option a command takes is in its --help, in
 * `hutch COMMAND --help` as the built program prints it, and in hutch(1)
 *
 * The parser's table (cli_long_options) and the help (cli_help) come from
 * the same cli_option tables; these tests hold that in place, and catch a
 * man page that falls behind an option added to a table.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <criterion/criterion.h>

#include "cli.h"

/* "--NAME" in `text` as a whole option name: "--max" is not found in
 * "--max-bytes", nor "--read-only" in "--no-read-only".  `dash` is how the
 * text spells "-" ("-", or "\\-" in roff). */
static int has_option(const char *text, const char *name, const char *dash)
{
	char want[128], spelled[96];
	size_t k = 0, dl = strlen(dash);

	for (const char *p = name; *p && k + dl + 1 < sizeof(spelled); p++) {
		if (*p == '-') {
			memcpy(spelled + k, dash, dl);
			k += dl;
		} else {
			spelled[k++] = *p;
		}
	}
	spelled[k] = '\0';
	snprintf(want, sizeof(want), "%s%s%s", dash, dash, spelled);
	for (const char *p = strstr(text, want); p; p = strstr(p + 1, want)) {
		const char *end = p + strlen(want);
		int before_ok = p == text || !(p[-1] == '-' || p[-1] == '\\' ||
					       (p[-1] >= 'a' && p[-1] <= 'z'));
		int after_ok = !((*end >= 'a' && *end <= 'z') ||
				 strncmp(end, dash, dl) == 0 || *end == '-');

		if (before_ok && after_ok)
			return 1;
	}
	return 0;
}

static char *help_of(const cli_command *c)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	cr_assert(f);
	cli_help(c, f);
	fclose(f);
	return buf;
}

static char *read_all(FILE *f)
{
	char *buf = NULL;
	size_t len = 0, n;
	char chunk[4096];
	FILE *m = open_memstream(&buf, &len);

	cr_assert(m);
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		fwrite(chunk, 1, n, m);
	fclose(m);
	return buf;
}

Test(cli_help, every_parsed_option_is_in_the_help)
{
	for (size_t i = 0; i < cli_command_count; i++) {
		const cli_command *c = cli_commands[i];
		struct option lo[CLI_MAX_OPTIONS + 2];
		size_t n = cli_long_options(c, lo);
		char *help = help_of(c);

		cr_expect(strncmp(help, "usage: hutch ", 13) == 0, "%s", help);
		for (size_t k = 0; k < n; k++)
			cr_expect(has_option(help, lo[k].name, "-"),
				  "hutch %s takes --%s but its --help does "
				  "not show it:\n%s",
				  c->name, lo[k].name, help);
		free(help);
	}
}

Test(cli_help, tables_fit_and_do_not_repeat_a_letter)
{
	for (size_t i = 0; i < cli_command_count; i++) {
		const cli_command *c = cli_commands[i];
		struct option lo[CLI_MAX_OPTIONS + 2];
		size_t n = cli_long_options(c, lo), tabled = 0;

		for (size_t t = 0; t < CLI_MAX_TABLES && c->opts[t]; t++)
			for (const cli_option *o = c->opts[t]; o->name; o++)
				tabled++;
		/* The cap would drop options silently. */
		cr_expect(n <= CLI_MAX_OPTIONS + 1, "%s", c->name);
		cr_expect(n >= 1 && n - 1 <= tabled, "%s", c->name);
		/* Two options on one getopt value would be one option. */
		for (size_t a = 0; a < n; a++)
			for (size_t b = a + 1; b < n; b++)
				cr_expect(lo[a].val != lo[b].val,
					  "hutch %s: --%s and --%s share '%c'",
					  c->name, lo[a].name, lo[b].name,
					  lo[a].val);
	}
}

/* The built program prints that same help for `hutch COMMAND --help`. */
Test(cli_help, the_program_shows_every_option)
{
	for (size_t i = 0; i < cli_command_count; i++) {
		const cli_command *c = cli_commands[i];
		struct option lo[CLI_MAX_OPTIONS + 2];
		size_t n = cli_long_options(c, lo);
		char cmd[512], *out;
		FILE *p;
		int st;

		if (strcmp(c->name, "version") == 0)
			continue; /* takes no options, prints the version */
		snprintf(cmd, sizeof(cmd), "'%s' %s --help </dev/null",
			 HUTCH_BIN, c->name);
		p = popen(cmd, "r");
		cr_assert(p, "popen: %s", strerror(errno));
		out = read_all(p);
		st = pclose(p);
		cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0,
			  "hutch %s --help: status %d", c->name, st);
		for (size_t k = 0; k < n; k++)
			cr_expect(has_option(out, lo[k].name, "-"),
				  "hutch %s --help does not show --%s:\n%s",
				  c->name, lo[k].name, out);
		free(out);
	}
}

/* hutch(1) names every option of every command. */
Test(cli_help, the_man_page_names_every_option)
{
	FILE *f = fopen(HUTCH_SRCDIR "/doc/hutch.1", "r");
	char *man;

	cr_assert(f, "doc/hutch.1: %s", strerror(errno));
	man = read_all(f);
	fclose(f);
	for (size_t i = 0; i < cli_command_count; i++) {
		const cli_command *c = cli_commands[i];
		struct option lo[CLI_MAX_OPTIONS + 2];
		size_t n = cli_long_options(c, lo);

		for (size_t k = 0; k < n; k++)
			cr_expect(has_option(man, lo[k].name, "\\-"),
				  "doc/hutch.1 does not name --%s of hutch %s",
				  lo[k].name, c->name);
	}
	free(man);
}

/* grep's help says which regular expressions it takes: agents write
 * ripgrep's (PCRE2) syntax, and the help must not leave them guessing.
 * Notes are wrapped like the rest of the help, within 79 columns. */
Test(cli_help, grep_names_its_syntax)
{
	char cmd[512], *out, *flat, *line;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "'%s' grep --help </dev/null", HUTCH_BIN);
	p = popen(cmd, "r");
	cr_assert(p, "popen: %s", strerror(errno));
	out = read_all(p);
	pclose(p);
	flat = strdup(out);
	cr_assert_not_null(flat);
	/* the words as read, whichever line they were wrapped onto */
	for (char *c = flat; *c; c++)
		if (*c == '\n')
			*c = ' ';
	cr_expect(strstr(flat, "PCRE2 (Perl-compatible, as ripgrep)"), "%s",
		  out);
	cr_expect(strstr(flat, "\\d \\w \\s \\b (?i) lazy quantifiers"), "%s",
		  out);
	free(flat);
	for (line = out; *line;) {
		char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);

		cr_expect_leq(len, 79, "a line over 79 columns: %.*s", (int)len,
			      line);
		line += len + (nl != NULL);
	}
	free(out);
}
