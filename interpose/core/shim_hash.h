/* uthash, with its tables and buckets in the shim's own memory
 * (shim_alloc.h): include this instead of <uthash.h>. A file may define
 * HASH_FUNCTION or HASH_NONFATAL_OOM before including it. */
#ifndef P2PSHIM_SHIM_HASH_H
#define P2PSHIM_SHIM_HASH_H

#include "shim_alloc.h"

#define uthash_malloc(sz) shim_alloc(sz)
#define uthash_free(ptr, sz) shim_free((ptr), (sz))
#include <uthash.h>

#endif
