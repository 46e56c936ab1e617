/* libFuzzer target: the bandwidth table reader (report_topo.c), through a
 * file as p2pshim report reads it; every link it keeps is looked up. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz_file.h"
#include "report_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64];
    int fd = fuzz_file(data, size, path, sizeof path);
    if (fd < 0)
        return 0;
    struct report_topo t;
    char err[512];
    int rc = report_topo_load(path, &t, err, sizeof err);
    if (rc == 0) {
        for (int i = 0; i < t.nlinks; i++)
            if (report_topo_link(&t, t.links[i].src, t.links[i].dst) == NULL)
                abort();
        report_topo_free(&t);
    } else if (rc != -1 && rc != 1) {
        abort();
    }
    close(fd);
    return 0;
}
