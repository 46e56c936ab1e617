/* The link between two GPUs of this host as NVML names it, for the
 * report's estimate (report_price_est.c): the launcher's NVML reader
 * (topo_nvml.c) over the two GPUs alone, found by their PCI bus ids. The
 * report's own sources build without NVML (tests/report, tests/fuzz): they
 * reach this through a weak declaration, absent there. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report_internal.h"
#include "topo_internal.h"

static bool parse_pci(const char *pci, struct topo_device *d)
{
    unsigned domain, bus, device, function;
    if (sscanf(pci, "%x:%x:%x.%x", &domain, &bus, &device, &function) != 4)
        return false;
    snprintf(d->pci, sizeof d->pci, "%s", pci);
    d->domain = domain;
    d->bus = bus;
    d->device = device;
    return true;
}

bool report_nvml_link(const char *pci_a, const char *pci_b, char *type, size_t len,
                      int *nvlinks)
{
    struct topo *t = calloc(1, sizeof *t);
    bool ok = t && parse_pci(pci_a, &t->dev[0]) && parse_pci(pci_b, &t->dev[1]);
    if (ok) {
        t->ndev = 2;
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 2; j++)
                t->link[i][j].nvlinks = -1;
        ok = topo_nvml_links(t) && t->link[0][1].type[0];
    }
    if (ok) {
        snprintf(type, len, "%s", t->link[0][1].type);
        *nvlinks = t->link[0][1].nvlinks;
    }
    free(t);
    return ok;
}
