/* Host-bounced copies, the paths: each flavour of the pair (sync legacy,
 * sync per-thread, async on a stream, async per-thread) with pending work
 * on both devices that the copies must follow (each buffer first given
 * the evidence of one staging round: the shim bounces only on evidence);
 * the policy (a loop that reads between the copies backs off; results
 * used on the host never bounce; a fresh buffer from one source is
 * predicted from round 2); a staging buffer reused in
 * a loop; partial overlaps and two snapshots in one H2D; writes between
 * the copies; reads through write(2) into a pipe and from a forked child.
 *
 * "bounce_paths shim|noshim": prints one transcript line per check (the
 * checksums of the bytes it saw), the same in both runs (compare.sh); the
 * shim run also checks that the bytes went device to device. Checks 2 to
 * 5 and the small H2D are in bounce_paths_parts.c. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bounce_paths.h"
#include "bt_pipe.h"

CUdeviceptr src0, src1, dst0, dst1;
struct bt_flavour *fl0, *fl1;

unsigned char *buffer(size_t n)
{
    unsigned char *b = malloc(n + 64);
    if (b == NULL)
        abort();
    return b;
}

void line(const char *what, const unsigned char *h, size_t n, CUdeviceptr d, size_t dn)
{
    standin_flush_all();
    printf("%s: host=%016llx device=%016llx\n", what, (unsigned long long)bt_fnv(h, n),
           (unsigned long long)bt_fnv((const void *)(uintptr_t)d, dn));
}

/* 1. Each flavour: the source's pending memset must land in the snapshot,
 * the destination's pending memset must come before the bounced H2D. */
static void flavours(void)
{
    /* One buffer and one source per case: a buffer read between the
     * copies wastes its snapshot and backs off (policy(), below). */
    unsigned char *hs[2] = {buffer(N) + 1, buffer(N) + 1}, *want = buffer(N), *p = buffer(N);
    for (int k = 0; k < BT_FLAVOURS; k++) {
        /* A size of its own per flavour: keys are (address, size), and the
         * last flavour's buffer, read after its H2D below, turned eager
         * (loop(), bounce_paths_parts.c). */
        size_t n = N - (size_t)k * 64;
        for (int touch = 0; touch < 2; touch++) {
            unsigned char *h = hs[touch];
            CUdeviceptr src = touch ? dst0 : src0; /* dst0: free until partial() */
            char what[96];
            snprintf(what, sizeof what, "flavour %s %s", fl0[k].name,
                     touch ? "read in between" : "untouched");
            pl_use(bt_env.ctx[0]);
            bt_prime(h, src, dst1, n); /* evidence: this is a staging buffer */
            bt_pattern(p, n, 10 + k * 2 + touch);
            bt_set_dev(src, p, n);
            memset(h, 0x77, n);
            struct standin_stats s0;
            standin_get_stats(&s0);
            pl_use(bt_env.ctx[0]);
            PL_OK(fl0[k].memset8(&fl0[k], src, 0x5C, n / 2));
            PL_OK(fl0[k].d2h(&fl0[k], h, src, n));
            PL_OK(fl0[k].sync(&fl0[k]));
            memcpy(want, p, n);
            memset(want, 0x5C, n / 2);
            if (touch)
                bt_check_host(h, want, n, what);
            pl_use(bt_env.ctx[1]);
            PL_OK(fl1[k].memset8(&fl1[k], dst1, 0xEE, n));
            PL_OK(fl1[k].h2d(&fl1[k], dst1, h, n));
            PL_OK(fl1[k].sync(&fl1[k]));
            pl_use(bt_env.ctx[0]);
            /* D2H and H2D each leave at most the two partial pages; the
             * first snapshot of a reused buffer is eager (its D2H as
             * without the shim) unless lazy is forced. */
            if (!touch)
                bt_expect_bounced(&s0, (bt_forced_lazy() ? 0 : n) + 4 * PG, n - 2 * PG, 2 * n,
                                  what);
            bt_check_dev(dst1, want, n, what);
            bt_check_host(h, want, n, what);
            line(what, h, n, dst1, n);
        }
    }
    free(hs[0] - 1);
    free(hs[1] - 1);
    free(want);
    free(p);
}

