/* Signals against the shim's wrappers, its fault path and its threads.
 *
 *   handler_reads    a SIGALRM handler (setitimer, every 2 ms) reads a
 *       lazily bounced buffer while the main thread copies inside the
 *       driver; each round drops the buffer's pages again (the signal
 *       also lands inside the D2H that sets up the snapshot)
 *   handler_writes   the same, the handler writing (the bytes each page
 *       must hold: a fill, then a write to a write-protected page)
 *   handler_wrappers the reading handler, every 1 ms, while the main
 *       thread goes through each wrapper of the shim's that takes a lock
 *       or enters the driver: malloc and free of a bounced buffer (free
 *       ends its snapshot), cuMemAlloc and cuMemFree, close, every copy
 *       API, a memset
 *   handler_unwrapped  the same inside driver calls the shim does not
 *       wrap (cuStreamSynchronize, cuCtxSetCurrent): a known limit
 *   storm            a SIGALRM every 50 us, without SA_RESTART, while
 *       every copy API runs in a loop (device copies) and host rounds go
 *       through every D2H/H2D flavour over a bounced buffer: the signal
 *       lands inside each wrapper and inside the fault handling; every
 *       byte is checked
 *   process_directed  signals sent to the process, which blocks them in
 *       its only thread and takes them with sigtimedwait (ARG: both, the
 *       run log's writer and the fault handler running; run_log, the
 *       writer alone; uffd, the fault handler alone)
 *   thread_masks     every thread that is not the program's (the shim's)
 *       blocks every catchable signal */
#define _GNU_SOURCE
#include "adv_common.h"
#include "pl_copies.h"

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define N ((size_t)256 << 10)

static struct adv_buf buf;
static volatile sig_atomic_t handler_runs, handler_bad;

/* The handlers touch the buffer only while armed: around calls of the
 * shim's wrappers, what the shim vouches for. A driver call the shim does
 * not wrap (the stand-in's own set-up calls, a synchronize) is the case
 * handler_unwrapped. */
static volatile sig_atomic_t reader_armed;
#define ARMED(call) (reader_armed = 1, (call), reader_armed = 0)

/* One byte of every page (a different one in each), against want: every
 * page touched, little time in the handler. */
static void reader(int sig)
{
    (void)sig;
    if (!reader_armed)
        return;
    int saved = errno;
    for (size_t i = 0; i < N / ADV_PAGE; i++) {
        size_t at = i * ADV_PAGE + (i * 61) % ADV_PAGE;
        if (((volatile unsigned char *)buf.h)[at] != buf.want[at])
            handler_bad++;
    }
    handler_runs++;
    errno = saved;
}

/* The same pages written with the bytes they must hold: each write needs
 * the page's other bytes filled first. */
