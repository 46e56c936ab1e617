/* Ownership table: see ownership.h for the contract.
 *
 * Layout. A range is indexed at level k (granule 2^(12+4k)
 * bytes, k = 0..9), the smallest whose granule is at least its size, so it
 * appears in at most two granules of that level (ranges above 2^48 may
 * appear in more). One uthash table maps (level, granule index) to a
 * granule: a small vector of slots {base, last, range}. The first two
 * slots live inside the granule, so a typical probe reads the granule and
 * nothing else until it hits. level_mask says which levels hold a range;
 * a lookup probes only those, one hash find each, the level with the most
 * ranges first.
 *
 * Before all that, a lookup checks a small per-thread cache of its last
 * answers, tagged with a generation that every change to the table bumps
 * (under the write lock): a copy loop that keeps using the same buffers
 * then costs an atomic load and a few compares, no lock.
 *
 * Bound per granule: a range at level k > 0 is larger than the granule of
 * level k-1 (1/16 of its own), so at most 17 disjoint ones touch a granule.
 * At level 0 sizes can go down to one byte; CUDA allocations are at least
 * 256-byte aligned, so in practice a 4 KiB granule holds a handful.
 *
 * Failure. ownership_add reserves everything it needs (the range, every
 * granule, one free slot in each) before it removes an overlapping range;
 * a reserved granule is pinned so that those removals cannot free it. If a
 * reservation fails, the pins are dropped, empty granules freed, and the
 * table is as it was. Removal never allocates: the ranges to remove are
 * chained through the ranges themselves.
 *
 * Files: this one holds the ranges, the lookup cache and the contract; the
 * granule index is ownership_granule.c's, the VMM handles
 * ownership_handle.c's (ownership_int.h). */
#define _GNU_SOURCE /* PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP */
#include "ownership.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "ownership_int.h"
#include "shim.h"
#include "thread_cache.h"

_Static_assert(sizeof(uintptr_t) == sizeof(uint64_t), "64-bit addresses");

/* Writers (allocations, frees) are rare next to lookups; preferring them
 * keeps a steady stream of lookups from starving a free. */
#ifdef PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP
static pthread_rwlock_t table_lock =
    PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;
#else
static pthread_rwlock_t table_lock = PTHREAD_RWLOCK_INITIALIZER;
#endif
static struct range *ranges;          /* list of every range */
static size_t range_count;
static size_t level_ranges[LEVELS];
static unsigned level_mask;             /* bit k: level k holds a range */
static unsigned level_order[LEVELS];    /* populated levels, most ranges first */
static unsigned level_used;             /* entries of level_order */

/* Bumped, under the write lock, by every change; 0 marks an empty cache
 * entry. An entry filled at generation g (under the read lock, so with the
 * table as it was at g) is still the answer while the generation is g. */
static _Atomic uint64_t table_gen = 1;

#define CACHE_ENTRIES 4
struct cache_entry {
    uint64_t gen;
    uint64_t base, last;        /* a miss is cached for its address only */
    bool found;
    struct owner_info info;
};
struct lookup_cache {
    struct cache_entry e[CACHE_ENTRIES];
    unsigned next;
};
/* A pointer in static TLS (initial-exec: no __tls_get_addr call; the shim
 * is preloaded, so its TLS sits in the static block), the cache itself
 * allocated by the threads that look pointers up (thread_cache.h). */
static _Thread_local struct lookup_cache *tls_cache
    __attribute__((tls_model("initial-exec")));
static struct thread_cache lookup_caches = THREAD_CACHE_INIT(sizeof(struct lookup_cache));

const char *mem_kind_name(enum mem_kind kind)
{
    static const char *const names[MEM_KIND_COUNT] = {
#define P2PSHIM_MEM_KIND_NAME(id, name) name,
        LOG_END_KINDS(P2PSHIM_MEM_KIND_NAME)
#undef P2PSHIM_MEM_KIND_NAME
    };
    if ((unsigned)kind >= MEM_KIND_COUNT)
        return LOG_END_UNKNOWN_NAME;
    return names[kind];
}

static uint64_t last_byte(uint64_t base, uint64_t size)
{
    /* A range running past the top of the address space is cut there. */
    return size - 1 > UINT64_MAX - base ? UINT64_MAX : base + (size - 1);
}

/* ---- ranges (table lock held for writing) ---- */

/* After every change: re-rank the levels, invalidate the lookup caches. */
static void table_changed(void)
{
    unsigned n = 0;
    for (unsigned m = level_mask; m != 0; m &= m - 1) {
        unsigned k = (unsigned)__builtin_ctz(m), j = n++;
        for (; j > 0 && level_ranges[level_order[j - 1]] < level_ranges[k]; j--)
            level_order[j] = level_order[j - 1];
        level_order[j] = k;
    }
    level_used = n;
    atomic_fetch_add_explicit(&table_gen, 1, memory_order_release);
}

