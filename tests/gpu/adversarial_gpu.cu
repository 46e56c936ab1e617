/* The adversarial suite's cases that the stand-in driver cannot stand for,
 * on a real GPU (one is enough: every bounce here goes back to device 0).
 * The stand-in holds no descriptor, takes no lock the way the driver does
 * and runs no thread of its own; these cases meet the real driver there.
 *
 *   adversarial_gpu noshim|shim CASE
 *
 *   closefrom, close_range, dup2   after a lazy bounce, the program closes
 *       (or points at /dev/null) every descriptor from 3, the driver's
 *       among them, then reads the buffer back with the CPU
 *   signal_wrapped    a SIGALRM handler reads a lazily bounced buffer
 *       (one byte a page) while the program copies through the shim's
 *       wrappers
 *   signal_unwrapped  the same while the program is inside driver calls
 *       the shim does not wrap: a kernel launch, a stream synchronize
 *       behind a busy kernel, event queries
 *   fork_copies       fork, 16 times, while another thread copies and
 *       bounces; each child reads a lazily bounced buffer
 *   proc_mem          a lazily bounced buffer read through /proc/self/mem
 *
 * Run by tests/adversarial/adv_run.sh: both modes, each bounded by a
 * timeout, the transcripts (counts of bytes that differ from the D2H's,
 * never addresses or timings) compared byte for byte. With the shim
 * (P2PSHIM_BOUNCE=lazy, P2PSHIM_BOUNCE_MIN=64K), each case first checks
 * with CUPTI that its buffer's D2H was lazy (no more than its partial
 * pages went through the host), else exits 3: a case whose snapshot was
 * not taken tests nothing. Exit: 0, 1 on a CUDA failure, 3 as said, 77
 * without a GPU. */
#include "../adversarial/adv_fdlist.h"
#include "cupti_paths.h"
#include "gpu_test.h"
#include "pattern.cuh"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>

#define N (((size_t)4 << 20) + 321)
#define PAGE ((size_t)4096)

static bool with_shim;
static void *dsrc, *ddst;          /* device 0 */
static unsigned char *host;        /* the program's pageable buffer */

/* Bytes of host[0..n) that differ from seed's pattern. */
static size_t differ(const unsigned char *h, size_t n, uint32_t seed)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
        bad += h[i] != p2pk_pattern_byte(seed, i);
    return bad;
}

/* The device buffer ddst against seed's pattern, on the GPU. */
static unsigned long long device_differ(uint32_t seed)
{
    p2pk_verify_result r;
    GT_CHECK(p2pk_verify_2d_async(ddst, N, N, 1, N, seed, -1, GT_STREAM));
    GT_CHECK(p2pk_verify_read_sync(&r, GT_STREAM));
    return r.mismatches;
}

/* The source filled with seed's pattern, then the D2H into host; watched
 * is whether CUPTI counts its bytes: with the shim the D2H must have been
 * lazy (exit 3 otherwise). */
static void d2h(uint32_t seed, bool watched)
{
    char err[256];
    GT_CHECK(p2pk_fill(dsrc, N, seed, GT_STREAM));
    GT_CHECK(cudaStreamSynchronize(GT_STREAM));
    if (watched && cupti_paths_begin(err, sizeof err) != 0) {
        fprintf(stderr, "adversarial_gpu: %s\n", err);
        exit(1);
    }
    GT_CHECK(cudaMemcpy(host, dsrc, N, cudaMemcpyDeviceToHost));
    if (!watched)
        return;
    struct cupti_paths_counts c;
    GT_CHECK(cudaDeviceSynchronize());
    if (cupti_paths_end(&c, err, sizeof err) != 0) {
        fprintf(stderr, "adversarial_gpu: %s\n", err);
        exit(1);
    }
    char counts[160];
    cupti_paths_format(&c, counts, sizeof counts);
    fprintf(stderr, "adversarial_gpu: the D2H of seed %u: %s, %llu bytes to the host\n", seed,
            counts, c.dtoh_bytes);
    if (with_shim && c.dtoh_bytes > 2 * PAGE) {
        fprintf(stderr, "adversarial_gpu: the D2H was not lazy: the case tests nothing\n");
        exit(3);
    }
}

