/* Control API of the stand-in CUDA driver (tests/standin, libcuda.so.1).
 *
 * The stand-in simulates STANDIN_DEVICES GPUs in host memory so that the
 * CPU-tier tests can drive the CUDA driver API without a GPU. These
 * functions are for test programs only: the shim never calls them, and a
 * program linked against them runs only on the stand-in.
 *
 * Environment, read at cuInit and again by standin_reload_config():
 *   STANDIN_DEVICES=N        number of devices, 1..8 (default 2)
 *   STANDIN_TOPOLOGY=T       full (default) | none | islands |
 *                            matrix:R0,R1,... (row i: N digits 0/1, digit j
 *                            says whether device i can access device j)
 *   STANDIN_MAX_PEERS=K      peers one context may enable (default 8); one
 *                            more gets CUDA_ERROR_TOO_MANY_PEERS
 *   STANDIN_FAIL_ENABLE=a:b,c:d  cuCtxEnablePeerAccess from a context of
 *                            device a to one of device b fails with
 *                            CUDA_ERROR_PEER_ACCESS_UNSUPPORTED although
 *                            cuDeviceCanAccessPeer says 1
 *   STANDIN_LINK_CORRUPT=a:b,...  a bad link: peer copies between devices
 *                            a and b (either way) land with some bytes
 *                            flipped; staged copies stay right
 *   STANDIN_LINK_SLOW=a:b,...     a slow link: in the time model, peer
 *                            copies between a and b run at 5 GB/s, staged
 *                            ones at 40 (see cuEventElapsedTime)
 *   STANDIN_ARENA_MB=M       device memory per device (default 256)
 *   STANDIN_LEAK_REPORT=1    at every context's end (cuCtxDestroy, a
 *                            primary reset or last release) and at unload,
 *                            one line on stdout: what is still alive there
 *                            (allocations by kind with bytes, streams the
 *                            program created, events), as standin_leak_report
 *
 * Time model: cuEventElapsedTime answers simulated milliseconds, the sum
 * of the async copies issued to the stream between the two records, each
 * 2 us plus its bytes at its path's speed (peer 400 GB/s, staged 40, to or
 * from the host 25, within a device 1000). Synchronous copies take no
 * simulated time.
 *
 * All functions are thread-safe and callable before cuInit. */
#ifndef P2PSHIM_STANDIN_H
#define P2PSHIM_STANDIN_H

#include <stdint.h>

#include <cuda.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Copy accounting. A copy (each batch element, each 2D/3D copy) is counted
 * once, when it is issued, in exactly one of the five classes below:
 *   peer:        memory of two different devices, and the pair may use the
 *                direct link: peer access enabled in either direction
 *                between the owning contexts, or (pool and cuMemMap memory)
 *                access granted to the other device (on every mapping
 *                the copy touches, when it runs over several);
 *   staged:      memory of two different devices otherwise;
 *   same_device: both sides on one device;
 *   h2d, d2h, h2h: host memory (pageable, pinned, registered or managed)
 *                on one or both sides. */
struct standin_stats {
    uint64_t peer_copies, peer_bytes;
    uint64_t staged_copies, staged_bytes;
    uint64_t same_device_copies, same_device_bytes;
    uint64_t h2d_copies, h2d_bytes;
    uint64_t d2h_copies, d2h_bytes;
    uint64_t h2h_copies, h2h_bytes;
    /* cuCtxEnablePeerAccess / cuCtxDisablePeerAccess calls, all and
     * successful ones (failed = calls - ok). */
    uint64_t peer_enable_calls, peer_enable_ok;
    uint64_t peer_disable_calls, peer_disable_ok;
    /* Queued async operations executed so far. */
    uint64_t ops_executed;
};

/* Copies the counters. */
void standin_get_stats(struct standin_stats *out);

/* Zeroes the counters, the per-name call counts and the lookup counts. */
void standin_reset_stats(void);

/* How many times the exported function of exactly this name was called
 * (directly, or through a pointer from cuGetProcAddress or dlsym: they are
 * the same function). Unknown names give 0. */
uint64_t standin_calls(const char *exact_name);

/* How many cuGetProcAddress / cuGetProcAddress_v2 lookups asked for this
 * symbol name (the name as passed, normally a base name). */
uint64_t standin_lookups(const char *symbol);

/* 1 if the driver state has peer access enabled from context `from` to
 * context `to` (cuCtxEnablePeerAccess(to) called with `from` current),
 * else 0. This is the true state, whatever a shim reports to the program. */
int standin_peer_enabled(CUcontext from, CUcontext to);

/* Number of async operations queued and not yet executed, all streams. */
uint64_t standin_pending_ops(void);

/* Executes every queued operation, in issue order. */
void standin_flush_all(void);

/* Ordinal of the device whose memory holds ptr (device, pool or mapped
 * memory), or -1 (host, managed or unknown memory). */
int standin_device_of(CUdeviceptr ptr);

/* How many successful calls changed the access list that governs ptr:
 * cuMemSetAccess calls covering the mapping that holds ptr, or
 * cuMemPoolSetAccess calls on the pool ptr was allocated from. 0 for any
 * other memory. A test asserts with it that nobody but the program
 * touched the access of the program's memory. */
uint64_t standin_access_grants(CUdeviceptr ptr);

/* Re-reads the STANDIN_* variables and resets everything: every context,
 * allocation, stream, event, pool, mapping and counter is dropped, and each
 * thread's context stack is emptied. The initialised state is kept: if
 * cuInit had succeeded, the new configuration is live at once. Handles from
 * before the reload are invalid afterwards. */
void standin_reload_config(void);

/* For a tool loaded through CUDA_INJECTION64_PATH (from its
 * InitializeInjection): from now on cuGetProcAddress hands out replacement
 * where it would hand out the export exact_name (dlsym is unchanged), as
 * the driver hands out a profiler's functions. *original receives the
 * export, for the tool to call. Returns 0, or -1 for an unknown name. */
int standin_inject(const char *exact_name, void *replacement, void **original);

/* For the stand-in CUPTI (libcupti.so, sd_cupti.c): api_enter is called
 * at the start of every exported driver function, on the calling thread,
 * before anything else (name: the exported name); copy_issued for every
 * copy as it is issued within it (path: its class, STANDIN_PATH_*, as the
 * counters above count it; the devices of its ends, -1 for host memory;
 * ns: its duration in the time model). NULL unsets. */
enum standin_path {
    STANDIN_PATH_PEER, STANDIN_PATH_STAGED, STANDIN_PATH_SAME_DEVICE,
    STANDIN_PATH_H2D, STANDIN_PATH_D2H, STANDIN_PATH_H2H
};
struct standin_observer {
    void (*api_enter)(const char *name);
    void (*copy_issued)(enum standin_path path, uint64_t bytes, int src_dev, int dst_dev,
                        uint64_t ns);
};
void standin_set_observer(const struct standin_observer *observer);

/* One line on stdout ("standin: live at WHEN: ..."): the allocations of
 * every kind (count and bytes), the created streams and the events alive
 * now. No addresses: runs with and without a shim compare line for line. */
void standin_leak_report(const char *when);

#ifdef __cplusplus
}
#endif

#endif /* P2PSHIM_STANDIN_H */
