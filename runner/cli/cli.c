/* SPDX-License-Identifier: MIT */
/* The command line's tables read as getopt tables, usage, help and the man page's SYNOPSIS. */
#include "cli.h"

#include <getopt.h>
#include <string.h>

#include "commands.h"
#include "formats.h"
#include "reporters.h"
#include "units.h"
#include "util.h"

/* ---- shared rows -------------------------------------------------------------------------- */

const struct cli_option cli_plan_options[] = {
	{ .name = "max-cells",
	  .id = OPT_MAX_CELLS,
	  .arg = "N",
	  .value = CLI_WORD,
	  .help = "raise (or lower) the cap on the number of cells (default 10000)" },
	{ .name = "allow-env",
	  .id = OPT_ALLOW_ENV,
	  .arg = "NAME",
	  .value = CLI_WORD,
	  .flags = CLI_REPEAT,
	  .help = "let the plan read the environment variable NAME in ${NAME} (besides FERRY_*)" },
	{ .name = "var",
	  .id = OPT_VAR,
	  .arg = "NAME=VALUE",
	  .value = CLI_WORD,
	  .flags = CLI_REPEAT,
	  .help = "give ${NAME} the value VALUE, whatever the environment holds" },
	{ .name = "allow-output",
	  .id = OPT_ALLOW_OUTPUT,
	  .arg = "DIR",
	  .value = CLI_DIR,
	  .flags = CLI_REPEAT,
	  .help = "let the plan's report paths name files below DIR too" },
	CLI_END,
};

const struct cli_option cli_shard_option[] = {
	{ .name = "shard",
	  .id = OPT_SHARD,
	  .short_name = 's',
	  .arg = "K/N",
	  .value = CLI_WORD,
	  .help = "only shard K of N of the cells (1 <= K <= N)" },
	CLI_END,
};

const struct cli_option cli_report_options[] = {
#define REPORT_CLI_OPTION(id_, name_, suffix, writer, plan, doc)                                   \
	{ .name = name_,                                                                           \
	  .id = OPT_REPORT + REPORT_##id_,                                                         \
	  .arg = "FILE",                                                                           \
	  .value = CLI_FILE,                                                                       \
	  .help = "write " doc " to FILE ('-': standard output)" },
	REPORT_FORMATS(REPORT_CLI_OPTION)
#undef REPORT_CLI_OPTION
	    CLI_END,
};

const struct cli_option cli_window_option[] = {
	{ .name = "baseline-window",
	  .id = OPT_WINDOW,
	  .arg = "N",
	  .value = CLI_WORD,
	  .help = "pool the newest N comparable results files of the baseline" },
	CLI_END,
};

int cli_parse_window(const char *arg, size_t *out)
{
	_cleanup_free_ char *err = NULL;
	uint64_t v;
	if (parse_uint(arg, &v, &err) < 0 || v == 0 || v > 10000) {
		errorf("invalid --baseline-window '%s': expected a number from 1 to 10000", arg);
		return -1;
	}
	*out = (size_t)v;
	return 0;
}

/* ---- lookup and walking ------------------------------------------------------------------- */

const struct cli_command *cli_find(const char *name)
{
	for (size_t i = 0; i < n_cli_commands; i++)
		if (STREQ(cli_commands[i]->name, name))
			return cli_commands[i];
	return NULL;
}

/* The names already visited: the same option in two subcommands is one getopt row and one
 * help line. */
struct visit {
	const char *names[96];
	size_t n;
	void (*fn)(const struct cli_option *, void *);
	void *ud;
};

static void each_own(struct visit *v, const struct cli_command *cmd)
{
	for (size_t l = 0; cmd->opts && cmd->opts[l]; l++)
		for (const struct cli_option *o = cmd->opts[l]; o->name; o++) {
			bool seen = false;
			for (size_t i = 0; i < v->n && !seen; i++)
				seen = STREQ(v->names[i], o->name);
			if (seen)
				continue;
			if (v->n == ELEMENTSOF(v->names))
				abort(); /* a table larger than its walk: a programming error */
			v->names[v->n++] = o->name;
			v->fn(o, v->ud);
		}
}

