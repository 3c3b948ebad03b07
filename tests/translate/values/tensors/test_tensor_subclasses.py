"""Differential tests: tensor subclasses with __torch_function__ traced into one graph
(framejit/translate/values/tensor_subclasses.py).

Each case runs eagerly and compiled with fullgraph=True on inputs built fresh by a factory (torch cannot
deep-copy these subclasses), and compares the outputs (their Python types and values), what the
subclass's __torch_function__ logged (which funcs, in which order), the inputs' gradients, and that the
first compiled call made one graph and the second call made none (and logged the same again)."""
import pytest
import torch
import torch.nn.functional as F

import framejit
from framejit.backends import CompileCounter
from tests.differential import randn

LOG = []


class Logged(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        LOG.append(func.__name__)
        return super().__torch_function__(func, types, args, kwargs or {})


class LoggedChild(Logged):
    pass


class Inherits(torch.Tensor):
    """No __torch_function__ of its own: torch.Tensor's converts every result to Inherits."""


class Wraps(torch.Tensor):
    """Scales torch.add's results (which stay Wraps)."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        out = super().__torch_function__(func, types, args, kwargs or {})
        return out * 1.5 if func is torch.add else out


class Swaps(torch.Tensor):
    """Calls a different function than the one asked for."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if func is torch.Tensor.add:
            func = torch.Tensor.sub
        return super().__torch_function__(func, types, args, kwargs or {})


class PlainSums(torch.Tensor):
    """Returns plain tensors for sum (run with subclass dispatch off), the subclass otherwise."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is torch.Tensor.sum:
            with torch._C.DisableTorchFunctionSubclass():
                LOG.append("plain sum")
                return func(*args, **kwargs)
        return super().__torch_function__(func, types, args, kwargs)


class Scaled(torch.Tensor):
    """Python methods, a property and a class attribute of its own."""
    factor = 2.0

    def doubled(self):
        return self * self.factor

    @property
    def halved(self):
        return self / 2

    @classmethod
    def make(cls, t):
        return t.as_subclass(cls)

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        LOG.append(func.__name__)
        return super().__torch_function__(func, types, args, kwargs or {})


class LoggedParameter(torch.nn.Parameter):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        LOG.append(func.__name__)
        with torch._C.DisableTorchFunctionSubclass():
            return func(*args, **(kwargs or {}))


HANDLED_FUNCTIONS = {}


def implements(func):
    def register(impl):
        HANDLED_FUNCTIONS[func] = impl
        return impl
    return register


class Handled(torch.Tensor):
    """torch's documented pattern: a table of overrides by function, torch.Tensor's behaviour otherwise."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in HANDLED_FUNCTIONS:
            return HANDLED_FUNCTIONS[func](*args, **kwargs)
        return super().__torch_function__(func, types, args, kwargs)


@implements(torch.mean)
def _mean(x, *args, **kwargs):
    LOG.append("handled mean")
    with torch._C.DisableTorchFunctionSubclass():
        return torch.mean(x, *args, **kwargs) * 10


class Unwraps(torch.Tensor):
    """Unwraps its arguments to plain tensors itself and wraps tensor results again."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        LOG.append(func.__name__)
        args = [a.as_subclass(torch.Tensor) if isinstance(a, Unwraps) else a for a in args]
        out = func(*args, **(kwargs or {}))
        return out.as_subclass(cls) if isinstance(out, torch.Tensor) else out


class Made(Logged):
    """Made in the frame with Made(t): its own __new__."""

    @staticmethod
    def __new__(cls, data):
        return torch.Tensor._make_subclass(cls, data)


class Tagged(Made):
    def __init__(self, data):
        self.tag = 1              # subclass state the frame would change: a break


def _input(cls, *shape, seed=0, requires_grad=False):
    t = randn(*shape, seed=seed).as_subclass(cls)
    return t.requires_grad_() if requires_grad else t


def arithmetic(x):
    return x * 2 + 1, 2 * x - x.sum(), -x, abs(x) ** 2, x / 3


def functions(x, y):
    return torch.relu(x), F.softmax(x, -1), torch.cat([x, y]).sum(0), torch.add(x, y), x.max(0), x.unbind(0)


def subscripts(x):
    y = x.clone()
    y[0] = 1
    return x[1], y, x[:, 0]


def metadata(x):
    return x.new_zeros(x.shape, dtype=x.dtype) + len(x) + x.size(0) + x.ndim, x.requires_grad


def in_place(x):
    y = x.clone()
    y += 1
    y.mul_(2)
    return y


def module_call(x, lin):
    return lin(x).tanh().sum(-1)


def made_in_frame(t):
    a = t.as_subclass(Logged) * 2
    b = torch.Tensor._make_subclass(Logged, t) + 1
    return a, b, a.as_subclass(torch.Tensor) + 1


def subclass_methods(x):
    return x.doubled() + x.halved + x.factor, Scaled.make(x * 1)


def mixed_types(a, b, c):
    return a + b, b - a, c * a


def gradient(x, w):
    return (x @ w).tanh().sum()


def returns_input(x):
    return x, x.detach()


def iteration(x):
    rows = [r * 2 for r in x]
    first, second, _ = x
    return rows[0], rows[2], first + second


def checkpointed(x):
    body = lambda a: torch.add(a, a).as_subclass(torch.Tensor).sin()      # noqa: E731
    return torch.utils.checkpoint.checkpoint(body, x, use_reentrant=False) + 1


def _lin():
    torch.manual_seed(0)
    return torch.nn.Linear(3, 2)


CASES = {
    "arithmetic": (arithmetic, lambda: (_input(Logged, 3, 3),)),
    "functions": (functions, lambda: (_input(Logged, 3, 3), randn(3, 3, seed=1))),
    "subscripts": (subscripts, lambda: (_input(Logged, 3, 3),)),
    "metadata": (metadata, lambda: (_input(Logged, 3, 3),)),
    "in_place": (in_place, lambda: (_input(Logged, 3),)),
    "module_call": (module_call, lambda: (_input(Logged, 4, 3), _lin())),
    "made_in_frame": (made_in_frame, lambda: (randn(3),)),
    "inherited": (arithmetic, lambda: (_input(Inherits, 3, 3),)),
    "wraps_results": (functions, lambda: (_input(Wraps, 3, 3), randn(3, 3, seed=1))),
    "swaps_func": (lambda x: x + x + 1, lambda: (_input(Swaps, 3),)),
    "plain_results": (lambda x: (x * 2).sum() + x, lambda: (_input(PlainSums, 3),)),
    "subclass_methods": (subclass_methods, lambda: (_input(Scaled, 3),)),
    "parameter_subclass": (lambda p: p * 2 + 1, lambda: (LoggedParameter(randn(3)),)),
    "mixed_types": (mixed_types, lambda: (_input(Logged, 3), _input(LoggedChild, 3, seed=1), randn(3, seed=2))),
    "gradient": (gradient, lambda: (_input(Logged, 2, 3, requires_grad=True), randn(3, 3, seed=7).requires_grad_())),
    "returns_input": (returns_input, lambda: (_input(Logged, 3),)),
    "constructed": (lambda t: Made(t) * 2, lambda: (randn(3),)),
    "checkpoint_body_dispatches": (checkpointed, lambda: (_input(Wraps, 3),)),
    "iteration": (iteration, lambda: (_input(Logged, 3, 2),)),
    "handled_functions": (lambda x: torch.mean(x) + x.sum(), lambda: (_input(Handled, 3, 3),)),
    "unwraps_itself": (lambda x: ((x * 2).relu() + 1, x.shape), lambda: (_input(Unwraps, 3, 3),)),
}


def _flat(out):
    items = []
    for o in (out if isinstance(out, (tuple, list)) else [out]):
        if type(o) is tuple and not hasattr(o, "_fields"):
            items.extend(o)
        else:
            items.append(o)
    return items


def _run(fn, args):
    LOG.clear()
    out = _flat(fn(*args))
    log = list(LOG)
    loss = next((o for o in out if isinstance(o, torch.Tensor) and o.requires_grad), None)
    if loss is not None:
        with torch._C.DisableTorchFunctionSubclass():
            loss.sum().backward()
    grads = [a.grad for a in args if isinstance(a, torch.Tensor) and a.requires_grad]
    return out, log, grads


def _same(a, b):
    assert type(a) is type(b), (type(a), type(b))
    if isinstance(a, torch.Tensor):
        with torch._C.DisableTorchFunctionSubclass():
            torch.testing.assert_close(a, b, atol=1e-6, rtol=0)
            assert a.requires_grad == b.requires_grad
    elif isinstance(a, tuple):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    else:
        assert a == b


@pytest.mark.parametrize("name", list(CASES))
def test_one_graph_as_eager(name):
    fn, make_args = CASES[name]
    framejit.reset()
    counter = CompileCounter()
    compiled = framejit.compile(fn, backend=counter, fullgraph=True)
    eager = _run(fn, make_args())
    for call in range(2):
        got = _run(compiled, make_args())
        for part_eager, part_got in zip(eager, got):
            assert len(part_eager) == len(part_got), (part_eager, part_got)
            for a, b in zip(part_eager, part_got):
                _same(a, b)
        assert counter.frame_count == 1, f"call {call}: {counter.frame_count} graphs"


def test_instance_attribute_of_an_input():
    def scaled(x):
        return x * x.scale

    def make():
        x = _input(Logged, 3)
        x.scale = 3.0
        return (x,)

    framejit.reset()
    counter = CompileCounter()
    compiled = framejit.compile(scaled, backend=counter, fullgraph=True)
    eager = _run(scaled, make())
    got = _run(compiled, make())
    _same(eager[0][0], got[0][0])
    assert eager[1] == got[1]
    other = make()
    other[0].scale = 5.0                      # guarded: a new value converts again, with it
    _same(_run(scaled, make())[0][0] * 0 + other[0] * 5.0, _run(compiled, other)[0][0])
    assert counter.frame_count == 2


class Dispatching(torch.Tensor):
    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


def test_torch_dispatch_subclass_is_a_break_with_its_reason():
    x = torch.Tensor._make_subclass(Dispatching, randn(3))
    compiled = framejit.compile(lambda a: a * 2, backend=CompileCounter(), fullgraph=True)
    with pytest.raises(framejit.Unsupported, match="__torch_dispatch__"):
        compiled(x)


def test_input_leaf_flag_is_a_break():
    compiled = framejit.compile(lambda a: a.is_leaf, backend=CompileCounter(), fullgraph=True)
    with pytest.raises(framejit.Unsupported, match="plain alias"):
        compiled(_input(Logged, 3, requires_grad=True))


def test_subclass_state_written_in_init_is_replayed_on_the_value():
    """`self.tag = 1` in a subclass's __init__ is a store on a tensor the graph made (values/
    tensor_instance_attrs.py): replayed after the graph on the rebuilt subclass object."""
    def made(t):
        y = Tagged(t)
        return y, y * 2
    counter = CompileCounter()
    y, z = framejit.compile(made, backend=counter, fullgraph=True)(randn(3))
    ey, ez = made(randn(3))
    assert counter.frame_count == 1
    assert type(y) is type(ey) is Tagged and y.__dict__ == ey.__dict__ == {"tag": 1}
    assert type(z) is Tagged and z.__dict__ == ez.__dict__ == {}
    framejit.reset()
    compiled = framejit.compile(lambda t: Tagged(t) * 2, backend=CompileCounter())
    LOG.clear()
    eager = Tagged(randn(3)) * 2
    eager_log = list(LOG)
    LOG.clear()
    got = compiled(randn(3))
    _same(eager, got)
    assert LOG == eager_log


def test_changes_to_the_subclass_are_seen():
    class Changing(torch.Tensor):
        factor = 2.0

        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            return super().__torch_function__(func, types, args, kwargs or {})

    def adds_one(cls, func, types, args=(), kwargs=None):
        out = torch.Tensor.__torch_function__.__func__(cls, func, types, args, kwargs or {})
        with torch._C.DisableTorchFunctionSubclass():
            return out + 1 if isinstance(out, torch.Tensor) else out

    def fn(x):
        return x * x.factor

    counter = CompileCounter()
    compiled = framejit.compile(fn, backend=counter, fullgraph=True)
    x = _input(Changing, 3)
    _same(fn(x), compiled(x))
    Changing.factor = 3.0
    _same(fn(x), compiled(x))
    Changing.__torch_function__ = classmethod(adds_one)
    _same(fn(x), compiled(x))
    assert counter.frame_count == 3


def test_one_subclass_value_is_one_object_after_the_graph():
    def twice(x):
        y = x * 2
        return y, y, {"k": y}

    framejit.reset()
    out = framejit.compile(twice, backend=CompileCounter(), fullgraph=True)(_input(Logged, 3))
    assert out[0] is out[1] and out[0] is out[2]["k"]
    assert type(out[0]) is Logged


class _Tagged(torch.Tensor):
    tag = "sub"

    def helper(self):
        return 3


def _hasattr_on_subclass_values(x):
    y = x * 2
    return y, hasattr(y, "tag"), hasattr(y, "helper"), hasattr(y, "nope"), hasattr(x, "tag")


def test_hasattr_of_a_subclass_value_sees_its_class():
    """A graph-made subclass value has what its class defines (hasattr answered False for every name
    torch.Tensor does not define once tensor instance attributes were modelled)."""
    x = torch.ones(2).as_subclass(_Tagged)
    counter = CompileCounter()
    got = framejit.compile(_hasattr_on_subclass_values, backend=counter, fullgraph=True)(x)
    assert got[1:] == _hasattr_on_subclass_values(x)[1:] == (True, True, False, True)
    assert counter.frame_count == 1
