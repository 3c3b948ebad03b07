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
