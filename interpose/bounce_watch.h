/* Host bounces in observe mode: the shim changes nothing, but recognises a
 * host-to-device copy whose source a device-to-host copy from a GPU filled
 * (the program moving data between GPUs through host memory) and reports
 * it: an event "would-bounce" in the run log (from, to, bytes) and an exit
 * summary line per device pair. A candidate only: without write tracking
 * the shim cannot tell whether the CPU changed the buffer in between.
 * Thread-safe; one relaxed load while nothing was recorded. */
#ifndef P2PSHIM_BOUNCE_WATCH_H
#define P2PSHIM_BOUNCE_WATCH_H

#include <stddef.h>

/* A D2H of bytes from device src_dev into host. */
void watch_d2h(const void *host, size_t bytes, int src_dev);
/* An H2D of bytes from host to device dst_dev. */
void watch_h2d(const void *host, size_t bytes, int dst_dev);
/* free(host): entries starting there are forgotten. */
void watch_forget(const void *host);
/* "summary bounce-candidates pair=A->B pairs=N bytes=B" lines. */
void watch_report(void);
/* After fork (the child starts empty). */
void watch_reset(void);

#endif
