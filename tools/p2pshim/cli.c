/* What the launcher's subcommands share for their command lines: the
 * error line and the option-with-value parser (cli.h). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

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

int launcher_option_value(int argc, char **argv, int *i, const char *name,
                          const char **value)
{
    const char *arg = argv[*i];
    size_t n = strlen(name);
    if (strncmp(arg, name, n) != 0)
        return 0;
    if (arg[n] == '=') {
        *value = arg + n + 1;
        return 1;
    }
    if (arg[n] != '\0')
        return 0;
    if (*i + 1 >= argc) {
        launcher_error("%s needs a value", name);
        return -1;
    }
    *value = argv[++*i];
    return 1;
}
