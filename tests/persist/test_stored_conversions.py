"""A frame's conversion is stored with its library: a second process builds the entry from it without
translating (no torch._dynamo, no torch._inductor import, no conversion counted) and returns eager's result;
anything that differs from what the conversion saw (the function's or an inlined callee's source, a guarded
global, the module's structure, the inputs' shapes or dtype, torch's version, a damaged or foreign entry) is a
miss that converts normally and gives eager's result.

Before runtime/warm_start.py every warm process converted each frame again: `stored` was False and
torch._dynamo was imported (FakeTensorMode) in `test_a_second_process_loads_the_conversion`."""
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

# Each of these starts fresh processes that build AOTInductor libraries cold (minutes of C++ on 2 cores):
# they run with `make test-aoti` (FRAMEJIT_AOTI_TESTS=1), not in `make test`, whose budget is 15 minutes.
# The route they test is opt-in too (FRAMEJIT_CACHE_AOTI=1).
pytestmark = pytest.mark.skipif(not os.environ.get("FRAMEJIT_AOTI_TESTS"),
                                reason="AOTInductor warm-start tests: make test-aoti")

ROOT = Path(__file__).resolve().parents[2]

_HELPER = textwrap.dedent("""
    import torch

    def act(x):
        return torch.relu(x) + 0.5
""")

# one program, run in fresh processes; the environment stands for what a user changes between runs
_PROGRAM = textwrap.dedent("""
    import json, os, sys
    import torch
    if os.environ.get("FAKE_TORCH_VERSION"):
        torch.__version__ = os.environ["FAKE_TORCH_VERSION"]
    import framejit
    import helper
    torch.set_num_threads(1)
    SCALE = float(os.environ.get("SCALE", "2.0"))
    DTYPE = getattr(torch, os.environ.get("DTYPE", "float32"))

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv, self.bn = torch.nn.Conv2d(4, 4, 3, padding=1), torch.nn.BatchNorm2d(4)

        def forward(self, x):
            return helper.act(self.bn(self.conv(x)))

    class Net(torch.nn.Module):
        def __init__(self, width):
            super().__init__()
            self.stem = torch.nn.Conv2d(3, 4, 3, padding=1)
            self.blocks = torch.nn.ModuleList(Block() for _ in range(width))
            self.head = torch.nn.Linear(4, 5)

        def forward(self, x):
            x = self.stem(x)
            for block in self.blocks:
                x = block(x)
            return self.head(x.mean((2, 3))) * SCALE   # EDIT

    def fn(x, w):
        return torch.tanh(x @ w) * SCALE

    torch.manual_seed(0)
    net = Net(int(os.environ.get("WIDTH", "2"))).eval().to(DTYPE)
    size = int(os.environ.get("SIZE", "8"))
    x = torch.randn(2, 3, size, size, dtype=DTYPE)
    a, w = torch.randn(4, 6, dtype=DTYPE), torch.randn(6, 3, dtype=DTYPE)
    out = {}
    with torch.no_grad():
        cnet, cfn = framejit.compile(net, backend="inductor"), framejit.compile(fn, backend="inductor")
        got, again = cnet(x), cnet(x)
        out["net"] = bool(torch.allclose(got, net(x), atol=1e-5) and torch.allclose(again, net(x), atol=1e-5))
        out["fn"] = bool(torch.allclose(cfn(a, w), fn(a, w), atol=1e-5))
        states = [cnet.forward._framejit_state, cfn._framejit_state]
        out["stored"] = [bool(getattr(s.results[0], "stored", False)) for s in states]
        out["conversions"] = [s.conversions for s in states]
        out["dynamo"] = "torch._dynamo" in sys.modules
        out["inductor"] = "torch._inductor" in sys.modules
        if os.environ.get("MUTATE"):                  # after the warm entry ran: a watched change must miss
            net.blocks[0].bn.eps = 0.5
            out["mutated"] = bool(torch.allclose(cnet(x), net(x), atol=1e-5))
            out["conversions_after"] = states[0].conversions
    print("RESULT", json.dumps(out))
""")


def _write_program(folder, edit=None, helper_edit=None):
    folder.mkdir(parents=True, exist_ok=True)
    program = _PROGRAM if edit is None else _PROGRAM.replace("* SCALE   # EDIT", edit)
    (folder / "prog.py").write_text(program)
    (folder / "helper.py").write_text(_HELPER if helper_edit is None else _HELPER.replace("+ 0.5", helper_edit))
    return folder


