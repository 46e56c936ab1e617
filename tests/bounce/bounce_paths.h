/* Host-bounced copies, the paths (bounce_paths): what its two files
 * share. */
#ifndef BOUNCE_PATHS_H
#define BOUNCE_PATHS_H

#include "bt_common.h"

#define PG 4096
#define N ((size_t)1 << 20) + 123 /* not a page multiple */

/* bounce_paths.c: sources and destinations on each device (2 MiB each),
 * and each device's flavours of the copy pair. */
extern CUdeviceptr src0, src1, dst0, dst1;
extern struct bt_flavour *fl0, *fl1;

/* A host buffer of n bytes (and 64 spare); aborts when there is none. */
unsigned char *buffer(size_t n);
/* Prints the checksums of n host bytes and of dn device bytes. */
void line(const char *what, const unsigned char *h, size_t n, CUdeviceptr d, size_t dn);

/* bounce_paths_parts.c: checks 2 to 6 and the small H2D. */
void loop(void);
void partial(void);
void writes(void);
void kernel_reads(void);
void small_h2d(void);
void overlapped(void);

#endif
