"""The capture-time caches: fake-op memo (translate/graph/fake_memo.py), direct fakes of plain inputs (translate/graph/fake_inputs.py)
and shared decoded bytecode (bytecode/shared.py) must give exactly what the uncached paths give."""
import gc
import operator

import pytest
import torch
import torch.nn.functional as F
from torch._subclasses.fake_tensor import FakeTensorMode

import framejit
from framejit.bytecode import decode
from framejit.bytecode.shared import DecodedCache
from framejit.translate.graph.fake_inputs import fake_of_input
from framejit.translate.graph.fake_memo import FakeOpMemo

from ..differential import check, randn


def _mode():
    return FakeTensorMode(shape_env=None, allow_non_fake_inputs=False)


def _describe(o):
    if isinstance(o, torch.Tensor):
        return (type(o).__name__, tuple(o.shape), o.stride(), o.storage_offset(), o.dtype, o.device,
                o.requires_grad, o._is_view(), o.is_leaf, o.is_inference(), o.constant is None)
    if isinstance(o, (tuple, list)):
        return (type(o).__name__, tuple(_describe(x) for x in o))
    return (type(o).__name__, o)


def _run(mode, op, target, args, kwargs):
    with mode:
        if op == "call_method":
            return getattr(args[0], target)(*args[1:], **kwargs)
        return target(*args, **kwargs)


def _memo_round_trip(op, target, make_args, kwargs=None, grad=False):
    """(the result of a memo hit, the result of running the op) on equal fresh inputs, or None
    when the call is not memoised."""
    kwargs = kwargs or {}
    memo = FakeOpMemo()
    with torch.set_grad_enabled(grad):
        mode = _mode()
        args = make_args(mode)
        key, tensors = memo.key(op, target, args, kwargs)
        if key is None:
            return None
        memo.store(key, tensors, _run(mode, op, target, args, kwargs))
        mode = _mode()
        args = make_args(mode)
        key, tensors = memo.key(op, target, args, kwargs)
        hit = memo.lookup(key, tensors, mode)
        ref = _run(mode, op, target, args, kwargs)
        return hit, ref, tensors


def _constant(mode):
    with mode:
        c = torch.tensor(2.0)         # FakeTensorMode keeps the value of small constants
    assert c.constant is not None
    return c


def _x(shape=(2, 8, 12), requires_grad=False):
    return lambda mode: (mode.from_tensor(torch.randn(*shape, requires_grad=requires_grad), static_shapes=True),)


@pytest.mark.parametrize("grad", [False, True])
@pytest.mark.parametrize("case", [
    ("call_method", "transpose", lambda m: _x()(m) + (1, 2)),
    ("call_method", "view", lambda m: _x()(m) + (2, 8, 3, 4)),
    ("call_function", torch.add, lambda m: _x()(m) + _x()(m)),
    ("call_function", operator.getitem, lambda m: _x()(m) + ((slice(None), 1),)),
    ("call_function", F.linear, lambda m: _x()(m) + _x((5, 12))(m)),
    ("call_method", "split", lambda m: _x()(m) + (4,)),
    ("call_method", "size", lambda m: _x()(m)),
    ("call_function", torch.ones, lambda m: ((3, 4),)),
    ("call_function", torch.add, lambda m: _x()(m) + (_constant(m),)),
    ("call_function", torch.sqrt, lambda m: (_constant(m),)),
], ids=["transpose", "view", "add", "getitem", "linear", "split", "size", "ones", "add_constant", "constant"])
def test_a_memo_hit_is_what_running_the_op_gives(case, grad):
    op, target, make_args = case
    out = _memo_round_trip(op, target, make_args, grad=grad)
    if out is None or out[0] is None:
        assert grad and target in ("split",), "only multi-output views in grad mode are not memoised"
        return
    hit, ref, tensors = out
    assert _describe(hit) == _describe(ref)
    if isinstance(ref, torch.Tensor) and ref.constant is not None:
        assert hit.constant is not ref.constant and torch.equal(hit.constant, ref.constant)
    hits = hit if isinstance(hit, (tuple, list)) else [hit]
    refs = ref if isinstance(ref, (tuple, list)) else [ref]
    for h, r in zip(hits, refs):
        if isinstance(h, torch.Tensor) and r._is_view():
            assert [t is r._base for t in tensors] == [t is h._base for t in tensors]
            assert (h.untyped_storage()._cdata == h._base.untyped_storage()._cdata) == \
                (r.untyped_storage()._cdata == r._base.untyped_storage()._cdata)


