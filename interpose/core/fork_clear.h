/* Zeroing in a forked child: a child copies every page it writes, and
 * most of what the shim's modules reset there is zero already (and the
 * pages of it never touched), so it writes only where a byte is set. */
#ifndef P2PSHIM_FORK_CLEAR_H
#define P2PSHIM_FORK_CLEAR_H

#include <stddef.h>
#include <string.h>

/* Zeroes [p, p + n) only if a byte there is set. The child has one
 * thread: plain reads are safe. */
static inline void shim_zero_if_set(void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        if (b[i] != 0) {
            memset(p, 0, n);
            return;
        }
}

#endif
