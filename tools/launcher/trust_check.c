/* p2pshim trust, the driver side: which devices this machine has (for
 * --show's "this boot" or "stale"), and --check, which lets the shim
 * itself check every link: the launcher runs itself under the shim with
 * P2PSHIM_TRUST=recheck and makes one copy per pair, the way a program
 * would. The same code decides as for any program; nothing here measures
 * a link on its own. The driver is loaded at run time, as topo does. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cuda.h>

#include "cli.h"
#include "cuda_api.h"
#include "launcher.h"
#include "run_env.h"
#include "trust_cmd.h"
#include "trust_file.h"

static const struct launcher_cuda *cu;

/* The driver, loaded and initialised; false with a reason in why. */
static bool load_driver(char *why, size_t why_len)
{
    cu = launcher_cuda(why, why_len);
    if (cu == NULL)
        return false;
    if (cu->device_uuid == NULL || cu->pci_bus_id == NULL) {
        snprintf(why, why_len, "the CUDA driver cannot name its devices "
                 "(no cuDeviceGetUuid_v2 or cuDeviceGetPCIBusId)");
        return false;
    }
    CUresult r = cu->init(0);
    if (r != CUDA_SUCCESS) {
        snprintf(why, why_len, "cuInit failed (%s)", launcher_cuda_error(r));
        return false;
    }
    return true;
}

void trust_here_query(struct trust_here *h)
{
    memset(h, 0, sizeof *h);
    trust_boot_id(h->boot, sizeof h->boot);
    h->iommu = trust_iommu_on();
    trust_module_version(h->module, sizeof h->module);
    if (!load_driver(h->driver_why, sizeof h->driver_why))
        return;
    int n = 0;
    if (cu->driver_version(&h->driver_version) != CUDA_SUCCESS ||
        cu->device_count(&n) != CUDA_SUCCESS) {
        snprintf(h->driver_why, sizeof h->driver_why, "the CUDA driver does not answer");
        return;
    }
    h->ndev = n < P2PSHIM_MAX_DEVICES ? n : P2PSHIM_MAX_DEVICES;
    for (int d = 0; d < h->ndev; d++) {
        CUuuid u;
        if (cu->device_uuid(&u, d) != CUDA_SUCCESS ||
            cu->pci_bus_id(h->bus[d], (int)sizeof h->bus[d], d) != CUDA_SUCCESS) {
            snprintf(h->driver_why, sizeof h->driver_why, "the driver cannot name device %d",
                     d);
            return;
        }
        trust_uuid_text((const unsigned char *)u.bytes, h->uuid[d], sizeof h->uuid[d]);
        for (char *p = h->bus[d]; *p; p++)
            if (*p == ' ')
                *p = '_';
    }
    h->driver = true;
}

/* Large enough to be any program's real copy; the shim's check moves its
 * own 4 MiB buffers, whatever this is. */
#define PROBE_BYTES ((size_t)1 << 20)

/* One copy a -> b, issued on a, between fresh buffers. */
static bool copy_pair(int a, int b)
{
    CUcontext ca, cb;
    CUdeviceptr src = 0, dst = 0;
    bool ok = cu->primary_retain(&ca, a) == CUDA_SUCCESS &&
              cu->primary_retain(&cb, b) == CUDA_SUCCESS &&
              cu->ctx_set_current(cb) == CUDA_SUCCESS &&
              cu->mem_alloc(&dst, PROBE_BYTES) == CUDA_SUCCESS &&
              cu->ctx_set_current(ca) == CUDA_SUCCESS &&
              cu->mem_alloc(&src, PROBE_BYTES) == CUDA_SUCCESS &&
              cu->copy_peer(dst, cb, src, ca, PROBE_BYTES) == CUDA_SUCCESS;
    if (src != 0)
        cu->mem_free(src);
    if (dst != 0 && cu->ctx_set_current(cb) == CUDA_SUCCESS)
        cu->mem_free(dst);
    return ok;
}

int trust_probe_pairs(void)
{
    char why[160];
    if (!load_driver(why, sizeof why)) {
        launcher_error("trust --check: %s", why);
        return LAUNCHER_EXIT_FAILURE;
    }
    int n = 0, pairs = 0, failed = 0;
    if (cu->device_count(&n) != CUDA_SUCCESS)
        n = 0;
    for (int a = 0; a < n && a < P2PSHIM_MAX_DEVICES; a++)
        for (int b = a + 1; b < n && b < P2PSHIM_MAX_DEVICES; b++) {
            int ab = 0, ba = 0;
            cu->can_access_peer(&ab, a, b);
            cu->can_access_peer(&ba, b, a);
            if (!ab && !ba)
                continue;
            pairs++;
            bool ok = ab ? copy_pair(a, b) : copy_pair(b, a);
            if (!ok) {
                launcher_error("trust --check: the copy between devices %d and %d failed", a,
                               b);
                failed++;
            }
        }
    if (pairs == 0)
        printf("no two devices can peer (%d device%s): nothing to check\n", n,
               n == 1 ? "" : "s");
    return failed ? LAUNCHER_EXIT_FAILURE : 0;
}

/* The child's environment: the shim in front, checking every pair again,
 * upgrading (whatever the caller's mode and pairs), quiet but for
 * warnings, no run log. */
static bool child_env(const char *lib)
{
    struct run_env e;
    run_env_init(&e);
    bool ok = run_env_build_preload(&e, lib, getenv("LD_PRELOAD")) &&
              setenv("LD_PRELOAD", e.preload, 1) == 0;
    run_env_free(&e);
    return ok && setenv("P2PSHIM_TRUST", "recheck", 1) == 0 &&
           setenv("P2PSHIM_MODE", "upgrade", 1) == 0 && setenv("P2PSHIM_PAIRS", "*", 1) == 0 &&
           setenv("P2PSHIM_MIN_BYTES", "0", 1) == 0 && setenv("P2PSHIM_LOG", "warn", 1) == 0 &&
           unsetenv("P2PSHIM_RUN_LOG") == 0;
}

int trust_check_all(void)
{
    char lib[4096];
    if (!run_env_find_library(lib, sizeof lib))
        return LAUNCHER_EXIT_NO_LIBRARY;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        launcher_error("trust --check: fork: %s", strerror(errno));
        return LAUNCHER_EXIT_FAILURE;
    }
    if (pid == 0) {
        char self[] = "p2pshim", sub[] = "trust", opt[] = "--probe-pairs";
        char *argv[] = {self, sub, opt, NULL};
        if (child_env(lib))
            execv("/proc/self/exe", argv);
        launcher_error("trust --check: cannot run the check: %s", strerror(errno));
        _exit(LAUNCHER_EXIT_FAILURE);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (WIFEXITED(status))
        return WEXITSTATUS(status) == 0 ? 0 : LAUNCHER_EXIT_FAILURE;
    launcher_error("trust --check: the check ended by signal %d", WTERMSIG(status));
    return LAUNCHER_EXIT_FAILURE;
}
