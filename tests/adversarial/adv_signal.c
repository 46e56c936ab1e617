/* Signals against the shim's wrappers and its fault path.
 *
 *   handler_reads    a SIGALRM handler (setitimer, every 2 ms) reads a
 *       lazily bounced buffer while the main thread copies inside the
 *       driver; each round drops the buffer's pages again
 *   storm            a SIGALRM every 50 us, without SA_RESTART, while
 *       every copy API runs in a loop (device copies) and host rounds go
 *       through every D2H/H2D flavour over a bounced buffer: the signal
 *       lands inside each wrapper and inside the fault handling; every
 *       byte is checked
 *   process_directed  signals sent to the process, which blocks them in
 *       its only thread and takes them with sigtimedwait */
#define _GNU_SOURCE
#include "adv_common.h"
#include "pl_copies.h"

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define N ((size_t)256 << 10)

static struct adv_buf buf;
static volatile sig_atomic_t handler_runs, handler_bad;

/* One byte of every page (a different one in each), against want: every
 * page touched, little time in the handler. */
static void reader(int sig)
{
    (void)sig;
    int saved = errno;
    for (size_t i = 0; i < N / ADV_PAGE; i++) {
        size_t at = i * ADV_PAGE + (i * 61) % ADV_PAGE;
        if (((volatile unsigned char *)buf.h)[at] != buf.want[at])
            handler_bad++;
    }
    handler_runs++;
    errno = saved;
}

static void timer_every(long usec)
{
    struct itimerval it = {{0, usec}, {0, usec}};
    PL_EXPECT(setitimer(ITIMER_REAL, &it, NULL) == 0, "setitimer: %s", strerror(errno));
}

static void on_alarm(void (*fn)(int), int flags)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = fn;
    sa.sa_flags = flags;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGALRM, &sa, NULL);
}

static int case_handler_reads(int argc, char **argv)
{
    (void)argc, (void)argv;
    size_t big = (size_t)2 << 20;
    adv_buf_init(&buf, NULL, N, ADV_LAZY);
    CUdeviceptr a = pl_alloc(bt_env.ctx[0], big), b = pl_alloc(bt_env.ctx[0], big);
    /* Every round bounces the same bytes: whenever the handler runs, the
     * buffer holds them (without the shim, the D2H rewrites them as they
     * are). */
    adv_bounce(&buf, 61);
    on_alarm(reader, SA_RESTART);
    timer_every(2000);
    for (int round = 0; round < 40 || handler_runs < 5; round++) {
        adv_buf_prime(&buf);
        adv_bounce(&buf, 61);
        for (int i = 0; i < 4; i++)
            PL_OK(cuMemcpyDtoD_v2(b, a, big));
        if (round > 4000)
            break;
    }
    timer_every(0);
    adv_say("the handler ran: %s", handler_runs > 0 ? "yes" : "no");
    adv_say("the handler saw other bytes: %d times", (int)handler_bad);
    adv_digest("read back", buf.h, N);
    adv_h2d(&buf, "H2D");
    return 0;
}

static atomic_long storm_signals;

static void count_signal(int sig)
{
    (void)sig;
    atomic_fetch_add(&storm_signals, 1);
}

/* Every device copy API, each a few times, all bytes checked. */
static void storm_device_copies(void)
{
    size_t n = (size_t)64 << 10;
    CUcontext c0 = bt_env.ctx[0], c1 = bt_env.ctx[1];
    CUdeviceptr s0 = pl_alloc(c0, n), d1 = pl_alloc(c1, n);
    CUstream stream;
    pl_use(c0);
    PL_OK(cuStreamCreate(&stream, 0));
    for (int k = 0; k < pl_copy_api_count; k++) {
        const struct pl_copy_api *api = &pl_copy_apis[k];
        struct pl_xfer x = {d1, s0, c1, c0, n};
        for (int rep = 0; rep < 8; rep++) {
            unsigned seed = 100 + (unsigned)(k * 8 + rep);
            pl_fill(c0, s0, n, seed);
            pl_use(c0);
            CUresult r = api->issue(api, &x, api->user_stream ? stream : NULL);
            if (r == PL_NOT_SUPPORTED)
                break;
            PL_OK(r);
            if (api->async)
                pl_copy_sync(api, api->user_stream ? stream : NULL);
            pl_verify(c1, d1, n, seed, api->name);
        }
        adv_say("%s: %016llx", api->name, (unsigned long long)pl_checksum(c1, d1, n));
    }
    PL_OK(cuStreamDestroy_v2(stream));
}

