#include "vmm_alias.h"

#include <pthread.h>
#include <string.h>

#include "driver.h"
#include "log.h"
#include "shim.h"
#include "shim_alloc.h"

/* One mapping of the program's. */
struct mapping {
    uintptr_t base;
    size_t size;
    size_t offset;      /* into the physical allocation, as the program mapped it */
    int device;         /* the allocation's device */
};

/* An alias of a run of the program's mappings that lie end to end,
 * [base, base+size): each mapping's allocation mapped at the same offset
 * from va as the mapping is from base, so a copy over the run's boundaries
 * stays one range there too. A run of one mapping is the common case. */
struct alias {
    uintptr_t base;
    size_t size;
    CUdeviceptr va;     /* 0: a driver call refused: remembered, not retried */
    uint32_t owners;    /* the devices of the mappings it maps */
    uint32_t granted;   /* devices its access list names */
};

/* maps: sorted by base, disjoint (the driver refuses overlapping
 * mappings). aliases: unordered, few (one per run that a cross-GPU copy
 * touched). Every alias's range is made of records in maps: a record goes
 * only after the aliases over it (remove_range), so drop_alias finds the
 * pieces it mapped there. */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct mapping *maps;
static size_t nmaps, cap_maps;
static struct alias *aliases;
static size_t nalias_recs, cap_aliases;
static size_t naliases; /* those with a va */

/* ---- the tables (mu held) ---------------------------------------------- */

