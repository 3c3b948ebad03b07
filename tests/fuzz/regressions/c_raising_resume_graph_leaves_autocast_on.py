# (c, fixed: translate/ops/exceptions.py) aot_eager: fuzz seed 401865. A resume function's graph raised inside a no_grad + autocast block split by a break (a bfloat16 @ float32 mv that fake propagation passed); nothing ran the block's given __exit__s, so grad mode stayed off, autocast on, nesting count 2 (eager: grad on, autocast off, 0).
import torch

FUZZ_BACKEND = "aot_eager"
FUZZ_CALLS = 1
G_T = torch.ones(4)


def f(w):
    with torch.no_grad():
        with torch.autocast("cpu", dtype=torch.bfloat16):
            a = torch.mv(w, G_T)
            print("break", a.dtype)
            b = torch.mv(torch.matmul(w, w), G_T)
    return a, b


def make_inputs(call):
    return (torch.randn(4, 4, generator=torch.Generator().manual_seed(call)).requires_grad_(),), {}
