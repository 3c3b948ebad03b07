# (c, fixed: backends/aot.py keep_none_grads) aot_eager: a parameter only a dead op reads gets a .grad after backward() once an int
# argument became dynamic (call 1): the graph's SymInt input has no edge on the autograd Function, so the None-gradient
# hook's "one edge per graph input" check failed and it was left off (seeds 601488, 704888, 706892).
import torch
from torch import nn

FUZZ_BACKEND = "aot_eager"
FUZZ_CALLS = 2


class Entry(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("steps", torch.zeros(()))

    def forward(self, lin, w, n):
        self.steps.add_(1.0)
        unused = torch.einsum("ij,j->i", lin.weight, lin.bias)
        return w * 2.0 + n


f = Entry()


def make_inputs(call):
    lin = nn.Linear(4, 4)
    w = torch.randn(4, 4, generator=torch.Generator().manual_seed(call)).requires_grad_()
    return (lin, w, (3, 0)[call]), {}
