"""What every real conversion leaves behind: phase times, CompilationMetrics, recompile reasons (logged
once per recompile), restart reasons, global-state checks, the debug log and conversion profiles."""

import importlib
import logging
import os
import random
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import torch

import framejit
from framejit.tools.explain import ExplainOutput
from framejit.observe.metrics import PHASES, clear_metrics
from framejit.observe.conversion import GlobalStateChanged

REPO = Path(__file__).resolve().parents[2]
metrics_module = importlib.import_module("framejit.observe.metrics")


@pytest.fixture(autouse=True)
def fresh_metrics():
    clear_metrics()
    yield
    clear_metrics()


def add_relu(x, y):
    return torch.relu(x) + y


def prints_in_helper(x):
    y = x * 2
    return _helper_that_prints(y) - 1


def _helper_that_prints(x):
    print("inside")
    return x + 1


def test_phases_and_metrics_of_a_real_conversion(tmp_path):
    f = framejit.compile(add_relu, debug_dir=tmp_path)
    x = torch.randn(4)
    torch.testing.assert_close(f(x, x), add_relu(x, x))
    (m,) = framejit.metrics()
    assert m.co_name == "add_relu" and m.outcome == "entry" and m.has_installed_code
    assert m.cache_size == 0 and m.graph_op_count == 2 and m.guard_count >= 2
    assert set(m.phase_times) == set(PHASES)
    assert all(t >= 0 for t in m.phase_times.values())
    assert m.phase_times["fake_propagation"] <= m.phase_times["translate"]
    assert m.entire_frame_compile_time_s >= m.phase_times["translate"]
    assert m.backend_compile_time_s == m.phase_times["backend_compile"]
    text = framejit.compile_times()
    assert "add_relu" in text and "fake_propagation" in text
    assert "(all)" in framejit.compile_times(repr="csv", aggregate=True)


def test_recompile_reason_is_kept_logged_once_and_in_metrics(tmp_path, caplog):
    f = framejit.compile(add_relu, debug_dir=tmp_path, dynamic=False)  # static sizes: each new size recompiles
    with caplog.at_level(logging.INFO, logger="framejit"):
        f(torch.ones(8), torch.ones(8))
        f(torch.ones(8), torch.ones(8))        # a hit: nothing logged
        f(torch.ones(16), torch.ones(16))
        f(torch.ones(16), torch.ones(16))
    expected = "recompiled add_relu: x.shape[0] changed 8 -> 16"
    assert [r.getMessage() for r in caplog.records if r.name == "framejit" and "recompiled" in r.getMessage()] \
        == [expected]
    first, second = framejit.metrics()
    assert first.recompile_reason is None and second.recompile_reason == expected
    assert second.cache_size == 1
    assert f._framejit_state.results[1].recompile_reason == expected


def passes_through(*args, scale=2.0, **kwargs):
    extra = len(args) + scale                # guards on *args and the default come before kwargs' tensor
    return kwargs["x"] * extra


def test_recompile_reason_names_the_guard_that_failed_for_varargs_and_defaults():
    f = framejit.compile(passes_through, dynamic=False)  # static sizes: each new size recompiles
    f(x=torch.ones(3))
    f(x=torch.ones(5))           # no *args, scale from its default: both must be readable for the reason
    assert framejit.metrics()[-1].recompile_reason == "recompiled passes_through: kwargs['x'].shape[0] changed 3 -> 5"


def test_explain_lists_recompile_reasons():
    out = ExplainOutput()
    out.recompile_reasons.append("recompiled f: x.shape[0] changed 8 -> 16")
    assert "Recompiles:\n  - recompiled f: x.shape[0] changed 8 -> 16" in str(out)


def test_restart_reasons_and_failure_line_of_a_break(tmp_path, capsys):
    f = framejit.compile(prints_in_helper, debug_dir=tmp_path)
    torch.testing.assert_close(f(torch.ones(3)), torch.full((3,), 2.0))
    m = next(m for m in framejit.metrics() if m.co_name == "prints_in_helper")
    assert len(m.restart_reasons) == 1
    assert "print()" in m.restart_reasons[0] and "prints_in_helper" in m.restart_reasons[0]
    assert m.graph_break_count == 1


