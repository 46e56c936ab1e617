/* Aliases of the program's mapped (cuMemCreate + cuMemMap) memory.
 *
 * Context peer access does not reach mapped memory: a cross-GPU copy of it
 * is staged unless the memory's own access list (cuMemSetAccess) names the
 * other device. The shim never changes that list on the program's mapping
 * (cuMemGetAccess would answer differently). Instead it maps the same
 * physical allocation a second time, at an address of its own, and grants
 * access on that second mapping only:
 *
 *   cuMemRetainAllocationHandle(the program's mapping)
 *   cuMemAddressReserve(the mapping's size)      the alias's address range
 *   cuMemMap(alias, size, the program's offset into the allocation, handle)
 *   cuMemRelease(handle)                          the alias mapping holds it
 *   cuMemSetAccess(alias, size, {owner, the devices the copy needs})
 *
 * Which devices an alias grants (docs/POOLS.md): a copy engine of the
 * device that issues the copy reads the source and writes the destination,
 * so that device must reach both ends; the shim grants the owner (read and
 * write: it may issue later copies), the copy's other device and the
 * issuing device, and adds a device to an alias's list when a later copy
 * needs it.
 *
 * A copy whose bytes span several of the program's mappings that lie end
 * to end (ggml's VMM pool grows its one reservation by mapping a new
 * allocation after the last; its buffers straddle the seam) gets one alias
 * of that run: one reservation of the run's size, each mapping's
 * allocation mapped at the same offset from it as in the program's range,
 * one cuMemSetAccess over all of it. The copy then stays one driver call.
 *
 * One record per mapping of the program's (cuMemMap); one alias per run
 * of mappings that a cross-GPU copy touched (a run of one in the common
 * case), made on the first such copy; an alias of a longer run serves
 * copies inside it. An alias goes when the program unmaps, or frees the
 * reservation of, any mapping it covers, when a device it serves is
 * reset, and at exit. One lock, held across the driver calls that make or
 * widen an alias (once per run and device), never across the program's
 * copy. */
#ifndef P2PSHIM_VMM_ALIAS_H
#define P2PSHIM_VMM_ALIAS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shim_cuda.h"

/* The program mapped [base, base+size) to offset of an allocation of
 * device (a successful cuMemMap). */
void vmm_alias_note_map(uintptr_t base, size_t size, size_t offset, int device);

/* The program unmapped, or freed the reservation of, [base, base+size)
 * (after the driver said yes): the records and aliases there go. */
void vmm_alias_note_unmap(uintptr_t base, size_t size);

/* The address, in the alias of the run of mappings that holds
 * [ptr, ptr+bytes), of ptr; the alias made or widened so that every device
 * in the bit mask devices may read and write it. 0 when there is none to
 * be had (no record, a byte outside the run of mappings end to end, or a
 * driver call refused: remembered per run, not retried). */
CUdeviceptr vmm_alias_translate(CUdeviceptr ptr, size_t bytes, uint32_t devices);

/* The end of the program's mapping that holds ptr, or 0 when the shim
 * knows none there (to walk a copy's range mapping by mapping). */
CUdeviceptr vmm_alias_mapping_end(CUdeviceptr ptr);

/* A device was reset: aliases of its memory, or granted to it, go (their
 * records stay: the next copy makes them again). */
void vmm_alias_forget_device(int device);

/* How many aliases exist now (tests and the summary). */
size_t vmm_alias_count(void);

#endif
