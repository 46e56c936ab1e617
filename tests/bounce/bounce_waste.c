/* A wrong guess costs O(1): a snapshot the CPU spoils or reads back whole
 * before its H2D must cost a bounded number of faults, whatever its size.
 *
 * "bounce_waste shim|noshim MIB": host buffers of about MIB MiB (1024 in
 * the plain build), three kinds (malloc and an anonymous mmap: eager, as
 * the first snapshot of a reused buffer is, or lazy under
 * P2PSHIM_BOUNCE=lazy; cuMemHostAlloc, eager), six ways of touching the snapshot's buffer
 * between the D2H and the H2D: a full rewrite in order (memset), in random
 * page order, a full read, a rewrite by the kernel (read(2) from
 * /dev/zero), a rewrite by another thread, a full read by a forked child.
 * Each case has evidence first (one
 * staging round of its own key: a size of its own), so its D2H is
 * predicted and takes a snapshot; the touch then wastes it.
 *
 * Checked in both runs: every byte of the host buffer and of the H2D's
 * destination; the transcript (a checksum per case) is the same with and
 * without the shim (compare.sh). Checked here under the shim: the handler
 * thread wakes at most TOUCH_SWITCHES_MAX times during a touch (its
 * voluntary context switches, from /proc), and the program thread blocks
 * (its own, one per fault it waits on) at most that often plus once per
 * 4 MiB piece of a fill it follows. The
 * summary line's counters (faults per snapshot, the most touches of one
 * snapshot, snapshots given up) are checked by bounce.waste.summary
 * (CMakeLists.txt). Before the fault budget, each case took one fault
 * per 4 KiB page: 262,144 for 1 GiB. */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bt_common.h"

#define PG 4096
/* Faults a wasted snapshot may make the handler serve: the budget (16),
 * the doubling fills of a full read of 1 GiB from 2 MiB chunks (10), and
 * room for the scheduler. Per 4 KiB page it was 262,144. The program
 * thread may wait once more per piece of a long fill that it follows
 * (the pieces are the shim's 4 MiB staging halves: woken as each lands,
 * no round trip to the handler). */
#define TOUCH_SWITCHES_MAX 64
#define FILL_PIECE ((size_t)4 << 20)

enum kind { K_MALLOC, K_MMAP, K_PINNED, KINDS };
enum way { W_REWRITE, W_RANDOM, W_READ, W_SYSCALL, W_THREAD, W_FORK, WAYS };
static const char *const kind_names[KINDS] = {"malloc", "mmap", "pinned"};
static const char *const way_names[WAYS] = {
    "rewrite in order", "rewrite in random page order", "full read",
    "rewrite by read(2) from /dev/zero", "rewrite in random page order by another thread",
    "full read by a forked child"};

static CUdeviceptr src0, dst1;
static size_t *order; /* a random order of the largest buffer's pages */

/* The word at index i of pattern seed. */
static uint64_t word(unsigned seed, size_t i)
{
    uint64_t x = (uint64_t)i * 0x9E3779B97F4A7C15ull ^ (uint64_t)seed * 0xD6E8FEB86659FD93ull;
    return x ^ x >> 29;
}

/* The byte at offset i of what a case expects: the pattern, or the
 * rewrite's byte. */
static unsigned char want_byte(unsigned seed, int rewrite, size_t i)
{
    if (rewrite >= 0)
        return (unsigned char)rewrite;
    uint64_t w = word(seed, i / 8);
    return (unsigned char)(w >> (i % 8 * 8));
}

/* Every byte of p[0..n) as expected; a checksum of them into *sum. */
static int check(const unsigned char *p, size_t n, unsigned seed, int rewrite, const char *what,
                 uint64_t *sum)
{
    uint64_t s = 0;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t got, want = rewrite >= 0 ? 0x0101010101010101ull * (unsigned)rewrite
                                          : word(seed, i / 8);
        memcpy(&got, p + i, 8);
        if (got != want)
            break;
        s = (s ^ got) * 0x100000001B3ull;
    }
    for (; i < n; i++) {
        if (p[i] != want_byte(seed, rewrite, i)) {
            pl_fail(__FILE__, __LINE__, "%s: byte %zu of %zu is 0x%02x, expected 0x%02x", what,
                    i, n, p[i], want_byte(seed, rewrite, i));
            return 0;
        }
        s = (s ^ p[i]) * 0x100000001B3ull;
    }
    *sum = s;
    return 1;
}

/* The source's bytes: pattern seed, written straight into the stand-in's
 * device memory (a host address there). */
static void set_source(size_t n, unsigned seed)
{
    standin_flush_all();
    uint64_t *d = (uint64_t *)(uintptr_t)src0;
    for (size_t i = 0; i < (n + 7) / 8; i++)
        d[i] = word(seed, i);
}

/* Voluntary context switches of this thread, and of the shim's handler
 * thread (0 when there is none). */
static long my_switches(void)
{
    struct rusage u;
    getrusage(RUSAGE_THREAD, &u);
    return u.ru_nvcsw;
}

