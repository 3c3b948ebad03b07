"""Execution records: recording, the file format and its safety checks, replay, and the replay CLI.

None of this needs framejit's translator: "translation" is simulated by calling the recorder the
way the translator does, and conversion during replay is a stub hook installed in sys.modules.
"""

import builtins
import json
import math
import os
import pickle
import platform
import stat
import subprocess
import sys
import types
from pathlib import Path

import dill
import pytest
import torch
import torch.nn.functional as F

import framejit
from framejit.observe.record import (
    EMPTY_CELL,
    ExecutionRecorder,
    Record,
    RecordError,
    RecordVersionWarning,
    RecordedModule,
    UnpicklableValue,
)
from framejit.observe.record_file import FORMAT_VERSION, load_record, read_record_header, write_record
from framejit.cli import main
from framejit.tools.replay import FALLBACK_NAME, HOOK_NAME, replay

from .record_files import rewrite_signed

REPO = Path(__file__).resolve().parents[2]
OFFSET = 3.0


def double(x):
    return x * 2


class Scale(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.tensor([1.5, -2.0, 0.5]))

    def forward(self, x):
        return x * self.weight


def make_fn():
    bias = torch.tensor([0.25, 0.5, 0.75])
    power = 2

    def fn(x, model, *, k=1):
        y = torch.nn.functional.relu(model(x)) ** power + bias
        return double(y) + OFFSET + math.pi * k + len([k])

    return fn


def failing(x):
    raise NotImplementedError(f"cannot translate this at {hex(id(x))}")


def simulate_translation(fn, args, kwargs=None, exception=None, *, globals_read=(), module_attrs=(), builtins_read=()):
    """Feed a recorder the way the translator does while converting `fn`."""
    recorder = ExecutionRecorder()
    recorder.record_function(fn)
    recorder.record_args(args, kwargs or {})
    for name in globals_read:
        recorder.record_global(name, fn.__globals__[name])
    for module, attr in module_attrs:
        recorder.record_module_attr(module, attr, getattr(module, attr))
    for name in builtins_read:
        recorder.record_builtin(name, getattr(builtins, name))
    return recorder.to_record(exception)


def full_record(exception=None):
    fn = make_fn()
    x = torch.arange(6.0).reshape(3, 2).t().requires_grad_()  # non-contiguous, non-leaf view
    model = Scale()
    record = simulate_translation(
        fn,
        (x, model),
        {"k": 2},
        exception,
        globals_read=("torch", "double", "OFFSET", "math"),
        module_attrs=((torch, "nn"), (torch.nn, "functional"), (F, "relu"), (math, "pi")),
        builtins_read=("len",),
    )
    return fn, (x, model), {"k": 2}, record


def failing_record(message=None):
    x = torch.ones(2)
    try:
        failing(x)
    except NotImplementedError as exc:
        error = exc if message is None else NotImplementedError(message)
    return simulate_translation(failing, (x,), exception=error, builtins_read=("hex", "id"))


@pytest.fixture
def debug_dir(tmp_path, monkeypatch):
    """A debug directory of this test's own, which is also where loading looks for the record key."""
    monkeypatch.setenv("FRAMEJIT_DEBUG_DIR", str(tmp_path / "debug"))
    return tmp_path / "debug"


def rewrite_header(path, **changes):
    rewrite_signed(path, **changes)


# --- recording and round trip --------------------------------------------------------------------


def test_round_trip_rebuilds_an_equivalent_function(debug_dir):
    fn, args, kwargs, record = full_record(NotImplementedError("no"))
    expected = fn(*args, **kwargs)
    loaded = load_record(write_record(record, debug_dir))
    assert isinstance(loaded, Record)
    rebuilt = loaded.build_function()
    new_args, new_kwargs = loaded.rebuild_args()
    assert rebuilt.__name__ == "fn" and rebuilt.__qualname__ == "make_fn.<locals>.fn"
    assert rebuilt.__kwdefaults__ == {"k": 1}
    torch.testing.assert_close(rebuilt(*new_args, **new_kwargs), expected)
    assert (loaded.exception_type, loaded.exception_message) == ("NotImplementedError", "no")
    assert loaded.python_version == platform.python_version()
    assert loaded.torch_version == torch.__version__


