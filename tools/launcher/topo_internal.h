/* p2pshim topo, inside: the facts gathered (struct topo) and the two
 * sources that fill them, the CUDA driver (topo_cuda.c) and NVML
 * (topo_nvml.c), both loaded at run time: the launcher links neither. */
#ifndef P2PSHIM_TOPO_INTERNAL_H
#define P2PSHIM_TOPO_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "config.h" /* P2PSHIM_MAX_DEVICES */

#define TOPO_MAX_DEVICES P2PSHIM_MAX_DEVICES

struct topo_device {
    char name[256];
    char pci[32]; /* "0000:19:00.0" */
    char uuid[48]; /* "GPU-xxxxxxxx-...", "" where the driver cannot tell */
    unsigned domain, bus, device;
};

/* One ordered pair, src to dst. Bandwidths are GB/s (1e9 bytes per
 * second); a negative value means not measured or not measurable ("n/a"). */
struct topo_link {
    bool can_peer;          /* cuDeviceCanAccessPeer(src, dst) */
    char type[16];          /* "NVLink", "NVSwitch", "PIX", ...; "" unknown */
    int nvlinks;            /* NVLinks from src reaching dst; -1 unknown */
    double staged_gbps;     /* cuMemcpyPeerAsync without peer access */
    double peer_gbps;       /* the same with peer access enabled */
    /* Why a figure is n/a ("no peer access", "cannot allocate", "device
     * busy", ...); "" where there is a figure or none was asked for. */
    char staged_why[64], peer_why[64];
};

struct topo {
    int ndev;
    int driver_version; /* cuDriverGetVersion, e.g. 13000 */
    struct topo_device dev[TOPO_MAX_DEVICES];
    struct topo_link link[TOPO_MAX_DEVICES][TOPO_MAX_DEVICES];
    bool nvml;            /* link types and counts came from NVML */
    char nvml_note[160];  /* why not, when !nvml */
    bool measured;
    size_t bytes;         /* per copy, when measured */
    int reps;             /* timed copies per figure */
};

/* Loads libcuda.so.1 (dlopen + cuGetProcAddress_v2), initialises it and
 * fills ndev, driver_version, dev[] and link[][].can_peer; every
 * bandwidth is set to -1 and every nvlinks to -1; dev[].uuid where the
 * driver has cuDeviceGetUuid. On failure returns
 * false with a one-line reason in why. */
bool topo_cuda_query(struct topo *t, char *why, size_t why_len);

/* Reports progress: step (1-based) of steps, pair src->dst, what
 * ("staged" or "peer"). */
typedef void (*topo_progress_fn)(int step, int steps, int src, int dst, const char *what);

/* Measures every ordered pair of t (after topo_cuda_query): staged
 * bandwidth without peer access, then, where can_peer, peer bandwidth with
 * access enabled from src's primary context to dst's (disabled again
 * afterwards, so that no figure sees another pair's access). Timed with
 * CUDA events. A figure that cannot be had stays -1 with the reason in
 * the link's staged_why/peer_why: no peer access, a device whose buffer
 * cannot be allocated, a copy or an enable refused (device busy, ...),
 * no timer (no cuEventElapsedTime, a zero time). False with a reason in
 * why only when no device can be used at all. */
bool topo_cuda_measure(struct topo *t, size_t bytes, int reps, topo_progress_fn progress,
                       char *why, size_t why_len);

/* Fills link[][].type and nvlinks through NVML (libnvidia-ml.so.1, loaded
 * at run time), matching devices by PCI address. Returns false when NVML
 * is unavailable, with the reason in t->nvml_note; never fails otherwise
 * (pairs NVML cannot describe keep type "" and nvlinks -1). */
bool topo_nvml_links(struct topo *t);

#endif
