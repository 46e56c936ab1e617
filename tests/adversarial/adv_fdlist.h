/* The descriptors a program did not open, as a sandbox or a daemon finds
 * them: every number from 3 in /proc/self/fd. Shared by the CPU cases
 * (adv_fds.c) and their GPU twins (tests/gpu/adversarial_gpu.cu); C and
 * C++. */
#ifndef ADV_FDLIST_H
#define ADV_FDLIST_H

#include <dirent.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

/* Up to max descriptors from 3 into fds (character devices only, when
 * devices_only: the driver's kind); their count. */
static inline int adv_fds_listed(int *fds, int max, bool devices_only)
{
    int count = 0;
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    while (d != NULL && (e = readdir(d)) != NULL && count < max) {
        int fd = atoi(e->d_name);
        struct stat st;
        if (fd > 2 && fd != dirfd(d) &&
            (!devices_only || (fstat(fd, &st) == 0 && S_ISCHR(st.st_mode))))
            fds[count++] = fd;
    }
    if (d != NULL)
        closedir(d);
    return count;
}

/* /dev/null put over every descriptor from 3 (dup2); false when /dev/null
 * cannot be opened or a dup2 fails. */
static inline bool adv_dup2_sweep(void)
{
    int fds[1024];
    int count = adv_fds_listed(fds, 1024, false);
    int nul = open("/dev/null", O_RDWR);
    bool ok = nul >= 0;
    for (int i = 0; ok && i < count; i++)
        if (fds[i] != nul)
            ok = dup2(nul, fds[i]) == fds[i];
    if (nul >= 0)
        close(nul);
    return ok;
}

#endif
