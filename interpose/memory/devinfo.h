/* The devices this process sees, named for the run log's header: name,
 * UUID and PCI bus id, asked of the driver the shim loaded (never through
 * the shim's own wrappers). Device ordinals differ between processes under
 * CUDA_VISIBLE_DEVICES; the UUID names the GPU across processes. */
#ifndef P2PSHIM_DEVINFO_H
#define P2PSHIM_DEVINFO_H

#define DEVINFO_MAX 16

struct devinfo {
    int ordinal;
    char name[128];
    char uuid[48]; /* "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"; "" unknown */
    char pci[16];  /* "0000:19:00.0"; "" unknown */
};

/* Fills out with up to max devices; returns how many, -1 when the driver
 * cannot say (not loaded, not initialised, or lacks cuDeviceGetCount). */
int devinfo_list(struct devinfo *out, int max);

#endif
