/* What the launcher's subcommands share for their command lines: the
 * error line and the one option parser (cli.h). */
#define _GNU_SOURCE
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "launcher.h"

const char *const cli_commands[] = {"run", "topo", "report", "trust", "help", NULL};

/* Table mode: on, with the printer of choices, once cli_table_mode ran. */
static bool table_mode;
static cli_choices_fn table_choices;

void cli_table_mode(cli_choices_fn choices)
{
    table_mode = true;
    table_choices = choices;
}

/* Table mode: the options of cmd, as cli_table_mode says. */
static void print_table(const char *cmd, const struct cli_option *opts)
{
    const char *c = cmd ? cmd : "p2pshim";
    for (const struct cli_option *o = opts; o->name; o++) {
        if (o->id >= CLI_HIDDEN)
            continue;
        char shrt[3] = {'-', o->shrt, 0};
        printf("%s\t--%s\t%s\t%s\t", c, o->name, o->shrt ? shrt : "-",
               o->value ? "VALUE" : "-");
        if (o->value && table_choices)
            table_choices(c, o->name);
        putchar('\n');
    }
    printf("%s\t--help\t-h\t-\t\n", c);
}

void launcher_error(const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    /* One write, so lines of concurrent processes do not interleave. */
    fprintf(stderr, "p2pshim: %s\n", line);
}

#define CLI_MAX_OPTIONS 24
#define CLI_LONG_ONLY 256 /* getopt values of options without a letter */

/* One usage line: "CMD: " (none for the launcher's own options), what
 * was wrong, and where to look. */
static void usage_line(const char *cmd, const char *what)
{
    launcher_error("%s%s%s (see p2pshim%s%s --help)", cmd ? cmd : "", cmd ? ": " : "", what,
                   cmd ? " " : "", cmd ? cmd : "");
}

/* The row of opts getopt's value v stands for, or NULL (-h, unknown). */
static const struct cli_option *row_of(const struct cli_option *opts, int v)
{
    for (int k = 0; opts[k].name != NULL; k++)
        if (v == (opts[k].shrt ? opts[k].shrt : CLI_LONG_ONLY + k))
            return &opts[k];
    return NULL;
}

/* The long names arg (a "--" word, cut at '=') is a prefix of: how many,
 * and the first two, for the message about an ambiguous one. */
static int prefix_matches(const struct option *lo, const char *arg, char *list, size_t len)
{
    size_t n = strcspn(arg + 2, "=");
    int m = 0;
    list[0] = '\0';
    for (int k = 0; lo[k].name != NULL; k++)
        if (strncmp(lo[k].name, arg + 2, n) == 0 && m++ < 2) {
            size_t used = strlen(list);
            snprintf(list + used, len - used, "%s--%s", m > 1 ? ", " : "", lo[k].name);
        }
    return m;
}

/* The one line for getopt's '?' or ':' answer; returns the usage status. */
static int parse_error(const char *cmd, int c, char **argv, const struct cli_option *opts,
                       const struct option *lo)
{
    char word[256], list[128], what[512];
    int matches;
    const char *arg = optind > 0 ? argv[optind - 1] : "";
    bool as_long = strncmp(arg, "--", 2) == 0;
    if (as_long)
        snprintf(word, sizeof word, "%.*s", (int)strcspn(arg, "="), arg);
    else
        snprintf(word, sizeof word, "-%c", optopt ? optopt : '?');
    if (c == ':')
        snprintf(what, sizeof what, "option '%s' needs a value", word);
    else if (optopt != 0 && as_long && (row_of(opts, optopt) != NULL || optopt == 'h'))
        snprintf(what, sizeof what, "option '%s' takes no value", word);
    else if (optopt == 0 && as_long && (matches = prefix_matches(lo, arg, list, sizeof list)) > 1)
        snprintf(what, sizeof what, "ambiguous option '%s' (%s%s)", word, list,
                 matches > 2 ? ", ..." : "");
    else
        snprintf(what, sizeof what, "unknown option '%s'", word);
    usage_line(cmd, what);
    return LAUNCHER_EXIT_USAGE;
}

/* getopt_long's tables from opts: the short string and the long rows. */
static bool build_tables(const struct cli_option *opts, bool in_order, char *shorts,
                         size_t slen, struct option *lo)
{
    size_t s = 0, k = 0;
    if (in_order)
        shorts[s++] = '+';
    shorts[s++] = ':'; /* ':' for a missing value: the message is ours */
    shorts[s++] = 'h';
    for (; opts[k].name != NULL; k++) {
        if (k + 2 > CLI_MAX_OPTIONS || s + 3 > slen)
            return false;
        lo[k] = (struct option){opts[k].name, opts[k].value ? required_argument : no_argument,
                                NULL, opts[k].shrt ? opts[k].shrt : CLI_LONG_ONLY + (int)k};
        if (opts[k].shrt) {
            shorts[s++] = opts[k].shrt;
            if (opts[k].value)
                shorts[s++] = ':';
        }
    }
    shorts[s] = '\0';
    lo[k++] = (struct option){"help", no_argument, NULL, 'h'};
    lo[k] = (struct option){NULL, 0, NULL, 0};
    return true;
}

int cli_parse(const char *cmd, int argc, char **argv, const struct cli_option *opts,
              bool in_order, cli_option_fn fn, void *ctx, int *first)
{
    char shorts[2 * CLI_MAX_OPTIONS + 4];
    struct option lo[CLI_MAX_OPTIONS + 1];
    if (!build_tables(opts, in_order, shorts, sizeof shorts, lo)) {
        launcher_error("%s: too many options for the parser", cmd ? cmd : "p2pshim");
        return LAUNCHER_EXIT_FAILURE;
    }
    if (table_mode) {
        print_table(cmd, opts);
        return CLI_TABLE;
    }
    opterr = 0; /* getopt's own messages differ from ours */
    optind = 0; /* a full reset: the parser may run twice (p2pshim help CMD) */
    int c;
    while ((c = getopt_long(argc, argv, shorts, lo, NULL)) != -1) {
        if (c == '?' || c == ':')
            return parse_error(cmd, c, argv, opts, lo);
        if (c == 'h')
            return CLI_HELP;
        const struct cli_option *row = row_of(opts, c);
        int rc = fn(ctx, row->id, row->value ? optarg : NULL);
        if (rc == CLI_STOP)
            *first = optind;
        if (rc != CLI_OK)
            return rc;
    }
    *first = optind;
    return CLI_OK;
}
