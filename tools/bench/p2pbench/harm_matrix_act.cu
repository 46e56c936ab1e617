/* The misprediction matrix's memory kinds, actions and checks; see
 * harm_matrix.cuh. */
#include "harm_matrix.cuh"
#include "harm_util.cuh"
#include "pattern.cuh"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#define HUGE_ALIGN ((size_t)2 << 20)

const char *const miss_kind_names[MK_COUNT] = {"pinned", "registered", "malloc", "mmap", "thp"};
const char *const miss_action_names[MA_COUNT] = {
    "none", "memset", "random", "pagebyte", "word", "read",
    "write", "pwrite", "writev", "memcpy", "fork", "thread"};

void miss_host_alloc(miss_host *h, int kind, size_t n)
{
    memset(h, 0, sizeof *h);
    h->kind = kind;
    h->n = n;
    if (kind == MK_PINNED) {
        CHECK_CUDA(cudaMallocHost((void **)&h->p, n));
    } else if (kind == MK_MALLOC) {
        if ((h->p = (unsigned char *)malloc(n)) == NULL)
            harm_die("malloc(%zu) failed", n);
    } else if (kind == MK_REGISTERED) {
        /* malloc'd, the buffer starting at the first page boundary inside:
         * two small heap blocks share a page, and a page registered twice
         * is an error (cudaErrorHostMemoryAlreadyRegistered). */
        size_t page = (size_t)sysconf(_SC_PAGESIZE);
        if ((h->base = malloc(n + page)) == NULL)
            harm_die("malloc(%zu) failed", n + page);
        h->p = (unsigned char *)(((uintptr_t)h->base + page - 1) / page * page);
        CHECK_CUDA(cudaHostRegister(h->p, n, cudaHostRegisterDefault));
    } else {
        /* THP: a mapping aligned to 2 MiB, so that whole huge pages fit. */
        size_t extra = kind == MK_THP ? HUGE_ALIGN : 0;
        h->map_len = n + extra;
        h->base = mmap(NULL, h->map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                       -1, 0);
        if (h->base == MAP_FAILED)
            harm_die("mmap(%zu) failed: %s", h->map_len, strerror(errno));
        uintptr_t a = (uintptr_t)h->base;
        h->p = (unsigned char *)(extra ? (a + extra - 1) / extra * extra : a);
        if (kind == MK_THP && madvise(h->p, n, MADV_HUGEPAGE) != 0)
            snprintf(h->note, sizeof h->note, "madvise(MADV_HUGEPAGE): %s", strerror(errno));
    }
    if (h->base == NULL)
        h->base = h->p;
}

void miss_host_free(miss_host *h)
{
    if (h->kind == MK_PINNED) {
        CHECK_CUDA(cudaFreeHost(h->p));
    } else if (h->kind == MK_MALLOC) {
        free(h->p);
    } else if (h->kind == MK_REGISTERED) {
        CHECK_CUDA(cudaHostUnregister(h->p));
        free(h->base);
    } else {
        munmap(h->base, h->map_len);
    }
    h->p = NULL;
}

long miss_host_huge_kb(const miss_host *h)
{
    char line[512];
    long kb = -1;
    int inside = 0;
    FILE *f = fopen("/proc/self/smaps", "r");
    if (f == NULL)
        return -1;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' '))
            inside = (uintptr_t)h->p >= lo && (uintptr_t)h->p < hi;
        else if (inside && strncmp(line, "AnonHugePages:", 14) == 0)
            kb = atol(line + 14);
    }
    fclose(f);
    return kb;
}

static int writes_file(int action)
{
    return action == MA_WRITE || action == MA_PWRITE || action == MA_WRITEV;
}

