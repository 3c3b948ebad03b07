# (c, fixed: backends/grad_regions.py) aot_eager: a global written under torch.inference_mode(), then a backward() in the same frame:
# the compiled call raises "Inference tensors cannot be saved for backward"; eagerly nothing raises.
import torch

FUZZ_BACKEND = "aot_eager"
FUZZ_CALLS = 1
G_T = torch.arange(4.0)


def f(w):
    with torch.inference_mode():
        G_T[1:3] = G_T[:2].clone()
    ((w * torch.randn(4, 4)).sum() + w.pow(2).sum()).backward()


def make_inputs(call):
    return (torch.randn(4, 4, generator=torch.Generator().manual_seed(call)).requires_grad_(),), {}
