/* libFuzzer target: the configuration parser (interpose/core/config.c).
 *
 * The input is an environment block, one "NAME=value" entry per line.
 * Checks beyond "no crash": config_parse warns at most once per entry, and
 * the effective configuration that config_dump prints reads back through
 * config_parse as the same configuration (config.h's contract), with no
 * warning, unless a dump line was cut. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

#define MAX_ENTRIES 64

static char dumped[64][1024];
static int ndumped;
static bool dump_cut;

static void keep_line(const char *line)
{
    size_t n = strlen(line);
    if (n >= 3 && strcmp(line + n - 3, "...") == 0)
        dump_cut = true;
    if (ndumped < 64)
        snprintf(dumped[ndumped++], sizeof dumped[0], "%s", line);
}

static void ignore_warning(const char *line)
{
    if (getenv("FUZZ_SHOW_WARNINGS"))
        fprintf(stderr, "warning: %s\n", line);
}

static bool same_config(const struct p2pshim_config *a, const struct p2pshim_config *b)
{
    return a->mode == b->mode && a->log_level == b->log_level &&
           a->min_bytes == b->min_bytes && strcmp(a->log_file, b->log_file) == 0 &&
           a->dump_config == b->dump_config && strcmp(a->run_log, b->run_log) == 0 &&
           a->cupti == b->cupti && a->record_limit == b->record_limit &&
           a->bounce == b->bounce &&
           a->bounce_budget_pct == b->bounce_budget_pct &&
           a->bounce_budget == b->bounce_budget && a->bounce_chunk == b->bounce_chunk &&
           a->bounce_min == b->bounce_min &&
           memcmp(a->pair_allowed, b->pair_allowed, sizeof a->pair_allowed) == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    char *envp[MAX_ENTRIES + 1];
    int n = 0;
    for (char *save = NULL, *e = strtok_r(text, "\n", &save); e && n < MAX_ENTRIES;
         e = strtok_r(NULL, "\n", &save))
        envp[n++] = e;
    envp[n] = NULL;

    static struct p2pshim_config cfg, again;
    int warnings = config_parse(&cfg, envp, ignore_warning);
    if (warnings < 0 || warnings > n)
        abort();

    ndumped = 0;
    dump_cut = false;
    config_dump(&cfg, keep_line);
    char *back[65];
    int nb = 0;
    for (int i = 0; i < ndumped; i++)
        if (strncmp(dumped[i], "config ", 7) == 0)
            back[nb++] = dumped[i] + 7;
    back[nb] = NULL;
    if (!dump_cut) {
        int w = config_parse(&again, back, ignore_warning);
        if (w != 0 || !same_config(&cfg, &again)) {
            for (int i = 0; i < ndumped; i++)
                fprintf(stderr, "dump: %s\n", dumped[i]);
            fprintf(stderr, "the dump does not read back as the same config (%d warnings)\n", w);
            abort();
        }
    }
    free(text);
    return 0;
}
