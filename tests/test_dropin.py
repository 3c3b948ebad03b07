"""Done-means test of issue 26: programs written for torch.compile (tests/dropin_programs/: regional
compilation, mode=, options=, registry and custom backends, torch.compiler.disable, torch._dynamo.config,
set_stance, the torch.compile tutorials' patterns) run with `torch.compile` replaced by `framejit.compile` in their source and nothing else
changed, and return what the same program returns eagerly (torch.compile replaced by a no-op). The
FSDP2 and DDP programs run on 2 ranks in tests/distributed/test_dropin_distributed.py."""
import importlib.util
import pathlib
import sys
import types
import warnings

import pytest
import torch

import framejit

PROGRAMS = pathlib.Path(__file__).parent / "dropin_programs"


def no_compile(model=None, **kwargs):
    """torch.compile as a no-op: the program run eagerly."""
    return model if model is not None else (lambda m: m)


def load(name, frontend):
    """The program `name` with `torch.compile` replaced in its source text: by framejit.compile
    (frontend "framejit") or by a no-op (frontend "eager")."""
    source = (PROGRAMS / f"{name}.py").read_text()
    assert "torch.compile(" in source
    replacement = "framejit.compile(" if frontend == "framejit" else "__no_compile__("
    module = types.ModuleType(f"dropin_{name}_{frontend}")
    module.__file__ = str(PROGRAMS / f"{name}.py")
    module.framejit, module.__no_compile__ = framejit, no_compile
    sys.modules[module.__name__] = module      # (so its functions' globals are a real module's)
    exec(compile(source.replace("torch.compile(", replacement), module.__file__, "exec"), module.__dict__)
    return module


def same(a, b, where="result"):
    if isinstance(a, torch.Tensor):
        assert isinstance(b, torch.Tensor) and a.shape == b.shape, where
        assert torch.allclose(a, b, atol=1e-5, rtol=1e-4), (where, a, b)
    elif isinstance(a, dict):
        assert a.keys() == b.keys(), where
        for k in a:
            same(a[k], b[k], f"{where}[{k!r}]")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            same(x, y, f"{where}[{i}]")
    else:
        assert a == b, (where, a, b)


def run_both(name):
    import torch._dynamo
    limit = torch._dynamo.config.cache_size_limit
    try:
        framejit.reset()
        framejit.clear_metrics()
        eager = load(name, "eager").main()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", framejit.GraphBreakWarning)
            compiled = load(name, "framejit").main()
        converted = framejit.metrics()
    finally:
        torch._dynamo.config.cache_size_limit = limit
        framejit.reset()
    same(eager, compiled)
    return compiled, converted


@pytest.mark.parametrize("name", ["regional", "backends", "disable_and_settings", "tutorials"])
def test_torch_compile_program_runs_unchanged_with_framejit(name):
    compiled, converted = run_both(name)
    assert converted, f"{name}: framejit converted nothing"
    assert [m.fail_reason for m in converted if m.fail_type not in (None, "eager fallback", "run once eagerly")] == [], name


def test_modes_and_options_reach_inductor():
    compiled, converted = run_both("modes_and_options")
    assert converted


def test_regional_blocks_are_the_originals_as_keys():
    """`layers[i] = framejit.compile(layers[i])`: the compiled block is found where the original is
    a key (dicts, FSDP's state mapping), and state_dict keys are unchanged."""
    block = torch.nn.Linear(2, 2)
    compiled = framejit.compile(block)
    assert compiled == block and block == compiled and hash(compiled) == hash(block)
    assert {block: "state"}[compiled] == "state"
    assert compiled in [block] and compiled.state_dict().keys() == block.state_dict().keys()
    assert compiled != torch.nn.Linear(2, 2)
