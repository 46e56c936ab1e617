/* The peer link of a bounced H2D: an H2D from a snapshot on device 0 into
 * device 1 is a device-to-device copy, and the shim enables peer access
 * for it as for any copy, in the needed direction (from the issuing
 * device, 1, to the snapshot's, 0), and only then.
 *
 * "bounce_link shim|noshim": one transcript line (the checksums of the
 * bytes), the same in both runs (compare.sh); the shim run checks the
 * link's true state in the stand-in. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>

#include "bt_common.h"

#define PG 4096

int main(int argc, char **argv)
{
    bt_init(argc, argv);
    size_t n = (size_t)512 << 10;
    CUcontext c0 = bt_env.ctx[0], c1 = bt_env.ctx[1];
    CUdeviceptr src0 = pl_alloc(c0, n), stage0 = pl_alloc(c0, n), dst1 = pl_alloc(c1, n);
    unsigned char *h = malloc(n), *p = malloc(n);
    if (h == NULL || p == NULL)
        abort();
    pl_use(c0);
    bt_prime(h, src0, stage0, n); /* evidence, on device 0 alone */
    bt_pattern(p, n, 7);
    bt_set_dev(src0, p, n);
    PL_OK(cuMemcpyDtoH_v2(h, src0, n));
    bool before = standin_peer_enabled(c0, c1) || standin_peer_enabled(c1, c0);
    struct standin_stats s0;
    standin_get_stats(&s0);
    pl_use(c1);
    PL_OK(cuMemcpyHtoD_v2(dst1, h, n));
    pl_use(c0);
    bt_check_dev(dst1, p, n, "bounced H2D");
    if (bt_shim && !getenv("BT_NO_BOUNCE")) {
        struct bt_paths after;
        bt_paths_since(&s0, &after);
        PL_EXPECT(after.dev_bytes >= n - 2 * PG, "the H2D moved %llu bytes device to device",
                  (unsigned long long)after.dev_bytes);
        PL_EXPECT(!before, "peer access was enabled before any cross-device copy");
        PL_EXPECT(standin_peer_enabled(c1, c0) && !standin_peer_enabled(c0, c1),
                  "after the bounced H2D issued on device 1: 1->0 %d, 0->1 %d (want 1, 0)",
                  standin_peer_enabled(c1, c0), standin_peer_enabled(c0, c1));
    }
    standin_flush_all();
    printf("bounced H2D: host=%016llx device=%016llx\n", (unsigned long long)bt_fnv(h, n),
           (unsigned long long)bt_fnv((const void *)(uintptr_t)dst1, n));
    free(h);
    free(p);
    return pl_finish("bounce_link");
}