def test_closure_contents_are_recorded(debug_dir):
    _, _, _, record = full_record()
    loaded = load_record(write_record(record, debug_dir))
    assert len(loaded.closure) == 2
    by_name = dict(zip(loaded.code.co_freevars, loaded.closure))
    assert by_name["power"] == 2
    torch.testing.assert_close(by_name["bias"], torch.tensor([0.25, 0.5, 0.75]))


def test_modules_become_nested_stand_ins_with_only_the_attributes_read(debug_dir):
    _, _, _, record = full_record()
    loaded = load_record(write_record(record, debug_dir))
    torch_standin = loaded.globals["torch"]
    assert isinstance(torch_standin, RecordedModule) and isinstance(torch_standin, types.ModuleType)
    assert torch_standin.__name__ == "torch"
    assert isinstance(torch_standin.nn, RecordedModule)
    assert isinstance(torch_standin.nn.functional, RecordedModule)
    assert torch_standin.nn.functional.__name__ == "torch.nn.functional"
    assert torch_standin.nn.functional.relu is F.relu
    assert set(torch_standin.recorded_attributes()) == {"nn"}
    assert set(torch_standin.nn.functional.recorded_attributes()) == {"relu"}
    assert torch_standin.add is torch.add          # torch is importable: unrecorded reads use the real module
    assert set(torch_standin.recorded_attributes()) == {"nn"}
    lost = RecordedModule("no_such_module_anywhere", importable=True)
    with pytest.raises(AttributeError, match="no recorded attribute 'add'"):
        lost.add
    assert loaded.globals["math"].pi == math.pi
    assert loaded.globals["double"] is double
    assert loaded.globals["OFFSET"] == OFFSET
    assert loaded.builtins == {"len": len}


def test_a_module_reached_two_ways_is_one_stand_in(debug_dir):
    def uses_alias(x):
        return F.relu(x) + torch.nn.functional.gelu(x)

    recorder = ExecutionRecorder()
    recorder.record_function(uses_alias)
    recorder.record_global("F", F)
    recorder.record_global("torch", torch)
    recorder.record_module_attr(F, "relu", F.relu)
    recorder.record_module_attr(torch, "nn", torch.nn)
    recorder.record_module_attr(torch.nn, "functional", F)
    recorder.record_module_attr(F, "gelu", F.gelu)
    loaded = load_record(write_record(recorder.to_record(), debug_dir))
    assert loaded.globals["F"] is loaded.globals["torch"].nn.functional
    x = torch.randn(5)
    torch.testing.assert_close(loaded.build_function()(x), uses_alias(x))


def test_modules_without_recorded_reads_are_stored_by_name(debug_dir):
    this_module = sys.modules[__name__]  # importable, but outside site-packages
    unimportable = types.ModuleType("made_up_module_for_framejit_tests")
    unimportable.value = 7
    recorder = ExecutionRecorder()
    recorder.record_function(failing)
    recorder.record_global("math", math)
    recorder.record_global("this_module", this_module)
    recorder.record_global("made_up", unimportable)
    recorder.record_global("made_up_read", unimportable)
    recorder.record_global("F", F)
    recorder.record_module_attr(F, "relu", F.relu)
    record = recorder.to_record()
    assert record.globals["math"] is math and record.globals["this_module"] is this_module
    loaded = load_record(write_record(record, debug_dir))
    assert loaded.globals["math"] is math
    assert loaded.globals["this_module"] is this_module
    assert isinstance(loaded.globals["F"], RecordedModule)
    assert isinstance(loaded.globals["made_up"], RecordedModule)
    assert loaded.globals["made_up"].recorded_attributes() == {}
    with pytest.raises(AttributeError, match="no recorded attribute 'value'"):
        loaded.globals["made_up"].value


