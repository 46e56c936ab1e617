/* Secure execution: pl_secure (built with PL_CLAIM_SECURE=1) and
 * pl_secure_plain (0). The program's own getauxval (exported, so the
 * shim's call binds to it, as to any program's definition) answers
 * AT_SECURE with PL_CLAIM_SECURE from the start (the shim may read its
 * configuration before main); everything else goes to glibc's. Under AT_SECURE the shim must pass every copy through (one
 * 0->1 copy stays staged, no peer enable); secure.sh checks that no
 * P2PSHIM_* variable had an effect (no file, no line). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "pl_common.h"

static const int claim_secure = PL_CLAIM_SECURE;

__attribute__((visibility("default"))) unsigned long getauxval(unsigned long type)
{
    if (type == AT_SECURE && claim_secure)
        return 1;
    unsigned long (*real)(unsigned long) =
        (unsigned long (*)(unsigned long))dlsym(RTLD_NEXT, "getauxval");
    return real != NULL ? real(type) : 0;
}

int main(int argc, char **argv)
{
    (void)argc, (void)argv;
    struct pl_env env;
    struct standin_stats s0, s1;
    pl_init(&env);
    CUdeviceptr a = pl_alloc(env.ctx[0], 1 << 16), b = pl_alloc(env.ctx[1], 1 << 16);
    pl_fill(env.ctx[0], a, 1 << 16, 3);
    pl_use(env.ctx[0]);
    pl_stats(&s0);
    PL_OK(cuMemcpyPeer(b, env.ctx[1], a, env.ctx[0], 1 << 16));
    pl_stats(&s1);
    pl_verify(env.ctx[1], b, 1 << 16, 3, "0->1 copy");
    int peer = s1.peer_copies > s0.peer_copies;
    PL_EXPECT(pl_shim_loaded(), "the shim is not loaded");
    PL_EXPECT(peer == !claim_secure, "copy went %s", peer ? "peer" : "staged");
    printf("pid=%ld path=%s\n", (long)getpid(), peer ? "peer" : "staged");
    return pl_finish(claim_secure ? "secure" : "plain");
}