/* 1b. The policy: a staging loop whose program reads the buffer between
 * the copies for ten rounds, then stops reading. Round 0 has no evidence
 * (the normal way; its H2D is the evidence). Rounds 1-2 are eager (a
 * reused buffer: its pages stay, and an eager snapshot does not see
 * reads) and serve: round 3 is a lazy try. Its lazy snapshot is read by
 * the CPU first (wasted as a lazy one), yet its H2D still takes the bytes
 * from it: the CPU reads without writing, so the buffer turns eager (its
 * D2Hs run as without the shim and keep a device copy; its H2Ds are
 * served from that copy) for 4 rounds (4-7), then tries lazy once (8:
 * read again, so eager for 8: 9-16), then lazy (17: untouched, useful)
 * and lazy from then on. Bytes right in every round; the untouched rounds' host
 * bytes are checked once, after the last round (a read after each H2D
 * would be a reader too: loop(), bounce_paths_parts.c). */
static void policy(void)
{
    size_t n = (size_t)512 << 10;
    unsigned char *h = buffer(n), *p = buffer(n);
    for (int i = 0; i < 20; i++) {
        char what[64];
        bool read = i < 10;
        snprintf(what, sizeof what, "policy round %d (%s)", i, read ? "read" : "untouched");
        struct standin_stats s0;
        bt_d2h_round(h, src0, bt_env.ctx[0], p, n, 300 + (unsigned)i, &s0);
        struct bt_paths after_d2h;
        bt_paths_since(&s0, &after_d2h);
        if (read)
            bt_check_host(h, p, n, what);
        pl_use(bt_env.ctx[1]);
        PL_OK(cuMemcpyHtoD_v2(dst1, h, n));
        pl_use(bt_env.ctx[0]);
        struct bt_paths all;
        bt_paths_since(&s0, &all);
        /* P2PSHIM_BOUNCE=lazy: no eager rounds; each read round wastes its
         * snapshot and the buffer skips 1, 2, 4 ... D2Hs (rounds 2, 4-5,
         * 7-10), each skip round's H2D re-arming it. */
        bool forced_lazy = bt_forced_lazy();
        bool lazy = forced_lazy ? (i == 1 || i == 3 || i == 6 || i >= 11)
                                : (i == 3 || i == 8 || i >= 17);
        bool snap = forced_lazy ? lazy : i > 0;
        if (bt_shim && !getenv("BT_NO_BOUNCE")) {
            /* The partial head and tail pages go through the host either way. */
            PL_EXPECT(lazy ? after_d2h.d2h_bytes <= 2 * PG : after_d2h.d2h_bytes == n,
                      "%s: the D2H moved %llu bytes to the host, expected %s", what,
                      (unsigned long long)after_d2h.d2h_bytes,
                      lazy ? "none (lazy snapshot)" : "all (eager snapshot, or none)");
            PL_EXPECT(snap ? all.h2d_bytes <= 2 * PG && all.dev_bytes >= n - 2 * PG
                           : all.h2d_bytes == n && all.dev_bytes == 0,
                      "%s: the H2D moved %llu bytes from the host, %llu device to device",
                      what, (unsigned long long)all.h2d_bytes,
                      (unsigned long long)all.dev_bytes);
        }
        bt_check_dev(dst1, p, n, what);
        line(what, h, read ? n : 0, dst1, n);
    }
    bt_check_host(h, p, n, "policy, after the last round");
    line("policy, after the last round", h, n, dst1, n);
    free(h);
    free(p);
}

/* 1b'. Results copied down and used, never sent back: no snapshot ever,
 * every byte through the host as without the shim. And a fresh host
 * buffer each round from one source (x.cpu().to(...) in a loop): from
 * round 2 on, predicted through the source. */
