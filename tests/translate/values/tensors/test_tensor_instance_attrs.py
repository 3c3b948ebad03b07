"""A tensor's own attributes (values/tensors/tensor_instance_attrs.py): names torch.Tensor does not define, held
in the tensor's instance __dict__. Reads and hasattr on an input are guarded on the attribute's presence
(a later call with a tensor that has it must not reuse the answer); stores on inputs and on tensors the
graph makes are replayed after the graph, and later reads in the frame see them."""
import functools

import torch

import framejit
from framejit.backends import CompileCounter
from tests.differential import check, randn


def _tagged(value):
    t = randn(2, 3)
    t.tag = value
    return t


def has_tag(x):
    if hasattr(x, "tag"):
        return x + 2
    return x + 1


def tag_or_default(x):
    return x * getattr(x, "tag", 5)


def test_hasattr_on_input_tensor_is_guarded():
    framejit.reset()
    counter = CompileCounter("eager")
    compiled = framejit.compile(has_tag, backend=counter)
    for x in (randn(2, 3), _tagged(None), randn(2, 3), _tagged(7)):
        assert torch.equal(compiled(x), has_tag(x))
    assert counter.frame_count == 2


def test_getattr_default_on_input_tensor_is_guarded():
    framejit.reset()
    compiled = framejit.compile(tag_or_default, fullgraph=True)
    for x in (randn(2, 3), _tagged(3), _tagged(0.5), randn(2, 3)):
        assert torch.equal(compiled(x), tag_or_default(x))


def test_read_of_input_tensor_attribute_in_one_graph():
    def fn(x):
        return x * x.tag
    check(fn, _tagged(3.0), fullgraph=True, graphs=1)


def _add_one(t):
    return t + 1


def test_function_held_by_a_tensor_is_inlined():
    p = torch.nn.Parameter(torch.ones(2))
    p.add_one = _add_one

    def fn(x):
        return p.add_one(p) + x
    check(fn, randn(2), fullgraph=True, graphs=1)


def test_store_on_input_tensor_is_replayed():
    def fn(x, flag):
        x.offloading = flag
        return x + 1, x.offloading, hasattr(x, "offloading")
    out = check(fn, randn(5), True, fullgraph=True, graphs=1)
    assert out[1] is True


def test_store_on_input_tensor_lands_in_its_dict():
    def fn(x):
        x.note = x.sum()
        return x + 1
    x = randn(3)
    framejit.compile(fn, fullgraph=True)(x)
    assert torch.equal(x.note, x.sum())


def test_store_on_graph_tensor_reaches_the_returned_tensor():
    def fn(x):
        y = x + 10
        y.grad = x
        y.foo = 42
        return y, y.foo
    framejit.reset()
    out = framejit.compile(fn, fullgraph=True)(torch.ones(5))
    ref = fn(torch.ones(5))
    assert torch.equal(out[0], ref[0]) and out[1] == 42
    assert out[0].foo == 42 and torch.equal(out[0].grad, ref[0].grad)


def test_store_on_graph_tensor_then_read_with_functools():
    def fn(x):
        y = x * 2
        y.scale = functools.partial(torch.mul, other=3)
        return y.scale(y)
    check(fn, randn(4), fullgraph=True, graphs=1)


def test_grad_store_of_mismatched_shape_stays_a_break():
    def fn(x):
        y = x + 1
        y.grad = torch.ones(3)
        return y
    check(fn, randn(2))


def test_store_of_a_tensor_descriptor_stays_a_break():
    def fn(x):
        x.real = 10
        return x + 1
    check(fn, torch.ones(5, dtype=torch.cfloat))