/* Host rounds through every flavour over one bounced buffer. */
static void storm_host_rounds(struct bt_flavour *fl)
{
    int bounced = 0;
    for (int k = 0; k < BT_FLAVOURS; k++) {
        for (int rep = 0; rep < 6; rep++) {
            unsigned seed = 300 + (unsigned)(k * 8 + rep);
            struct standin_stats before;
            struct bt_paths p;
            bt_pattern(buf.want, N, seed);
            bt_set_dev(buf.src, buf.want, N);
            pl_use(bt_env.ctx[0]);
            standin_get_stats(&before);
            PL_OK(fl[k].d2h(&fl[k], buf.h, buf.src, N));
            PL_OK(fl[k].sync(&fl[k]));
            bt_paths_since(&before, &p);
            bounced += p.dev_bytes > 0;
            PL_OK(fl[k].h2d(&fl[k], buf.dst, buf.h, N));
            PL_OK(fl[k].sync(&fl[k]));
            bt_check_dev(buf.dst, buf.want, N, fl[k].name);
            if (rep == 5) /* the pages faulted in, under the storm */
                bt_check_host(buf.h, buf.want, N, fl[k].name);
        }
        standin_flush_all();
        adv_say("%s round: device=%016llx", fl[k].name,
                (unsigned long long)bt_fnv((const void *)(uintptr_t)buf.dst, N));
    }
    if (adv_shim)
        fprintf(stderr, "adv: %d of %d host rounds bounced\n", bounced, 6 * BT_FLAVOURS);
}

static int case_storm(int argc, char **argv)
{
    (void)argc, (void)argv;
    adv_buf_init(&buf, NULL, N, ADV_LAZY);
    struct bt_flavour *fl = bt_flavours(bt_env.ctx[0]);
    on_alarm(count_signal, 0);
    timer_every(50);
    storm_device_copies();
    storm_host_rounds(fl);
    timer_every(0);
    adv_say("signals landed: %s", atomic_load(&storm_signals) > 10 ? "many" : "few");
    return 0;
}

/* The program blocks the signals it waits for in its one thread, as a
 * program that takes them with sigwait does: the shim's threads (the
 * bounce's fault handler, the run log's writer) must not take them
 * either, or their default action ends the process. */
static int case_process_directed(int argc, char **argv)
{
    (void)argc, (void)argv;
    static const int sigs[] = {SIGUSR1, SIGTERM, SIGALRM};
    sigset_t set;
    setenv("P2PSHIM_RUN_LOG", adv_path("run-%p.jsonl"), 1);
    adv_buf_init(&buf, NULL, N, ADV_LAZY);
    adv_bounce(&buf, 62);
    adv_h2d(&buf, "bounced");
    sigemptyset(&set);
    for (int i = 0; i < 3; i++)
        sigaddset(&set, sigs[i]);
    sigprocmask(SIG_BLOCK, &set, NULL);
    for (int i = 0; i < 3; i++) {
        struct timespec wait = {5, 0};
        kill(getpid(), sigs[i]);
        int got = sigtimedwait(&set, NULL, &wait);
        adv_say("sent %s, sigtimedwait: %s", sigabbrev_np(sigs[i]),
                got > 0 ? sigabbrev_np(got) : "nothing");
    }
    return 0;
}

int main(int argc, char **argv)
{
    static const struct adv_case cases[] = {
        {"handler_reads", case_handler_reads},
        {"storm", case_storm},
        {"process_directed", case_process_directed},
    };
    return adv_main(argc, argv, cases, (int)(sizeof cases / sizeof cases[0]));
}
