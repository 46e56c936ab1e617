"""A two-rank PyTorch job for torchrun_report.sh: each rank copies a tensor
between GPUs (with two GPUs: cuda:RANK to the other one) and through the
host (GPU to host, host to GPU), checks the bytes, and prints what it
copied as one line "copied rank=R cross=BYTES host=BYTES" for the check."""
import os
import sys

import torch

rank = int(os.environ["RANK"])
n = torch.cuda.device_count()
mine = torch.device("cuda", rank % n)
nbytes = (4 + rank) << 20          # rank 0: 4 MiB, rank 1: 5 MiB: told apart
x = torch.arange(nbytes // 4, dtype=torch.int32, device=mine)
cross = 0
if n >= 2:
    other = torch.device("cuda", (rank + 1) % n)
    y = x.to(other)                # a copy between GPUs
    torch.cuda.synchronize(other)
    if not torch.equal(y.cpu(), x.cpu()):
        sys.exit("rank %d: cross-GPU copy differs" % rank)
    cross = nbytes
h = x.cpu()                        # GPU to host
z = h.to(mine)                     # host to GPU
torch.cuda.synchronize(mine)
if not torch.equal(z, x):
    sys.exit("rank %d: round trip differs" % rank)
print("copied rank=%d cross=%d host=%d" % (rank, cross, nbytes), flush=True)
