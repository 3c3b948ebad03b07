"""With the AOTInductor route on, a program started again (1) hits inductor's caches for the graphs that take
the JIT path after a library was compiled, forward and backward, and (2) gets a library for an inference
graph whose outputs eager lays out otherwise than the library, with eager's strides and values.

(1) Before inductor_aoti.py put inductor's config back after AOTInductor ran, AOTInductor's in-place fill of
`aot_inductor.metadata` (the CPU's details) entered the FX graph cache and AOTAutograd cache keys of every
later graph of the cold process; the warm process, loading the library, never filled it and missed for
every such graph (GPT-2's warm start on the JIT path: 9.6 s of CPU instead of 2.8 s):
`test_jit_graph_after_a_library_hits_when_started_again` failed there (fxgraph_cache_miss 2).
(2) Before the library's outputs were restrided, a graph shaped like GPT-2's KV cache (a permuted view
concatenated to an empty cache: contiguous in eager, the view's layout in the library) was refused ("an output differs in layout") and `test_permuted_outputs_get_a_library_with_eagers_strides`
failed."""
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

_PROGRAM = textwrap.dedent("""
    import json, torch, framejit
    from torch._dynamo.utils import counters        # read only: which of inductor's caches answered
    torch.set_num_threads(1)
    torch.manual_seed(0)
    lin = torch.nn.Linear(6, 4)
    qkv = torch.nn.Linear(16, 48)

    def infer(x, h):                        # an inference graph: a library. GPT-2's KV cache: the key's
        q, k, v = qkv(h).split(16, dim=2)   # permuted view into an empty cache, which eager lays out
        k = k.view(1, 8, 4, 4).transpose(1, 2)          # contiguously and the library as the view
        return torch.tanh(lin(x)) * 2, torch.cat([torch.tensor([]), k], dim=-2), q.sum() + v.sum()

    def train(x):                           # grad on, parameters require grad: the JIT path
        return (torch.sigmoid(lin(x)) ** 2).sum()

    x, h = torch.randn(3, 6), torch.randn(1, 8, 16)
    out = {}
    with torch.no_grad():
        expected, got = infer(x, h), framejit.compile(infer, backend="inductor")(x, h)
    out["infer"] = all(torch.allclose(g, e, atol=1e-6) for g, e in zip(got, expected))
    out["strides"] = [[list(g.stride()) for g in got], [list(e.stride()) for e in expected]]
    expected = train(x)
    expected.backward()
    eager_grad = lin.weight.grad.clone()
    lin.weight.grad = None
    lin.bias.grad = None
    got = framejit.compile(train, backend="inductor")(x)
    got.backward()
    out["train"] = bool(torch.allclose(got, expected, atol=1e-6) and torch.allclose(lin.weight.grad, eager_grad, atol=1e-6))
    out["fx"] = dict(counters["inductor"])
    out["aot"] = dict(counters["aot_autograd"])
    out["listed"] = sorted((e.get("backend"), e.get("why_not")) for e in framejit.cache_info()["listed"])
    print("RESULT", json.dumps(out))
""")


def _run(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT), TORCHINDUCTOR_CACHE_DIR=str(tmp_path / "inductor"),
               FRAMEJIT_CACHE_DIR=str(tmp_path / "framejit"), OMP_NUM_THREADS="1", FRAMEJIT_CACHE_AOTI="1",
               FRAMEJIT_CACHE_AOTI_TRAINING="0")          # the training graph takes the JIT path it tests
    proc = subprocess.run([sys.executable, "-c", _PROGRAM], env=env, capture_output=True, text=True, timeout=1500)
    line = next((line for line in proc.stdout.splitlines() if line.startswith("RESULT ")), None)
    assert line is not None, proc.stderr[-3000:]
    return json.loads(line[len("RESULT "):])


@pytest.fixture(scope="module")
def cold_and_warm(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("aoti_then_jit")
    return _run(tmp_path), _run(tmp_path)


def test_jit_graph_after_a_library_hits_when_started_again(cold_and_warm):
    cold, warm = cold_and_warm
    assert cold["train"] and warm["train"], (cold, warm)
    assert any(backend == "inductor" for backend, _ in cold["listed"]), cold     # the JIT path was taken
    assert warm["fx"].get("fxgraph_cache_miss", 0) == 0, warm        # forward and backward both hit
    assert warm["fx"].get("fxgraph_cache_hit", 0) >= 2, warm
    assert warm["aot"].get("autograd_cache_hit") == 1 and "autograd_cache_miss" not in warm["aot"], warm


def test_permuted_outputs_get_a_library_with_eagers_strides(cold_and_warm):
    for run in cold_and_warm:
        assert run["infer"], run
        got, expected = run["strides"]
        assert got == expected and expected[1] == [128, 32, 4, 1], run
        assert ["inductor-aoti", None] in run["listed"], run          # stored as a library, not refused