def test_re_recording_a_replayed_function_keeps_its_stand_ins(debug_dir):
    _, _, _, record = full_record()
    loaded = load_record(write_record(record, debug_dir))
    rebuilt = loaded.build_function()
    again = simulate_translation(rebuilt, loaded.rebuild_args()[0], {"k": 2}, globals_read=("torch", "math"))
    assert again.globals["torch"] is loaded.globals["torch"]
    reloaded = load_record(write_record(again, debug_dir))
    assert reloaded.globals["torch"].nn.functional.relu is F.relu


def test_tensor_arguments_keep_values_dtype_layout_and_grad(debug_dir):
    _, (x, model), _, record = full_record()
    loaded = load_record(write_record(record, debug_dir))
    (x2, model2), kwargs2 = loaded.rebuild_args()
    assert x2.shape == x.shape and x2.stride() == x.stride() == (1, 2)
    assert x2.dtype == x.dtype and x2.requires_grad and x2.is_leaf
    torch.testing.assert_close(x2.detach(), x.detach())
    assert kwargs2 == {"k": 2}
    # the module argument is stored whole and deep-copied per rebuild
    assert isinstance(model2, Scale) and model2 is not model
    torch.testing.assert_close(model2.weight.detach(), model.weight.detach())
    (_, model3), _ = loaded.rebuild_args()
    assert model3 is not model2


def test_tensor_layouts_aliasing_and_parameters(debug_dir):
    base = torch.arange(12, dtype=torch.int64).reshape(3, 4)
    view = base[1:, 1:3]  # storage offset and non-contiguous
    expanded = torch.tensor([1.0, 2.0]).expand(3, 2)  # stride 0
    param = torch.nn.Parameter(torch.randn(2, dtype=torch.float64))

    def fn(a, b, c, d, nested):
        return a

    record = simulate_translation(fn, (base, view, expanded, param, {"list": [base, 1]}))
    loaded = load_record(write_record(record, debug_dir))
    (a, b, c, d, nested), _ = loaded.rebuild_args()
    assert torch.equal(a, base) and torch.equal(b, view) and torch.equal(c, expanded)
    assert b.storage_offset() == view.storage_offset() and b.stride() == view.stride()
    assert c.stride() == (0, 1)
    assert isinstance(d, torch.nn.Parameter) and d.dtype == torch.float64 and d.requires_grad
    # arguments that shared storage still do
    assert b.untyped_storage().data_ptr() == a.untyped_storage().data_ptr()
    assert nested["list"][0].untyped_storage().data_ptr() == a.untyped_storage().data_ptr()
    a[1, 1] = 100
    assert b[0, 0] == 100
    # each rebuild is independent
    (a2, *_), _ = loaded.rebuild_args()
    assert a2[1, 1] == 5


def test_arguments_passed_twice_are_one_object_again(debug_dir):
    """The conversion guarded `a is b`-style aliasing among its inputs: a replay must see it too."""
    x = torch.randn(3)
    items = [x, 1]
    model = Scale()

    def fn(a, b, c, d, e, f):
        return a

    record = simulate_translation(fn, (x, x, items, items, model, model))
    loaded = load_record(write_record(record, debug_dir))
    for _ in range(2):                       # every rebuild, not only the first
        (a, b, c, d, e, f), _ = loaded.rebuild_args()
        assert a is b and c is d and e is f and c[0] is a
        assert e is not model


def test_arguments_are_copied_when_recorded():
    x = torch.zeros(3)
    record = simulate_translation(failing, (x,))
    x.add_(1)
    (x2,), _ = record.rebuild_args()
    assert torch.equal(x2, torch.zeros(3))


def test_empty_closure_cell_round_trips(debug_dir):
    def outer():
        def inner():
            return later  # noqa: F821 - assigned after inner is made

        cell_fn = inner
        later = 1  # noqa: F841
        del later
        return cell_fn

    inner = outer()
    record = simulate_translation(inner, ())
    assert record.closure == (EMPTY_CELL,)
    loaded = load_record(write_record(record, debug_dir))
    assert loaded.closure == (EMPTY_CELL,)
    with pytest.raises(NameError):
        loaded.build_function()()


