/* The devices of the run log's header (devinfo.h). Called when the log
 * starts, at the program's first recorded CUDA call: the driver is
 * initialised by then. Errors leave a member empty. */
#include "devinfo.h"

#include <stdio.h>
#include <string.h>

#include "driver.h"

static void uuid_text(const CUuuid *u, char *out, size_t len)
{
    const unsigned char *b = (const unsigned char *)u->bytes;
    snprintf(out, len,
             "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
             b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
             b[14], b[15]);
}

static void pci_text(PFN_cuDeviceGetAttribute_v2000 attr, CUdevice dev, char *out, size_t len)
{
    int domain, bus, device;
    if (attr == NULL || attr(&domain, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, dev) != CUDA_SUCCESS ||
        attr(&bus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, dev) != CUDA_SUCCESS ||
        attr(&device, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, dev) != CUDA_SUCCESS)
        return;
    snprintf(out, len, "%04x:%02x:%02x.0", (unsigned)domain & 0xffffu, (unsigned)bus & 0xffu,
             (unsigned)device & 0xffu);
}

int devinfo_list(struct devinfo *out, int max)
{
    const struct driver_api *api = driver_api();
    PFN_cuDeviceGetCount_v2000 count = api->device_get_count;
    PFN_cuDeviceGet_v2000 get = api->device_get;
    PFN_cuDeviceGetName_v2000 name = api->device_get_name;
    PFN_cuDeviceGetUuid_v11040 uuid = api->device_get_uuid_v2;
    PFN_cuDeviceGetAttribute_v2000 attr = api->device_get_attribute;
    if (uuid == NULL)
        uuid = api->device_get_uuid;
    int n = 0;
    if (count == NULL || get == NULL || count(&n) != CUDA_SUCCESS || n < 0)
        return -1;
    if (n > max)
        n = max;
    for (int i = 0; i < n; i++) {
        struct devinfo *d = &out[i];
        CUdevice dev;
        CUuuid u;
        memset(d, 0, sizeof *d);
        d->ordinal = i;
        if (get(&dev, i) != CUDA_SUCCESS)
            continue;
        if (name == NULL || name(d->name, (int)sizeof d->name, dev) != CUDA_SUCCESS)
            d->name[0] = '\0';
        d->name[sizeof d->name - 1] = '\0';
        if (uuid != NULL && uuid(&u, dev) == CUDA_SUCCESS)
            uuid_text(&u, d->uuid, sizeof d->uuid);
        pci_text(attr, dev, d->pci, sizeof d->pci);
    }
    return n;
}
