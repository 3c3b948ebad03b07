"""DDP step time on 2 ranks (CPU, gloo): eager DDP, framejit-compiled DDP (graph cut at DDP's gradient
buckets, and uncut for comparison) and torch.compile'd DDP (TorchDynamo's DDPOptimizer), side by side.

    .venv/bin/python bench/ddp.py [--steps 20] [--width 512] [--depth 8] [--bucket-mb 2] [--backend aot_eager]

Each variant trains its own copy of an MLP (depth x Linear(width, width) + tanh) with SGD; a step is
zero_grad, forward, backward (DDP's all-reduces), optimizer step, timed on rank 0 between barriers, after
warm-up steps that compile. Printed: median and best step time per variant. With a backend that traces
forward and backward as one unit (aot_eager, inductor), an uncut graph produces all gradients at the end of
its backward, so every all-reduce waits for all of it; cut at the buckets, each bucket's all-reduce starts
when its piece's backward ends. (On 2 CPU ranks sharing cores the all-reduce competes with the compute it
overlaps, so the gain is smaller than on GPUs.)
"""
import argparse
import copy
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def make_model(width, depth):
    import torch

    class MLP(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = torch.nn.ModuleList(torch.nn.Linear(width, width) for _ in range(depth))

        def forward(self, x):
            for layer in self.layers:
                x = torch.tanh(layer(x))
            return x.pow(2).mean()
    return MLP()


def rank_main(rank, world_size, store_path, args, out):
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    import framejit
    torch.set_num_threads(1)
    dist.init_process_group("gloo", store=dist.FileStore(store_path, world_size), rank=rank, world_size=world_size)
    torch.manual_seed(0)
    base = make_model(args.width, args.depth)
    cap = args.bucket_mb
    variants = {
        "eager DDP": DDP(copy.deepcopy(base), bucket_cap_mb=cap),
        "framejit DDP (cut at buckets)": framejit.compile(DDP(copy.deepcopy(base), bucket_cap_mb=cap),
                                                          backend=args.backend),
        "framejit DDP (one graph)": framejit.compile(DDP(copy.deepcopy(base), bucket_cap_mb=10_000),
                                                     backend=args.backend),
        "torch.compile DDP": torch.compile(DDP(copy.deepcopy(base), bucket_cap_mb=cap), backend=args.backend),
    }
    g = torch.Generator().manual_seed(rank)
    x = torch.randn(args.batch, args.width, generator=g)
    results = {}
    for name, model in variants.items():
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        times = []
        for step in range(args.warmup + args.steps):
            dist.barrier()
            start = time.perf_counter()
            opt.zero_grad()
            model(x).backward()
            opt.step()
            dist.barrier()
            if step >= args.warmup:
                times.append(time.perf_counter() - start)
        results[name] = (statistics.median(times), min(times))
    if rank == 0:
        out.put(results)
    dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--width", type=int, default=512)
    parser.add_argument("--depth", type=int, default=8)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--bucket-mb", type=float, default=2.0)
    parser.add_argument("--backend", default="aot_eager", help="for framejit and torch.compile alike")
    args = parser.parse_args()
    import torch.multiprocessing as mp
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    with tempfile.TemporaryDirectory() as tmp:
        procs = [ctx.Process(target=rank_main, args=(r, 2, os.path.join(tmp, "store"), args, out)) for r in range(2)]
        for p in procs:
            p.start()
        results = out.get(timeout=1800)
        for p in procs:
            p.join()
    print(f"DDP step time, 2 ranks (gloo, CPU), MLP {args.depth} x Linear({args.width}), batch {args.batch}, "
          f"bucket_cap_mb={args.bucket_mb}, backend={args.backend}, {args.steps} steps after {args.warmup} warm-up")
    print(f"{'variant':34s} {'median ms':>10s} {'best ms':>10s}")
    for name, (median, best) in results.items():
        print(f"{name:34s} {median * 1e3:10.2f} {best * 1e3:10.2f}")


if __name__ == "__main__":
    main()
