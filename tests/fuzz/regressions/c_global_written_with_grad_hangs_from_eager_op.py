# (c, fixed: backends/passes/state_regions.py _inputs_given_history) aot_eager: a global written in place by a value requiring
# grad got AOT autograd's copy (grad_fn CopyBackwards), so the next call's backward raised autograd's version error naming
# CopyBackwards where eager's names Sub (seed 401285).
import torch
import torch.nn.functional as F

FUZZ_BACKEND = "aot_eager"
FUZZ_CALLS = 2

G_T = torch.arange(4.0) * -1.0


def f(x, w, bw):
    ac1 = torch.mv(w, torch.zeros(4).detach())
    with torch.autocast("cpu", dtype=torch.bfloat16):
        ac2 = F.linear(torch.lerp(torch.mv(w, bw), F.leaky_relu(G_T, 0.1), 0.25), w)
    G_T.sub_(ac1, alpha=0.5)
    return ac2, x


def make_inputs(call):
    g = torch.Generator().manual_seed(4012850)
    x = torch.randn(3, 4, generator=g)
    w = torch.randn(4, 4, generator=g).requires_grad_()
    return (x, w, torch.randn(4, generator=g).requires_grad_()), {}
