/* Internals of the ownership table (ownership.h), shared by its files:
 * ownership.c (the ranges, the lookup cache, the contract) above
 * ownership_granule.c (the granule index: levels, granules and their
 * slots, the uthash table behind them) and ownership_handle.c (VMM
 * handle -> device). The layout is described at the top of ownership.c.
 * Everything here is used under the table's write lock, except
 * granule_find (read lock). */
#ifndef P2PSHIM_OWNERSHIP_INT_H
#define P2PSHIM_OWNERSHIP_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "ownership.h"

/* Every key of these tables is a uint64_t. A multiplicative hash: uthash
 * takes the low bits of hashv, which here are high bits of the product,
 * the well-mixed ones. */
static inline unsigned hash_u64(uint64_t key)
{
    return (unsigned)((key * UINT64_C(0x9E3779B97F4A7C15)) >> 32);
}
#define HASH_FUNCTION(keyptr, keylen, hashv)                                  \
    do {                                                                      \
        uint64_t hf_key_;                                                     \
        memcpy(&hf_key_, (keyptr), sizeof hf_key_);                           \
        (hashv) = hash_u64(hf_key_);                                          \
    } while (0)
/* An allocation failure inside uthash leaves the element out of the table
 * (hh.tbl == NULL) instead of exiting the program. */
#define HASH_NONFATAL_OOM 1
#include "shim_hash.h"

#define LEVELS 10
#define LEVEL_SHIFT(k) (12u + 4u * (unsigned)(k))
#define INLINE_SLOTS 2

struct range {
    struct owner_info info;
    uint64_t last;              /* last byte, inclusive: never overflows */
    struct range *prev, *next; /* every range, for scans by device/ctx */
    struct range *doomed_next; /* chain of ranges about to be removed */
    unsigned level;
    bool doomed;
};

struct slot {
    uint64_t base, last;
    struct range *rec;
};

/* hh and key fill the first cache line, the slot vector header and the
 * inline slots the second: a probe that hits touches two lines. */
struct granule {
    UT_hash_handle hh;
    uint64_t key;
    struct slot *v;             /* inl, or a heap vector when cap > 2 */
    uint32_t n, cap;
    bool pinned;                /* reserved by an ownership_add in progress */
    struct slot inl[INLINE_SLOTS];
};
/* A granule's block: whole cache lines (shim_alloc aligns it to one). */
#define GRANULE_BYTES (sizeof(struct granule) + (64 - sizeof(struct granule) % 64) % 64)

/* The granules (uthash head; ownership_granule.c). */
extern struct granule *ownership_granules;

static inline uint64_t granule_key(unsigned level, uint64_t index)
{
    return index << 4 | level;
}

static inline struct granule *granule_find(uint64_t key)
{
    struct granule *g = NULL;
    HASH_FIND_BYHASHVALUE(hh, ownership_granules, &key, sizeof key, hash_u64(key), g);
    return g;
}

/* The level of a range of size bytes: the smallest whose granule is at
 * least that size. */
unsigned granule_level(uint64_t size);
/* Makes sure the granule exists and has room for one more slot, and pins
 * it. On failure nothing visible has changed. */
bool granule_reserve(uint64_t key);
/* Drops the pins of granules [first, last] of a level; frees the ones left
 * empty (only after a failed reservation). */
void granules_unpin(unsigned level, uint64_t first, uint64_t last);
/* Removes r's slot from g; frees g when empty and not pinned. */
void granule_drop_slot(struct granule *g, const struct range *r);
/* Frees every granule. */
void granules_clear(void);

/* ownership_handle.c: forgets every handle; the handle lock, taken before
 * the table lock around fork. */
void ownership_handles_clear(void);
void ownership_handles_lock(void);
void ownership_handles_unlock(void);

#endif
