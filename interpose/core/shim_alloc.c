/* The shim's own allocator: see shim_alloc.h for the contract.
 *
 * Small blocks: one class per size below (multiples of 16, at most a
 * third apart, so a block wastes at most a third of itself). A class
 * keeps a list of its freed blocks, linked through their first word; a
 * new block is carved from the current region, a mapping of REGION_BYTES
 * taken on demand and never given back (the shim's small blocks are
 * tables and nodes that come and go with the program's allocations:
 * their peak is the bound). Pages of a region are touched only when a
 * block is carved there, so an unused region costs address space, not
 * memory. Large blocks are mappings of their own, unmapped when freed. */
#define _GNU_SOURCE
#include "shim.h"
#include "shim_alloc.h"

#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define SHIM_ALLOC_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SHIM_ALLOC_ASAN 1
#endif
#endif
#ifdef SHIM_ALLOC_ASAN
/* Freed and not yet carved memory is poisoned, so that AddressSanitizer
 * still sees the shim's use-after-free and overflows in these blocks. */
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#define REGION_BYTES ((size_t)256 << 10)

static const size_t class_size[] = {16,  32,  48,  64,   96,   128,  192,  256,
                                    384, 512, 768, 1024, 1536, 2048, 3072, 4096};
#define CLASSES (sizeof class_size / sizeof class_size[0])
_Static_assert(4096 == SHIM_ALLOC_SMALL_MAX, "the largest class is SHIM_ALLOC_SMALL_MAX");

struct free_block {
    struct free_block *next;
};

static pthread_mutex_t alloc_lock = PTHREAD_MUTEX_INITIALIZER;
static struct free_block *free_list[CLASSES];
static char *region_next, *region_end;
static size_t live_bytes;

static unsigned class_of(size_t size)
{
    unsigned c = 0;
    while (class_size[c] < size)
        c++;
    return c;
}

/* The largest power of two dividing the class size, at most 64. */
static size_t class_align(unsigned c)
{
    size_t s = class_size[c];
    size_t a = s & -s;
    return a < 64 ? a : 64;
}

static size_t page_round(size_t size)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    return (size + page - 1) & ~(page - 1);
}

static void *map_pages(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

/* A new block of class c from the current region (a new region when it
 * is used up; its tail is left unused). Lock held. */
static void *carve(unsigned c)
{
    size_t size = class_size[c], align = class_align(c);
    uintptr_t at = ((uintptr_t)region_next + align - 1) & ~(uintptr_t)(align - 1);
    if (region_next == NULL || at + size > (uintptr_t)region_end) {
        char *r = map_pages(REGION_BYTES);
        if (r == NULL)
            return NULL;
        POISON(r, REGION_BYTES);
        region_next = r;
        region_end = r + REGION_BYTES;
        at = (uintptr_t)r;
    }
    region_next = (char *)(at + size);
    return (void *)at; /* fresh pages: already zero */
}

void *shim_alloc(size_t size)
{
    if (size == 0)
        return NULL;
    if (size > SHIM_ALLOC_SMALL_MAX) {
        void *p = map_pages(page_round(size));
        if (p != NULL) {
            pthread_mutex_lock(&alloc_lock);
            live_bytes += size;
            pthread_mutex_unlock(&alloc_lock);
        }
        return p;
    }
    unsigned c = class_of(size);
    pthread_mutex_lock(&alloc_lock);
    struct free_block *b = free_list[c];
    if (b != NULL)
        free_list[c] = b->next;
    void *p = b != NULL ? (void *)b : carve(c);
    if (p != NULL)
        live_bytes += size;
    pthread_mutex_unlock(&alloc_lock);
    if (p == NULL)
        return NULL;
    UNPOISON(p, size);
    if (b != NULL)
        memset(p, 0, size); /* a reused block; a carved one is fresh */
    return p;
}

void shim_free(void *p, size_t size)
{
    if (p == NULL || size == 0)
        return;
    if (size > SHIM_ALLOC_SMALL_MAX) {
        munmap(p, page_round(size));
        pthread_mutex_lock(&alloc_lock);
        live_bytes -= size;
        pthread_mutex_unlock(&alloc_lock);
        return;
    }
    unsigned c = class_of(size);
    struct free_block *b = p;
    /* The link stays readable (only this file reads it); the rest is
     * poisoned until the block is handed out again. Poisoned before the
     * block is listed: once listed, another thread may take it and hand
     * it out, and a poisoning after that would land on its live bytes. */
    POISON((char *)p + sizeof *b, class_size[c] - sizeof *b);
    UNPOISON(p, sizeof *b);
    pthread_mutex_lock(&alloc_lock);
    b->next = free_list[c];
    free_list[c] = b;
    live_bytes -= size;
    pthread_mutex_unlock(&alloc_lock);
}

void *shim_realloc(void *p, size_t old_size, size_t new_size)
{
    if (p == NULL)
        return shim_alloc(new_size);
    if (new_size == 0) {
        shim_free(p, old_size);
        return NULL;
    }
    /* Same class (or the same pages): the block already fits. */
    if (old_size <= SHIM_ALLOC_SMALL_MAX && new_size <= SHIM_ALLOC_SMALL_MAX &&
        class_of(old_size) == class_of(new_size)) {
        UNPOISON(p, new_size);
        if (new_size > old_size)
            memset((char *)p + old_size, 0, new_size - old_size);
        pthread_mutex_lock(&alloc_lock);
        live_bytes += new_size - old_size;
        pthread_mutex_unlock(&alloc_lock);
        return p;
    }
    void *q = shim_alloc(new_size);
    if (q == NULL)
        return NULL;
    memcpy(q, p, old_size < new_size ? old_size : new_size);
    shim_free(p, old_size);
    return q;
}

size_t shim_alloc_live_bytes(void)
{
    pthread_mutex_lock(&alloc_lock);
    size_t n = live_bytes;
    pthread_mutex_unlock(&alloc_lock);
    return n;
}

void shim_alloc_fork_prepare(void)
{
    pthread_mutex_lock(&alloc_lock);
}

void shim_alloc_fork_release(void)
{
    pthread_mutex_unlock(&alloc_lock);
}

SHIM_LIFE_ROW(alloc_row) = {
    .order = SHIM_ROW_ALLOC,
    .name = "shim-alloc",
    .fork_prepare = shim_alloc_fork_prepare,
    .fork_parent = shim_alloc_fork_release,
    .fork_child = shim_alloc_fork_release,
};
