/* p2pshim topo: the CUDA driver side. The driver is loaded at run time,
 * as cudart does (dlopen libcuda.so.1, then cuGetProcAddress_v2): the
 * launcher links no CUDA library, and on a CPU-only machine the stand-in
 * driver of tests/standin serves. cuda.h is used for types only. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include <cuda.h>

#include "topo_internal.h"

typedef CUresult (*gpa_fn)(const char *, void **, int, cuuint64_t,
                           CUdriverProcAddressQueryResult *);

/* The driver functions used, each with the ABI version it expects. */
static struct {
    CUresult (*init)(unsigned);
    CUresult (*driver_version)(int *);
    CUresult (*device_count)(int *);
    CUresult (*device_get)(CUdevice *, int);
    CUresult (*device_name)(char *, int, CUdevice);
    CUresult (*device_attribute)(int *, CUdevice_attribute, CUdevice);
    CUresult (*can_access_peer)(int *, CUdevice, CUdevice);
    CUresult (*primary_retain)(CUcontext *, CUdevice);
    CUresult (*ctx_set_current)(CUcontext);
    CUresult (*mem_alloc)(CUdeviceptr *, size_t);
    CUresult (*mem_free)(CUdeviceptr);
    CUresult (*stream_create)(CUstream *, unsigned);
    CUresult (*stream_destroy)(CUstream);
    CUresult (*stream_sync)(CUstream);
    CUresult (*event_create)(CUevent *, unsigned);
    CUresult (*event_record)(CUevent, CUstream);
    CUresult (*event_sync)(CUevent);
    CUresult (*event_destroy)(CUevent);
    CUresult (*copy_peer_async)(CUdeviceptr, CUcontext, CUdeviceptr, CUcontext, size_t,
                                CUstream);
    CUresult (*enable_peer)(CUcontext, unsigned);
    CUresult (*disable_peer)(CUcontext);
    /* Optional: absent from some drivers (and from the stand-in). */
    CUresult (*pci_bus_id)(char *, int, CUdevice);
    CUresult (*event_elapsed)(float *, CUevent, CUevent);
    CUresult (*error_name)(CUresult, const char **);
} cu;

static const char *err_name(CUresult r)
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
            return false;                                                      \
        }                                                                      \
    } while (0)

static bool load_driver(char *why, size_t why_len)
{
    if (cu.init != NULL)
        return true;
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        snprintf(why, why_len, "no CUDA driver (%s)", dlerror());
        return false;
    }
    gpa_fn gpa = (gpa_fn)dlsym(lib, "cuGetProcAddress_v2");
    if (gpa == NULL) {
        snprintf(why, why_len, "the CUDA driver is too old (no cuGetProcAddress_v2)");
        return false;
    }
    *(void **)&cu.pci_bus_id = lookup(gpa, "cuDeviceGetPCIBusId", 4010);
    /* 12080 gives cuEventElapsedTime_v2 where it exists, the first
     * version (same signature) on older drivers. */
    *(void **)&cu.event_elapsed = lookup(gpa, "cuEventElapsedTime", 12080);
    *(void **)&cu.error_name = lookup(gpa, "cuGetErrorName", 6000);
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
    REQUIRE(copy_peer_async, "cuMemcpyPeerAsync", 4000);
    REQUIRE(enable_peer, "cuCtxEnablePeerAccess", 4000);
    REQUIRE(disable_peer, "cuCtxDisablePeerAccess", 4000);
    REQUIRE(init, "cuInit", 2000); /* last: it marks the table complete */
    return true;
}

