/* Every hooked copy API that moves device memory, one entry per exact
 * variant, each able to issue one linear copy of n bytes (n a multiple of
 * PL_ROW * PL_ROWS_3D) between two device buffers: the 2D/3D forms as rows
 * of PL_ROW bytes, the batches as two halves. */
#ifndef PL_COPIES_H
#define PL_COPIES_H

#include "pl_common.h"

#define PL_ROW 256
#define PL_ROWS_3D 16

struct pl_xfer {
    CUdeviceptr dst, src;
    CUcontext dctx, sctx;   /* owning contexts (the Peer APIs name them) */
    size_t n;
};

struct pl_copy_api {
    const char *name;   /* the stand-in's export it reaches (standin_calls) */
    int per_thread;     /* _ptds/_ptsz: NULL is the per-thread stream */
    int async;          /* takes a stream */
    int elements;       /* copies the stand-in counts for one issue */
    int optional;       /* looked up with dlsym; skipped when missing */
    int user_stream;    /* the legacy stream is refused (the batches):
                           issue on a created stream */
    CUresult (*issue)(const struct pl_copy_api *api, const struct pl_xfer *x,
                      CUstream stream);
};

extern const struct pl_copy_api pl_copy_apis[];
extern const int pl_copy_api_count;

/* Result of issue() for an optional API the driver lacks. */
#define PL_NOT_SUPPORTED ((CUresult)-1)

/* Waits for stream (NULL: the api's default stream) in the current
 * context, with the sync call of the api's flavour. */
void pl_copy_sync(const struct pl_copy_api *api, CUstream stream);

#endif
