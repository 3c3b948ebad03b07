"""torch.compiler.set_stance as torch.compile honours it, on every call (framejit/runtime/stances.py).

Each scenario runs one sequence of calls and stance switches twice: with torch.compile and with
framejit.compile, both given a backend that notes when one of its graphs runs. The traces (per call: a
graph ran, it ran as plain Python, or it raised) must be the same; torch.compile's trace is the
reference, so these tests say what torch does, not what framejit assumed it does."""
import warnings

import pytest
import torch
import torch._dynamo

import framejit

SOURCE = """
def step(x):
    return torch.relu(x) * 2 + 1
"""


def fresh_function():
    """A new code object each time: both compilers cache per code object."""
    namespace = {"torch": torch}
    exec(compile(SOURCE, "<stance scenario>", "exec"), namespace)
    return namespace["step"]


class Tracer:
    """A backend whose graphs note each run; `call` gives what one call did."""

    def __init__(self):
        self.runs = 0

    def backend(self, gm, example_inputs):
        def run(*args):
            self.runs += 1
            return gm.forward(*args)
        return run

    def call(self, fn, x):
        before = self.runs
        try:
            out = fn(x)
        except RuntimeError as e:
            return "raised" if "fail_on_recompile" in str(e) else f"error {e}"
        assert torch.equal(out, torch.relu(x) * 2 + 1)
        return "graph" if self.runs > before else "eager"


def force_eager_stops_cached_graphs(compile_fn, tracer):
    f = compile_fn(fresh_function(), backend=tracer.backend)
    trace = [tracer.call(f, torch.ones(3))]
    with torch.compiler.set_stance("force_eager"):            # as a context manager
        trace.append(tracer.call(f, torch.ones(3)))
        trace.append(tracer.call(f, torch.ones(2, 2)))      # a miss: nothing converts either
    trace.append(tracer.call(f, torch.ones(3)))

    @torch.compiler.set_stance("force_eager")                 # as a decorator
    def outer(x):
        return tracer.call(f, x)
    trace.append(outer(torch.ones(3)))
    trace.append(tracer.call(f, torch.ones(3)))
    torch.compiler.set_stance("force_eager")                  # as a plain call
    try:
        trace.append(tracer.call(f, torch.ones(3)))
    finally:
        torch.compiler.set_stance("default")
    trace.append(tracer.call(f, torch.ones(3)))
    return trace


def eager_on_recompile(compile_fn, tracer):
    f = compile_fn(fresh_function(), backend=tracer.backend)
    trace = []
    with torch.compiler.set_stance("eager_on_recompile"):
        trace.append(tracer.call(f, torch.ones(3)))          # never compiled: runs eagerly, compiles nothing
    trace.append(tracer.call(f, torch.ones(3)))
    with torch.compiler.set_stance("eager_on_recompile"):
        trace.append(tracer.call(f, torch.ones(3)))          # a hit: the cached graph
        trace.append(tracer.call(f, torch.ones(2, 2)))       # a miss: eagerly
    trace.append(tracer.call(f, torch.ones(2, 2)))
    return trace


def fail_on_recompile(compile_fn, tracer):
    f = compile_fn(fresh_function(), backend=tracer.backend)
    trace = []
    with torch.compiler.set_stance("fail_on_recompile"):
        trace.append(tracer.call(f, torch.ones(3)))          # the first compile fails too
    trace.append(tracer.call(f, torch.ones(3)))
    with torch.compiler.set_stance("fail_on_recompile"):
        trace.append(tracer.call(f, torch.ones(3)))
        trace.append(tracer.call(f, torch.ones(2, 2)))
    trace.append(tracer.call(f, torch.ones(2, 2)))
    return trace


def eager_then_compile(compile_fn, tracer):
    f = compile_fn(fresh_function(), backend=tracer.backend)
    with torch.compiler.set_stance("eager_then_compile"):
        return [tracer.call(f, torch.ones(3)) for _ in range(3)]


SCENARIOS = [force_eager_stops_cached_graphs, eager_on_recompile, fail_on_recompile, eager_then_compile]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.__name__)
def test_stance_traces_match_torch_compile(scenario):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch._dynamo.reset()
        expected = scenario(torch.compile, Tracer())
        torch._dynamo.reset()
        got = scenario(framejit.compile, Tracer())
    assert got == expected, (scenario.__name__, got, expected)


def test_force_eager_stops_a_compiled_modules_cached_graph():
    tracer = Tracer()
    model = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.ReLU())
    compiled = framejit.compile(model, backend=tracer.backend)
    x = torch.randn(2, 3)
    compiled(x)
    before = tracer.runs
    with torch.compiler.set_stance("force_eager"):
        out = compiled(x)
    assert tracer.runs == before and torch.equal(out, model(x))
    compiled(x)
    assert tracer.runs == before + 1


def test_force_backend_compiles_with_that_backend_meanwhile():
    usual, forced = Tracer(), framejit.CompileCounter()
    f = framejit.compile(fresh_function(), backend=usual.backend)
    assert usual.call(f, torch.ones(3)) == "graph"
    with torch.compiler.set_stance("default", force_backend=forced):
        assert usual.call(f, torch.ones(3)) == "eager" and forced.frame_count == 1
        usual.call(f, torch.ones(3))
        assert forced.frame_count == 1                       # the forced copy's cache hits
    assert usual.call(f, torch.ones(3)) == "graph"


def test_a_function_compiled_before_torch_dynamo_is_imported_sees_the_stance(tmp_path):
    """framejit does not import torch._dynamo; the stance is read from it once the program imports it
    (dynamo_reads' import observer), by dispatchers built before that too."""
    import subprocess
    import sys
    script = tmp_path / "late_dynamo.py"
    script.write_text(
        "import sys, torch, framejit\n"
        "runs = []\n"
        "def backend(gm, example_inputs):\n"
        "    return lambda *a: runs.append(1) or gm.forward(*a)\n"
        "f = framejit.compile(lambda x: x + 1, backend=backend)\n"
        "assert 'torch._dynamo.eval_frame' not in sys.modules\n"   # the dispatcher is built without it
        "f(torch.ones(2)); f(torch.ones(2))\n"
        "import torch._dynamo\n"
        "with torch.compiler.set_stance('force_eager'):\n"
        "    f(torch.ones(2))\n"
        "f(torch.ones(2))\n"
        "print(len(runs))\n")
    root = __import__("pathlib").Path(__file__).resolve().parent.parent
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=600,
                          env={**__import__("os").environ, "PYTHONPATH": str(root)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[-1] == "3"
