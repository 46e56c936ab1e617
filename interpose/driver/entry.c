/* Entry points: the dlsym override and cuGetProcAddress[_v2].
 *
 * dlsym: a lookup of a hooked cu* name (on any handle but RTLD_NEXT) gets
 * our wrapper of that exact variant around whatever the lookup found.
 * Every other lookup is answered by glibc's dlsym reached through a tail
 * jump (the trampoline below), so glibc sees the caller's own return
 * address: RTLD_NEXT and RTLD_DEFAULT mean what they mean to the caller,
 * exactly as without the shim.
 *
 * cuGetProcAddress: the resolver answers first, for the caller's own
 * version and flags; if the pointer is one of a hooked base's variants, the
 * caller gets our wrapper of that same variant around it.
 *
 * "Around it" (hook_wrap, chain.c): the driver's own export gets the
 * exported wrapper; any other pointer (a profiler's or another
 * interposer's function, cuGetProcAddress included) gets a chain slot's
 * wrapper that calls that pointer, so the shim stays in the chain
 * whoever else is in it, and every later lookup through a tool's resolver
 * still comes back through the shim. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <string.h>

#include "driver.h"
#include "hooks.h"
#include "log.h"
#include "shim.h"

/* Decides, before any instrumented code runs, whether dlsym is ours to
 * answer: returns glibc's dlsym to jump to, or NULL for "ours". */
__attribute__((no_sanitize("address", "undefined", "thread"), used))
void *p2pshim_dlsym_route(void *handle, const char *symbol)
{
    if (handle != RTLD_NEXT && hook_find_by_name(symbol) >= 0)
        return NULL;
    return (void *)driver_next_dlsym();
}

__attribute__((used)) void *p2pshim_dlsym_hooked(void *handle, const char *symbol);

#if defined(__x86_64__)
__asm__(".text\n"
        ".globl dlsym\n"
        ".type dlsym, @function\n"
        ".globl p2pshim_dlsym_self\n"
        ".hidden p2pshim_dlsym_self\n"
        "p2pshim_dlsym_self:\n"
        "dlsym:\n"
        "  .cfi_startproc\n"
        "  endbr64\n"
        "  pushq %rdi\n"
        "  .cfi_adjust_cfa_offset 8\n"
        "  pushq %rsi\n"
        "  .cfi_adjust_cfa_offset 8\n"
        "  subq $8, %rsp\n"
        "  .cfi_adjust_cfa_offset 8\n"
        "  call p2pshim_dlsym_route\n"
        "  addq $8, %rsp\n"
        "  .cfi_adjust_cfa_offset -8\n"
        "  popq %rsi\n"
        "  .cfi_adjust_cfa_offset -8\n"
        "  popq %rdi\n"
        "  .cfi_adjust_cfa_offset -8\n"
        "  testq %rax, %rax\n"
        "  jz 1f\n"
        "  jmp *%rax\n"
        "1:\n"
        "  jmp p2pshim_dlsym_hooked\n"
        "  .cfi_endproc\n"
        ".size dlsym, .-dlsym\n");
#elif defined(__aarch64__)
__asm__(".text\n"
        ".globl dlsym\n"
        ".type dlsym, %function\n"
        ".globl p2pshim_dlsym_self\n"
        ".hidden p2pshim_dlsym_self\n"
        "p2pshim_dlsym_self:\n"
        "dlsym:\n"
        "  stp x0, x1, [sp, #-32]!\n"
        "  str x30, [sp, #16]\n"
        "  bl p2pshim_dlsym_route\n"
        "  mov x16, x0\n"
        "  ldr x30, [sp, #16]\n"
        "  ldp x0, x1, [sp], #32\n"
        "  cbz x16, 1f\n"
        "  br x16\n"
        "1:\n"
        "  b p2pshim_dlsym_hooked\n"
        ".size dlsym, .-dlsym\n");
#else
#error "p2pshim: the dlsym trampoline is written for x86-64 and AArch64"
#endif

void *p2pshim_dlsym_hooked(void *handle, const char *symbol)
{
    return entry_wrap_lookup(symbol, driver_next_dlsym()(handle, symbol));
}

