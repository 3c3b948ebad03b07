"""A training graph (grad on, parameters that require grad) is stored as a pair of AOTInductor libraries
(backends/training_library.py): a program started again loads the pair without importing inductor's compile
machinery, and its losses, gradients and parameters after one and two SGD steps are eager's; an in-place
write of a saved tensor, a second backward without retain_graph and a double backward behave as eagerly
(the double backward as on framejit's JIT inductor path, AOT autograd's); a dropout draws eager's numbers;
a graph the runtime cannot model (batch norm writing its running stats) gets a "no" entry and the JIT path.

Before training_library.py a warm process imported torch._inductor.compile_fx for every training graph and
no "inductor-aoti-train" entry existed: `test_warm_training_step_loads_the_pair_without_inductor` failed.
"""
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

# fresh processes that build AOTInductor libraries cold (minutes of C++ on 2 cores): `make test-aoti`
pytestmark = pytest.mark.skipif(not os.environ.get("FRAMEJIT_AOTI_TESTS"),
                                reason="AOTInductor training-library tests: make test-aoti")

ROOT = Path(__file__).resolve().parents[2]

_PROGRAM = textwrap.dedent("""
    import copy, json, os, sys, torch, framejit
    torch.set_num_threads(1)
    torch.manual_seed(0)

    class MLP(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = torch.nn.Linear(4, 16), torch.nn.Linear(16, 3)
            self.register_buffer("scale", torch.tensor([0.5, 2.0, 1.0]))     # an input without grad

        def forward(self, x, y):
            return torch.nn.functional.mse_loss(self.b(torch.relu(self.a(x))) * self.scale, y)

    class Noisy(MLP):                       # a random op: the pair draws eager's numbers
        def forward(self, x, y):
            h = torch.nn.functional.dropout(torch.relu(self.a(x)), 0.3, training=True)
            return torch.nn.functional.mse_loss(self.b(h), y)

    class Normed(MLP):                      # batch norm in training writes its running stats: refused
        def __init__(self):
            super().__init__()
            self.norm = torch.nn.BatchNorm1d(16)

        def forward(self, x, y):
            return torch.nn.functional.mse_loss(self.b(self.norm(torch.relu(self.a(x)))), y)

    x, y = torch.randn(8, 4), torch.randn(8, 3)

    def steps(model, loss_fn, n=2):
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        losses, grads = [], []
        for _ in range(n):
            loss = loss_fn(x, y)
            loss.backward()
            grads.append([p.grad.clone() for p in model.parameters()])
            opt.step()
            opt.zero_grad()
            losses.append(loss.detach())
        return losses, grads, [p.detach().clone() for p in model.parameters()], list(model.buffers()), torch.rand(2)

    def same(a, b):
        if isinstance(a, torch.Tensor):
            return a.shape == b.shape and bool(torch.allclose(a, b, rtol=1e-4, atol=1e-5))
        return len(a) == len(b) and all(same(p, q) for p, q in zip(a, b))

    def outcome(fn):
        try:
            fn()
            return "ok"
        except RuntimeError as e:
            return str(e).split(".")[0][:80]

    out = {}
    for name, cls in (("mlp", MLP), ("noisy", Noisy), ("normed", Normed)):
        if name not in os.environ["MODELS"].split(","):
            continue
        torch.manual_seed(1)
        model = cls()
        eager_model = copy.deepcopy(model)
        torch.manual_seed(2)
        expected = steps(eager_model, eager_model)
        torch.manual_seed(2)
        got = steps(model, framejit.compile(model, backend="inductor"))
        out[name] = same(expected, got)
    # what happens between forward and backward, eager's model against the compiled one
    model = MLP()
    compiled = framejit.compile(model, backend="inductor")

    def write_saved(fn, m):
        xs = x.clone()
        loss = fn(xs, y)
        with torch.no_grad():
            m.b.weight.mul_(1.0)           # a saved parameter (for h's gradient) written in place
        loss.backward()

    def backward_twice(fn, m):
        loss = fn(x, y)
        loss.backward()
        loss.backward()

    def retain(fn, m):
        loss = fn(x, y)
        loss.backward(retain_graph=True)
        loss.backward()

    def double_backward(fn, m):
        loss = fn(x, y)
        g, = torch.autograd.grad(loss, m.b.weight, create_graph=True)
        g.sum().backward()

    for name, case in (("write_saved", write_saved), ("backward_twice", backward_twice),
                       ("retain", retain), ("double_backward", double_backward)):
        m = copy.deepcopy(model)
        out[name] = [outcome(lambda: case(m, m)), outcome(lambda: case(compiled, model))]
    out["inductor_imported"] = "torch._inductor.compile_fx" in sys.modules
    out["functorch_imported"] = "torch._functorch.aot_autograd" in sys.modules
    out["info"] = [(e.get("backend"), e.get("why_not"), e.get("refused", False)) for e in framejit.cache_info()["listed"]]
    print("RESULT", json.dumps(out))
""")


def _run(framejit_dir, inductor_dir, mode, models="mlp,noisy,normed"):
    env = dict(os.environ, PYTHONPATH=str(ROOT), TORCHINDUCTOR_CACHE_DIR=str(inductor_dir),
               FRAMEJIT_CACHE_DIR=str(framejit_dir), OMP_NUM_THREADS="1", FRAMEJIT_CACHE_AOTI=mode, MODELS=models)
    proc = subprocess.run([sys.executable, "-c", _PROGRAM], env=env, capture_output=True, text=True, timeout=2400)
    line = next((line for line in proc.stdout.splitlines() if line.startswith("RESULT ")), None)
    assert line is not None, proc.stderr[-3000:]
    return json.loads(line[len("RESULT "):])


def _correct(r):
    return r.get("mlp", True) and r.get("noisy", True) and r.get("normed", True) and r["write_saved"][0] == r["write_saved"][1] and \
        r["backward_twice"][0] == r["backward_twice"][1]


def test_warm_training_step_loads_the_pair_without_inductor(tmp_path):
    jit = _run(tmp_path / "jit", tmp_path / "ind_jit", "0")           # framejit's JIT inductor path
    assert _correct(jit), jit
    cold = _run(tmp_path / "fj", tmp_path / "ind", "1")               # builds the pairs at conversion
    assert _correct(cold), cold
    pairs = [e for e in cold["info"] if e[0] == "inductor-aoti-train"]
    assert len([why for _, why, _ in pairs if why is None]) == 2, cold     # the MLP's and the dropout's
    assert any(why and "writes an input" in why for _, why, _ in pairs), cold  # batch norm's is refused
    # a fresh process, empty inductor directory, default (background) mode: loads the stored pairs
    warm = _run(tmp_path / "fj", tmp_path / "ind_empty", "background", models="mlp,noisy")
    assert _correct(warm), warm
    assert not warm["inductor_imported"], warm
    for case in ("retain", "double_backward"):          # as framejit's JIT inductor path (AOT autograd's)
        assert warm[case] == jit[case] and cold[case] == jit[case], (case, warm, cold, jit)
