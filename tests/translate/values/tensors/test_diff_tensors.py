"""Differential tests: tensor programs compiled by framejit must match eager PyTorch.

Covers arithmetic and in-place ops, torch.* functions, torch.nn.functional, Tensor methods,
indexing and slicing, tensor attributes, creation functions and dtype conversions. Every function
here is expected to become exactly one graph with no break (fullgraph=True, graphs=1) unless its
case says otherwise.
"""

import pytest
import torch
import torch.nn.functional as F

from tests.differential import CASE_FIELDS, case, randint, randn, run_case

ONE = dict(fullgraph=True, graphs=1)
GRAD = dict(fullgraph=True, graphs=1, grads=True)

x34 = randn(3, 4, seed=1)
y34 = randn(3, 4, seed=2)
g34 = randn(3, 4, seed=3, requires_grad=True)
h34 = randn(3, 4, seed=4, requires_grad=True)
w45 = randn(4, 5, seed=5)
gw45 = randn(4, 5, seed=6, requires_grad=True)
x234 = randn(2, 3, 4, seed=7)
i34 = randint(-5, 10, 3, 4, seed=8)
j34 = randint(1, 4, 3, 4, seed=9)
img = randn(2, 3, 8, 8, seed=10)
kernel = randn(6, 3, 3, 3, seed=11)
v4 = randn(4, seed=12)


# ---------------------------------------------------------------- arithmetic


def add_then_scale(x, y):
    return x + y * 2


def sub_over_abs(x, y):
    return (x - y) / (y.abs() + 1)


def polynomial(x):
    return -x ** 2 + 3 * x ** 3 - 0.5


def reflected_ops(x):
    return 1 - x, 2 / (x.abs() + 1), 3 ** x.clamp(-1, 1)


def int_floordiv_mod(a):
    return a // 3, a % 3, a * 2 - 1


def int_true_div_promotes(a, b):
    return a / b


def bool_logic(x, y):
    return (x > 0) & (y < 0), (x > 0) | ~(y > 0), (x > 0) ^ (y > 0)


def compare_tensors(x, y):
    return x == y, x != y, x <= y, torch.eq(x, x)


def exp_log_roundtrip(x):
    return torch.exp(x).log() + torch.log1p(x.abs())


def pythagorean_identity(x):
    return torch.sin(x) ** 2 + torch.cos(x) ** 2


def squashing(x):
    return torch.tanh(x) * torch.sigmoid(x)


def rounding_family(x):
    y = x * 3
    return y.floor(), y.ceil(), y.round(), y.trunc(), y.sign()


def sqrt_rsqrt_reciprocal(x):
    y = x.abs() + 0.1
    return y.sqrt() * y.rsqrt() + y.reciprocal()


def lerp_between(x, y):
    return torch.lerp(x, y, 0.25)


def minimum_maximum(x, y):
    return torch.minimum(x, y) + torch.maximum(x, y)


# ---------------------------------------------------------------- in-place on local tensors


def inplace_chain_on_clone(x):
    y = x.clone()
    y += 1
    y.mul_(2)
    y.sub_(0.5)
    return y


def inplace_on_input(x):
    x.add_(1)
    return x * 2


def inplace_mutate_input_only(x):
    x.mul_(3)


def setitem_row(x):
    y = torch.zeros(3, 4)
    y[1] = x[0]
    return y


def setitem_slice_scalar(x):
    y = x.clone()
    y[:, 0] = 0.0
    y[2, 1:3] += 5
    return y


def clamp_inplace(x):
    y = x * 2
    y.clamp_(min=-1.0, max=1.0)
    return y


def relu_inplace_then_add(x):
    y = x - 0.1
    torch.relu_(y)
    return y + 1


def zero_fill_inplace(x):
    y = x.clone()
    y.zero_()
    y.fill_(2.5)
    return y + x


# ---------------------------------------------------------------- reductions


def sum_mean_dims(x):
    return x.sum(dim=(0, 1)), x.mean(-1, keepdim=True), x.sum(1)


def max_with_indices(x):
    values, indices = x.max(dim=1)
    return values * 2, indices


def argmax_argmin(x):
    return x.argmax(), x.argmin(dim=0), torch.argmax(x, dim=1, keepdim=True)


