/* fd_cost: what the close family's wrappers cost a program, in ns per
 * call (the median of 31 batches of 20000), measured on the CPU: run it
 * without and with LD_PRELOAD=libp2pshim.so and subtract. Not a test: a
 * figure for docs/SECURITY.md. With "held", a first driver call (and
 * P2PSHIM_RUN_LOG set by the caller) makes the shim hold a descriptor of
 * its own first, so the wrappers compare against a set that is not
 * empty. Timings on a loaded machine are noisy: the instructions a call
 * costs are counted with valgrind --tool=cachegrind over two values of
 * FD_COST_N. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cuda.h>

#define BATCHES 31

/* FD_COST_N calls per batch (20000), FD_COST_KIND one row only: for an
 * instruction count (valgrind), two runs whose difference is the calls. */
static int per_batch = 20000;

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int fd_a, fd_b;

static void one(int kind)
{
    if (kind == 0) {
        close(-1); /* EBADF: the kernel's cheapest close */
    } else if (kind == 1) {
        close(dup(fd_a));
    } else if (kind == 2) {
        dup2(fd_a, fd_b);
    } else {
        (void)fcntl(fd_a, F_GETFD);
    }
}

static void run(const char *what, int kind)
{
    double per_call[BATCHES];
    for (int b = 0; b < BATCHES; b++) {
        double t0 = now_ns();
        for (int i = 0; i < per_batch; i++)
            one(kind);
        per_call[b] = (now_ns() - t0) / per_batch;
    }
    qsort(per_call, BATCHES, sizeof per_call[0], cmp);
    printf("%-36s %7.1f ns/call\n", what, per_call[BATCHES / 2]);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "held") == 0) {
        CUdeviceptr a, b;
        CUcontext ctx;
        if (cuInit(0) != CUDA_SUCCESS || cuDevicePrimaryCtxRetain(&ctx, 0) != CUDA_SUCCESS ||
            cuCtxSetCurrent(ctx) != CUDA_SUCCESS || cuMemAlloc(&a, 64) != CUDA_SUCCESS ||
            cuMemAlloc(&b, 64) != CUDA_SUCCESS || cuMemcpyDtoD(b, a, 64) != CUDA_SUCCESS) {
            fprintf(stderr, "fd_cost: the driver calls failed\n");
            return 1;
        }
    }
    fd_a = open("/dev/null", O_RDONLY);
    fd_b = open("/dev/null", O_RDONLY);
    if (fd_a < 0 || fd_b < 0 || fd_b != fd_a + 1)
        return 1;
    if (getenv("FD_COST_N"))
        per_batch = atoi(getenv("FD_COST_N"));
    static const char *const rows[] = {"close(-1)", "close(dup(fd)) of the program's own",
                                       "dup2(fd, fd2) of the program's own",
                                       "fcntl(fd, F_GETFD)"};
    const char *only = getenv("FD_COST_KIND");
    for (int k = 0; k < 4; k++)
        if (only == NULL || atoi(only) == k)
            run(rows[k], k);
    return 0;
}
