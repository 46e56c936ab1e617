#!/usr/bin/env python3
"""torch_alloc: PyTorch under the allocator configuration given in
PYTORCH_CUDA_ALLOC_CONF (expandable segments map their memory with
cuMemMap and grant peers themselves; backend:cudaMallocAsync allocates
from the driver's stream-ordered pools), moving tensors the ways programs
do: between two GPUs directly (x.to('cuda:1'), PyTorch enabling peer
access itself), through the host (x.cpu().to('cuda:1')), back, and on one
GPU (x.clone(), x.cpu().cuda()), over tensors of several sizes allocated
and freed in a loop so that the allocator reuses and grows its segments.

Prints only results that do not depend on timing or addresses (exact sums
and SHA-256 of every result), so the output with and without the shim must
be identical (the test compares); timings go to stderr, for the eye.
Exit: 0 every copy equal to its source, 1 a mismatch, 77 no torch or no
GPU. With one GPU the cross-GPU copies are left out (and said so).
"""
import os
import sys

from torch_common import exact_sum, import_torch, sha256, timed as timed_step

SEED = 20261201
SIZES = (1 << 10, 1 << 20, 3 << 20, 16 << 20, 64 << 20)  # int32 elements


torch = import_torch("torch_alloc", 1, "no CUDA device")


def timed(label, fn):
    return timed_step("torch_alloc", label, fn)


def main():
    conf = os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "")
    two = torch.cuda.device_count() >= 2
    print("torch_alloc: PYTORCH_CUDA_ALLOC_CONF=%s; %s" %
          (conf or "(default)", "two GPUs" if two else "one GPU: cross-GPU copies left out"))
    gen = torch.Generator(device="cuda:0")
    gen.manual_seed(SEED)
    ok = True
    for rnd in range(3):  # the allocator's second and third rounds reuse segments
        for n in SIZES:
            x = torch.randint(-2**31, 2**31 - 1, (n,), dtype=torch.int32, device="cuda:0",
                              generator=gen)
            results = [("x.clone()", timed("clone %d" % n, lambda: x.clone())),
                       ("x.cpu().cuda()", timed("cpu().cuda() %d" % n, lambda: x.cpu().cuda()))]
            if two:
                y = timed("to(cuda:1) %d" % n, lambda: x.to("cuda:1"))
                results += [("x.to(cuda:1)", y),
                            ("x.cpu().to(cuda:1)",
                             timed("cpu().to(cuda:1) %d" % n, lambda: x.cpu().to("cuda:1"))),
                            ("y.to(cuda:0)", timed("back %d" % n, lambda: y.to("cuda:0")))]
            want = sha256(x)
            for name, t in results:
                same = sha256(t) == want and exact_sum(t) == exact_sum(x)
                ok &= same
                print("torch_alloc: round %d n=%d %-20s sum=%d sha=%s %s" %
                      (rnd, n, name, exact_sum(t), sha256(t), "equal" if same else "MISMATCH"))
            del results, x
            if two:
                del y
    print("torch_alloc: %s" % ("all equal" if ok else "MISMATCH"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
