#define _GNU_SOURCE
#include "next_symbol.h"

#include <dlfcn.h>
#include <stddef.h>

#include "driver.h"
#include "hot.h"

static _Thread_local int resolving;

void *next_symbol(const char *name)
{
    dlsym_fn real_dlsym = driver_real_dlsym();
    return real_dlsym != NULL ? real_dlsym(RTLD_NEXT, name) : NULL;
}

P2PSHIM_HOT void *next_symbol_cached(_Atomic(void *) *slot, const char *name)
{
    void *fn = atomic_load_explicit(slot, memory_order_acquire);
    if (fn != NULL || resolving)
        return fn;
    resolving = 1;
    fn = next_symbol(name);
    resolving = 0;
    if (fn != NULL)
        atomic_store_explicit(slot, fn, memory_order_release);
    return fn;
}
