"""harm_train: the train row of harm_torch.py, a small image classifier
trained the way PyTorch's tutorials write it: a DataLoader with worker
processes (forked each epoch) and pinned batches, each batch moved with
.cuda(non_blocking=True), loss.item() every step, and an evaluation whose
predictions come back with .cpu(). The job never copies host bytes back
to a GPU that it copied down: the shim can only cost it.

Figures (ms): ms, the median step (the first step of each epoch left
out); first_ms, the first epoch's first step (its workers' start
included); mean_ms, the whole run (epochs and evaluations) per step.
Correct when every batch reached the GPU whole (checksums of images and
labels on the GPU against the CPU's) and the losses are finite."""
import math
import statistics
import time

IMAGES, SIDE, BATCH, EPOCHS, WORKERS = 2048, 64, 128, 3, 2


def data(torch):
    g = torch.Generator().manual_seed(20261201)
    x = torch.randint(0, 256, (IMAGES, 3, SIDE, SIDE), dtype=torch.uint8, generator=g)
    y = torch.randint(0, 10, (IMAGES,), dtype=torch.int64, generator=g)
    return torch.utils.data.TensorDataset(x, y)


def model(torch):
    nn = torch.nn
    torch.manual_seed(7)
    return nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
        nn.Conv2d(32, 64, 3, stride=2, padding=1), nn.BatchNorm2d(64), nn.ReLU(),
        nn.Conv2d(64, 128, 3, stride=2, padding=1), nn.BatchNorm2d(128), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(128, 10)).cuda()


def step(torch, net, opt, x, y):
    x = x.cuda(non_blocking=True).float().div_(255)
    y = y.cuda(non_blocking=True)
    loss = torch.nn.functional.cross_entropy(net(x), y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    return loss.item(), x, y


def evaluate(torch, net, ds):
    """Predictions of the first 512 images, brought back with .cpu()."""
    net.eval()
    with torch.no_grad():
        x = ds.tensors[0][:512].cuda().float().div_(255)
        pred = net(x).argmax(1).cpu()
    net.train()
    return float((pred == ds.tensors[1][:512]).float().mean())


def run(torch, emit):
    ds = data(torch)
    net = model(torch)
    opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    # Kernels chosen and compiled before the clock starts, in both arms.
    warm = ds.tensors[0][:BATCH], ds.tensors[1][:BATCH]
    step(torch, net, opt, *warm)
    torch.cuda.synchronize()
    loader = torch.utils.data.DataLoader(
        ds, batch_size=BATCH, shuffle=True, num_workers=WORKERS, pin_memory=True,
        generator=torch.Generator().manual_seed(11))
    steps, losses, first = [], [], None
    sums_cpu = [0, 0]
    sums_gpu = torch.zeros(2, dtype=torch.int64, device="cuda")
    t_run = time.perf_counter()
    for epoch in range(EPOCHS):
        t_prev = time.perf_counter()
        for i, (x, y) in enumerate(loader):
            c0 = time.perf_counter()
            sums_cpu[0] += int(x.sum(dtype=torch.int64))
            sums_cpu[1] += int(y.sum())
            checksum = time.perf_counter() - c0
            loss, xg, yg = step(torch, net, opt, x, y)
            t1 = time.perf_counter()
            # A step: waiting for its batch, moving it, training on it
            # (loss.item() waits for the GPU); the CPU checksum left out.
            ms = (t1 - t_prev - checksum) * 1e3
            t_prev = t1
            if i == 0 and epoch == 0:
                first = ms
            elif i:
                steps.append(ms)
            losses.append(loss)
            sums_gpu[0] += xg.mul(255).round_().sum(dtype=torch.int64)
            sums_gpu[1] += yg.sum()
        evaluate(torch, net, ds)
    total = (time.perf_counter() - t_run) * 1e3
    nsteps = len(losses)
    ok = sums_gpu.tolist() == sums_cpu and all(math.isfinite(v) for v in losses)
    return emit("train", IMAGES * 3 * SIDE * SIDE, ok, ms=statistics.median(steps),
                first_ms=first, mean_ms=total / nsteps)
