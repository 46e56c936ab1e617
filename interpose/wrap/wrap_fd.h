/* The close family's wrappers (wrap_fd.c): the program's close, close_range,
 * closefrom, dup2, dup3 and fcntl see no descriptor of the shim's
 * (fd_guard.h, docs/SECURITY.md "The shim's descriptors"). The same
 * answers for the system calls made through syscall() (wrap_syscall.c). */
#ifndef P2PSHIM_WRAP_FD_H
#define P2PSHIM_WRAP_FD_H

#include <stdbool.h>

/* close: -1 with EBADF for the shim's descriptor, as for one never open;
 * anything else is closed as without the shim. */
int fd_close(int fd);

/* close_range: every descriptor in [first, last] closed but the shim's
 * (the range split around them); the answer libc's would give. */
int fd_close_range(unsigned first, unsigned last, int flags);

/* dup3 (dup2 when two): onto a number of the shim's, the shim's
 * descriptor moves first; from one, EBADF. */
int fd_dup_onto(int oldfd, int newfd, int flags, bool two);

#endif