static void never_and_fresh(void)
{
    /* A size no other case uses: keys are (address, size), and an address
     * may come back from the allocator with an earlier buffer's history
     * (under a sanitizer, whose free the shim does not see). */
    size_t n = ((size_t)512 << 10) + 5 * PG + 7;
    unsigned char *h = buffer(n), *p = buffer(n);
    for (int i = 0; i < 4; i++) {
        char what[64];
        snprintf(what, sizeof what, "used on the host, round %d", i);
        bt_pattern(p, n, 350 + i);
        bt_set_dev(dst0, p, n);
        struct standin_stats s0;
        standin_get_stats(&s0);
        PL_OK(cuMemcpyDtoH_v2(h, dst0, n));
        bt_check_host(h, p, n, what);
        struct bt_paths d;
        bt_paths_since(&s0, &d);
        PL_EXPECT(d.d2h_bytes == n && d.dev_bytes == 0, "%s: %llu bytes to the host, expected %zu",
                  what, (unsigned long long)d.d2h_bytes, n);
        line(what, h, n, dst0, n);
    }
    free(h);
    n = (size_t)512 << 10;
    unsigned char *prev = NULL;
    for (int i = 0; i < 4; i++) {
        char what[64];
        snprintf(what, sizeof what, "fresh buffer, round %d", i);
        /* mmap: a new range each round, never the last one (held until
         * the next is mapped). */
        unsigned char *f = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                                -1, 0);
        PL_EXPECT(f != MAP_FAILED, "mmap");
        struct standin_stats s0;
        bt_d2h_round(f, src1, bt_env.ctx[1], p, n, 360 + (unsigned)i, &s0);
        pl_use(bt_env.ctx[0]);
        PL_OK(cuMemcpyHtoD_v2(dst0, f, n));
        if (i == 0)
            bt_expect_bounced(&s0, 2 * n, 0, 2 * n, what);
        else
            bt_expect_bounced(&s0, 0, n, 2 * n, what);
        struct bt_paths all;
        bt_paths_since(&s0, &all);
        PL_EXPECT(!bt_shim || getenv("BT_NO_BOUNCE") || i > 0 || all.h2d_bytes == n,
                  "%s: round 0 has no evidence, yet %llu bytes came device to device", what,
                  (unsigned long long)all.dev_bytes);
        bt_check_dev(dst0, p, n, what);
        line(what, f, n, dst0, n);
        if (prev != NULL)
            munmap(prev, n);
        prev = f;
    }
    munmap(prev, n);
    free(p);
}

/* 1b''. A fresh buffer each round from one source, every other round read
 * whole by the CPU before its H2D (x.cpu().to(...) and a checksum of
 * x.cpu() in one loop). The read rounds' fills cost what their D2Hs would
 * have: they must not back the source off, nor turn it eager, so that the
 * untouched rounds stay bounced (no byte through the host). */
static void fresh_alternating(void)
{
    size_t n = ((size_t)768 << 10) + 3 * PG;
    unsigned char *p = buffer(n);
    int untouched_bounced = 0;
    for (int i = 0; i < 14; i++) {
        char what[64];
        bool read = i % 2 == 1;
        snprintf(what, sizeof what, "fresh alternating, round %d%s", i, read ? ", read" : "");
        unsigned char *f = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                                -1, 0);
        PL_EXPECT(f != MAP_FAILED, "mmap");
        struct standin_stats s0;
        bt_d2h_round(f, src1, bt_env.ctx[1], p, n, 370 + (unsigned)i, &s0);
        if (read)
            bt_check_host(f, p, n, what);
        pl_use(bt_env.ctx[0]);
        PL_OK(cuMemcpyHtoD_v2(dst0, f, n));
        struct bt_paths d;
        bt_paths_since(&s0, &d);
        if (!read && i >= 2 && d.d2h_bytes + d.h2d_bytes == 0)
            untouched_bounced++;
        bt_check_dev(dst0, p, n, what);
        standin_flush_all();
        printf("%s: device=%016llx\n", what,
               (unsigned long long)bt_fnv((const void *)(uintptr_t)dst0, n));
        munmap(f, n);
    }
    /* Rounds 2, 4, ..., 12: six untouched rounds after the evidence. */
    PL_EXPECT(!bt_shim || getenv("BT_NO_BOUNCE") || untouched_bounced == 6,
              "fresh alternating: %d of 6 untouched rounds bounced (the read rounds backed "
              "the source off)", untouched_bounced);
    free(p);
}

