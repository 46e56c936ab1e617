/* The launcher's CUDA driver (cuda_api.c), for topo and trust: loaded at
 * run time as cudart loads it (dlopen libcuda.so.1, then cuGetProcAddress_v2
 * with each function's ABI version): the launcher links no CUDA library,
 * and on a CPU-only machine the stand-in driver of tests/standin serves.
 * cuda.h and cudaTypedefs.h are used for types only. */
#ifndef P2PSHIM_LAUNCHER_CUDA_API_H
#define P2PSHIM_LAUNCHER_CUDA_API_H

#include <stddef.h>

#include <cuda.h>
#include <cudaTypedefs.h>

/* One member per line of cuda_api.def, typed by cudaTypedefs.h. */
struct launcher_cuda {
#define LAUNCHER_CUDA(field, base, version, need) PFN_##base##_v##version field;
#include "cuda_api.def"
#undef LAUNCHER_CUDA
};

/* The driver's functions, loaded once (not initialised: the caller calls
 * init); NULL with a one-line reason in why when the driver or a required
 * function is missing. */
const struct launcher_cuda *launcher_cuda(char *why, size_t why_len);

/* The driver's name of a result, else "CUDA error N" (a static buffer). */
const char *launcher_cuda_error(CUresult r);

#endif
