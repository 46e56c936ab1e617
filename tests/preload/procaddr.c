/* Item 4: cudart's start-up sequence, by hand.
 *
 * dlopen("libcuda.so.1"); dlsym(h, "cuGetProcAddress_v2"); ask it for
 * "cuGetProcAddress" at 11030 (4 arguments) and 12000 (5 arguments); fetch
 * copy entry points with flags 0 and with flags 2 (per-thread default
 * stream) at the versions cudart uses. Nothing is linked against the
 * driver: every call goes through a fetched pointer.
 *
 * The transcript (return codes, symbolStatus, the symbol name dladdr gives
 * each pointer, bytes) must be identical without and with the shim
 * (compare.sh). In the shim run the program also checks that every hooked
 * pointer lies in libp2pshim.so, one distinct pointer per variant, that
 * the flags-0 and flags-2 pointers reach the stand-in's legacy and _ptds
 * functions (standin_calls), and that unhooked and unknown symbols come
 * back untouched. Ordering: memsets pending on the legacy streams of both
 * devices, then a legacy synchronous cross copy through the fetched
 * pointer: a legacy/per-thread mix-up gives wrong bytes on the stand-in. */
#define _GNU_SOURCE
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "standin.h"

#define N ((size_t)64 << 10)
#define PT CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM

static int failures, shim;

#define EXPECT(cond, ...)                                                    \
    do {                                                                     \
        if (!(cond)) {                                                       \
            fprintf(stderr, "FAIL line %d: ", __LINE__);                     \
            fprintf(stderr, __VA_ARGS__);                                    \
            fputc('\n', stderr);                                             \
            failures++;                                                      \
        }                                                                    \
    } while (0)

static const char *object_of(const void *p)
{
    Dl_info i;
    if (!p || !dladdr(p, &i) || !i.dli_fname)
        return "?";
    const char *b = strrchr(i.dli_fname, '/');
    return b ? b + 1 : i.dli_fname;
}

static const char *symbol_of(const void *p)
{
    Dl_info i;
    if (!p || !dladdr(p, &i) || !i.dli_sname)
        return p ? "?" : "NULL";
    return i.dli_sname;
}

typedef CUresult (*gpa4_fn)(const char *, void **, int, cuuint64_t);
typedef CUresult (*gpa5_fn)(const char *, void **, int, cuuint64_t,
                            CUdriverProcAddressQueryResult *);
static gpa5_fn gpa;
static void *h;
static uint64_t (*calls)(const char *);

/* One lookup through the 5-argument cuGetProcAddress; prints it; in the
 * shim run checks where a hooked pointer lies. */
static void *get(const char *sym, int version, cuuint64_t flags, int hooked)
{
    void *p = (void *)0x1;
    CUdriverProcAddressQueryResult st = (CUdriverProcAddressQueryResult)0x77;
    CUresult r = gpa(sym, &p, version, flags, &st);
    printf("gpa %s %d %llu: rc=%d status=%d sym=%s\n", sym, version,
           (unsigned long long)flags, (int)r, (int)st, symbol_of(p));
    EXPECT((int)st != 0x77, "%s: symbolStatus not written", sym);
    if (shim && r == CUDA_SUCCESS && p) {
        const char *want = hooked ? "libp2pshim.so" : "libcuda.so.1";
        EXPECT(strcmp(object_of(p), want) == 0, "%s %d %llu: pointer in %s, expected %s", sym,
               version, (unsigned long long)flags, object_of(p), want);
    }
    return r == CUDA_SUCCESS ? p : NULL;
}

#define FN(type, sym, ver, fl, hooked) ((type)get(sym, ver, fl, hooked))

/* Copy entry points fetched at flags 0 and flags 2 (the index into
 * legacy[][] and perthread[] is the index into copy_bases). */
static const char *const copy_bases[] = {
    "cuMemcpy", "cuMemcpyAsync", "cuMemcpyPeer", "cuMemcpyPeerAsync", "cuMemcpyDtoD",
    "cuMemcpyDtoDAsync", "cuMemcpy2D", "cuMemcpy2DUnaligned", "cuMemcpy2DAsync",
    "cuMemcpy3D", "cuMemcpy3DAsync", "cuMemcpy3DPeer", "cuMemcpy3DPeerAsync",
    "cuMemcpyHtoD", "cuMemcpyDtoH", "cuMemcpyHtoDAsync", "cuMemcpyDtoHAsync"};
enum { NB = sizeof copy_bases / sizeof copy_bases[0] };
static void *legacy[NB][2], *perthread[NB];

typedef CUresult (*set_cur_fn)(CUcontext);
typedef CUresult (*memset_fn)(CUdeviceptr, unsigned char, size_t, CUstream);

/* dlopen the driver and dlsym cuGetProcAddress_v2 (in the shim run: the
 * shim's). Returns 0 when either is missing. */
