#define _GNU_SOURCE
#include "trust_nvml.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#include "driver.h"
#include "nvml_abi.h"

static struct {
    nvmlReturn_t (*init)(void);
    nvmlReturn_t (*shutdown)(void);
    nvmlReturn_t (*by_bus)(const char *, nvmlDevice_t *);
    nvmlReturn_t (*p2p)(nvmlDevice_t, nvmlDevice_t, int, int *);
} nv;
static pthread_once_t nv_once = PTHREAD_ONCE_INIT;

static void load(void)
{
    void *h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    dlsym_fn sym = driver_real_dlsym();
    if (h == NULL || sym == NULL)
        return;
    *(void **)&nv.init = sym(h, "nvmlInit_v2");
    *(void **)&nv.shutdown = sym(h, "nvmlShutdown");
    *(void **)&nv.by_bus = sym(h, "nvmlDeviceGetHandleByPciBusId_v2");
    *(void **)&nv.p2p = sym(h, "nvmlDeviceGetP2PStatus");
}

static const char *const cap_names[] = {"read", "write"};

enum trust_nvml_answer trust_nvml_p2p(const char *bus_a, const char *bus_b, char *why,
                                      size_t why_len)
{
    pthread_once(&nv_once, load);
    snprintf(why, why_len, "no NVML");
    if (nv.init == NULL || nv.shutdown == NULL || nv.by_bus == NULL || nv.p2p == NULL)
        return TRUST_NVML_UNKNOWN;
    if (nv.init() != 0)
        return TRUST_NVML_UNKNOWN;
    enum trust_nvml_answer out = TRUST_NVML_OK;
    nvmlDevice_t a = NULL, b = NULL;
    if (nv.by_bus(bus_a, &a) != 0 || nv.by_bus(bus_b, &b) != 0) {
        snprintf(why, why_len, "NVML does not know %s or %s", bus_a, bus_b);
        out = TRUST_NVML_UNKNOWN;
    }
    nvmlDevice_t ends[2][2] = {{a, b}, {b, a}};
    for (int way = 0; out == TRUST_NVML_OK && way < 2; way++)
        for (int cap = NVML_P2P_CAPS_INDEX_READ; out == TRUST_NVML_OK &&
                                                 cap <= NVML_P2P_CAPS_INDEX_WRITE; cap++) {
            int status = -1;
            nvmlReturn_t r = nv.p2p(ends[way][0], ends[way][1], cap, &status);
            if (r != 0) {
                snprintf(why, why_len, "NVML P2P %s status: error %d", cap_names[cap], r);
                out = TRUST_NVML_UNKNOWN;
            } else if (status != NVML_P2P_STATUS_OK) {
                snprintf(why, why_len, "NVML P2P %s status %d (not OK)", cap_names[cap],
                         status);
                out = TRUST_NVML_NO;
            }
        }
    if (out == TRUST_NVML_OK)
        snprintf(why, why_len, "NVML P2P read and write OK");
    nv.shutdown();
    return out;
}
