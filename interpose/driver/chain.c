/* Chain slots: the shim's wrappers of pointers that are not the driver's
 * own export.
 *
 * A lookup (dlsym, cuGetProcAddress) may answer with another tool's
 * function: a profiler injected by the driver, another LD_PRELOAD
 * interposer. The shim then stays in the chain by wrapping THAT pointer:
 * each hook has HOOK_CHAIN_SLOTS more wrappers besides its exported one,
 * each a distinct function with a real pointer of its own, claimed once
 * and for good by the first pointer that needs it. The same pointer always
 * gets the same slot's wrapper back.
 *
 * A slot wrapper hands its real pointer to the exported wrapper of the
 * same exact variant (so the per-thread variants stay per-thread, and the
 * shim's work is written once) through a thread-local pass that the
 * exported wrapper takes as its first act (REAL, hooks.h). */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdbool.h>

#include "hooks.h"
#include "log.h"

/* The exported wrappers, as hooks.c declares them. */
#define P2PSHIM_HOOK(name, base, since, per_thread, params, args)          \
    P2PSHIM_EXPORT CUresult name params;
#include "hooks.def"
#undef P2PSHIM_HOOK

static _Atomic(void *) slot_real[HOOK_COUNT][HOOK_CHAIN_SLOTS];

#define CHAIN_SLOT(name, params, args, k)                                    \
    static CUresult name##_chain##k params                                   \
    {                                                                        \
        hook_pass_real(HOOK_##name,                                          \
                       atomic_load_explicit(&slot_real[HOOK_##name][k],      \
                                            memory_order_acquire));          \
        return name args;                                                    \
    }
#define P2PSHIM_HOOK(name, base, since, per_thread, params, args)          \
    CHAIN_SLOT(name, params, args, 0)                                        \
    CHAIN_SLOT(name, params, args, 1)                                        \
    CHAIN_SLOT(name, params, args, 2)                                        \
    CHAIN_SLOT(name, params, args, 3)
#include "hooks.def"
#undef P2PSHIM_HOOK

_Static_assert(HOOK_CHAIN_SLOTS == 4, "one CHAIN_SLOT line per slot above");

static void *const slot_wrapper[HOOK_COUNT][HOOK_CHAIN_SLOTS] = {
#define P2PSHIM_HOOK(name, base, since, per_thread, params, args)          \
    {(void *)&name##_chain0, (void *)&name##_chain1, (void *)&name##_chain2, \
     (void *)&name##_chain3},
#include "hooks.def"
#undef P2PSHIM_HOOK
};

int hook_find_by_chain_wrapper(const void *fn)
{
    for (int i = 0; i < HOOK_COUNT; i++)
        for (int k = 0; k < HOOK_CHAIN_SLOTS; k++)
            if (slot_wrapper[i][k] == fn)
                return i;
    return -1;
}

bool hook_chained(enum hook_id id, const void *fn)
{
    for (int k = 0; k < HOOK_CHAIN_SLOTS; k++)
        if (atomic_load_explicit(&slot_real[id][k], memory_order_acquire) == fn)
            return true;
    return false;
}

/* The slot wrapper calling fn: the slot fn holds, else the first free one;
 * NULL when every slot holds another pointer. */
static void *slot_for(enum hook_id id, void *fn)
{
    for (int k = 0; k < HOOK_CHAIN_SLOTS; k++) {
        void *expected = NULL;
        if (atomic_compare_exchange_strong(&slot_real[id][k], &expected, fn)) {
            LOG_DEBUG("%s: %p is not the driver's export; the shim wraps it (chain "
                      "slot %d)", hook_table[id].name, fn, k);
            return slot_wrapper[id][k];
        }
        if (expected == fn)
            return slot_wrapper[id][k];
    }
    return NULL;
}

void *hook_wrap(enum hook_id id, void *fn)
{
    static atomic_bool warned;
    if (fn == NULL || hook_find_by_wrapper(fn) >= 0 || hook_find_by_chain_wrapper(fn) >= 0)
        return fn;
    void *primary = hook_real(id);
    if ((primary == NULL && hook_set_real(id, fn)) || primary == fn ||
        hook_real_known(id) == fn)
        return hook_table[id].wrapper;
    void *w = slot_for(id, fn);
    if (w != NULL)
        return w;
    if (!atomic_exchange(&warned, true))
        LOG_WARN("%s: more than %d other tools' functions in the chain; %p is handed "
                 "back unwrapped and copies through it are not seen",
                 hook_table[id].name, HOOK_CHAIN_SLOTS, fn);
    return fn;
}