void miss_work_init(miss_work *w, int action, size_t n, const char *tmpdir)
{
    memset(w, 0, sizeof *w);
    w->action = action;
    w->fd = -1;
    w->page = (size_t)sysconf(_SC_PAGESIZE);
    w->npages = n / w->page;
    if (action == MA_RANDOM) {
        /* A fixed permutation of the pages (Fisher-Yates, xorshift). */
        w->perm = (uint32_t *)malloc(w->npages * sizeof *w->perm);
        if (w->perm == NULL)
            harm_die("malloc of the page order failed");
        uint64_t x = 0x9E3779B97F4A7C15ull;
        for (size_t i = 0; i < w->npages; i++)
            w->perm[i] = (uint32_t)i;
        for (size_t i = w->npages; i > 1; i--) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            size_t j = (size_t)(x % i);
            uint32_t t = w->perm[i - 1];
            w->perm[i - 1] = w->perm[j], w->perm[j] = t;
        }
    }
    if (action == MA_MEMCPY || writes_file(action)) {
        if ((w->scratch = (unsigned char *)malloc(n)) == NULL)
            harm_die("malloc(%zu) failed", n);
        memset(w->scratch, 1, n); /* its pages exist before the first round */
    }
    if (writes_file(action)) {
        char path[4096];
        snprintf(path, sizeof path, "%s/harmbench-miss.XXXXXX", tmpdir);
        if ((w->fd = mkstemp(path)) < 0)
            harm_die("mkstemp(%s): %s", path, strerror(errno));
        unlink(path);
    }
}

void miss_work_free(miss_work *w)
{
    free(w->perm);
    free(w->scratch);
    if (w->fd >= 0)
        close(w->fd);
    memset(w, 0, sizeof *w);
    w->fd = -1;
}

/* Every byte of buf through the file: write(2), pwrite(2) or writev(2)
 * from offset 0, short writes finished. */
static void to_file(miss_work *w, const unsigned char *buf, size_t n)
{
    size_t done = 0;
    if (w->action != MA_PWRITE && lseek(w->fd, 0, SEEK_SET) != 0)
        harm_die("lseek: %s", strerror(errno));
    while (done < n) {
        ssize_t k;
        if (w->action == MA_WRITE) {
            k = write(w->fd, buf + done, n - done);
        } else if (w->action == MA_PWRITE) {
            k = pwrite(w->fd, buf + done, n - done, (off_t)done);
        } else {
            struct iovec iov[4];
            size_t left = n - done, piece = (left + 3) / 4;
            int cnt = 0;
            for (size_t at = done; at < n && cnt < 4; at += piece, cnt++) {
                iov[cnt].iov_base = (void *)(buf + at);
                iov[cnt].iov_len = n - at < piece ? n - at : piece;
            }
            k = writev(w->fd, iov, cnt);
        }
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            harm_die("%s of the host buffer: %s", miss_action_names[w->action],
                     k < 0 ? strerror(errno) : "wrote nothing");
        done += (size_t)k;
    }
}

typedef struct writer_arg {
    unsigned char *p;
    size_t n;
    unsigned char v;
    double cpu_ms;
} writer_arg;

