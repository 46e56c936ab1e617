/* Host-bounced copies, the bytes (bounce_paths' checks 2 to 5): one
 * staging buffer reused in a loop both ways, partial overlaps and two
 * snapshots in one H2D, the CPU writing between the copies, reads by the
 * kernel (write(2) into a pipe, a forked child), an H2D smaller than
 * any snapshot worth taking, and a D2H left to the driver over a served
 * snapshot. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bounce_paths.h"
#include "bt_pipe.h"

/* 2. One staging buffer, both directions, six rounds, its host bytes read
 * after each H2D. Round 0 has no evidence; rounds 1-2 are eager (a reused
 * buffer is, until 2 snapshots in a row served: the D2H as without the
 * shim, the H2D from the device copy), whose reads cost no fill; round 3
 * is a lazy try, which serves its H2D and is then read back whole: the
 * buffer is read besides going back to a GPU, so it turns eager again
 * (4-5). Under P2PSHIM_BOUNCE=lazy every round from 1 is lazy. */
void loop(void)
{
    size_t n = (size_t)256 << 10;
    unsigned char *h = buffer(n), *p = buffer(n);
    bool forced_lazy = bt_forced_lazy();
    for (int i = 0; i < 6; i++) {
        int from = i % 2, to = 1 - from;
        CUdeviceptr s = from ? src1 : src0, d = to ? dst1 : dst0;
        char what[64];
        snprintf(what, sizeof what, "loop round %d %d->%d", i, from, to);
        struct standin_stats s0;
        bt_d2h_round(h, s, bt_env.ctx[from], p, n, 100 + (unsigned)i, &s0);
        pl_use(bt_env.ctx[to]);
        PL_OK(cuMemcpyHtoD_v2(d, h, n));
        /* Round 0 has no evidence: the normal way, and it is the evidence. */
        bool eager = i >= 1 && i != 3 && !forced_lazy;
        if (i == 0)
            bt_expect_bounced(&s0, 2 * n, 0, 2 * n, what);
        else
            bt_expect_bounced(&s0, eager ? n + 2 * PG : 4 * PG, n - 2 * PG, 2 * n, what);
        struct bt_paths r;
        bt_paths_since(&s0, &r);
        PL_EXPECT(!bt_shim || getenv("BT_NO_BOUNCE") || i == 0 ||
                      (eager ? r.d2h_bytes == n : r.d2h_bytes <= 2 * PG),
                  "%s: the D2H moved %llu bytes to the host, expected %s", what,
                  (unsigned long long)r.d2h_bytes, eager ? "all (eager)" : "none (lazy)");
        PL_EXPECT(!bt_shim || i > 0 || (r.d2h_bytes == n && r.h2d_bytes == n),
                  "%s: a snapshot without evidence (%llu bytes to the host)", what,
                  (unsigned long long)r.d2h_bytes);
        bt_check_dev(d, p, n, what);
        line(what, h, n, d, n);
    }
    pl_use(bt_env.ctx[0]);
    free(h);
    free(p);
}

/* 3. Parts: an H2D of the middle, one running past the snapshot into
 * bytes the CPU wrote, and one over two snapshots side by side. */
void partial(void)
{
    size_t n = N, extra = 3 * PG + 5;
    unsigned char *h = buffer(n + extra), *p = buffer(n), *q = buffer(n), *want = buffer(n + extra);
    bt_pattern(p, n, 200);
    bt_set_dev(src0, p, n);
    pl_use(bt_env.ctx[0]);
    bt_prime(h, src0, dst0, n);
    bt_pattern(h + n, extra, 201); /* beyond the D2H: the CPU's bytes */
    PL_OK(cuMemcpyDtoH_v2(h, src0, n));
    memcpy(want, p, n);
    memcpy(want + n, h + n, extra);

    size_t lo = n / 4 + 7, hi = 3 * n / 4;
    PL_OK(cuMemcpyHtoD_v2(dst1 + lo, h + lo, hi - lo));
    bt_check_dev(dst1 + lo, want + lo, hi - lo, "partial middle");
    line("partial middle", h + lo, hi - lo, dst1 + lo, hi - lo);

    lo = n / 2 + 1;
    hi = n + extra;
    PL_OK(cuMemcpyHtoD_v2(dst1, h + lo, hi - lo));
    bt_check_dev(dst1, want + lo, hi - lo, "partial past the end");
    line("partial past the end", h + lo, hi - lo, dst1, hi - lo);

    /* Two D2H side by side (a page boundary between them), one H2D. */
    bt_pattern(q, n, 202);
    bt_set_dev(src1, q, n);
    size_t half = 64 * PG;
    unsigned char *a = (unsigned char *)(((uintptr_t)h + PG - 1) & ~(uintptr_t)(PG - 1));
    bt_prime(a, src0, dst0, half);
    bt_prime(a + half, src1, dst0, half);
    PL_OK(cuMemcpyDtoH_v2(a, src0, half));
    pl_use(bt_env.ctx[1]);
    PL_OK(cuMemcpyDtoH_v2(a + half, src1, half));
    memcpy(want, p, half);
    memcpy(want + half, q, half);
    struct standin_stats s0;
    standin_get_stats(&s0);
    PL_OK(cuMemcpyHtoD_v2(dst0, a, 2 * half));
    bt_expect_bounced(&s0, 0, 2 * half, 2 * half, "two snapshots in one H2D");
    bt_check_dev(dst0, want, 2 * half, "two snapshots in one H2D");
    line("two snapshots in one H2D", a, 2 * half, dst0, 2 * half);
    pl_use(bt_env.ctx[0]);
    free(h);
    free(p);
    free(q);
    free(want);
}

