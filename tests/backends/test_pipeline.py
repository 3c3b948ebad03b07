"""The backend pipeline (backends/pipeline.py): every pass keeps the one contract, both tracing
backends run through it, and inductor is held to eager's random numbers like aot_eager (a dead random
op kept by passes/dead_tensors.py, random ops drawing from the default generator as eager's kernels do).
"""
import importlib
import inspect
import pkgutil

import pytest
import torch

import framejit.backends.passes as passes
from framejit.backends.pipeline import AOT_EAGER_PASSES, INDUCTOR_PASSES, compile_through
from tests.differential import check, randn


def test_every_pass_has_the_one_signature():
    names = [m.name for m in pkgutil.iter_modules(passes.__path__)]
    assert names
    for name in names:
        module = importlib.import_module(f"framejit.backends.passes.{name}")
        assert list(inspect.signature(module.apply).parameters) == ["gm", "example_inputs", "compile_rest"], name
    listed = {getattr(m, "__name__", type(m).__module__).rsplit(".", 1)[1] for m in AOT_EAGER_PASSES + INDUCTOR_PASSES}
    assert listed == set(names)


def test_passes_run_in_order_around_the_compiler():
    seen = []

    class Named:
        def __init__(self, name):
            self.name = name

        def apply(self, gm, example_inputs, compile_rest):
            seen.append(self.name)
            compiled = compile_rest(gm, example_inputs)
            seen.append("/" + self.name)
            return compiled

    def compiler(gm, example_inputs):
        seen.append("compiler")
        return gm.forward

    gm = torch.fx.symbolic_trace(lambda x: x + 1)
    run = compile_through((Named("a"), Named("b")), compiler, gm, [torch.ones(2)])
    assert seen == ["a", "b", "compiler", "/b", "/a"]
    assert torch.equal(run(torch.ones(2)), torch.full((2,), 2.0))


def dead_random_op(x):
    torch.rand_like(x)
    return x * 2, torch.rand(3)


def dead_dropout(x):
    torch.nn.functional.dropout(x, 0.5)
    return x.sin(), torch.rand(3)


def live_random_op(x):
    return x * torch.rand_like(x), torch.rand(3)


def test_inductor_compiles_a_graph_run_under_no_grad():
    """inference under no_grad keeps inductor's kernels (only inference-mode and autocast regions, and
    every region of aot_eager where grad is off, run as fx code)."""
    from framejit.backends.passes import state_regions
    compiled = []

    def rest(gm, example_inputs):
        compiled.append(gm)
        return gm.forward

    gm = torch.fx.symbolic_trace(lambda x: (x * 2).sin())
    for node in gm.graph.nodes:
        node.meta["example_value"] = torch.ones(2)
    with torch.no_grad():
        state_regions.COMPILING_NO_GRAD.apply(gm, [torch.ones(2)], rest)
        assert compiled == [gm]
        state_regions.apply(gm, [torch.ones(2)], rest)
        assert compiled == [gm]


@pytest.mark.parametrize("fn", [dead_random_op, dead_dropout, live_random_op], ids=lambda f: f.__name__)
@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_random_numbers_are_eagers(fn, backend):
    check(fn, randn(3, requires_grad=True), backend=backend, grads=True)


@pytest.mark.parametrize("repeated_blocks", [False, True])
def test_inductor_pipeline_schedules_a_library_whatever_the_repeated_blocks_choice(repeated_blocks, tmp_path,
                                                                                   monkeypatch):
    # the default mode (background) must schedule an inference graph's library build and tag its callable:
    # when the decision lived in repeated_blocks.py, making that pass opt-in dropped every library
    from framejit.backends import aoti_background
    from framejit.backends.inductor import inductor_passes
    from framejit.persist import store
    monkeypatch.setenv("FRAMEJIT_CACHE_AOTI", "background")
    monkeypatch.setenv("FRAMEJIT_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(store, "_STORES", {})
    k = 3.0 if repeated_blocks else 2.0          # two graphs, two keys (a key is scheduled once per process)
    gm = torch.fx.symbolic_trace(lambda x: (torch.relu(x) * k,))
    x = torch.randn(4, 4)
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            node.meta["example_value"] = x
    pending = list(aoti_background._PENDING)
    try:
        with torch.no_grad():
            compiled = compile_through(inductor_passes(repeated_blocks), lambda g, inputs: (lambda *a: g(*a)),
                                     gm, [x])
        assert getattr(compiled, "framejit_aoti_key", None), "no library build scheduled"
        assert (tmp_path / "building" / compiled.framejit_aoti_key).exists()
        assert torch.equal(compiled(x)[0], torch.relu(x) * k)
    finally:                     # no child build at this test process's exit
        aoti_background._PENDING[:] = pending
