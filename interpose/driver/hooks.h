/* Generated from hooks.def: hook ids, function types, the table of hooks
 * and their real (driver) pointers. */
#ifndef P2PSHIM_HOOKS_H
#define P2PSHIM_HOOKS_H

#include <stdbool.h>

#include "shim_cuda.h"

enum hook_id {
#define P2PSHIM_HOOK(name, base, since, per_thread, params, args) HOOK_##name,
#include "hooks.def"
#undef P2PSHIM_HOOK
    HOOK_COUNT
};

/* pfn_<name>: the exact type of each hooked variant. */
#define P2PSHIM_HOOK(name, base, since, per_thread, params, args)                 \
    typedef CUresult (*pfn_##name) params;
#include "hooks.def"
#undef P2PSHIM_HOOK

struct hook_desc {
    const char *name;    /* exact exported symbol */
    const char *base;    /* name as asked of cuGetProcAddress */
    int since;           /* cudaVersion that introduced this variant */
    bool per_thread;     /* _ptds / _ptsz variant */
    void *wrapper;       /* our exported function of that name */
};

extern const struct hook_desc hook_table[HOOK_COUNT];

/* The hook whose exact name is name, or -1. Async-signal-safe and free of
 * sanitizer instrumentation: it runs inside dlsym, which sanitizer runtimes
 * call while starting up. */
int hook_find_by_name(const char *name);

/* The first hook whose base name is base, or -1. Variants of one base are
 * adjacent in hooks.def. */
int hook_find_by_base(const char *base);

/* The hook whose exported wrapper is fn, or -1. */
int hook_find_by_wrapper(const void *fn);

/* ---- the chain (chain.c) ---- */

/* Wrappers per hook for pointers other than the driver's own export (another
 * tool's function): each calls its own pointer. */
#define HOOK_CHAIN_SLOTS 4

/* The pointer to hand out when a lookup of variant id answered fn: fn
 * itself when it is one of ours; the exported wrapper when fn is the
 * variant's real pointer (hook_real); else a chain slot's wrapper calling
 * fn, the same slot for the same fn. With every slot taken by other
 * pointers, fn unwrapped (and one warning). */
void *hook_wrap(enum hook_id id, void *fn);

/* A dlsym or dlvsym lookup's answer fn for symbol as the caller gets it
 * (entry.c): fn itself unless symbol is hooked, else the shim's wrapper of
 * that variant around the driver's (or another tool's) function. */
void *entry_wrap_lookup(const char *symbol, void *fn);

/* The hook whose chain-slot wrapper is fn, or -1. */
int hook_find_by_chain_wrapper(const void *fn);

/* Does a chain slot of id call fn? */
bool hook_chained(enum hook_id id, const void *fn);

/* A chain slot's wrapper passes its pointer to the exported wrapper of id
 * it calls next, on this thread: the next hook_real_entry(id) takes it. */
void hook_pass_real(enum hook_id id, void *fn);

/* What an exported wrapper calls: the pointer a chain slot passed, else
 * hook_real(id). First act of every exported wrapper (REAL). */
void *hook_real_entry(enum hook_id id);

/* Real pointer of a hook: the driver's function of that exact variant.
 * Resolved on first need (RTLD_NEXT, then the loaded libcuda.so.1); NULL
 * when the driver has no such symbol: callers then return
 * CUDA_ERROR_NOT_INITIALIZED rather than call NULL. */
void *hook_real(enum hook_id id);

/* Records the real pointer of a variant when none is known yet. Returns
 * false when a different pointer was recorded before. */
bool hook_set_real(enum hook_id id, void *fn);

/* The real pointer if already known, without resolving (may be NULL). */
void *hook_real_known(enum hook_id id);

#define REAL(name) ((pfn_##name)hook_real_entry(HOOK_##name))

/* ---- flavours: legacy and per-thread default stream ---- */

/* HOOK_PER_THREAD_<name>: hooks.def's per_thread column for each variant,
 * as a constant (what a wrapper tells the copy path about itself). */
enum {
#define P2PSHIM_HOOK(name, base, since, per_thread, params, args)                 \
    HOOK_PER_THREAD_##name = per_thread,
#include "hooks.def"
#undef P2PSHIM_HOOK
};

/* The variant of a legacy hook in a flavour: legacy itself for per_thread
 * false, else its per-thread partner in hooks.def (per_thread 1, named
 * legacy's name plus _ptds or _ptsz). -1 when there is none, or legacy is
 * itself a per-thread variant. */
int hook_flavour(enum hook_id legacy, bool per_thread);

/* hook_real of that variant; NULL when there is none. */
void *hook_real_flavour(enum hook_id legacy, bool per_thread);
#define REAL_FLAVOUR(name, per_thread)                                          \
    ((pfn_##name)hook_real_flavour(HOOK_##name, per_thread))

#endif
