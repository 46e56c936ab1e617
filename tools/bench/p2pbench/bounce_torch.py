#!/usr/bin/env python3
"""bounce_torch: PyTorch's x.cpu().to('cuda:1') (a device-to-host copy into a
fresh pageable tensor, then host-to-device to another GPU), the pattern
the shim turns into a device snapshot and one peer copy; with one GPU
x.cpu().to('cuda:0') (the same-GPU bounce: a snapshot and a device copy),
and the lines say which.

  bounce_torch.py [--mib 256] [--reps 9] [--check] [--json FILE] [--label TEXT]

--check: prints only the SHA-256 of the results (the same with and without
the shim: tests compare the two runs) and exits 1 on a mismatch with the
source; timings go to stderr. Otherwise prints the median time of
x.cpu().to('cuda:1'), and of x.cpu() alone followed by a CPU read of it.
Exit 77 without torch or a GPU.
"""
import argparse
import ctypes
import hashlib
import json
import statistics
import sys
import time

SKIP = 77

p = argparse.ArgumentParser()
p.add_argument("--mib", type=int, default=256)
p.add_argument("--reps", type=int, default=9)
p.add_argument("--check", action="store_true")
p.add_argument("--json")
p.add_argument("--label", default="")
args = p.parse_args()

try:
    import torch
except Exception as e:  # ImportError or a broken install
    print("bounce_torch: SKIP: torch not importable (%s)" % e.__class__.__name__)
    sys.exit(SKIP)
if not torch.cuda.is_available():
    print("bounce_torch: SKIP: no CUDA device")
    sys.exit(SKIP)
# The destination: the second GPU, or with one GPU the same one.
DST = "cuda:1" if torch.cuda.device_count() >= 2 else "cuda:0"
if DST == "cuda:0":
    print("bounce_torch: two-GPU part skipped: 1 GPU (x.cpu().to('cuda:1') needs two); "
          "x.cpu().to('cuda:0') instead")


def sha256(t):
    c = t.detach().to("cpu").contiguous()
    return hashlib.sha256(ctypes.string_at(c.data_ptr(), c.numel() * c.element_size())).hexdigest()


numel = (args.mib << 20) // 4
g = torch.Generator(device="cuda:0")
g.manual_seed(20240611)
x = torch.randint(-2**31, 2**31 - 1, (numel,), dtype=torch.int32, device="cuda:0", generator=g)
torch.cuda.synchronize(0)
want = sha256(x)


def bounce():
    torch.cuda.synchronize(0)
    torch.cuda.synchronize(DST)
    t0 = time.perf_counter()
    y = x.cpu().to(DST)
    torch.cuda.synchronize(DST)
    return y, (time.perf_counter() - t0) * 1e3


def read_between():
    t0 = time.perf_counter()
    h = x.cpu()
    s = int(h.sum())          # the CPU reads every element
    y = h.to(DST)
    torch.cuda.synchronize(DST)
    return y, s, (time.perf_counter() - t0) * 1e3


bad = 0
times, times_read = [], []
for r in range(args.reps + 1):
    y, ms = bounce()
    y2, s, ms2 = read_between()
    if r == 0:       # warm-up; also the check
        same = sha256(y) == want and sha256(y2) == want and s == int(x.sum())
        if not same:
            bad = 1
        if args.check:
            print("x.cpu().to('%s') sha256=%s equal=%s" % (DST, sha256(y), sha256(y) == want))
            print("read in between sha256=%s equal=%s" % (sha256(y2), sha256(y2) == want))
        continue
    times.append(ms)
    times_read.append(ms2)
    del y, y2

med, med_read = statistics.median(times), statistics.median(times_read)
line = ("bounce_torch %s %d MiB: x.cpu().to('%s') %.2f ms; with a CPU read in between "
        "%.2f ms" % (args.label, args.mib, DST, med, med_read))
print(line, file=sys.stderr if args.check else sys.stdout)
if args.json:
    with open(args.json, "a") as f:
        f.write(json.dumps({"bench": "bounce_torch", "label": args.label, "mib": args.mib,
                            "dst": DST, "ms": med, "ms_read_between": med_read,
                            "ok": not bad}) + "\n")
sys.exit(1 if bad else 0)
