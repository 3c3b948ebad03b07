"""Compile metrics: the bounded store, phase timing, compile_times reports, global state checks,
and the debug outputs (log file, exit report, conversion profiles)."""

import csv
import importlib
import io
import json
import logging
import pstats
import random
import stat
import subprocess
import sys
import types
from pathlib import Path

import pytest
import torch

from framejit.config import Config
from framejit.debug_log import conversion_profile, debug_log_path, exit_report
from framejit.global_state import check_global_state, global_state_snapshot
from framejit.metrics import (
    CompilationMetrics,
    CompileTimes,
    MetricsStore,
    PhaseTimer,
    active_timer,
    clear_metrics,
    compile_times,
    frame_key_for,
    metrics,
    metrics_store,
    phase,
    write_report,
)

REPO = Path(__file__).resolve().parents[1]
# framejit/__init__ re-exports the function framejit.metrics.metrics as framejit.metrics, which hides
# the submodule from `import framejit.metrics as ...`; import_module always gives the module.
metrics_module = importlib.import_module("framejit.metrics")


@pytest.fixture(autouse=True)
def empty_default_store():
    clear_metrics()
    size = metrics_store().size
    yield
    metrics_store().size = size
    clear_metrics()


@pytest.fixture
def clock(monkeypatch):
    """A fake perf_counter for the timers: advance it with clock.tick(seconds)."""

    class Clock:
        now = 100.0

        def tick(self, seconds):
            self.now += seconds

    fake = Clock()
    monkeypatch.setattr(metrics_module, "time", types.SimpleNamespace(perf_counter=lambda: fake.now, time=lambda: 0.0))
    return fake


def sample_code(x):
    return x


# --- CompilationMetrics and the store -------------------------------------------------------------


def test_compilation_metrics_fields_and_ids():
    a = CompilationMetrics.for_code(sample_code.__code__)
    b = CompilationMetrics.for_code(sample_code.__code__, frame_key="custom", cache_size=2)
    assert b.id > a.id
    assert a.frame_key == frame_key_for(sample_code.__code__) == (
        f"sample_code ({sample_code.__code__.co_filename}:{sample_code.__code__.co_firstlineno})"
    )
    assert (a.co_name, a.co_firstlineno) == ("sample_code", sample_code.__code__.co_firstlineno)
    assert b.frame_key == "custom" and b.cache_size == 2
    assert a.restart_reasons == [] and a.phase_times == {} and a.has_installed_code is False
    assert a.restart_reasons is not b.restart_reasons
    assert a.recompile_reason is None and a.fail_type is None
    json.dumps(a.as_dict())


def test_set_failure():
    entry = CompilationMetrics.for_code(sample_code.__code__)
    entry.set_failure(NotImplementedError("generators"), "user.py", 12)
    assert (entry.fail_type, entry.fail_reason) == ("NotImplementedError", "generators")
    assert (entry.fail_user_frame_filename, entry.fail_user_frame_lineno) == ("user.py", 12)

    class TranslatorError(Exception):
        pass

    entry.set_failure(TranslatorError("x"))
    assert entry.fail_type == f"{__name__}.test_set_failure.<locals>.TranslatorError"


def test_store_is_bounded_and_keeps_the_newest():
    store = MetricsStore(size=3)
    entries = [CompilationMetrics(frame_key=str(i)) for i in range(5)]
    for entry in entries:
        store.add(entry)
    assert store.all() == entries[2:] and len(store) == 3
    store.size = 2
    assert store.all() == entries[3:]
    store.size = 10
    store.add(entries[0])
    assert store.all() == [entries[3], entries[4], entries[0]]
    store.clear()
    assert store.all() == []
    store.size = 0
    store.add(entries[0])
    assert store.all() == []


def test_store_checks_its_inputs():
    with pytest.raises(ValueError, match=">= 0"):
        MetricsStore(size=-1)
    with pytest.raises(TypeError, match="must be an int"):
        metrics_store().size = "64"
    with pytest.raises(TypeError, match="expects CompilationMetrics"):
        MetricsStore().add({"frame_key": "x"})


def test_module_level_accessors_share_one_store():
    assert metrics() == []
    entry = CompilationMetrics(frame_key="f")
    metrics_store().add(entry)
    assert metrics() == [entry]
    assert metrics() is not metrics()  # a copy each time
    metrics_store().size = Config().metrics_size
    assert metrics_store().size == 64
    clear_metrics()
    assert metrics() == []


