"""Differential tests: torch's own queries of process state and tensor metadata fold to constants in
one graph (translate/lookasides/torch_table.py STATE_QUERIES, translate/calls.py `_const_call`).

torch._C's state queries that libraries ask before choosing a path (`_is_any_autocast_enabled`, the
cuBLAS TF32 flag behind `torch.backends.cuda.matmul.allow_tf32`, the privateuse1 backend's name,
`_are_functorch_transforms_active`) are answered at translation and guarded by their answer, so a
changed flag recompiles instead of reusing the other branch. The metadata queries
`torch.is_floating_point` / `is_complex` / `numel` read the tensor given as `input=` as well.
"""
import torch

import framejit
from tests.differential import check, randn

x2 = randn(2, 3, seed=1)


def any_autocast(x):
    if torch._C._is_any_autocast_enabled():
        return x + 1
    return x - 1


def tf32_flag(x):
    if torch.backends.cuda.matmul.allow_tf32:
        return x.sin() + 1
    return x.cos() - 1


def privateuse1_name(x):
    if torch._C._get_privateuse1_backend_name() == "privateuseone":
        return x * 2
    return x


def functorch_active(x):
    return (x + 1) if torch._C._are_functorch_transforms_active() else (x - 1)


def metadata_by_keyword(x):
    y = x + 1
    return (torch.is_floating_point(y), torch.is_floating_point(input=y), torch.is_complex(input=y),
            torch.numel(input=y), y * torch.numel(y))


def test_state_queries_fold_in_one_graph():
    for fn in (any_autocast, tf32_flag, privateuse1_name, functorch_active):
        check(fn, x2, fullgraph=True, graphs=1)


def test_metadata_queries_by_keyword():
    check(metadata_by_keyword, x2, fullgraph=True, graphs=1)
    check(metadata_by_keyword, torch.arange(6), fullgraph=True, graphs=1)


def test_state_query_is_guarded_by_its_answer():
    counter = framejit.backends.CompileCounter()
    compiled = framejit.compile(tf32_flag, backend=counter)
    before = torch.backends.cuda.matmul.allow_tf32
    try:
        torch.backends.cuda.matmul.allow_tf32 = False
        assert torch.equal(compiled(x2), tf32_flag(x2))
        torch.backends.cuda.matmul.allow_tf32 = True
        assert torch.equal(compiled(x2), tf32_flag(x2))
        assert counter.frame_count == 2
    finally:
        torch.backends.cuda.matmul.allow_tf32 = before
