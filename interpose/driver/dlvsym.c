/* The dlvsym override, for interposers loaded before the shim that take
 * glibc's dlsym with dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5") (HAMi-core
 * does): glibc's versioned search passes over the shim's unversioned dlsym,
 * and such an interposer would resolve the driver on its own handle where
 * the shim never sees a lookup.
 *
 * - "dlsym" asked for by a caller loaded before the shim (the program or an
 *   earlier preload): the shim's own dlsym, so that caller's later lookups
 *   come through the shim and its wrappers (a caller after the shim gets
 *   what glibc gives it: handing it ours would loop, ours passing its
 *   lookups on to it);
 * - a hooked cu* name on a handle (not RTLD_NEXT): the shim's wrapper
 *   around what the next dlvsym finds, as dlsym does (entry.c);
 * - everything else: the next dlvsym (glibc's), reached by a tail jump so it
 *   sees the caller's return address and RTLD_NEXT keeps its meaning.
 *
 * The next dlvsym comes from the symbol tables (driver_next_dlvsym), never
 * from a call of "dlvsym" by name, which is this function. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <string.h>

#include "driver.h"
#include "hooks.h"
#include "elf_next.h"

#define UNINSTRUMENTED __attribute__((no_sanitize("address", "undefined", "thread")))

/* The shim's dlsym (entry.c's trampoline), bound inside the shim: "dlsym"
 * by name could be an earlier interposer's. */
extern char p2pshim_dlsym_self[];

UNINSTRUMENTED static int is_dlsym(const char *symbol)
{
    static const char name[] = "dlsym";
    for (size_t i = 0; i < sizeof name; i++)
        if (symbol[i] != name[i])
            return 0;
    return 1;
}

/* Decides, before any instrumented code runs, whether the lookup is ours
 * to answer: returns the next dlvsym to jump to, or NULL for "ours". */
UNINSTRUMENTED __attribute__((used))
void *p2pshim_dlvsym_route(void *handle, const char *symbol, const char *version,
                           void *caller)
{
    (void)version;
    if (symbol == NULL)
        return (void *)driver_next_dlvsym();
    if (is_dlsym(symbol))
        return elf_loaded_before_self(caller) ? NULL : (void *)driver_next_dlvsym();
    if (handle != RTLD_NEXT && hook_find_by_name(symbol) >= 0)
        return NULL;
    return (void *)driver_next_dlvsym();
}

__attribute__((used))
void *p2pshim_dlvsym_hooked(void *handle, const char *symbol, const char *version)
{
    if (is_dlsym(symbol))
        return (void *)p2pshim_dlsym_self;
    dlvsym_fn next = driver_next_dlvsym();
    return entry_wrap_lookup(symbol, next != NULL ? next(handle, symbol, version) : NULL);
}

#if defined(__x86_64__)
__asm__(".text\n"
        ".globl dlvsym\n"
        ".type dlvsym, @function\n"
        "dlvsym:\n"
        "  .cfi_startproc\n"
        "  endbr64\n"
        "  movq (%rsp), %rcx\n" /* the caller's return address */
        "  pushq %rdi\n"
        "  .cfi_adjust_cfa_offset 8\n"
        "  pushq %rsi\n"
        "  .cfi_adjust_cfa_offset 8\n"
        "  pushq %rdx\n"
        "  .cfi_adjust_cfa_offset 8\n"
        "  call p2pshim_dlvsym_route\n"
        "  popq %rdx\n"
        "  .cfi_adjust_cfa_offset -8\n"
        "  popq %rsi\n"
        "  .cfi_adjust_cfa_offset -8\n"
        "  popq %rdi\n"
        "  .cfi_adjust_cfa_offset -8\n"
        "  testq %rax, %rax\n"
        "  jz 1f\n"
        "  jmp *%rax\n"
        "1:\n"
        "  jmp p2pshim_dlvsym_hooked\n"
        "  .cfi_endproc\n"
        ".size dlvsym, .-dlvsym\n");
#elif defined(__aarch64__)
__asm__(".text\n"
        ".globl dlvsym\n"
        ".type dlvsym, %function\n"
        "dlvsym:\n"
        "  stp x0, x1, [sp, #-32]!\n"
        "  stp x2, x30, [sp, #16]\n"
        "  mov x3, x30\n"
        "  bl p2pshim_dlvsym_route\n"
        "  mov x16, x0\n"
        "  ldp x2, x30, [sp, #16]\n"
        "  ldp x0, x1, [sp], #32\n"
        "  cbz x16, 1f\n"
        "  br x16\n"
        "1:\n"
        "  b p2pshim_dlvsym_hooked\n"
        ".size dlvsym, .-dlvsym\n");
#else
#error "p2pshim: the dlvsym trampoline is written for x86-64 and AArch64"
#endif