static void writer(int sig)
{
    (void)sig;
    if (!reader_armed)
        return;
    int saved = errno;
    for (size_t i = 0; i < N / ADV_PAGE; i++) {
        size_t at = i * ADV_PAGE + (i * 67) % ADV_PAGE;
        ((volatile unsigned char *)buf.h)[at] = buf.want[at];
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

/* The handler (reader or writer) runs every 2 ms while the main thread
 * bounces the buffer again and copies inside the driver, round after
 * round, until the handler ran at least 5 times. */
static int handler_rounds(void (*handler)(int))
{
    size_t big = (size_t)2 << 20;
    adv_buf_init(&buf, NULL, N, ADV_LAZY);
    CUdeviceptr a = pl_alloc(bt_env.ctx[0], big), b = pl_alloc(bt_env.ctx[0], big);
    /* Every round bounces the same bytes: whenever the handler runs, the
     * buffer holds them (without the shim, the D2H rewrites them as they
     * are). */
    adv_bounce(&buf, 61);
    on_alarm(handler, SA_RESTART);
    timer_every(2000);
    int taken = 0, round = 0;
    for (; round < 40 || handler_runs < 5; round++) {
        struct standin_stats before;
        struct bt_paths p;
        CUresult r[5];
        adv_buf_prime(&buf);
        bt_set_dev(buf.src, buf.want, N);
        standin_get_stats(&before);
        pl_use(bt_env.ctx[0]);
        /* The D2H (its snapshot's set-up), then copies inside the driver. */
        ARMED((r[0] = cuMemcpyDtoH_v2(buf.h, buf.src, N), r[1] = cuMemcpyDtoD_v2(b, a, big),
               r[2] = cuMemcpyDtoD_v2(b, a, big), r[3] = cuMemcpyDtoD_v2(b, a, big),
               r[4] = cuMemcpyDtoD_v2(b, a, big)));
        for (int i = 0; i < 5; i++)
            PL_OK(r[i]);
        bt_paths_since(&before, &p);
        taken += p.dev_bytes > 0;
        if (round > 4000)
            break;
    }
    if (adv_shim)
        fprintf(stderr, "adv: %d of %d D2H bounced\n", taken, round);
    timer_every(0);
    adv_say("the handler ran: %s", handler_runs > 0 ? "yes" : "no");
    adv_say("the handler saw other bytes: %d times", (int)handler_bad);
    adv_digest("read back", buf.h, N);
    adv_h2d(&buf, "H2D");
    return 0;
}

static int case_handler_reads(int argc, char **argv)
{
    (void)argc, (void)argv;
    return handler_rounds(reader);
}

static int case_handler_writes(int argc, char **argv)
{
    (void)argc, (void)argv;
    return handler_rounds(writer);
}

/* One page a run, the next each time (round the buffer), while armed. */
static void reader_one(int sig)
{
    (void)sig;
    static size_t page;
    if (!reader_armed)
        return;
    int saved = errno;
    size_t at = page * ADV_PAGE + (page * 61) % ADV_PAGE;
    page = (page + 1) % (N / ADV_PAGE);
    if (((volatile unsigned char *)buf.h)[at] != buf.want[at])
        handler_bad++;
    handler_runs++;
    errno = saved;
}

/* The buffer the handler reads, lazy again: bounced, then sent on (the
 * snapshot serves the H2D, a useful one: the next D2H is predicted too).
 * handler_reads has the signal land inside the D2H. */
static int rebounce(void)
{
    adv_bounce(&buf, 61);
    PL_OK(cuMemcpyHtoD_v2(buf.dst, buf.h, N));
    return buf.predicted;
}

/* Every copy API once, armed around its issue, its bytes checked. */
static void armed_copies(CUstream stream, CUdeviceptr s0, CUdeviceptr d1, size_t n, int round)
{
    for (int k = 0; k < pl_copy_api_count; k++) {
        const struct pl_copy_api *api = &pl_copy_apis[k];
        struct pl_xfer x = {d1, s0, bt_env.ctx[1], bt_env.ctx[0], n};
        unsigned seed = 700 + (unsigned)(k * 64 + round);
        CUstream st = api->user_stream ? stream : NULL;
        pl_fill(bt_env.ctx[0], s0, n, seed);
        pl_use(bt_env.ctx[0]);
        CUresult r;
        ARMED(r = api->issue(api, &x, st));
        if (r == PL_NOT_SUPPORTED)
            continue;
        PL_OK(r);
        if (api->async)
            pl_copy_sync(api, st);
        pl_verify(bt_env.ctx[1], d1, n, seed, api->name);
    }
}

/* The wrappers that take a lock or enter the driver, each after a fresh
 * bounce of the buffer the handler reads, the bytes of each checked. b2:
 * a buffer of malloc's (its device buffers and want kept), bounced and
 * freed. Returns how many of the bounces the shim took. */
static int wrapper_round(struct adv_buf *b2, int round)
{
    unsigned seed = 500 + (unsigned)round;
    int taken = rebounce();
    /* malloc and free: free ends the snapshot of a bounced block. */
    void *p;
    ARMED(p = malloc(N));
    PL_EXPECT(p != NULL, "malloc");
    b2->h = p;
    memcpy(b2->h, b2->want, N);
    adv_buf_prime(b2);
    adv_bounce(b2, seed);
    PL_EXPECT(memcmp(b2->h + N / 2, b2->want + N / 2, N / 2) == 0, "the malloc'd block");
    ARMED(free(b2->h));
    /* The allocation wrappers, a memset and a copy long enough for the
     * signal to land inside them. */
    taken += rebounce();
    const size_t big = (size_t)8 << 20;
    CUdeviceptr d, e;
    CUresult r1, r2, r3;
    pl_use(bt_env.ctx[0]);
    ARMED((r1 = cuMemAlloc_v2(&d, big), r2 = cuMemAlloc_v2(&e, big),
           r3 = cuMemsetD8_v2(d, (unsigned char)seed, big)));
    PL_OK(r1);
    PL_OK(r2);
    PL_OK(r3);
    taken += rebounce();
    ARMED(r1 = cuMemcpyDtoD_v2(e, d, big));
    PL_OK(r1);
    unsigned char byte = 0;
    PL_OK(cuMemcpyDtoH_v2(&byte, e + big - 1, 1));
    PL_EXPECT(byte == (unsigned char)seed, "memset: %u, not %u", byte, seed & 255);
    ARMED((r1 = cuMemFree_v2(d), r2 = cuMemFree_v2(e)));
    PL_OK(r1);
    PL_OK(r2);
    /* close, of a descriptor of the program's. */
    taken += rebounce();
    for (int i = 0; i < 64; i++) {
        int fd = open("/dev/null", O_RDONLY | O_CLOEXEC), rc = -1;
        ARMED(rc = close(fd));
        PL_EXPECT(fd >= 0 && rc == 0, "open and close /dev/null");
    }
    return taken;
}

static int case_handler_wrappers(int argc, char **argv)
{
    (void)argc, (void)argv;
    struct adv_buf b2;
    const size_t n = (size_t)1 << 20;
    adv_buf_init(&buf, NULL, N, ADV_LAZY);
    adv_buf_init(&b2, malloc(N), N, ADV_LAZY);
    free(b2.h);
    bt_pattern(b2.want, N, 7);
    CUdeviceptr s0 = pl_alloc(bt_env.ctx[0], n), d1 = pl_alloc(bt_env.ctx[1], n);
    CUstream stream;
    pl_use(bt_env.ctx[0]);
    PL_OK(cuStreamCreate(&stream, 0));
    adv_bounce(&buf, 61);
    on_alarm(reader_one, SA_RESTART);
    timer_every(200);
    int taken = 0;
    for (int round = 0; round < 16; round++) {
        taken += wrapper_round(&b2, round);
        if (round % 4 == 0) {
            taken += rebounce();
            armed_copies(stream, s0, d1, n, round);
        }
    }
    timer_every(0);
    PL_OK(cuStreamDestroy_v2(stream));
    if (adv_shim)
        fprintf(stderr, "adv: %d of 68 bounces taken, the handler read %d times\n", taken,
                (int)handler_runs);
    adv_say("the handler ran: %s", handler_runs > 0 ? "yes" : "no");
    adv_say("the handler saw other bytes: %d times", (int)handler_bad);
    adv_digest("read back", buf.h, N);
    adv_h2d(&buf, "H2D");
    return 0;
}

/* The handler reads while its thread is inside driver calls the shim does
 * not wrap (making a context current, synchronizing a stream behind long
 * copies): the fault handler's fill then needs the driver the interrupted
 * thread is inside. */
static int case_handler_unwrapped(int argc, char **argv)
{
    (void)argc, (void)argv;
    const size_t big = (size_t)8 << 20;
    adv_buf_init(&buf, NULL, N, ADV_LAZY);
    CUdeviceptr a = pl_alloc(bt_env.ctx[0], big), b = pl_alloc(bt_env.ctx[0], big);
    CUstream stream;
    pl_use(bt_env.ctx[0]);
    PL_OK(cuStreamCreate(&stream, 0));
    adv_bounce(&buf, 61);
    on_alarm(reader_one, SA_RESTART);
    timer_every(200);
    int taken = 0;
    for (int round = 0; round < 30; round++) {
        taken += rebounce();
        for (int i = 0; i < 4; i++)
            PL_OK(cuMemcpyDtoDAsync_v2(b, a, big, stream));
        CUresult r;
        ARMED(r = cuStreamSynchronize(stream));
        PL_OK(r);
        for (int i = 0; i < 64; i++) {
            ARMED(r = cuCtxSetCurrent(bt_env.ctx[i % 2]));
            PL_OK(r);
        }
        pl_use(bt_env.ctx[0]);
    }
    timer_every(0);
    PL_OK(cuStreamDestroy_v2(stream));
    if (adv_shim)
        fprintf(stderr, "adv: %d of 30 bounces taken, the handler read %d times\n", taken,
                (int)handler_runs);
    adv_say("the handler ran: %s", handler_runs > 0 ? "yes" : "no");
    adv_say("the handler saw other bytes: %d times", (int)handler_bad);
    adv_digest("read back", buf.h, N);
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
 * either, or their default action ends the process. ARG: which of them
 * run (both when NULL). */
static int case_process_directed(int argc, char **argv)
{
    static const int sigs[] = {SIGUSR1, SIGUSR2, SIGTERM, SIGALRM, SIGHUP, SIGINT};
    const int nsigs = (int)(sizeof sigs / sizeof sigs[0]);
    const char *which = argc > 1 && argv[1] != NULL ? argv[1] : "both";
    bool log = strcmp(which, "uffd") != 0, fault = strcmp(which, "run_log") != 0;
    sigset_t set;
    if (log)
        setenv("P2PSHIM_RUN_LOG", adv_path("run-%p.jsonl"), 1);
    if (!fault)
        setenv("P2PSHIM_BOUNCE", "off", 1); /* no snapshot: no fault handler */
    adv_buf_init(&buf, NULL, N, ADV_LAZY);
    if (fault) {
        adv_bounce(&buf, 62);
        adv_h2d(&buf, "bounced");
    } else {
        adv_h2d(&buf, "copied");
    }
    sigemptyset(&set);
    for (int i = 0; i < nsigs; i++)
        sigaddset(&set, sigs[i]);
    sigaddset(&set, SIGRTMIN + 1);
    sigprocmask(SIG_BLOCK, &set, NULL);
    for (int i = 0; i <= nsigs; i++) {
        struct timespec wait = {5, 0};
        int sig = i < nsigs ? sigs[i] : SIGRTMIN + 1;
        kill(getpid(), sig);
        int got = sigtimedwait(&set, NULL, &wait);
        adv_say("sent %s, sigtimedwait: %s", i < nsigs ? sigabbrev_np(sig) : "RTMIN+1",
                got == sig ? "the same" : got > 0 ? "another" : "nothing");
    }
    return 0;
}

/* Whether /proc/self/task/TID/status says the thread blocks every
 * catchable signal (but glibc's own two, which it never lets a thread
 * block). */
static bool blocks_all(const char *tid)
{
    char path[96], line[256];
    snprintf(path, sizeof path, "/proc/self/task/%s/status", tid);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return true; /* gone meanwhile */
    unsigned long long blk = 0;
    bool seen = false;
    while (fgets(line, sizeof line, f) != NULL)
        if (strncmp(line, "SigBlk:", 7) == 0)
            seen = sscanf(line + 7, "%llx", &blk) == 1;
    fclose(f);
    PL_EXPECT(seen, "no SigBlk in %s", path);
    for (int sig = 1; sig <= 64; sig++) {
        bool glibc_own = sig == 32 || sig == 33;
        if (sig == SIGKILL || sig == SIGSTOP || glibc_own)
            continue;
        if (!(blk & (1ULL << (sig - 1))))
            return false;
    }
    return true;
}

/* Every thread but this one (the program has no other) is the shim's:
 * each must block every catchable signal. Both threads started: the run
 * log's writer and the fault handler. */
static int case_thread_masks(int argc, char **argv)
{
    (void)argc, (void)argv;
    setenv("P2PSHIM_RUN_LOG", adv_path("run-%p.jsonl"), 1);
    adv_buf_init(&buf, NULL, N, ADV_LAZY);
    adv_bounce(&buf, 63);
    adv_h2d(&buf, "bounced");
    char me[32];
    snprintf(me, sizeof me, "%ld", (long)syscall(SYS_gettid));
    DIR *d = opendir("/proc/self/task");
    PL_EXPECT(d != NULL, "opendir /proc/self/task: %s", strerror(errno));
    int others = 0, open_ones = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (e->d_name[0] == '.' || strcmp(e->d_name, me) == 0)
            continue;
        others++;
        open_ones += !blocks_all(e->d_name);
    }
    closedir(d);
    if (adv_shim)
        fprintf(stderr, "adv: %d threads besides the program's\n", others);
    adv_say("threads not the program's with a catchable signal open: %d", open_ones);
    return 0;
}

int main(int argc, char **argv)
{
    static const struct adv_case cases[] = {
        {"handler_reads", case_handler_reads},
        {"handler_writes", case_handler_writes},
        {"handler_wrappers", case_handler_wrappers},
        {"handler_unwrapped", case_handler_unwrapped},
        {"storm", case_storm},
        {"process_directed", case_process_directed},
        {"thread_masks", case_thread_masks},
    };
    return adv_main(argc, argv, cases, (int)(sizeof cases / sizeof cases[0]));
}
