"""The generated dispatcher: every signature form binds as the original, and entries stay correct
as they are added (inlined first entry, the rest through the loop) and cleared."""
import pytest
import torch

import framejit


def positional(x, y=2.0):
    return x * y


def keyword_only(x, *, scale=3.0, shift=0.0):
    return x * scale + shift


def star_args(x, *rest, **options):
    out = x
    for r in rest:
        out = out + r
    return out * options.get("k", 1)


def positional_only(x, y, /, z=1.0):
    return x - y + z


CALLS = [
    (positional, lambda t: ((t,), {})),
    (positional, lambda t: ((t, 5.0), {})),
    (positional, lambda t: ((t,), {"y": 4.0})),
    (keyword_only, lambda t: ((t,), {"scale": 2.0})),
    (keyword_only, lambda t: ((t,), {"shift": 1.0, "scale": 0.5})),
    (star_args, lambda t: ((t, t, t), {"k": 2})),
    (star_args, lambda t: ((t,), {})),
    (positional_only, lambda t: ((t, t), {"z": 3.0})),
]


@pytest.mark.parametrize("fn,make", CALLS)
def test_signature_forms_bind_like_the_original(fn, make):
    compiled = framejit.compile(fn)
    t = torch.arange(3.0)
    args, kwargs = make(t)
    for _ in range(2):
        assert torch.equal(compiled(*args, **kwargs), fn(*args, **kwargs))


def test_bad_call_raises_the_same_type_error():
    compiled = framejit.compile(positional_only)
    with pytest.raises(TypeError):
        compiled(torch.ones(1), y=torch.ones(1))
    with pytest.raises(TypeError):
        framejit.compile(positional)()


def test_many_entries_and_reset():
    counter = framejit.CompileCounter()
    f = framejit.compile(positional, backend=counter, dynamic=False)  # static sizes: each new size recompiles
    inputs = [torch.ones(n) for n in (1, 2, 3, 4)]
    for _ in range(2):
        for x in inputs:
            assert torch.equal(f(x), positional(x))
    assert counter.frame_count == 4
    framejit.reset()
    assert torch.equal(f(inputs[2]), positional(inputs[2]))
    assert counter.frame_count == 5


def test_closures_sharing_one_code_object_keep_their_own_cells():
    def make(k):
        def scaled(x):
            return x * k
        return framejit.compile(scaled)

    double, triple = make(2.0), make(3.0)
    x = torch.ones(2)
    for _ in range(2):
        assert torch.equal(double(x), x * 2) and torch.equal(triple(x), x * 3)


def test_bytecode_hook_replacement_is_honoured():
    seen = []

    def hook(original, transformed):
        seen.append(original.co_name)

    with framejit.register_bytecode_hook(hook):
        f = framejit.compile(positional)
        f(torch.ones(2))
    assert seen == ["positional"]