/* 4. The CPU writes between the copies: the head, a middle page and the
 * last byte; the H2D delivers exactly what the host holds. */
void writes(void)
{
    size_t n = N;
    unsigned char *h = buffer(n) + 3, *p = buffer(n);
    bt_prime(h, src0, dst1, n);
    bt_pattern(p, n, 300);
    bt_set_dev(src0, p, n);
    PL_OK(cuMemcpyDtoH_v2(h, src0, n));
    h[0] = 0xA1;
    h[n / 2] = 0xA2;
    memset(h + 10 * PG, 0xA3, 3 * PG);
    h[n - 1] = 0xA4;
    p[0] = 0xA1;
    p[n / 2] = 0xA2;
    memset(p + 10 * PG, 0xA3, 3 * PG);
    p[n - 1] = 0xA4;
    struct standin_stats s0;
    standin_get_stats(&s0);
    PL_OK(cuMemcpyHtoD_v2(dst1, h, n));
    /* The dirty pages (one, three, and the partial ones) from the host. */
    bt_expect_bounced(&s0, 8 * PG, n - 8 * PG, n, "writes between");
    bt_check_dev(dst1, p, n, "writes between");
    bt_check_host(h, p, n, "writes between");
    line("writes between", h, n, dst1, n);
    free(h - 3);
    free(p);
}

/* 5. Reads by the kernel: write(2) into a pipe, and a forked child. */
void kernel_reads(void)
{
    size_t n = N;
    unsigned char *h = buffer(n), *h2 = buffer(n), *p = buffer(n), *out = buffer(n);
    bt_prime(h, src0, dst1, n);
    bt_pattern(p, n, 400);
    bt_set_dev(src0, p, n);
    PL_OK(cuMemcpyDtoH_v2(h, src0, n));
    PL_EXPECT(bt_pipe_through(h, out, n) == n, "write(2) from a bounced buffer failed");
    bt_check_host(out, p, n, "write(2) to a pipe");
    line("write(2) to a pipe", out, n, src0, 0);

    /* A child reads the buffer; the parent then bounces it (another
     * buffer and source: the pipe's read wasted the last snapshot). */
    free(h);
    h = h2;
    bt_prime(h, src1, dst1, n);
    bt_pattern(p, n, 401);
    bt_set_dev(src1, p, n);
    pl_use(bt_env.ctx[1]);
    PL_OK(cuMemcpyDtoH_v2(h, src1, n));
    pl_use(bt_env.ctx[0]);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        int same = memcmp(h, p, n) == 0;
        h[n / 2] ^= 0xFF; /* the child's own copy: its writes are its own */
        _exit(same && h[n / 2] == (unsigned char)(p[n / 2] ^ 0xFF) ? 0 : 1);
    }
    int status = -1;
    waitpid(pid, &status, 0);
    PL_EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "the forked child saw other bytes (status %d)", status);
    PL_OK(cuMemcpyHtoD_v2(dst1, h, n));
    bt_check_dev(dst1, p, n, "after fork");
    line("after fork", h, n, dst1, n);
    free(h);
    free(p);
    free(out);
}

/* An H2D smaller than any snapshot worth taking (64 KiB, the floor) is no
 * evidence: a buffer whose first bytes alone go back to a GPU is never
 * snapshotted; one whose 128 KiB go back is, from the next round. */