#define CU_CHECK(call)                                                         \
    do {                                                                       \
        CUresult r_ = (call);                                                  \
        if (r_ != CUDA_SUCCESS) {                                              \
            snprintf(why, why_len, "%s failed: %s", #call, err_name(r_));      \
            return false;                                                      \
        }                                                                      \
    } while (0)

/* The PCI address, from cuDeviceGetPCIBusId where the driver has it, else
 * from the attributes (function 0). */
static bool device_pci(struct topo_device *d, CUdevice dev, char *why, size_t why_len)
{
    int domain = 0, bus = 0, slot = 0;
    CU_CHECK(cu.device_attribute(&domain, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, dev));
    CU_CHECK(cu.device_attribute(&bus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, dev));
    CU_CHECK(cu.device_attribute(&slot, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, dev));
    d->domain = (unsigned)domain;
    d->bus = (unsigned)bus;
    d->device = (unsigned)slot;
    char id[sizeof d->pci];
    if (cu.pci_bus_id != NULL && cu.pci_bus_id(id, (int)sizeof id, dev) == CUDA_SUCCESS) {
        for (char *p = id; *p; p++)
            if (*p >= 'A' && *p <= 'F')
                *p = (char)(*p - 'A' + 'a');
        memcpy(d->pci, id, sizeof d->pci);
    } else {
        snprintf(d->pci, sizeof d->pci, "%04x:%02x:%02x.0", d->domain & 0xffffu,
                 d->bus & 0xffu, d->device & 0xffu);
    }
    return true;
}

bool topo_cuda_query(struct topo *t, char *why, size_t why_len)
{
    if (!load_driver(why, why_len))
        return false;
    CUresult r = cu.init(0);
    if (r == CUDA_ERROR_NO_DEVICE) {
        snprintf(why, why_len, "no CUDA device (cuInit: %s)", err_name(r));
        return false;
    }
    CU_CHECK(r);
    CU_CHECK(cu.driver_version(&t->driver_version));
    CU_CHECK(cu.device_count(&t->ndev));
    if (t->ndev > TOPO_MAX_DEVICES)
        t->ndev = TOPO_MAX_DEVICES;
    for (int i = 0; i < t->ndev; i++) {
        CUdevice dev;
        CU_CHECK(cu.device_get(&dev, i));
        CU_CHECK(cu.device_name(t->dev[i].name, (int)sizeof t->dev[i].name, dev));
        if (!device_pci(&t->dev[i], dev, why, why_len))
            return false;
    }
    for (int i = 0; i < t->ndev; i++)
        for (int j = 0; j < t->ndev; j++) {
            struct topo_link *l = &t->link[i][j];
            l->nvlinks = -1;
            l->staged_gbps = l->peer_gbps = -1;
            int can = 0;
            if (i != j)
                CU_CHECK(cu.can_access_peer(&can, i, j));
            l->can_peer = can != 0;
        }
    return true;
}

/* Times reps copies src -> dst on a stream of src's context (current) and
 * returns GB/s, or -1 where the driver cannot time them. One copy first,
 * untimed: the first use of a path pays for its set-up. */
static bool time_copies(CUstream s, CUdeviceptr dst, CUcontext dctx, CUdeviceptr src,
                        CUcontext sctx, size_t bytes, int reps, double *gbps, char *why,
                        size_t why_len)
{
    CUevent start, stop;
    *gbps = -1;
    CU_CHECK(cu.copy_peer_async(dst, dctx, src, sctx, bytes, s));
    CU_CHECK(cu.stream_sync(s));
    CU_CHECK(cu.event_create(&start, CU_EVENT_DEFAULT));
    CU_CHECK(cu.event_create(&stop, CU_EVENT_DEFAULT));
    CU_CHECK(cu.event_record(start, s));
    for (int r = 0; r < reps; r++)
        CU_CHECK(cu.copy_peer_async(dst, dctx, src, sctx, bytes, s));
    CU_CHECK(cu.event_record(stop, s));
    CU_CHECK(cu.event_sync(stop));
    float ms = 0;
    if (cu.event_elapsed != NULL && cu.event_elapsed(&ms, start, stop) == CUDA_SUCCESS &&
        ms > 0)
        *gbps = (double)bytes * reps / ((double)ms * 1e6);
    cu.event_destroy(start);
    cu.event_destroy(stop);
    return true;
}

bool topo_cuda_measure(struct topo *t, size_t bytes, int reps, topo_progress_fn progress,
                       char *why, size_t why_len)
{
    CUcontext ctx[TOPO_MAX_DEVICES];
    CUdeviceptr buf[TOPO_MAX_DEVICES];
    CUstream stream[TOPO_MAX_DEVICES];
    for (int i = 0; i < t->ndev; i++) {
        CU_CHECK(cu.primary_retain(&ctx[i], i));
        CU_CHECK(cu.ctx_set_current(ctx[i]));
        CU_CHECK(cu.mem_alloc(&buf[i], bytes));
        CU_CHECK(cu.stream_create(&stream[i], CU_STREAM_NON_BLOCKING));
    }
    int steps = 0, step = 0;
    for (int i = 0; i < t->ndev; i++)
        for (int j = 0; j < t->ndev; j++)
            steps += i == j ? 0 : t->link[i][j].can_peer ? 2 : 1;
    for (int i = 0; i < t->ndev; i++)
        for (int j = 0; j < t->ndev; j++) {
            if (i == j)
                continue;
            struct topo_link *l = &t->link[i][j];
            CU_CHECK(cu.ctx_set_current(ctx[i]));
            if (progress)
                progress(++step, steps, i, j, "staged");
            if (!time_copies(stream[i], buf[j], ctx[j], buf[i], ctx[i], bytes, reps,
                             &l->staged_gbps, why, why_len))
                return false;
            if (!l->can_peer)
                continue;
            if (progress)
                progress(++step, steps, i, j, "peer");
            CUresult r = cu.enable_peer(ctx[j], 0);
            if (r != CUDA_SUCCESS && r != CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED) {
                /* Reported peer-capable, yet the enable fails (too many
                 * peers, a broken platform): no peer figure. */
                continue;
            }
            bool ok = time_copies(stream[i], buf[j], ctx[j], buf[i], ctx[i], bytes, reps,
                                  &l->peer_gbps, why, why_len);
            cu.disable_peer(ctx[j]);
            if (!ok)
                return false;
        }
    for (int i = 0; i < t->ndev; i++) {
        cu.ctx_set_current(ctx[i]);
        cu.stream_destroy(stream[i]);
        cu.mem_free(buf[i]);
    }
    t->measured = true;
    t->bytes = bytes;
    t->reps = reps;
    return true;
}
