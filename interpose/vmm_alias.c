#include "vmm_alias.h"

#include <pthread.h>
#include <string.h>

#include "driver.h"
#include "log.h"
#include "shim.h"
#include "shim_alloc.h"

/* One mapping of the program's, and the shim's alias of it. */
struct mapping {
    uintptr_t base;
    size_t size;
    size_t offset;      /* into the physical allocation, as the program mapped it */
    int device;         /* the allocation's device */
    CUdeviceptr alias;  /* 0: none (yet) */
    uint32_t granted;   /* devices the alias's access list names */
    bool failed;        /* a driver call refused: not tried again */
};

/* Sorted by base, disjoint (the driver refuses overlapping mappings). */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct mapping *maps;
static size_t nmaps, cap_maps;
static size_t naliases;

/* ---- the table (mu held) ---------------------------------------------- */

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

/* The record holding p, or NULL. */
static struct mapping *find(uintptr_t p)
{
    size_t i = lower_bound(p);
    if (i < nmaps && maps[i].base == p)
        return &maps[i];
    if (i == 0)
        return NULL;
    struct mapping *m = &maps[i - 1];
    return p - m->base < m->size ? m : NULL;
}

static bool grow(void)
{
    if (nmaps < cap_maps)
        return true;
    size_t cap = cap_maps ? 2 * cap_maps : 64;
    struct mapping *n = shim_realloc(maps, cap_maps * sizeof *maps, cap * sizeof *maps);
    if (n == NULL)
        return false;
    maps = n;
    cap_maps = cap;
    return true;
}

/* Unmaps and frees an alias; errors are ignored (the device may be gone:
 * a reset, or exit after the runtime's teardown). */
static void drop_alias(struct mapping *m)
{
    const struct driver_api *d = driver_api();
    if (m->alias == 0)
        return;
    if (d->mem_unmap != NULL)
        d->mem_unmap(m->alias, m->size);
    if (d->mem_address_free != NULL)
        d->mem_address_free(m->alias, m->size);
    m->alias = 0;
    m->granted = 0;
    naliases--;
}

/* ---- the lifecycle row (shim.h) ----------------------------------------- */

static void alias_exit(void)
{
    pthread_mutex_lock(&mu);
    for (size_t i = 0; i < nmaps; i++)
        drop_alias(&maps[i]);
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

/* A child has no CUDA of its parent's: the records of the parent's
 * aliases are forgotten, not unmapped. */
static void alias_fork_child(void)
{
    for (size_t i = 0; i < nmaps; i++) {
        maps[i].alias = 0;
        maps[i].granted = 0;
    }
    naliases = 0;
    pthread_mutex_init(&mu, NULL);
}

static const struct shim_module alias_row = {
    .name = "vmm-alias",
    .fork_prepare = alias_fork_prepare,
    .fork_parent = alias_fork_parent,
    .fork_child = alias_fork_child,
    .at_exit = alias_exit,
};

/* ---- records ------------------------------------------------------------ */

/* Removes the records overlapping [base, base+size), their aliases
 * unmapped. */
static void remove_range(uintptr_t base, size_t size)
{
    if (nmaps == 0)
        return; /* maps may still be NULL */
    size_t i = lower_bound(base);
    if (i > 0 && maps[i - 1].base + maps[i - 1].size > base)
        i--;
    size_t j = i;
    while (j < nmaps && maps[j].base < base + size) {
        drop_alias(&maps[j]);
        j++;
    }
    memmove(&maps[i], &maps[j], (nmaps - j) * sizeof *maps);
    nmaps -= j - i;
}

void vmm_alias_note_map(uintptr_t base, size_t size, size_t offset, int device)
{
    if (size == 0 || base + size < base || device < 0 || device >= 32)
        return;
    pthread_mutex_lock(&mu);
    remove_range(base, size); /* stale records: unmapped behind our back */
    if (grow()) {
        size_t i = lower_bound(base);
        memmove(&maps[i + 1], &maps[i], (nmaps - i) * sizeof *maps);
        maps[i] = (struct mapping){base, size, offset, device, 0, 0, false};
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
    for (size_t i = 0; i < nmaps; i++)
        if (maps[i].alias != 0 && (maps[i].device == device || (maps[i].granted & bit)))
            drop_alias(&maps[i]);
    pthread_mutex_unlock(&mu);
}

size_t vmm_alias_count(void)
{
    pthread_mutex_lock(&mu);
    size_t n = naliases;
    pthread_mutex_unlock(&mu);
    return n;
}

/* ---- making and widening an alias (mu held) -------------------------------- */

/* Grants read and write on the alias to every device in want. */
static bool grant(struct mapping *m, uint32_t want)
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
    if (n == 0 || d->mem_set_access(m->alias, m->size, desc, n) != CUDA_SUCCESS)
        return false;
    m->granted |= want;
    return true;
}

/* A second mapping of the physical allocation behind m, at an address of
 * the shim's. The retained handle is released once the alias maps it: the
 * mapping keeps the allocation alive until the alias is unmapped. */
static bool make_alias(struct mapping *m)
{
    const struct driver_api *d = driver_api();
    if (d->mem_retain_handle == NULL || d->mem_release == NULL ||
        d->mem_address_reserve == NULL || d->mem_address_free == NULL ||
        d->mem_map == NULL || d->mem_unmap == NULL || d->mem_set_access == NULL)
        return false;
    CUmemGenericAllocationHandle h;
    if (d->mem_retain_handle(&h, (void *)m->base) != CUDA_SUCCESS)
        return false;
    CUdeviceptr va = 0;
    bool ok = d->mem_address_reserve(&va, m->size, 0, 0, 0) == CUDA_SUCCESS;
    if (ok && d->mem_map(va, m->size, m->offset, h, 0) != CUDA_SUCCESS) {
        d->mem_address_free(va, m->size);
        ok = false;
    }
    d->mem_release(h);
    if (!ok)
        return false;
    m->alias = va;
    m->granted = 0;
    naliases++;
    if (naliases == 1)
        shim_register(SHIM_ROW_ALIAS, &alias_row);
    LOG_DEBUG("alias of mapped memory %#lx+%zu (device %d) at %#llx", (unsigned long)m->base,
              m->size, m->device, (unsigned long long)va);
    return true;
}

CUdeviceptr vmm_alias_translate(CUdeviceptr ptr, size_t bytes, uint32_t devices)
{
    CUdeviceptr out = 0;
    pthread_mutex_lock(&mu);
    struct mapping *m = find((uintptr_t)ptr);
    if (m != NULL && !m->failed && bytes <= m->size - ((uintptr_t)ptr - m->base)) {
        uint32_t want = devices | 1u << m->device;
        bool ok = m->alias != 0 || make_alias(m);
        if (ok && (m->granted & want) != want)
            ok = grant(m, want | m->granted);
        if (ok) {
            out = m->alias + ((uintptr_t)ptr - m->base);
        } else {
            drop_alias(m);
            m->failed = true;
            LOG_DEBUG("no alias for mapped memory %#lx+%zu (device %d)", (unsigned long)m->base,
                      m->size, m->device);
        }
    }
    pthread_mutex_unlock(&mu);
    return out;
}