def sort_namedtuple(x):
    return torch.sort(x, dim=-1, descending=True)


def topk_values(x):
    return x.topk(2, dim=1).values.sum()


def cumulative(x):
    return x.cumsum(0), torch.cumprod(x, dim=1)


def var_std(x):
    return x.var(dim=0), x.std(dim=1, unbiased=False), torch.var_mean(x, dim=1)


def norms(x):
    return x.norm(dim=1), torch.linalg.norm(x), x.norm(p=1)


def logsumexp_rows(x):
    return torch.logsumexp(x, dim=-1)


def any_all(x):
    return (x > 0).any(), (x > -10).all(), (x > 0).any(dim=1)


def prod_amax(x):
    return x.prod(dim=0), x.amax(dim=1), x.amin()


# ---------------------------------------------------------------- linear algebra


def matmul_operator(x, w):
    return x @ w


def mm_and_matmul(x, w):
    return torch.mm(x, w) - torch.matmul(x, w)


def batched_matmul(x):
    return torch.bmm(x, x.transpose(1, 2))


def addmm_bias(x, w):
    return torch.addmm(torch.ones(5), x, w, beta=0.5, alpha=2.0)


def einsum_contract(x, w):
    return torch.einsum("ij,jk->ik", x, w)


def outer_and_dot(v):
    return torch.outer(v, v), torch.dot(v, v)


def triangle_parts(x):
    square = x[:, :3]
    return torch.tril(square), square.triu(diagonal=1)


# ---------------------------------------------------------------- torch.nn.functional


def relu_gelu(x):
    return F.relu(x) + F.gelu(x)


def softmax_family(x):
    return F.softmax(x, dim=-1), F.log_softmax(x, dim=0)


def layer_norm_affine(x):
    weight = torch.ones(4) * 2
    bias = torch.zeros(4) + 0.5
    return F.layer_norm(x, (4,), weight, bias)


def linear_with_bias(x, w):
    return F.linear(x, w.t(), torch.arange(5.0))


def conv2d_padded(img, kernel):
    return F.conv2d(img, kernel, torch.ones(6), padding=1)


def dropout_eval(x):
    return F.dropout(x, p=0.5, training=False) + 1


def silu_leaky(x):
    return F.silu(x) - F.leaky_relu(x, negative_slope=0.1)


def mse_loss_mean(x, y):
    return F.mse_loss(x, y)


def cross_entropy_loss(x):
    target = torch.tensor([0, 3, 1])
    return F.cross_entropy(x, target)


def pooling(img):
    return F.max_pool2d(img, 2), F.avg_pool2d(img, kernel_size=2, stride=2)


def pad_constant(x):
    return F.pad(x, (1, 2), value=-1.0)


def embedding_lookup(idx, table):
    return F.embedding(idx, table)


def normalize_rows(x):
    return F.normalize(x, dim=1)


def attention_scores(x):
    q = x.unsqueeze(0)
    return F.scaled_dot_product_attention(q, q, q)


def mlp_block(x, w):
    hidden = F.gelu(x @ w)
    return F.layer_norm(hidden, hidden.shape[-1:])


# ---------------------------------------------------------------- shape methods and indexing


def view_reshape(x):
    return x.view(2, -1), x.reshape(-1), x.view(4, 3).reshape(2, 6)


def permute_transpose(x):
    return x.permute(2, 0, 1).transpose(0, 1).contiguous()


def transpose_T_and_mT(x):
    return x.T + x.t(), x.unsqueeze(0).mT


def unsqueeze_squeeze(x):
    return x.unsqueeze(1).squeeze(1), x[None].shape, x[..., None]


def flatten_unflatten(x):
    flat = x.flatten(1)
    return flat, flat.unflatten(1, (2, 6))


def expand_repeat(v):
    return v.expand(3, 4), v.repeat(2, 1), v.unsqueeze(0).expand_as(torch.empty(2, 4))


def slice_columns(x):
    return x[:, 1:3]


def slice_mixed(x):
    return x[0], x[-1, ::2], x[1:, -2:], x[:, None, 2]


def ellipsis_index(x):
    return x[..., 0] + x[..., -1]


