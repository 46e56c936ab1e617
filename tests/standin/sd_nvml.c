/* A stand-in NVML (libnvidia-ml.so.1) for the CPU tier: the handful of
 * functions the shim's link check calls, for the stand-in driver's
 * devices, named by the PCI bus ids it gives ("0000:10:00.0" for device
 * 0, then one more per ordinal). Environment, read at each nvmlInit_v2:
 *   STANDIN_DEVICES=N            as the driver's (default 2)
 *   STANDIN_NVML_P2P_NO=a:b,...  P2P read and write status between a and b
 *                                (either way) is NVML_P2P_STATUS_NOT_SUPPORTED
 *   STANDIN_NVML_P2P_ERROR=a:b,...  nvmlDeviceGetP2PStatus between a and b
 *                                fails with NVML_ERROR_UNKNOWN
 * Every call is counted; STANDIN_NVML_REPORT=1 prints the count of
 * nvmlDeviceGetP2PStatus calls on stdout at unload. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "nvml_abi.h"

#define MAX_DEV 8

static struct nvml_device {
    int ordinal;
} devices[MAX_DEV];
static int ndev, inits;
static unsigned char refuse[MAX_DEV][MAX_DEV], fail[MAX_DEV][MAX_DEV];
static unsigned long p2p_calls;

static void read_pairs(const char *var, unsigned char out[MAX_DEV][MAX_DEV])
{
    memset(out, 0, MAX_DEV * MAX_DEV);
    const char *p = getenv(var);
    while (p != NULL && *p) {
        char *end;
        long a = strtol(p, &end, 10), b;
        if (end == p || *end != ':')
            break;
        b = strtol(end + 1, &end, 10);
        if (a >= 0 && a < MAX_DEV && b >= 0 && b < MAX_DEV)
            out[a][b] = out[b][a] = 1;
        p = *end == ',' ? end + 1 : "";
    }
}

nvmlReturn_t nvmlInit_v2(void)
{
    const char *n = getenv("STANDIN_DEVICES");
    ndev = n != NULL && atoi(n) > 0 ? atoi(n) : 2;
    ndev = ndev > MAX_DEV ? MAX_DEV : ndev;
    for (int i = 0; i < ndev; i++)
        devices[i].ordinal = i;
    read_pairs("STANDIN_NVML_P2P_NO", refuse);
    read_pairs("STANDIN_NVML_P2P_ERROR", fail);
    inits++;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlShutdown(void)
{
    if (inits == 0)
        return NVML_ERROR_UNINITIALIZED;
    inits--;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *bus, nvmlDevice_t *device)
{
    if (inits == 0)
        return NVML_ERROR_UNINITIALIZED;
    if (bus == NULL || device == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    for (int i = 0; i < ndev; i++) {
        char id[32];
        snprintf(id, sizeof id, "0000:%02X:00.0", 0x10 + (unsigned)i);
        if (strcasecmp(id, bus) == 0) {
            *device = &devices[i];
            return NVML_SUCCESS;
        }
    }
    return NVML_ERROR_NOT_FOUND;
}

nvmlReturn_t nvmlDeviceGetP2PStatus(nvmlDevice_t a, nvmlDevice_t b, int index, int *status)
{
    p2p_calls++;
    if (inits == 0)
        return NVML_ERROR_UNINITIALIZED;
    if (a == NULL || b == NULL || status == NULL || index < 0 || index > 4)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (fail[a->ordinal][b->ordinal])
        return NVML_ERROR_UNKNOWN;
    *status = refuse[a->ordinal][b->ordinal] ? NVML_P2P_STATUS_NOT_SUPPORTED : NVML_P2P_STATUS_OK;
    return NVML_SUCCESS;
}

__attribute__((destructor)) static void report(void)
{
    const char *r = getenv("STANDIN_NVML_REPORT");
    if (r != NULL && strcmp(r, "1") == 0)
        printf("standin-nvml: p2p_status_calls=%lu\n", p2p_calls);
}
