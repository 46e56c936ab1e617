#define _GNU_SOURCE
#include "hooks.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <stddef.h>

#include "driver.h"
#include "next_symbol.h"

/* Our exported wrappers, one per hook, declared from the same list so a
 * prototype that disagrees with cuda.h fails to compile. */
#define P2PSHIM_HOOK(name, base, since, per_thread, params, args)                 \
    P2PSHIM_EXPORT CUresult name params;
#include "hooks.def"
#undef P2PSHIM_HOOK

const struct hook_desc hook_table[HOOK_COUNT] = {
#define P2PSHIM_HOOK(name, base, since, per_thread, params, args)                 \
    {#name, base, since, per_thread, (void *)&name},
#include "hooks.def"
#undef P2PSHIM_HOOK
};

static _Atomic(void *) real_fn[HOOK_COUNT];

/* A chain slot's pointer on its way to the exported wrapper (chain.c).
 * Initial-exec: one load from the thread pointer on every wrapper call. */
static _Thread_local struct {
    int id;
    void *fn;
} passed __attribute__((tls_model("initial-exec")));

/* Plain loops instead of strcmp: sanitizer runtimes intercept strcmp and
 * this runs inside dlsym while they start. */
__attribute__((no_sanitize("address", "undefined", "thread")))
static bool same_string(const char *a, const char *b)
{
    while (*a && *a == *b) {
        a++;
        b++;
    }
    return *a == *b;
}

__attribute__((no_sanitize("address", "undefined", "thread")))
int hook_find_by_name(const char *name)
{
    if (name == NULL || name[0] != 'c' || name[1] != 'u')
        return -1;
    for (int i = 0; i < HOOK_COUNT; i++)
        if (same_string(hook_table[i].name, name))
            return i;
    return -1;
}

int hook_find_by_base(const char *base)
{
    if (base == NULL || base[0] != 'c' || base[1] != 'u')
        return -1;
    for (int i = 0; i < HOOK_COUNT; i++)
        if (same_string(hook_table[i].base, base))
            return i;
    return -1;
}

int hook_find_by_wrapper(const void *fn)
{
    for (int i = 0; i < HOOK_COUNT; i++)
        if (hook_table[i].wrapper == fn)
            return i;
    return -1;
}

void *hook_real_known(enum hook_id id)
{
    return atomic_load_explicit(&real_fn[id], memory_order_acquire);
}

bool hook_set_real(enum hook_id id, void *fn)
{
    void *expected = NULL;
    if (fn == NULL || hook_find_by_wrapper(fn) >= 0)
        return false;
    if (atomic_compare_exchange_strong(&real_fn[id], &expected, fn))
        return true;
    return expected == fn;
}

void hook_pass_real(enum hook_id id, void *fn)
{
    passed.id = (int)id;
    passed.fn = fn;
}

void *hook_real_entry(enum hook_id id)
{
    if (__builtin_expect(passed.fn != NULL, 0)) {
        void *fn = passed.fn;
        passed.fn = NULL;
        if (passed.id == (int)id)
            return fn;
    }
    return hook_real(id);
}

P2PSHIM_HOT void *hook_real(enum hook_id id)
{
    void *fn = atomic_load_explicit(&real_fn[id], memory_order_acquire);
    if (fn != NULL)
        return fn;
    /* Next definition after us first (another interposer may chain), then
     * the driver library itself. */
    fn = next_symbol(hook_table[id].name);
    if (fn == NULL || hook_find_by_wrapper(fn) >= 0)
        fn = driver_symbol(hook_table[id].name);
    if (fn == NULL || hook_find_by_wrapper(fn) >= 0)
        return NULL;
    hook_set_real(id, fn);
    return atomic_load_explicit(&real_fn[id], memory_order_acquire);
}

/* Is name legacy's name followed by a per-thread suffix? */
static bool is_per_thread_name(const char *name, const char *legacy)
{
    while (*legacy && *name == *legacy) {
        name++;
        legacy++;
    }
    return *legacy == '\0' && (same_string(name, "_ptds") || same_string(name, "_ptsz"));
}

/* The per-thread partner of each hook, found once by name: i + 1, or 0
 * while not looked up yet, or -1 for none. */
static _Atomic int partner[HOOK_COUNT];

int hook_flavour(enum hook_id legacy, bool per_thread)
{
    if ((unsigned)legacy >= HOOK_COUNT || hook_table[legacy].per_thread)
        return -1;
    if (!per_thread)
        return (int)legacy;
    int known = atomic_load_explicit(&partner[legacy], memory_order_relaxed);
    if (known != 0)
        return known > 0 ? known - 1 : -1;
    int found = -1;
    for (int i = 0; i < HOOK_COUNT && found < 0; i++)
        if (hook_table[i].per_thread && is_per_thread_name(hook_table[i].name,
                                                           hook_table[legacy].name))
            found = i;
    atomic_store_explicit(&partner[legacy], found >= 0 ? found + 1 : -1, memory_order_relaxed);
    return found;
}

void *hook_real_flavour(enum hook_id legacy, bool per_thread)
{
    int id = hook_flavour(legacy, per_thread);
    return id >= 0 ? hook_real((enum hook_id)id) : NULL;
}
