/* Helpers of harmbench; see harm_util.cuh. */
#include "harm_util.cuh"
#include "pattern.cuh"

#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifndef P2PSHIM_CUDART
#define P2PSHIM_CUDART "unknown"
#endif

#define PAGE 4096

void harm_die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("harmbench: FAIL: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

double harm_now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

size_t harm_parse_size(const char *s)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    int shift = *end == 'K' || *end == 'k' ? 10 : *end == 'M' || *end == 'm' ? 20
              : *end == 'G' || *end == 'g' ? 30 : 0;
    if (end == s || (shift && end[1] != 0) || (!shift && *end != 0))
        return 0;
    return (size_t)v << shift;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double harm_median(const double *values, int n)
{
    /* Sorts a copy: callers print their rounds in order afterwards. */
    double v[256];
    if (n <= 0 || n > 256)
        return 0;
    memcpy(v, values, (size_t)n * sizeof *v);
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

uint64_t harm_host_sum(const void *buf, size_t n)
{
    const unsigned char *h = (const unsigned char *)buf;
    uint64_t s = 0;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, h + i, 8);
        s += w;
    }
    for (; i < n; i++)
        s += h[i];
    return s;
}

static __global__ void sum64_kernel(const unsigned char *buf, size_t n,
                                    unsigned long long *out)
{
    size_t nw = n / 8, stride = (size_t)gridDim.x * blockDim.x;
    const unsigned long long *w = (const unsigned long long *)buf;
    unsigned long long s = 0;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < nw; i += stride)
        s += w[i];
    if (blockIdx.x == 0 && threadIdx.x == 0)
        for (size_t i = nw * 8; i < n; i++)
            s += buf[i];
    atomicAdd(out, s); /* wrapping: equal to the host's sum in any order */
}

uint64_t harm_device_sum(const void *dev, size_t n)
{
    unsigned long long *d_out, got = 0;
    if (((uintptr_t)dev & 7) != 0)
        harm_die("device sum of an unaligned buffer");
    CHECK_CUDA(cudaMalloc((void **)&d_out, sizeof *d_out));
    CHECK_CUDA(cudaMemsetAsync(d_out, 0, sizeof *d_out, cudaStreamLegacy));
    sum64_kernel<<<528, 256, 0, cudaStreamLegacy>>>((const unsigned char *)dev, n, d_out);
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaMemcpyAsync(&got, d_out, sizeof got, cudaMemcpyDeviceToHost, cudaStreamLegacy));
    CHECK_CUDA(cudaStreamSynchronize(cudaStreamLegacy));
    CHECK_CUDA(cudaFree(d_out));
    return got;
}

/* The first offset in [from, to) where h differs from the pattern, or to. */
static size_t first_pattern_mismatch(const unsigned char *h, size_t from, size_t to,
                                     uint32_t seed)
{
    for (size_t i = from; i < to; i++)
        if (h[i] != p2pk_pattern_byte(seed, i))
            return i;
    return to;
}

int harm_check_host(const unsigned char *h, size_t n, uint32_t seed, uint64_t host_sum,
                    uint64_t want_sum, const char *what)
{
    size_t head = n < PAGE ? n : PAGE, tail = n > PAGE ? n - PAGE : 0;
    size_t bad = first_pattern_mismatch(h, 0, head, seed);
    if (bad == head && tail > head)
        bad = first_pattern_mismatch(h, tail, n, seed);
    else if (bad == head)
        bad = n;
    if (bad < n) {
        fprintf(stderr, "harmbench: WRONG BYTES %s (%zu bytes): offset %zu holds 0x%02x, "
                        "the source 0x%02x\n", what, n, bad, h[bad],
                p2pk_pattern_byte(seed, bad));
        return 0;
    }
    if (host_sum != want_sum) {
        fprintf(stderr, "harmbench: WRONG BYTES %s (%zu bytes): sum %016llx, the source's "
                        "%016llx\n", what, n, (unsigned long long)host_sum,
                (unsigned long long)want_sum);
        return 0;
    }
    return 1;
}

int harm_check_device(const void *dst, size_t n, uint32_t seed, const char *what)
{
    p2pk_verify_result r;
    CHECK_CUDA(p2pk_verify_sync(dst, n, seed, &r, cudaStreamLegacy));
    if (r.mismatches == 0)
        return 1;
    fprintf(stderr, "harmbench: WRONG BYTES %s (%zu bytes): %llu differ, the first at "
                    "offset %llu (0x%02x, the source 0x%02x)\n", what, n, r.mismatches,
            r.first_bad, r.got, r.expected);
    return 0;
}

void harm_emit(const char *row, const char *label, const char *fields, int ok)
{
    printf("{\"bench\":\"harm\",\"row\":\"%s\",\"cudart\":\"%s\",\"label\":\"%s\",%s,"
           "\"ok\":%s}\n", row, P2PSHIM_CUDART, label, fields, ok ? "true" : "false");
    fflush(stdout);
}

/* Mappings registered with userfaultfd and their bytes: smaps gives each
 * mapping's "Size:" before its "VmFlags:" line. */
static void uffd_registrations(long *ranges, long long *bytes)
{
    char line[512];
    long long size_kb = 0;
    *ranges = 0;
    *bytes = 0;
    FILE *f = fopen("/proc/self/smaps", "r");
    if (f == NULL) {
        *ranges = -1;
        return;
    }
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "Size:", 5) == 0)
            size_kb = atoll(line + 5);
        else if (strncmp(line, "VmFlags:", 8) == 0 &&
                 (strstr(line, " um") != NULL || strstr(line, " uw") != NULL)) {
            (*ranges)++;
            *bytes += size_kb * 1024;
        }
    }
    fclose(f);
}

static long uffd_descriptors(void)
{
    long n = 0;
    char path[300], target[64];
    DIR *d = opendir("/proc/self/fd");
    if (d == NULL)
        return -1;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
        ssize_t len = readlink(path, target, sizeof target - 1);
        if (len > 0) {
            target[len] = 0;
            n += strstr(target, "userfaultfd") != NULL;
        }
    }
    closedir(d);
    return n;
}

void harm_emit_held(const char *row, const char *label, const int *devs, int ndevs, int ok)
{
    char fields[512];
    int at = snprintf(fields, sizeof fields, "\"process\":true,\"devices\":[");
    for (int i = 0; i < ndevs; i++)
        at += snprintf(fields + at, sizeof fields - at, "%s%d", i ? "," : "", devs[i]);
    at += snprintf(fields + at, sizeof fields - at, "],\"free_bytes\":[");
    for (int i = 0; i < ndevs; i++) {
        size_t free_b = 0, total = 0;
        CHECK_CUDA(cudaSetDevice(devs[i]));
        CHECK_CUDA(cudaDeviceSynchronize());
        CHECK_CUDA(cudaMemGetInfo(&free_b, &total));
        at += snprintf(fields + at, sizeof fields - at, "%s%zu", i ? "," : "", free_b);
    }
    long ranges;
    long long bytes;
    uffd_registrations(&ranges, &bytes);
    snprintf(fields + at, sizeof fields - at,
             "],\"uffd_ranges\":%ld,\"uffd_bytes\":%lld,\"uffd_fds\":%ld", ranges, bytes,
             uffd_descriptors());
    harm_emit(row, label, fields, ok);
}
