"""Execution records end to end: an injected internal failure writes a record holding what the
translator read, and the record replays the failure in a fresh process (`python -m framejit replay`)
and in this one (`framejit.replay`); FRAMEJIT_RECORD=1 records every conversion."""

import os
import re
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import pytest
import torch

import framejit
from framejit.observe.record import RecordedModule
from framejit.observe.record_file import load_record
from framejit.translate import dispatch

REPO = Path(__file__).resolve().parents[2]
SCALE = 3.0


def uses_globals(x):
    return torch.nn.functional.relu(x) * SCALE + torch.ones(1)


def run_python(code, *args, cwd, env_extra=None):
    env = dict(os.environ, PYTHONPATH=str(REPO), **(env_extra or {}))
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


@pytest.fixture(autouse=True)
def records_signed_here(tmp_path, monkeypatch):
    """Each test writes its records under tmp_path (debug_dir=tmp_path); reading them looks for the key
    that signed them in FRAMEJIT_DEBUG_DIR, so that is tmp_path too (also for the replays it starts)."""
    monkeypatch.setenv("FRAMEJIT_DEBUG_DIR", str(tmp_path))


def only_record(debug_dir):
    (path,) = (Path(debug_dir) / "records").glob("*.rec")
    return path


def test_a_failing_backend_writes_a_record_of_what_the_translator_read(tmp_path):
    def boom(gm, example_inputs):
        raise RuntimeError("injected backend failure")

    f = framejit.compile(uses_globals, backend=boom, debug_dir=tmp_path)
    x = torch.randn(3)
    with pytest.warns(RuntimeWarning, match="python -m framejit replay"):
        torch.testing.assert_close(f(x), uses_globals(x))       # falls back to plain Python
    record = load_record(only_record(tmp_path))
    assert record.exception_type == "framejit.errors.BackendError"
    assert "injected backend failure" in record.exception_message
    assert record.qualname == "uses_globals" and record.backend_name is None and callable(record.backend)
    torch_standin = record.globals["torch"]
    assert isinstance(torch_standin, RecordedModule)              # only the attributes that were read
    assert torch_standin.nn.functional.relu is torch.nn.functional.relu
    assert torch_standin.ones is torch.ones
    assert "sigmoid" not in torch_standin.recorded_attributes()
    assert torch_standin.sigmoid is torch.sigmoid     # unrecorded: falls back to the importable module
    assert record.globals["SCALE"] == SCALE
    assert torch.equal(record.rebuild_args()[0][0], x)


def test_record_keeps_inlined_callees_by_name_and_the_root_code(tmp_path):
    def callee(x):
        return x + 1

    def caller(x):
        return callee(x) * 2

    def boom(gm, example_inputs):
        raise RuntimeError("no")

    with pytest.warns(RuntimeWarning):
        framejit.compile(caller, backend=boom, debug_dir=tmp_path)(torch.ones(2))
    record = load_record(only_record(tmp_path))
    assert record.code is caller.__code__ or record.code.co_name == "caller"
    assert any(name.endswith("callee") for name in record.inlined)


FAILING_PROGRAM = """
import sys, torch, framejit
from framejit.backends import register_backend

@register_backend("boom")
def boom(gm, example_inputs):
    raise RuntimeError("injected backend failure")

def model(x, w):
    return torch.tanh(x @ w) + 1

f = framejit.compile(model, backend="boom")
print(f(torch.ones(2, 3), torch.ones(3, 4)).shape)
"""


def test_replay_in_a_fresh_process_reproduces_a_backend_failure(tmp_path):
    made = run_python(FAILING_PROGRAM, cwd=tmp_path, env_extra={"FRAMEJIT_DEBUG_DIR": str(tmp_path)})
    assert made.returncode == 0, made.stderr
    assert "torch.Size([2, 4])" in made.stdout and "A record of the frame was written to" in made.stderr
    path = only_record(tmp_path)
    replay = subprocess.run([sys.executable, "-m", "framejit", "replay", str(path)], cwd=REPO,
                            capture_output=True, text=True, timeout=300)
    assert replay.returncode == 0, replay.stdout + replay.stderr
    assert "replay:   conversion failed with framejit.errors.BackendError: backend 'boom' failed: " \
           "RuntimeError: injected backend failure" in replay.stdout
    assert "reproduced the recorded outcome" in replay.stdout


PATCH_HANDLER = """
import framejit.translate.dispatch as dispatch
def broken(tx, inst):
    raise KeyError("injected translator bug")
dispatch.HANDLERS["BINARY_OP"] = broken
"""


