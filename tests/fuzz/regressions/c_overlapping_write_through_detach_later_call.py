# (c, fixed: translate/graph/fake_memo.py) aot_eager: `t += t.detach().transpose(0, 1)` raises eagerly on every call (the written tensor overlaps its operand); the memo of fake results rebuilt `detach` on a fresh storage, so a later call's conversion saw no overlap and its graph wrote the sum without the raise (seed 510103).
import torch

FUZZ_BACKEND = "aot_eager"
FUZZ_CALLS = 3


def f(x):
    t = torch.eye(4)
    try:
        t += t.detach().transpose(0, 1)
        print("no raise")
    except RuntimeError as e:
        print("caught", type(e).__name__)
    return x + 1, t


def make_inputs(call):
    return (torch.randn(4, generator=torch.Generator().manual_seed(call)),), {}
