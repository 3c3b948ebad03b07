"""DDP + torch.compile as torch's docs write it: wrap in DistributedDataParallel, then compile the DDP
module. Run on 2 ranks (gloo)."""
import torch
from torch.nn.parallel import DistributedDataParallel as DDP


def main(rank, world_size):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
    ddp = DDP(model, bucket_cap_mb=0.001)
    compiled = torch.compile(ddp)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    losses = []
    for step in range(3):
        g = torch.Generator().manual_seed(10 * step + rank)
        loss = compiled(torch.randn(4, 8, generator=g)).square().mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
        losses.append(loss.detach())
    return {"losses": losses, "params": [p.detach().clone() for p in model.parameters()]}
