"""Inputs whose sizes or strides the graph changes in place (`t_`, `transpose_`, `squeeze_`, ...) end as eager
leaves them (backends/passes/input_metadata.py): same sizes, strides and offset, and their storage holds the
values in eager's order. AOT autograd set them to the layout of the functional op's result (fuzz seed
665566: `m.t_(); m.masked_fill_(m < 0, 0.0)` left m (4, 1) strided where eager's is (1, 4)).
"""
import pytest
import torch

import framejit
from framejit.backends.passes.input_metadata import metadata_changes
from tests.differential import randn


def transposed_then_masked(m):
    m.t_()
    m.masked_fill_(m < 0, 0.0)
    return 3


def transposed_then_setitem(m):
    m.t_()
    m[m > 0] = 0.5
    return m.sum()


def swapped_then_where_write(m):
    m.transpose_(0, 1)
    m.copy_(torch.where(m > 0, m, m * 2))
    return m * 1


def unsqueezed_twice_then_filled(m):
    m.unsqueeze_(0).transpose_(0, 2)   # the second op changes what the first returned: the input itself
    m.masked_fill_(m > 1, 1.0)
    return None


def squeezed_then_index_fill(m):
    m.squeeze_(1)
    m.index_fill_(0, torch.tensor([0, 2]), -1.0)
    return m.shape


def transposed_by_keyword(m):
    m.transpose_(dim0=1, dim1=0)
    m.masked_fill_(m < 0, 2.0)
    return 1


def as_strided_in_place(m):
    m.as_strided_((2, 4), (1, 2))
    m.masked_fill_(m > 0, 0.0)
    return 2


CASES = [
    (transposed_then_masked, (4, 4)),
    (transposed_then_setitem, (4, 4)),
    (swapped_then_where_write, (3, 5)),
    (unsqueezed_twice_then_filled, (3, 4)),
    (squeezed_then_index_fill, (4, 1)),
    (transposed_by_keyword, (2, 3)),
    (as_strided_in_place, (4, 2)),
]


def _layout(t):
    return t.size(), t.stride(), t.storage_offset()


def _memory(t):
    return bytes(t.untyped_storage())


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize("fn,shape", CASES, ids=[c[0].__name__ for c in CASES])
def test_input_ends_with_eagers_metadata_and_memory(fn, shape, backend):
    compiled = framejit.compile(fn, backend=backend)
    for call in range(2):
        eager_input, compiled_input = randn(*shape, seed=call), randn(*shape, seed=call)
        expected, got = fn(eager_input), compiled(compiled_input)
        assert _layout(compiled_input) == _layout(eager_input)
        assert torch.equal(compiled_input, eager_input)
        assert _memory(compiled_input) == _memory(eager_input)       # the storage in eager's order
        if isinstance(expected, torch.Tensor):
            assert torch.equal(got, expected) and got.stride() == expected.stride()
        else:
            assert got == expected


def test_another_view_of_the_storage_reads_what_eager_wrote():
    def fn(m):
        m.t_()
        m.masked_fill_(m < 0, 0.0)
        m.mul_(torch.arange(4.0))    # a per-column scale: rows and columns are not interchangeable
    base_eager, base_compiled = randn(16, seed=5), randn(16, seed=5)
    fn(base_eager[:].view(4, 4))
    framejit.compile(fn, backend="aot_eager")(base_compiled[:].view(4, 4))
    assert torch.equal(base_compiled, base_eager)


def test_plan_reads_only_the_inputs_own_metadata_ops():
    def fn(a, b):
        v = a.view(2, 8)
        v.t_()                       # a view's metadata: `a` keeps its own
        b.t_().unsqueeze_(0)
        return v.sum() + b.sum()
    graphs = []

    def grab(gm, inputs):
        graphs.append(gm)
        return gm.forward
    framejit.compile(fn, backend=grab)(randn(4, 4), randn(2, 3))
    assert metadata_changes(graphs[0]) == {1: [("t_", (), {}), ("unsqueeze_", (0,), {})]}


def test_an_input_that_requires_grad_runs_as_fx_code():
    def fn(w, m):
        y = w * 2                    # a non-leaf input of the graph below needs a break to be one
        return y

    def body(y):
        y.t_()
        y.masked_fill_(y < 0, 0.0)
        return y.sum()
    w_eager, w_compiled = randn(3, 4, seed=1, requires_grad=True), randn(3, 4, seed=1, requires_grad=True)
    y_eager, y_compiled = w_eager * 2, w_compiled * 2
    out_eager = body(y_eager)
    out_compiled = framejit.compile(body, backend="aot_eager")(y_compiled)
    assert _layout(y_compiled) == _layout(y_eager) and torch.equal(out_compiled, out_eager)
    out_eager.backward()
    out_compiled.backward()
    assert torch.equal(w_compiled.grad, w_eager.grad)


def test_metadata_ops_with_computed_arguments_run_as_fx_code():
    graph = torch.fx.Graph()
    m, n = graph.placeholder("m"), graph.placeholder("n")
    dim = graph.call_function(int, (graph.call_method("dim", (n,)),))
    graph.call_method("transpose_", (m, 0, dim))
    graph.call_method("masked_fill_", (m, graph.call_function(torch.lt, (m, 0)), 0.0))
    graph.output(None)
    gm = torch.fx.GraphModule(torch.nn.Module(), graph)
    assert metadata_changes(gm) is None
    from framejit.backends.passes import input_metadata
    compiled = input_metadata.apply(gm, [randn(3, 4), torch.zeros(5)], lambda g, i: pytest.fail("compiled"))
    assert compiled == gm.forward


def test_inductor_second_call_compiled():
    compiled = framejit.compile(transposed_then_masked, backend="inductor")
    with torch.no_grad():
        for call in range(2):            # the first call may answer with the fx code (compile_behind)
            eager_input, compiled_input = randn(4, 4, seed=call), randn(4, 4, seed=call)
            transposed_then_masked(eager_input)
            compiled(compiled_input)
            assert _layout(compiled_input) == _layout(eager_input)
            assert _memory(compiled_input) == _memory(eager_input)
