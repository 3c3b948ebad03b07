"""Rank functions of the DDP tests (run by launch.run_ranks in spawned processes)."""
import copy

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import framejit


class Stack(torch.nn.Module):
    """Four linear layers (4 x 64 x 64 floats: about 16 KiB each) and one frozen parameter."""

    def __init__(self, width=64, depth=4):
        super().__init__()
        self.layers = torch.nn.ModuleList(torch.nn.Linear(width, width) for _ in range(depth))
        self.scale = torch.nn.Parameter(torch.ones(width), requires_grad=False)
        self.head = torch.nn.Linear(width, 1)

    def forward(self, x):
        x = x * self.scale
        for layer in self.layers:
            x = torch.tanh(layer(x))
        return self.head(x).sum()


class Counting:
    """A user backend: counts its calls and compiles with `inner`."""

    def __init__(self, inner="eager"):
        from framejit.backends import lookup_backend
        self.inner = lookup_backend(inner)
        self.calls = 0
        self.ops = []

    def __call__(self, gm, example_inputs):
        self.calls += 1
        self.ops.append(sum(1 for n in gm.graph.nodes if n.op not in ("placeholder", "output")))
        return self.inner(gm, example_inputs)


def _data(rank, step, width=64):
    g = torch.Generator().manual_seed(1000 * step + rank)
    return torch.randn(8, width, generator=g)


def ddp_against_eager(rank, world_size, bucket_cap_mb, inner, steps=3, explain=True, ignore=()):
    """Train an eager DDP and a framejit-compiled DDP of the same model side by side; every step, the
    loss, every gradient and every parameter after the optimizer step must be equal."""
    torch.manual_seed(0)
    base = Stack()
    if ignore:                    # parameters DDP leaves alone (no bucket, no all-reduce)
        base._ddp_params_and_buffers_to_ignore = list(ignore)
    eager = DDP(copy.deepcopy(base), bucket_cap_mb=bucket_cap_mb)
    ddp = DDP(copy.deepcopy(base), bucket_cap_mb=bucket_cap_mb)
    counting = Counting(inner)
    compiled = framejit.compile(ddp, backend=counting)
    opts = [torch.optim.SGD(m.parameters(), lr=0.1) for m in (eager, ddp)]
    diffs = []
    for step in range(steps):
        x = _data(rank, step)
        losses = []
        for model, opt in zip((eager, compiled), opts):
            opt.zero_grad()
            loss = model(x)
            loss.backward()
            losses.append(loss.detach())
        for (name, p), q in zip(eager.module.named_parameters(), ddp.module.parameters()):
            if (p.grad is None) != (q.grad is None) or (p.grad is not None and not torch.allclose(p.grad, q.grad, atol=1e-6)):
                diffs.append(f"step {step}: grad of {name}")
        if not torch.allclose(losses[0], losses[1], atol=1e-6):
            diffs.append(f"step {step}: loss {losses[0]} vs {losses[1]}")
        for opt in opts:
            opt.step()
        for (name, p), q in zip(eager.module.named_parameters(), ddp.module.parameters()):
            if not torch.allclose(p, q, atol=1e-6):
                diffs.append(f"step {step}: parameter {name}")
    # the gradients were all-reduced: every rank holds the same ones
    grads = torch.cat([p.grad.flatten() for n, p in ddp.module.named_parameters() if p.grad is not None and n not in ignore])
    gathered = [torch.empty_like(grads) for _ in range(world_size)]
    dist.all_gather(gathered, grads)
    same_on_ranks = all(torch.equal(gathered[0], g) for g in gathered)
    reasons = []
    if explain:           # a third DDP of the model, through explain() (eager backend: the same cuts)
        reasons = [b.reason for b in framejit.explain(DDP(copy.deepcopy(base), bucket_cap_mb=bucket_cap_mb))(x).break_reasons]
    from framejit.distributed import ddp_buckets
    return {"diffs": diffs, "backend_calls": counting.calls, "ops": counting.ops, "same_on_ranks": same_on_ranks,
            "buckets": [len(b) for b in ddp_buckets(ddp)],
            "reducer_buckets": _names(eager, [b.parameters() for b in eager.reducer._get_zeros_like_grad_buckets()]),
            "our_buckets": _names(eager, ddp_buckets(eager)),
            "break_reasons": reasons}


def _names(ddp, buckets):
    name = {id(p): n for n, p in ddp.module.named_parameters()}
    return [[name[id(p)] for p in b] for b in buckets]