@pytest.mark.parametrize("op,target,make_args", [
    ("call_method", "add_", lambda m: _x()(m) + (1,)),
    ("call_function", operator.iadd, lambda m: _x()(m) + _x()(m)),
    ("call_function", operator.setitem, lambda m: _x()(m) + (0, 1.0)),
    ("call_function", torch.relu_, lambda m: _x()(m)),
], ids=["add_", "iadd", "setitem", "relu_"])
def test_in_place_calls_are_not_memoised(op, target, make_args):
    memo = FakeOpMemo()
    mode = _mode()
    args = make_args(mode)
    key, _ = memo.key(op, target, args, {})
    assert key is None


def test_outputs_that_are_inputs_and_grad_inputs_in_grad_mode_are_not_memoised():
    memo = FakeOpMemo()
    mode = _mode()
    (x,) = _x()(mode)
    key, tensors = memo.key("call_method", "contiguous", (x,), {})
    memo.store(key, tensors, _run(mode, "call_method", "contiguous", (x,), {}))
    assert memo.lookup(key, tensors, mode) is None
    (w,) = _x(requires_grad=True)(mode)
    assert memo.key("call_function", torch.add, (w, w), {})[0] is None
    with torch.no_grad():
        assert memo.key("call_function", torch.add, (w, w), {})[0] is not None


def test_keys_tell_apart_ints_bools_floats_constant_values_and_global_state():
    memo = FakeOpMemo()
    mode = _mode()
    with mode:
        c1, c2, c3 = torch.tensor(0.0), torch.tensor(-0.0), torch.tensor(0.0)
    assert memo.key("call_function", torch.sqrt, (c1,), {})[0] != memo.key("call_function", torch.sqrt, (c2,), {})[0]
    assert memo.key("call_function", torch.sqrt, (c1,), {})[0] == memo.key("call_function", torch.sqrt, (c3,), {})[0]
    (x,) = _x()(mode)
    keys = {memo.key("call_function", torch.add, (x, v), {})[0] for v in (1, True, 1.0)}
    assert len(keys) == 3
    before = memo.key("call_function", torch.ones, ((2,),), {})[0]
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        assert memo.key("call_function", torch.ones, ((2,),), {})[0] != before
    finally:
        torch.set_default_dtype(old)


def test_user_functions_are_not_memoised():
    def user_op(x):
        return x + 1
    memo = FakeOpMemo()
    mode = _mode()
    assert memo.key("call_function", user_op, _x()(mode), {})[0] is None


@pytest.mark.parametrize("make", [
    lambda: torch.nn.Parameter(torch.randn(4, 3)),
    lambda: torch.nn.Parameter(torch.randn(3), requires_grad=False),
    lambda: torch.randn(5),
    lambda: torch.randn(3, requires_grad=True),
    lambda: torch.randn(3, requires_grad=True) * 2,
    lambda: torch.randn(2, 3).t(),
    lambda: torch.randn(6)[2:],
    lambda: torch.zeros(()),
    lambda: torch.arange(3),
    lambda: torch.randn(0, 4),
], ids=["param", "frozen_param", "plain", "leaf_grad", "non_leaf", "view", "offset", "scalar", "int", "empty"])
@pytest.mark.parametrize("grad", [False, True])
def test_direct_fakes_of_inputs_equal_from_tensor(make, grad):
    t = make()
    with torch.set_grad_enabled(grad):
        ref = _mode().from_tensor(t, static_shapes=True)
        mode = _mode()
        fake = fake_of_input(mode, t)
    extra = lambda f: (isinstance(f, torch.nn.Parameter), getattr(f, "_is_param", None), type(f.grad_fn).__name__)
    assert (_describe(fake), extra(fake)) == (_describe(ref), extra(ref))
    assert fake.fake_mode is mode
    assert fake_of_input(mode, t) is fake
    assert mode.from_tensor(t, static_shapes=True) is fake


def test_decoded_code_is_shared_and_dropped_with_its_code():
    cache = DecodedCache()
    ns = {}
    exec("def f(x):\n    if x:\n        return 1\n    return 2\n", ns)
    code = ns["f"].__code__
    first = cache.get(code)
    assert cache.get(code) is first
    assert [i.opname for i in first] == [i.opname for i in decode(code)]
    assert all(first.position[inst] == k for k, inst in enumerate(first))
    del ns, code
    gc.collect()
    assert len(cache) == 0


def _model_like(x, w):
    h = F.linear(x, w).view(2, 4, 3, 2).transpose(1, 2)
    a, b = h.split(1, dim=-1)
    return (a * b).sum(-1), h._is_view(), a.is_contiguous()


@pytest.mark.parametrize("grad", [False, True])
def test_second_capture_from_the_memo_matches_eager(grad):
    x, w = randn(2, 4, 5, seed=1), randn(6, 5, seed=2)
    with torch.set_grad_enabled(grad):
        for _ in range(2):           # the second conversion runs on memo hits
            framejit.reset()
            check(_model_like, x, w, graphs=1, breaks=0)