void *entry_wrap_lookup(const char *symbol, void *fn)
{
    int id = hook_find_by_name(symbol);
    dlsym_fn real_dlsym = driver_real_dlsym();
    if (fn == NULL || id < 0)
        return fn;
    /* RTLD_DEFAULT (or a handle whose search reaches us) finds our own
     * export first: the driver's is the next one. */
    if (hook_find_by_wrapper(fn) >= 0) {
        fn = real_dlsym(RTLD_NEXT, symbol);
        if (fn == NULL)
            fn = driver_symbol(symbol);
        if (fn == NULL)
            return hook_table[id].wrapper; /* ours, honest: no driver yet */
    }
    driver_note_pointer(fn);
    return hook_wrap((enum hook_id)id, fn);
}

/* Which variant of base the resolver's pointer fn is: by identity with the
 * variants' exports and the pointers already chained first; failing that
 * (another tool's function seen for the first time), by the driver's own
 * rule (highest since <= version; the per-thread one when flags ask). */
static int classify(int first, const char *base, void *fn, int version,
                    cuuint64_t flags)
{
    int best = -1;
    for (int i = first; i < HOOK_COUNT && strcmp(hook_table[i].base, base) == 0; i++) {
        void *known = hook_real_known((enum hook_id)i);
        if (known == NULL)
            known = driver_symbol(hook_table[i].name);
        if (known == fn || hook_chained((enum hook_id)i, fn))
            return i;
    }
    bool want_pt = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
    for (int i = first; i < HOOK_COUNT && strcmp(hook_table[i].base, base) == 0; i++) {
        const struct hook_desc *h = &hook_table[i];
        if (h->since > version || (h->per_thread && !want_pt))
            continue;
        if (best < 0 || h->since > hook_table[best].since ||
            (h->since == hook_table[best].since && h->per_thread))
            best = i;
    }
    LOG_DEBUG("cuGetProcAddress(%s, %d, %llu): pointer matches no export; "
              "taken as %s by version", base, version,
              (unsigned long long)flags, best >= 0 ? hook_table[best].name : "none");
    return best;
}

/* Replaces *pfn, the resolver's answer for symbol, by our wrapper of the
 * same variant around it. Leaves it alone for symbols we do not hook. */
static void substitute(const char *symbol, void **pfn, int version, cuuint64_t flags)
{
    if (pfn == NULL || *pfn == NULL)
        return;
    int first = hook_find_by_base(symbol);
    if (first < 0 || hook_find_by_wrapper(*pfn) >= 0 || hook_find_by_chain_wrapper(*pfn) >= 0)
        return;
    driver_note_pointer(*pfn);
    int id = classify(first, symbol, *pfn, version, flags);
    if (id >= 0)
        *pfn = hook_wrap((enum hook_id)id, *pfn);
}

P2PSHIM_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn,
                                            int cudaVersion, cuuint64_t flags,
                                            CUdriverProcAddressQueryResult *symbolStatus)
{
    pfn_cuGetProcAddress_v2 real = REAL(cuGetProcAddress_v2);
    if (real == NULL) {
        if (symbolStatus != NULL)
            *symbolStatus = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        if (pfn != NULL)
            *pfn = NULL;
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    if (shim_reentered())
        return real(symbol, pfn, cudaVersion, flags, symbolStatus);
    shim_init();
    CUresult r = real(symbol, pfn, cudaVersion, flags, symbolStatus);
    if (r == CUDA_SUCCESS)
        substitute(symbol, pfn, cudaVersion, flags);
    return r;
}

P2PSHIM_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn,
                                         int cudaVersion, cuuint64_t flags)
{
    pfn_cuGetProcAddress real = REAL(cuGetProcAddress);
    if (real == NULL) {
        if (pfn != NULL)
            *pfn = NULL;
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    if (shim_reentered())
        return real(symbol, pfn, cudaVersion, flags);
    shim_init();
    CUresult r = real(symbol, pfn, cudaVersion, flags);
    if (r == CUDA_SUCCESS)
        substitute(symbol, pfn, cudaVersion, flags);
    return r;
}
