/* The process's place in a job, as its launcher (torchrun, mpirun, srun,
 * ...) told it through the environment. Read by the run log's header, the
 * log prefix and file-name templates (%r), in the shim and the launcher. */
#ifndef P2PSHIM_JOB_H
#define P2PSHIM_JOB_H

/* Each is the first non-empty value of its variables, or NULL:
 *   rank:       RANK, OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID
 *   local rank: LOCAL_RANK, OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID,
 *               SLURM_LOCALID
 *   world size: WORLD_SIZE, OMPI_COMM_WORLD_SIZE, PMI_SIZE, SLURM_NTASKS
 * The value is getenv's: valid until the environment changes. */
const char *job_rank(void);
const char *job_local_rank(void);
const char *job_world_size(void);

#endif
