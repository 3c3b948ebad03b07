"""`op(..., out=t)` inside a graph: t keeps its layout and the op returns t itself (backends/passes/
out_arguments.py, translate/graph/builder.py).

Fuzz seed 503050 (aot_eager): `torch.mul(a, 2.0, out=t1)` into a transposed t1 made in the frame came back
with contiguous strides, since AOT autograd's functionalization returns the op's own result in t1's place;
and under every backend the call's result was not t1 (`r is t1` False), where eagerly it is.
"""
import pytest
import torch

from tests.differential import check

BACKENDS = ["eager", "aot_eager", "inductor"]


def out_into_transposed(x):
    t = (torch.ones(4, 4) * 3).t()
    r = torch.mul((x.t() @ x).detach(), 2.0, out=t)
    return t, r is t, t.stride()


def out_into_a_column_slice(x):
    base = torch.zeros(4, 6)
    t = base[:, 1:5]
    torch.add(x.t() @ x, 1.0, out=t)
    return base, t.stride(), t.is_contiguous()


def out_that_grows(x):
    t = torch.empty(0)
    r = torch.sin(x, out=t)                  # resized: no copy_ rewrite, still `r is t`
    return t, r is t


def out_into_an_input(x, t):
    r = torch.mul(x.t() @ x, 0.5, out=t)
    return r is t


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn", [out_into_transposed, out_into_a_column_slice, out_that_grows])
def test_out_keeps_layout_and_identity(fn, backend):
    check(fn, torch.randn(2, 4), backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_out_into_an_input_transposed(backend):
    check(out_into_an_input, torch.randn(2, 4), torch.zeros(4, 4).t(), backend=backend)


@pytest.mark.parametrize("fn,rewritten", [(out_into_transposed, True), (out_that_grows, False)])
def test_only_an_out_of_the_results_shape_is_rewritten(fn, rewritten):
    """The out tensor's fake is resized in place by the op, so its shape *after* the op always matches;
    the shape it had before decides (out_that_grows was rewritten to `empty(0).copy_(sin(x))`, which fails:
    a backend error under inductor, and the whole frame ran as Python)."""
    import framejit
    from framejit.backends.passes import out_arguments
    graphs = []

    def grab(gm, inputs):
        graphs.append(gm)
        return gm.forward
    framejit.compile(fn, backend=grab)(torch.randn(2, 4))
    assert out_arguments._rewrite(graphs[0].graph) is rewritten
    graphs[0].recompile()
    graphs[0](torch.randn(2, 4))           # the graph, rewritten or not, runs as its fx code
