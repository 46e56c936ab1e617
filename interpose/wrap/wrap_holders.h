/* Holders of a page the shim cannot see (wrap_holders.c; bounce.h's
 * bounce_holder_range, docs/SECURITY.md "Holders of a page"): the calls
 * that make one, seen through syscall() too (wrap_syscall.c). */
#ifndef P2PSHIM_WRAP_HOLDERS_H
#define P2PSHIM_WRAP_HOLDERS_H

/* Before syscall(number, a[0..5]): io_uring_register of buffers,
 * vmsplice into a pipe, an open of /proc/self/mem or of an RDMA or VFIO
 * device mark what they will hold. Other calls: nothing. */
void holders_before_syscall(long number, const long a[6]);

/* After syscall(SYS_mincore, ...) answered r (wrap_holders.c's mincore). */
void holders_after_mincore(long r, const long a[6]);

#endif