# --- phase timing ---------------------------------------------------------------------------------


def test_phase_timer_context_manager(clock):
    table = CompileTimes()
    timer = PhaseTimer("f (f.py:1)", table)
    with timer:
        with timer.phase("translate"):
            clock.tick(2.0)
            with timer.phase("fake_propagation"):
                clock.tick(0.5)
        with timer.phase("codegen"):
            clock.tick(0.25)
    assert timer.times == {"translate": 2.5, "fake_propagation": 0.5, "codegen": 0.25}
    assert timer.total() == 3.25
    assert table.per_function() == {"f (f.py:1)": {"translate": [2.5], "fake_propagation": [0.5], "codegen": [0.25]}}


def test_reentered_phase_counts_once(clock):
    timer = PhaseTimer("f", CompileTimes())

    @timer.phase("translate")
    def translate(depth):
        clock.tick(1.0)
        if depth:
            translate(depth - 1)

    translate(2)
    assert timer.times == {"translate": 3.0}


def test_module_level_phase_uses_the_active_timer(clock):
    @phase("guard_build")
    def build_guards():
        clock.tick(1.0)

    build_guards()  # no active timer: a no-op, nothing recorded anywhere
    assert active_timer() is None
    table = CompileTimes()
    with PhaseTimer("g", table) as timer:
        assert active_timer() is timer
        build_guards()
        with phase("backend_compile"):
            clock.tick(4.0)
    assert active_timer() is None
    assert timer.times == {"guard_build": 1.0, "backend_compile": 4.0}
    assert table.totals() == {"backend_compile": 4.0, "guard_build": 1.0}


def test_timer_records_on_exit_even_when_conversion_fails(clock):
    table = CompileTimes()
    with pytest.raises(RuntimeError):
        with PhaseTimer("h", table) as timer:
            with timer.phase("translate"):
                clock.tick(1.0)
                raise RuntimeError("translation failed")
    assert table.per_function() == {"h": {"translate": [1.0]}}


def test_unknown_phase_is_rejected():
    with pytest.raises(ValueError, match="unknown compile phase 'translation'.*bytecode_analysis"):
        phase("translation")
    with pytest.raises(ValueError, match="unknown compile phase"):
        PhaseTimer("f").phase("lowering")


def fill(table):
    table.add("f (a.py:1)", {"translate": 1.0, "bytecode_analysis": 0.5})
    table.add("f (a.py:1)", {"translate": 2.0})
    table.add("g (b.py:7)", {"backend_compile": 3.0})


def test_compile_times_text():
    table = CompileTimes()
    fill(table)
    text = table.report()
    lines = text.splitlines()
    assert lines[0].startswith("framejit compile times")
    assert lines[1] == "f (a.py:1)"
    assert lines[2].split() == ["bytecode_analysis", "0.500000"]  # phases in pipeline order
    assert lines[3].split() == ["translate", "1.000000,", "2.000000"]
    assert "g (b.py:7)" in lines and "3.000000" in text
    totals = table.report(aggregate=True)
    assert "translate" in totals and "3.000000  (2 conversions)" in totals
    overall = totals.split("all functions\n")[1].splitlines()
    assert [line.split() for line in overall] == [
        ["bytecode_analysis", "0.500000"],
        ["translate", "3.000000"],
        ["backend_compile", "3.000000"],
    ]


def test_compile_times_csv():
    table = CompileTimes()
    fill(table)
    rows = list(csv.reader(io.StringIO(table.report(repr="csv"))))
    assert rows[0] == ["function", "phase", "conversion", "seconds"]
    assert ["f (a.py:1)", "translate", "1", "2.000000"] in rows
    assert len(rows) == 1 + 4
    totals = list(csv.reader(io.StringIO(table.report(repr="csv", aggregate=True))))
    assert totals[0] == ["function", "phase", "conversions", "total_seconds"]
    assert ["f (a.py:1)", "translate", "2", "3.000000"] in totals
    assert ["(all)", "backend_compile", "1", "3.000000"] in totals


def test_compile_times_module_function_and_bad_repr():
    assert "(nothing was compiled)" in compile_times()
    assert compile_times(repr="csv").strip() == "function,phase,conversion,seconds"
    with PhaseTimer("k (k.py:2)") as timer:
        with timer.phase("codegen"):
            pass
    assert "k (k.py:2)" in compile_times() and "codegen" in compile_times(aggregate=True)
    with pytest.raises(ValueError, match="'str' or 'csv'"):
        compile_times(repr="json")


