/* The names of the modes, bounce modes and log levels, expanded from
 * config.h's lists: the one table of each; and the near miss of a name
 * ("did you mean observe?"). */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#define NAME_(enumerator, name) [enumerator] = name,

const char *const p2pshim_mode_names[P2PSHIM_MODE_COUNT] = {
    P2PSHIM_MODE_NAMES(NAME_)};
const char *const p2pshim_bounce_names[P2PSHIM_BOUNCE_COUNT] = {
    P2PSHIM_BOUNCE_NAMES(NAME_)};
const char *const p2pshim_log_level_names[P2PSHIM_LOG_LEVEL_COUNT] = {
    P2PSHIM_LOG_LEVEL_NAMES(NAME_)};
const char *const p2pshim_trust_names[P2PSHIM_TRUST_COUNT] = {
    P2PSHIM_TRUST_NAMES(NAME_)};

int config_name_find(const char *const *names, int count, const char *text)
{
    for (int i = 0; i < count; i++)
        if (strcasecmp(text, names[i]) == 0)
            return i;
    return -1;
}

void config_name_list(const char *const *names, int count, char *buf, size_t len)
{
    size_t used = 0;
    if (len == 0)
        return;
    buf[0] = '\0';
    for (int i = 0; i < count && used < len; i++) {
        const char *sep = i == 0 ? "" : i == count - 1 ? " or " : ", ";
        int n = snprintf(buf + used, len - used, "%s%s", sep, names[i]);
        if (n < 0)
            return;
        used += (size_t)n;
    }
}

/* Longest text (and name) compared for a near miss: past it, no guess. */
#define NEAR_MAX 64

static int lower(int c)
{
    return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c;
}

/* The edit distance of a[0..na) and b[0..nb), case aside: insertions,
 * deletions, substitutions and swaps of two neighbours (optimal string
 * alignment), each 1. */
static int distance(const char *a, size_t na, const char *b, size_t nb)
{
    int d[NEAR_MAX + 1][NEAR_MAX + 1];
    for (size_t i = 0; i <= na; i++)
        d[i][0] = (int)i;
    for (size_t j = 0; j <= nb; j++)
        d[0][j] = (int)j;
    for (size_t i = 1; i <= na; i++)
        for (size_t j = 1; j <= nb; j++) {
            int cost = lower(a[i - 1]) != lower(b[j - 1]);
            int best = d[i - 1][j - 1] + cost;
            if (d[i - 1][j] + 1 < best)
                best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best)
                best = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && lower(a[i - 1]) == lower(b[j - 2]) &&
                lower(a[i - 2]) == lower(b[j - 1]) && d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    return d[na][nb];
}

int config_name_near(const char *const *names, int count, const char *text, size_t len)
{
    int best = -1, best_d = NEAR_MAX + 1;
    bool tie = false;
    if (len > NEAR_MAX)
        return -1;
    for (int i = 0; i < count; i++) {
        size_t n = strlen(names[i]);
        if (n > NEAR_MAX)
            continue;
        int d = distance(text, len, names[i], n);
        /* A typo: one slip in a short name, two in a longer one, and
         * never a whole name replaced ("2" is no slip of "1"). */
        int limit = n <= 5 ? 1 : 2;
        if (d > limit || d >= (int)n)
            continue;
        if (d < best_d) {
            best = i, best_d = d, tie = false;
        } else if (d == best_d) {
            tie = true;
        }
    }
    return tie ? -1 : best;
}