def test_unpicklable_values_are_replaced_not_fatal(debug_dir):
    recorder = ExecutionRecorder()
    recorder.record_function(failing)
    recorder.record_global("numbers", (i for i in range(3)))
    recorder.record_global("fine", 1)
    loaded = load_record(write_record(recorder.to_record(), debug_dir))
    assert isinstance(loaded.globals["numbers"], UnpicklableValue)
    assert loaded.globals["fine"] == 1
    assert any("global 'numbers'" in note for note in loaded.notes)


def test_recorder_checks_its_inputs():
    recorder = ExecutionRecorder()
    with pytest.raises(RecordError, match="nothing to record"):
        recorder.to_record()
    with pytest.raises(TypeError, match="expects a module"):
        recorder.record_module_attr(object(), "x", 1)
    with pytest.raises(TypeError, match="expects a Python function"):
        recorder.record_function(len)


# --- the file: names, permissions, no overwrite ---------------------------------------------------


def test_file_name_permissions_and_header(debug_dir):
    record = failing_record()
    path = write_record(record, debug_dir)
    assert path.parent == debug_dir / "records"
    assert path.name == f"failing_NotImplementedError_{failing.__code__.co_firstlineno}.rec"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert path.read_bytes().startswith(b"FRAMEJIT-RECORD\n")
    header = read_record_header(path)
    assert header["format_version"] == FORMAT_VERSION
    assert header["python_version"] == platform.python_version()
    assert header["torch_version"] == torch.__version__
    assert header["exception_type"] == "NotImplementedError"
    assert {"framejit_version", "created", "payload_sha256"} <= set(header)


def test_successful_conversion_file_name(debug_dir):
    _, _, _, record = full_record()
    path = write_record(record, debug_dir)
    assert path.name == f"fn_ok_{record.firstlineno}.rec"


def test_never_overwrites(debug_dir):
    record = failing_record()
    first = write_record(record, debug_dir)
    original = first.read_bytes()
    second = write_record(record, debug_dir)
    third = write_record(record, debug_dir)
    assert len({first, second, third}) == 3
    assert second.name.endswith("_1.rec") and third.name.endswith("_2.rec")
    assert first.read_bytes() == original


def test_loose_records_directory_is_tightened(debug_dir):
    (debug_dir / "records").mkdir(parents=True)
    os.chmod(debug_dir / "records", 0o755)
    write_record(failing_record(), debug_dir)
    assert stat.S_IMODE((debug_dir / "records").stat().st_mode) == 0o700


def test_symlinked_records_directory_is_refused(debug_dir, tmp_path):
    debug_dir.mkdir()
    (tmp_path / "elsewhere").mkdir()
    (debug_dir / "records").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(RecordError, match="symbolic link"):
        write_record(failing_record(), debug_dir)


# --- loading refuses bad files with clear messages -----------------------------------------------