def test_eager_fallback_names_the_user_line(tmp_path, capsys):
    def prints_in_a_loop(x):
        for _ in range(2):
            print("tick")
            x = x + 1
        return x

    f = framejit.compile(prints_in_a_loop, debug_dir=tmp_path)
    torch.testing.assert_close(f(torch.ones(2)), torch.full((2,), 3.0))
    m = framejit.metrics()[0]
    if m.outcome == "entry":
        pytest.skip("breaks inside loops are split now; nothing falls back")
    assert m.fail_type == "eager fallback" and "loop" in m.fail_reason
    first_line = prints_in_a_loop.__code__.co_firstlineno
    assert (m.fail_user_frame_filename, m.fail_user_frame_lineno) == (__file__, first_line + 2)


def test_internal_failure_metrics(tmp_path):
    def broken_backend(gm, example_inputs):
        raise RuntimeError("injected")

    f = framejit.compile(add_relu, backend=broken_backend, debug_dir=tmp_path)
    with pytest.warns(RuntimeWarning, match="failed to convert add_relu") as caught:
        f(torch.ones(2), torch.ones(2))
    assert caught[0].filename == __file__             # the warning points at the user's call
    (m,) = framejit.metrics()
    assert m.fail_type == "framejit.errors.BackendError" and "injected" in m.fail_reason
    assert m.fail_user_frame_filename == __file__
    assert m.outcome == "eager" and m.record_path and Path(m.record_path).exists()


# --- global state ------------------------------------------------------------------------------------


def test_a_conversion_that_changes_global_state_is_restored_and_reported(tmp_path):
    def sloppy_backend(gm, example_inputs):
        torch.set_grad_enabled(False)
        torch.rand(3)                                  # consumes the global RNG
        random.random()
        return gm.forward

    f = framejit.compile(add_relu, backend=sloppy_backend, debug_dir=tmp_path)
    torch.manual_seed(0)
    random.seed(0)
    expected_rand, expected_random = torch.rand(2), random.random()
    torch.manual_seed(0)
    random.seed(0)
    with pytest.warns(GlobalStateChanged, match="framejit bug: converting add_relu changed global state"):
        f(torch.ones(2), torch.ones(2))
    assert torch.is_grad_enabled()
    assert torch.equal(torch.rand(2), expected_rand) and random.random() == expected_random
    (m,) = framejit.metrics()
    text = "\n".join(m.global_state_changes)
    assert "grad mode changed: True -> False" in text and "torch CPU RNG state changed" in text
    assert "Python random module state changed" in text


def test_a_clean_conversion_reports_nothing(tmp_path):
    f = framejit.compile(add_relu, debug_dir=tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error", GlobalStateChanged)
        f(torch.ones(2), torch.ones(2))
    assert framejit.metrics()[0].global_state_changes == []


# --- debug outputs -----------------------------------------------------------------------------------


def test_framejit_debug_writes_a_log_file(tmp_path):
    script = """
import torch, framejit
def f(x):
    return torch.relu(x) * 2
g = framejit.compile(f)
g(torch.ones(3)); g(torch.ones(5))
"""
    env = dict(os.environ, FRAMEJIT_DEBUG="1", FRAMEJIT_DEBUG_DIR=str(tmp_path), PYTHONPATH=str(REPO))
    result = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True,
                            timeout=240)
    assert result.returncode == 0, result.stderr
    text = (tmp_path / "framejit" / "debug.log").read_text()
    assert "converted f (<string>:3) -> entry" in text
    assert "recompiled f: x.shape[0] changed 3 -> 5" in text
    assert "generated entry for f:" in text and "def __fj_entry(x):" in text
    assert text.count("compile times at exit:") == 1


def test_profile_conversion_writes_stats_and_a_summary(tmp_path):
    f = framejit.compile(add_relu, debug_dir=tmp_path, profile_conversion=True)
    f(torch.ones(2), torch.ones(2))
    (m,) = framejit.metrics()
    prof = Path(m.profile_path)
    assert prof.parent == tmp_path / "profiles" and prof.exists()
    summary = prof.with_suffix(".txt").read_text()
    assert summary.startswith("framejit conversion profile of add_relu") and "cumulative" in summary
    assert "convert_frame" in summary


def test_config_metrics_size_bounds_the_store(tmp_path):
    store = metrics_module.metrics_store()
    size = store.size
    try:
        f = framejit.compile(add_relu, debug_dir=tmp_path, metrics_size=2, dynamic=False)  # static sizes: each new size recompiles
        for n in (1, 2, 3):
            f(torch.ones(n), torch.ones(n))
        assert store.size == 2 and [m.cache_size for m in framejit.metrics()] == [1, 2]
    finally:
        store.size = size
