/* A stand-in libnvidia-ml.so.1 for the report's NVML link lookup: the few
 * entry points tools/launcher/topo_nvml.c calls, with nvml.h's ABI.
 * FAKE_NVML_GPUS: the GPUs' PCI bus ids, comma-separated (as the stand-in
 * driver numbers them: 0000:10:00.0, 0000:11:00.0, ...);
 * FAKE_NVML_NVLINKS: the NVLinks between every two of them (0: none, then
 * they share a PCIe switch, PIX). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define API __attribute__((visibility("default")))
#define MAX_GPUS 8

typedef struct {
    char busIdLegacy[16];
    unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
    char busId[32];
} pci_info;

static pci_info gpus[MAX_GPUS];
static unsigned ngpus, nvlinks;

API int nvmlInit_v2(void)
{
    const char *list = getenv("FAKE_NVML_GPUS"), *n = getenv("FAKE_NVML_NVLINKS");
    ngpus = 0;
    nvlinks = n ? (unsigned)atoi(n) : 0;
    for (const char *p = list; p && *p && ngpus < MAX_GPUS;) {
        pci_info *g = &gpus[ngpus];
        memset(g, 0, sizeof *g);
        if (sscanf(p, "%x:%x:%x", &g->domain, &g->bus, &g->device) != 3)
            return 1;
        snprintf(g->busId, sizeof g->busId, "%.12s", p);
        ngpus++;
        p = strchr(p, ',');
        p = p ? p + 1 : NULL;
    }
    return 0;
}

API int nvmlShutdown(void)
{
    return 0;
}

API int nvmlDeviceGetCount_v2(unsigned *count)
{
    *count = ngpus;
    return 0;
}

API int nvmlDeviceGetHandleByIndex_v2(unsigned i, void **handle)
{
    if (i >= ngpus)
        return 2;
    *handle = &gpus[i];
    return 0;
}

API int nvmlDeviceGetPciInfo_v3(void *handle, pci_info *out)
{
    *out = *(pci_info *)handle;
    return 0;
}

/* Link k of a GPU reaches the other GPUs in turn, nvlinks links each. */
static pci_info *remote(void *handle, unsigned link)
{
    unsigned self = (unsigned)((pci_info *)handle - gpus);
    if (ngpus < 2 || link >= nvlinks * (ngpus - 1))
        return NULL;
    unsigned other = link / nvlinks;
    return &gpus[other >= self ? other + 1 : other];
}

API int nvmlDeviceGetNvLinkState(void *handle, unsigned link, int *active)
{
    if (remote(handle, link) == NULL)
        return 2;   /* NVML_ERROR_INVALID_ARGUMENT: past the last link */
    *active = 1;
    return 0;
}

API int nvmlDeviceGetNvLinkRemotePciInfo_v2(void *handle, unsigned link, pci_info *out)
{
    pci_info *r = remote(handle, link);
    if (r == NULL)
        return 2;
    *out = *r;
    return 0;
}

API int nvmlDeviceGetNvLinkRemoteDeviceType(void *handle, unsigned link, int *type)
{
    if (remote(handle, link) == NULL)
        return 2;
    *type = 0;   /* NVML_NVLINK_DEVICE_TYPE_GPU */
    return 0;
}

API int nvmlDeviceGetTopologyCommonAncestor(void *a, void *b, int *level)
{
    (void)a, (void)b;
    *level = 10;   /* NVML_TOPOLOGY_SINGLE: one PCIe switch */
    return 0;
}
