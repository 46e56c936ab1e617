/* Generated from hooks.def: hook ids, function types, the table of hooks
 * and their real (driver) pointers. */
#ifndef P2PSHIM_HOOKS_H
#define P2PSHIM_HOOKS_H

#include <stdbool.h>

#include "shim_cuda.h"

enum hook_id {
#define P2PSHIM_HOOK(name, base, since, per_thread, params) HOOK_##name,
#include "hooks.def"
#undef P2PSHIM_HOOK
    HOOK_COUNT
};

/* pfn_<name>: the exact type of each hooked variant. */
#define P2PSHIM_HOOK(name, base, since, per_thread, params)                 \
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

/* The hook whose wrapper is fn, or -1 (is fn one of ours?). */
int hook_find_by_wrapper(const void *fn);

/* Real pointer of a hook: the driver's function of that exact variant.
 * Resolved on first need (RTLD_NEXT, then the loaded libcuda.so.1); NULL
 * when the driver has no such symbol: callers then return
 * CUDA_ERROR_NOT_INITIALIZED rather than call NULL. */
void *hook_real(enum hook_id id);

/* Records the driver's pointer for a variant, learnt from dlsym or
 * cuGetProcAddress. Returns false when a different pointer was recorded
 * before (the caller then hands back the driver's pointer unwrapped). */
bool hook_set_real(enum hook_id id, void *fn);

/* The real pointer if already known, without resolving (may be NULL). */
void *hook_real_known(enum hook_id id);

#define REAL(name) ((pfn_##name)hook_real(HOOK_##name))

#endif
