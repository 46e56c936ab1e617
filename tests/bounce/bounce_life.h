/* Host-bounced copies, lifetimes and limits (bounce_life): what its two
 * files share. */
#ifndef BOUNCE_LIFE_H
#define BOUNCE_LIFE_H

#include "bt_common.h"

/* bounce_life.c: the buffers every case copies through (src0 on device 0,
 * dst1 on device 1, 32 MiB each), the pattern the last D2H wrote and the
 * bytes the device must hold after the next H2D. */
extern CUdeviceptr src0, dst1;
extern unsigned char *pat, *want;

/* Prints the host's and the device's checksums of n bytes. */
void line(const char *what, const unsigned char *h, size_t n, CUdeviceptr d);
/* D2H of n pattern bytes of seed from src0 into h (ctx 0 current). */
void d2h_only(unsigned char *h, size_t n, unsigned seed);
/* The same after a staging round over h: the evidence the shim needs. */
void d2h(unsigned char *h, size_t n, unsigned seed);
/* H2D of h to dst1; the device must hold want afterwards, and so the host. */
void h2d_check(const unsigned char *h, size_t n, const char *what);

/* bounce_life_limits.c: the device's memory limits, the default minimums,
 * mremap of a lazy buffer, and a process that never bounces. */
void case_oom(void);
void case_minimums(void);
void case_mremap(void);
void case_never(void);

#endif
