"""Execution records end to end: an injected internal failure writes a record holding what the
translator read, and the record replays the failure in a fresh process (`python -m framejit replay`)
and in this one (`framejit.replay`); FRAMEJIT_RECORD=1 records every conversion."""

import os
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import pytest
import torch

import framejit
from framejit.record import RecordedModule, load_record
from framejit.translate import dispatch

REPO = Path(__file__).resolve().parents[1]
SCALE = 3.0


def uses_globals(x):
    return torch.nn.functional.relu(x) * SCALE + torch.ones(1)


def run_python(code, *args, cwd, env_extra=None):
    env = dict(os.environ, PYTHONPATH=str(REPO), **(env_extra or {}))
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


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
    assert result.converter == "framejit.convert.replay_conversion"
    monkeypatch.undo()
    result = framejit.replay(only_record(tmp_path), run=True)
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
    from framejit.convert import replay_conversion

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
