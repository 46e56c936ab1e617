/* A replacement allocator in a library of its own, as a program may link
 * one (loaded after the preloaded shim, so the shim's free and realloc
 * forward to it). Bump allocation from one reserved mapping; free keeps the
 * block (nothing is reused), realloc copies. Built twice: with
 * malloc_usable_size (BT_OWN_USABLE_SIZE) and without, where the shim must
 * not ask glibc's of these blocks and turns host bounces off. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#define RESERVE ((size_t)4 << 30)
#define HEADER ((size_t)16)

static _Atomic(uintptr_t) base;
static _Atomic(size_t) used;

static uintptr_t arena(void)
{
    uintptr_t b = atomic_load(&base);
    if (b != 0)
        return b;
    void *m = mmap(NULL, RESERVE, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED)
        return 0;
    uintptr_t want = 0;
    if (!atomic_compare_exchange_strong(&base, &want, (uintptr_t)m)) {
        munmap(m, RESERVE);
        return want;
    }
    return (uintptr_t)m;
}

/* n bytes aligned to align (a power of two, at least 16), the size kept
 * in the 16 bytes before them. */
static void *take(size_t n, size_t align)
{
    uintptr_t b = arena();
    if (b == 0 || n > RESERVE || align > RESERVE) {
        errno = ENOMEM;
        return NULL;
    }
    size_t span = (n + HEADER + align + 15) & ~(size_t)15;
    size_t at = atomic_fetch_add(&used, span);
    if (at + span > RESERVE) {
        errno = ENOMEM;
        return NULL;
    }
    uintptr_t p = (b + at + HEADER + align - 1) & ~(uintptr_t)(align - 1);
    ((size_t *)p)[-2] = n;
    return (void *)p;
}

static size_t size_of(const void *p)
{
    return ((const size_t *)p)[-2];
}

__attribute__((visibility("default"))) void *malloc(size_t n)
{
    return take(n, 16);
}

__attribute__((visibility("default"))) void free(void *p)
{
    (void)p;
}

__attribute__((visibility("default"))) void *calloc(size_t k, size_t n)
{
    if (n != 0 && k > SIZE_MAX / n) {
        errno = ENOMEM;
        return NULL;
    }
    void *p = take(k * n, 16);
    if (p != NULL)
        memset(p, 0, k * n);
    return p;
}

__attribute__((visibility("default"))) void *realloc(void *old, size_t n)
{
    void *p = take(n, 16);
    if (p != NULL && old != NULL)
        memcpy(p, old, size_of(old) < n ? size_of(old) : n);
    return p;
}

__attribute__((visibility("default"))) void *memalign(size_t align, size_t n)
{
    if (align == 0 || (align & (align - 1)) != 0) {
        errno = EINVAL;
        return NULL;
    }
    return take(n, align < 16 ? 16 : align);
}

__attribute__((visibility("default"))) void *aligned_alloc(size_t align, size_t n)
{
    return memalign(align, n);
}

__attribute__((visibility("default"))) int posix_memalign(void **out, size_t align, size_t n)
{
    if (align < sizeof(void *) || (align & (align - 1)) != 0)
        return EINVAL;
    void *p = memalign(align, n);
    if (p == NULL)
        return ENOMEM;
    *out = p;
    return 0;
}

__attribute__((visibility("default"))) void *valloc(size_t n)
{
    return memalign(4096, n);
}

#ifdef BT_OWN_USABLE_SIZE
__attribute__((visibility("default"))) size_t malloc_usable_size(void *p)
{
    return p != NULL ? size_of(p) : 0;
}
#endif