/* The H2D from host to ddst and the device's bytes checked against seed. */
static void h2d(uint32_t seed, const char *what)
{
    GT_CHECK(cudaMemcpy(ddst, host, N, cudaMemcpyHostToDevice));
    printf("%s: H2D, %llu bytes differ on the device\n", what, device_differ(seed));
}

/* Two rounds that show the shim the buffer going back to a GPU, then the
 * watched one (lazy with the shim). */
static void bounce_lazy(uint32_t seed)
{
    for (uint32_t r = 0; r < 2; r++) {
        d2h(seed + 100 + r, false);
        h2d(seed + 100 + r, "priming round");
    }
    d2h(seed, true);
}

/* ---- descriptors ---- */

static void close_from(void) { closefrom(3); }

static void close_range_all(void)
{
    if (syscall(SYS_close_range, 3u, ~0u, 0u) != 0)
        printf("close_range: %s\n", strerror(errno));
}

static void dup2_sweep(void)
{
    if (!adv_dup2_sweep())
        printf("dup2 of /dev/null: %s\n", strerror(errno));
}

/* The driver's descriptors go with the rest: the program makes no CUDA
 * call afterwards (what the driver would do then is no part of the case),
 * but the bytes its D2H brought must be there. */
static int closer_case(const char *name, void (*closer)(void))
{
    bounce_lazy(7);
    fflush(stdout);
    closer();
    printf("%s: read back, %zu bytes differ from the D2H's\n", name, differ(host, N, 7));
    fflush(stdout);
    fflush(stderr);
    _exit(0); /* the runtime's teardown needs the descriptors closed above */
}

/* ---- signals ---- */

static volatile sig_atomic_t armed, handler_runs, handler_bad;
static volatile uint32_t armed_seed;

static void reader(int sig)
{
    (void)sig;
    if (!armed)
        return;
    int saved = errno;
    for (size_t i = 0; i < N / PAGE; i++) {
        size_t at = i * PAGE + (i * 61) % PAGE;
        if (((volatile unsigned char *)host)[at] != p2pk_pattern_byte(armed_seed, at))
            handler_bad++;
    }
    handler_runs++;
    errno = saved;
}

static void timer_every(long usec)
{
    struct itimerval t = {{0, usec}, {0, usec}};
    setitimer(ITIMER_REAL, &t, NULL);
}

static int signal_case(bool wrapped)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = reader;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGALRM, &sa, NULL);
    cudaEvent_t ev;
    GT_CHECK(cudaEventCreate(&ev));
    size_t missed = 0;
    for (uint32_t round = 0; round < 12; round++) {
        uint32_t seed = 40 + round;
        if (round == 0)
            bounce_lazy(seed);
        else
            d2h(seed, false);
        armed_seed = seed;
        timer_every(300);
        armed = 1;
        for (int i = 0; i < 40; i++) {
            if (wrapped) {
                GT_CHECK(cudaMemcpy(ddst, dsrc, N, cudaMemcpyDeviceToDevice));
                GT_CHECK(cudaMemset(ddst, i, PAGE));
            } else {
                GT_CHECK(p2pk_busy(200, NULL, 0, 0, GT_STREAM));
                GT_CHECK(cudaEventRecord(ev, GT_STREAM));
                while (cudaEventQuery(ev) == cudaErrorNotReady)
                    ;
                GT_CHECK(p2pk_busy(200, NULL, 0, 0, GT_STREAM));
                GT_CHECK(cudaStreamSynchronize(GT_STREAM));
            }
        }
        armed = 0;
        timer_every(0);
        missed += differ(host, N, seed);
        h2d(seed, "after the handler's reads");
    }
    GT_CHECK(cudaEventDestroy(ev));
    printf("the handler ran: %s; it saw other bytes %d times; read back: %zu bytes differ\n",
           handler_runs > 0 ? "yes" : "no", (int)handler_bad, missed);
    return 0;
}

