/* The launcher's CUDA driver (cuda_api.c), for topo and trust: loaded at
 * run time as cudart loads it (dlopen libcuda.so.1, then cuGetProcAddress_v2
 * with each function's ABI version): the launcher links no CUDA library,
 * and on a CPU-only machine the stand-in driver of tests/standin serves.
 * cuda.h is used for types only. */
#ifndef P2PSHIM_LAUNCHER_CUDA_API_H
#define P2PSHIM_LAUNCHER_CUDA_API_H

#include <stddef.h>

#include <cuda.h>

struct launcher_cuda {
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
    CUresult (*copy_peer)(CUdeviceptr, CUcontext, CUdeviceptr, CUcontext, size_t);
    CUresult (*copy_peer_async)(CUdeviceptr, CUcontext, CUdeviceptr, CUcontext, size_t,
                                CUstream);
    CUresult (*enable_peer)(CUcontext, unsigned);
    CUresult (*disable_peer)(CUcontext);
    /* Optional: absent from some drivers (and from the stand-in). */
    CUresult (*pci_bus_id)(char *, int, CUdevice);
    CUresult (*event_elapsed)(float *, CUevent, CUevent);
    CUresult (*error_name)(CUresult, const char **);
    CUresult (*device_uuid)(CUuuid *, CUdevice); /* cuDeviceGetUuid_v2, as the shim */
};

/* The driver's functions, loaded once (not initialised: the caller calls
 * init); NULL with a one-line reason in why when the driver or a required
 * function is missing. */
const struct launcher_cuda *launcher_cuda(char *why, size_t why_len);

/* The driver's name of a result, else "CUDA error N" (a static buffer). */
const char *launcher_cuda_error(CUresult r);

#endif
