/* p2pshim_man_env: prints the man page's ENVIRONMENT section, as Markdown
 * for tools/dev/md2man.py, from the shim's one table of variables
 * (config_table.h, through config.h and the descriptors of config.c) and
 * the launcher's own (P2PSHIM_TOOL_VARS). The build runs it to make the
 * page, so the page lists exactly the variables the shim and the launcher
 * read, each default as the shim sets it. Not installed. */
#include <stdio.h>

#include "config_int.h"

/* One table cell: text with "|" escaped, so that no cell splits in two. */
static void cell(const char *text)
{
    for (const char *c = text; *c; c++) {
        if (*c == '|')
            fputs("\\|", stdout);
        else
            putchar(*c);
    }
}

/* A variable's row: the name as the tag, then what it sets and, where
 * given, its default. */
static void row(const char *name, const char *help, const char *def)
{
    printf("| `%s` | ", name);
    cell(help);
    if (def) {
        fputs(". Default: ", stdout);
        cell(def);
    }
    fputs(". |\n", stdout);
}

int main(void)
{
    struct p2pshim_config defaults;
    config_set_defaults(&defaults);
    puts("## Environment\n");
    puts("The shim reads these variables once, at the program's first CUDA call;");
    puts("`p2pshim run` sets them from its options (`--set NAME=VALUE` sets any)");
    puts("and checks every one it passes on, those of its own environment too. A");
    puts("bad value gives one warning line, an unknown `P2PSHIM_*` name one");
    puts("warning. In a set-user-ID, set-group-ID or capability-raising program");
    puts("the shim reads none of them.\n");
    puts("| variable | what it sets |");
    puts("| --- | --- |");
    for (int i = 0; i < config_var_count; i++) {
        const struct config_var *v = &config_vars[i];
        char value[256], quoted[270];
        struct config_out o = {value, sizeof value, 0, false};
        config_kind_print(v, &defaults, &o, CONFIG_AS_DOC);
        snprintf(quoted, sizeof quoted, "`%s`", value);
        row(v->name, v->help, v->doc ? v->doc : quoted);
    }
    puts("\nThe launcher reads two variables of its own, which the shim neither");
    puts("reads nor warns about:\n");
    puts("| variable | what it sets |");
    puts("| --- | --- |");
#define TOOL_VAR(name, help) row(#name, help, NULL);
    P2PSHIM_TOOL_VARS(TOOL_VAR)
#undef TOOL_VAR
    puts("\nThe documentation's CONFIGURATION.md says more of each.");
    return 0;
}
