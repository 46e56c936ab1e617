/* free, realloc and mremap: memory given back to the allocator must not stay a
 * lazy host buffer, or the allocator's own bookkeeping (glibc keeps it in
 * the freed block) could fault on it from inside any library, the driver
 * included. Before the block goes, the snapshots over it end: pages the
 * block covers whole are not filled (freed memory has no contents to
 * keep), the others are. realloc keeps every byte. A program's own mremap
 * of memory holding lazy pages has them filled first: the kernel's REMAP
 * event lets the shim follow a whole buffer that moves (glibc's realloc of
 * a large block), not part of one.
 *
 * Nothing else is done, and nothing at all while no snapshot exists (one
 * relaxed atomic load), so a program that never bounces is untouched.
 * The real functions are the next definitions after the shim (another
 * allocator, or libc); errno is preserved. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/mman.h>

#include "bounce.h"
#include "driver.h"
#include "libc.h"
#include "next_symbol.h"
#include "shim_cuda.h"
#include "watch.h"

typedef void (*free_fn)(void *);
typedef void *(*realloc_fn)(void *, size_t);

static _Atomic(void *) real_free, real_realloc, real_mremap;

/* Whether the sizes bounce_host_release/keep ask of malloc_usable_size are
 * the freeing allocator's. Our free and realloc run only when the program
 * resolves free to us; they then forward to the next free (RTLD_NEXT), and
 * malloc_usable_size must come from the same object. Where an allocator
 * after us replaces free but not malloc_usable_size, glibc's would read a
 * chunk header that is not there (a wrong size ends other buffers'
 * snapshots without their bytes, or a fault). */
bool bounce_libc_sizes_known(void)
{
    dlsym_fn real_dlsym = driver_real_dlsym();
    if (real_dlsym == NULL)
        return false;
    Dl_info self, a, b;
    void *program_free = real_dlsym(RTLD_DEFAULT, "free");
    if (program_free == NULL || dladdr(program_free, &a) == 0 ||
        dladdr((void *)bounce_libc_sizes_known, &self) == 0)
        return false;
    if (a.dli_fbase != self.dli_fbase)
        return true; /* not ours: the program frees past us */
    void *next_free = next_symbol("free");
    return next_free != NULL && dladdr(next_free, &a) != 0 &&
           dladdr((void *)malloc_usable_size, &b) != 0 && a.dli_fbase == b.dli_fbase;
}

P2PSHIM_EXPORT P2PSHIM_HOT void free(void *p)
{
    free_fn f = (free_fn)next_symbol_cached(&real_free, "free");
    if (f == NULL)
        return;
    if (p != NULL && bounce_active()) {
        int saved = errno;
        bounce_host_release(p, 0);
        errno = saved;
    }
    if (p != NULL)
        watch_forget(p);
    f(p);
}

P2PSHIM_EXPORT void *realloc(void *p, size_t n)
{
    realloc_fn f = (realloc_fn)next_symbol_cached(&real_realloc, "realloc");
    if (f == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    if (p != NULL && bounce_active()) {
        int saved = errno;
        bounce_host_keep(p, malloc_usable_size(p));
        errno = saved;
    }
    return f(p, n);
}

typedef void *(*mremap_fn)(void *, size_t, size_t, int, ...);

P2PSHIM_EXPORT void *mremap(void *old, size_t old_size, size_t new_size, int flags, ...)
{
    void *new_address = NULL;
    if (flags & MREMAP_FIXED) {
        va_list ap;
        va_start(ap, flags);
        new_address = va_arg(ap, void *);
        va_end(ap);
    }
    mremap_fn f = (mremap_fn)next_symbol_cached(&real_mremap, "mremap");
    if (f == NULL) {
        errno = ENOSYS;
        return MAP_FAILED;
    }
    if (old != NULL && bounce_active()) {
        int saved = errno;
        bounce_host_keep(old, old_size);
        errno = saved;
    }
    return f(old, old_size, new_size, flags, new_address);
}
