"""Differential tests: torch.no_grad() / torch.enable_grad() used as decorators of functions made in
the frame (translate/values/managers/decorated_managers.py): the call runs in the block, in one graph, and
the wrapper rebuilt where it escapes behaves as torch's own."""
import torch

import framejit

from tests.differential import check, randn

x = randn(3, seed=1, requires_grad=True)


def nested_no_grad(x):
    @torch.no_grad()
    def augment(t: torch.Tensor) -> torch.Tensor:
        return (t + 1) * 2

    y = augment(x)
    return y, y.requires_grad, torch.is_grad_enabled(), x * 3


def nested_enable_grad_inside_no_grad(x):
    def scale(t, k=2):
        return t * k

    with torch.no_grad():
        y = torch.enable_grad()(scale)(x, k=4)
        z = scale(x)
    return y, z, y.requires_grad, z.requires_grad


def escaping_wrapper(x):
    wrapped = torch.no_grad()(lambda t: t * 2)
    return wrapped, wrapped(x).requires_grad


def decorated_generator(x):
    @torch.no_grad()
    def gen(t):
        yield t * 2

    return list(gen(x))


def test_no_grad_decorator_made_in_frame():
    check(nested_no_grad, x, fullgraph=True, graphs=1, grads=True)


def test_enable_grad_decorator_inside_no_grad():
    check(nested_enable_grad_inside_no_grad, x, fullgraph=True, graphs=1, grads=True)


def test_escaping_decorated_function():
    # a returned function compares by identity, so the harness cannot hold it: checked by hand
    counter = framejit.backends.CompileCounter()
    compiled = framejit.compile(escaping_wrapper, backend=counter, fullgraph=True)
    for _ in range(2):
        wrapped, flag = compiled(x)
        eager_wrapped, eager_flag = escaping_wrapper(x)
        assert flag is eager_flag is False
        assert wrapped(x).requires_grad is eager_wrapped(x).requires_grad is False
        assert torch.equal(wrapped(x), eager_wrapped(x))
        assert wrapped.__name__ == eager_wrapped.__name__
    assert counter.frame_count == 1


def test_decorated_generator_is_a_break():
    check(decorated_generator, x)
