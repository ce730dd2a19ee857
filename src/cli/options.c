/*
 * options.c - command options described once: getopt's table, --help and
 * the usage line all come from a command's cli_option tables
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const cli_option help_option = { "help", NULL, 'h', "show this help" };

static int shown_short(const cli_command *c, int val)
{
	return val > 0 && val < 128 && val != ':' && val != '+' &&
	       strchr(c->shortopts, val) != NULL;
}

size_t cli_long_options(const cli_command *c, struct option *out)
{
	size_t n = 0;

	for (size_t t = 0; t < CLI_MAX_TABLES && c->opts[t]; t++) {
		for (const cli_option *o = c->opts[t]; o->name; o++) {
			size_t k;

			for (k = 0; k < n; k++)
				if (strcmp(out[k].name, o->name) == 0)
					break;
			/* A name in two tables (a tool's and the shared
			 * ones) is one option; past the cap the table is
			 * wrong, and the help test says so. */
			if (k < n || n == CLI_MAX_OPTIONS)
				continue;
			out[n].name = o->name;
			out[n].has_arg = o->arg ? required_argument :
						  no_argument;
			out[n].flag = NULL;
			out[n].val = o->val;
			n++;
		}
	}
	out[n].name = help_option.name;
	out[n].has_arg = no_argument;
	out[n].flag = NULL;
	out[n].val = help_option.val;
	memset(&out[n + 1], 0, sizeof(out[n + 1]));
	return n + 1;
}

int cli_next_option(const cli_command *c, const struct option *lo, int argc,
		    char **argv)
{
	return getopt_long(argc, argv, c->shortopts, lo, NULL);
}

const cli_option *cli_command_option(const cli_command *c, int val)
{
	if (val == help_option.val)
		return &help_option;
	for (size_t t = 0; t < CLI_MAX_TABLES && c->opts[t]; t++)
		for (const cli_option *o = c->opts[t]; o->name; o++)
			if (o->val == val)
				return o;
	return NULL;
}

static const cli_option *by_name(const cli_command *c, const char *name)
{
	if (strcmp(name, help_option.name) == 0)
		return &help_option;
	for (size_t t = 0; t < CLI_MAX_TABLES && c->opts[t]; t++)
		for (const cli_option *o = c->opts[t]; o->name; o++)
			if (strcmp(o->name, name) == 0)
				return o;
	return NULL;
}

/* The help text's column, and the line the text wraps at. */
#define HELP_COLUMN 31

/* `text` from column `col` on, wrapped at spaces to end by column `width`
 * (a word longer than a line stays whole), each line after the first
 * indented to `col`. */
static void wrap(FILE *f, const char *text, int col, int width)
{
	int room = width - col;

	while ((int)strlen(text) > room) {
		int cut = room;

		while (cut > 0 && text[cut] != ' ')
			cut--;
		if (cut == 0)
			break;
		fprintf(f, "%.*s\n%*s", cut, text, col, "");
		text += cut + 1;
	}
	fprintf(f, "%s\n", text);
}

static void help_line(const cli_command *c, const cli_option *o, FILE *f)
{
	char left[64];

	if (shown_short(c, o->val))
		snprintf(left, sizeof(left), "-%c, --%s%s%s", o->val, o->name,
			 o->arg ? " " : "", o->arg ? o->arg : "");
	else
		snprintf(left, sizeof(left), "    --%s%s%s", o->name,
			 o->arg ? " " : "", o->arg ? o->arg : "");
	fprintf(f, "  %-28s ", left);
	wrap(f, o->help, HELP_COLUMN, 79);
}

void cli_help(const cli_command *c, FILE *f)
{
	struct option lo[CLI_MAX_OPTIONS + 2];
	size_t n = cli_long_options(c, lo);

	fprintf(f, "usage: hutch %s %s\n", c->name, c->synopsis);
	if (c->about)
		fprintf(f, "%s\n", c->about);
	if (c->notes) {
		fputc('\n', f);
		wrap(f, c->notes, 0, 79);
	}
	fprintf(f, "\noptions:\n");
	/* In getopt's own order: what is shown is what is parsed. */
	for (size_t i = 0; i < n; i++) {
		const cli_option *o = by_name(c, lo[i].name);

		if (o)
			help_line(c, o, f);
	}
}

void cli_usage_error(const cli_command *c)
{
	cli_error("usage: hutch %s %s ('hutch %s --help' lists the options)",
		  c->name, c->synopsis, c->name);
}
