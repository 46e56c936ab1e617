/* NVML's ABI, the part p2pshim uses, declared here so that nothing needs
 * NVML's header to build: the shim's link check (interpose/link/trust_nvml.c),
 * the launcher's topology (tools/launcher/topo_nvml.c) and the stand-in NVML
 * of the CPU tests (tests/standin/sd_nvml.c). The values are nvml.h's; a
 * handle is opaque (the stand-in defines struct nvml_device for itself). */
#ifndef P2PSHIM_NVML_ABI_H
#define P2PSHIM_NVML_ABI_H

typedef int nvmlReturn_t;
typedef struct nvml_device *nvmlDevice_t;

/* nvmlReturn_t values. */
enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_UNINITIALIZED = 1,
    NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_NOT_FOUND = 6,
    NVML_ERROR_UNKNOWN = 999,
};

/* nvmlGpuP2PCapsIndex_t and nvmlGpuP2PStatus_t (nvmlDeviceGetP2PStatus). */
enum { NVML_P2P_CAPS_INDEX_READ = 0, NVML_P2P_CAPS_INDEX_WRITE = 1 };
enum { NVML_P2P_STATUS_OK = 0, NVML_P2P_STATUS_NOT_SUPPORTED = 5 };

/* nvmlEnableState_t and nvmlIntNvLinkDeviceType_t. */
enum { NVML_FEATURE_ENABLED = 1 };
enum { NVML_NVLINK_DEVICE_TYPE_SWITCH = 2 };

/* nvmlGpuTopologyLevel_t (nvmlDeviceGetTopologyCommonAncestor). */
enum {
    NVML_TOPOLOGY_INTERNAL = 0,   /* one board */
    NVML_TOPOLOGY_SINGLE = 10,    /* one PCIe switch */
    NVML_TOPOLOGY_MULTIPLE = 20,  /* several PCIe switches */
    NVML_TOPOLOGY_HOSTBRIDGE = 30, /* a host bridge */
    NVML_TOPOLOGY_NODE = 40,      /* host bridges of one NUMA node */
    NVML_TOPOLOGY_SYSTEM = 50,    /* across NUMA nodes (SMP link) */
};

/* nvmlPciInfo_t as of nvmlDeviceGetPciInfo_v3 and
 * nvmlDeviceGetNvLinkRemotePciInfo_v2. */
typedef struct {
    char busIdLegacy[16];
    unsigned int domain;
    unsigned int bus;
    unsigned int device;
    unsigned int pciDeviceId;
    unsigned int pciSubSystemId;
    char busId[32];
} nvmlPciInfo_t;

#endif
