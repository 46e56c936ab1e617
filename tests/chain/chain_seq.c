/* cudart's start-up sequence and copies through the fetched pointers, for
 * the chain tests (chain.sh). Built twice: into the program itself (as a
 * static cudart is) and into a shared library the program links (as
 * libcudart.so is).
 *
 * dlopen("libcuda.so.1"); dlsym(h, "cuGetProcAddress_v2"); cuInit through
 * it (a CUDA_INJECTION64_PATH tool is loaded there); "cuGetProcAddress" at
 * 12000, which every later lookup goes through; then ROUNDS rounds of one
 * H2D, one same-device cuMemcpyAsync_ptsz, three cross-device copies
 * (cuMemcpyPeer, cuMemcpyPeer_ptds, cuMemcpyDtoDAsync_v2) and three D2H
 * read-backs whose bytes are checked.
 *
 * Checks: the bytes; and for each test double loaded (the injected tool,
 * the interposer), each of its wrappers called exactly once per call the
 * sequence made of that variant. Prints the counts it expects. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chain_variants.h"

#define N ((size_t)64 << 10)
#define ROUNDS 4
#define PT CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM

static int failures;
static chain_gpa5 gpa;

#define EXPECT(cond, ...)                                                    \
    do {                                                                     \
        if (!(cond)) {                                                       \
            fprintf(stderr, "FAIL chain_seq.c:%d: ", __LINE__);              \
            fprintf(stderr, __VA_ARGS__);                                    \
            fputc('\n', stderr);                                             \
            failures++;                                                      \
        }                                                                    \
    } while (0)

#define OK(call) EXPECT((call) == CUDA_SUCCESS, "%s failed", #call)

static void *get(const char *symbol, int version, cuuint64_t flags)
{
    void *p = NULL;
    CUdriverProcAddressQueryResult st;
    CUresult r = gpa(symbol, &p, version, flags, &st);
    EXPECT(r == CUDA_SUCCESS && p, "cuGetProcAddress(%s, %d, %llu): rc=%d", symbol, version,
           (unsigned long long)flags, (int)r);
    return r == CUDA_SUCCESS ? p : NULL;
}

#define FETCH(var, sym, ver, fl) (*(void **)&(var) = get(sym, ver, fl))

static unsigned char pattern(int round, size_t i)
{
    return (unsigned char)(i * 31 + (size_t)round * 7 + (i >> 9));
}

static int named(const char *env)
{
    const char *v = getenv(env);
    return v && *v;
}

/* The counter of a loaded double, found by name in the process. */
static chain_calls_fn counter(const char *library_env, const char *fn_name)
{
    void *lib = named(library_env) ? dlopen(getenv(library_env), RTLD_NOLOAD | RTLD_LAZY) : NULL;
    return lib ? (chain_calls_fn)dlsym(lib, fn_name) : NULL;
}

static void check_counts(const char *who, chain_calls_fn calls, const unsigned long long *want)
{
    static const char *const names[] = {
#define X(name, base, pt, params, args) #name,
        CHAIN_VARIANTS(X)
#undef X
    };
    for (int v = 0; v < CHAIN_NVARIANTS; v++) {
        unsigned long long got = calls(names[v]);
        printf("%s %s: %llu calls\n", who, names[v], got);
        EXPECT(got == want[v], "%s's wrapper of %s called %llu times, expected %llu", who,
               names[v], got, want[v]);
    }
}

/* Each wrapper in the chain (the injected tool's, the interposer's,
 * where named) was called once for each copy the program made. */
static void wrappers_called_once_each_copy(void)
{
    const unsigned long long want[CHAIN_NVARIANTS] = {
        [CHAIN_cuMemcpyHtoD_v2] = ROUNDS,      [CHAIN_cuMemcpyDtoH_v2] = 3 * ROUNDS,
        [CHAIN_cuMemcpyPeer] = ROUNDS,         [CHAIN_cuMemcpyPeer_ptds] = ROUNDS,
        [CHAIN_cuMemcpyAsync_ptsz] = ROUNDS,   [CHAIN_cuMemcpyDtoDAsync_v2] = ROUNDS,
    };
    chain_calls_fn tool = counter("CUDA_INJECTION64_PATH", "chain_tool_calls");
    chain_calls_fn intr = counter("CHAIN_INTR", "chain_intr_calls");
    if (tool)
        check_counts("tool", tool, want);
    if (intr)
        check_counts("interposer", intr, want);
    EXPECT(!named("CHAIN_INTR") || intr, "the interposer is not loaded");
    EXPECT(!named("CUDA_INJECTION64_PATH") || tool, "the injected tool is not loaded");
}

