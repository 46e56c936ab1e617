/* The launcher's command-line helpers, shared by its subcommands (cli.c). */
#ifndef P2PSHIM_CLI_H
#define P2PSHIM_CLI_H

/* One line on stderr, "p2pshim: " + the message + a newline. */
void launcher_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Matches an option with a value, in either form "--name VALUE" or
 * "--name=VALUE", at argv[*i]. On a match sets *value, advances *i past
 * a separate value and returns 1; returns 0 if argv[*i] is another
 * option; returns -1 (after a usage message) when the value is missing. */
int launcher_option_value(int argc, char **argv, int *i, const char *name,
                          const char **value);

#endif
