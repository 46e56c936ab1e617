/* The launcher's CUDA driver, loaded at run time (cuda_api.h). */
#define _GNU_SOURCE
#include "cuda_api.h"

#include <dlfcn.h>
#include <stdio.h>

typedef CUresult (*gpa_fn)(const char *, void **, int, cuuint64_t,
                           CUdriverProcAddressQueryResult *);

static struct launcher_cuda cu;

const char *launcher_cuda_error(CUresult r)
{
    static char buf[32];
    const char *s = NULL;
    if (cu.error_name != NULL && cu.error_name(r, &s) == CUDA_SUCCESS && s != NULL)
        return s;
    snprintf(buf, sizeof buf, "CUDA error %d", (int)r);
    return buf;
}

static void *lookup(gpa_fn gpa, const char *name, int version)
{
    void *fn = NULL;
    CUdriverProcAddressQueryResult status;
    if (gpa(name, &fn, version, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &status) != CUDA_SUCCESS)
        return NULL;
    return fn;
}

#define REQUIRE(field, name, version)                                          \
    do {                                                                       \
        *(void **)&cu.field = lookup(gpa, name, version);                      \
        if (cu.field == NULL) {                                                \
            snprintf(why, why_len, "the CUDA driver has no %s", name);        \
            return NULL;                                                       \
        }                                                                      \
    } while (0)

const struct launcher_cuda *launcher_cuda(char *why, size_t why_len)
{
    if (cu.init != NULL)
        return &cu;
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        snprintf(why, why_len, "no CUDA driver (%s)", dlerror());
        return NULL;
    }
    gpa_fn gpa = (gpa_fn)dlsym(lib, "cuGetProcAddress_v2");
    if (gpa == NULL) {
        snprintf(why, why_len, "the CUDA driver is too old (no cuGetProcAddress_v2)");
        return NULL;
    }
    *(void **)&cu.pci_bus_id = lookup(gpa, "cuDeviceGetPCIBusId", 4010);
    /* 12080 gives cuEventElapsedTime_v2 where it exists, the first
     * version (same signature) on older drivers. */
    *(void **)&cu.event_elapsed = lookup(gpa, "cuEventElapsedTime", 12080);
    *(void **)&cu.error_name = lookup(gpa, "cuGetErrorName", 6000);
    *(void **)&cu.device_uuid = lookup(gpa, "cuDeviceGetUuid", 11040);
    REQUIRE(driver_version, "cuDriverGetVersion", 2020);
    REQUIRE(device_count, "cuDeviceGetCount", 2000);
    REQUIRE(device_get, "cuDeviceGet", 2000);
    REQUIRE(device_name, "cuDeviceGetName", 2000);
    REQUIRE(device_attribute, "cuDeviceGetAttribute", 2000);
    REQUIRE(can_access_peer, "cuDeviceCanAccessPeer", 4000);
    REQUIRE(primary_retain, "cuDevicePrimaryCtxRetain", 7000);
    REQUIRE(ctx_set_current, "cuCtxSetCurrent", 4000);
    REQUIRE(mem_alloc, "cuMemAlloc", 3020);
    REQUIRE(mem_free, "cuMemFree", 3020);
    REQUIRE(stream_create, "cuStreamCreate", 2000);
    REQUIRE(stream_destroy, "cuStreamDestroy", 4000);
    REQUIRE(stream_sync, "cuStreamSynchronize", 2000);
    REQUIRE(event_create, "cuEventCreate", 2000);
    REQUIRE(event_record, "cuEventRecord", 2000);
    REQUIRE(event_sync, "cuEventSynchronize", 2000);
    REQUIRE(event_destroy, "cuEventDestroy", 4000);
    REQUIRE(copy_peer, "cuMemcpyPeer", 4000);
    REQUIRE(copy_peer_async, "cuMemcpyPeerAsync", 4000);
    REQUIRE(enable_peer, "cuCtxEnablePeerAccess", 4000);
    REQUIRE(disable_peer, "cuCtxDisablePeerAccess", 4000);
    REQUIRE(init, "cuInit", 2000); /* last: it marks the table complete */
    return &cu;
}
