"""Differential tests: lru_cache'd helpers called with constants are answered at translation, guarded by
calling them again (translate/lookasides/lru_cached_calls.py).

einops parses every pattern through such helpers: an einops ViT was 3 graphs / 11 breaks (torch.compile
1/0). Now einops code is one graph, and a cache cleared under a changed global is still noticed."""
import functools

import pytest
import torch

import framejit
from tests.differential import check, randn

TABLE = {"theta": 10000.0}


@functools.lru_cache(maxsize=None)
def frequencies(dim, theta):
    return tuple(1.0 / theta ** (i / dim) for i in range(0, dim, 2))


@functools.lru_cache(maxsize=4)
def layout(pattern):
    left, right = pattern.split("->")
    return [left.split(), right.split()], {"n": len(left.split())}, TABLE["theta"]


def uses_cached_helpers(x):
    (left, right), info, theta = layout("a b -> b a")
    scale = torch.tensor(frequencies(4, theta))
    return (x * scale).permute(1, 0) if left != right else x, info["n"]


def test_cached_helpers_are_one_graph():
    check(uses_cached_helpers, randn(2, 2), graphs=1, breaks=0)


def test_cleared_cache_with_a_new_answer_converts_again():
    compiled = framejit.compile(uses_cached_helpers)
    x = randn(2, 2)
    layout.cache_clear()
    torch.testing.assert_close(compiled(x)[0], uses_cached_helpers(x)[0])
    TABLE["theta"] = 10.0
    try:
        torch.testing.assert_close(compiled(x)[0], uses_cached_helpers(x)[0])    # stale entry, as eager
        layout.cache_clear()
        want = uses_cached_helpers(x)[0]
        layout.cache_clear()
        torch.testing.assert_close(compiled(x)[0], want)                          # recomputed, as eager
    finally:
        TABLE["theta"] = 10000.0
        layout.cache_clear()


def unhashable_argument(x, names):
    return x * len(layout.__wrapped__(names))


def test_arguments_not_known_keep_the_break():
    check(lambda x, n: x * frequencies(4, n.item()), randn(2, 2), torch.tensor(100.0))


einops = pytest.importorskip("einops")


def einops_code(img, proj):
    x = einops.rearrange(img, "b c (h p) (w q) -> b (h w) (p q c)", p=2, q=2)
    cls = einops.repeat(proj[:1], "n d -> b n d", b=x.shape[0])
    x = torch.cat([cls, x @ proj.T], 1)
    att = einops.einsum(x, x, "b i d, b j d -> b i j").softmax(-1)
    packed, shapes = einops.pack([att, x], "b n *")
    return einops.reduce(einops.unpack(packed, shapes, "b n *")[1], "b n d -> b d", "mean")


def test_einops_patterns_are_one_graph():
    check(einops_code, randn(2, 3, 4, 4), randn(12, 12, seed=1), graphs=1, breaks=0)