def test_not_a_record(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("hello\n")
    os.chmod(path, 0o600)
    with pytest.raises(RecordError, match="not a framejit record"):
        load_record(path)


def test_missing_file(tmp_path):
    with pytest.raises(RecordError, match="no such record file"):
        load_record(tmp_path / "missing.rec")


def test_truncated_file_is_corrupt(debug_dir):
    path = write_record(failing_record(), debug_dir)
    path.write_bytes(path.read_bytes()[:-20])
    with pytest.raises(RecordError, match="corrupt") as info:
        load_record(path)
    assert str(path) in str(info.value)


def test_bad_header_is_corrupt(debug_dir):
    path = write_record(failing_record(), debug_dir)
    path.write_bytes(b"FRAMEJIT-RECORD\n{not json\n\x80\x04.")
    with pytest.raises(RecordError, match="corrupt.*not valid JSON"):
        load_record(path)


def _with_payload(path, payload):
    rewrite_signed(path, payload=payload)


def test_unpicklable_payload_gives_a_readable_error(debug_dir):
    path = write_record(failing_record(), debug_dir)
    _with_payload(path, b"\x80\x04this is not a pickle")
    with pytest.raises(RecordError, match="could not load the contents") as info:
        load_record(path)
    assert info.value.__cause__ is None and info.value.__suppress_context__
    # the header alone is still readable without unpickling anything
    assert read_record_header(path)["exception_type"] == "NotImplementedError"


def test_payload_naming_a_missing_module(debug_dir):
    path = write_record(failing_record(), debug_dir)
    _with_payload(path, b"cnonexistent_module_for_framejit_tests\nThing\n.")
    with pytest.raises(RecordError, match="'nonexistent_module_for_framejit_tests', which cannot be imported"):
        load_record(path)


def test_python_version_mismatch(debug_dir):
    path = write_record(failing_record(), debug_dir)
    rewrite_header(path, python_version="3.10.4")
    with pytest.raises(RecordError) as info:
        load_record(path)
    assert "3.10.4" in str(info.value) and platform.python_version() in str(info.value)


def test_format_version_mismatch(debug_dir):
    path = write_record(failing_record(), debug_dir)
    rewrite_header(path, format_version=99)
    with pytest.raises(RecordError, match=f"format version 99.*format version {FORMAT_VERSION}"):
        load_record(path)


def test_torch_version_mismatch_only_warns(debug_dir):
    path = write_record(failing_record(), debug_dir)
    rewrite_header(path, torch_version="1.0.0")
    with pytest.warns(RecordVersionWarning, match="torch 1.0.0"):
        record = load_record(path)
    assert record.exception_type == "NotImplementedError"


def _make_foreign(path):
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        pytest.skip("giving a file to another user needs root")
    os.chown(path, 65534, 65534)


def test_foreign_file_is_refused_unless_trusted(debug_dir):
    path = write_record(failing_record(), debug_dir)
    _make_foreign(path)
    with pytest.raises(RecordError, match="owned by user id 65534"):
        load_record(path)
    assert load_record(path, trust=True).fn_name == "failing"


def test_file_writable_by_others_is_refused_unless_trusted(debug_dir):
    path = write_record(failing_record(), debug_dir)
    os.chmod(path, 0o666)
    with pytest.raises(RecordError, match="other users can write"):
        load_record(path)
    assert load_record(path, trust=True).fn_name == "failing"


def test_a_record_written_before_the_package_move_still_loads_and_replays():
    """Records pickle framejit's own classes by module path. This one was written (record_all, with a
    CompileProfiler backend) when they were framejit.record.Record, framejit.record_values.RecordedModule
    and framejit.profiler.CompileProfiler: loading maps those paths to where the modules went."""
    record = load_record(Path(__file__).parent / "records" / "before_the_move.rec", trust=True)
    assert isinstance(record, Record) and record.qualname == "uses_globals" and not record.failed
    assert isinstance(record.globals["torch"], RecordedModule)
    assert isinstance(record.backend, framejit.CompileProfiler)
    result = replay(record, run=True)
    assert result.reproduced and result.outputs_match, result.summary()


# --- replay ---------------------------------------------------------------------------------------


def _convert_module():
    try:
        import framejit.runtime.compiled as convert_module
    except ImportError:  # the core's converter is not importable (yet): stand in for it
        convert_module = types.ModuleType("framejit.runtime.compiled")
        sys.modules["framejit.runtime.compiled"] = convert_module
    return convert_module


def install_hook(monkeypatch, hook):
    monkeypatch.setattr(_convert_module(), "replay_conversion", hook, raising=False)


def remove_hook(monkeypatch):
    monkeypatch.delattr(_convert_module(), "replay_conversion", raising=False)


def run_eagerly(fn, args, kwargs):
    fn(*args, **kwargs)
    return fn


def test_replay_reproduces_a_recorded_failure(monkeypatch, debug_dir):
    calls = []

    def hook(fn, args, kwargs):
        calls.append((fn, args, kwargs))
        return run_eagerly(fn, args, kwargs)

    install_hook(monkeypatch, hook)
    path = write_record(failing_record(), debug_dir)
    result = replay(path)
    assert result.converter == HOOK_NAME
    assert result.replay_exception[0] == "NotImplementedError"
    assert result.same_type and result.same_message  # hex addresses differ but are ignored
    assert result.reproduced
    assert "reproduced the recorded outcome" in result.summary()
    fn, args, _ = calls[0]
    assert isinstance(fn, types.FunctionType) and fn.__name__ == "failing"
    assert isinstance(fn.__globals__["__builtins__"], dict)
    assert torch.equal(args[0], torch.ones(2))


def test_record_keeps_options_config_and_torch_state(monkeypatch, debug_dir):
    """A replay converts under the recorded Config and global torch state (grad mode, default dtype),
    and leaves the replaying process's state as it found it."""
    from framejit.config import Config
    from framejit.observe.global_state import translation_state

    seen = {}

    def hook(fn, args, kwargs, backend="eager", fullgraph=False, config=None):
        seen.update(grad=torch.is_grad_enabled(), dtype=torch.get_default_dtype(), config=config,
                    backend=backend, fullgraph=fullgraph)
        return run_eagerly(fn, args, kwargs)

    install_hook(monkeypatch, hook)
    recorder = ExecutionRecorder()
    recorder.record_function(failing)
    recorder.record_args((torch.ones(2),), {})
    recorder.record_options("eager", fullgraph=True)
    recorder.record_config(Config(inline_depth=3, recompile_limit=2))
    recorder.record_torch_state({**translation_state(), "grad_enabled": False, "default_dtype": torch.float64})
    loaded = load_record(write_record(recorder.to_record(NotImplementedError("x")), debug_dir))
    assert loaded.config["inline_depth"] == 3 and loaded.torch_state["grad_enabled"] is False
    assert "torch state: grad_enabled=False, default_dtype=torch.float64" in loaded.describe()
    before = translation_state()
    replay(loaded)
    assert seen["grad"] is False and seen["dtype"] is torch.float64
    assert seen["config"]["inline_depth"] == 3 and seen["config"]["recompile_limit"] == 2
    assert seen["backend"] == "eager" and seen["fullgraph"] is True
    assert translation_state() == before


def test_a_replay_that_does_not_reproduce_says_how(monkeypatch):
    install_hook(monkeypatch, lambda fn, args, kwargs: None)
    result = replay(failing_record())
    assert not result.reproduced
    assert "result: NOT reproduced: the recorded conversion failed with NotImplementedError, but the replayed " \
           "conversion succeeded" in result.summary()

    def other(fn, args, kwargs):
        raise KeyError("something else")

    install_hook(monkeypatch, other)
    result = replay(failing_record())
    assert "result: NOT reproduced: the replayed conversion failed with KeyError instead of " \
           "NotImplementedError" in result.summary()
    install_hook(monkeypatch, other)
    _, _, _, record = full_record()            # a recorded success
    assert "NOT reproduced: the recorded conversion succeeded, but the replayed one failed with KeyError" in \
        replay(record).summary()


def test_replay_reports_a_different_message(monkeypatch):
    install_hook(monkeypatch, run_eagerly)
    result = replay(failing_record("some other reason"))
    assert result.same_type and not result.same_message and not result.reproduced
    assert "same exception type, different message" in result.summary()


def test_replay_of_a_failure_that_no_longer_fails(monkeypatch):
    install_hook(monkeypatch, lambda fn, args, kwargs: None)
    result = replay(failing_record())
    assert result.replay_exception is None and not result.reproduced


def test_replay_run_compares_with_eager(monkeypatch):
    install_hook(monkeypatch, lambda fn, args, kwargs: fn)
    _, _, _, record = full_record()
    result = replay(record, run=True)
    assert result.ran and result.outputs_match and result.reproduced, result.summary()


def test_replay_run_detects_wrong_output(monkeypatch):
    def wrong(fn, args, kwargs):
        return lambda *a, **k: fn(*a, **k) + 1

    install_hook(monkeypatch, wrong)
    _, _, _, record = full_record()
    result = replay(record, run=True)
    assert result.ran and result.outputs_match is False and not result.reproduced
    assert any("output" in m and "differ" in m for m in result.mismatches)


def test_replay_falls_back_to_framejit_compile(monkeypatch):
    remove_hook(monkeypatch)
    seen = []

    def fake_compile(fn, backend):
        seen.append(backend)
        return fn

    monkeypatch.setattr(framejit, "compile", fake_compile, raising=False)
    _, _, _, record = full_record()
    result = replay(record, run=True)
    assert seen == ["eager"]
    assert result.converter == FALLBACK_NAME
    assert result.reproduced and result.outputs_match


def test_replay_without_any_converter(monkeypatch):
    remove_hook(monkeypatch)
    monkeypatch.delattr(framejit, "compile", raising=False)
    result = replay(failing_record())
    assert result.harness_error and "nothing can convert" in result.harness_error
    assert not result.reproduced


# --- the command line -----------------------------------------------------------------------------

STUB_CLI = """
import sys, types
try:
    import framejit.runtime.compiled as convert_module
except ImportError:
    convert_module = sys.modules["framejit.runtime.compiled"] = types.ModuleType("framejit.runtime.compiled")
def replay_conversion(fn, args, kwargs):
    fn(*args, **kwargs)
    return fn
convert_module.replay_conversion = replay_conversion
from framejit.cli import main
sys.exit(main(sys.argv[1:]))
"""


def run_cli(*argv, stub=False):
    command = [sys.executable, "-c", STUB_CLI, *argv] if stub else [sys.executable, "-m", "framejit", *argv]
    return subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=240)