/* A sanitizer's shadow memory faults beside the program's own pages: the
 * fault bound holds in plain builds only. */
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define FAULTS_COUNTED 0
#else
#define FAULTS_COUNTED 1
#endif

/* Page faults this thread took (minor: the kernel resolved them; a
 * shared mapping whose write-protection was lifted page by page faults
 * once per 4 KiB page on its next write, with no handler round trip). */
static long my_faults(void)
{
    struct rusage u;
    getrusage(RUSAGE_THREAD, &u);
    return u.ru_minflt + u.ru_majflt;
}

/* Page faults of the whole process: the program's and the shim's
 * threads' (making a write-protected shared range writable by
 * MADV_POPULATE_WRITE faults every page in, in the handler thread). */
static long process_faults(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_minflt + u.ru_majflt;
}

static long handler_switches(void)
{
    DIR *d = opendir("/proc/self/task");
    long n = 0;
    struct dirent *e;
    while (d != NULL && (e = readdir(d)) != NULL) {
        char path[300], comm[32] = "", line[128];
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (f == NULL)
            continue;
        if (fgets(comm, sizeof comm, f) == NULL)
            comm[0] = '\0';
        fclose(f);
        if (strncmp(comm, "p2pshim-uffd", 12) != 0)
            continue;
        snprintf(path, sizeof path, "/proc/self/task/%s/status", e->d_name);
        f = fopen(path, "r");
        while (f != NULL && fgets(line, sizeof line, f) != NULL)
            if (sscanf(line, "voluntary_ctxt_switches: %ld", &n) == 1)
                break;
        if (f != NULL)
            fclose(f);
    }
    if (d != NULL)
        closedir(d);
    return n;
}

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* Every page of h[0..n) set to v, in the random order. */
static void rewrite_random(unsigned char *h, size_t n, int v)
{
    size_t pages = (n + PG - 1) / PG;
    for (size_t i = 0, done = 0; done < pages; i++) {
        if (order[i] >= pages)
            continue; /* the order is the largest buffer's */
        size_t at = order[i] * PG;
        memset(h + at, v, n - at < PG ? n - at : PG);
        done++;
    }
}

struct rewrite_job {
    unsigned char *h;
    size_t n;
    int v;
};

static long thread_waits; /* the other thread's waits during its rewrite */

static void *rewrite_thread(void *arg)
{
    struct rewrite_job *j = arg;
    long s0 = my_switches();
    rewrite_random(j->h, j->n, j->v);
    thread_waits = my_switches() - s0;
    return NULL;
}

/* The kernel writes every byte: read(2) from /dev/zero. */
static void rewrite_by_syscall(unsigned char *h, size_t n)
{
    int fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
    PL_EXPECT(fd >= 0, "open /dev/zero");
    for (size_t at = 0; fd >= 0 && at < n;) {
        ssize_t r = read(fd, h + at, n - at < ((size_t)64 << 20) ? n - at : (size_t)64 << 20);
        PL_EXPECT(r > 0, "read(2) into the buffer returned %zd", r);
        if (r <= 0)
            break;
        at += (size_t)r;
    }
    if (fd >= 0)
        close(fd);
}

/* A forked child reads every byte (exits 0 when each is right). */
static void read_in_child(unsigned char *h, size_t n, unsigned seed, const char *what)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        uint64_t sum;
        _exit(check(h, n, seed, -1, what, &sum) ? 0 : 1);
    }
    int status = -1;
    waitpid(pid, &status, 0);
    PL_EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "%s: the child saw other bytes (status %d)", what, status);
}

/* The touch that wastes the snapshot; -1 (a read) or the byte written. */
static int touch(unsigned char *h, size_t n, enum way way, unsigned seed, const char *what)
{
    uint64_t sum;
    int v = 0xA0 + (int)way;
    if (way == W_REWRITE) {
        memset(h, v, n);
    } else if (way == W_RANDOM) {
        rewrite_random(h, n, v);
    } else if (way == W_SYSCALL) {
        rewrite_by_syscall(h, n);
        v = 0;
    } else if (way == W_THREAD) {
        struct rewrite_job j = {h, n, v};
        pthread_t t;
        PL_EXPECT(pthread_create(&t, NULL, rewrite_thread, &j) == 0, "pthread_create");
        pthread_join(t, NULL);
    } else if (way == W_FORK) {
        read_in_child(h, n, seed, what);
        v = -1;
    } else {
        check(h, n, seed, -1, what, &sum);
        v = -1;
    }
    return v;
}

/* The program's signal mask, as the shim must leave it: its locked
 * sections block signals only while they run (table.h). */
static void expect_mask(const sigset_t *want, const char *what)
{
    sigset_t now;
    pthread_sigmask(SIG_SETMASK, NULL, &now);
    for (int sig = 1; sig < NSIG; sig++)
        PL_EXPECT(sigismember(&now, sig) == sigismember(want, sig),
                  "%s: signal %d is %s after the copies", what, sig,
                  sigismember(&now, sig) ? "blocked" : "unblocked");
}