def test_replay_reproduces_a_translator_bug_only_with_the_bug(tmp_path):
    program = PATCH_HANDLER + """
import torch, framejit
def f(x):
    return torch.sin(x) + 1
print(framejit.compile(f)(torch.zeros(2)))
"""
    made = run_python(program, cwd=tmp_path, env_extra={"FRAMEJIT_DEBUG_DIR": str(tmp_path)})
    assert made.returncode == 0, made.stderr
    path = only_record(tmp_path)
    with_bug = run_python(PATCH_HANDLER + """
import sys
from framejit.cli import main
sys.exit(main())
""", "replay", str(path), cwd=tmp_path)
    assert with_bug.returncode == 0, with_bug.stdout + with_bug.stderr
    assert "conversion failed with KeyError: 'injected translator bug'" in with_bug.stdout
    fixed = subprocess.run([sys.executable, "-m", "framejit", "replay", str(path), "--run"], cwd=REPO,
                           capture_output=True, text=True, timeout=300)
    assert fixed.returncode == 1, fixed.stdout + fixed.stderr        # the "bug" is gone: not reproduced
    assert "replay:   conversion succeeded" in fixed.stdout
    assert "converted output matches eager" in fixed.stdout


def test_framejit_replay_in_process(tmp_path, monkeypatch):
    def broken(tx, inst):
        raise KeyError("injected translator bug")

    monkeypatch.setitem(dispatch.HANDLERS, "BINARY_OP", broken)
    with pytest.warns(RuntimeWarning, match="KeyError"):
        framejit.compile(uses_globals, debug_dir=tmp_path)(torch.ones(2))
    result = framejit.replay(only_record(tmp_path))
    assert result.reproduced, result.summary()
    assert result.converter == "framejit.runtime.compiled.replay_conversion"
    monkeypatch.undo()                      # (FRAMEJIT_DEBUG_DIR too: say where the key is)
    result = framejit.replay(only_record(tmp_path), run=True, debug_dir=tmp_path)
    assert not result.reproduced and result.replay_exception is None
    assert result.ran and result.outputs_match, result.summary()


def test_record_all_records_every_conversion_and_replays_with_run(tmp_path):
    f = framejit.compile(uses_globals, debug_dir=tmp_path, record_all=True)
    f(torch.ones(2))
    f(torch.ones(5))          # a recompile: a second record
    paths = sorted((tmp_path / "records").glob("uses-globals_ok_*.rec"))
    assert len(paths) == 2
    result = framejit.replay(paths[0], run=True)
    assert result.reproduced and result.ran and result.outputs_match, result.summary()
    assert framejit.metrics()[-1].record_path == str(paths[1]) or str(paths[1]) in \
        [m.record_path for m in framejit.metrics()]


def test_framejit_record_environment_variable(tmp_path):
    program = """
import torch, framejit
def f(x):
    return x.cos() * 2
framejit.compile(f)(torch.ones(2))
"""
    made = run_python(program, cwd=tmp_path,
                      env_extra={"FRAMEJIT_RECORD": "1", "FRAMEJIT_DEBUG_DIR": str(tmp_path)})
    assert made.returncode == 0, made.stderr
    assert only_record(tmp_path).name.startswith("f_ok_")


def test_replay_conversion_runs_converted_code_with_breaks():
    from framejit.runtime.compiled import replay_conversion

    def with_break(x):
        y = x + 1
        print("break")
        return y * 2

    run = replay_conversion(with_break, (torch.ones(2),), {})
    assert isinstance(run, types.FunctionType)
    torch.testing.assert_close(run(torch.ones(2)), torch.full((2,), 4.0))


class Scaled(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 2)

    def forward(self, x):
        return torch.relu(self.lin(x)) * SCALE


def test_compiled_module_records_its_original_module_and_replays(tmp_path):
    def boom(gm, example_inputs):
        raise RuntimeError("injected backend failure")

    model = framejit.compile(Scaled(), backend=boom, debug_dir=tmp_path)
    with pytest.warns(RuntimeWarning, match="failed to convert Scaled.forward"):
        model(torch.ones(2, 3))
    record = load_record(only_record(tmp_path))
    assert type(record.args[0]) is Scaled and not record.notes       # the module itself, pickled whole
    result = framejit.replay(record)
    assert result.reproduced, result.summary()


# --- records of real failures replay them, in a fresh process ------------------------------------
# One program run as __main__ provokes internal failures of several kinds; each record must replay
# the same exception (type and message) in another process started elsewhere, and `--run` must run
# the frame. Translator "bugs" are a BINARY_OP handler (patches.py, installed in both processes) that
# raises only in one situation each: inside a resume function, under no_grad, with one Config value,
# inside an inlined callee.

PATCHES = """
import torch
from framejit.convert import resume
from framejit.translate import dispatch

ORIGINAL = dispatch.HANDLERS["BINARY_OP"]


def patched(tx, inst):
    root = tx
    while root.parent is not None:
        root = root.parent
    original_code = resume.original_position(root.code, 0)[0]
    in_resume = original_code is not root.code
    name = original_code.co_name
    if name == "resumes" and in_resume:
        raise AssertionError("injected: BINARY_OP inside a resume function of resumes")
    if name == "under_no_grad" and in_resume and not torch.is_grad_enabled():
        raise AssertionError("injected: BINARY_OP under no_grad")
    if name == "with_config" and tx.ctx.config.inline_depth == 3:
        raise AssertionError("injected: BINARY_OP with inline_depth=3")
    if name == "calls_inner_helper" and tx.code.co_name == "inner_helper":
        raise AssertionError("injected: BINARY_OP inside the inlined inner_helper")
    return ORIGINAL(tx, inst)


def install():
    dispatch.HANDLERS["BINARY_OP"] = patched
"""