/* ---- fork while another thread copies ---- */

static std::atomic<bool> copier_stop;

static void *copier(void *arg)
{
    unsigned char *h = (unsigned char *)arg;
    GT_CHECK(cudaSetDevice(0));
    while (!copier_stop.load()) {
        GT_CHECK(cudaMemcpy(h, ddst, N, cudaMemcpyDeviceToHost));
        GT_CHECK(cudaMemcpy(ddst, h, N, cudaMemcpyHostToDevice));
        GT_CHECK(cudaMemcpy(ddst, dsrc, PAGE, cudaMemcpyDeviceToDevice));
    }
    return NULL;
}

static int fork_copies_case(void)
{
    bounce_lazy(60);
    unsigned char *other = (unsigned char *)malloc(N);
    if (other == NULL)
        return 1;
    GT_CHECK(cudaMemcpy(ddst, dsrc, N, cudaMemcpyDeviceToDevice));
    pthread_t t;
    pthread_create(&t, NULL, copier, other);
    int right = 0;
    for (int i = 0; i < 16; i++) {
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0)
            _exit(differ(host, N, 60) == 0 ? 0 : 1);
        int st = 0;
        if (pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0)
            right++;
    }
    copier_stop.store(true);
    pthread_join(t, NULL);
    printf("fork while copying: %d of 16 children read the D2H's bytes\n", right);
    printf("the parent reads back: %zu bytes differ\n", differ(host, N, 60));
    free(other);
    return 0;
}

/* ---- /proc/self/mem ---- */

static int proc_mem_case(void)
{
    bounce_lazy(70);
    unsigned char *copy = (unsigned char *)malloc(N);
    int fd = open("/proc/self/mem", O_RDONLY);
    ssize_t got = fd >= 0 ? pread(fd, copy, N, (off_t)(uintptr_t)host) : -1;
    printf("/proc/self/mem: %s, %zu bytes differ\n",
           got == (ssize_t)N ? "read whole" : "short read",
           got > 0 ? differ(copy, (size_t)got, 70) : N);
    if (fd >= 0)
        close(fd);
    free(copy);
    h2d(70, "after /proc/self/mem");
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: adversarial_gpu noshim|shim CASE\n");
        return 2;
    }
    with_shim = strcmp(argv[1], "shim") == 0;
    const char *c = argv[2];
    gt_require_gpus("adversarial_gpu", 1);
    GT_CHECK(cudaSetDevice(0));
    char err[256];
    if (cupti_paths_init(err, sizeof err) != 0) {
        fprintf(stderr, "adversarial_gpu: CUPTI: %s\n", err);
        return 1;
    }
    GT_CHECK(cudaMalloc(&dsrc, N));
    GT_CHECK(cudaMalloc(&ddst, N));
    host = (unsigned char *)malloc(N);
    if (host == NULL)
        return 1;
    memset(host, 0, N);
    if (strcmp(c, "closefrom") == 0)
        return closer_case("closefrom(3)", close_from);
    if (strcmp(c, "close_range") == 0)
        return closer_case("close_range(3, ~0)", close_range_all);
    if (strcmp(c, "dup2") == 0)
        return closer_case("dup2 /dev/null over every descriptor from 3", dup2_sweep);
    if (strcmp(c, "signal_wrapped") == 0)
        return signal_case(true);
    if (strcmp(c, "signal_unwrapped") == 0)
        return signal_case(false);
    if (strcmp(c, "fork_copies") == 0)
        return fork_copies_case();
    if (strcmp(c, "proc_mem") == 0)
        return proc_mem_case();
    fprintf(stderr, "adversarial_gpu: unknown case %s\n", c);
    return 2;
}