void cli_each_option(const struct cli_command *cmd,
		     void (*fn)(const struct cli_option *o, void *ud), void *ud)
{
	struct visit v = { .fn = fn, .ud = ud };
	each_own(&v, cmd);
	for (size_t s = 0; cmd->subs && cmd->subs[s]; s++)
		each_own(&v, cmd->subs[s]);
}

/* ---- getopt ------------------------------------------------------------------------------- */

struct getopt_tables {
	struct option longs[96];
	char shorts[96];
	size_t n_long, n_short;
};

static void add_getopt(const struct cli_option *o, void *ud)
{
	struct getopt_tables *t = ud;
	int has_arg = o->arg || o->values ? required_argument : no_argument;
	if (t->n_long + 2 >= ELEMENTSOF(t->longs) || t->n_short + 4 >= sizeof(t->shorts))
		abort(); /* a table too large for its parser: a programming error */
	t->longs[t->n_long++] = (struct option){ o->name, has_arg, NULL, o->id };
	if (o->short_name) {
		t->shorts[t->n_short++] = o->short_name;
		if (has_arg)
			t->shorts[t->n_short++] = ':';
	}
}

int cli_getopt(const struct cli_command *cmd, int argc, char **argv)
{
	/* rebuilt on every call (the same content each time): getopt keeps no pointer into it */
	static struct getopt_tables t;
	memset(&t, 0, sizeof(t));
	cli_each_option(cmd, add_getopt, &t);
	t.longs[t.n_long++] = (struct option){ "help", no_argument, NULL, 'h' };
	t.shorts[t.n_short++] = 'h';
	return getopt_long(argc, argv, t.shorts, t.longs, NULL);
}

/* ---- usage -------------------------------------------------------------------------------- */

/* The argument as help shows it: "FILE", or the values "auto|local|volumes". */
static char *arg_text(const struct cli_option *o)
{
	if (o->arg)
		return xstrdup(o->arg);
	if (!o->values)
		return NULL;
	char *s = xstrdup("");
	for (size_t i = 0; o->values[i]; i++) {
		char *n = xasprintf("%s%s%s", s, i ? "|" : "", o->values[i]);
		free(s);
		s = n;
	}
	return s;
}

struct synopsis {
	FILE *out;
	int col, indent;
};

static void put_word(struct synopsis *s, const char *w)
{
	int len = (int)strlen(w);
	if (s->col + 1 + len > 80 && s->col > s->indent) {
		fprintf(s->out, "\n%*s", s->indent, "");
		s->col = s->indent;
	}
	s->col += fprintf(s->out, " %s", w);
}

static void synopsis_option(const struct cli_option *o, void *ud)
{
	if (o->flags & CLI_OPERAND)
		return;
	_cleanup_free_ char *arg = arg_text(o);
	_cleanup_free_ char *w = xasprintf(
	    "%s--%s%s%s%s%s", o->flags & CLI_REQUIRED ? "" : "[", o->name, arg ? " " : "",
	    arg ? arg : "", o->flags & CLI_REQUIRED ? "" : "]", o->flags & CLI_REPEAT ? "..." : "");
	put_word(ud, w);
}

static void synopsis_line(const struct cli_command *c, const char *lead, FILE *out)
{
	struct synopsis s = { out, 0, 0 };
	s.col = fprintf(out, "%sferry %s", lead, c->name);
	s.indent = s.col + 1;
	/* the options of the command itself; a parent's shared rows go to each subcommand */
	for (size_t l = 0; c->opts && c->opts[l]; l++)
		for (const struct cli_option *o = c->opts[l]; o->name; o++)
			synopsis_option(o, &s);
	if (c->operands)
		put_word(&s, c->operands);
	fputc('\n', out);
}