static int open_driver(void)
{
    h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!h) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return 0;
    }
    calls = (uint64_t(*)(const char *))dlsym(h, "standin_calls");
    gpa = (gpa5_fn)dlsym(h, "cuGetProcAddress_v2");
    printf("dlsym cuGetProcAddress_v2: sym=%s\n", symbol_of((void *)gpa));
    if (!gpa || !calls)
        return 0;
    if (shim)
        EXPECT(strcmp(object_of((void *)gpa), "libp2pshim.so") == 0,
               "dlsym(h, cuGetProcAddress_v2) gave a pointer in %s", object_of((void *)gpa));
    return 1;
}

/* cuGetProcAddress asked for itself, both forms: two pointers, and the
 * 4-argument one works. Returns 0 when a form is missing. */
static int self_lookup_both_forms(void)
{
    gpa4_fn gpa4 = (gpa4_fn)get("cuGetProcAddress", 11030, 0, 1);
    gpa5_fn gpa5 = (gpa5_fn)get("cuGetProcAddress", 12000, 0, 1);
    if (!gpa4 || !gpa5)
        return 0;
    EXPECT((void *)gpa4 != (void *)gpa5, "both forms of cuGetProcAddress are one pointer");
    gpa = gpa5;
    void *p4 = NULL;
    CUresult r4 = gpa4("cuMemcpyPeer", &p4, 4000, 0);
    printf("gpa4 cuMemcpyPeer 4000 0: rc=%d sym=%s\n", (int)r4, symbol_of(p4));
    if (shim)
        EXPECT(strcmp(object_of(p4), "libp2pshim.so") == 0, "4-argument form: not the shim's");
    return 1;
}

/* copy entry points: flags 0 at old versions, flags 2 at 7000; every
 * distinct variant a distinct pointer, the same variant the same */
static void copy_variants_distinct(void)
{
    for (int i = 0; i < NB; i++) {
        legacy[i][0] = get(copy_bases[i], 3020, 0, 1);
        legacy[i][1] = get(copy_bases[i], 4000, 0, 1);
        perthread[i] = get(copy_bases[i], 7000, PT, 1);
        EXPECT(perthread[i] != legacy[i][1], "%s: flags 2 gave the legacy pointer",
               copy_bases[i]);
    }
    void *batch[4] = {get("cuMemcpyBatchAsync", 12080, 0, 1),
                      get("cuMemcpyBatchAsync", 13000, 0, 1),
                      get("cuMemcpyBatchAsync", 12080, PT, 1),
                      get("cuMemcpyBatchAsync", 13000, PT, 1)};
    get("cuMemcpyBatchAsync", 12000, 0, 1);
    get("cuMemcpy3DBatchAsync", 12080, 0, 1);
    get("cuMemcpy3DBatchAsync", 13000, PT, 1);
    for (int i = 0; i < 4; i++)
        for (int j = i + 1; j < 4; j++)
            EXPECT(batch[i] != batch[j], "cuMemcpyBatchAsync variants %d and %d are one pointer",
                   i, j);
    for (int i = 0; i < NB; i++)
        for (int j = 0; j < NB; j++) {
            EXPECT(i == j || (perthread[i] != perthread[j] && legacy[i][1] != legacy[j][1]),
                   "%s and %s share a pointer", copy_bases[i], copy_bases[j]);
            EXPECT(perthread[i] != legacy[j][1], "%s/%s: per-thread == legacy", copy_bases[i],
                   copy_bases[j]);
        }
}

/* unhooked, unknown, too old, bad flags */
static void unhooked_and_bad_lookups(void)
{
    void *cur_fn = get("cuCtxGetCurrent", 4000, 0, 0);
    if (shim)
        EXPECT(cur_fn == dlsym(h, "cuCtxGetCurrent"), "cuCtxGetCurrent is not the driver's own");
    get("cuNoSuchFunctionAnywhere", 13000, 0, 0);
    get("cuMemcpyBatchAsync", 11000, 0, 0);
    get("cuMemcpyPeer", 13000, 5, 0);
    get("cuInit", 2000, PT, 0);
    void *pnull = (void *)0x1;
    printf("gpa NULL symbol: rc=%d\n", (int)gpa(NULL, &pnull, 13000, 0, NULL));
    printf("gpa NULL pfn: rc=%d\n", (int)gpa("cuMemcpyPeer", NULL, 13000, 0, NULL));
}

/* One cross copy through a fetched cuMemcpyPeer variant, with memsets
 * pending on both devices' streams: it reaches the stand-in function
 * `reaches` (never `not_reaches`) and leaves the right bytes. */
typedef CUresult (*peer_fn)(CUdeviceptr, CUcontext, CUdeviceptr, CUcontext, size_t);
struct ordered_run {
    const char *what;
    peer_fn fn;
    memset_fn memset_fn;
    const char *reaches, *not_reaches;
};

