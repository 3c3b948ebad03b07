"""Inference tensors reaching a compiled frame (as arguments or globals) are checked as eagerly.

Eagerly, an inference tensor (made under torch.inference_mode) may be read anywhere, but an in-place
write into it, or into a view of it, outside inference mode raises "Inplace update to inference tensor
outside InferenceMode" -- after the kernel wrote it (the version bump that refuses comes last) --, and
autograd refuses to save one for backward. A cache entry built for a normal tensor must therefore not be
taken by an inference tensor of the same layout (fuzz seed 509934: a global turned into an inference
tensor by the first call was written without a raise by the second call's aot_eager graph, and written
twice under the eager backend). Each case calls the function on a normal tensor, an inference tensor and
a normal tensor again, inside and outside inference mode, under every backend.
"""
import pytest
import torch

from tests.differential import check_script, outcome

BACKENDS = ["eager", "aot_eager", "inductor"]

G = torch.zeros(4)


def _inference(t):
    with torch.inference_mode():
        return t.clone()


def write_iadd(t, x):
    t += x * 2
    return x + 1


def write_method(t, x):
    t.add_(x)
    return x.sum()


def write_view(t, x):
    v = t[1:]
    v.mul_(2)
    return x * 3


def write_view_of_view(t, x):
    t.view(2, 2)[0].add_(x[:2])
    return x.cos()


def write_setitem(t, x):
    t[0] = x[1]
    return x - 1


def write_copy(t, x):
    t.copy_(x * 2)
    return x


def write_out(t, x):
    torch.add(x, 1, out=t)
    return x * 2


def write_then_read(t, x):
    y = x + 1
    t.sub_(y)
    return t * y


def save_for_backward(t, x):
    w = x.clone().requires_grad_()
    (w * t).sum().backward()
    return w.grad


def write_inside_inference_mode(t, x):
    y = x * 2
    with torch.inference_mode():
        t.add_(1)
    return y + t


WRITERS = [write_iadd, write_method, write_view, write_view_of_view, write_setitem, write_copy, write_out,
           write_then_read, save_for_backward, write_inside_inference_mode]


def _script(kinds):
    def script(f):
        seen = []
        for i, kind in enumerate(kinds):
            x = torch.arange(4.0) + i
            t = torch.ones(4) * (i + 1)
            if kind != "normal":
                t = _inference(t)
            if kind == "inside":
                with torch.inference_mode():
                    seen.append(outcome(f, t, x))
            else:
                seen.append(outcome(f, t, x))
            seen.append((t.clone() if not t.is_inference() else _clone_out(t), t.is_inference()))
        return seen
    return script


def _clone_out(t):
    with torch.inference_mode():
        return t.clone().tolist()


SCRIPTS = {"normal_then_inference": ["normal", "inference", "normal", "inference"],
           "inference_first": ["inference", "normal", "inference"],
           "inside_and_outside": ["inside", "inference", "inside", "normal"]}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("script", sorted(SCRIPTS))
@pytest.mark.parametrize("fn", WRITERS, ids=lambda f: f.__name__)
def test_argument(fn, script, backend):
    check_script(fn, _script(SCRIPTS[script]), backend=backend)


def write_global(x):
    global G
    G += x * 2
    with torch.inference_mode():
        G = x.clone()
    return x + 1


def write_global_view(x):
    G[1:].add_(x[1:])
    return x * 2


def write_global_setitem(x):
    G[0] = x.sum()
    return x


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn", [write_global, write_global_view, write_global_setitem], ids=lambda f: f.__name__)
def test_global(fn, backend):
    """The seed's shape: a global that becomes an inference tensor between calls."""
    def script(f):
        global G
        seen = []
        G = torch.zeros(4)
        for i in range(4):
            x = torch.arange(4.0) + i
            seen.append(outcome(f, x))
            seen.append((_clone_out(G), G.is_inference()))
            if i == 1:
                G = _inference(torch.ones(4))
        return seen
    check_script(fn, script, backend=backend)
