/* What the driver would accept: the checks the copy path makes before it
 * reads a copy's arrays, extents and counts any further than the driver
 * would, and before it enables, counts or records anything for the copy.
 *
 * A call refused here is left to the driver alone (which refuses it with
 * its own answer): the shim neither enables a link for it, nor counts it
 * in the exit summary, nor writes its decision record. The rules are the
 * driver's documented ones (cuda.h): NULL arrays and descriptors, a zero
 * count, the batch attributes' index bounds and access orders, the
 * reserved flags, a legacy stream where a batch refuses it, pitches and
 * layer heights that do not hold a row or a layer, extents whose bytes
 * wrap the address space, and bytes past the end of a device allocation
 * the shim knows. They only ever refuse what the driver refuses: where the
 * driver may accept (a host range, mapped memory over the seam of two
 * mappings, an array), the copy goes on to the copy path as before. */
#ifndef P2PSHIM_COPY_CHECK_H
#define P2PSHIM_COPY_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ownership.h"
#include "shim_cuda.h"

/* [p, p + n) lies in the address space: p + n does not wrap. */
static inline bool copy_check_span(uintptr_t p, size_t n)
{
    return n <= UINTPTR_MAX - p;
}

/* [p, p + n) lies inside the allocation that holds p, where the shim
 * knows it as device-resident memory of one allocation (device, pool or
 * managed memory); true where it does not know (host memory, mapped
 * memory, which may go on over a seam, a range the driver did not say).
 * Asks owner_lookup.h: the answer is cached for the copy path after it. */
bool copy_check_holds(CUdeviceptr p, size_t n);
/* The same, for an end whose owner the caller has resolved already. */
bool copy_check_info_holds(const struct owner_info *info, uintptr_t p, size_t n);

/* A 2D or 3D copy's geometry, checked: each side's first byte past its
 * base address (array sides: 0) and the bytes from there to its last
 * (0: an array side), and the bytes the copy moves. */
struct copy_geometry {
    size_t src_off, src_span, dst_off, dst_span, bytes;
};

/* The descriptor as the driver would check it (NULL, memory types, LOD,
 * pitch and layer height against the extent, wrap-around, known device
 * allocations); fills *g. false: the driver refuses the call, or it moves
 * nothing (a zero extent), and the copy path leaves it alone. */
bool copy_check_2d(const CUDA_MEMCPY2D *c, struct copy_geometry *g);
bool copy_check_3d(const CUDA_MEMCPY3D *c, struct copy_geometry *g);
bool copy_check_3d_peer(const CUDA_MEMCPY3D_PEER *c, struct copy_geometry *g);

/* cuMemcpyBatchAsync's arguments, and the stream as the variant reads it
 * (per_thread: a _ptsz variant, where NULL is the per-thread stream). */
struct copy_batch {
    const CUdeviceptr *dsts, *srcs;
    const size_t *sizes;
    size_t count;
    const CUmemcpyAttributes *attrs;
    const size_t *attrs_idxs;
    size_t num_attrs;
    CUstream stream;
    bool per_thread;
};

/* The whole batch as the driver checks it before it queues any copy:
 * the stream, the arrays, the attribute list (first index 0, increasing,
 * below count, no more entries than copies, a valid access order each),
 * then every copy's ends. Reads no element past the first the driver
 * would refuse. */
bool copy_check_batch(const struct copy_batch *b);

/* cuMemcpy3DBatchAsync: the stream, flags (reserved: 0), the list, then
 * every operation (extent, access order, flags, operand types, row
 * lengths and layer heights, wrap-around, known device allocations). */
bool copy_check_3d_batch(size_t count, const CUDA_MEMCPY3D_BATCH_OP *ops,
                         unsigned long long flags, CUstream stream, bool per_thread);

/* The bytes of a 3D batch operation that copy_check_3d_batch accepted
 * (width x height x depth: no wrap there), and its pointer operand's span
 * from its first byte (0 for an array operand). */
size_t copy_check_op_bytes(const CUDA_MEMCPY3D_BATCH_OP *op);
size_t copy_check_operand_span(const CUmemcpy3DOperand *o, const CUextent3D *e);

#endif
