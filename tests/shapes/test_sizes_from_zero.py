"""A size automatic dynamic learnt serves 0 and 1 too (framejit/shapes/oblivious.py): sizes 3, 2, 1, 0
in two conversions (torch.compile: four), and every call equal to eager, including where the meaning
of an op splits at size 1 or 0 (a broadcast, a squeeze, a contiguous() that returns its input, an
empty reduction that raises): there a guard splits the entry."""
import pytest
import torch
import torch.nn.functional as F

import framejit
from tests.differential import check_calls, randn

ORDERS = [(3, 2, 1, 0), (0, 1, 2, 3), (2, 1, 3, 0, 1, 2)]


def conversions():
    """Conversions that produced an entry, from framejit's public metrics."""
    return sum(1 for m in framejit.metrics() if m.outcome == "entry")


def sweep(fn, make, sizes, **options):
    framejit.clear_metrics()
    calls = [make(n) for n in sizes]
    compiled, counter = check_calls(fn, calls, **options)
    return conversions(), counter


@pytest.mark.parametrize("sizes", ORDERS)
def test_a_function_converts_at_most_twice(sizes):
    def f(x, y):
        return (x * 2 + y).sum(0) + x.shape[0]
    n, _ = sweep(f, lambda n: (randn(n, 4, seed=n), randn(n, 4, seed=n + 9)), sizes)
    assert n <= 2


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize("sizes", ORDERS[:2])
def test_a_module_converts_at_most_twice_with_grads(sizes, backend):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.LayerNorm(8), torch.nn.GELU(), torch.nn.Linear(8, 3))
    n, _ = sweep(model, lambda n: (randn(n, 4, seed=n, requires_grad=True),), sizes, backend=backend,
                 grads=True, atol=1e-5)
    assert n <= 2


def test_inductor_serves_sizes_1_and_0_with_grads():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))
    n, _ = sweep(model, lambda n: (randn(n, 4, seed=n, requires_grad=True),), (3, 2, 1, 0), backend="inductor",
                 grads=True, atol=1e-5)
    assert n <= 2


# Each of these means something else at size 1 or 0 than at 2 and more: every call must still equal eager.
SPLITS = {
    "broadcast_against_itself": lambda x: x + x[:, :1].t()[:, :x.shape[0]].t(),
    "squeeze": lambda x: x.squeeze(0) * 2,
    "contiguous_returns_input": lambda x: x.t().contiguous().mul_(2),
    "reshape_view_or_copy": lambda x: x.t().reshape(-1).add_(1),
    "is_contiguous_branch": lambda x: x * 2 if x.t().is_contiguous() else x - 1,
    "size_branch": lambda x: x * 2 if x.shape[0] == 1 else x + 1,
    "expand_size_1": lambda x: x.expand(3, 4),
    "max_of_empty": lambda x: x.max(0).values,
    "first_row": lambda x: x[0] + 1,
    "mean_std": lambda x: (x.mean(0), x.std(0)),
    "batch_norm_training": lambda x: F.batch_norm(x, None, None, training=True),
    "unbind": lambda x: [t * 2 for t in x.unbind(0)],
    "view_flat": lambda x: x.view(-1, 2),
    "matmul_outer": lambda x: x.t() @ x,
    "softmax_dim0": lambda x: x.softmax(0),
    "cat_self": lambda x: torch.cat([x, x * 2], 0),
}


@pytest.mark.parametrize("name", sorted(SPLITS))
@pytest.mark.parametrize("sizes", ORDERS)
def test_where_meaning_splits_at_1_or_0_every_call_is_eager(name, sizes):
    sweep(SPLITS[name], lambda n: (randn(n, 4, seed=n),), sizes)


@pytest.mark.parametrize("pairs", [[(3, 3), (2, 2), (2, 1), (1, 2), (1, 1), (0, 1), (1, 0), (0, 0), (3, 2)],
                                   [(1, 1), (2, 2), (2, 1), (0, 0), (1, 3), (3, 3)]])
def test_a_size_1_that_broadcasts_is_guarded(pairs):
    def f(x, y):
        return x + y, (x * y).sum(0)
    sweep(f, lambda p: (randn(p[0], 4, seed=p[0]), randn(p[1], 4, seed=7 + p[1])), pairs)


def tiny_gpt2():
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(vocab_size=96, n_embd=32, n_layer=2, n_head=4, n_positions=64,
                                  attn_implementation="eager")
    return transformers.GPT2LMHeadModel(cfg).eval()


def _logits_sweep(model, shapes):
    framejit.reset()
    framejit.clear_metrics()
    compiled = framejit.compile(model)
    gen = torch.Generator().manual_seed(3)
    with torch.no_grad():
        for shape in shapes:
            ids = torch.randint(0, 96, shape, generator=gen)
            mask = torch.ones(shape, dtype=torch.long)
            got = compiled(input_ids=ids, attention_mask=mask, use_cache=False).logits
            expected = model(input_ids=ids, attention_mask=mask, use_cache=False).logits
            torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)
    return conversions()


def test_transformers_batch_3_2_1_converts_twice():
    assert _logits_sweep(tiny_gpt2(), [(3, 6), (2, 6), (1, 6)]) == 2       # 3 before (batch 1 specialized)


def test_transformers_decode_step_length_1_equals_eager():
    # a sequence of length 1 (a decode step) is served by a new entry: matmul's decomposition reshapes
    # q @ k^T's (batch, heads, s, d) into (batch * heads, s, d), a view only where s == 1, so torch's
    # reshape guards s != 1 (a real split of its aliasing, though matmul's result is fresh either way)
    assert _logits_sweep(tiny_gpt2(), [(2, 6), (2, 5), (2, 1), (2, 3)]) <= 3


@pytest.mark.parametrize("sizes", [(6, 5, 1, 3), (3, 2, 1, 0)])
def test_a_symbolic_flag_where_the_op_takes_a_plain_bool(sizes):
    """transformers' sdpa path computes `is_causal = q.shape[2] > 1`: with the size learnt from 0 that
    is a SymBool, which the op's schema refuses; it gets the example's value, guarded, and no break."""
    def attend(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=q.shape[2] > 1) * 2
    sweep(attend, lambda n: tuple(randn(1, 2, n, 4, seed=n + i) for i in range(3)), sizes)
    assert sum(m.graph_break_count for m in framejit.metrics()) == 0
