#include "trust.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>

#include "config.h"
#include "log.h"
#include "peer.h"
#include "record.h"
#include "trust_cache.h"
#include "trust_nvml.h"
#include "trust_probe.h"

/* The verdict per unordered pair, [low][high]: enum trust_verdict. A
 * verdict outlives context resets (it is about the hardware). */
static _Atomic unsigned char verdicts[P2PSHIM_MAX_DEVICES][P2PSHIM_MAX_DEVICES];
static pthread_mutex_t check_lock = PTHREAD_MUTEX_INITIALIZER;

static _Atomic unsigned char *slot(int a, int b)
{
    return a < b ? &verdicts[a][b] : &verdicts[b][a];
}

static enum route_reason reason_of(enum trust_verdict v)
{
    if (v == TRUST_UNTRUSTED)
        return ROUTE_LINK_UNTRUSTED;
    if (v == TRUST_SLOWER)
        return ROUTE_LINK_SLOWER;
    return ROUTE_UPGRADED;
}

static double gbps(double ms)
{
    return ms > 0.0 ? (double)TRUST_PROBE_BYTES / (ms * 1e6) : 0.0;
}

/* The data and speed check around the enable: the verdict, and a note on
 * what was found. TRUST_UNKNOWN when it did not run (a direction already
 * enabled or failed, or the enable failed: peer_shim_enable decides);
 * *keep false for a verdict not to be cached (the check could not be set
 * up: untrusted, for this process only). */
static enum trust_verdict probe(CUcontext from_ctx, int from_dev, CUcontext to_ctx,
                                int to_dev, char *note, size_t note_len, bool *keep)
{
    struct trust_probe p;
    enum peer_check_result r = PEER_CHECK_REFUSED;
    if (trust_probe_open(&p, from_ctx, to_ctx)) {
        struct peer_check check = trust_probe_check(&p);
        r = peer_shim_enable_checked(from_ctx, from_dev, to_ctx, to_dev, &check);
    }
    trust_probe_close(&p);
    snprintf(note, note_len, "peer %.1f GB/s, staged %.1f GB/s, %zu wrong bytes",
             gbps(p.peer_ms), gbps(p.staged_ms), p.wrong_bytes);
    if (r == PEER_CHECK_ENABLED)
        return TRUST_TRUSTED;
    if (r == PEER_CHECK_NOT_RUN)
        return TRUST_UNKNOWN;
    if (p.outcome == TRUST_PROBE_UNCHECKED) {
        /* Unchecked is not trusted; for this process only. */
        snprintf(note, note_len, "the check could not be set up");
        *keep = false;
    }
    return p.outcome == TRUST_PROBE_SLOWER ? TRUST_SLOWER : TRUST_UNTRUSTED;
}

static void tell(enum trust_verdict v, bool cached, int a, int b, const char *note,
                 uint64_t t0)
{
    char detail[160];
    snprintf(detail, sizeof detail, "%s%s: %s", trust_verdict_name(v),
             cached ? " (cached)" : "", note);
    if (record_enabled())
        record_event(LOG_EVENT_LINK_CHECK, a, b, record_now_ns() - t0, detail);
    if (v == TRUST_UNTRUSTED)
        LOG_WARN("link %d-%d failed its check (%s): the shim leaves its copies staged",
                 a, b, note);
    else if (v == TRUST_SLOWER)
        LOG_INFO("link %d-%d is not faster than staged copies (%s): left staged", a, b,
                 note);
    else
        LOG_INFO("link %d-%d: %s", a, b, detail);
}

/* The check of the link from -> to, check_lock held. */
static enum trust_verdict decide(const struct p2pshim_config *cfg, CUcontext from_ctx,
                                 int from_dev, CUcontext to_ctx, int to_dev)
{
    uint64_t t0 = record_now_ns();
    struct trust_key key;
    char path[512], note[128];
    bool keyed = trust_key_make(from_dev, to_dev, &key);
    bool cache = keyed && trust_cache_path(cfg, path, sizeof path);
    if (cache && cfg->trust == P2PSHIM_TRUST_CHECK) {
        enum trust_verdict v = trust_cache_find(path, &key);
        if (v != TRUST_UNKNOWN) {
            tell(v, true, from_dev, to_dev, path, t0);
            return v;
        }
    }
    enum trust_verdict v = TRUST_UNKNOWN;
    bool keep = true;
    if (keyed &&
        trust_nvml_p2p(key.bus[0], key.bus[1], note, sizeof note) == TRUST_NVML_NO)
        v = TRUST_UNTRUSTED; /* CUDA said it can peer; NVML disagrees */
    else
        v = probe(from_ctx, from_dev, to_ctx, to_dev, note, sizeof note, &keep);
    if (v == TRUST_UNKNOWN)
        return v;
    if (cache && keep)
        trust_cache_store(path, &key, v, note);
    tell(v, false, from_dev, to_dev, note, t0);
    return v;
}

enum route_reason trust_link(CUcontext from_ctx, int from_dev, CUcontext to_ctx, int to_dev)
{
    const struct p2pshim_config *cfg = config_get();
    if (cfg->trust == P2PSHIM_TRUST_SKIP || from_dev < 0 || to_dev < 0 ||
        from_dev >= P2PSHIM_MAX_DEVICES || to_dev >= P2PSHIM_MAX_DEVICES)
        return ROUTE_UPGRADED;
    _Atomic unsigned char *s = slot(from_dev, to_dev);
    unsigned char v = atomic_load_explicit(s, memory_order_acquire);
    if (v != TRUST_UNKNOWN)
        return reason_of((enum trust_verdict)v);
    pthread_mutex_lock(&check_lock);
    v = atomic_load_explicit(s, memory_order_acquire);
    if (v == TRUST_UNKNOWN) {
        v = (unsigned char)decide(cfg, from_ctx, from_dev, to_ctx, to_dev);
        atomic_store_explicit(s, v, memory_order_release);
    }
    pthread_mutex_unlock(&check_lock);
    return reason_of((enum trust_verdict)v);
}
