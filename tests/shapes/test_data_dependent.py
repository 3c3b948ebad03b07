"""Config.capture_data_dependent: sizes and values read from tensor data as unbacked symbols.

With the option on, `x.nonzero()`, `x[mask]`, `torch.unique`, `torch.where(mask)` and `.item()` feeding a
size stay in one graph (one conversion serves every data: the unbacked symbols are not guarded); a
Python decision on such a value is still a graph break. With it off (the default) each is a graph break.
Every call is compared with eager on fresh copies (tests/differential.py), gradients included."""
import copy

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import framejit
from tests.differential import check_calls, randn


def _calls(*tensors_per_call):
    return [tuple(t) for t in tensors_per_call]


def data(seed, n=12):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, generator=g)
    x[torch.rand(n, generator=g) < 0.4] = 0.0       # a different number of zeros in each call
    return x


def nonzero_rows(x):
    return x.nonzero() * 2 + 1


def masked(x):
    return x[x > 0] * 2 + x.sum()


def unique(x):
    return torch.unique((x * 2).round()) + 1


def where_mask(x):
    (idx,) = torch.where(x != 0)
    return idx + 1, x[idx].sum()


def item_sizes_a_factory(x, n):
    return torch.zeros(n.item(), 2) + x.sum()


def item_slices(x, k):
    return x[:k.item()] * 2, x[k.item():].sum()


def item_then_arithmetic(x, k):
    n = k.item() + 1
    return torch.ones(n * 2).cumsum(0) * x.mean()


CASES = [
    (nonzero_rows, lambda i: (data(i),)),
    (masked, lambda i: (data(i),)),
    (unique, lambda i: (data(i),)),
    (where_mask, lambda i: (data(i),)),
    (item_sizes_a_factory, lambda i: (data(i), torch.tensor(i + 2))),
    (item_slices, lambda i: (data(i), torch.tensor(2 * i + 1))),
    (item_then_arithmetic, lambda i: (data(i), torch.tensor(i))),
]


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize("fn, make", CASES, ids=[c[0].__name__ for c in CASES])
def test_one_graph_serves_every_data_with_the_option(fn, make, backend):
    _, counter = check_calls(fn, [make(i) for i in range(4)], backend=backend, capture_data_dependent=True)
    assert counter.frame_count == 1
    report = framejit.explain(fn, backend=backend, capture_data_dependent=True)(*make(0))
    assert report.graph_break_count == 0, report.break_reasons


@pytest.mark.parametrize("fn, make", CASES, ids=[c[0].__name__ for c in CASES])
def test_without_the_option_it_stays_a_graph_break(fn, make):
    check_calls(fn, [make(i) for i in range(2)])
    report = framejit.explain(fn)(*make(0))
    assert report.graph_break_count >= 1
    assert any("data" in r.reason or "item" in r.reason for r in report.break_reasons), report.break_reasons


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_gradients_through_a_boolean_mask_and_index_add(backend):
    def f(x, w):
        h = x @ w
        picked = h[h.sum(-1) > 0]
        out = torch.zeros_like(h).index_add(0, (h.sum(-1) > 0).nonzero().squeeze(-1), picked * 3)
        return out.sum() + picked.pow(2).sum()
    calls = [(randn(6, 4, seed=i), randn(4, 4, seed=10 + i, requires_grad=True)) for i in range(3)]
    _, counter = check_calls(f, calls, backend=backend, grads=True, capture_data_dependent=True)
    assert counter.frame_count == 1


def test_a_branch_on_an_item_is_a_graph_break_with_the_option():
    def f(x):
        n = (x > 0).sum().item()
        if n > 3:
            return x * 2
        return x - 1
    check_calls(f, [(data(i),) for i in range(4)], capture_data_dependent=True)
    report = framejit.explain(f, capture_data_dependent=True)(data(0))
    assert report.graph_break_count == 1
    assert "tensor data" in report.break_reasons[0].reason


def test_with_dynamic_sizes_too():
    def f(x):
        return x[x > 0].sum() + x.nonzero().shape[0] * x.shape[0]
    calls = [(data(i, n=5 + 3 * i),) for i in range(4)]
    _, counter = check_calls(f, calls, capture_data_dependent=True, dynamic=True)
    assert counter.frame_count == 1


