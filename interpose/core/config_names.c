/* The names of the modes, bounce modes and log levels, expanded from
 * config.h's lists: the one table of each. */
#include "config.h"

#include <stdio.h>
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
