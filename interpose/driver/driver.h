/* The real driver: the real dlsym, the loaded libcuda.so.1, and the few
 * driver functions the shim calls for itself. The shim's own calls go
 * straight to these pointers, never through its wrappers, so the program's
 * state (current context, the runtime's last error) is not touched. */
#ifndef P2PSHIM_DRIVER_H
#define P2PSHIM_DRIVER_H

#include <stdbool.h>

#include "shim_cuda.h"

#include <cudaTypedefs.h>

typedef void *(*dlsym_fn)(void *handle, const char *symbol);
typedef void *(*dlvsym_fn)(void *handle, const char *symbol, const char *version);

/* The next dlvsym after the shim's own export (glibc's, or an interposer's
 * loaded after the shim), read from the symbol tables (elf_next_definition).
 * Called through this pointer, RTLD_NEXT means "after the caller" as ever. */
dlvsym_fn driver_next_dlvsym(void);

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

/* The shim's own driver functions (driver.def), typed by cudaTypedefs.h. */
struct driver_api {
#define P2PSHIM_DRIVER(field, symbol, pfn) pfn field;
#define P2PSHIM_DRIVER_FLAVOURED(field, symbol, pfn, symbol_ptsz, pfn_ptsz) pfn field[2];
#include "driver.def"
#undef P2PSHIM_DRIVER
#undef P2PSHIM_DRIVER_FLAVOURED
};

/* The flavour of a P2PSHIM_DRIVER_FLAVOURED member for a call made by a
 * legacy (per_thread false) or per-thread (_ptds/_ptsz) variant: the
 * driver function that reads stream NULL as that variant does. May be NULL. */
#define DRIVER_FLAVOUR(api, field, per_thread) ((api)->field[(per_thread) ? 1 : 0])

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
