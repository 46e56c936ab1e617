/* The real driver: the real dlsym, the loaded libcuda.so.1, and the few
 * driver functions the shim calls for itself. The shim's own calls go
 * straight to these pointers, never through its wrappers, so the program's
 * state (current context, the runtime's last error) is not touched. */
#ifndef P2PSHIM_DRIVER_H
#define P2PSHIM_DRIVER_H

#include <stdbool.h>

#include "shim_cuda.h"

typedef void *(*dlsym_fn)(void *handle, const char *symbol);

/* glibc's dlsym, found with dlvsym. Never NULL after first use on glibc. */
dlsym_fn driver_real_dlsym(void);

/* The next dlsym after the shim's: another interposer's (loaded after the
 * shim) or glibc's. The program's lookups go on to it, so an interposer
 * after the shim answers them as it would without the shim. */
dlsym_fn driver_next_dlsym(void);

/* Tells the driver module where libcuda lives: fn is a pointer a lookup
 * handed out (the real cuGetProcAddress, say). Pointers into any library
 * but a libcuda.so* (another tool's wrappers) are ignored. */
void driver_note_pointer(void *fn);

/* A symbol of the loaded driver library, or NULL when no driver is loaded
 * or it lacks the symbol. Never loads a library that is not loaded yet. */
void *driver_symbol(const char *name);

struct driver_api {
    CUresult (*ctx_get_current)(CUcontext *ctx);
    CUresult (*ctx_push)(CUcontext ctx);
    CUresult (*ctx_pop)(CUcontext *ctx);
    CUresult (*ctx_get_device)(CUdevice *dev);
    CUresult (*can_access_peer)(int *can, CUdevice dev, CUdevice peer);
    CUresult (*pointer_get_attributes)(unsigned int n, CUpointer_attribute *attrs,
                                       void **data, CUdeviceptr ptr);
    CUresult (*stream_get_ctx)(CUstream stream, CUcontext *ctx);
    CUresult (*stream_get_ctx_ptsz)(CUstream stream, CUcontext *ctx);
    CUresult (*ctx_enable_peer)(CUcontext peer, unsigned int flags);
    CUresult (*primary_ctx_get_state)(CUdevice dev, unsigned int *flags, int *active);
    /* For the bounce module's snapshots (bounce_gpu.c). */
    CUresult (*mem_alloc)(CUdeviceptr *ptr, size_t bytes);
    CUresult (*mem_free)(CUdeviceptr ptr);
    CUresult (*mem_alloc_host)(void **ptr, size_t bytes);
    CUresult (*mem_free_host)(void *ptr);
    CUresult (*mem_get_info)(size_t *free_bytes, size_t *total);
    CUresult (*device_get_attribute)(int *value, CUdevice_attribute attr, CUdevice dev);
    CUresult (*device_get_count)(int *count);
    CUresult (*event_create)(CUevent *ev, unsigned int flags);
    CUresult (*event_destroy)(CUevent ev);
    CUresult (*event_record)(CUevent ev, CUstream stream);
    CUresult (*event_record_ptsz)(CUevent ev, CUstream stream);
    CUresult (*event_synchronize)(CUevent ev);
    CUresult (*stream_create)(CUstream *stream, unsigned int flags);
    CUresult (*stream_synchronize)(CUstream stream);
    CUresult (*stream_is_capturing)(CUstream stream, CUstreamCaptureStatus *status);
    CUresult (*stream_is_capturing_ptsz)(CUstream stream, CUstreamCaptureStatus *status);
    CUresult (*stream_wait_event)(CUstream stream, CUevent ev, unsigned int flags);
    CUresult (*stream_wait_event_ptsz)(CUstream stream, CUevent ev, unsigned int flags);
};

/* The driver functions, resolved on first call once a driver is loaded;
 * members may be NULL (callers treat that as "cannot", never call it). */
const struct driver_api *driver_api(void);

/* The device of a context, or -1: pushes it, asks, pops. */
int driver_ctx_device(CUcontext ctx);

/* The context a copy on stream runs in: the stream's, or the current one
 * for the special handles (NULL, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD).
 * per_thread: the caller is a _ptds/_ptsz variant. NULL when unknown. */
CUcontext driver_stream_ctx(CUstream stream, bool per_thread);

#endif
