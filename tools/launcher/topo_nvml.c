/* p2pshim topo: link types and NVLink counts through NVML, loaded at run
 * time (libnvidia-ml.so.1), with the types of nvml_abi.h: no NVML header
 * is needed to build. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "nvml_abi.h"
#include "topo_internal.h"

/* The names nvidia-smi topo -m gives the topology levels. */
static const struct {
    int level;
    const char *name;
} pcie_levels[] = {
    {NVML_TOPOLOGY_INTERNAL, "SAME"},   {NVML_TOPOLOGY_SINGLE, "PIX"},
    {NVML_TOPOLOGY_MULTIPLE, "PXB"},    {NVML_TOPOLOGY_HOSTBRIDGE, "PHB"},
    {NVML_TOPOLOGY_NODE, "NODE"},       {NVML_TOPOLOGY_SYSTEM, "SYS"},
};

/* Links per device probed; NVML answers an error past the last one. */
#define NVML_LINKS_PROBED 64

static struct {
    nvmlReturn_t (*init)(void);
    nvmlReturn_t (*shutdown)(void);
    nvmlReturn_t (*count)(unsigned *);
    nvmlReturn_t (*by_index)(unsigned, nvmlDevice_t *);
    nvmlReturn_t (*pci_info)(nvmlDevice_t, nvmlPciInfo_t *);
    nvmlReturn_t (*link_state)(nvmlDevice_t, unsigned, int *);
    nvmlReturn_t (*remote_pci)(nvmlDevice_t, unsigned, nvmlPciInfo_t *);
    nvmlReturn_t (*common_ancestor)(nvmlDevice_t, nvmlDevice_t, int *);
    nvmlReturn_t (*remote_type)(nvmlDevice_t, unsigned, int *); /* optional */
    const char *(*error_string)(nvmlReturn_t);                  /* optional */
} nv;

static bool load_nvml(char *note, size_t len)
{
    void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        snprintf(note, len, "NVML unavailable (libnvidia-ml.so.1 not found)");
        return false;
    }
    static const struct {
        void **slot;
        const char *name;
    } need[] = {
        {(void **)&nv.init, "nvmlInit_v2"},
        {(void **)&nv.shutdown, "nvmlShutdown"},
        {(void **)&nv.count, "nvmlDeviceGetCount_v2"},
        {(void **)&nv.by_index, "nvmlDeviceGetHandleByIndex_v2"},
        {(void **)&nv.pci_info, "nvmlDeviceGetPciInfo_v3"},
        {(void **)&nv.link_state, "nvmlDeviceGetNvLinkState"},
        {(void **)&nv.remote_pci, "nvmlDeviceGetNvLinkRemotePciInfo_v2"},
        {(void **)&nv.common_ancestor, "nvmlDeviceGetTopologyCommonAncestor"},
    };
    for (size_t i = 0; i < sizeof need / sizeof need[0]; i++) {
        *need[i].slot = dlsym(lib, need[i].name);
        if (*need[i].slot == NULL) {
            snprintf(note, len, "NVML unavailable (no %s)", need[i].name);
            return false;
        }
    }
    *(void **)&nv.remote_type = dlsym(lib, "nvmlDeviceGetNvLinkRemoteDeviceType");
    *(void **)&nv.error_string = dlsym(lib, "nvmlErrorString");
    return true;
}

static bool same_pci(const nvmlPciInfo_t *p, const struct topo_device *d)
{
    return p->domain == d->domain && p->bus == d->bus && p->device == d->device;
}

/* The CUDA ordinal of the device at this PCI address, or -1. */
static int ordinal_of(const struct topo *t, const nvmlPciInfo_t *p)
{
    for (int i = 0; i < t->ndev; i++)
        if (same_pci(p, &t->dev[i]))
            return i;
    return -1;
}

bool topo_nvml_links(struct topo *t)
{
    t->nvml = false;
    if (!load_nvml(t->nvml_note, sizeof t->nvml_note))
        return false;
    nvmlReturn_t r = nv.init();
    if (r != 0) {
        snprintf(t->nvml_note, sizeof t->nvml_note, "NVML unavailable (nvmlInit: %s)",
                 nv.error_string ? nv.error_string(r) : "error");
        return false;
    }
    /* NVML numbers devices its own way (PCI order, all of them); CUDA's
     * ordinals follow CUDA_DEVICE_ORDER and CUDA_VISIBLE_DEVICES. The PCI
     * address ties the two together. */
    nvmlDevice_t handle[TOPO_MAX_DEVICES] = {0};
    int direct[TOPO_MAX_DEVICES][TOPO_MAX_DEVICES] = {{0}};
    int to_switch[TOPO_MAX_DEVICES] = {0};
    unsigned n = 0;
    if (nv.count(&n) == 0)
        for (unsigned k = 0; k < n; k++) {
            nvmlDevice_t h;
            nvmlPciInfo_t pci;
            if (nv.by_index(k, &h) != 0 || nv.pci_info(h, &pci) != 0)
                continue;
            int i = ordinal_of(t, &pci);
            if (i >= 0)
                handle[i] = h;
        }
    for (int i = 0; i < t->ndev; i++) {
        if (handle[i] == NULL)
            continue;
        for (unsigned link = 0; link < NVML_LINKS_PROBED; link++) {
            int state = 0;
            nvmlPciInfo_t remote;
            if (nv.link_state(handle[i], link, &state) != 0 || state != NVML_FEATURE_ENABLED)
                continue;
            int type = -1;
            if (nv.remote_type != NULL && nv.remote_type(handle[i], link, &type) == 0 &&
                type == NVML_NVLINK_DEVICE_TYPE_SWITCH) {
                to_switch[i]++;
                continue;
            }
            if (nv.remote_pci(handle[i], link, &remote) != 0)
                continue;
            int j = ordinal_of(t, &remote);
            if (j >= 0 && j != i)
                direct[i][j]++;
            else if (j < 0 && nv.remote_type == NULL)
                to_switch[i]++; /* not a GPU of ours: most likely a switch */
        }
    }
    for (int i = 0; i < t->ndev; i++)
        for (int j = 0; j < t->ndev; j++) {
            struct topo_link *l = &t->link[i][j];
            if (i == j || handle[i] == NULL || handle[j] == NULL)
                continue;
            if (direct[i][j] > 0) {
                snprintf(l->type, sizeof l->type, "NVLink");
                l->nvlinks = direct[i][j];
                continue;
            }
            if (to_switch[i] > 0 && to_switch[j] > 0) {
                snprintf(l->type, sizeof l->type, "NVSwitch");
                l->nvlinks = to_switch[i];
                continue;
            }
            l->nvlinks = 0;
            int level = -1;
            if (nv.common_ancestor(handle[i], handle[j], &level) != 0)
                continue;
            for (size_t k = 0; k < sizeof pcie_levels / sizeof pcie_levels[0]; k++)
                if (pcie_levels[k].level == level)
                    snprintf(l->type, sizeof l->type, "%s", pcie_levels[k].name);
        }
    nv.shutdown();
    t->nvml = true;
    return true;
}