def index_with_int_tensor(x):
    idx = torch.tensor([2, 0])
    return x[idx], x[:, idx]


def gather_scatter(x):
    idx = torch.tensor([[0, 1], [2, 3], [1, 1]])
    picked = torch.gather(x, 1, idx)
    return torch.zeros(3, 4).scatter_(1, idx, picked)


def masked_fill_negative(x):
    return x.masked_fill(x < 0, 0.0)


def clamp_variants(x):
    return x.clamp(-0.5, 0.5), x.clamp(min=0), torch.clamp(x, max=0.1)


def where_select(x, y):
    return torch.where(x > 0, x, y)


def where_scalar_branch(x):
    return torch.where(x > 0, x, 0.0)


def cat_stack(x, y):
    return torch.cat([x, y], dim=1), torch.stack((x, y)), torch.cat((x, y))


def index_select_narrow(x):
    return x.index_select(1, torch.tensor([3, 0])), x.narrow(1, 1, 2)


def flip_roll(x):
    return x.flip(0), torch.roll(x, shifts=1, dims=1)


# ---------------------------------------------------------------- attributes


def shape_attributes(x):
    return x.shape, x.shape[0] * 2, x.ndim, x.dim(), x.numel()


def size_calls(x):
    return x.size(), x.size(1), x.size(-1) + 1, len(x)


def dtype_and_device(x):
    return x.dtype, x.device, x.is_floating_point(), x.requires_grad


def view_from_shape(x):
    return x.view(x.shape[0], -1) * x.shape[-1]


def new_tensors_like_input(x):
    return x.new_zeros(x.shape), x.new_ones((2,)), x.new_full((2, 2), 3.0)


def shape_arithmetic_in_ops(x):
    n, m = x.shape
    return x.reshape(m, n) / (n * m)


# ---------------------------------------------------------------- creation


def zeros_ones_plus_input(x):
    return torch.zeros(3, 4) + x * torch.ones(3, 4)


def like_constructors(x):
    return torch.ones_like(x), torch.zeros_like(x), torch.full_like(x, 7), torch.empty_like(x).shape


def arange_variants():
    return torch.arange(5) * 2, torch.arange(0, 1, 0.25), torch.arange(2, 10, 3)


def full_and_eye(x):
    return torch.full((2, 3), 7.0), torch.eye(3) @ x


def tensor_literal(x):
    return x + torch.tensor([1.0, 2.0, 3.0, 4.0])


def linspace_steps():
    return torch.linspace(0, 1, steps=5)


def empty_tensor_shape_only(x):
    return torch.empty(x.shape[0], 2).shape


# ---------------------------------------------------------------- dtype conversions


def to_float_types(a):
    return a.float(), a.to(torch.float64), a.double().dtype


def to_int_and_bool(x):
    return (x * 10).int(), (x * 10).long(), x.bool(), (x > 0).to(torch.int32)


def type_as_half(x, a):
    return a.type_as(x), x.half().float()


def mixed_dtype_promotion(x, a):
    return x + a, a * 1.5, a + True


def int_tensor_ops(a, b):
    return a * b + 1, a.sum(), a.max(), torch.remainder(a, b), a << 1


def bool_tensor_ops(x):
    mask = x > 0
    return mask.sum(), mask.float().mean(), ~mask, mask.int() * 3, torch.logical_and(mask, ~mask)


# ---------------------------------------------------------------- autograd


def grad_through_matmul(g, gw):
    return (g @ gw).relu().sum(dim=0)


def grad_two_inputs(g, h):
    return g * h + g.exp(), h.tanh()


def grad_softmax_layernorm(g):
    return F.layer_norm(F.softmax(g, dim=-1), (4,))


def grad_with_constant_input(g, x):
    return g * x + x.sum()


def grad_through_view_and_index(g):
    return g.view(4, 3)[1:, :2].sum() + g[:, 0]


# ---------------------------------------------------------------- conversions that hand back the tensor itself


def float_of_float_is_itself(g):
    y = g.float()
    return y is g, y.is_leaf, y.requires_grad, g * 2


def to_same_dtype_is_itself(x):
    y = x.to(torch.float32)
    return y is x, y + 1