def test_cli_replay_exit_codes(debug_dir):
    reproduced = write_record(failing_record(), debug_dir)
    differs = write_record(
        simulate_translation(failing, (torch.ones(2),), exception=ValueError("recorded differently")), debug_dir
    )
    ok = run_cli("replay", str(reproduced), stub=True)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "runs code" not in ok.stderr and "run any code" not in ok.stderr   # signed by us: no warning
    assert "reproduced the recorded outcome" in ok.stdout
    not_ok = run_cli("replay", str(differs), stub=True)
    assert not_ok.returncode == 1, not_ok.stdout + not_ok.stderr
    assert "NOT reproduced" in not_ok.stdout


def test_cli_bad_file_exits_2(tmp_path):
    junk = tmp_path / "junk.rec"
    junk.write_bytes(b"\x00\x01 definitely not a record")
    result = run_cli("replay", str(junk))
    assert result.returncode == 2
    assert "not a framejit record" in result.stderr
    assert "Traceback" not in result.stderr


# The remaining command-line cases run framejit.cli.main in this process (same code, no start-up cost).


def test_cli_version_mismatch_exits_2(debug_dir, capsys):
    path = write_record(failing_record(), debug_dir)
    rewrite_header(path, python_version="3.9.0")
    assert main(["replay", str(path)]) == 2
    err = capsys.readouterr().err
    assert "3.9.0" in err and platform.python_version() in err


