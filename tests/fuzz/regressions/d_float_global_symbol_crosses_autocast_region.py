# (d, fixed: backends/passes/state_regions.py) aot_eager + autocast, fuzz seeds 221248 and 406757: a float global changed each call becomes a dynamic float (an unbacked SymFloat, `.item()` of a 0-dim tensor input) and is read on both sides of an autocast block; the region after the block took the symbol as an input AOT autograd could not bind: "backend failed: KeyError: zuf0", eager fallback.
# A region reading a data-dependent symbol an earlier region made now runs as its fx code.
import torch

FUZZ_BACKEND = "aot_eager"
FUZZ_CALLS = 3

G_SCALE = 1.5


def f(x):
    global G_SCALE
    G_SCALE *= 0.5
    with torch.autocast("cpu", dtype=torch.bfloat16):
        ac = torch.mv(x, torch.linspace(-1, 1, 4))
    return ac.float(), x - G_SCALE


def make_inputs(call):
    g = torch.Generator().manual_seed(2212480 + call)
    return (torch.randn(4, 4, generator=g),), {}
