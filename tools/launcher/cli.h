/* The launcher's command-line helpers, shared by its subcommands (cli.c):
 * one parser for every command, so that each takes its options the same
 * way and says the same things about bad ones. */
#ifndef P2PSHIM_CLI_H
#define P2PSHIM_CLI_H

#include <stdbool.h>

/* One line on stderr, "p2pshim: " + the message + a newline. */
void launcher_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* One option of a command: "--name" (and "-c" where shrt is a letter).
 * An option with a value takes it as "--name VALUE", "--name=VALUE",
 * "-c VALUE" or "-cVALUE". id is what the callback gets. */
struct cli_option {
    const char *name;
    char shrt;       /* 0: no short form */
    bool value;
    int id;
};

/* Ids at or above CLI_HIDDEN are parsed as any other but left out of the
 * option tables (cli_table_mode): options users are not told of. */
#define CLI_HIDDEN 1000

/* What the callback returns: CLI_OK to go on, else an exit status that
 * ends the parse (after its own one-line message). */
#define CLI_OK 0
/* cli_parse's answer when --help (or -h) was given: the caller prints its
 * usage and exits 0. */
#define CLI_HELP (-1)

/* A callback's answer that ends the parse there, with no error: cli_parse
 * returns it, *first set past the option (the launcher's --version). */
#define CLI_STOP (-2)

/* cli_parse's answer in table mode (cli_table_mode): it printed the
 * command's options instead of parsing, and the command must return at
 * once, doing nothing. */
#define CLI_TABLE (-3)

typedef int (*cli_option_fn)(void *ctx, int id, const char *value);

/* Table mode, for `p2pshim --completion-table` (the bash completion reads
 * it): from now on each cli_parse prints its command's options, one line
 * each, and returns CLI_TABLE:
 *   COMMAND<TAB>--NAME<TAB>-C or -<TAB>VALUE or -<TAB>CHOICES
 * COMMAND is "p2pshim" for the launcher's own options; VALUE marks an
 * option that takes one; CHOICES, where the values are a closed set, are
 * the words a value may be, separated by spaces, as choices (given the
 * command and the option's name without "--") prints them on stdout; NULL
 * or no words: none. --help and -h are every command's. */
typedef void (*cli_choices_fn)(const char *cmd, const char *name);
void cli_table_mode(cli_choices_fn choices);

/* The commands a command line may name after the launcher's own options,
 * in the order of the top-level help; ends with NULL. */
extern const char *const cli_commands[];

/* Parses the options of command cmd ("run", "topo", "report"; NULL: the
 * launcher's own, before the command) from argv[1..argc), through
 * getopt_long: opts ends with a {NULL} row; -h and --help are every
 * command's. A long option may be shortened to a unique prefix; "--" ends
 * the options. in_order: options end at the first operand (run: what
 * follows PROGRAM is the program's); else options and operands may mix,
 * and the operands are moved after the options, in their order.
 * Calls fn for each option in order. Returns CLI_OK with *first set to
 * the index of the first operand (argc: none), CLI_HELP, fn's status, or
 * 2 after one line on stderr for an unknown option, an ambiguous prefix,
 * a missing value or a value given to an option that takes none:
 *   p2pshim: CMD: unknown option '--bogus' (see p2pshim CMD --help) */
int cli_parse(const char *cmd, int argc, char **argv, const struct cli_option *opts,
              bool in_order, cli_option_fn fn, void *ctx, int *first);

#endif
