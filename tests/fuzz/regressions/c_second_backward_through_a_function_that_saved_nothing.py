# (c, fixed: backends/passes/state_regions.py _connected_pieces, backends/passes/nothing_saved.py) aot_eager: fuzz seed 710248. `t1 = lerp(w, e, 0.25)` (eager's LerpBackward saves nothing) shared a Function with `w.pow(2).sum()`; after a first backward through both, autograd.grad through `t1 @ t1` raised "Trying to backward through the graph a second time" where eager's runs.
import torch

FUZZ_BACKEND = "aot_eager"
FUZZ_CALLS = 1


def scale(t):
    return t * 2.0


def f(w, n, tp):
    t1 = torch.lerp(w, tp[-1], 0.25)
    ((w * scale(t1.sign())).sum() + w.pow(2).sum()).backward()
    gr4, = torch.autograd.grad((w * (w / ((t1 @ t1).abs() + 1))).sum() + w.pow(2).sum(), [w])
    return gr4


def make_inputs(call):
    g = torch.Generator().manual_seed(7102480 + call)
    w = torch.randn(4, 4, generator=g).requires_grad_()
    return (w, 2, (2, torch.randn(4, generator=g))), {}
