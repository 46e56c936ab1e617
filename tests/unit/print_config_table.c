/* Prints the shim's table of variables as docs/CONFIGURATION.md's table
 * shows it: one "NAME<TAB>default" line per row, in table order,
 * the default as the row documents it or else its value in backquotes,
 * written the shortest exact way ("`256K`"). readme_config.sh compares
 * these lines with the page's. */
#include <stdio.h>

#include "config_int.h"

int main(void)
{
    struct p2pshim_config defaults;
    config_set_defaults(&defaults);
    for (int i = 0; i < config_var_count; i++) {
        const struct config_var *v = &config_vars[i];
        char value[256];
        struct config_out o = {value, sizeof value, 0, false};
        config_kind_print(v, &defaults, &o, CONFIG_AS_DOC);
        if (v->doc)
            printf("%s\t%s\n", v->name, v->doc);
        else
            printf("%s\t`%s`\n", v->name, value);
    }
    return 0;
}
