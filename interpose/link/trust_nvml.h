/* NVML's word on a link (docs/TRUST.md), where libnvidia-ml.so.1 can be
 * loaded: P2P read and write status between two GPUs named by PCI bus id.
 * NVML is loaded when first needed (after the program's CUDA is up) and
 * never unloaded. */
#ifndef P2PSHIM_TRUST_NVML_H
#define P2PSHIM_TRUST_NVML_H

#include <stddef.h>

enum trust_nvml_answer {
    TRUST_NVML_OK,       /* read and write status OK both ways */
    TRUST_NVML_NO,       /* a status other than OK: why says which */
    TRUST_NVML_UNKNOWN,  /* no NVML, no handle for a bus id, or a call failed */
};

enum trust_nvml_answer trust_nvml_p2p(const char *bus_a, const char *bus_b, char *why,
                                      size_t why_len);

#endif
