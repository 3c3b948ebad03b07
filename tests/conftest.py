"""Shared pytest set-up for framejit's tests.

Every test starts from an empty framejit cache, so compile counts and cache-hit assertions in one
test never depend on which tests ran before it in the same worker.

FRAMEJIT_TEST_IDENTITY=1 swaps in a stand-in "compiler" that returns the function unchanged when
the real framejit has no `compile` yet. It exists only to exercise the differential harness
itself (tests/differential.py) before framejit's core lands; graph and break counts are not
asserted in that mode. Without the variable, the real framejit is always used.
"""

import os
import tempfile
import sys
import types

import pytest

# Records and logs written by tests go to a private temporary directory, not ~/.cache/framejit.
os.environ.setdefault("FRAMEJIT_DEBUG_DIR", tempfile.mkdtemp(prefix="framejit-tests-"))
# and the persistent compile cache to another (tests/persist/ point it at their own directories)
os.environ.setdefault("FRAMEJIT_CACHE_DIR", tempfile.mkdtemp(prefix="framejit-cache-tests-"))
# no background library builds (backends/aoti_background.py) for every inference graph of the suite: the tests
# of libraries ask for them (FRAMEJIT_CACHE_AOTI=1 in their own processes)
os.environ.setdefault("FRAMEJIT_CACHE_AOTI", "0")


def pytest_configure(config):
    # Tests use tiny tensors: intra-op threads only compete with the other pytest worker (-n 2).
    import torch
    torch.set_num_threads(1)


def _identity_framejit():
    """A module with framejit's public surface whose compile() changes nothing."""
    stand_in = types.ModuleType("framejit")

    class Unsupported(Exception):
        pass

    class CompileCounter:
        def __init__(self):
            self.frame_count = 0
            self.op_count = 0
            self.graphs = []

        def __call__(self, gm, example_inputs):
            self.frame_count += 1
            self.graphs.append(gm)
            return gm.forward

    class Explanation:
        graph_count = 0
        graph_break_count = 0
        break_reasons = ()
        graphs = ()
        ops_per_graph = ()
        guards = ()
        compile_time = 0.0

    def compile(fn=None, *, backend="eager", fullgraph=False):
        if fn is None:
            return lambda f: f
        return fn

    def explain(fn):
        def run(*args, **kwargs):
            fn(*args, **kwargs)
            return Explanation()
        return run

    stand_in.IDENTITY_STAND_IN = True
    stand_in.compile = compile
    stand_in.explain = explain
    stand_in.reset = lambda: None
    stand_in.disable = lambda fn: fn
    stand_in.register_backend = lambda name, fn: None
    stand_in.Unsupported = Unsupported
    stand_in.backends = types.SimpleNamespace(CompileCounter=CompileCounter)
    return stand_in


def _install_identity_if_requested():
    if os.environ.get("FRAMEJIT_TEST_IDENTITY") != "1":
        return
    try:
        import framejit
        if hasattr(framejit, "compile"):
            return
    except ImportError:
        pass
    sys.modules["framejit"] = _identity_framejit()


_install_identity_if_requested()


@pytest.fixture(autouse=True)
def _fresh_framejit_cache():
    framejit = sys.modules.get("framejit")  # only if some test already imported it
    reset = getattr(framejit, "reset", None)
    if reset is not None:
        reset()
    yield
