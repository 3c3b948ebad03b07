"""The profiling backend: framejit.CompileProfiler() and backend="profile"."""

import os
import subprocess
import sys
from pathlib import Path

import torch

import framejit
from framejit.backends import BACKENDS
from framejit.observe.profiler import CompileProfiler, SHARED_PROFILER

REPO = Path(__file__).resolve().parents[2]


def with_break(x):
    y = torch.relu(x) + 1
    print("break")
    return y.sin() * 2


def test_profiler_counts_graphs_ops_breaks_and_recompiles(tmp_path):
    prof = framejit.CompileProfiler()
    f = framejit.compile(with_break, backend=prof, debug_dir=tmp_path, dynamic=False)  # static sizes: each new size recompiles
    f(torch.ones(3))
    f(torch.ones(3))
    f(torch.ones(6))
    assert prof.graph_count == 4 and prof.op_count == 8
    assert prof.ops_per_graph == [2, 2, 2, 2]
    assert len(prof.breaks) == 2 and prof.breaks[0][1].startswith("print()")
    assert prof.recompiles == ["recompiled with_break: x.shape[0] changed 3 -> 6",
                               "recompiled __fj_resume_at_" + prof.recompiles[1].split("__fj_resume_at_")[1]]
    text = prof.report()
    assert "graphs:           4" in text and "graph breaks:     2" in text and "recompiles:       2" in text
    assert "2 x with_break: print()" in text and 'print("break")' in text
    assert "relu x2" in text
    prof.clear()
    assert prof.graph_count == 0 and prof.report().count("0") >= 3


def test_profiler_wraps_another_backend():
    seen = []
    prof = CompileProfiler(inner=lambda gm, inputs: seen.append(gm) or gm.forward)
    assert framejit.compile(lambda x: x + 1, backend=prof)(torch.ones(1)).item() == 2.0
    assert len(seen) == 1 and prof.graph_count == 1


def test_profile_backend_prints_its_report_at_exit(tmp_path):
    assert BACKENDS["profile"] is SHARED_PROFILER
    script = """
import torch, framejit
def f(x):
    return torch.relu(x) + 1
framejit.compile(f, backend="profile")(torch.ones(2))
"""
    result = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True,
                            env=dict(os.environ, PYTHONPATH=str(REPO), FRAMEJIT_DEBUG_DIR=str(tmp_path)),
                            timeout=240)
    assert result.returncode == 0, result.stderr
    assert "framejit compile profile" in result.stderr and "graphs:           1" in result.stderr
