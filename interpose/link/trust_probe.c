#include "trust_probe.h"

#include <string.h>

#include "driver.h"
#include "own_device.h"
#include "shim_alloc.h"

/* Runs fn-like driver work with ctx current, the caller's restored. */
static bool push(CUcontext ctx)
{
    const struct driver_api *d = driver_api();
    return d->ctx_push != NULL && d->ctx_pop != NULL && d->ctx_push(ctx) == CUDA_SUCCESS;
}

static void pop(void)
{
    CUcontext popped = NULL;
    driver_api()->ctx_pop(&popped);
}

static bool alloc_in(CUcontext ctx, CUdeviceptr *out)
{
    const struct driver_api *d = driver_api();
    if (d->mem_alloc == NULL || !push(ctx))
        return false;
    bool ok = d->mem_alloc(out, TRUST_PROBE_BYTES) == CUDA_SUCCESS;
    if (ok && !own_device_add(*out, TRUST_PROBE_BYTES)) {
        if (d->mem_free != NULL)
            d->mem_free(*out);
        ok = false;
    }
    pop();
    if (!ok)
        *out = 0;
    return ok;
}

bool trust_probe_open(struct trust_probe *p, CUcontext from_ctx, CUcontext to_ctx)
{
    const struct driver_api *d = driver_api();
    memset(p, 0, sizeof *p);
    p->from_ctx = from_ctx;
    p->to_ctx = to_ctx;
    p->outcome = TRUST_PROBE_UNCHECKED;
    if (d->stream_create == NULL || d->event_create == NULL || d->event_record[0] == NULL ||
        d->event_synchronize == NULL || d->event_elapsed == NULL ||
        d->memcpy_peer_async == NULL || d->memcpy_htod_async == NULL ||
        d->memcpy_dtoh_async == NULL || d->stream_synchronize == NULL)
        return false;
    p->host = shim_alloc(TRUST_PROBE_BYTES);
    if (p->host == NULL || !alloc_in(from_ctx, &p->from_buf) || !alloc_in(to_ctx, &p->to_buf))
        return false;
    if (!push(from_ctx))
        return false;
    bool ok = d->stream_create(&p->stream, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS &&
              d->event_create(&p->start, CU_EVENT_DEFAULT) == CUDA_SUCCESS &&
              d->event_create(&p->end, CU_EVENT_DEFAULT) == CUDA_SUCCESS;
    pop();
    return ok;
}

void trust_probe_close(struct trust_probe *p)
{
    const struct driver_api *d = driver_api();
    if (p->from_ctx != NULL && push(p->from_ctx)) {
        if (p->start != NULL && d->event_destroy != NULL)
            d->event_destroy(p->start);
        if (p->end != NULL && d->event_destroy != NULL)
            d->event_destroy(p->end);
        if (p->stream != NULL && d->stream_destroy != NULL)
            d->stream_destroy(p->stream);
        own_device_remove(p->from_buf);
        if (p->from_buf != 0 && d->mem_free != NULL)
            d->mem_free(p->from_buf);
        pop();
    }
    own_device_remove(p->to_buf);
    if (p->to_buf != 0 && d->mem_free != NULL && push(p->to_ctx)) {
        d->mem_free(p->to_buf);
        pop();
    }
    if (p->host != NULL)
        shim_free(p->host, TRUST_PROBE_BYTES);
    p->host = NULL;
}

/* A pattern no stuck, zeroed, shifted or repeated transfer reproduces. */
static void fill(unsigned char *buf, uint64_t seed)
{
    uint64_t x = seed | 1;
    for (size_t i = 0; i + 8 <= TRUST_PROBE_BYTES; i += 8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        memcpy(buf + i, &x, 8);
    }
}

static size_t count_wrong(const unsigned char *got, uint64_t seed, unsigned char *scratch)
{
    size_t wrong = 0;
    const size_t chunk = 4096;
    uint64_t x = seed | 1;
    for (size_t off = 0; off < TRUST_PROBE_BYTES; off += chunk) {
        for (size_t i = 0; i < chunk; i += 8) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            memcpy(scratch + i, &x, 8);
        }
        for (size_t i = 0; i < chunk; i++)
            wrong += got[off + i] != scratch[i];
    }
    return wrong;
}

/* One copy src -> dst on the shim's stream between two events; the
 * milliseconds it took, or a negative value when the driver refused. */
