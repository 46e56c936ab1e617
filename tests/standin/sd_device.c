/* Initialisation, version and devices (names, identity, attributes, peer
 * capability): the exported driver functions. Error codes follow the real
 * driver's documented behaviour. Contexts and peer access: sd_context.c. */
#include "sd_internal.h"

#include <stdio.h>
#include <string.h>

/* ---- initialisation and version ---- */

SD_API CUresult CUDAAPI cuInit(unsigned int Flags)
{
    CUresult r = sd_enter(__func__, 0);
    if (Flags != 0)
        return sd_leave(CUDA_ERROR_INVALID_VALUE);
    if (!sd.initialized) {
        sd_read_config(&sd.cfg);
        if (sd.cfg.driver_fd)
            sd_driver_fd_open();
        sd_setup();
        sd.initialized = 1;
    }
    (void)r;
    r = sd_leave(CUDA_SUCCESS);
    sd_load_injection(); /* outside the lock: the tool may call the driver */
    return r;
}

SD_API CUresult CUDAAPI cuDriverGetVersion(int *driverVersion)
{
    sd_enter(__func__, 0);
    if (!driverVersion)
        return sd_leave(CUDA_ERROR_INVALID_VALUE);
    *driverVersion = SD_DRIVER_VERSION;
    return sd_leave(CUDA_SUCCESS);
}

/* ---- devices ---- */

static CUresult device_get(CUdevice *device, int ordinal)
{
    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    if (!sd_valid_dev(ordinal))
        return CUDA_ERROR_INVALID_DEVICE;
    *device = ordinal;
    return CUDA_SUCCESS;
}
SD_API CUresult CUDAAPI cuDeviceGet(CUdevice *device, int ordinal)
{
    SD_BODY(device_get(device, ordinal));
}

static CUresult device_count(int *count)
{
    if (!count)
        return CUDA_ERROR_INVALID_VALUE;
    *count = sd.cfg.ndev;
    return CUDA_SUCCESS;
}
SD_API CUresult CUDAAPI cuDeviceGetCount(int *count)
{
    SD_BODY(device_count(count));
}

static CUresult device_name(char *name, int len, CUdevice dev)
{
    if (!name || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (!sd_valid_dev(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    snprintf(name, (size_t)len, "Stand-in GPU %d", sd.cfg.phys[dev]);
    return CUDA_SUCCESS;
}
SD_API CUresult CUDAAPI cuDeviceGetName(char *name, int len, CUdevice dev)
{
    SD_BODY(device_name(name, len, dev));
}

/* A UUID that names the device on this stand-in machine: the same in
 * every process, different per device ("SDIN" and its index on the
 * machine, which CUDA_VISIBLE_DEVICES may put at another ordinal). */
static CUresult device_uuid(CUuuid *uuid, CUdevice dev)
{
    if (!uuid)
        return CUDA_ERROR_INVALID_VALUE;
    if (!sd_valid_dev(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    static const char tag[4] = {'S', 'D', 'I', 'N'};
    memset(uuid->bytes, 0, sizeof uuid->bytes);
    memcpy(uuid->bytes, tag, sizeof tag);
    uuid->bytes[15] = (char)sd.cfg.phys[dev];
    return CUDA_SUCCESS;
}
#undef cuDeviceGetUuid
SD_API CUresult CUDAAPI cuDeviceGetUuid(CUuuid *uuid, CUdevice dev)
{
    SD_BODY(device_uuid(uuid, dev));
}
SD_API CUresult CUDAAPI cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev)
{
    SD_BODY(device_uuid(uuid, dev));
}

/* A PCI bus id per device of the machine, "0000:10:00.0", "0000:11:00.0",
 * ...: a device keeps its bus id at whatever ordinal CUDA_VISIBLE_DEVICES
 * puts it, as a real one does. */
static CUresult device_pci_bus_id(char *id, int len, CUdevice dev)
{
    if (!id || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (!sd_valid_dev(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    snprintf(id, (size_t)len, "0000:%02X:00.0", 0x10 + (unsigned)sd.cfg.phys[dev]);
    return CUDA_SUCCESS;
}
SD_API CUresult CUDAAPI cuDeviceGetPCIBusId(char *pciBusId, int len, CUdevice dev)
{
    SD_BODY(device_pci_bus_id(pciBusId, len, dev));
}

/* Values of an H200-like device for the attributes programs commonly ask;
 * every other valid attribute reads 0. */
static int attribute_value(CUdevice_attribute a, CUdevice dev)
{
    switch (a) {
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: return 1;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: return 9;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: return 0;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: return 132;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: return 32;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: return 1024;
    case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT: return 4;
    case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY: return 1;
    case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY: return 1;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS: return 1;
    case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH: return 5120;
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: return 0x10 + sd.cfg.phys[dev];
    case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID: return 0;
    case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID: return 0;
    case CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT: return 32;
    case CU_DEVICE_ATTRIBUTE_CLOCK_RATE: return 1980000;
    case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE: return 2619000;
    default: return 0;
    }
}

static CUresult device_attribute(int *pi, CUdevice_attribute a, CUdevice dev)
{
    if (!pi || (int)a < 1 || a >= CU_DEVICE_ATTRIBUTE_MAX)
        return CUDA_ERROR_INVALID_VALUE;
    if (!sd_valid_dev(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    *pi = attribute_value(a, dev);
    return CUDA_SUCCESS;
}
SD_API CUresult CUDAAPI cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
    SD_BODY(device_attribute(pi, attrib, dev));
}

static CUresult device_total_mem(size_t *bytes, CUdevice dev)
{
    if (!bytes)
        return CUDA_ERROR_INVALID_VALUE;
    if (!sd_valid_dev(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    *bytes = sd.cfg.arena_bytes;
    return CUDA_SUCCESS;
}
SD_API CUresult CUDAAPI cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
    SD_BODY(device_total_mem(bytes, dev));
}

static CUresult can_access_peer(int *can, CUdevice dev, CUdevice peer)
{
    if (!can)
        return CUDA_ERROR_INVALID_VALUE;
    if (!sd_valid_dev(dev) || !sd_valid_dev(peer))
        return CUDA_ERROR_INVALID_DEVICE;
    *can = dev != peer && sd.cfg.can[dev][peer];
    return CUDA_SUCCESS;
}
SD_API CUresult CUDAAPI cuDeviceCanAccessPeer(int *canAccessPeer, CUdevice dev, CUdevice peerDev)
{
    SD_BODY(can_access_peer(canAccessPeer, dev, peerDev));
}

static CUresult p2p_attribute(int *value, CUdevice_P2PAttribute a, CUdevice src, CUdevice dst)
{
    if (!value)
        return CUDA_ERROR_INVALID_VALUE;
    if (!sd_valid_dev(src) || !sd_valid_dev(dst) || src == dst)
        return CUDA_ERROR_INVALID_DEVICE;
    int can = sd.cfg.can[src][dst];
    switch (a) {
    case CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK: *value = 0; break;
    case CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED: *value = can; break;
    case CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED: *value = can; break;
    case CU_DEVICE_P2P_ATTRIBUTE_CUDA_ARRAY_ACCESS_SUPPORTED: *value = can; break;
    default: *value = 0; break;
    }
    return CUDA_SUCCESS;
}
SD_API CUresult CUDAAPI cuDeviceGetP2PAttribute(int *value, CUdevice_P2PAttribute attrib,
                                                CUdevice srcDevice, CUdevice dstDevice)
{
    SD_BODY(p2p_attribute(value, attrib, srcDevice, dstDevice));
}
