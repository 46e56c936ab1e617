/* p2pshim trust: the link verdicts the shim keeps (docs/TRUST.md), shown,
 * cleared, or checked again. The file's format is interpose/include/trust_format.h,
 * shared with the shim; trust_cmd.c reads and clears the file,
 * trust_check.c asks the driver what this machine's devices are and runs
 * the check through the shim itself. */
#ifndef P2PSHIM_TRUST_CMD_H
#define P2PSHIM_TRUST_CMD_H

#include <stdbool.h>
#include <stddef.h>

#include "config.h" /* P2PSHIM_MAX_DEVICES */

/* What a verdict line is compared with: this machine now. */
struct trust_here {
    char boot[40];
    int iommu;
    char module[24];
    bool driver;             /* the CUDA driver answered; what follows is known */
    char driver_why[160];    /* why not, when !driver */
    int driver_version;
    int ndev;
    char uuid[P2PSHIM_MAX_DEVICES][48];
    char bus[P2PSHIM_MAX_DEVICES][24];
};

/* Fills *h: boot id, IOMMU state and module version always; the devices
 * and the driver version where libcuda.so.1 loads and initialises. */
void trust_here_query(struct trust_here *h);

/* p2pshim trust --check: runs the launcher itself under the shim
 * (library, the same search as run's) with P2PSHIM_TRUST=recheck, making
 * one small copy for each pair of devices that can peer, so that the
 * shim checks each link and replaces its verdict in the file. Returns
 * the exit status (0: every pair was copied, 1 otherwise, 3 no library). */
int trust_check_all(void);

/* The child's side of trust_check_all (argv "trust --probe-pairs"), under
 * the shim: the copies. Returns the exit status. */
int trust_probe_pairs(void);

/* Subcommand entry point, argv[0] "trust". */
int trust_main(int argc, char **argv);

#endif
