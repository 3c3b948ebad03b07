"""Tiered first calls (backends/tiered.py): with tiered=True and a library to be built in the background, a
graph's fx code answers its first calls (no inductor compile), then the library once it is stored, or the
JIT path when none comes; everything else compiles at its first call as before.

The background build is driven in the test's own process (aoti_background.children_held: no child starts;
build_pending_here builds the job as the child would). The one test that builds a library (an AOTInductor
compile, minutes on a loaded machine) runs under `make test-aoti` (FRAMEJIT_AOTI_TESTS=1); the others compile
no library and run in `make test`.
"""
import os

import pytest
import torch

import framejit
from framejit.backends import aoti_background, tiered
from framejit.config import Config
from framejit.persist import store
from framejit.runtime import warm_start
from tests.differential import check_calls, randn


@pytest.fixture
def libraries(tmp_path, monkeypatch):
    """Libraries on (the default background mode) in a private store, no child started, looks at every call."""
    monkeypatch.setenv("FRAMEJIT_CACHE_AOTI", "background")
    monkeypatch.setenv("FRAMEJIT_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("FRAMEJIT_TIERED", raising=False)
    monkeypatch.setattr(store, "_STORES", {})
    monkeypatch.setattr(tiered, "LOOK_EVERY", 0.0)
    with aoti_background.children_held():
        yield tmp_path


W = randn(8, 8, seed=3)


def scaled_relu(x, buf):
    buf.add_(1)                        # an input written in place: the fx code writes it as eagerly
    return torch.relu(x @ W) + buf, x.t() * 2


def calls(n):
    return [(randn(4, 8, seed=i), randn(4, 8, seed=10 + i)) for i in range(n)]


def graph_callables(compiled_fn):
    """The callables the entry's graph call goes through: its __fj_graph and what each wraps."""
    state = compiled_fn._framejit_state
    graph = state.results[0].ns.env["__fj_graph"]
    seen = []
    while graph is not None:
        seen.append(graph)
        graph = getattr(graph, "framejit_wraps", None)
    return seen


def tiers_of(compiled_fn):
    return next((g.framejit_tiers for g in graph_callables(compiled_fn) if hasattr(g, "framejit_tiers")), None)


def test_tiered_must_be_a_bool(monkeypatch):
    with pytest.raises(TypeError, match="Config.tiered must be True or False"):
        framejit.compile(scaled_relu, backend="inductor", tiered="yes")
    monkeypatch.setenv("FRAMEJIT_TIERED", "1")
    assert Config.from_env().tiered is True
    monkeypatch.setenv("FRAMEJIT_TIERED", "maybe")
    with pytest.raises(ValueError, match="FRAMEJIT_TIERED"):
        Config.from_env()
    monkeypatch.delenv("FRAMEJIT_TIERED")
    assert Config.from_env().tiered is False and Config().tiered is False


@pytest.mark.parametrize("asked", ["argument", "environment"])
def test_first_calls_run_the_fx_code_as_eagerly(libraries, asked, monkeypatch):
    options = {"tiered": True} if asked == "argument" else {}
    if asked == "environment":
        monkeypatch.setenv("FRAMEJIT_TIERED", "1")
    with torch.no_grad():
        compiled_fn, counter = check_calls(scaled_relu, calls(3), backend="inductor", **options)
    tiers = tiers_of(compiled_fn)
    assert tiers is not None and tiers.now == "fx", graph_callables(compiled_fn)
    assert counter.frame_count == 1
    # the build was scheduled and stays scheduled (children held), and the stored conversion names its library
    assert aoti_background._PENDING and aoti_background._PENDING[0][2] == tiers.coming.key
    x, buf = calls(1)[0]
    record = warm_start.plan_of(scaled_relu, compiled_fn._framejit_state.results[0], (x, buf), {})
    assert record["graph"] == tiers.coming.key


def test_no_library_coming_compiles_on_the_jit_path_once(libraries):
    with torch.no_grad():
        compiled_fn, _ = check_calls(scaled_relu, calls(2), backend="inductor", tiered=True)
        tiers = tiers_of(compiled_fn)
        assert tiers.now == "fx"
        # the build ends without an entry (a child that died): its job and marker go
        with aoti_background._LOCK:
            jobs = list(aoti_background._PENDING)
            aoti_background._PENDING.clear()
        for folder, _, key in jobs:
            aoti_background._drop(folder, key)
        x, buf = calls(1)[0]
        compiled_fn(x.clone(), buf.clone())         # this call looks, and compiles on the JIT path
        assert tiers.now == "jit"
        for x, buf in calls(3):
            eager_buf, compiled_buf = buf.clone(), buf.clone()
            expected, got = scaled_relu(x, eager_buf), compiled_fn(x.clone(), compiled_buf)
            for e, g in zip(expected, got):
                assert torch.allclose(e, g, atol=1e-5) and e.stride() == g.stride()
            assert torch.equal(eager_buf, compiled_buf)


@pytest.mark.parametrize("case", ["not tiered", "libraries off"])
def test_otherwise_the_graph_compiles_at_its_first_call(libraries, case, monkeypatch):
    if case == "libraries off":
        monkeypatch.setenv("FRAMEJIT_CACHE_AOTI", "0")
    with torch.no_grad():
        compiled_fn, _ = check_calls(scaled_relu, calls(2), backend="inductor", tiered=case != "not tiered")
    assert tiers_of(compiled_fn) is None, graph_callables(compiled_fn)
    keyed = any(getattr(g, "framejit_aoti_key", None) for g in graph_callables(compiled_fn))
    assert keyed == (case == "not tiered")          # the JIT callable names the library being built


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = torch.nn.Linear(8, 8), torch.nn.Linear(8, 4)

    def forward(self, x):
        return self.b(torch.relu(self.a(x))), x.t() * 2


@pytest.mark.skipif(not os.environ.get("FRAMEJIT_AOTI_TESTS"), reason="builds an AOTInductor library: make test-aoti")
def test_the_library_answers_once_it_is_stored(libraries):
    torch.manual_seed(0)
    net = Net().eval()
    compiled = framejit.compile(net, backend="inductor", tiered=True)
    with torch.no_grad():
        x = randn(3, 8, seed=1)
        for e, g in zip(net(x), compiled(x.clone())):
            assert torch.equal(e, g)              # the fx code: eager's ops, eager's bits
        tiers = tiers_of(compiled.forward)
        assert tiers.now == "fx"
        assert aoti_background.build_pending_here() == [tiers.coming.key]
        compiled(x.clone())                       # looks: the library is stored
        assert tiers.now == "library" and getattr(tiers.answer, "framejit_aoti_key", None) == tiers.coming.key
        for i in range(3):
            x = randn(3, 8, seed=20 + i)
            for e, g in zip(net(x), compiled(x.clone())):
                assert torch.allclose(e, g, rtol=1e-3, atol=1e-4) and e.stride() == g.stride()
        # the entry calls the library itself now (the tiered callable stepped out of its path)
        env = compiled.forward._framejit_env.env if hasattr(compiled.forward, "_framejit_env") else \
            compiled.forward._framejit_state.results[0].ns.env
        assert env["__fj_graph"] is tiers.answer