def test_fullgraph_with_the_option_compiles_masks():
    f = framejit.compile(masked, fullgraph=True, capture_data_dependent=True)
    x = data(3)
    torch.testing.assert_close(f(x), masked(x))
    with pytest.raises(framejit.Unsupported):
        framejit.compile(masked, fullgraph=True)(data(3))


def test_option_is_a_config_setting():
    assert framejit.Config().capture_data_dependent is False
    with pytest.raises(TypeError):
        framejit.Config(capture_data_dependent=1)


# ---- MoE routing: topk -> one_hot -> where per expert -> index_add, one graph ----------------------

class Expert(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.w1 = nn.Linear(d, h, bias=False)
        self.w2 = nn.Linear(h, d, bias=False)
        self.w3 = nn.Linear(d, h, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class SparseMoe(nn.Module):
    """Mixtral's sparse MoE block as transformers wrote it before grouped experts: every expert runs on
    the tokens routed to it (a data-dependent count), and the results are added back by index."""

    def __init__(self, d=8, h=16, experts=4, top_k=2):
        super().__init__()
        self.gate = nn.Linear(d, experts, bias=False)
        self.experts = nn.ModuleList(Expert(d, h) for _ in range(experts))
        self.top_k = top_k

    def forward(self, hidden):
        b, t, d = hidden.shape
        hidden = hidden.view(-1, d)
        logits = self.gate(hidden)
        weights = F.softmax(logits, dim=1, dtype=torch.float)
        weights, selected = torch.topk(weights, self.top_k, dim=-1)
        weights = (weights / weights.sum(dim=-1, keepdim=True)).to(hidden.dtype)
        out = torch.zeros((b * t, d), dtype=hidden.dtype)
        mask = F.one_hot(selected, num_classes=len(self.experts)).permute(2, 1, 0)
        for e, expert in enumerate(self.experts):
            idx, top_x = torch.where(mask[e])
            current = hidden[None, top_x].reshape(-1, d)
            current = expert(current) * weights[top_x, idx, None]
            out.index_add_(0, top_x, current.to(hidden.dtype))
        return out.reshape(b, t, d), logits


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_moe_block_in_one_graph(backend):
    torch.manual_seed(0)
    moe = SparseMoe()
    calls = [(randn(2, 5, 8, seed=i, requires_grad=True),) for i in range(3)]
    compiled, counter = check_calls(moe, calls, backend=backend, grads=True, capture_data_dependent=True)
    assert counter.frame_count == 1
    x = randn(2, 7, 8, seed=9)                         # the parameters' gradients too
    moe.zero_grad(set_to_none=True)
    twin = copy.deepcopy(moe)
    sum(o.sum() for o in compiled(x)).backward()
    sum(o.sum() for o in twin(x)).backward()
    for (name, p), q in zip(moe.named_parameters(), twin.parameters()):
        torch.testing.assert_close(p.grad, q.grad, msg=name)
    report = framejit.explain(moe, backend=backend, capture_data_dependent=True)(randn(2, 5, 8))
    assert report.graph_count == 1 and report.graph_break_count == 0, report.break_reasons


def test_moe_block_without_the_option_breaks():
    torch.manual_seed(0)
    moe = SparseMoe()
    report = framejit.explain(moe)(randn(2, 5, 8))
    assert report.graph_break_count >= 1


def test_inductor_runs_a_masked_graph():
    def f(x):
        return x[x > 0].sum() * 2, x.nonzero().shape[0]
    _, counter = check_calls(f, [(data(i),) for i in range(2)], backend="inductor", capture_data_dependent=True)
    assert counter.frame_count == 1


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_item_slice_bounds_past_the_end_and_negative(backend):
    calls = [(torch.arange(6.), torch.tensor(k)) for k in (3, 20, -2, 0, 5)]
    _, counter = check_calls(item_slices, calls, backend=backend, capture_data_dependent=True)
    assert counter.frame_count == 1


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_item_negative_size_raises_as_eagerly(backend):
    calls = [(torch.ones(2), torch.tensor(n)) for n in (2, 0, -1)]
    _, counter = check_calls(item_sizes_a_factory, calls, backend=backend, capture_data_dependent=True)
    assert counter.frame_count == 1