static void one_case(unsigned char *h, size_t n, enum kind kind, enum way way, unsigned seed)
{
    sigset_t mask;
    pthread_sigmask(SIG_SETMASK, NULL, &mask);
    char what[96];
    snprintf(what, sizeof what, "%s, %s", kind_names[kind], way_names[way]);
    pl_use(bt_env.ctx[0]);
    bt_prime(h, src0, dst1, n); /* evidence for this key (h, n) */
    set_source(n, seed);
    PL_OK(cuMemcpyDtoH_v2(h, src0, n));
    long s0 = my_switches(), h0 = handler_switches(), f0 = my_faults(), p0 = process_faults();
    double t0 = now_ms();
    int rewrite = touch(h, n, way, seed, what);
    double t1 = now_ms();
    long mine = my_switches() - s0, handler = handler_switches() - h0;
    long faults = my_faults() - f0, all_faults = process_faults() - p0;
    if (way == W_THREAD || way == W_FORK)
        faults = 0; /* another thread's or process's */
    if (way == W_FORK || kind != K_PINNED)
        all_faults = 0; /* the child's and the fork's copy-on-write; a lazy fill's */
    if (way == W_THREAD)
        mine = thread_waits; /* the writer's own, counted by it */
    PL_OK(cuMemcpyHtoD_v2(dst1, h, n));
    expect_mask(&mask, what);
    uint64_t hs = 0, ds = 0;
    check(h, n, seed, rewrite, what, &hs);
    standin_flush_all();
    check((const unsigned char *)(uintptr_t)dst1, n, seed, rewrite, what, &ds);
    printf("%s: host=%016llx device=%016llx\n", what, (unsigned long long)hs,
           (unsigned long long)ds);
    fprintf(stderr, "%s: %zu bytes, touch %.0f ms, the program waited %ld times, the "
            "handler woke %ld times, %ld page faults\n", what, n, t1 - t0, mine, handler, faults);
    long mine_max = TOUCH_SWITCHES_MAX + (long)(n / FILL_PIECE);
    PL_EXPECT(mine <= mine_max && handler <= TOUCH_SWITCHES_MAX,
              "%s: the touch made the program wait %ld times (at most %ld) and the handler "
              "wake %ld times (at most %d)", what, mine, mine_max, handler, TOUCH_SWITCHES_MAX);
    /* Without the shim a touch of present pages takes none; with it, the
     * budget's and the fills' faults (a system call's copy may fault a few
     * times per piece it waits on), never one per page (262,144 for
     * 1 GiB of pinned memory once its protection was lifted page by page). */
    long faults_max = TOUCH_SWITCHES_MAX + 4 * (long)(n / FILL_PIECE);
    PL_EXPECT(!FAULTS_COUNTED || faults <= faults_max,
              "%s: the touch took %ld page faults (at most %ld): one per page", what, faults,
              faults_max);
    PL_EXPECT(!FAULTS_COUNTED || all_faults <= faults_max,
              "%s: the process took %ld page faults during the touch (at most %ld): one per "
              "page (a shared range made writable page by page?)", what, all_faults, faults_max);
}

static unsigned char *host_buffer(enum kind kind, size_t n)
{
    void *p = NULL;
    if (kind == K_MALLOC)
        p = malloc(n);
    else if (kind == K_MMAP)
        p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    else if (!PL_OK(cuMemHostAlloc(&p, n, 0)))
        p = NULL;
    if (p == NULL || p == MAP_FAILED) {
        fprintf(stderr, "bounce_waste: no host buffer of %zu bytes\n", n);
        exit(2);
    }
    return p;
}

static void free_host(enum kind kind, unsigned char *h, size_t n)
{
    if (kind == K_MALLOC)
        free(h);
    else if (kind == K_MMAP)
        munmap(h, n);
    else
        PL_OK(cuMemFreeHost(h));
}

int main(int argc, char **argv)
{
    bt_init(argc, argv);
    /* A mask of the program's own, for the shim to keep. */
    sigset_t own;
    sigemptyset(&own);
    sigaddset(&own, SIGUSR2);
    pthread_sigmask(SIG_BLOCK, &own, NULL);
    size_t mib = argc > 2 ? strtoul(argv[2], NULL, 10) : 1024;
    size_t big = mib << 20, pages = big / PG;
    src0 = pl_alloc(bt_env.ctx[0], big);
    dst1 = pl_alloc(bt_env.ctx[1], big);
    order = malloc(pages * sizeof *order);
    PL_EXPECT(order != NULL, "malloc");
    for (size_t i = 0; i < pages; i++)
        order[i] = i;
    uint64_t x = 88172645463325252ull;
    for (size_t i = pages - 1; i > 0; i--) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        size_t j = (size_t)(x % (i + 1)), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    for (int kind = 0; kind < KINDS; kind++) {
        unsigned char *h = host_buffer(kind, big);
        for (int way = 0; way < WAYS; way++) {
            /* A key of its own per case (keys are host range and size): a
             * wasted snapshot backs its keys off. Not a page multiple. */
            size_t n = big - (size_t)way * PG - 24;
            one_case(h, n, kind, way, 10u * (unsigned)kind + (unsigned)way);
        }
        free_host(kind, h, big);
    }
    free(order);
    return pl_finish("bounce_waste");
}
