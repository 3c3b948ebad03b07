"""The default route (FRAMEJIT_CACHE_AOTI unset: "background"): the first process compiles on the JIT path and a
child builds the library after the first result; the next process loads the library and the stored conversion
of a decorated forward over a structure returning a dict with None, tuples and lists, without translating
(no torch._dynamo import, no conversion) and returns eager's result.

Before backends/aoti_background.py the default was no library at all (every warm process converted and
imported torch._dynamo); before class_fingerprint skipped `__slotnames__` the record the first process wrote
(it pickles the graph for the child) never loaded. Fresh processes that build a library: `make test-aoti`.
"""
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not os.environ.get("FRAMEJIT_AOTI_TESTS"),
                                reason="AOTInductor warm-start tests: make test-aoti")

ROOT = Path(__file__).resolve().parents[2]

_PROGRAM = textwrap.dedent("""
    import functools, json, sys
    import torch
    import framejit
    torch.set_num_threads(1)

    def logged(inner):
        @functools.wraps(inner)
        def wrapper(self, *args, **kwargs):
            return inner(self, *args, **kwargs)
        return wrapper

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = torch.nn.Linear(8, 8), torch.nn.Linear(8, 4)

        @logged
        def forward(self, batch):
            h = torch.relu(self.a(batch["x"]))
            return {"out": self.b(h), "none": None, "pair": (h.sum(), [batch["y"] + 1, 3])}

    torch.manual_seed(0)
    net = Net().eval()
    batch = {"x": torch.randn(3, 8), "y": torch.randn(3)}
    with torch.no_grad():
        compiled = framejit.compile(net, backend="inductor")
        got, expected = compiled(batch), net(batch)
    state = compiled.forward._framejit_state
    right = (set(got) == set(expected) and got["none"] is None and torch.allclose(got["out"], expected["out"])
             and torch.allclose(got["pair"][0], expected["pair"][0]) and got["pair"][1][1] == 3
             and torch.equal(got["pair"][1][0], expected["pair"][1][0]))
    print("RESULT", json.dumps({"right": bool(right), "stored": bool(getattr(state.results[0], "stored", False)),
                                "conversions": state.conversions, "dynamo": "torch._dynamo" in sys.modules}))
""")


def _run(folder, cache):
    env = {k: v for k, v in os.environ.items() if k != "FRAMEJIT_CACHE_AOTI"}
    env.update(PYTHONPATH=str(ROOT), TORCHINDUCTOR_CACHE_DIR=str(cache / "ind"), FRAMEJIT_CACHE_DIR=str(cache / "fj"),
               OMP_NUM_THREADS="1", PYTHONDONTWRITEBYTECODE="1")
    proc = subprocess.run([sys.executable, str(folder / "prog.py")], env=env, cwd=str(folder), capture_output=True,
                          text=True, timeout=1500)
    line = next((line for line in proc.stdout.splitlines() if line.startswith("RESULT ")), None)
    assert line is not None, proc.stderr[-3000:]
    return json.loads(line[len("RESULT "):])


def test_a_library_built_after_the_first_result_serves_the_next_process(tmp_path):
    (tmp_path / "prog.py").write_text(_PROGRAM)
    cold = _run(tmp_path, tmp_path)
    assert cold["right"] and not cold["stored"] and cold["conversions"] == 1, cold
    building = tmp_path / "fj" / "building"
    deadline = time.time() + 1500
    while building.is_dir() and any(building.iterdir()) and time.time() < deadline:
        time.sleep(2)
    assert not any(building.iterdir()), "the background build did not finish"
    warm = _run(tmp_path, tmp_path)
    assert warm["right"] and warm["stored"] and warm["conversions"] == 0 and not warm["dynamo"], warm
