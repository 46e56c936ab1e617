#!/usr/bin/env python3
"""harm_torch: harmbench's main rows as PyTorch programs write them; one
JSON line per row and size on stdout (cudart "torch"), then one line of
what the process holds at its end. harm_run.py runs it without and with
the shim.

  harm_torch.py --rows ROW,... [--sizes 4M,16M,64M,256M] [--loop-mib 256]
                [--rounds 5] [--label TEXT]
  harm_torch.py --probe      one line with the number of CUDA devices

Rows that never copy host bytes back to a GPU:
  cpu_sum      x.cpu().sum() (a fresh pageable tensor, read by the CPU), ms;
               copy_ms: the x.cpu() part alone (medians of 7)
  pinned_copy  pinned.copy_(x) into one pinned tensor, 64 MiB, 10 times, ms
  train        a small classifier trained as the tutorials write it (a
               DataLoader with workers and pinned batches, loss.item() each
               step, predictions back with .cpu()): harm_train.py
Loops (first_ms: round 1, steady_ms: median of rounds 2..N), run in the
order given, each on its own source tensor (all kept alive, so none
reuses another's device memory):
  loop.cpu_read_cuda  h = x.cpu(); h.sum(); h.cuda()  (the CPU reads between)
  loop.cpu_cuda       x.cpu().cuda()                  (same GPU)
  loop.cpu_to1        x.cpu().to('cuda:1')            (needs two GPUs)
  loop.refill         a pinned tensor relays GPU data (h.copy_(x); y = h.cuda()),
                      then a loader refills it from a CPU tensor (h.copy_(src));
                      steady_ms: both, refill_ms: the refill alone (medians of
                      rounds 2..N), first_refill_ms: round 1's
Before each repetition the source changes (x += 1, not timed); every result
is compared with the source (sums, or torch.equal on the GPU). Exit 77
without torch or a GPU, 1 on a wrong result, 2 bad arguments.
"""
import argparse
import json
import os
import statistics
import sys
import time

SKIP = 77
MIB = 1 << 20
ROWS = ("cpu_sum", "pinned_copy", "train", "cpu_read_cuda", "cpu_cuda", "cpu_to1", "refill")
LOOPS = ("cpu_read_cuda", "cpu_cuda", "cpu_to1", "refill")


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--rows", default="cpu_sum,pinned_copy")
    p.add_argument("--sizes", default="4M,16M,64M,256M")
    p.add_argument("--loop-mib", type=int, default=256)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--label", default="")
    p.add_argument("--probe", action="store_true")
    a = p.parse_args()
    a.rows = a.rows.split(",")
    a.sizes = [int(s[:-1]) * MIB if s[-1] in "Mm" else int(s) for s in a.sizes.split(",")]
    if any(r not in ROWS for r in a.rows) or a.rounds < 2:
        p.error("rows: %s; rounds >= 2" % ",".join(ROWS))
    return a


try:
    import torch
except Exception as e:  # ImportError or a broken install
    print("harm_torch: SKIP: torch not importable (%s: %s)" % (e.__class__.__name__, e))
    sys.exit(SKIP)

args = parse_args()
if not torch.cuda.is_available():
    print("harm_torch: SKIP: no CUDA device")
    sys.exit(SKIP)
if args.probe:
    print(json.dumps({"bench": "harm", "row": "torch.devices",
                      "count": torch.cuda.device_count(), "torch": torch.__version__}))
    sys.exit(0)


def emit(row, nbytes, ok, **metrics):
    line = {"bench": "harm", "row": "torch." + row, "cudart": "torch", "label": args.label,
            "bytes": nbytes, "ok": bool(ok)}
    line.update({k: round(v, 4) for k, v in metrics.items()})
    print(json.dumps(line), flush=True)
    if not ok:
        print("harm_torch: WRONG RESULT in %s (%d bytes)" % (row, nbytes), file=sys.stderr)
    return ok