static void *writer(void *arg)
{
    writer_arg *a = (writer_arg *)arg;
    struct rusage ru;
    memset(a->p, a->v, a->n);
    getrusage(RUSAGE_THREAD, &ru);
    a->cpu_ms = (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
                (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
    return NULL;
}

/* Another thread writes every byte; the caller waits for it. */
static void by_thread(miss_work *w, miss_host *h, unsigned char v)
{
    pthread_t t;
    writer_arg a = {h->p, h->n, v, 0};
    int rc = pthread_create(&t, NULL, writer, &a);
    if (rc != 0)
        harm_die("pthread_create: %s", strerror(rc));
    pthread_join(t, NULL);
    w->helper_cpu_ms = a.cpu_ms;
}

/* A forked child sums every byte and says whether it saw the source. */
static void by_child(miss_work *w, const miss_host *h, uint64_t want)
{
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0)
        harm_die("fork: %s", strerror(errno));
    if (pid == 0)
        _exit(harm_host_sum(h->p, h->n) == want ? 0 : 3);
    while (waitpid(pid, &w->child_status, 0) < 0 && errno == EINTR)
        ;
    w->child_signals += WIFSIGNALED(w->child_status);
}

uint64_t miss_act(miss_work *w, miss_host *h, unsigned char v, uint64_t want)
{
    size_t n = h->n;
    w->helper_cpu_ms = 0;
    switch (w->action) {
    case MA_MEMSET:
        memset(h->p, v, n);
        break;
    case MA_RANDOM:
        for (size_t i = 0; i < w->npages; i++)
            memset(h->p + (size_t)w->perm[i] * w->page, v, w->page);
        memset(h->p + w->npages * w->page, v, n - w->npages * w->page);
        break;
    case MA_PAGEBYTE:
        for (size_t i = 0; i < n; i += w->page)
            h->p[i] = v;
        break;
    case MA_WORD:
        memset(h->p + (n / 2 & ~(size_t)7), v, n < 8 ? n : 8);
        break;
    case MA_READ:
        return harm_host_sum(h->p, n);
    case MA_WRITE:
    case MA_PWRITE:
    case MA_WRITEV:
        to_file(w, h->p, n);
        break;
    case MA_MEMCPY:
        memcpy(w->scratch, h->p, n);
        break;
    case MA_FORK:
        by_child(w, h, want);
        break;
    case MA_THREAD:
        by_thread(w, h, v);
        break;
    }
    return 0;
}

miss_expect miss_expect_after(int action, size_t n, size_t page, uint32_t seed,
                              unsigned char v)
{
    miss_expect e = {seed, MP_NONE, v, 0, 0};
    (void)page;
    if (action == MA_MEMSET || action == MA_RANDOM || action == MA_THREAD)
        e.patch = MP_ALL;
    else if (action == MA_PAGEBYTE)
        e.patch = MP_PAGE;
    else if (action == MA_WORD) {
        e.patch = MP_RANGE;
        e.lo = n / 2 & ~(size_t)7;
        e.hi = e.lo + (n < 8 ? n : 8);
    }
    return e;
}

int miss_check_action(miss_work *w, size_t n, uint64_t read_sum, uint64_t want,
                      const char *what)
{
    uint64_t got = want;
    if (w->action == MA_READ)
        got = read_sum;
    if (w->action == MA_MEMCPY)
        got = harm_host_sum(w->scratch, n);
    if (writes_file(w->action)) {
        size_t done = 0;
        while (done < n) {
            ssize_t k = pread(w->fd, w->scratch + done, n - done, (off_t)done);
            if (k <= 0 && !(k < 0 && errno == EINTR))
                harm_die("reading the file back: %s", k < 0 ? strerror(errno) : "short");
            done += k > 0 ? (size_t)k : 0;
        }
        got = harm_host_sum(w->scratch, n);
    }
    if (w->action == MA_FORK && !(WIFEXITED(w->child_status) &&
                                  WEXITSTATUS(w->child_status) == 0)) {
        if (WIFSIGNALED(w->child_status))
            fprintf(stderr, "harmbench: FAIL %s: the forked child was killed by signal %d\n",
                    what, WTERMSIG(w->child_status));
        else
            fprintf(stderr, "harmbench: WRONG BYTES %s: the forked child's sum differs\n",
                    what);
        return 0;
    }
    if (got != want) {
        fprintf(stderr, "harmbench: WRONG BYTES %s: %s read sum %016llx, the source's "
                        "%016llx\n", what, miss_action_names[w->action],
                (unsigned long long)got, (unsigned long long)want);
        return 0;
    }
    return 1;
}

typedef struct miss_found {
    unsigned long long bad, first;
} miss_found;

static __global__ void found_init(miss_found *f)
{
    f->bad = 0;
    f->first = ~0ull;
}

static __global__ void verify_expect(const unsigned char *d, size_t n, size_t page,
                                     miss_expect e, miss_found *f)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    unsigned long long bad = 0, first = ~0ull;
    for (size_t w = (size_t)blockIdx.x * blockDim.x + threadIdx.x; w * 4 < n; w += stride) {
        uint32_t word = p2pk_pattern_word(e.seed, w);
        for (size_t b = 0; b < 4 && w * 4 + b < n; b++) {
            size_t i = w * 4 + b;
            if (d[i] != miss_expected_byte(&e, i, page, word)) {
                bad++;
                first = i < first ? i : first;
            }
        }
    }
    if (bad) {
        atomicAdd(&f->bad, bad);
        atomicMin(&f->first, first);
    }
}

int miss_check_device(const void *dst, size_t n, size_t page, const miss_expect *e,
                      const char *what)
{
    static miss_found *f;
    miss_found got;
    if (f == NULL)
        CHECK_CUDA(cudaMalloc((void **)&f, sizeof *f));
    found_init<<<1, 1, 0, cudaStreamLegacy>>>(f);
    verify_expect<<<1056, 256, 0, cudaStreamLegacy>>>((const unsigned char *)dst, n, page, *e,
                                                      f);
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaMemcpyAsync(&got, f, sizeof got, cudaMemcpyDeviceToHost, cudaStreamLegacy));
    CHECK_CUDA(cudaStreamSynchronize(cudaStreamLegacy));
    if (got.bad == 0)
        return 1;
    fprintf(stderr, "harmbench: WRONG BYTES %s (%zu bytes): %llu differ, the first at offset "
                    "%llu\n", what, n, got.bad, got.first);
    return 0;
}
