"""Differential tests: `with torch.profiler.record_function(...)` blocks stay inside one graph
(translate/lookasides/profiler_blocks.py), and a profiler around the compiled call still records them."""
import pytest
import torch

import framejit
from framejit.backends import CompileCounter
from tests.differential import CASE_FIELDS, case, randn, run_case
from tests.translate.lookasides.torch_compile_count import torch_compile_graphs

x4 = randn(4, seed=1)
g4 = randn(4, seed=2, requires_grad=True)


def profiler_block(x):
    with torch.profiler.record_function("blk"):
        y = x.sin()
    return y.cos()


def autograd_profiler_block_with_args(x):
    with torch.autograd.profiler.record_function("outer", "some args"):
        y = x * 2
        with torch.profiler.record_function(name="inner"):
            y = y + 1
    return y


def block_with_computed_name(x, n):
    with torch.profiler.record_function(f"step{n}"):
        return x.relu() * n


def block_then_break(x):
    with torch.profiler.record_function("blk"):
        y = x.exp()
    print("after")
    return y


@pytest.mark.filterwarnings("error:framejit failed to convert:RuntimeWarning")   # no internal failure
@pytest.mark.parametrize(CASE_FIELDS, [
    case(profiler_block, x4, graphs=1, fullgraph=True),
    case(profiler_block, g4, graphs=1, grads=True),
    case(profiler_block, g4, graphs=1, grads=True, backend="aot_eager", name="profiler_block_aot"),
    case(autograd_profiler_block_with_args, x4, graphs=1, fullgraph=True),
    case(block_with_computed_name, x4, 3, graphs=1, fullgraph=True),
    case(block_then_break, x4, graphs=1, breaks=1),
])
def test_profiler_blocks(fn, args, kwargs, options):
    run_case(fn, args, kwargs, options)


def _recorded_names(fn, *args):
    with torch.autograd.profiler.profile() as prof:
        fn(*args)
    return [e.name for e in prof.function_events]


def test_profile_around_compiled_call_records_the_region():
    framejit.reset()
    counter = CompileCounter()
    compiled = framejit.compile(autograd_profiler_block_with_args, backend=counter)
    compiled(x4)                                  # compile outside the profiled region
    eager = _recorded_names(autograd_profiler_block_with_args, x4)
    names = _recorded_names(compiled, x4)
    assert counter.frame_count == 1
    for name in ("outer", "inner"):
        assert name in eager and name in names
    assert names.index("outer") < names.index("inner")


def test_graph_count_matches_torch_compile():
    framejit.reset()
    counter = CompileCounter()
    framejit.compile(profiler_block, backend=counter)(x4)
    assert counter.frame_count == torch_compile_graphs(profiler_block, x4) == 1


# ---------------------------------------------------------------- whole-profiler blocks

PROFILES = []


def unread_profile_block(x):
    with torch.autograd.profiler.profile():
        y = x.sin() * 2
    return y + 1


def unread_named_profile_block(x):
    with torch.profiler.profile(record_shapes=True) as prof:       # noqa: F841  (bound, never read)
        y = x.cos()
    return y - 1


def read_profile_block(x):
    with torch.autograd.profiler.profile() as prof:
        y = x.sin() + 1
    PROFILES.append(sorted({e.name for e in prof.function_events}))
    return y


@pytest.mark.filterwarnings("error:framejit failed to convert:RuntimeWarning")
@pytest.mark.parametrize(CASE_FIELDS, [
    case(unread_profile_block, x4, graphs=1, fullgraph=True),
    case(unread_profile_block, g4, graphs=1, grads=True, backend="aot_eager", name="unread_profile_block_aot"),
    case(unread_named_profile_block, x4, graphs=1, fullgraph=True),
])
def test_unread_profile_blocks_are_one_graph(fn, args, kwargs, options):
    run_case(fn, args, kwargs, options)


def test_read_profile_object_runs_the_profiler_for_real():
    PROFILES.clear()
    read_profile_block(x4)
    framejit.reset()
    out = framejit.compile(read_profile_block)(x4)
    assert torch.equal(out, read_profile_block(x4))
    assert PROFILES[0] == PROFILES[1] == PROFILES[2] and "aten::sin" in PROFILES[0]


def test_unread_block_inside_a_running_profiler_runs_as_eager_does():
    """Eager's inner block ends the outer profiler's session: the compiled call must too, also when the
    entry was made outside any profiler (the guard on 'no profiler running' fails inside one)."""
    def outer_events(fn):
        with torch.autograd.profiler.profile() as outer:
            fn(x4)
            torch.ones(3).exp()
        return sorted({e.name for e in outer.function_events})

    framejit.reset()
    counter = CompileCounter()
    compiled = framejit.compile(unread_profile_block, backend=counter)
    compiled(x4)
    assert counter.frame_count == 1
    assert outer_events(compiled) == outer_events(unread_profile_block)
