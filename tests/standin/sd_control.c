/* The control API of standin.h, for test programs. Not counted as calls
 * and callable before cuInit. */
#include "sd_internal.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

static const struct standin_observer *_Atomic observer;

SD_API void standin_set_observer(const struct standin_observer *o)
{
    atomic_store(&observer, o);
}

void sd_observe_enter(const char *fn)
{
    const struct standin_observer *o = atomic_load(&observer);
    if (o != NULL && o->api_enter != NULL)
        o->api_enter(fn);
}

void sd_observe_copy(enum standin_path path, uint64_t bytes, int src_dev, int dst_dev,
                     uint64_t ns)
{
    const struct standin_observer *o = atomic_load(&observer);
    if (o != NULL && o->copy_issued != NULL)
        o->copy_issued(path, bytes, src_dev, dst_dev, ns);
}

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

SD_API uint64_t standin_access_grants(CUdeviceptr ptr)
{
    pthread_mutex_lock(&sd_mu);
    struct sd_alloc *a = sd_lookup(ptr);
    uint64_t n = 0;
    if (a && a->kind == SD_MEM_VMM)
        n = a->access_sets;
    else if (a && a->kind == SD_MEM_POOL)
        n = a->pool->access_sets;
    pthread_mutex_unlock(&sd_mu);
    return n;
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

/* What is still alive, by kind: what a leak checker would list when a
 * context goes (compute-sanitizer's leak check) or at exit. Counts and
 * bytes only, no addresses: two runs of one program (with and without a
 * shim in front) print the same lines when they end with the same live
 * set. The legacy and per-thread streams are the driver's, not counted.
 * Lock held. */
void sd_leak_report(const struct CUctx_st *c, const char *when)
{
    static const char *const kind_name[] = {"device", "pool",   "vmm",  "managed",
                                            "pinned", "registered", "array"};
    size_t n[7] = {0}, bytes[7] = {0}, streams = 0, events = 0;
    for (size_t i = 0; i < sd.nallocs; i++) {
        const struct sd_alloc *a = &sd.allocs[i];
        if ((c == NULL || a->ctx == c) && (unsigned)a->kind < 7) {
            n[a->kind]++;
            bytes[a->kind] += a->size;
        }
    }
    for (const struct CUstream_st *s = sd.streams; s; s = s->next)
        streams += s->kind == SD_STREAM_USER && (c == NULL || s->ctx == c);
    for (const struct CUevent_st *e = sd.events; e; e = e->next)
        events += c == NULL || e->ctx == c;
    printf("standin: live at %s:", when);
    for (int k = 0; k < 7; k++)
        if (n[k] != 0)
            printf(" %s %zu (%zu bytes)", kind_name[k], n[k], bytes[k]);
    printf(" streams %zu events %zu\n", streams, events);
}

SD_API void standin_leak_report(const char *when)
{
    pthread_mutex_lock(&sd_mu);
    sd_leak_report(NULL, when ? when : "?");
    pthread_mutex_unlock(&sd_mu);
}
