/* The ownership table's granule index (ownership_int.h): one uthash table
 * maps (level, granule index) to a granule, a small vector of slots. The
 * callers hold the table's write lock. */
#include "ownership_int.h"

struct granule *ownership_granules;

static bool granule_insert(struct granule *g)
{
    HASH_ADD_KEYPTR_BYHASHVALUE(hh, ownership_granules, &g->key, sizeof g->key,
                                hash_u64(g->key), g);
    return g->hh.tbl != NULL;
}

static void granule_unhash(struct granule *g)
{
    HASH_DELETE(hh, ownership_granules, g);
}

unsigned granule_level(uint64_t size)
{
    if (size <= (UINT64_C(1) << LEVEL_SHIFT(0)))
        return 0;
    unsigned bits = 64u - (unsigned)__builtin_clzll(size - 1); /* 2^bits >= size */
    unsigned k = (bits - LEVEL_SHIFT(0) + 3u) / 4u;
    return k < LEVELS ? k : LEVELS - 1;
}

static void granule_free(struct granule *g)
{
    granule_unhash(g);
    if (g->v != g->inl)
        shim_free(g->v, g->cap * sizeof *g->v);
    shim_free(g, GRANULE_BYTES);
}

bool granule_reserve(uint64_t key)
{
    struct granule *g = granule_find(key);
    if (g == NULL) {
        g = shim_alloc(GRANULE_BYTES);
        if (g == NULL)
            return false;
        memset(g, 0, sizeof *g);
        g->key = key;
        g->v = g->inl;
        g->cap = INLINE_SLOTS;
        if (!granule_insert(g)) {
            shim_free(g, GRANULE_BYTES);
            return false;
        }
    } else if (g->n == g->cap) {
        uint32_t cap = g->cap * 2;
        struct slot *v;
        if (g->v == g->inl) {
            v = shim_alloc(cap * sizeof *v);
            if (v != NULL)
                memcpy(v, g->inl, sizeof g->inl);
        } else {
            v = shim_realloc(g->v, g->cap * sizeof *v, cap * sizeof *v);
        }
        if (v == NULL)
            return false;
        g->v = v;
        g->cap = cap;
    }
    g->pinned = true;
    return true;
}

void granules_unpin(unsigned level, uint64_t first, uint64_t last)
{
    for (uint64_t i = first; i <= last; i++) {
        struct granule *g = granule_find(granule_key(level, i));
        if (g == NULL)
            continue;
        g->pinned = false;
        if (g->n == 0)
            granule_free(g);
    }
}

void granule_drop_slot(struct granule *g, const struct range *r)
{
    for (uint32_t i = 0; i < g->n; i++) {
        if (g->v[i].rec == r) {
            g->v[i] = g->v[--g->n];
            break;
        }
    }
    if (g->n == 0 && !g->pinned) {
        granule_free(g);
    } else if (g->v != g->inl && g->n < INLINE_SLOTS) {
        /* Back to the inline slots, still leaving one free so that a
         * pending reservation holds. */
        memcpy(g->inl, g->v, g->n * sizeof *g->v);
        shim_free(g->v, g->cap * sizeof *g->v);
        g->v = g->inl;
        g->cap = INLINE_SLOTS;
    }
}

void granules_clear(void)
{
    while (ownership_granules != NULL)
        granule_free(ownership_granules);
}