int chain_run(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW);
    if (!h || !(gpa = (chain_gpa5)dlsym(h, "cuGetProcAddress_v2"))) {
        fprintf(stderr, "chain_seq: no driver: %s\n", dlerror());
        return 1;
    }
    CUresult (*init)(unsigned);
    if (!FETCH(init, "cuInit", 2000, 0) || init(0) != CUDA_SUCCESS)
        return 1;
    if (!FETCH(gpa, "cuGetProcAddress", 12000, 0))
        return 1;
    CUresult (*retain)(CUcontext *, CUdevice), (*set_cur)(CUcontext);
    CUresult (*alloc)(CUdeviceptr *, size_t), (*sync)(CUstream);
    CUresult (*htod)(CUdeviceptr, const void *, size_t), (*dtoh)(void *, CUdeviceptr, size_t);
    CUresult (*peer)(CUdeviceptr, CUcontext, CUdeviceptr, CUcontext, size_t);
    CUresult (*peer_pt)(CUdeviceptr, CUcontext, CUdeviceptr, CUcontext, size_t);
    CUresult (*async_pt)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
    CUresult (*dtod_async)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
    FETCH(retain, "cuDevicePrimaryCtxRetain", 7000, 0);
    FETCH(set_cur, "cuCtxSetCurrent", 4000, 0);
    FETCH(alloc, "cuMemAlloc", 3020, 0);
    FETCH(sync, "cuStreamSynchronize", 2000, 0);
    FETCH(htod, "cuMemcpyHtoD", 3020, 0);
    FETCH(dtoh, "cuMemcpyDtoH", 3020, 0);
    FETCH(peer, "cuMemcpyPeer", 4000, 0);
    FETCH(peer_pt, "cuMemcpyPeer", 7000, PT);
    FETCH(async_pt, "cuMemcpyAsync", 7000, PT);
    FETCH(dtod_async, "cuMemcpyDtoDAsync", 3020, 0);
    if (failures)
        return 1;

    CUcontext c0, c1;
    CUdeviceptr a = 0, a2 = 0, b[3] = {0};
    OK(retain(&c0, 0));
    OK(retain(&c1, 1));
    OK(set_cur(c1));
    for (int i = 0; i < 3; i++)
        OK(alloc(&b[i], N));
    OK(set_cur(c0));
    OK(alloc(&a, N));
    OK(alloc(&a2, N));
    unsigned char *host = malloc(N), *back = malloc(N);
    if (!host || !back || failures)
        return 1;
    for (int r = 0; r < ROUNDS; r++) {
        for (size_t i = 0; i < N; i++)
            host[i] = pattern(r, i);
        OK(set_cur(c0));
        OK(htod(a, host, N));
        OK(async_pt(a2, a, N, CU_STREAM_PER_THREAD));
        OK(sync(CU_STREAM_PER_THREAD));
        OK(peer(b[0], c1, a2, c0, N));
        OK(peer_pt(b[1], c1, a, c0, N));
        OK(dtod_async(b[2], a2, N, NULL));
        OK(sync(NULL));
        OK(set_cur(c1));
        for (int i = 0; i < 3; i++) {
            memset(back, 0, N);
            OK(dtoh(back, b[i], N));
            EXPECT(memcmp(back, host, N) == 0, "round %d copy %d: wrong bytes", r, i);
        }
    }
    free(host);
    free(back);
    printf("%d rounds: bytes %s\n", ROUNDS, failures ? "WRONG" : "right");

    wrappers_called_once_each_copy();
    if (failures)
        fprintf(stderr, "chain_seq: %d check(s) failed\n", failures);
    return failures ? 1 : 0;
}