def source(nbytes, device="cuda:0"):
    g = torch.Generator(device=device)
    g.manual_seed(20240611 + nbytes)
    return torch.randint(-2**31, 2**31 - 1, (nbytes // 4,), dtype=torch.int32, device=device,
                         generator=g)


def new_round(x):
    """A new content for x (not timed); its sum as the GPU computes it."""
    x.add_(1)
    torch.cuda.synchronize()
    return int(x.sum())


def row_cpu_sum():
    ok = True
    for n in args.sizes:
        x, t, tcopy, right = source(n), [], [], True
        for _ in range(7):
            want = new_round(x)
            t0 = time.perf_counter()
            h = x.cpu()
            t1 = time.perf_counter()
            got = int(h.sum())
            t.append((time.perf_counter() - t0) * 1e3)
            tcopy.append((t1 - t0) * 1e3)
            right &= got == want
            del h
        ok &= emit("cpu_sum", n, right, ms=statistics.median(t),
                   copy_ms=statistics.median(tcopy))
        del x
    return ok


def row_pinned_copy():
    n = 64 * MIB
    x, t = source(n), []
    pinned = torch.empty(n // 4, dtype=torch.int32, pin_memory=True)
    for _ in range(10):
        new_round(x)
        t0 = time.perf_counter()
        pinned.copy_(x)
        t.append((time.perf_counter() - t0) * 1e3)
    ok = int(pinned.sum()) == int(x.sum()) and int(pinned[-1]) == int(x[-1])
    return emit("pinned_copy", n, ok, ms=statistics.median(t))


def loop(row, step, check, device="cuda:0"):
    """Rounds of step(x) -> result, timed to completion; check(x, result,
    want) compares it with the source, not timed."""
    n = args.loop_mib * MIB
    x, t, ok = source(n), [], True
    keep.append(x)
    for _ in range(args.rounds):
        want = new_round(x)
        t0 = time.perf_counter()
        result = step(x)
        torch.cuda.synchronize(device)
        t.append((time.perf_counter() - t0) * 1e3)
        ok &= check(x, result, want)
        del result
    return emit("loop." + row, n, ok, first_ms=t[0], steady_ms=statistics.median(t[1:]))


def row_refill():
    """The pinned batch of a loader that also relays GPU data: h.copy_(x);
    y = h.cuda(), then h.copy_(src) from a pageable CPU tensor (the next
    batch, changed before each round, not timed). y is compared with x
    each round; h with src after the last refill (a CPU read of h between
    rounds would be a use of the buffer no loader makes)."""
    n = args.loop_mib * MIB
    x = source(n)
    keep.append(x)
    h = torch.empty(n // 4, dtype=torch.int32, pin_memory=True)
    src = torch.arange(n // 4, dtype=torch.int32)
    t, refill, ok = [], [], True
    for _ in range(args.rounds):
        new_round(x)
        src.add_(1)
        t0 = time.perf_counter()
        h.copy_(x)
        y = h.cuda()
        torch.cuda.synchronize()
        t1 = time.perf_counter()
        h.copy_(src)
        t2 = time.perf_counter()
        t.append((t2 - t0) * 1e3)
        refill.append((t2 - t1) * 1e3)
        ok &= torch.equal(y, x)
        del y
    ok &= torch.equal(h, src)
    return emit("loop.refill", n, ok, first_ms=t[0], steady_ms=statistics.median(t[1:]),
                refill_ms=statistics.median(refill[1:]), first_refill_ms=refill[0])


def cpu_read_cuda(x):
    h = x.cpu()
    s = int(h.sum())
    return s, h.cuda()


keep = []  # loop sources stay allocated: no loop reuses another's device memory
RUNNERS = {
    "cpu_sum": row_cpu_sum,
    "pinned_copy": row_pinned_copy,
    "train": lambda: __import__("harm_train").run(torch, emit),
    "cpu_read_cuda": lambda: loop("cpu_read_cuda", cpu_read_cuda,
                                  lambda x, r, want: r[0] == want and torch.equal(r[1], x)),
    "cpu_cuda": lambda: loop("cpu_cuda", lambda x: x.cpu().cuda(),
                             lambda x, y, want: torch.equal(y, x)),
    "cpu_to1": lambda: loop("cpu_to1", lambda x: x.cpu().to("cuda:1"),
                            lambda x, y, want: torch.equal(y, x.to("cuda:1")), "cuda:1"),
    "refill": row_refill,
}


def uffd_registrations():
    """Mappings registered with userfaultfd (VmFlags um/uw) and their bytes."""
    ranges = nbytes = size_kb = 0
    try:
        with open("/proc/self/smaps") as f:
            for text in f:
                if text.startswith("Size:"):
                    size_kb = int(text.split()[1])
                elif text.startswith("VmFlags:") and ({"um", "uw"} & set(text.split()[1:])):
                    ranges += 1
                    nbytes += size_kb * 1024
    except OSError:
        return -1, -1
    return ranges, nbytes


def uffd_descriptors():
    n = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            n += "userfaultfd" in os.readlink("/proc/self/fd/" + fd)
        except OSError:  # the descriptor listdir itself held
            pass
    return n


def main():
    ok = True
    if "cpu_to1" in args.rows and torch.cuda.device_count() < 2:
        args.rows.remove("cpu_to1")
        print("harm_torch: cpu_to1 skipped: one GPU", file=sys.stderr)
    for row in args.rows:
        ok &= bool(RUNNERS[row]())
    keep.clear()
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    devices = [0, 1] if "cpu_to1" in args.rows else [0]
    ranges, nbytes = uffd_registrations()
    loops = any(r in LOOPS for r in args.rows)
    print(json.dumps({"bench": "harm", "row": "torch." + ("loop." if loops else "") +
                      "+".join(args.rows),
                      "cudart": "torch", "label": args.label, "process": True,
                      "devices": devices,
                      "free_bytes": [torch.cuda.mem_get_info(d)[0] for d in devices],
                      "uffd_ranges": ranges, "uffd_bytes": nbytes,
                      "uffd_fds": uffd_descriptors(),
                      "ok": bool(ok)}), flush=True)
    return 0 if ok else 1


sys.exit(main())
