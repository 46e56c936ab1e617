/* p2pshim topo: the CUDA driver side (the driver loaded at run time:
 * cuda_api.h). */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include <cuda.h>

#include "cuda_api.h"
#include "topo_internal.h"

static const struct launcher_cuda *cu;

static bool load_driver(char *why, size_t why_len)
{
    cu = launcher_cuda(why, why_len);
    return cu != NULL;
}

#define CU_CHECK(call)                                                         \
    do {                                                                       \
        CUresult r_ = (call);                                                  \
        if (r_ != CUDA_SUCCESS) {                                              \
            snprintf(why, why_len, "%s failed: %s", #call, launcher_cuda_error(r_));      \
            return false;                                                      \
        }                                                                      \
    } while (0)

/* The PCI address, from cuDeviceGetPCIBusId where the driver has it, else
 * from the attributes (function 0). */
static bool device_pci(struct topo_device *d, CUdevice dev, char *why, size_t why_len)
{
    int domain = 0, bus = 0, slot = 0;
    CU_CHECK(cu->device_attribute(&domain, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, dev));
    CU_CHECK(cu->device_attribute(&bus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, dev));
    CU_CHECK(cu->device_attribute(&slot, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, dev));
    d->domain = (unsigned)domain;
    d->bus = (unsigned)bus;
    d->device = (unsigned)slot;
    char id[sizeof d->pci];
    if (cu->pci_bus_id != NULL && cu->pci_bus_id(id, (int)sizeof id, dev) == CUDA_SUCCESS) {
        for (char *p = id; *p; p++)
            if (*p >= 'A' && *p <= 'F')
                *p = (char)(*p - 'A' + 'a');
        memcpy(d->pci, id, sizeof d->pci);
    } else {
        snprintf(d->pci, sizeof d->pci, "%04x:%02x:%02x.0", d->domain & 0xffffu,
                 d->bus & 0xffu, d->device & 0xffu);
    }
    return true;
}

/* The UUID as nvidia-smi and the run log write it, where the driver has
 * it ("" otherwise): the table is matched to a run's GPUs by it. */
static void device_uuid(struct topo_device *d, CUdevice dev)
{
    CUuuid u;
    d->uuid[0] = '\0';
    if (cu->device_uuid == NULL || cu->device_uuid(&u, dev) != CUDA_SUCCESS)
        return;
    const unsigned char *b = (const unsigned char *)u.bytes;
    snprintf(d->uuid, sizeof d->uuid,
             "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
             b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
             b[14], b[15]);
}

bool topo_cuda_query(struct topo *t, char *why, size_t why_len)
{
    if (!load_driver(why, why_len))
        return false;
    CUresult r = cu->init(0);
    if (r == CUDA_ERROR_NO_DEVICE) {
        snprintf(why, why_len, "no CUDA device (cuInit: %s)", launcher_cuda_error(r));
        return false;
    }
    CU_CHECK(r);
    CU_CHECK(cu->driver_version(&t->driver_version));
    CU_CHECK(cu->device_count(&t->ndev));
    if (t->ndev > TOPO_MAX_DEVICES)
        t->ndev = TOPO_MAX_DEVICES;
    for (int i = 0; i < t->ndev; i++) {
        CUdevice dev;
        CU_CHECK(cu->device_get(&dev, i));
        CU_CHECK(cu->device_name(t->dev[i].name, (int)sizeof t->dev[i].name, dev));
        if (!device_pci(&t->dev[i], dev, why, why_len))
            return false;
        device_uuid(&t->dev[i], dev);
    }
    for (int i = 0; i < t->ndev; i++)
        for (int j = 0; j < t->ndev; j++) {
            struct topo_link *l = &t->link[i][j];
            l->nvlinks = -1;
            l->staged_gbps = l->peer_gbps = -1;
            int can = 0;
            if (i != j)
                CU_CHECK(cu->can_access_peer(&can, i, j));
            l->can_peer = can != 0;
        }
    return true;
}

/* Why a figure is n/a, in the words topo prints for r. */
static void na_reason(char *out, size_t len, const char *what, CUresult r)
{
    if (r == CUDA_ERROR_OUT_OF_MEMORY)
        snprintf(out, len, "cannot allocate");
    else if (r == CUDA_ERROR_DEVICE_UNAVAILABLE || r == CUDA_ERROR_DEVICE_NOT_LICENSED)
        snprintf(out, len, "device busy");
    else if (r == CUDA_ERROR_TOO_MANY_PEERS)
        snprintf(out, len, "too many peers");
    else
        snprintf(out, len, "%s: %s", what, launcher_cuda_error(r));
}

/* Times reps copies src -> dst on a stream of src's context (current):
 * GB/s in *gbps, or -1 with the reason in na. One copy first, untimed:
 * the first use of a path pays for its set-up. */
static void time_copies(CUstream s, CUdeviceptr dst, CUcontext dctx, CUdeviceptr src,
                        CUcontext sctx, size_t bytes, int reps, double *gbps, char *na,
                        size_t na_len)
{
    CUevent start = NULL, stop = NULL;
    CUresult r = cu->copy_peer_async(dst, dctx, src, sctx, bytes, s);
    *gbps = -1;
    if (r == CUDA_SUCCESS)
        r = cu->stream_sync(s);
    if (r == CUDA_SUCCESS && (r = cu->event_create(&start, CU_EVENT_DEFAULT)) == CUDA_SUCCESS)
        r = cu->event_create(&stop, CU_EVENT_DEFAULT);
    if (r == CUDA_SUCCESS)
        r = cu->event_record(start, s);
    for (int k = 0; r == CUDA_SUCCESS && k < reps; k++)
        r = cu->copy_peer_async(dst, dctx, src, sctx, bytes, s);
    if (r == CUDA_SUCCESS && (r = cu->event_record(stop, s)) == CUDA_SUCCESS)
        r = cu->event_sync(stop);
    float ms = 0;
    if (r != CUDA_SUCCESS)
        na_reason(na, na_len, "copy failed", r);
    else if (cu->event_elapsed != NULL && cu->event_elapsed(&ms, start, stop) == CUDA_SUCCESS &&
             ms > 0)
        *gbps = (double)bytes * reps / ((double)ms * 1e6);
    else
        snprintf(na, na_len, "cannot time (no event timer)");
    if (start != NULL)
        cu->event_destroy(start);
    if (stop != NULL)
        cu->event_destroy(stop);
}

/* What the measurement holds per device: its context, buffer and stream,
 * or why it could not have them. */
struct measure_dev {
    CUcontext ctx;
    CUdeviceptr buf;
    CUstream stream;
    char why[64]; /* "" usable */
};

static void setup_device(struct measure_dev *m, int i, size_t bytes)
{
    CUresult r = cu->primary_retain(&m->ctx, i);
    if (r == CUDA_SUCCESS)
        r = cu->ctx_set_current(m->ctx);
    if (r != CUDA_SUCCESS) {
        na_reason(m->why, sizeof m->why, "no context", r);
        return;
    }
    if ((r = cu->mem_alloc(&m->buf, bytes)) != CUDA_SUCCESS) {
        m->buf = 0;
        na_reason(m->why, sizeof m->why, "cannot allocate", r);
        return;
    }
    if ((r = cu->stream_create(&m->stream, CU_STREAM_NON_BLOCKING)) != CUDA_SUCCESS)
        na_reason(m->why, sizeof m->why, "no stream", r);
}

/* The peer figure of src -> dst: access enabled from src's context (the
 * current one) to dst's for the copies, and disabled again after. */
static void measure_peer(struct topo_link *l, struct measure_dev *src, struct measure_dev *dst,
                         size_t bytes, int reps)
{
    if (!l->can_peer) {
        snprintf(l->peer_why, sizeof l->peer_why, "no peer access");
        return;
    }
    CUresult r = cu->enable_peer(dst->ctx, 0);
    if (r != CUDA_SUCCESS && r != CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED) {
        /* Reported peer-capable, yet the enable fails (too many peers, a
         * broken platform): no peer figure. */
        na_reason(l->peer_why, sizeof l->peer_why, "peer access refused", r);
        return;
    }
    time_copies(src->stream, dst->buf, dst->ctx, src->buf, src->ctx, bytes, reps,
                &l->peer_gbps, l->peer_why, sizeof l->peer_why);
    cu->disable_peer(dst->ctx);
}

bool topo_cuda_measure(struct topo *t, size_t bytes, int reps, topo_progress_fn progress,
                       char *why, size_t why_len)
{
    static struct measure_dev m[TOPO_MAX_DEVICES];
    int usable = 0, steps = 0, step = 0;
    for (int i = 0; i < t->ndev; i++) {
        memset(&m[i], 0, sizeof m[i]);
        setup_device(&m[i], i, bytes);
        usable += m[i].why[0] == '\0';
    }
    if (usable == 0 && t->ndev > 0) {
        snprintf(why, why_len, "no device can be used: GPU0: %s", m[0].why);
        return false;
    }
    for (int i = 0; i < t->ndev; i++)
        for (int j = 0; j < t->ndev; j++)
            steps += i == j ? 0 : t->link[i][j].can_peer ? 2 : 1;
    for (int i = 0; i < t->ndev; i++)
        for (int j = 0; j < t->ndev; j++) {
            struct topo_link *l = &t->link[i][j];
            const char *bad = m[i].why[0] ? m[i].why : m[j].why;
            if (i == j)
                continue;
            if (bad[0]) {
                snprintf(l->staged_why, sizeof l->staged_why, "GPU%d: %s", m[i].why[0] ? i : j,
                         bad);
                snprintf(l->peer_why, sizeof l->peer_why, "%s", l->staged_why);
                step += l->can_peer ? 2 : 1;
                continue;
            }
            cu->ctx_set_current(m[i].ctx);
            if (progress)
                progress(++step, steps, i, j, "staged");
            time_copies(m[i].stream, m[j].buf, m[j].ctx, m[i].buf, m[i].ctx, bytes, reps,
                        &l->staged_gbps, l->staged_why, sizeof l->staged_why);
            if (progress && l->can_peer)
                progress(++step, steps, i, j, "peer");
            measure_peer(l, &m[i], &m[j], bytes, reps);
        }
    for (int i = 0; i < t->ndev; i++) {
        if (m[i].ctx == NULL || cu->ctx_set_current(m[i].ctx) != CUDA_SUCCESS)
            continue;
        if (m[i].stream != NULL)
            cu->stream_destroy(m[i].stream);
        if (m[i].buf != 0)
            cu->mem_free(m[i].buf);
    }
    t->measured = true;
    t->bytes = bytes;
    t->reps = reps;
    return true;
}
