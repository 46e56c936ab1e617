/* Helpers of the bounce tests (tests/bounce): host-bounced copies (a D2H
 * whose host buffer feeds an H2D) on the stand-in driver, with and without
 * the shim.
 *
 * Device bytes are set and checked directly through the stand-in's device
 * pointers (they are host addresses there), after running all pending
 * work: the checks do not go through the shim they test. Paths are
 * checked with the stand-in's counters (what reached the driver): under
 * the shim a bounced H2D shows as a device-to-device copy and at most two
 * partial pages from the host. */
#ifndef BT_COMMON_H
#define BT_COMMON_H

#include "pl_common.h"

#include <stdbool.h>

/* One flavour of the pair of copies: sync legacy, sync per-thread, async
 * on a created stream, async on the per-thread default stream, and the
 * unified cuMemcpy and cuMemcpyAsync (what cudaMemcpyDefault reaches). */
struct bt_flavour {
    const char *name;
    CUresult (*d2h)(const struct bt_flavour *f, void *h, CUdeviceptr d, size_t n);
    CUresult (*h2d)(const struct bt_flavour *f, CUdeviceptr d, const void *h, size_t n);
    CUresult (*memset8)(const struct bt_flavour *f, CUdeviceptr d, unsigned char v, size_t n);
    CUresult (*sync)(const struct bt_flavour *f);
    CUstream stream; /* async on a created stream: set by bt_flavours() */
};
#define BT_FLAVOURS 7
/* The four flavours (a new array); the created stream lives in ctx. */
struct bt_flavour *bt_flavours(CUcontext ctx);

extern struct pl_env bt_env;
extern int bt_shim;   /* the shim is loaded (argv[1] == "shim") */

/* pl_init, and argv[1] checked. Environment: BT_DENY_UFFD=1 refuses
 * userfaultfd to the process first (seccomp); BT_NO_BOUNCE=1 expects the
 * plain paths even under the shim (it must fall back); BT_NO_LEAK_REPORT=1
 * leaves out the report of what is alive at the program's first exit
 * handler (with idle release on, the shim's link events live until exit). */
void bt_init(int argc, char **argv);

/* The pattern of seed, n bytes. */
void bt_pattern(unsigned char *out, size_t n, unsigned seed);
/* Device bytes, directly (all pending work run first). */
void bt_set_dev(CUdeviceptr d, const unsigned char *bytes, size_t n);
int bt_check_dev(CUdeviceptr d, const unsigned char *want, size_t n, const char *what);
int bt_check_host(const unsigned char *h, const unsigned char *want, size_t n,
                  const char *what);
/* FNV-1a, for the transcript. */
uint64_t bt_fnv(const void *p, size_t n);

/* The stand-in's counters, and the difference since a snapshot. */
struct bt_paths {
    uint64_t h2d_bytes, d2h_bytes, dev_copies, dev_bytes;
};
void bt_paths_since(const struct standin_stats *before, struct bt_paths *out);

/* Whether the run forces lazy snapshots (P2PSHIM_BOUNCE=lazy); otherwise
 * the first snapshot of a reused buffer is eager. */
bool bt_forced_lazy(void);

/* Under the shim: the copies since `before` moved at most `host_max`
 * bytes through the host and at least `dev_min` bytes device to device.
 * Without the shim: exactly `plain` bytes through the host. */
void bt_expect_bounced(const struct standin_stats *before, size_t host_max, size_t dev_min,
                       size_t plain, const char *what);

/* Evidence for the shim's predictor: a D2H of [h, h+n) from src, then an
 * H2D of it to dst (sync, the current context), the shape of a staging
 * round, so that the next D2H into h (or from src) is bounced. Done in
 * both runs; dst's bytes are the program's to set afterwards. */
void bt_prime(void *h, CUdeviceptr src, CUdeviceptr dst, size_t n);

/* A round's D2H: the pattern of seed into p[0..n) and onto src, the
 * stand-in's counters into *before, then a D2H of n bytes from src into h
 * with ctx current (it stays current). */
void bt_d2h_round(void *h, CUdeviceptr src, CUcontext ctx, unsigned char *p, size_t n,
                  unsigned seed, struct standin_stats *before);

#endif