/* Index of the first record whose base is >= base. */
static size_t lower_bound(uintptr_t base)
{
    size_t lo = 0, hi = nmaps;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (maps[mid].base < base)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Index of the record holding p, or nmaps. */
static size_t find(uintptr_t p)
{
    size_t i = lower_bound(p);
    if (i < nmaps && maps[i].base == p)
        return i;
    if (i == 0 || p - maps[i - 1].base >= maps[i - 1].size)
        return nmaps;
    return i - 1;
}

static bool grow(void **arr, size_t *cap, size_t n, size_t elem)
{
    if (n < *cap)
        return true;
    size_t ncap = *cap ? 2 * *cap : 16;
    void *a = shim_realloc(*arr, *cap * elem, ncap * elem);
    if (a == NULL)
        return false;
    *arr = a;
    *cap = ncap;
    return true;
}

/* Unmaps (piece by piece: one cuMemUnmap per mapping it mapped) and frees
 * an alias, and forgets it; errors are ignored (the device may be gone: a
 * reset, or exit after the runtime's teardown). */
static void drop_alias(size_t k)
{
    const struct driver_api *d = driver_api();
    struct alias *a = &aliases[k];
    if (a->va != 0) {
        for (size_t i = find(a->base); i < nmaps && maps[i].base < a->base + a->size; i++)
            if (d->mem_unmap != NULL)
                d->mem_unmap(a->va + (maps[i].base - a->base), maps[i].size);
        if (d->mem_address_free != NULL)
            d->mem_address_free(a->va, a->size);
        naliases--;
    }
    aliases[k] = aliases[--nalias_recs];
}

/* Drops the aliases (and remembered failures) overlapping [lo, hi). */
static void drop_aliases_over(uintptr_t lo, uintptr_t hi)
{
    for (size_t k = nalias_recs; k-- > 0;)
        if (aliases[k].base < hi && lo < aliases[k].base + aliases[k].size)
            drop_alias(k);
}

/* ---- the lifecycle row (shim.h) ----------------------------------------- */

static void alias_exit(void)
{
    pthread_mutex_lock(&mu);
    while (nalias_recs > 0)
        drop_alias(nalias_recs - 1);
    pthread_mutex_unlock(&mu);
}

static void alias_fork_prepare(void)
{
    pthread_mutex_lock(&mu);
}

static void alias_fork_parent(void)
{
    pthread_mutex_unlock(&mu);
}

/* A child has no CUDA of its parent's: the parent's aliases are
 * forgotten, not unmapped. */
static void alias_fork_child(void)
{
    nalias_recs = 0;
    naliases = 0;
    pthread_mutex_init(&mu, NULL);
}

/* A late row; its device_gone runs whether or not it joined. A context's
 * destruction leaves mapped memory mapped (it belongs to its allocation
 * handle, not to a context): no ctx_gone. */
SHIM_LIFE_ROW(alias_row) = {
    .order = SHIM_ROW_ALIAS,
    .late = true,
    .name = "vmm-alias",
    .fork_prepare = alias_fork_prepare,
    .fork_parent = alias_fork_parent,
    .fork_child = alias_fork_child,
    .at_exit = alias_exit,
    .device_gone = vmm_alias_forget_device,
};

/* ---- records ------------------------------------------------------------ */

/* Removes the records overlapping [base, base+size), after the aliases
 * over any of them. */
static void remove_range(uintptr_t base, size_t size)
{
    if (nmaps == 0)
        return; /* maps may still be NULL */
    size_t i = lower_bound(base);
    if (i > 0 && maps[i - 1].base + maps[i - 1].size > base)
        i--;
    size_t j = i;
    while (j < nmaps && maps[j].base < base + size)
        j++;
    if (j == i)
        return;
    drop_aliases_over(maps[i].base, maps[j - 1].base + maps[j - 1].size);
    memmove(&maps[i], &maps[j], (nmaps - j) * sizeof *maps);
    nmaps -= j - i;
}

void vmm_alias_note_map(uintptr_t base, size_t size, size_t offset, int device)
{
    if (size == 0 || base + size < base || device < 0 || device >= 32)
        return;
    pthread_mutex_lock(&mu);
    remove_range(base, size); /* stale records: unmapped behind our back */
    if (grow((void **)&maps, &cap_maps, nmaps, sizeof *maps)) {
        size_t i = lower_bound(base);
        memmove(&maps[i + 1], &maps[i], (nmaps - i) * sizeof *maps);
        maps[i] = (struct mapping){base, size, offset, device};
        nmaps++;
    }
    pthread_mutex_unlock(&mu);
}

void vmm_alias_note_unmap(uintptr_t base, size_t size)
{
    if (size == 0 || base + size < base)
        return;
    pthread_mutex_lock(&mu);
    remove_range(base, size);
    pthread_mutex_unlock(&mu);
}

void vmm_alias_forget_device(int device)
{
    uint32_t bit = device >= 0 && device < 32 ? 1u << device : 0;
    pthread_mutex_lock(&mu);
    for (size_t k = nalias_recs; k-- > 0;)
        if ((aliases[k].owners | aliases[k].granted) & bit)
            drop_alias(k);
    pthread_mutex_unlock(&mu);
}

size_t vmm_alias_count(void)
{
    pthread_mutex_lock(&mu);
    size_t n = naliases;
    pthread_mutex_unlock(&mu);
    return n;
}

CUdeviceptr vmm_alias_mapping_end(CUdeviceptr ptr)
{
    pthread_mutex_lock(&mu);
    size_t i = find((uintptr_t)ptr);
    CUdeviceptr end = i < nmaps ? maps[i].base + maps[i].size : 0;
    pthread_mutex_unlock(&mu);
    return end;
}

/* ---- making and widening an alias (mu held) -------------------------------- */

/* Grants read and write on the alias to every device in want: one call
 * over its whole range, whatever the number of pieces. */
static bool grant(struct alias *a, uint32_t want)
{
    const struct driver_api *d = driver_api();
    CUmemAccessDesc desc[32];
    size_t n = 0;
    for (int dev = 0; dev < 32; dev++) {
        if (!(want >> dev & 1u))
            continue;
        memset(&desc[n], 0, sizeof desc[n]);
        desc[n].location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        desc[n].location.id = dev;
        desc[n].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
        n++;
    }
    if (n == 0 || d->mem_set_access(a->va, a->size, desc, n) != CUDA_SUCCESS)
        return false;
    a->granted |= want;
    return true;
}

/* Maps the physical allocation behind the program's mapping m at alias
 * address at. The retained handle is released once mapped: the alias's
 * mapping keeps the allocation alive until it is unmapped. */
static bool map_piece(const struct mapping *m, CUdeviceptr at)
{
    const struct driver_api *d = driver_api();
    CUmemGenericAllocationHandle h;
    if (d->mem_retain_handle(&h, (void *)m->base) != CUDA_SUCCESS)
        return false;
    bool ok = d->mem_map(at, m->size, m->offset, h, 0) == CUDA_SUCCESS;
    d->mem_release(h);
    return ok;
}

/* The alias of the run maps[first..last] (end to end), filled into a:
 * one reservation of the run's size, each piece mapped at its offset.
 * What was made is undone when a step is refused (a->va stays 0). */
static void make_alias(struct alias *a, size_t first, size_t last)
{
    const struct driver_api *d = driver_api();
    if (d->mem_retain_handle == NULL || d->mem_release == NULL ||
        d->mem_address_reserve == NULL || d->mem_address_free == NULL ||
        d->mem_map == NULL || d->mem_unmap == NULL || d->mem_set_access == NULL)
        return;
    CUdeviceptr va = 0;
    if (d->mem_address_reserve(&va, a->size, 0, 0, 0) != CUDA_SUCCESS)
        return;
    size_t i = first;
    while (i <= last && map_piece(&maps[i], va + (maps[i].base - a->base)))
        a->owners |= 1u << maps[i++].device;
    if (i <= last) {
        while (i-- > first)
            d->mem_unmap(va + (maps[i].base - a->base), maps[i].size);
        d->mem_address_free(va, a->size);
        return;
    }
    a->va = va;
    if (++naliases == 1)
        shim_life_start(SHIM_ROW_ALIAS);
    LOG_DEBUG("alias of mapped memory %#lx+%zu (%zu mappings) at %#llx", (unsigned long)a->base,
              a->size, last - first + 1, (unsigned long long)va);
}

/* The last index of the run of records that starts at maps[first] and,
 * end to end, holds [p, end); nmaps when a gap or an unmapped byte comes
 * first (the driver answers such a copy itself). */
static size_t run_end(size_t first, uintptr_t end)
{
    size_t i = first;
    while (maps[i].base + maps[i].size < end) {
        if (i + 1 >= nmaps || maps[i + 1].base != maps[i].base + maps[i].size)
            return nmaps;
        i++;
    }
    return i;
}

/* The alias (or the remembered failure) of exactly the run [lo, hi), or
 * a live alias over a longer run holding it; NULL when none. */
static struct alias *alias_over(uintptr_t lo, uintptr_t hi)
{
    struct alias *failed = NULL;
    for (size_t k = 0; k < nalias_recs; k++) {
        struct alias *a = &aliases[k];
        if (a->base > lo || a->base + a->size < hi)
            continue;
        if (a->va != 0)
            return a;
        if (a->base == lo && a->size == hi - lo)
            failed = a;
    }
    return failed;
}

/* The alias for the run first..last, made when there is none; NULL when
 * it cannot be had (now or before). */
static struct alias *alias_for(size_t first, size_t last)
{
    uintptr_t lo = maps[first].base, hi = maps[last].base + maps[last].size;
    struct alias *a = alias_over(lo, hi);
    if (a == NULL) {
        if (!grow((void **)&aliases, &cap_aliases, nalias_recs, sizeof *aliases))
            return NULL;
        a = &aliases[nalias_recs++];
        *a = (struct alias){lo, hi - lo, 0, 0, 0};
        make_alias(a, first, last);
        if (a->va == 0)
            LOG_DEBUG("no alias for mapped memory %#lx+%zu", (unsigned long)lo, hi - lo);
    }
    return a->va != 0 ? a : NULL;
}

CUdeviceptr vmm_alias_translate(CUdeviceptr ptr, size_t bytes, uint32_t devices)
{
    CUdeviceptr out = 0;
    uintptr_t p = (uintptr_t)ptr;
    pthread_mutex_lock(&mu);
    size_t first = find(p);
    size_t last = first < nmaps && bytes > 0 && p + bytes > p ? run_end(first, p + bytes) : nmaps;
    struct alias *a = last < nmaps ? alias_for(first, last) : NULL;
    if (a != NULL) {
        uint32_t want = devices | a->owners;
        if ((a->granted & want) == want || grant(a, want | a->granted)) {
            out = a->va + (p - a->base);
        } else {
            /* remembered as failed: the pieces go, the record stays */
            size_t k = (size_t)(a - aliases);
            struct alias failed = {a->base, a->size, 0, 0, 0};
            drop_alias(k);
            if (grow((void **)&aliases, &cap_aliases, nalias_recs, sizeof *aliases))
                aliases[nalias_recs++] = failed;
            LOG_DEBUG("no grant on the alias of %#lx+%zu", (unsigned long)failed.base, failed.size);
        }
    }
    pthread_mutex_unlock(&mu);
    return out;
}