static inline uint64_t first_granule(const struct range *r)
{
    return r->info.base >> LEVEL_SHIFT(r->level);
}

static inline uint64_t last_granule(const struct range *r)
{
    return r->last >> LEVEL_SHIFT(r->level);
}

static void range_unlink(struct range *r)
{
    for (uint64_t i = first_granule(r); i <= last_granule(r); i++) {
        struct granule *g = granule_find(granule_key(r->level, i));
        if (g != NULL)
            granule_drop_slot(g, r);
    }
    if (r->prev != NULL)
        r->prev->next = r->next;
    else
        ranges = r->next;
    if (r->next != NULL)
        r->next->prev = r->prev;
    range_count--;
    if (--level_ranges[r->level] == 0)
        level_mask &= ~(1u << r->level);
}

static size_t remove_doomed(struct range *doomed)
{
    size_t n = 0;
    while (doomed != NULL) {
        struct range *next = doomed->doomed_next;
        range_unlink(doomed);
        shim_free(doomed, sizeof *doomed);
        doomed = next;
        n++;
    }
    if (n > 0)
        table_changed();
    return n;
}

static inline void doom(struct range *r, struct range **chain)
{
    if (!r->doomed) {
        r->doomed = true;
        r->doomed_next = *chain;
        *chain = r;
    }
}

/* Chains every range overlapping [base, last]. Probes the granules the
 * range covers at each populated level, unless that would take more probes
 * than scanning every range (a huge range over a small table). */
static struct range *collect_overlaps(uint64_t base, uint64_t last)
{
    struct range *chain = NULL;
    uint64_t probes = 0;
    for (unsigned m = level_mask; m != 0; m &= m - 1) {
        unsigned s = LEVEL_SHIFT(__builtin_ctz(m));
        probes += (last >> s) - (base >> s) + 1;
    }
    if (probes > range_count) {
        for (struct range *r = ranges; r != NULL; r = r->next)
            if (r->info.base <= last && r->last >= base)
                doom(r, &chain);
        return chain;
    }
    for (unsigned m = level_mask; m != 0; m &= m - 1) {
        unsigned k = (unsigned)__builtin_ctz(m);
        for (uint64_t i = base >> LEVEL_SHIFT(k); i <= last >> LEVEL_SHIFT(k); i++) {
            const struct granule *g = granule_find(granule_key(k, i));
            if (g == NULL)
                continue;
            for (uint32_t j = 0; j < g->n; j++)
                if (g->v[j].base <= last && g->v[j].last >= base)
                    doom(g->v[j].rec, &chain);
        }
    }
    return chain;
}

/* The hot path: one hash find per populated level, no allocation. */
static inline struct range *find_containing(uint64_t addr)
{
    for (unsigned i = 0; i < level_used; i++) {
        unsigned k = level_order[i];
        const struct granule *g = granule_find(granule_key(k, addr >> LEVEL_SHIFT(k)));
        if (g == NULL)
            continue;
        const struct slot *s = g->v;
        for (uint32_t j = 0; j < g->n; j++)
            if (addr - s[j].base <= s[j].last - s[j].base)
                return s[j].rec;
    }
    return NULL;
}

/* ---- the contract ---- */

bool ownership_add(const struct owner_info *info)
{
    if (info == NULL)
        return false;
    if (info->size == 0)
        return true;
    struct range *r = shim_alloc(sizeof *r);
    if (r == NULL)
        return false;
    memset(r, 0, sizeof *r);
    r->info = *info;
    r->last = last_byte(info->base, info->size);
    r->level = granule_level(info->size);
    uint64_t first = first_granule(r), last = last_granule(r);

    pthread_rwlock_wrlock(&table_lock);
    for (uint64_t i = first; i <= last; i++) {
        if (!granule_reserve(granule_key(r->level, i))) {
            if (i > first)
                granules_unpin(r->level, first, i - 1);
            pthread_rwlock_unlock(&table_lock);
            shim_free(r, sizeof *r);
            return false;
        }
    }
    remove_doomed(collect_overlaps(r->info.base, r->last));
    for (uint64_t i = first; i <= last; i++) {
        struct granule *g = granule_find(granule_key(r->level, i));
        g->v[g->n++] = (struct slot){r->info.base, r->last, r};
        g->pinned = false;
    }
    r->next = ranges;
    if (ranges != NULL)
        ranges->prev = r;
    ranges = r;
    range_count++;
    level_ranges[r->level]++;
    level_mask |= 1u << r->level;
    table_changed();
    pthread_rwlock_unlock(&table_lock);
    return true;
}