def test_cli_refuses_foreign_files_unless_trusted(monkeypatch, debug_dir, capsys):
    install_hook(monkeypatch, run_eagerly)
    path = write_record(failing_record(), debug_dir)
    _make_foreign(path)
    assert main(["replay", str(path)]) == 2
    assert "owned by user id 65534" in capsys.readouterr().err
    assert main(["replay", str(path), "--trust"]) == 0


def test_cli_run_flag(monkeypatch, debug_dir, capsys):
    install_hook(monkeypatch, lambda fn, args, kwargs: fn)
    _, _, _, record = full_record()
    path = write_record(record, debug_dir)
    assert main(["replay", str(path), "--run"]) == 0
    out = capsys.readouterr().out
    assert "converted output matches eager" in out and "reproduced the recorded outcome" in out


def test_cli_torch_version_mismatch_warns(monkeypatch, debug_dir, capsys):
    install_hook(monkeypatch, run_eagerly)
    path = write_record(failing_record(), debug_dir)
    rewrite_header(path, torch_version="1.0.0")
    assert main(["replay", str(path)]) == 0
    assert "recorded with torch 1.0.0" in capsys.readouterr().err


# --- every bad path: one line, exit 2, nothing blocks, nothing changes ---------------------------


def _bad_paths(tmp_path, debug_dir):
    """name -> a path that is not a loadable record (made for real: directories, pipes, devices...)."""
    good = write_record(failing_record(), debug_dir)
    data = good.read_bytes()
    (tmp_path / "a directory").mkdir()
    fifo = tmp_path / "pipe.rec"
    os.mkfifo(fifo)
    truncated = tmp_path / "truncated.rec"
    truncated.write_bytes(data[: len(data) // 2])
    future = tmp_path / "future.rec"
    future.write_bytes(data)
    rewrite_header(future, format_version=FORMAT_VERSION + 1)
    random_bytes = tmp_path / "random.bin"
    random_bytes.write_bytes(bytes((i * 7919 + 13) % 256 for i in range(4096)))
    foreign = tmp_path / "foreign.pkl"
    foreign.write_bytes(pickle.dumps({"not": "a record"}))
    disguised = tmp_path / "disguised.rec"        # a record's header over a pickle of something else
    disguised.write_bytes(data)
    _with_payload(disguised, pickle.dumps(["not", "a", "Record"]))
    parts_missing = tmp_path / "parts-missing.rec"     # unpickles to a Record whose parts do not fit
    parts_missing.write_bytes(data)
    _with_payload(parts_missing, dill.dumps(Record(code=None, fn_name="f", qualname="f", module_name="m",
                                                   filename="f.py", firstlineno=1)))
    paths = {
        "directory": tmp_path / "a directory",
        "empty string": "",
        "missing file": tmp_path / "missing.rec",
        "named pipe": fifo,
        "device /dev/null": "/dev/null",
        "device /dev/zero": "/dev/zero",
        "truncated record": truncated,
        "future format version": future,
        "random binary": random_bytes,
        "foreign pickle": foreign,
        "record header over another pickle": disguised,
        "record that does not rebuild": parts_missing,
    }
    if os.path.exists("/proc/self/mem"):
        paths["unreadable (read error)"] = "/proc/self/mem"
    if hasattr(os, "getuid") and os.getuid() != 0:      # root reads a mode-000 file anyway
        unreadable = tmp_path / "unreadable.rec"
        unreadable.write_bytes(data)
        unreadable.chmod(0)
        paths["unreadable (permissions)"] = unreadable
    return paths


def _state_of(tmp_path):
    out = {}
    for p in sorted(tmp_path.rglob("*")):
        st = os.lstat(p)
        content = p.read_bytes() if stat.S_ISREG(st.st_mode) and st.st_mode & 0o400 else None
        out[str(p)] = (stat.S_IFMT(st.st_mode), st.st_mtime_ns, content)
    return out


def test_every_bad_path_is_one_line_and_exit_2(tmp_path, debug_dir, capsys):
    paths = _bad_paths(tmp_path, debug_dir)
    before = _state_of(tmp_path)
    for name, path in paths.items():
        if name == "named pipe":
            continue                          # in a child process below, in case it blocked
        assert main(["replay", str(path), "--run"]) == 2, name
        captured = capsys.readouterr()
        lines = captured.err.splitlines()
        assert "Traceback" not in captured.err
        assert lines[-1].startswith("error: ") and not any(l.startswith("error: ") for l in lines[:-1])
        if name in ("record header over another pickle", "record that does not rebuild"):
            continue          # found out only by unpickling: the pickle warning and the header come first
        assert captured.out == "" and len(lines) == 1, (name, captured.out, captured.err)
        with pytest.raises(RecordError):
            load_record(path)
    assert _state_of(tmp_path) == before            # nothing the user owns changed


def test_a_named_pipe_does_not_block_and_is_not_read(tmp_path, debug_dir):
    fifo = _bad_paths(tmp_path, debug_dir)["named pipe"]
    result = run_cli("replay", str(fifo))
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.strip() == f"error: {fifo} is a named pipe, not a record file"
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_bad_paths_through_the_python_api(tmp_path):
    with pytest.raises(RecordError, match="path is empty"):
        replay("")
    with pytest.raises(RecordError, match="is a directory"):
        replay(tmp_path)
    with pytest.raises(RecordError, match="must be a str or os.PathLike"):
        load_record(3)