def contiguous_of_contiguous_is_itself(x):
    return x.contiguous() is x, x.t().contiguous() is x, x + 1


def cpu_of_cpu_is_itself(x):
    return x.cpu() is x, x.to("cpu") is x, x * 3


def as_tensor_of_tensor_is_itself(x):
    return torch.as_tensor(x) is x, torch.as_tensor(x, dtype=torch.float64) is x, x - 1


def type_same_is_itself(x):
    y = x.type(torch.float32)
    return y is x, x + 1


def noop_conversion_of_intermediate(g):
    y = g * 2
    z = y.float().contiguous()
    return z is y, z.is_leaf, z


def noop_conversion_then_in_place(x):
    y = x.float().contiguous()
    y.add_(1)
    return y is x, y


def detached_leaf_requiring_grad(g):
    y = g.detach().requires_grad_()
    return y.is_leaf, y.requires_grad, (y * 2).is_leaf, g.detach().is_leaf


def leaf_answers_of_intermediates(x, g):
    a = x * 2
    b = g * 2
    return a.is_leaf, b.is_leaf, b.detach().is_leaf, (a + g).is_leaf


CASES = [
    case(float_of_float_is_itself, g34, **ONE),
    case(to_same_dtype_is_itself, x34, **ONE),
    case(contiguous_of_contiguous_is_itself, x34, **ONE),
    case(cpu_of_cpu_is_itself, x34, **ONE),
    case(as_tensor_of_tensor_is_itself, x34, **ONE),
    case(type_same_is_itself, x34, **ONE),
    case(noop_conversion_of_intermediate, g34, **ONE),
    case(noop_conversion_then_in_place, x34, **ONE),
    case(detached_leaf_requiring_grad, g34, **ONE),
    case(leaf_answers_of_intermediates, x34, g34, **ONE),
    case(add_then_scale, x34, y34, **ONE),
    case(sub_over_abs, x34, y34, **ONE),
    case(polynomial, x34, **ONE),
    case(reflected_ops, x34, **ONE),
    case(int_floordiv_mod, i34, **ONE),
    case(int_true_div_promotes, i34, j34, **ONE),
    case(bool_logic, x34, y34, **ONE),
    case(compare_tensors, x34, y34, **ONE),
    case(exp_log_roundtrip, x34, **ONE),
    case(pythagorean_identity, x34, **ONE),
    case(squashing, x34, **ONE),
    case(rounding_family, x34, **ONE),
    case(sqrt_rsqrt_reciprocal, x34, **ONE),
    case(lerp_between, x34, y34, **ONE),
    case(minimum_maximum, x34, y34, **ONE),
    case(inplace_chain_on_clone, x34, **ONE),
    case(inplace_on_input, x34, **ONE),
    case(inplace_mutate_input_only, x34, **ONE),
    case(setitem_row, x34, **ONE),
    case(setitem_slice_scalar, x34, **ONE),
    case(clamp_inplace, x34, **ONE),
    case(relu_inplace_then_add, x34, **ONE),
    case(zero_fill_inplace, x34, **ONE),
    case(sum_mean_dims, x34, **ONE),
    case(max_with_indices, x34, **ONE),
    case(argmax_argmin, x34, **ONE),
    case(sort_namedtuple, x34, **ONE),
    case(topk_values, x34, **ONE),
    case(cumulative, x34, **ONE),
    case(var_std, x34, **ONE),
    case(norms, x34, **ONE),
    case(logsumexp_rows, x34, **ONE),
    case(any_all, x34, **ONE),
    case(prod_amax, x34, **ONE),
    case(matmul_operator, x34, w45, **ONE),
    case(mm_and_matmul, x34, w45, **ONE),
    case(batched_matmul, x234, **ONE),
    case(addmm_bias, x34, w45, **ONE),
    case(einsum_contract, x34, w45, **ONE),
    case(outer_and_dot, v4, **ONE),
    case(triangle_parts, x34, **ONE),
    case(relu_gelu, x34, **ONE),
    case(softmax_family, x34, **ONE),
    case(layer_norm_affine, x34, **ONE),
    case(linear_with_bias, x34, w45, **ONE),
    case(conv2d_padded, img, kernel, **ONE),
    case(dropout_eval, x34, **ONE),
    case(silu_leaky, x34, **ONE),
    case(mse_loss_mean, x34, y34, **ONE),
    case(cross_entropy_loss, x34, **ONE),
    case(pooling, img, **ONE),
    case(pad_constant, x34, **ONE),
    case(embedding_lookup, randint(0, 4, 2, 3, seed=13), w45.t().contiguous(), **ONE),
    case(normalize_rows, x34, **ONE),
    case(attention_scores, x34, **ONE),
    case(mlp_block, x34, w45, **ONE),
    case(view_reshape, x34, **ONE),
    case(permute_transpose, x234, **ONE),
    case(transpose_T_and_mT, x34, **ONE),
    case(unsqueeze_squeeze, x34, **ONE),
    case(flatten_unflatten, x234, **ONE),
    case(expand_repeat, v4, **ONE),
    case(slice_columns, x34, **ONE),
    case(slice_mixed, x34, **ONE),
    case(ellipsis_index, x234, **ONE),
    case(index_with_int_tensor, x34, **ONE),
    case(gather_scatter, x34, **ONE),
    case(masked_fill_negative, x34, **ONE),
    case(clamp_variants, x34, **ONE),
    case(where_select, x34, y34, **ONE),
    case(where_scalar_branch, x34, **ONE),
    case(cat_stack, x34, y34, **ONE),
    case(index_select_narrow, x34, **ONE),
    case(flip_roll, x34, **ONE),
    case(shape_attributes, x34, fullgraph=True),
    case(size_calls, x34, fullgraph=True),
    case(dtype_and_device, g34, fullgraph=True),
    case(view_from_shape, x34, **ONE),
    case(new_tensors_like_input, x34, **ONE),
    case(shape_arithmetic_in_ops, x34, **ONE),
    case(zeros_ones_plus_input, x34, **ONE),
    case(like_constructors, x34, **ONE),
    case(arange_variants, **ONE),
    case(full_and_eye, x34[:, :3].contiguous(), **ONE),
    case(tensor_literal, x34, **ONE),
    case(linspace_steps, **ONE),
    case(empty_tensor_shape_only, x34, fullgraph=True),
    case(to_float_types, i34, **ONE),
    case(to_int_and_bool, x34, **ONE),
    case(type_as_half, x34, i34, **ONE),
    case(mixed_dtype_promotion, x34, i34, **ONE),
    case(int_tensor_ops, i34, j34, **ONE),
    case(bool_tensor_ops, x34, **ONE),
    case(grad_through_matmul, g34, gw45, **GRAD),
    case(grad_two_inputs, g34, h34, **GRAD),
    case(grad_softmax_layernorm, g34, **GRAD),
    case(grad_with_constant_input, g34, x34, **GRAD),
    case(grad_through_view_and_index, g34, **GRAD),
]


AOT_CASES = [
    case(grad_through_matmul, g34, gw45, backend="aot_eager", name="aot_grad_through_matmul", **GRAD),
    case(grad_softmax_layernorm, g34, backend="aot_eager", name="aot_grad_softmax_layernorm", **GRAD),
    case(conv2d_padded, img, kernel, backend="aot_eager", name="aot_conv2d_padded", **ONE),
]


@pytest.mark.parametrize(CASE_FIELDS, AOT_CASES)
def test_matches_eager_through_aot_eager(fn, args, kwargs, options):
    run_case(fn, args, kwargs, options)


@pytest.mark.parametrize(CASE_FIELDS, CASES)
def test_matches_eager(fn, args, kwargs, options):
    run_case(fn, args, kwargs, options)


def test_same_tensor_twice_keeps_identity():
    def twice(x):
        y = x + 1
        return y, y

    out = run_case(twice, (x34,), {}, ONE)
    assert out[0] is out[1]


def test_input_returned_unchanged_is_the_input():
    def passthrough(x, y):
        return x

    import framejit

    compiled = framejit.compile(passthrough)
    a = randn(2, seed=20)
    assert compiled(a, a + 1) is a
    run_case(passthrough, (x34, y34), {}, dict(fullgraph=True))
