"""Differential tests: torch's kernel-flag managers and flag reads (translate/lookasides/backend_flags.py).

`with sdpa_kernel(...)`, `torch.backends.cudnn.flags(...)`, `torch.backends.mkldnn.flags(...)` and the
deprecated `torch.backends.cuda.sdp_kernel(...)` were graph breaks inside a with-block (the frame ran as
Python); `torch.backends.cuda.flash_sdp_enabled()` and the torch._C flag getters were breaks. Now the
blocks' bodies are in the graph, the flags inside and after each block are eager's (also when the body
raises), and reads are answered under a guard."""
import warnings

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.attention import SDPBackend, sdpa_kernel

import framejit
from tests.differential import check, randint, randn


def _sdp_flags():
    return (torch.backends.cuda.flash_sdp_enabled(), torch.backends.cuda.math_sdp_enabled(),
            torch.backends.cuda.mem_efficient_sdp_enabled(), torch.backends.cuda.cudnn_sdp_enabled(),
            torch._C._get_sdp_priority_order())


def _flag_state():
    return (_sdp_flags(), torch.backends.cudnn.enabled, torch.backends.mkldnn.enabled,
            torch.backends.mkldnn.deterministic)


def attention_blocks(q):
    with sdpa_kernel([SDPBackend.MATH]) as ctx:
        out = F.scaled_dot_product_attention(q, q, q)
        inside = _sdp_flags()
    with torch.backends.cudnn.flags(enabled=False):
        out = out + 1
    with torch.backends.mkldnn.flags(enabled=False, deterministic=True):
        out = out * 2
    return out, ctx, inside, _flag_state()


def test_flag_blocks_are_in_the_graph():
    # (the reads inside the sdpa block are the block's flags: a break there; the block bodies join graphs)
    check(attention_blocks, randn(1, 2, 4, 8))


def attention_only(q):
    with sdpa_kernel(SDPBackend.MATH):
        out = F.scaled_dot_product_attention(q, q, q)
    with torch.backends.cudnn.flags(enabled=False, benchmark=False):
        out = out + 1
    return out * torch.backends.cudnn.enabled


def test_one_graph_no_break():
    check(attention_only, randn(1, 2, 4, 8), graphs=1, breaks=0)


def test_block_nodes_around_the_body():
    def scaled(q):
        with sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.MATH], set_priority=True):
            out = q.relu()
        return out

    compiled = framejit.compile(scaled)
    before = _flag_state()
    compiled(randn(3))
    assert _flag_state() == before
    # the graph holds the two block nodes around the body
    from framejit.translate.lookasides.backend_flags import enter_flag_block, exit_flag_block
    counter = framejit.backends.CompileCounter()
    framejit.reset()
    framejit.compile(scaled, backend=counter)(randn(3))
    targets = [n.target for n in counter.graphs[0].graph.nodes if n.op == "call_function"]
    assert targets[0] is enter_flag_block and targets[-1] is exit_flag_block, targets


def raising_in_block(x, i):
    with sdpa_kernel([SDPBackend.MATH]):
        with torch.backends.cudnn.flags(enabled=False):
            y = x[i] * 2          # an index out of range raises at run time only
    return y


def test_flags_restored_when_the_body_raises():
    before = _flag_state()
    check(raising_in_block, randn(4), randint(10, 11, 1))   # both raise IndexError; check() compares them
    assert _flag_state() == before
    compiled = framejit.compile(raising_in_block)
    with pytest.raises(IndexError):
        compiled(randn(4), torch.tensor([10]))
    assert _flag_state() == before
    assert torch.equal(compiled(randn(4), torch.tensor([1])), raising_in_block(randn(4), torch.tensor([1])))


def test_raising_body_matches_eager():
    check(raising_in_block, randn(4), torch.tensor([7]))


def deprecated_sdp_kernel(q):
    with torch.backends.cuda.sdp_kernel(enable_flash=False, enable_mem_efficient=False) as ctx:
        out = F.scaled_dot_product_attention(q, q, q)
    return out, ctx


def test_deprecated_sdp_kernel():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        check(deprecated_sdp_kernel, randn(1, 2, 4, 8), graphs=1, breaks=0)


def reads(x):
    if torch.backends.cuda.flash_sdp_enabled() and torch._C._get_mkldnn_enabled():
        x = x + 1
    if torch.backends.mkldnn.enabled and not torch.backends.cudnn.deterministic:
        x = x * 3
    return x, torch._C._get_sdp_priority_order()


def test_flag_reads_answered_and_guarded():
    check(reads, randn(3), graphs=1, breaks=0)
    compiled = framejit.compile(reads)
    assert torch.equal(compiled(randn(3))[0], reads(randn(3))[0])
    with torch.backends.mkldnn.flags(enabled=False):
        assert torch.equal(compiled(randn(3))[0], reads(randn(3))[0])    # the guard sees the change
    torch.backends.cuda.enable_flash_sdp(False)
    try:
        assert torch.equal(compiled(randn(3))[0], reads(randn(3))[0])
    finally:
        torch.backends.cuda.enable_flash_sdp(True)


class KernelPinnedAttention(nn.Module):
    """A module as libraries write it: attention under a pinned kernel, flags read to pick a path."""

    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(8, 24)

    def forward(self, x):
        q, k, v = self.qkv(x).unflatten(-1, (3, 2, 4)).permute(2, 0, 3, 1, 4)
        if torch.backends.cuda.math_sdp_enabled():
            with sdpa_kernel([SDPBackend.MATH]):
                out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            out = q
        return out.transpose(1, 2).flatten(2)


def test_module_with_pinned_kernel():
    torch.manual_seed(0)
    check(KernelPinnedAttention(), randn(2, 5, 8), graphs=1, breaks=0, grads=True)


def nonconstant_arguments(x, flag):
    with torch.backends.cudnn.flags(enabled=flag):
        return x + 1


def test_nonconstant_arguments_still_right():
    check(nonconstant_arguments, randn(3), True)
