"""What the PyTorch GPU tests share: skipping, and the exact digests of a
tensor's bytes that their transcripts print (equal with and without the
shim, so the test can compare the two runs)."""
import ctypes
import hashlib
import sys

SKIP = 77


def skip(test, why):
    print("%s: SKIP: %s" % (test, why))
    sys.exit(SKIP)


def sha256(t):
    """SHA-256 of a tensor's bytes, read on the host without numpy."""
    c = t.detach().to("cpu").contiguous()
    raw = ctypes.string_at(c.data_ptr(), c.numel() * c.element_size())
    return hashlib.sha256(raw).hexdigest()


def exact_sum(t):
    """Exact integer sum (int64 accumulation of int32 values cannot wrap)."""
    import torch
    return int(t.to(torch.int64).sum().item())
