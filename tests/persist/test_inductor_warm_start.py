"""A program started again hits inductor's caches (its own directory, or framejit's persistent entry
when inductor's directory is empty) and returns what eager returns. (The JIT path: with the AOTInductor
route on, this inference graph would be a stored library, test_aoti_warm_start.py.)

Before framejit compiled under a TracingContext, inductor's FX graph and AOTAutograd caches bypassed
every framejit graph ("No shape env"): the second run below reported autograd_cache_bypass."""
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

_PROGRAM = textwrap.dedent("""
    import json, torch, framejit
    from torch._dynamo.utils import counters        # read only: which of inductor's caches answered
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.BatchNorm2d(4), torch.nn.ReLU(),
                                torch.nn.Flatten(), torch.nn.Linear(4 * 8 * 8, 5)).eval()
    x = torch.randn(2, 3, 8, 8)
    with torch.no_grad():
        expected = model(x)
        compiled = framejit.compile(model, backend="inductor")
        compiled(x)         # the first call answers with the graph's fx code while inductor compiles behind it
        got = compiled(x)   # (backends/compile_behind.py); the second runs the compiled graph
    print("RESULT", json.dumps({"aot": dict(counters["aot_autograd"]), "fx": dict(counters["inductor"]),
                                "same": bool(torch.allclose(got, expected, atol=1e-5, rtol=1e-5))}))
""")


def _run(inductor_dir, framejit_dir, cache_on=True):
    env = dict(os.environ, PYTHONPATH=str(ROOT), TORCHINDUCTOR_CACHE_DIR=str(inductor_dir),
               FRAMEJIT_CACHE_DIR=str(framejit_dir), FRAMEJIT_CACHE="1" if cache_on else "0", OMP_NUM_THREADS="1",
               FRAMEJIT_CACHE_AOTI="0")        # the JIT path (inference graphs go to inductor_aoti.py)
    proc = subprocess.run([sys.executable, "-c", _PROGRAM], env=env, capture_output=True, text=True, timeout=900)
    line = next((line for line in proc.stdout.splitlines() if line.startswith("RESULT ")), None)
    assert line is not None, proc.stderr[-3000:]
    return json.loads(line[len("RESULT "):])


def test_warm_start_hits_inductors_caches_and_framejits(tmp_path):
    first = _run(tmp_path / "inductor_a", tmp_path / "framejit")
    assert first["same"] and first["aot"].get("autograd_cache_saved") == 1, first
    # the same program again, same inductor directory, framejit's cache off: inductor's own cache hits
    again = _run(tmp_path / "inductor_a", tmp_path / "unused", cache_on=False)
    assert again["same"] and again["aot"].get("autograd_cache_hit") == 1, again
    # an empty inductor directory: framejit's persistent entry puts the artifacts back
    restored = _run(tmp_path / "inductor_b", tmp_path / "framejit")
    assert restored["same"] and restored["aot"].get("autograd_cache_hit") == 1, restored
