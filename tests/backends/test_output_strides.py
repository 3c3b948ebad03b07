"""A compiled graph's outputs have eager's strides under inductor (backends/passes/output_strides.py).

Issue 24's llama_kv row: Llama's KV cache is `torch.cat([torch.tensor([]), k])` with `k` transposed. Eagerly
the result is contiguous; inductor decomposes the cat into a copy of `k` that keeps k's transposed layout,
so the cache came back with strides (128, 8, 16, 1) where eager's are (128, 64, 8, 1). The family is every
cat that inductor's decomposition reduces to one input (one tensor, or one beside legacy empty tensors):
cat, concat, hstack, vstack. Each case checks the strides of what the call returns, and what code after a
graph break sees (`is_contiguous()`, `.view()`, which raises on the transposed layout), with the shared
differential helper on top.
"""
import pytest
import torch

from tests.differential import check, randn


def cat_beside_an_empty(x):
    return torch.cat([torch.tensor([]), x.t() * 2], dim=0)


def cat_of_one(x):
    return torch.cat([x.t() * 2])


def concat_of_one(x):
    return torch.concat((x.t() + 1,), dim=1)


def hstack_of_one(x):
    return torch.hstack([x.t() * 2])


def vstack_beside_an_empty(x):
    return torch.vstack([torch.empty(0, 4), torch.sin(x.t())])


def kv_cache_like(x):
    """Llama's cache update: a transposed projection, rotated, concatenated onto an empty cache."""
    k = x.view(2, 3, 2, 4).transpose(1, 2)
    k = k * 0.5 + torch.cat((-k[..., 2:], k[..., :2]), dim=-1)
    return torch.cat([torch.tensor([]), k], dim=-2), k.sum()


CASES = [cat_beside_an_empty, cat_of_one, concat_of_one, hstack_of_one, vstack_beside_an_empty]


def _strides(result):
    results = result if isinstance(result, tuple) else (result,)
    return [r.stride() for r in results if isinstance(r, torch.Tensor)]


def _check_strides(fn, *args, grads=False):
    import framejit
    framejit.reset()
    eager = fn(*[a.detach().clone().requires_grad_(a.requires_grad) for a in args])
    compiled_fn = framejit.compile(fn, backend="inductor")
    compiled = compiled_fn(*[a.detach().clone().requires_grad_(a.requires_grad) for a in args])
    again = compiled_fn(*[a.detach().clone().requires_grad_(a.requires_grad) for a in args])
    assert _strides(compiled) == _strides(eager), fn.__name__
    assert _strides(again) == _strides(eager), fn.__name__
    check(fn, *args, backend="inductor", grads=grads)


@pytest.mark.parametrize("fn", CASES, ids=lambda f: f.__name__)
def test_cat_reduced_to_one_input_keeps_eager_strides(fn):
    _check_strides(fn, randn(4, 6))


def test_kv_cache_like_keeps_eager_strides():
    _check_strides(kv_cache_like, randn(2, 3, 8, seed=3))


def test_kv_cache_like_with_grads():
    _check_strides(kv_cache_like, randn(2, 3, 8, seed=4, requires_grad=True), grads=True)


def viewed_after_a_break(x):
    y = torch.cat([torch.tensor([]), x.t() * 2], dim=0)
    print("break")
    return y.is_contiguous(), y.view(-1)


def test_code_after_a_break_sees_eager_layout():
    """Before the pass, `y.view(-1)` raised in the resume function ('view size is not compatible')."""
    check(viewed_after_a_break, randn(4, 6), backend="inductor")


def a_view_of_the_input(x):
    return x.t(), torch.cat([x.t() * 2])


def test_outputs_sharing_an_input_are_left_alone():
    """An output that views an input keeps its identity and layout (the pass plans no copy for it)."""
    _check_strides(a_view_of_the_input, randn(4, 6))


def fresh_outputs(x):
    return torch.sin(x) * 2, x.sum(0)


def _graph_in(namespace):
    return namespace.get("__fj_graph")


def _is_restriding_wrapper(graph):
    return getattr(graph, "__qualname__", "") == "restriding.<locals>.run"


def test_an_empty_plan_takes_the_wrapper_out_of_the_call_path():
    """Outputs inductor lays out as eager does: after the first call, the entry and its dispatcher call the
    compiled graph itself, not output_strides' wrapper (which had cost every call about 0.5 us). Failed before:
    the wrapper stayed in the namespaces for good."""
    import framejit
    framejit.reset()
    compiled_fn = framejit.compile(fresh_outputs, backend="inductor")
    x = randn(4, 6)
    first = compiled_fn(x.clone())                  # the conversion's call: through the entry's namespace
    result = compiled_fn._framejit_state.results[0]
    assert not _is_restriding_wrapper(_graph_in(result.ns.env)) and _graph_in(result.ns.env) is not None
    second = compiled_fn(x.clone())                 # through the dispatcher's copy of it
    assert not _is_restriding_wrapper(_graph_in(compiled_fn._framejit_env.env))
    expected = fresh_outputs(x.clone())
    for got in (first, second, compiled_fn(x.clone())):
        assert all(torch.allclose(a, b) and a.stride() == b.stride() for a, b in zip(got, expected))
    check(fresh_outputs, x, backend="inductor")


def test_a_planned_copy_keeps_the_wrapper():
    """kv_cache_like's first output needs eager's strides on every call: its wrapper stays."""
    import framejit
    framejit.reset()
    compiled_fn = framejit.compile(kv_cache_like, backend="inductor")
    x = randn(2, 3, 8, seed=3)
    for _ in range(3):
        got = compiled_fn(x.clone())
    assert _is_restriding_wrapper(_graph_in(compiled_fn._framejit_env.env))
    assert got[0].stride() == kv_cache_like(x.clone())[0].stride()