static void ordered_copy(const struct ordered_run *run, int k, int round, set_cur_fn set_cur,
                         const CUcontext c[2], CUdeviceptr a, CUdeviceptr b, unsigned char *host)
{
    typedef CUresult (*dtoh_fn)(void *, CUdeviceptr, size_t);
    dtoh_fn dtoh = (dtoh_fn)legacy[14][0];
    unsigned char vs = (unsigned char)(0x11 + 16 * round + k), vd = (unsigned char)0xEE;
    /* pending: the destination on device 1, the source on device 0 */
    set_cur(c[1]);
    run->memset_fn(b, vd, N, NULL);
    set_cur(c[0]);
    run->memset_fn(a, vs, N, NULL);
    uint64_t in = calls(run->reaches), out = calls(run->not_reaches);
    CUresult r = run->fn(b, c[1], a, c[0], N);
    EXPECT(calls(run->reaches) == in + 1 && calls(run->not_reaches) == out,
           "%s cuMemcpyPeer did not reach %s", run->what, run->reaches);
    memset(host, 0, N);
    set_cur(c[1]);
    dtoh(host, b, N);
    set_cur(c[0]);
    size_t bad = 0;
    while (bad < N && host[bad] == vs)
        bad++;
    printf("ordered %s copy round %d: rc=%d right=%s\n", run->what, round, (int)r,
           bad == N ? "yes" : "no");
    EXPECT(bad == N, "%s copy: byte %zu is 0x%02x, expected 0x%02x", run->what, bad,
           bad < N ? host[bad] : 0, vs);
}

/* set-up through fetched pointers, as cudart does; then the legacy and the
 * per-thread cuMemcpyPeer, three rounds each. Returns 0 when set-up fails. */
static int ordered_copies_through_fetched(CUcontext c[2])
{
    CUresult (*init)(unsigned) = FN(CUresult(*)(unsigned), "cuInit", 2000, 0, 0);
    CUresult (*retain)(CUcontext *, CUdevice) =
        FN(CUresult(*)(CUcontext *, CUdevice), "cuDevicePrimaryCtxRetain", 7000, 0, 0);
    set_cur_fn set_cur = FN(set_cur_fn, "cuCtxSetCurrent", 4000, 0, 0);
    CUresult (*alloc)(CUdeviceptr *, size_t) =
        FN(CUresult(*)(CUdeviceptr *, size_t), "cuMemAlloc", 3020, 0, 1);
    memset_fn memset_legacy = FN(memset_fn, "cuMemsetD8Async", 3020, 0, 1);
    memset_fn memset_pt = FN(memset_fn, "cuMemsetD8Async", 7000, PT, 1);
    if (!init || !retain || !set_cur || !alloc || !memset_legacy || !memset_pt)
        return 0;
    CUdeviceptr a = 0, b = 0;
    printf("init rc=%d\n", (int)init(0));
    printf("retain rc=%d %d\n", (int)retain(&c[0], 0), (int)retain(&c[1], 1));
    set_cur(c[1]);
    printf("alloc b rc=%d\n", (int)alloc(&b, N));
    set_cur(c[0]);
    printf("alloc a rc=%d\n", (int)alloc(&a, N));

    /* which stand-in function each fetched pointer reaches */
    unsigned char *host = malloc(N);
    if (!host)
        return 0;
    const struct ordered_run runs[2] = {
        {"legacy", (peer_fn)legacy[2][1], memset_legacy, "cuMemcpyPeer", "cuMemcpyPeer_ptds"},
        {"per-thread", (peer_fn)perthread[2], memset_pt, "cuMemcpyPeer_ptds", "cuMemcpyPeer"}};
    for (int k = 0; k < 2; k++)
        for (int round = 0; round < 3; round++)
            ordered_copy(&runs[k], k, round, set_cur, c, a, b, host);
    free(host);
    return 1;
}

int main(int argc, char **argv)
{
    if (argc < 2 || (strcmp(argv[1], "shim") && strcmp(argv[1], "noshim")))
        return 2;
    shim = strcmp(argv[1], "shim") == 0;

    if (!open_driver() || !self_lookup_both_forms())
        return 1;
    copy_variants_distinct();
    unhooked_and_bad_lookups();
    CUcontext c[2];
    if (!ordered_copies_through_fetched(c))
        return 1;
    if (shim) {
        int (*enabled)(CUcontext, CUcontext) =
            (int (*)(CUcontext, CUcontext))dlsym(h, "standin_peer_enabled");
        EXPECT(enabled && (enabled(c[0], c[1]) || enabled(c[1], c[0])),
               "no peer access enabled after cross copies through fetched pointers");
    }
    if (failures)
        fprintf(stderr, "procaddr: %d check(s) failed\n", failures);
    return failures ? 1 : 0;
}
