/* Input the driver refuses, and what the shim's own records then say.
 *
 *   batch_count    cuMemcpyBatchAsync (both signatures, both stream
 *       flavours) with count = 2^30, arrays of one element and attrs =
 *       NULL: CUDA_ERROR_INVALID_VALUE, before anything is read
 *   batch3d_flags  cuMemcpy3DBatchAsync (the same four) with numOps =
 *       2^30, one op, and flags the driver does not know
 *   dtod_size_max  a child with a run log makes two copies, a refused
 *       cuMemcpyDtoD(..., SIZE_MAX) and exits; `p2pshim report` reads its
 *       log without error, and the log holds a decision for each copy
 *       that was made, none for the refused one */
#define _GNU_SOURCE
#include "adv_common.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define HUGE_COUNT ((size_t)1 << 30)

typedef CUresult (*batch12080_fn)(CUdeviceptr *, CUdeviceptr *, size_t *, size_t,
                                  CUmemcpyAttributes *, size_t *, size_t, size_t *, CUstream);
typedef CUresult (*batch13000_fn)(CUdeviceptr *, CUdeviceptr *, size_t *, size_t,
                                  CUmemcpyAttributes *, size_t *, size_t, CUstream);
typedef CUresult (*batch3d12080_fn)(size_t, CUDA_MEMCPY3D_BATCH_OP *, size_t *,
                                    unsigned long long, CUstream);
typedef CUresult (*batch3d13000_fn)(size_t, CUDA_MEMCPY3D_BATCH_OP *, unsigned long long,
                                    CUstream);

static const char *const batch_names[] = {"cuMemcpyBatchAsync", "cuMemcpyBatchAsync_ptsz",
                                          "cuMemcpyBatchAsync_v2", "cuMemcpyBatchAsync_v2_ptsz"};
static const char *const batch3d_names[] = {
    "cuMemcpy3DBatchAsync", "cuMemcpy3DBatchAsync_ptsz", "cuMemcpy3DBatchAsync_v2",
    "cuMemcpy3DBatchAsync_v2_ptsz"};

static CUstream user_stream(void)
{
    CUstream s;
    adv_cuda();
    PL_OK(cuStreamCreate(&s, 0));
    return s;
}

static int case_batch_count(int argc, char **argv)
{
    (void)argc, (void)argv;
    CUstream s = user_stream();
    CUdeviceptr d = pl_alloc(bt_env.ctx[0], 4096), e = pl_alloc(bt_env.ctx[1], 4096);
    CUdeviceptr dsts[1] = {e}, srcs[1] = {d};
    size_t sizes[1] = {4096};
    for (int k = 0; k < 4; k++) {
        void *fn = pl_driver_sym(batch_names[k]);
        size_t fail_idx = 7;
        CUresult r;
        if (fn == NULL)
            continue;
        if (k < 2)
            r = ((batch12080_fn)fn)(dsts, srcs, sizes, HUGE_COUNT, NULL, NULL, 0, &fail_idx, s);
        else
            r = ((batch13000_fn)fn)(dsts, srcs, sizes, HUGE_COUNT, NULL, NULL, 0, s);
        adv_say("%s(2^30, attrs NULL): rc=%d%s", batch_names[k], (int)r,
                k < 2 ? (fail_idx == SIZE_MAX ? " failIdx=SIZE_MAX" : " failIdx=other") : "");
    }
    PL_OK(cuStreamSynchronize(s));
    return 0;
}

static int case_batch3d_flags(int argc, char **argv)
{
    (void)argc, (void)argv;
    CUstream s = user_stream();
    CUdeviceptr d = pl_alloc(bt_env.ctx[0], 4096), e = pl_alloc(bt_env.ctx[1], 4096);
    CUDA_MEMCPY3D_BATCH_OP op[1];
    memset(op, 0, sizeof op);
    op[0].src.type = CU_MEMCPY_OPERAND_TYPE_POINTER;
    op[0].src.op.ptr.ptr = d;
    op[0].src.op.ptr.rowLength = 4096;
    op[0].dst.type = CU_MEMCPY_OPERAND_TYPE_POINTER;
    op[0].dst.op.ptr.ptr = e;
    op[0].dst.op.ptr.rowLength = 4096;
    op[0].extent = (CUextent3D){4096, 1, 1};
    op[0].srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
    for (int k = 0; k < 4; k++) {
        void *fn = pl_driver_sym(batch3d_names[k]);
        size_t fail_idx = 7;
        CUresult r;
        if (fn == NULL)
            continue;
        if (k < 2)
            r = ((batch3d12080_fn)fn)(HUGE_COUNT, op, &fail_idx, 0xdead0000ull, s);
        else
            r = ((batch3d13000_fn)fn)(HUGE_COUNT, op, 0xdead0000ull, s);
        adv_say("%s(2^30, bad flags): rc=%d", batch3d_names[k], (int)r);
    }
    PL_OK(cuStreamSynchronize(s));
    return 0;
}

/* Two copies that are made, one that is refused. */
#define MADE_COPIES 2
static void dtod_child(void)
{
    adv_cuda();
    CUdeviceptr a = pl_alloc(bt_env.ctx[0], 4096), b = pl_alloc(bt_env.ctx[1], 4096);
    PL_OK(cuMemcpyDtoD_v2(b, a, 4096));
    CUresult r = cuMemcpyDtoD_v2(b, a, SIZE_MAX);
    printf("cuMemcpyDtoD(SIZE_MAX): rc=%d\n", (int)r);
    PL_OK(cuMemcpyDtoD_v2(a, b, 4096));
    fflush(stdout);
    exit(pl_failures != 0);
}

static int case_dtod_size_max(int argc, char **argv)
{
    (void)argc, (void)argv;
    int status = 0;
    char logs[512];
    snprintf(logs, sizeof logs, "%s", adv_path("logs"));
    mkdir(logs, 0700);
    char pattern[600];
    snprintf(pattern, sizeof pattern, "%s/run-%%p.jsonl", logs);
    setenv("P2PSHIM_RUN_LOG", pattern, 1);
    pid_t pid = fork();
    if (pid == 0)
        dtod_child();
    PL_EXPECT(pid > 0 && waitpid(pid, &status, 0) == pid, "fork: %s", strerror(errno));
    adv_status("the copying child", status);
    if (!adv_shim) {
        /* Nothing to read: the line the shim's run must print. */
        adv_say("decisions in the run log: %d", MADE_COPIES);
        adv_say("p2pshim report: exit 0");
        return 0;
    }
    adv_say("decisions in the run log: %ld", adv_log_count(logs, "decision"));
    setenv("P2PSHIM_TOPO_FILE", adv_path("none.json"), 1);
    const char *launcher = getenv("ADV_LAUNCHER");
    char *args[] = {(char *)launcher, "report", "-o", (char *)adv_path("report.txt"),
                    (char *)logs, NULL};
    PL_EXPECT(launcher != NULL, "ADV_LAUNCHER is not set");
    adv_status("p2pshim report", launcher != NULL ? adv_run_plain(args) : -1);
    return 0;
}

int main(int argc, char **argv)
{
    static const struct adv_case cases[] = {
        {"batch_count", case_batch_count},
        {"batch3d_flags", case_batch3d_flags},
        {"dtod_size_max", case_dtod_size_max},
    };
    return adv_main(argc, argv, cases, (int)(sizeof cases / sizeof cases[0]));
}
