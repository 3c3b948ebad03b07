"""An inference graph is stored as an AOTInductor library: a program started again loads it without
importing torch._inductor and returns, mutates and draws what eager does; entries that are stale, foreign or
damaged are never loaded.

Before inductor_aoti.py, every warm process imported inductor's compile machinery (torch._inductor in
sys.modules after the first call): `test_warm_start_loads_the_library_without_inductor` failed there."""
import json
import os
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

# one program, run in fresh processes; SCALE (an environment variable) stands for a changed global
_PROGRAM = textwrap.dedent("""
    import json, os, sys, torch, framejit
    torch.set_num_threads(1)
    SCALE = float(os.environ.get("SCALE", "2.0"))
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.BatchNorm2d(4), torch.nn.ReLU(),
                                torch.nn.Flatten(), torch.nn.Linear(4 * 8 * 8, 5)).eval()

    def scaled(x):
        return model(x) * SCALE

    def writes(x):                          # writes its input: never a library
        x.mul_(SCALE)
        return torch.relu(x) + 1

    def noisy(x):                           # draws from the default generator
        return torch.nn.functional.dropout(x, 0.5, training=True) + torch.rand_like(x)

    x = torch.randn(2, 3, 8, 8)
    w = torch.randn(3, 5)
    out = {}
    with torch.no_grad():
        expected = scaled(x)
        got = framejit.compile(scaled, backend="inductor")(x)
        out["scaled"] = bool(torch.allclose(got, expected, atol=1e-5, rtol=1e-5)) and got.stride() == expected.stride()
        out["inductor_imported"] = "torch._inductor.compile_fx" in sys.modules
        w_eager, w_jit = w.clone(), w.clone()
        e, g = writes(w_eager), framejit.compile(writes, backend="inductor")(w_jit)
        out["writes"] = bool(torch.allclose(e, g) and torch.allclose(w_eager, w_jit))
        torch.manual_seed(3)
        e = noisy(w)
        after_eager = torch.rand(2)
        torch.manual_seed(3)
        g = framejit.compile(noisy, backend="inductor")(w)
        out["noisy"] = bool(torch.equal(e, g) and torch.equal(after_eager, torch.rand(2)))
    out["info"] = [(e.get("backend"), e.get("why_not"), e.get("refused", False))
                   for e in framejit.cache_info()["listed"]]
    print("RESULT", json.dumps(out))
""")


def _run(framejit_dir, inductor_dir, scale="2.0", **extra):
    env = dict(os.environ, PYTHONPATH=str(ROOT), TORCHINDUCTOR_CACHE_DIR=str(inductor_dir),
               FRAMEJIT_CACHE_DIR=str(framejit_dir), OMP_NUM_THREADS="1", SCALE=scale, FRAMEJIT_CACHE_AOTI="1",
               **extra)
    return subprocess.Popen([sys.executable, "-c", _PROGRAM], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _result(proc):
    stdout, stderr = proc.communicate(timeout=1500)
    line = next((line for line in stdout.splitlines() if line.startswith("RESULT ")), None)
    assert line is not None, stderr[-3000:]
    return json.loads(line[len("RESULT "):])


def _libraries(framejit_dir):
    return sorted(Path(framejit_dir, "entries").glob("*.fjc"))


def _correct(r):
    return r["scaled"] and r["writes"] and r["noisy"]


def test_warm_start_loads_the_library_without_inductor(tmp_path):
    # two processes fill one cache at once
    first = [_run(tmp_path / "fj", tmp_path / f"ind{i}") for i in range(2)]
    for r in map(_result, first):
        assert _correct(r), r
    # a fresh process with an empty inductor directory: only framejit's entry can make it fast
    warm = _result(_run(tmp_path / "fj", tmp_path / "ind_empty"))
    assert _correct(warm), warm
    assert not warm["inductor_imported"], warm
    stored = [e for e in warm["info"] if e[0] == "inductor-aoti"]
    assert stored and not any(refused for _, _, refused in stored), warm
    # a changed global is another graph: a miss, compiled (and right), never the stored library
    changed = _result(_run(tmp_path / "fj", tmp_path / "ind_empty", scale="3.0"))
    assert _correct(changed) and changed["inductor_imported"], changed


def test_damaged_or_foreign_libraries_are_never_loaded(tmp_path):
    assert _correct(_result(_run(tmp_path / "fj", tmp_path / "ind")))
    for path in _libraries(tmp_path / "fj"):                # truncated
        data = path.read_bytes()
        path.write_bytes(data[:len(data) // 2])
    again = _result(_run(tmp_path / "fj", tmp_path / "ind"))
    assert _correct(again) and again["inductor_imported"], again
    # another key (another user's cache, or a file written by someone else): refused, compiled again
    (tmp_path / "fj" / "key").unlink()
    other = _result(_run(tmp_path / "fj", tmp_path / "ind"))
    assert _correct(other) and other["inductor_imported"], other
