"""FSDP2 + torch.compile as torch's tutorials write it: fully_shard each block and the root, then compile
each block (`model.blocks[i] = torch.compile(model.blocks[i])`) or the root. Run on 2 ranks (gloo)."""
import os

import torch
from torch.distributed.fsdp import FSDPModule, fully_shard
from torch.distributed.tensor import DTensor


class Block(torch.nn.Module):
    def __init__(self, width):
        super().__init__()
        self.norm = torch.nn.LayerNorm(width)
        self.up = torch.nn.Linear(width, 2 * width)
        self.down = torch.nn.Linear(2 * width, width)

    def forward(self, x):
        return x + self.down(torch.nn.functional.gelu(self.up(self.norm(x))))


class Net(torch.nn.Module):
    def __init__(self, width=16, depth=3):
        super().__init__()
        self.embed = torch.nn.Linear(8, width)
        self.blocks = torch.nn.ModuleList(Block(width) for _ in range(depth))
        self.head = torch.nn.Linear(width, 1)

    def forward(self, x):
        h = self.embed(x)
        for block in self.blocks:
            h = block(h)
        return self.head(h).pow(2).mean()


def structure(model):
    names = {m: n for n, m in model.named_modules()}
    fsdp = [m for m in names if isinstance(m, FSDPModule)]
    root_state = model._get_fsdp_state()
    return {"fsdp": sorted(names[m] for m in fsdp),
            "roots": sorted(names[m] for m in fsdp if m._get_fsdp_state()._is_root),
            "managed_by_root": len(root_state._state_ctx.all_states)}


def main(rank, world_size, what="blocks"):
    torch.manual_seed(0)
    model = Net()
    for block in model.blocks:
        fully_shard(block)
    fully_shard(model)
    if what == "blocks":
        for i in range(len(model.blocks)):
            model.blocks[i] = torch.compile(model.blocks[i])
        run = model
    else:
        run = torch.compile(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    out = {"losses": [], "sharded_after_forward": [], "grads": None}
    for step in range(2):
        g = torch.Generator().manual_seed(100 * step + rank)
        loss = run(torch.randn(4, 8, generator=g))
        out["sharded_after_forward"].append(sorted(n for n, p in model.named_parameters() if isinstance(p, DTensor)))
        loss.backward()
        opt.step()
        opt.zero_grad()
        out["losses"].append(loss.detach())
    out["structure"] = structure(model)
    out["params"] = [p.full_tensor().detach() for p in model.parameters()]
    return out
