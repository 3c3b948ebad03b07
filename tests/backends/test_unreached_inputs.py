"""A tensor hook on a graph input that no output's gradient reaches runs only when eager runs it.

Why: AOT autograd's Function has an edge to every input that requires grad, so a backward through its
outputs visited inputs the graph only read as placeholders, compared, detached or fed to a dead op, and
autograd called their hooks with None (fuzz seed 516478: `x2.register_hook(lambda grad: grad * 0.5)`
raised a TypeError inside `backward()`, and the leaf's .grad came out half of eager's). Eager has no path
to such an input, so its hooks never run. Each case registers hooks that record what they see (and one
that scales), runs backward inside the frame or after it, and compares the hook calls, the results and
the .grad of every leaf with eager's.
"""
import pytest
import torch

import framejit

CALLS = []


def _seen(name):
    def hook(grad):
        CALLS.append((name, None if grad is None else round(float(grad.sum()), 4)))
        return None if grad is None else grad * 0.5
    return hook


def unused_input_hooked_in_loop(x, x2):          # seed 516478
    for _ in range(2):
        (x * x).sum().backward()
        h = x2.register_hook(_seen("x2"))
        alias = x2
    return x.grad.clone()


def input_only_compared(x, x2):
    x2.register_hook(_seen("x2"))
    print("break")
    mask = (x2 > 0).float()
    (x * mask).sum().backward()
    return mask


def input_only_detached(x, x2):
    x2.register_hook(_seen("x2"))
    print("break")
    y = x * x2.detach()
    y.sum().backward()
    return y.detach()


def input_only_in_dead_op(x, x2):
    x2.register_hook(_seen("x2"))
    print("break")
    dead = x2 * 3
    (x * 2).sum().backward()
    return x.grad.clone()


def non_leaf_input_only_compared(x, x2):
    h = x2 * 2
    h.register_hook(_seen("h"))
    print("break")
    loss = (x * (h > 0).float()).sum()
    loss.backward()
    return loss.detach()


def non_leaf_input_unused(x, x2):
    h = x2 * 2
    h.register_hook(_seen("h"))
    print("break")
    (x * x).sum().backward()
    alias = h
    return h


def input_used_and_unused_returned(x, x2, x3):
    x3.register_hook(_seen("x3"))
    x2.register_hook(_seen("x2"))
    print("break")
    y = x * x2 + x3.sum().detach()
    return y


CASES = [unused_input_hooked_in_loop, input_only_compared, input_only_detached, input_only_in_dead_op,
         non_leaf_input_only_compared, non_leaf_input_unused, input_used_and_unused_returned]


def _leaves(n):
    g = torch.Generator().manual_seed(n)
    return [torch.randn(3, 4, generator=g).requires_grad_() for _ in range(n)]


def _outcome(fn, capsys):
    leaves = _leaves(fn.__code__.co_argcount)
    CALLS.clear()
    out = fn(*leaves)
    if out.requires_grad:
        out.sum().backward()
    capsys.readouterr()
    grads = [None if t.grad is None else t.grad.tolist() for t in leaves]
    return list(CALLS), out.detach().tolist(), out.requires_grad, grads


@pytest.mark.parametrize("fn,backend", [(fn, "aot_eager") for fn in CASES] +
                         [(unused_input_hooked_in_loop, "inductor"), (input_only_compared, "inductor")],
                         ids=lambda v: getattr(v, "__name__", v))
def test_hooks_of_unreached_inputs_run_as_eager(fn, backend, capsys):
    framejit.reset()
    eager = _outcome(fn, capsys)
    compiled = framejit.compile(fn, backend=backend)
    assert _outcome(compiled, capsys) == eager
    assert _outcome(compiled, capsys) == eager


def test_unreached_inputs_found():
    """What the pass detaches: inputs read only as placeholders (returned as they are by the entry, not
    the graph), compared or detached; not one an output reaches, one written in place, or one an output
    shares memory with."""
    from framejit.backends.passes.unreached_inputs import unreached_inputs
    seen = []

    def capture(gm, inputs):
        seen.append(({n.name: i for i, n in enumerate(n for n in gm.graph.nodes if n.op == "placeholder")},
                     unreached_inputs(gm)))
        return gm.forward

    def f(a, b, c, d, e, w, v):
        w.mul_(1)
        alias = b
        return a * 2 + (c > 0).float() + d.detach() + w.detach(), e, alias, v.detach().view(-1)

    framejit.reset()
    leaves = _leaves(6)
    w = leaves[0] * 1
    framejit.compile(f, backend=capture)(*leaves[:5], w, leaves[5])
    ((index, unreached),) = seen
    # (v: an output shares its memory, as a view made under no_grad would)
    assert {name for name, i in index.items() if i in unreached} == {"b", "c", "d", "e"}
