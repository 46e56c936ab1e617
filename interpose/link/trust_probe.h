/* The link check's work on the GPUs (docs/TRUST.md): a data check through
 * the link both ways and peer against staged speed, on the shim's own
 * stream, events and memory, never the program's. Its two halves are
 * peer.h's struct peer_check: staged before the link is enabled, linked
 * after. */
#ifndef P2PSHIM_TRUST_PROBE_H
#define P2PSHIM_TRUST_PROBE_H

#include <stdbool.h>
#include <stddef.h>

#include "peer.h"
#include "shim_cuda.h"

/* Bytes each way: large enough for the copy engines to show their speed,
 * small enough to cost a few milliseconds. */
#define TRUST_PROBE_BYTES ((size_t)4 << 20)

/* Peer copies must move bytes at least this many times faster than staged
 * ones (in tenths) for the link to be worth enabling. */
#define TRUST_PROBE_MARGIN_TENTHS 12

enum trust_probe_outcome {
    TRUST_PROBE_PASSED,
    TRUST_PROBE_WRONG_BYTES,  /* the data through the link was not what was sent */
    TRUST_PROBE_SLOWER,       /* right bytes, but not faster than staged */
    TRUST_PROBE_UNCHECKED,    /* the shim could not set the check up (memory) */
};

struct trust_probe {
    CUcontext from_ctx, to_ctx;
    CUdeviceptr from_buf, to_buf;   /* TRUST_PROBE_BYTES on each device */
    unsigned char *host;            /* the pattern and what came back */
    CUstream stream;                /* the shim's, in from_ctx, non-blocking */
    CUevent start, end;
    double staged_ms, peer_ms;      /* one timed copy each, from -> to */
    size_t wrong_bytes;
    enum trust_probe_outcome outcome;
};

/* Sets the check up between two contexts: buffers, stream, events (the
 * current context restored). false when anything failed: outcome is then
 * TRUST_PROBE_UNCHECKED and trust_probe_close still must be called. */
bool trust_probe_open(struct trust_probe *p, CUcontext from_ctx, CUcontext to_ctx);

/* The check's two halves for peer_shim_enable_checked, arg a struct
 * trust_probe: staged times a copy from -> to with no link enabled;
 * linked sends a pattern each way through the link, compares what came
 * back, times a copy from -> to, and says yes only when the bytes were
 * right and the peer copy beat the staged one by the margin. */
struct peer_check trust_probe_check(struct trust_probe *p);

/* Gives back everything trust_probe_open made. */
void trust_probe_close(struct trust_probe *p);

#endif
