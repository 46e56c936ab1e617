/* Unit test of config.c and log.c: parsing, warnings, the pairs grammar,
 * the dump round trip, config_get, and the log's file and threshold.
 * The checks live by theme in test_config_values.c, test_config_pairs.c
 * and test_config_log.c; here are the helpers they share and the order
 * they run in (the log tests last: they open the log once for good). */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "test_config.h"

int check_failures;

/* ---- helpers ----------------------------------------------------------- */

char lines[MAX_LINES][1024];
int nlines;

void capture(const char *line)
{
    if (nlines < MAX_LINES)
        snprintf(lines[nlines], sizeof lines[0], "%s", line);
    nlines++;
}

int parse(struct p2pshim_config *cfg, ...)
{
    char *envp[32];
    int n = 0;
    va_list ap;
    va_start(ap, cfg);
    for (char *e; (e = va_arg(ap, char *)) != NULL && n < 31;)
        envp[n++] = e;
    va_end(ap);
    envp[n] = NULL;
    nlines = 0;
    int warnings = config_parse(cfg, envp, capture);
    CHECK(warnings == nlines);
    return warnings;
}

bool all_pairs(const struct p2pshim_config *cfg)
{
    for (int s = 0; s < P2PSHIM_MAX_DEVICES; s++)
        for (int d = 0; d < P2PSHIM_MAX_DEVICES; d++)
            if (!cfg->pair_allowed[s][d])
                return false;
    return true;
}

bool same_config(const struct p2pshim_config *a,
                        const struct p2pshim_config *b)
{
    return a->mode == b->mode && a->log_level == b->log_level &&
           a->min_bytes == b->min_bytes &&
           strcmp(a->log_file, b->log_file) == 0 &&
           a->dump_config == b->dump_config &&
           strcmp(a->run_log, b->run_log) == 0 && a->cupti == b->cupti &&
           a->record_limit == b->record_limit &&
           strcmp(a->run_log_pattern, b->run_log_pattern) == 0 && a->bounce == b->bounce &&
           a->bounce_budget == b->bounce_budget &&
           a->bounce_budget_pct == b->bounce_budget_pct &&
           a->bounce_chunk == b->bounce_chunk &&
           memcmp(a->pair_allowed, b->pair_allowed, sizeof a->pair_allowed) ==
               0;
}

bool is_default(const struct p2pshim_config *cfg)
{
    struct p2pshim_config d;
    config_set_defaults(&d);
    return same_config(cfg, &d);
}

char dump_lines[24][1024];
int ndump;

void collect_dump(const char *line)
{
    if (ndump < 24)
        snprintf(dump_lines[ndump], sizeof dump_lines[0], "%s", line);
    ndump++;
}

void round_trip(const struct p2pshim_config *cfg, const char *pairs_want)
{
    ndump = 0;
    config_dump(cfg, collect_dump);
    CHECK(ndump == NVARS);
    char *envp[NVARS + 1];
    int n = 0;
    for (int i = 0; i < ndump && i < NVARS; i++) {
        CHECK(strncmp(dump_lines[i], "config P2PSHIM_", 15) == 0);
        CHECK(strchr(dump_lines[i], '\n') == NULL);
        envp[n++] = dump_lines[i] + strlen("config ");
    }
    envp[n] = NULL;
    if (pairs_want) {
        char want[1100];
        snprintf(want, sizeof want, "config P2PSHIM_PAIRS=%s", pairs_want);
        CHECK_STR(dump_lines[1], want);
    }
    struct p2pshim_config back;
    nlines = 0;
    CHECK(config_parse(&back, envp, capture) == 0);
    CHECK(same_config(cfg, &back));
}

int main(void)
{
    test_defaults();
    test_good_values();
    test_observability_values();
    test_bounce_values();
    test_link_idle();
    test_pool_relay();
    test_trust_values();
    test_bad_values();
    test_bad_values_warn_once();
    test_names();
    test_bytes();
    test_pairs();
    test_pairs_order_and_words();
    test_pairs_malformed();
    test_log_file_names();
    test_dump();
    test_dump_bytes_and_long_pairs();

    char path[600];
    test_log_before_open();
    test_log(path, sizeof path);
    test_config_get(path);
    if (check_failures == 0)
        unlink(path);
    else
        fprintf(stderr, "log file kept: %s\n", path);

    if (check_failures) {
        fprintf(stderr, "test_config: %d check(s) failed\n", check_failures);
        return 1;
    }
    printf("test_config: all checks passed\n");
    return 0;
}