def test_write_report(tmp_path):
    metrics_store().add(CompilationMetrics(frame_key="f", phase_times={"translate": 1.0}))
    with PhaseTimer("f") as timer:
        with timer.phase("translate"):
            pass
    path = tmp_path / "report.jsonl"
    write_report(path)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [line["kind"] for line in lines] == ["compilation", "compile_times"]
    assert lines[0]["frame_key"] == "f" and lines[0]["phase_times"] == {"translate": 1.0}
    assert list(lines[1]["per_function"]) == ["f"]


# --- global state ---------------------------------------------------------------------------------


def test_global_state_unchanged():
    before = global_state_snapshot()
    torch.ones(3) + 1
    assert check_global_state(before) == []


def test_global_state_changes_are_reported():
    before = global_state_snapshot()
    precision = torch.get_float32_matmul_precision()
    python_rng, torch_rng = random.getstate(), torch.get_rng_state()
    try:
        torch.set_grad_enabled(False)
        torch.use_deterministic_algorithms(True, warn_only=True)
        torch.set_float32_matmul_precision("medium" if precision != "medium" else "high")
        random.random()
        torch.rand(1)
        changes = check_global_state(before)
    finally:
        torch.set_grad_enabled(True)
        torch.use_deterministic_algorithms(False)
        torch.set_float32_matmul_precision(precision)
        random.setstate(python_rng)
        torch.set_rng_state(torch_rng)
    text = "\n".join(changes)
    assert "grad mode changed: True -> False" in text
    assert "deterministic algorithms changed: False -> True" in text
    assert "float32 matmul precision changed" in text
    assert "Python random module state changed" in text
    assert "torch CPU RNG state changed" in text
    assert check_global_state(before) == []


def test_inference_mode_is_reported():
    before = global_state_snapshot()
    with torch.inference_mode():
        changes = check_global_state(before)
    assert "inference mode changed: False -> True" in changes


# --- debug outputs --------------------------------------------------------------------------------


def test_exit_report_logs_compile_times_and_writes_the_report(tmp_path, caplog):
    with PhaseTimer("f (f.py:1)") as timer:
        with timer.phase("translate"):
            pass
    config = Config(debug_dir=tmp_path, debug=True, report_path=tmp_path / "r.jsonl")
    with caplog.at_level(logging.INFO, logger="framejit"):
        exit_report(config)
    assert "compile times at exit" in caplog.text and "f (f.py:1)" in caplog.text
    assert (tmp_path / "r.jsonl").exists()


def test_debug_log_written_at_exit(tmp_path):
    script = f"""
from framejit.config import Config
from framejit.debug_log import install
from framejit.metrics import PhaseTimer
config = Config(debug_dir={str(tmp_path / "debug")!r}, debug=True)
print(install(config))
install(config)  # idempotent
with PhaseTimer("user_fn (user.py:3)") as timer:
    with timer.phase("translate"):
        pass
"""
    result = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=240)
    assert result.returncode == 0, result.stderr
    log_path = debug_log_path(Config(debug_dir=tmp_path / "debug"))
    assert log_path == tmp_path / "debug" / "framejit" / "debug.log"
    assert result.stdout.strip() == str(log_path)
    text = log_path.read_text()
    assert text.count("compile times at exit:") == 1
    assert "user_fn (user.py:3)" in text and "translate" in text
    assert stat.S_IMODE(log_path.stat().st_mode) == 0o600
    assert stat.S_IMODE(log_path.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "debug").stat().st_mode) == 0o700


def test_conversion_profile(tmp_path):
    with conversion_profile(Config(debug_dir=tmp_path), "f") as path:
        pass
    assert path is None and not (tmp_path / "profiles").exists()
    config = Config(debug_dir=tmp_path, profile_conversion=True)
    with conversion_profile(config, "f (a.py:1)") as path:
        sum(range(1000))
    assert path.parent == tmp_path / "profiles" and path.suffix == ".prof"
    pstats.Stats(str(path))  # a valid cProfile dump


def test_compile_times_arguments_are_checked():
    import framejit

    with pytest.raises(ValueError, match="repr must be 'str' or 'csv'"):
        framejit.compile_times("xml")
    with pytest.raises(TypeError, match="aggregate must be True or False, got str 'yes'"):
        framejit.compile_times(aggregate="yes")