MAIN_PROGRAM = """
import torch, framejit, patches
patches.install()
SCALE = 3.0
MESSAGE = "injected backend failure"


def boom(gm, example_inputs):
    raise RuntimeError(MESSAGE)          # a __main__ global, read by a backend pickled by value


def inner_helper(x):
    return torch.relu(x) * SCALE


def outer_helper(x):
    return inner_helper(x) + torch.ones(1)


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)

    def forward(self, x):
        return outer_helper(self.lin(x))


def helpers_from_main(x):
    return torch.sigmoid(x) * 2


def resumes(x):
    y = torch.sin(x)
    print("break")
    return y * 2 + 1


def under_no_grad(x):
    with torch.no_grad():
        y = x.sin()
        print("break")
        z = y + 1
    return z


def with_config(x):
    return x * 2


def calls_inner_helper(x):
    return inner_helper(x).sum()


def boom_helpers(x):
    return outer_helper(x) - SCALE


x = torch.randn(3)
framejit.compile(boom_helpers, backend=boom)(x)
framejit.compile(Net(), backend=boom)(torch.randn(2, 3))
framejit.compile(resumes)(x)
framejit.compile(under_no_grad)(torch.randn(3, requires_grad=True))
framejit.compile(with_config, inline_depth=3)(x)
framejit.compile(calls_inner_helper)(x)
"""

REPLAY_PROGRAM = """
import sys, patches
if sys.argv[1] == "patched":
    patches.install()
from framejit.cli import main
for path in sys.argv[2:]:
    print("=== " + path, flush=True)
    print("exit", main(["replay", path, "--run"]), flush=True)
"""


def _replays(output):
    """{record file name: (exit code, replay output)} from REPLAY_PROGRAM's output."""
    out = {}
    for chunk in output.split("=== ")[1:]:
        path, _, rest = chunk.partition("\n")
        body, _, code = rest.rpartition("exit ")
        out[Path(path).name] = (int(code), body)
    return out


def test_records_of_real_failures_replay_in_a_fresh_process(tmp_path):
    (tmp_path / "patches.py").write_text(PATCHES)
    debug = tmp_path / "debug"
    env = {"FRAMEJIT_DEBUG_DIR": str(debug), "PYTHONPATH": f"{REPO}{os.pathsep}{tmp_path}"}
    made = subprocess.run([sys.executable, "-c", MAIN_PROGRAM], cwd=tmp_path, env=dict(os.environ, **env),
                          capture_output=True, text=True, timeout=300)
    assert made.returncode == 0, made.stderr
    paths = sorted(str(p) for p in (debug / "records").glob("*.rec"))
    names = sorted(re.sub(r"-at-\d+", "", Path(p).name.split("_")[0]) for p in paths)
    assert names == ["boom-helpers", "calls-inner-helper", "fj-resume-resumes", "fj-resume-under-no-grad",
                     "forward", "with-config"], names
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    replayed = subprocess.run([sys.executable, "-c", REPLAY_PROGRAM, "patched", *paths], cwd=elsewhere,
                              env=dict(os.environ, PYTHONPATH=f"{REPO}{os.pathsep}{tmp_path}",
                                       FRAMEJIT_DEBUG_DIR=str(debug)),      # where the key that signed them is
                              capture_output=True, text=True, timeout=300)
    assert replayed.returncode == 0, replayed.stderr
    results = _replays(replayed.stdout)
    assert len(results) == len(paths), replayed.stdout + replayed.stderr
    for name, (code, output) in results.items():
        assert ("BackendError" in name) == name.startswith(("boom-helpers", "forward")), name
        assert code == 0 and "result: reproduced the recorded outcome" in output, f"{name}:\n{output}"
        recorded = next(line for line in output.splitlines() if line.startswith("recorded:"))
        replay = next(line for line in output.splitlines() if line.startswith("replay:"))
        assert recorded.split(":", 1)[1].strip() == replay.split(":", 1)[1].strip(), output
        assert "run:      as plain Python the frame ran and returned a tensor" in output, f"{name}:\n{output}"
    # without the "bug", the same record does not reproduce, and says so
    path = next(p for p in paths if "resumes" in p)
    fixed = subprocess.run([sys.executable, "-m", "framejit", "replay", path, "--run"], cwd=elsewhere,
                           env=dict(os.environ, PYTHONPATH=str(REPO), FRAMEJIT_DEBUG_DIR=str(debug)),
                           capture_output=True, text=True,
                           timeout=300)
    assert fixed.returncode == 1, fixed.stdout + fixed.stderr
    assert "result: NOT reproduced: the recorded conversion failed with AssertionError, but the replayed " \
           "conversion succeeded" in fixed.stdout
    assert "run:      converted output matches eager" in fixed.stdout