static void help_option(const struct cli_option *o, void *ud)
{
	FILE *out = ud;
	_cleanup_free_ char *arg = arg_text(o);
	int col = o->short_name ? fprintf(out, "  -%c, ", o->short_name) : fprintf(out, "      ");
	col += fprintf(out, "--%s%s%s", o->name, arg ? " " : "", arg ? arg : "");
	/* the help text, wrapped at 80 columns under column 26 */
	const int at = 26;
	if (col >= at) {
		fputc('\n', out);
		col = 0;
	}
	const char *h = o->help ? o->help : "";
	while (*h) {
		fprintf(out, "%*s", at - col, "");
		size_t n = strlen(h), room = 80 - at;
		if (n > room) {
			size_t cut = room;
			while (cut > 0 && h[cut] != ' ')
				cut--;
			n = cut ? cut : room;
		}
		fprintf(out, "%.*s\n", (int)n, h);
		h += n;
		h += *h == ' ';
		col = 0;
	}
	if (!o->help || !*o->help)
		fputc('\n', out);
}

void cli_usage(const struct cli_command *cmd, FILE *out)
{
	if (cmd->subs) {
		for (size_t s = 0; cmd->subs[s]; s++)
			synopsis_line(cmd->subs[s], s ? "       " : "usage: ", out);
	} else {
		synopsis_line(cmd, "usage: ", out);
	}
	if (cmd->about)
		fprintf(out, "\n%s\n", cmd->about);
	fputs("\nOptions:\n", out);
	cli_each_option(cmd, help_option, out);
	fputs("  -h, --help              show this help\n", out);
}

int cli_usage_exit(const struct cli_command *cmd, FILE *out)
{
	cli_usage(cmd, out);
	return out == stdout ? EXIT_OK : EXIT_PLAN;
}

/* ---- ferry(1) SYNOPSIS -------------------------------------------------------------------- */

/* s with roff's specials escaped: "-" as "\-", "\" as "\e". */
static void roff(FILE *out, const char *s)
{
	for (; *s; s++) {
		if (*s == '-')
			fputs("\\-", out);
		else if (*s == '\\')
			fputs("\\e", out);
		else
			fputc(*s, out);
	}
}

static void man_option(const struct cli_option *o, void *ud)
{
	FILE *out = ud;
	if (o->flags & CLI_OPERAND)
		return;
	bool req = o->flags & CLI_REQUIRED;
	const char *open = req ? "" : "[ ", *close = req ? "" : " ]";
	const char *rep = o->flags & CLI_REPEAT ? "..." : "";
	if (!o->arg && !o->values) {
		fprintf(out, ".RB %s", open);
		roff(out, "--");
		roff(out, o->name);
		fprintf(out, "%s%s\n", close, rep);
		return;
	}
	fprintf(out, ".RB %s", open);
	roff(out, "--");
	roff(out, o->name);
	fputc('\n', out);
	if (o->arg) {
		fputs(".IR \"", out);
		roff(out, o->arg);
		fprintf(out, "\"%s%s\n", close, rep);
		return;
	}
	fputs(".BR", out);
	for (size_t i = 0; o->values[i]; i++) {
		fputs(i ? " | " : " ", out);
		roff(out, o->values[i]);
	}
	fprintf(out, "%s%s\n", close, rep);
}

static void man_command(const struct cli_command *c, FILE *out)
{
	fputs(".PP\n.B ferry ", out);
	roff(out, c->name);
	fputc('\n', out);
	for (size_t l = 0; c->opts && c->opts[l]; l++)
		for (const struct cli_option *o = c->opts[l]; o->name; o++)
			man_option(o, out);
	if (c->operands) {
		fputs(".RI \"", out);
		roff(out, c->operands);
		fputs("\"\n", out);
	}
}

void cli_man_synopsis(FILE *out)
{
	fputs(".\\\" SYNOPSIS: generated from runner/cli's option tables by `ferry schema "
	      "--man-synopsis`\n"
	      ".\\\" (scripts/update-docs.sh); edit the tables, not this section\n"
	      ".B ferry\n.RB [ \\-\\-help ]\n.RB [ \\-\\-version ]\n.I command\n.RI [ args ]\n",
	      out);
	for (size_t i = 0; i < n_cli_commands; i++) {
		const struct cli_command *c = cli_commands[i];
		if (!c->summary)
			continue;
		if (c->subs)
			for (size_t s = 0; c->subs[s]; s++)
				man_command(c->subs[s], out);
		else
			man_command(c, out);
	}
	fputs(".\\\" end of generated SYNOPSIS\n", out);
}
