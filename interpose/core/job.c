/* The process's place in a job (job.h). */
#include "job.h"

#include <stddef.h>
#include <stdlib.h>

static const char *first_set(const char *const *vars, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const char *v = getenv(vars[i]);
        if (v != NULL && v[0] != '\0')
            return v;
    }
    return NULL;
}

#define FIRST_SET(...)                                                          \
    do {                                                                        \
        static const char *const vars[] = {__VA_ARGS__};                        \
        return first_set(vars, sizeof vars / sizeof vars[0]);                   \
    } while (0)

const char *job_rank(void)
{
    FIRST_SET("RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID");
}

const char *job_local_rank(void)
{
    FIRST_SET("LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID");
}

const char *job_world_size(void)
{
    FIRST_SET("WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS");
}
