"""framejit.testing.clone_inputs and preserve_rng_state."""
import torch

from framejit.testing import clone_inputs, preserve_rng_state


def test_clones_keep_strides_offsets_and_aliasing():
    base = torch.arange(12.0).reshape(3, 4)
    view = base.t()[1:]
    copies = clone_inputs([base, view, base])
    cb, cv, cb2 = copies
    assert cb is cb2                                   # one tensor passed twice stays one
    assert cv.stride() == view.stride() and cv.storage_offset() == view.storage_offset()
    assert cv.untyped_storage().data_ptr() == cb.untyped_storage().data_ptr()
    assert cb.untyped_storage().data_ptr() != base.untyped_storage().data_ptr()
    cb.add_(100)                                       # a write through the copied base shows in the copied view
    assert torch.equal(cv, view + 100)
    assert torch.equal(base, torch.arange(12.0).reshape(3, 4))     # the originals are untouched


def test_clones_keep_requires_grad_grad_and_parameters():
    leaf = torch.randn(3, requires_grad=True)
    leaf.grad = torch.ones(3)
    param = torch.nn.Parameter(torch.randn(2))
    nonleaf = leaf * 2
    c_leaf, c_param, c_nonleaf, n, d = clone_inputs((leaf, param, nonleaf, 3, {"k": leaf}))
    assert c_leaf.requires_grad and c_leaf.is_leaf and torch.equal(c_leaf.grad, leaf.grad)
    assert c_leaf.grad is not leaf.grad
    assert isinstance(c_param, torch.nn.Parameter) and c_param.requires_grad
    assert c_nonleaf.requires_grad and c_nonleaf.is_leaf and torch.equal(c_nonleaf, nonleaf)
    assert n == 3 and d["k"] is c_leaf


def test_preserve_rng_state_replays_the_same_draws():
    with preserve_rng_state():
        first = torch.rand(4)
    second = torch.rand(4)
    assert torch.equal(first, second)

    @preserve_rng_state()
    def draw():
        return torch.randn(2)

    assert torch.equal(draw(), draw())
