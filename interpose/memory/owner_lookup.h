/* Pointer -> owner: the ownership table first, then one driver query
 * (cuPointerGetAttributes) whose answer is cached in the table until a
 * free, unmap or reset removes it. Pointers the driver does not know
 * (plain host memory) are not cached: they may be registered later. */
#ifndef P2PSHIM_OWNER_LOOKUP_H
#define P2PSHIM_OWNER_LOOKUP_H

#include <stdbool.h>

#include "ownership.h"
#include "shim_cuda.h"

/* Fills *out and returns true when ptr is memory the driver knows. */
bool resolve_pointer(CUdeviceptr ptr, struct owner_info *out);

/* Asks the driver only (no cache): for the allocation hooks, which record
 * what they allocated with the driver's own view of it. */
bool resolve_from_driver(CUdeviceptr ptr, struct owner_info *out);

#endif
