# (b, fixed: translate/values/base.py Const) eager backend: x.shape[0] became dynamic at call 1, then iterating over x specialized it;
# the size folded as a constant was still the conversion's torch.SymInt, passed to a callee that breaks and added into a global
# counter: G_COUNT became "a SymInt object" where eager has 8 (seed 712629).
import torch

FUZZ_BACKEND = "eager"
FUZZ_CALLS = 3
G_COUNT = 2


def helper_count(step):
    global G_COUNT
    G_COUNT += step
    return G_COUNT


def f(x):
    rows = torch.stack([row * 2 for row in x])
    helper_count(x.shape[0])
    return rows


def make_inputs(call):
    return (torch.randn((2, 4, 3)[call], 4, generator=torch.Generator().manual_seed(call)),), {}
