/* The runner's own cases: programs that behave differently with the shim
 * on purpose, so that adv_run.sh is seen to tell each way of failing
 * (CMakeLists.txt checks its message for each). No CUDA call.
 *
 *   same     the same line in both runs (passes)
 *   differs  a different line with the shim
 *   hangs    the run with the shim never ends
 *   crashes  the run with the shim aborts (SIGABRT)
 *   exits    the run with the shim exits 3 */
#define _GNU_SOURCE
#include "adv_common.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int run(int argc, char **argv)
{
    (void)argc;
    adv_say("the same line");
    if (!adv_shim || strcmp(argv[0], "same") == 0)
        return 0;
    if (strcmp(argv[0], "differs") == 0)
        adv_say("a line only the shim's run prints");
    if (strcmp(argv[0], "hangs") == 0)
        for (;;)
            pause();
    if (strcmp(argv[0], "crashes") == 0)
        abort();
    return strcmp(argv[0], "exits") == 0 ? 3 : 0;
}

int main(int argc, char **argv)
{
    static const struct adv_case cases[] = {
        {"same", run}, {"differs", run}, {"hangs", run}, {"crashes", run}, {"exits", run},
    };
    return adv_main(argc, argv, cases, (int)(sizeof cases / sizeof cases[0]));
}
