"""What the PyTorch GPU tests share: importing torch or skipping, timing a
step, and the exact digests of a tensor's bytes that their transcripts
print (equal with and without the shim, so the test can compare the two
runs)."""
import ctypes
import hashlib
import sys
import time

SKIP = 77


def skip(test, why):
    print("%s: SKIP: %s" % (test, why))
    sys.exit(SKIP)


def import_torch(test, devices, why):
    """torch, or exit 77 (skip) without it or with fewer than `devices`
    GPUs (`why` says so)."""
    try:
        import torch
    except Exception as e:  # ImportError, or a broken install
        skip(test, "torch not importable (%s)" % e.__class__.__name__)
    if not torch.cuda.is_available() or torch.cuda.device_count() < devices:
        skip(test, why)
    return torch


def timed(test, label, fn):
    """fn() with every GPU idle before and after; its time to stderr (for
    the eye: never in the compared transcript)."""
    import torch
    def sync():
        for d in range(torch.cuda.device_count()):
            torch.cuda.synchronize(d)
    sync()
    t0 = time.perf_counter()
    out = fn()
    sync()
    print("%s: %-28s %.3f ms" % (test, label, (time.perf_counter() - t0) * 1e3), file=sys.stderr)
    return out


def sha256(t):
    """SHA-256 of a tensor's bytes, read on the host without numpy."""
    c = t.detach().to("cpu").contiguous()
    raw = ctypes.string_at(c.data_ptr(), c.numel() * c.element_size())
    return hashlib.sha256(raw).hexdigest()


def exact_sum(t):
    """Exact integer sum (int64 accumulation of int32 values cannot wrap)."""
    import torch
    return int(t.to(torch.int64).sum().item())