def _run(program_dir, cache_dir, **extra):
    env = dict(os.environ, PYTHONPATH=f"{ROOT}{os.pathsep}{program_dir}", TORCHINDUCTOR_CACHE_DIR=str(cache_dir / "ind"),
               FRAMEJIT_CACHE_DIR=str(cache_dir / "fj"), OMP_NUM_THREADS="1", FRAMEJIT_CACHE_AOTI="1",
               PYTHONDONTWRITEBYTECODE="1", **extra)
    return subprocess.Popen([sys.executable, str(program_dir / "prog.py")], env=env, cwd=str(program_dir),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _result(proc):
    stdout, stderr = proc.communicate(timeout=1500)
    line = next((line for line in stdout.splitlines() if line.startswith("RESULT ")), None)
    assert line is not None, stderr[-3000:]
    return json.loads(line[len("RESULT "):])


def _right(r):
    return r["net"] and r["fn"]


@pytest.fixture(scope="module")
def filled(tmp_path_factory):
    """(program folder, cache folder) after two processes filled one cache at once."""
    tmp_path = tmp_path_factory.mktemp("stored_conversions")
    program = _write_program(tmp_path / "program")
    for r in map(_result, [_run(program, tmp_path), _run(program, tmp_path)]):
        assert _right(r), r
    return program, tmp_path


def test_a_second_process_loads_the_conversion(filled):
    program, cache = filled
    warm = _result(_run(program, cache, MUTATE="1"))
    assert _right(warm), warm
    assert warm["stored"] == [True, True] and warm["conversions"] == [0, 0], warm
    assert not warm["dynamo"] and not warm["inductor"], warm       # no translator, no fakes, no compiler
    # a module attribute changed after the stored entry ran: the watch moves, the entry misses, it converts
    assert warm["mutated"] and warm["conversions_after"] == 1, warm


def test_what_the_conversion_depended_on_is_never_taken_from_a_stale_entry(filled, tmp_path):
    program, cache = filled
    cases = {
        "source": dict(program_dir=_write_program(tmp_path / "edited", edit="* SCALE + 1.0   # EDIT")),
        "callee": dict(program_dir=_write_program(tmp_path / "callee", helper_edit="+ 0.25")),
        "global": dict(SCALE="3.0"),
        "structure": dict(WIDTH="3"),
        "shape": dict(SIZE="6"),
        "dtype": dict(DTYPE="float64"),
        "torch": dict(FAKE_TORCH_VERSION="2.99.0"),
    }
    results, names = {}, list(cases)
    for i in range(0, len(names), 2):           # two at a time (they compile their own graphs)
        procs = {}
        for name in names[i:i + 2]:
            extra = dict(cases[name])
            procs[name] = _run(extra.pop("program_dir", program), cache, **extra)
        results.update({name: _result(proc) for name, proc in procs.items()})
    for name, r in results.items():
        assert _right(r), (name, r)
        assert not r["stored"][0], (name, r)
    # the function on tensors depends on SCALE, the inputs' dtype and torch's version only
    for name in ("global", "dtype", "torch"):
        assert results[name]["stored"] == [False, False], (name, results[name])
    # (whether `fn` loads in the other cases depends on which record of it was written last: one per frame)
    # one stored conversion per frame, the last one made: the unchanged program stores its own again, then loads it
    assert _right(_result(_run(program, cache)))
    assert _result(_run(program, cache))["stored"] == [True, True]


def test_damaged_or_foreign_conversions_are_never_used(filled, tmp_path):
    program, filled_cache = filled
    cache = tmp_path / "cache"
    shutil.copytree(filled_cache / "fj", cache / "fj")
    conversions = [p for p in (cache / "fj" / "entries").glob("*.fjc") if b'"framejit-conversion"' in p.read_bytes()]
    assert len(conversions) >= 2, conversions
    for path in conversions:                                             # truncated
        data = path.read_bytes()
        path.write_bytes(data[:len(data) // 2])
    again = _result(_run(program, cache))
    assert _right(again) and again["stored"] == [False, False], again
    (cache / "fj" / "key").unlink()                                       # another user's key
    other = _result(_run(program, cache))
    assert _right(other) and other["stored"] == [False, False], other
