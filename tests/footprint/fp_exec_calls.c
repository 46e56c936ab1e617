/* The three list-form execs with 100,000 arguments each, written out by
 * the preprocessor (a variadic call cannot be built at run time). Compiled
 * at -O0: an optimised build of these calls takes minutes. */
#include <unistd.h>

#include "fp_probe.h"

#define A1 FP_EXEC_ARG
#define A10 A1, A1, A1, A1, A1, A1, A1, A1, A1, A1
#define A100 A10, A10, A10, A10, A10, A10, A10, A10, A10, A10
#define A1K A100, A100, A100, A100, A100, A100, A100, A100, A100, A100
#define A10K A1K, A1K, A1K, A1K, A1K, A1K, A1K, A1K, A1K, A1K
#define A100K A10K, A10K, A10K, A10K, A10K, A10K, A10K, A10K, A10K, A10K

_Static_assert(FP_EXEC_ARGS == 100000, "A100K writes 100,000 arguments");

int fp_execl(const char *self)
{
    return execl(self, self, A100K, (char *)NULL);
}

int fp_execlp(const char *self)
{
    return execlp(self, self, A100K, (char *)NULL);
}

int fp_execle(const char *self, char *const envp[])
{
    return execle(self, self, A100K, (char *)NULL, envp);
}
