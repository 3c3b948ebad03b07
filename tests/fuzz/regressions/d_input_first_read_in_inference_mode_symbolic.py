# (d, fixed: translate/graph/builder.py) aot_eager, fuzz seeds 401440 and 401527: an input first read inside an inference_mode block, at the conversion with a symbolic batch size (the second call); its fake was made in inference mode, an inference tensor, and the region after the block could not set requires_grad on it: "backend failed: Setting requires_grad=True on inference tensor outside InferenceMode", eager fallback.
# An input's fake is an inference tensor only when the real input is.
import torch
import torch.nn.functional as F

FUZZ_BACKEND = "aot_eager"
FUZZ_CALLS = 3


def f(x, w):
    with torch.inference_mode():
        t = (F.linear(x, w) * 0.25).sum(-1)
    return torch.zeros(x.shape[0], 4) * x, t


def make_inputs(call):
    g = torch.Generator().manual_seed(4014400 + call)
    return (torch.randn((2, 4, 5)[call], 4, generator=g).requires_grad_(), torch.randn(4, 4, generator=g)), {}
