/* The control API of standin.h, for test programs. Not counted as calls
 * and callable before cuInit. */
#include "sd_internal.h"

#include <string.h>

SD_API void standin_get_stats(struct standin_stats *out)
{
    pthread_mutex_lock(&sd_mu);
    if (out)
        *out = sd.stats;
    pthread_mutex_unlock(&sd_mu);
}

SD_API void standin_reset_stats(void)
{
    pthread_mutex_lock(&sd_mu);
    memset(&sd.stats, 0, sizeof sd.stats);
    sd_counters_clear();
    pthread_mutex_unlock(&sd_mu);
}

SD_API uint64_t standin_calls(const char *exact_name)
{
    pthread_mutex_lock(&sd_mu);
    uint64_t n = exact_name ? sd_counter(SD_COUNT_CALLS, exact_name) : 0;
    pthread_mutex_unlock(&sd_mu);
    return n;
}

SD_API uint64_t standin_lookups(const char *symbol)
{
    pthread_mutex_lock(&sd_mu);
    uint64_t n = symbol ? sd_counter(SD_COUNT_LOOKUPS, symbol) : 0;
    pthread_mutex_unlock(&sd_mu);
    return n;
}

SD_API int standin_peer_enabled(CUcontext from, CUcontext to)
{
    pthread_mutex_lock(&sd_mu);
    int r = sd_ctx_live(from) && sd_ctx_live(to) && sd_peer_has(from, to);
    pthread_mutex_unlock(&sd_mu);
    return r;
}

SD_API uint64_t standin_pending_ops(void)
{
    pthread_mutex_lock(&sd_mu);
    uint64_t n = sd.pending;
    pthread_mutex_unlock(&sd_mu);
    return n;
}

SD_API void standin_flush_all(void)
{
    pthread_mutex_lock(&sd_mu);
    sd_flush_all();
    pthread_mutex_unlock(&sd_mu);
}

SD_API int standin_device_of(CUdeviceptr ptr)
{
    pthread_mutex_lock(&sd_mu);
    struct sd_alloc *a = sd_lookup(ptr);
    int d = sd_mem_on_device(a) ? a->dev : -1;
    pthread_mutex_unlock(&sd_mu);
    return d;
}

SD_API void standin_reload_config(void)
{
    pthread_mutex_lock(&sd_mu);
    sd_teardown_all();
    memset(&sd.stats, 0, sizeof sd.stats);
    sd_counters_clear();
    sd_read_config(&sd.cfg);
    if (sd.initialized)
        sd_setup();
    pthread_mutex_unlock(&sd_mu);
}
