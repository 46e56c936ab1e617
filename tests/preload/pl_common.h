/* Helpers shared by the preload test programs (tests/preload).
 *
 * Every program runs against the stand-in driver (tests/standin) and checks
 * real bytes and real paths: the stand-in's counters, never only return
 * codes. A failed check prints one line ("FAIL file:line: ...") and the
 * program goes on; pl_finish() turns the count into the exit status.
 *
 * Exact variant names: __CUDA_API_VERSION_INTERNAL turns off cuda.h's
 * renaming, so cuMemcpyPeer is the legacy-stream export and
 * cuMemcpyPeer_ptds the per-thread one, as in libcuda.so.1. */
#ifndef PL_COMMON_H
#define PL_COMMON_H

#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>

#include <stddef.h>
#include <stdint.h>

#include "standin.h"

#define PL_MAX_DEV 8

extern _Atomic int pl_failures;

void pl_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define PL_EXPECT(cond, ...)                                                 \
    do {                                                                     \
        if (!(cond))                                                         \
            pl_fail(__FILE__, __LINE__, __VA_ARGS__);                        \
    } while (0)

/* A driver call that must succeed; evaluates to 1 when it did. */
#define PL_OK(call) pl_ok((call), #call, __FILE__, __LINE__)
int pl_ok(CUresult r, const char *what, const char *file, int line);

/* A call that must return exactly want. */
#define PL_RC(call, want) pl_rc((call), (want), #call, __FILE__, __LINE__)
int pl_rc(CUresult r, CUresult want, const char *what, const char *file, int line);

/* Exit status: 0 when no check failed. Prints the number of failures. */
int pl_finish(const char *program);

/* Is the shim in front of the driver? (The address cuMemcpyPeer resolves
 * to lies in libp2pshim.so.) */
int pl_shim_loaded(void);

/* Reads the expectation from argv[1] ("shim" or "noshim"; anything else
 * exits 2) and checks that it matches what is loaded: a test run without
 * the shim that believes it has it would check the wrong things. */
int pl_want_shim(int argc, char **argv);

/* The basename of the object that holds fn, or "?". */
const char *pl_object_of(const void *fn);
/* The dladdr symbol name of fn, or "?". */
const char *pl_symbol_of(const void *fn);

/* cuInit, every device's primary context retained (ctx[d]), ctx[0] made
 * current. Returns the device count. */
struct pl_env {
    int ndev;
    CUcontext ctx[PL_MAX_DEV];
};
int pl_init(struct pl_env *env);

/* A new (non-primary) context on dev, not left current: its links are
 * fresh, so the next cross copy in it makes the shim enable again. */
CUcontext pl_fresh_ctx(int dev);

/* Makes ctx current (cuCtxSetCurrent). */
void pl_use(CUcontext ctx);

/* Allocates n bytes of device memory in ctx (pushed and popped). */
CUdeviceptr pl_alloc(CUcontext ctx, size_t n);
void pl_free(CUcontext ctx, CUdeviceptr p);

/* The byte pattern of seed at offset i (never a constant run). */
unsigned char pl_pattern(unsigned seed, size_t i);

/* Writes the pattern of seed to [d, d+n) with a synchronous H2D copy in
 * ctx; pl_set writes the constant byte v. */
void pl_fill(CUcontext ctx, CUdeviceptr d, size_t n, unsigned seed);
void pl_set(CUcontext ctx, CUdeviceptr d, size_t n, unsigned char v);

/* Reads [d, d+n) back (synchronous D2H in ctx) and compares it with the
 * pattern of seed; on a mismatch reports the first bad offset under what.
 * Returns 1 when every byte is right. */
int pl_verify(CUcontext ctx, CUdeviceptr d, size_t n, unsigned seed, const char *what);

/* FNV-1a of [d, d+n), read back in ctx (for transcripts). */
uint64_t pl_checksum(CUcontext ctx, CUdeviceptr d, size_t n);

/* Mapped (cuMemCreate) memory: read-write access for dev, the properties
 * of pinned device memory on dev, and n rounded up to their minimum
 * granularity. */
CUmemAccessDesc pl_access_rw(int dev);
CUmemAllocationProp pl_device_prop(int dev);
size_t pl_vmm_round(int dev, size_t n);

/* Transcripts: "label: rc=N cur=A->B", the current context before and
 * after the call named by env's ordinals ("ctx0", "none", "other"), so two
 * runs can be compared line by line. PL_T evaluates to the call's result. */
const char *pl_ctx_name(const struct pl_env *env, CUcontext c);
void pl_t_begin(void);
CUresult pl_t_end(const struct pl_env *env, const char *label, CUresult r);
#define PL_T(env, label, call) (pl_t_begin(), pl_t_end((env), (label), (call)))

/* Counters. */
void pl_stats(struct standin_stats *s);

/* The libcuda.so.1 loaded in this process, opened RTLD_NOLOAD. */
void *pl_driver_handle(void);
/* dlsym(libcuda handle, name): under the shim, a hooked name comes back as
 * the shim's wrapper. NULL when the driver lacks the name. */
void *pl_driver_sym(const char *name);

#endif
