/* libFuzzer target: the run-log reader and the three renderers (text,
 * trace, html), through report_render as p2pshim report runs them, output
 * to /dev/null. A fixed bandwidth table (4 devices) is loaded so that the
 * savings estimate runs too. The reader's own messages (a malformed log)
 * are expected: stderr is pointed at /dev/null; sanitizer reports still
 * reach the real standard error. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_file.h"
#include "report.h"

static char topo_path[64];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    FILE *quiet = fopen("/dev/null", "w");
    if (quiet)
        stderr = quiet;
    static const char topo[] =
        "{\"format\":\"p2pshim-topo\",\"version\":1,\"links\":["
        "{\"src\":0,\"dst\":1,\"can_peer\":true,\"staged_gbps\":37.4,\"peer_gbps\":391.0},"
        "{\"src\":1,\"dst\":0,\"can_peer\":true,\"staged_gbps\":36.0,\"peer_gbps\":390.0},"
        "{\"src\":2,\"dst\":3,\"can_peer\":false,\"staged_gbps\":20.0},"
        "{\"src\":0,\"dst\":2,\"can_peer\":true,\"peer_gbps\":1e308}]}";
    if (fuzz_file((const uint8_t *)topo, sizeof topo - 1, topo_path, sizeof topo_path) < 0)
        abort();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64];
    int fd = fuzz_file(data, size, path, sizeof path);
    if (fd < 0)
        return 0;
    static const char *const formats[] = {"text", "trace", "html"};
    for (int i = 0; i < 3; i++) {
        int rc = report_render(path, "/dev/null", formats[i], topo_path);
        if (rc != REPORT_OK && rc != REPORT_FAILED)
            abort();
    }
    close(fd);
    return 0;
}
