"""Differential tests: dispatcher operators called through torch.ops are graph nodes
(translate/lookasides/torch_table.py's TORCH_OPS_TYPES).

`torch.ops.<ns>.<op>(...)` (an OpOverloadPacket: transformers' MoE experts call
`torch.ops.transformers.grouped_mm_fallback`) and `torch.ops.aten.<op>.<overload>(...)` (an OpOverload)
are ops like torch.add: one node each, their metadata from their fake kernels. Ops whose schema writes an
argument keep their node and write the caller's tensor; a custom op of our own (torch.library.custom_op
with a fake kernel, functional and mutating) behaves as eagerly, gradients included.
"""
import pytest
import torch

from tests.differential import CASE_FIELDS, case, randn, run_case

x23 = randn(2, 3, seed=1)
y23 = randn(2, 3, seed=2)
w34 = randn(3, 4, seed=3)
g23 = randn(2, 3, seed=4, requires_grad=True)
ONE = dict(graphs=1, breaks=0)


@torch.library.custom_op("framejit_test::scaled_sin", mutates_args=())
def scaled_sin(x: torch.Tensor, scale: float) -> torch.Tensor:
    return torch.sin(x) * scale


@scaled_sin.register_fake
def _(x, scale):
    return torch.empty_like(x)


def _scaled_sin_backward(ctx, grad):
    x, = ctx.saved_tensors
    return grad * torch.cos(x) * ctx.scale, None


def _scaled_sin_setup(ctx, inputs, output):
    ctx.save_for_backward(inputs[0])
    ctx.scale = inputs[1]


scaled_sin.register_autograd(_scaled_sin_backward, setup_context=_scaled_sin_setup)


@torch.library.custom_op("framejit_test::add_into", mutates_args=("out",))
def add_into(out: torch.Tensor, x: torch.Tensor) -> None:
    out.add_(x)


@add_into.register_fake
def _(out, x):
    return None


def aten_packet(x, y):
    return torch.ops.aten.add(x, y) * torch.ops.aten.relu(y)


def aten_overload(x, w):
    return torch.ops.aten.mm.default(x, w).sum(), torch.ops.aten.sum.dim_IntList(x, [1])


def aten_inplace_overload_writes_the_input(x, y):
    z = torch.ops.aten.add_.Tensor(x, y)
    return z * 2, x


def aten_inplace_packet_writes_the_input(x, y):
    torch.ops.aten.mul_(x, 3)
    return x + y


def custom_op_packet(x):
    return torch.ops.framejit_test.scaled_sin(x, 2.0) + 1


def custom_op_overload(x):
    return torch.ops.framejit_test.scaled_sin.default(x, 0.5)


def custom_op_mutating(out, x):
    torch.ops.framejit_test.add_into(out, x)
    return out * 2


@pytest.mark.parametrize(CASE_FIELDS, [
    case(aten_packet, x23, y23, **ONE),
    case(aten_overload, x23, w34, **ONE),
    case(aten_inplace_overload_writes_the_input, x23, y23, **ONE),
    case(aten_inplace_packet_writes_the_input, x23, y23, **ONE),
    case(custom_op_packet, x23, **ONE),
    case(custom_op_packet, g23, grads=True, name="custom_op_gradients", **ONE),
    case(custom_op_overload, x23, **ONE),
    case(custom_op_mutating, x23, y23, **ONE),
])
def test_torch_ops(fn, args, kwargs, options):
    run_case(fn, args, kwargs, options)