/* 1b'''. One reused malloc buffer, every other round read whole by the
 * CPU between its copies (a loop that writes its staging buffer to a file
 * every other round). A lazy snapshot's untouched round leaves the pages
 * dropped; the next round's snapshot of the same pages must not take them
 * for a new buffer's: its read buys pages the program had, so the buffer
 * turns eager (the read rounds' D2Hs run as usual) instead of staying
 * lazy with a fill in every read round. Counted: read rounds from round 4
 * whose D2H left most bytes off the host (lazy). */
static void reused_alternating(void)
{
    size_t n = ((size_t)768 << 10) + 5 * PG;
    unsigned char *h = buffer(n), *p = buffer(n);
    int lazy_reads = 0, reads = 0;
    for (int i = 0; i < 24; i++) {
        char what[64];
        bool read = i % 2 == 1;
        snprintf(what, sizeof what, "reused alternating, round %d%s", i, read ? ", read" : "");
        struct standin_stats s0;
        bt_d2h_round(h, src1, bt_env.ctx[1], p, n, 390 + (unsigned)i, &s0);
        struct bt_paths d;
        bt_paths_since(&s0, &d);
        if (read && i >= 4) {
            reads++;
            lazy_reads += d.d2h_bytes < n / 2;
            bt_check_host(h, p, n, what);
        }
        pl_use(bt_env.ctx[0]);
        PL_OK(cuMemcpyHtoD_v2(dst0, h, n));
        bt_check_dev(dst0, p, n, what);
        standin_flush_all();
        printf("%s: device=%016llx\n", what,
               (unsigned long long)bt_fnv((const void *)(uintptr_t)dst0, n));
    }
    /* Eager for 4 rounds after each read seen lazy, then one lazy try:
     * at most one read round in 3 lazy (all 10 before). */
    PL_EXPECT(!bt_shim || getenv("BT_NO_BOUNCE") || bt_forced_lazy() || lazy_reads <= reads / 3,
              "reused alternating: %d of %d read rounds lazy (each a fill of pages the "
              "program had)", lazy_reads, reads);
    printf("reused alternating: %d read rounds\n", reads);
    free(h);
    free(p);
}

/* 1c. Pinned memory (auto: eager). The D2H moves every byte to the host
 * as usual and the H2D comes from the snapshot while nothing could have
 * written the buffer behind its page tables; a memset of the pinned
 * buffer (the stand-in, like the GPU, writes it by "DMA", unseen by the
 * write protection) must reach the H2D; one of device memory changes
 * nothing. */