void small_h2d(void)
{
    /* Keys of its own: a size no other part uses (under a sanitizer the
     * shim does not see free, so a reused address keeps its host key). */
    size_t n = ((size_t)512 << 10) + 3 * PG, small = 16 << 10, enough = 128 << 10;
    CUdeviceptr src = src0 + ((size_t)1 << 20);
    unsigned char *h = buffer(n), *p = buffer(n);
    for (int i = 0; i < 6; i++) {
        char what[64];
        size_t back = i < 4 ? small : enough;
        snprintf(what, sizeof what, "H2D of %zu KiB, round %d", back >> 10, i);
        struct standin_stats s0;
        bt_d2h_round(h, src, bt_env.ctx[0], p, n, 900 + (unsigned)i, &s0);
        struct bt_paths d;
        bt_paths_since(&s0, &d);
        pl_use(bt_env.ctx[1]);
        PL_OK(cuMemcpyHtoD_v2(dst1, h, back));
        pl_use(bt_env.ctx[0]);
        if (bt_shim && !getenv("BT_NO_BOUNCE")) {
            /* The round after the first 128 KiB H2D: the buffer's first
             * snapshot, eager unless lazy is forced (its D2H as without
             * the shim, its H2D from the device). */
            bool snap = i == 5, lazy = snap && bt_forced_lazy();
            struct bt_paths all;
            bt_paths_since(&s0, &all);
            PL_EXPECT(lazy ? d.d2h_bytes <= 2 * PG : d.d2h_bytes == n,
                      "%s: the D2H moved %llu bytes to the host, expected %s", what,
                      (unsigned long long)d.d2h_bytes, lazy ? "none (lazy snapshot)" : "all");
            PL_EXPECT(snap ? all.h2d_bytes <= 2 * PG : all.h2d_bytes == back,
                      "%s: the H2D moved %llu bytes from the host, expected %s", what,
                      (unsigned long long)all.h2d_bytes, snap ? "none (snapshot)" : "all");
        }
        bt_check_dev(dst1, p, back, what);
        line(what, h, n, dst1, back);
    }
    free(h);
    free(p);
}

/* 6. A D2H the shim leaves to the driver (smaller than the minimum) over
 * the pages of a snapshot that served its H2D: the snapshot ends, its
 * pages are filled before the driver writes them, and that fill is the
 * shim's, not a read by the program: once lazy, the buffer stays lazy.
 * Before, the fill counted as the CPU reading the buffer after its H2D and
 * turned the buffer eager (its next D2Hs through the host), as on one
 * H200, where bounce_gpu's unaligned pair of 64 KiB - 3 bytes did it. A
 * size no other case uses: the buffer's key is new whatever address the
 * allocator gives it, so its first rounds are eager or plain and the
 * rounds from its first lazy one on are what is checked. */
void overlapped(void)
{
    enum { ROUNDS = 8, FIRST_LAZY_BY = 4 };
    size_t n = (size_t)320 << 10, small = (size_t)60 << 10;
    unsigned char *h = buffer(n), *p = buffer(n), *q = buffer(n);
    int first_lazy = -1, eager_after = 0;
    for (int i = 0; i < ROUNDS; i++) {
        char what[64];
        snprintf(what, sizeof what, "overlapped round %d", i);
        struct standin_stats s0;
        bt_d2h_round(h, src0, bt_env.ctx[0], p, n, 700 + (unsigned)i, &s0);
        pl_use(bt_env.ctx[1]);
        PL_OK(cuMemcpyHtoD_v2(dst1, h, n));
        struct bt_paths r;
        bt_paths_since(&s0, &r);
        bool lazy = r.d2h_bytes <= 2 * PG;
        if (lazy && first_lazy < 0)
            first_lazy = i;
        else if (!lazy && first_lazy >= 0)
            eager_after++;
        bt_check_dev(dst1, p, n, what);
        /* The small D2H, 3 bytes in: the rest keeps the round's bytes. */
        bt_pattern(q, n, 800 + (unsigned)i);
        bt_set_dev(src1, q, small);
        PL_OK(cuMemcpyDtoH_v2(h + 3, src1, small));
        memcpy(p + 3, q, small);
        bt_check_host(h, p, n, what);
        line(what, h, n, dst1, n);
    }
    bool checked = bt_shim && !getenv("BT_NO_BOUNCE");
    PL_EXPECT(!checked || (first_lazy >= 0 && first_lazy <= FIRST_LAZY_BY),
              "overlapped: the first lazy round was %d, expected one by round %d", first_lazy,
              FIRST_LAZY_BY);
    PL_EXPECT(!checked || eager_after == 0,
              "overlapped: %d round(s) after the first lazy one went through the host (a D2H "
              "left to the driver over a served snapshot made the buffer eager)",
              eager_after);
    pl_use(bt_env.ctx[0]);
    free(h);
    free(p);
    free(q);
}
