#!/usr/bin/env python3
"""torch_smoke: PyTorch moving a 256 MiB tensor between two GPUs, directly
(x.to('cuda:1'): PyTorch enables peer access itself) and through the host
(x.cpu().to('cuda:1')), and on one GPU through the host (x.cpu().cuda(),
the same-GPU bounce) and a copy on the device (x.clone()), with exact
checksums of the bytes. With one GPU the cross-GPU copies are skipped (and
said so).

Prints only results that do not depend on timing or addresses, so the
output with and without the shim must be identical (the test compares).
Timings go to stderr, for the eye. Exit: 0 done and every copy equal to the
source, 1 a mismatch, 77 no torch or no GPU.
"""
import sys

from torch_common import exact_sum, import_torch, sha256, timed as timed_step

NUMEL = 64 << 20            # int32 elements: 256 MiB
SEED = 20240611


torch = import_torch("torch_smoke", 1, "no CUDA device")


def timed(label, fn):
    return timed_step("torch_smoke", label, fn)


def main():
    gen = torch.Generator(device="cuda:0")
    gen.manual_seed(SEED)
    x = torch.randint(-2**31, 2**31 - 1, (NUMEL,), dtype=torch.int32,
                      device="cuda:0", generator=gen)
    rows, eq = [("x (cuda:0)", x)], {}
    s1 = timed("x.cpu().cuda()", lambda: x.cpu().cuda())
    s2 = timed("x.clone()", lambda: x.clone())
    rows += [("s1 = x.cpu().cuda()", s1), ("s2 = x.clone()", s2)]
    eq.update({"s1==x": torch.equal(s1, x), "s2==x": torch.equal(s2, x)})
    if torch.cuda.device_count() >= 2:
        y1 = timed("x.to('cuda:1')", lambda: x.to("cuda:1"))
        y2 = timed("x.cpu().to('cuda:1')", lambda: x.cpu().to("cuda:1"))
        z = timed("y1.to('cuda:0')", lambda: y1.to("cuda:0"))
        rows += [("y1 = x.to(cuda:1)", y1), ("y2 = x.cpu().to(cuda:1)", y2),
                 ("z = y1.to(cuda:0)", z)]
        eq.update({"y1==y2": torch.equal(y1, y2), "y1==x": torch.equal(y1.to("cuda:0"), x),
                   "z==x": torch.equal(z, x)})
    else:
        print("torch_smoke: two-GPU part skipped: 1 GPU (x.to('cuda:1') and "
              "x.cpu().to('cuda:1') need two)")
    for name, t in rows:
        print("torch_smoke: %-24s device=%s sum=%d sha256=%s"
              % (name, t.device, exact_sum(t), sha256(t)))
    for k, v in eq.items():
        print("torch_smoke: %s %s" % (k, v))
    ok = all(eq.values())
    print("torch_smoke: %s" % ("all equal" if ok else "MISMATCH"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