static void pinned_eager(void)
{
    size_t n = (size_t)512 << 10;
    void *hp = NULL;
    unsigned char *p = buffer(n);
    pl_use(bt_env.ctx[0]);
    PL_OK(cuMemHostAlloc(&hp, n, 0));
    unsigned char *h = hp;
    bt_prime(h, src0, dst1, n);
    for (int i = 0; i < 4; i++) {
        static const char *names[4] = {"pinned", "pinned again", "pinned, memset of it between",
                                       "pinned, memset of device memory between"};
        /* Round 2's memset of the buffer ended its snapshot unused: wasted,
         * and pinned, the buffer skips 4 D2Hs (a wasted pinned snapshot's
         * least backoff). Four staging rounds give it back. */
        for (int k = 0; i == 3 && k < 4; k++)
            bt_prime(h, src0, dst1, n);
        bt_pattern(p, n, 400 + i);
        bt_set_dev(src0, p, n);
        struct standin_stats s0;
        standin_get_stats(&s0);
        pl_use(bt_env.ctx[0]);
        /* Pending on the legacy stream: the snapshot, taken on the shim's
         * own stream, must come after it. */
        PL_OK(cuMemsetD8Async(src0, (unsigned char)(0x30 + i), n / 3, NULL));
        memset(p, 0x30 + i, n / 3);
        PL_OK(cuMemcpyDtoH_v2(h, src0, n));
        if (i == 2) {
            PL_OK(cuMemsetD8_v2((CUdeviceptr)(uintptr_t)(h + 3 * PG), 0xA5, 2 * PG + 7));
            memset(p + 3 * PG, 0xA5, 2 * PG + 7);
        }
        if (i == 3)
            PL_OK(cuMemsetD8_v2(dst0, 0x11, n));
        pl_use(bt_env.ctx[1]);
        PL_OK(cuMemcpyHtoD_v2(dst1, h, n));
        pl_use(bt_env.ctx[0]);
        struct bt_paths all;
        bt_paths_since(&s0, &all);
        bool served = i != 2;
        if (bt_shim && !getenv("BT_NO_BOUNCE") && !getenv("BT_NO_EAGER")) {
            PL_EXPECT(all.d2h_bytes == n, "%s: D2H moved %llu bytes, expected %zu", names[i],
                      (unsigned long long)all.d2h_bytes, n);
            PL_EXPECT(served ? all.h2d_bytes == 0 : all.h2d_bytes == n,
                      "%s: the H2D moved %llu bytes from the host, expected %s", names[i],
                      (unsigned long long)all.h2d_bytes, served ? "none" : "all");
        }
        bt_check_dev(dst1, p, n, names[i]);
        bt_check_host(h, p, n, names[i]);
        line(names[i], h, n, dst1, n);
    }
    PL_OK(cuMemFreeHost(hp));
    free(p);
}

/* 1d. Copies captured into a graph (cuStreamBeginCapture): they run when
 * the graph is launched, if ever (never, in the stand-in), so the shim
 * must not take a snapshot for them or serve them from one: the host
 * buffer keeps what it held, and an H2D afterwards delivers that. Pinned
 * (eager) and pageable (lazy) buffers. */
static void captured(void)
{
    size_t n = (size_t)512 << 10;
    unsigned char *p = buffer(n), *held = buffer(n);
    CUstream s;
    pl_use(bt_env.ctx[0]);
    PL_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    for (int pinned = 0; pinned < 2; pinned++) {
        const char *what = pinned ? "captured D2H, pinned" : "captured D2H, pageable";
        void *hp = NULL;
        if (pinned)
            PL_OK(cuMemHostAlloc(&hp, n, 0));
        else
            hp = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        unsigned char *h = hp;
        bt_pattern(held, n, 500 + pinned);
        memcpy(h, held, n);
        bt_pattern(p, n, 510 + pinned);
        bt_set_dev(src0, p, n);
        pl_use(bt_env.ctx[0]);
        PL_OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_RELAXED));
        PL_OK(cuMemcpyDtoHAsync_v2(h, src0, n, s));
        CUgraph g;
        PL_OK(cuStreamEndCapture(s, &g));
        pl_use(bt_env.ctx[1]);
        PL_OK(cuMemcpyHtoD_v2(dst1, h, n));
        pl_use(bt_env.ctx[0]);
        bt_check_dev(dst1, held, n, what);
        bt_check_host(h, held, n, what);
        line(what, h, n, dst1, n);
        if (pinned)
            PL_OK(cuMemFreeHost(hp));
        else
            munmap(hp, n);
    }
    PL_OK(cuStreamDestroy_v2(s));
    free(p);
    free(held);
}

int main(int argc, char **argv)
{
    bt_init(argc, argv);
    size_t big = (size_t)2 << 20;
    src0 = pl_alloc(bt_env.ctx[0], big);
    dst0 = pl_alloc(bt_env.ctx[0], big);
    src1 = pl_alloc(bt_env.ctx[1], big);
    dst1 = pl_alloc(bt_env.ctx[1], big);
    fl0 = bt_flavours(bt_env.ctx[0]);
    fl1 = bt_flavours(bt_env.ctx[1]);
    flavours();
    policy();
    never_and_fresh();
    fresh_alternating();
    reused_alternating();
    pinned_eager();
    captured();
    loop();
    partial();
    writes();
    kernel_reads();
    small_h2d();
    overlapped();
    return pl_finish("bounce_paths");
}
