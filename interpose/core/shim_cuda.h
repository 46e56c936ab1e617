/* The CUDA driver types, with every symbol under its exact exported name:
 * __CUDA_API_VERSION_INTERNAL turns off cuda.h's renaming macros
 * (cuMemcpyDtoD -> cuMemcpyDtoD_v2[_ptds]), so each variant is a distinct
 * function here, as it is in libcuda.so.1. Types only: nothing links a CUDA
 * library. */
#ifndef P2PSHIM_SHIM_CUDA_H
#define P2PSHIM_SHIM_CUDA_H

#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>

#include "hot.h"

#define P2PSHIM_EXPORT __attribute__((visibility("default")))

/* Special stream handles (cuda.h defines them as casts of 0x1 and 0x2). */
#define P2PSHIM_STREAM_LEGACY ((CUstream)0x1)
#define P2PSHIM_STREAM_PER_THREAD ((CUstream)0x2)

#endif
