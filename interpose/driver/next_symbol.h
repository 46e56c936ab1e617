/* The next definition of a name after the shim's, in the program's lookup
 * order: another interposer's, libc's, or the driver's. The one way the
 * shim finds the functions it wraps (libc's free, realloc, mremap and
 * exec family; the CUDA hooks' first choice), through glibc's own dlsym
 * (driver.h) so the shim's dlsym override is not involved. */
#ifndef P2PSHIM_NEXT_SYMBOL_H
#define P2PSHIM_NEXT_SYMBOL_H

#include <stdatomic.h>

/* dlsym(RTLD_NEXT, name); NULL when there is none or glibc's dlsym cannot
 * be had. Not cached. */
void *next_symbol(const char *name);

/* The same, resolved once into *slot. For the allocator overrides: dlsym
 * may allocate and free, and a free reached from inside this thread's own
 * lookup gets NULL instead of recursing (that block is leaked: at most
 * once, early). */
void *next_symbol_cached(_Atomic(void *) *slot, const char *name);

#endif
