"""An op whose tensor arguments mix floating dtypes, inside a region whose handler may stop its exception.

Several meta kernels do not check what the real kernel refuses: `torch.mv` of a bfloat16 matrix and a float
vector (what CPU autocast makes of `torch.mv(a.t() @ a, v)`) ran on fakes (a float32 result) and raised at
run time ("addmv input tensors must have the same dtype"). Eagerly a `contextlib.suppress(RuntimeError)` or
`try/except` around it swallows that; the compiled graph raised past the frame's handler (fuzz seed 628476).
Such an op counts as one that may fail at run time (translate/ops/exceptions.py): the entry reruns the frame
as Python when the graph raises, so the frame's handler sees the exception as eagerly.
"""
import contextlib

import pytest
import torch

from tests.differential import check, randn

G_V = torch.arange(4.0)
SEQ = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Tanh())


def autocast_mv_in_suppress(x):
    with contextlib.suppress(RuntimeError):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            y = torch.mv(x.t() @ x, G_V)
        x = x + y.float().sum()
    return x, SEQ(x)


def mixed_mv_in_try(x):
    try:
        y = torch.mv(x.t().bfloat16() @ x.bfloat16(), G_V)
        out = y.float() * 2
    except RuntimeError:
        out = x.sum(0)
    return out * 3, SEQ(x)


def mixed_addmm_in_try(x):
    try:
        y = torch.addmm(G_V.double(), x.t(), x)
    except RuntimeError:
        y = x * 5
    return y + 1


def same_dtypes_in_try(x):          # a control: nothing mixed, the graph is one as before
    try:
        y = torch.mv(x.t() @ x, G_V)
    except RuntimeError:
        y = x.sum(0)
    return y * 2


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize("fn", [autocast_mv_in_suppress, mixed_mv_in_try, mixed_addmm_in_try, same_dtypes_in_try],
                         ids=lambda f: f.__name__)
def test_matches_eager(fn, backend):
    check(fn, randn(3, 4, seed=1), backend=backend)