static double timed_copy(struct trust_probe *p, CUdeviceptr dst, CUcontext dst_ctx,
                         CUdeviceptr src, CUcontext src_ctx)
{
    const struct driver_api *d = driver_api();
    float ms = -1.0f;
    bool ok = d->event_record[0](p->start, p->stream) == CUDA_SUCCESS &&
              d->memcpy_peer_async(dst, dst_ctx, src, src_ctx, TRUST_PROBE_BYTES, p->stream) ==
                  CUDA_SUCCESS &&
              d->event_record[0](p->end, p->stream) == CUDA_SUCCESS &&
              d->event_synchronize(p->end) == CUDA_SUCCESS &&
              d->event_elapsed(&ms, p->start, p->end) == CUDA_SUCCESS;
    return ok ? (double)ms : -1.0;
}

static bool staged(void *arg)
{
    struct trust_probe *p = arg;
    const struct driver_api *d = driver_api();
    if (!push(p->from_ctx))
        return false;
    fill(p->host, 0x5eed0001u);
    bool ok = d->memcpy_htod_async(p->from_buf, p->host, TRUST_PROBE_BYTES, p->stream) ==
              CUDA_SUCCESS;
    /* The first copy between two devices pays set-up costs: untimed. */
    ok = ok && timed_copy(p, p->to_buf, p->to_ctx, p->from_buf, p->from_ctx) >= 0.0;
    p->staged_ms = ok ? timed_copy(p, p->to_buf, p->to_ctx, p->from_buf, p->from_ctx) : -1.0;
    pop();
    return p->staged_ms >= 0.0;
}

/* Pattern seed from src_buf through the link to dst_buf, back to the host,
 * compared: the wrong bytes, or SIZE_MAX when the driver refused. */
static size_t one_way(struct trust_probe *p, CUdeviceptr dst_buf, CUcontext dst_ctx,
                      CUdeviceptr src_buf, CUcontext src_ctx, uint64_t seed)
{
    const struct driver_api *d = driver_api();
    fill(p->host, seed);
    bool ok =
        d->memcpy_htod_async(src_buf, p->host, TRUST_PROBE_BYTES, p->stream) == CUDA_SUCCESS &&
        d->memcpy_peer_async(dst_buf, dst_ctx, src_buf, src_ctx, TRUST_PROBE_BYTES,
                             p->stream) == CUDA_SUCCESS;
    memset(p->host, 0, TRUST_PROBE_BYTES);
    ok = ok &&
         d->memcpy_dtoh_async(p->host, dst_buf, TRUST_PROBE_BYTES, p->stream) == CUDA_SUCCESS &&
         d->stream_synchronize(p->stream) == CUDA_SUCCESS;
    unsigned char scratch[4096];
    return ok ? count_wrong(p->host, seed, scratch) : SIZE_MAX;
}

static bool linked(void *arg)
{
    struct trust_probe *p = arg;
    if (!push(p->from_ctx))
        return false;
    size_t there = one_way(p, p->to_buf, p->to_ctx, p->from_buf, p->from_ctx, 0x5eed0002u);
    size_t back = there == SIZE_MAX ? SIZE_MAX
                                    : one_way(p, p->from_buf, p->from_ctx, p->to_buf,
                                              p->to_ctx, 0x5eed0003u);
    p->peer_ms = back == SIZE_MAX
                     ? -1.0
                     : timed_copy(p, p->to_buf, p->to_ctx, p->from_buf, p->from_ctx);
    pop();
    if (there == SIZE_MAX || back == SIZE_MAX || p->peer_ms < 0.0) {
        p->outcome = TRUST_PROBE_UNCHECKED;
        return false;
    }
    p->wrong_bytes = there + back;
    if (p->wrong_bytes != 0)
        p->outcome = TRUST_PROBE_WRONG_BYTES;
    else if (p->peer_ms * TRUST_PROBE_MARGIN_TENTHS > p->staged_ms * 10)
        p->outcome = TRUST_PROBE_SLOWER;
    else
        p->outcome = TRUST_PROBE_PASSED;
    return p->outcome == TRUST_PROBE_PASSED;
}

struct peer_check trust_probe_check(struct trust_probe *p)
{
    struct peer_check c = {staged, linked, p};
    return c;
}