void ownership_warm_thread(void)
{
    if (tls_cache == NULL)
        tls_cache = thread_cache_get(&lookup_caches, (void **)&tls_cache);
}

bool ownership_lookup(uintptr_t addr, struct owner_info *out)
{
    struct lookup_cache none, *c = tls_cache;
    if (c == NULL)
        c = tls_cache = thread_cache_get(&lookup_caches, (void **)&tls_cache);
    if (c == NULL) {
        memset(&none, 0, sizeof none); /* no memory: an empty cache, thrown away */
        c = &none;
    }
    uint64_t gen = atomic_load_explicit(&table_gen, memory_order_acquire);
    for (unsigned i = 0; i < CACHE_ENTRIES; i++) {
        const struct cache_entry *e = &c->e[i];
        if (e->gen == gen && addr - e->base <= e->last - e->base) {
            if (e->found && out != NULL)
                *out = e->info;
            return e->found;
        }
    }

    pthread_rwlock_rdlock(&table_lock);
    /* Writers bump the generation only under the write lock. */
    gen = atomic_load_explicit(&table_gen, memory_order_relaxed);
    const struct range *r = find_containing(addr);
    struct cache_entry *e = &c->e[c->next++ % CACHE_ENTRIES];
    e->gen = gen;
    e->found = r != NULL;
    if (r != NULL) {
        e->base = r->info.base;
        e->last = r->last;
        e->info = r->info;
    } else {
        e->base = e->last = addr;
    }
    pthread_rwlock_unlock(&table_lock);
    if (e->found && out != NULL)
        *out = e->info;
    return e->found;
}

bool ownership_remove(uintptr_t base, struct owner_info *removed)
{
    pthread_rwlock_wrlock(&table_lock);
    struct range *r = find_containing(base);
    if (r == NULL || r->info.base != base) {
        pthread_rwlock_unlock(&table_lock);
        return false;
    }
    if (removed != NULL)
        *removed = r->info;
    range_unlink(r);
    table_changed();
    pthread_rwlock_unlock(&table_lock);
    shim_free(r, sizeof *r);
    return true;
}

size_t ownership_remove_range(uintptr_t base, size_t size)
{
    if (size == 0)
        return 0;
    pthread_rwlock_wrlock(&table_lock);
    size_t n = remove_doomed(collect_overlaps(base, last_byte(base, size)));
    pthread_rwlock_unlock(&table_lock);
    return n;
}

static size_t remove_matching(bool (*match)(const struct range *, const void *),
                              const void *arg)
{
    struct range *chain = NULL;
    pthread_rwlock_wrlock(&table_lock);
    for (struct range *r = ranges; r != NULL; r = r->next)
        if (match(r, arg))
            doom(r, &chain);
    size_t n = remove_doomed(chain);
    pthread_rwlock_unlock(&table_lock);
    return n;
}

static bool match_device(const struct range *r, const void *device)
{
    return r->info.device == *(const int *)device;
}

static bool match_ctx(const struct range *r, const void *ctx)
{
    return r->info.ctx == ctx;
}

size_t ownership_remove_device(int device)
{
    return remove_matching(match_device, &device);
}

size_t ownership_remove_ctx(void *ctx)
{
    return remove_matching(match_ctx, ctx);
}

size_t ownership_count(void)
{
    pthread_rwlock_rdlock(&table_lock);
    size_t n = range_count;
    pthread_rwlock_unlock(&table_lock);
    return n;
}

void ownership_clear(void)
{
    pthread_rwlock_wrlock(&table_lock);
    while (ranges != NULL) {
        struct range *next = ranges->next;
        shim_free(ranges, sizeof *ranges);
        ranges = next;
    }
    granules_clear();
    range_count = 0;
    memset(level_ranges, 0, sizeof level_ranges);
    level_mask = 0;
    table_changed();
    pthread_rwlock_unlock(&table_lock);
    ownership_handles_clear();
}

void ownership_fork_prepare(void)
{
    ownership_handles_lock();
    pthread_rwlock_wrlock(&table_lock);
}

void ownership_fork_release(void)
{
    pthread_rwlock_unlock(&table_lock);
    ownership_handles_unlock();
}

static void forget_ctx(struct CUctx_st *ctx)
{
    (void)ownership_remove_ctx(ctx);
}

static void forget_device(int dev)
{
    (void)ownership_remove_device(dev);
}

SHIM_LIFE_ROW(ownership_row) = {
    .order = SHIM_ROW_OWNERSHIP,
    .name = "ownership",
    .at_start = ownership_warm_thread,
    .fork_prepare = ownership_fork_prepare,
    .fork_parent = ownership_fork_release,
    .fork_child = ownership_fork_release,
    .ctx_gone = forget_ctx,
    .device_gone = forget_device,
};
