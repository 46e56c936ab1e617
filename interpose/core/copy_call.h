/* One intercepted copy call as the shim's modules see it, from the
 * wrapper that receives it to the driver call that ends it. At the bottom
 * of the layers (interpose/LAYERS): the bounce module, the link layer and
 * the copy path all take it, and none of them needs another's header for
 * it. Each concern has its own part, set by the module that owns it; the
 * wrapper starts one with designated initializers (wrap_copy.c), the rest
 * zero. */
#ifndef P2PSHIM_COPY_CALL_H
#define P2PSHIM_COPY_CALL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shim_cuda.h"

struct copy_call {
    /* What the program called: the variant (enum hook_id), its stream,
     * how stream NULL reads (a _ptds/_ptsz variant), and whether it is a
     * synchronous variant (set where the pool relay may carry it). */
    struct {
        int api;
        CUstream stream;
        bool per_thread;
        bool sync;
    } issue;
    /* The run log and profilers: the CUPTI external id to push (0: none),
     * an NVTX range open for an upgraded copy, the decision's id and time
     * taken before a relay (cupti_join.h; record_id 0: none). */
    struct {
        uint64_t correlation;
        bool nvtx_range;
        uint64_t record_id, record_t_ns;
    } observe;
    /* An upgraded copy's link, whose event is recorded after the driver
     * call (link_life.h; NULL: none), and whether the shim enabled a link
     * for this copy (an alias or a relay), ridden or not. */
    struct {
        CUcontext a, b;
        bool enabled;
    } link;
    /* A linear copy's own address arguments, which the wrapper passes to
     * the driver after the copy path: the copy path may set them to the
     * aliases of mapped ends (copy_alias.h). NULL: the call cannot be
     * re-issued that way (batch and host copies). A 2D/3D copy's are the
     * address fields of the wrapper's copy of the descriptor, its first
     * bytes *_off past them, the copy touching *_span bytes from there (0:
     * the copy's byte count, a linear copy). done: the copy path replaced
     * them. */
    struct {
        CUdeviceptr *dst, *src;
        size_t dst_off, src_off, dst_span, src_span;
        bool done;
    } alias;
    /* A linear copy the shim may carry itself through its own buffers
     * (pool_relay.h): ok set by the wrapper; done when it did, rc then
     * the answer the wrapper returns instead of calling the driver. */
    struct {
        bool ok, done;
        CUresult rc;
    } relay;
};

#endif
