"""Compiling behind the first call (backends/compile_behind.py, tiered.answering_while_compiled): with inductor,
a static CPU inference graph's first call answers with its fx code (eager's ops) while the compile runs on the
worker thread; the second call waits for it; every later call runs the compiled code.

Most tests replace inductor's compile (backends/inductor.py's `compile_with_caches`) by a recorder that
returns the graph's own code, so they show where and when the compile ran without minutes of C++; one test
compiles for real.
"""
import threading
import warnings

import pytest
import torch

import framejit
from framejit.backends import aoti_background, compile_behind, inductor
from framejit.config import Config
from tests.differential import check_calls, randn

W = randn(8, 8, seed=3)


def scaled_relu(x, buf):
    buf.add_(1)                        # an input written in place
    return torch.relu(x @ W) + buf, x.t() * 2


def calls(n):
    return [(randn(4, 8, seed=i), randn(4, 8, seed=10 + i)) for i in range(n)]


class Recorder:
    """Stands in for inductor's compile: the graph's own code, and where (which thread) and when it ran."""

    def __init__(self, fail=False):
        self.threads, self.fail, self.calls_before = [], fail, []
        self.release = threading.Event()
        self.release.set()
        self.then_traces = False       # after `release`, trace with fx (TRACE_LOCK), as inductor does

    def __call__(self, compile_fx, gm, inputs, options=None):
        self.release.wait(30)
        self.threads.append(threading.current_thread().name)
        if self.fail:
            raise RuntimeError("inductor exploded")
        if self.then_traces:
            torch.fx.symbolic_trace(torch.nn.ReLU())
        forward = gm.forward

        def compiled(*args):
            return forward(*args)
        compiled.recorded = True
        return compiled


@pytest.fixture
def recorder(monkeypatch):
    import time
    monkeypatch.setenv("FRAMEJIT_COMPILE_BEHIND", "1")          # (the default; a test may have turned it off)
    monkeypatch.delenv("FRAMEJIT_TIERED", raising=False)
    while compile_behind.busy():            # compiles queued by earlier tests run with the real compiler
        time.sleep(0.01)
    rec = Recorder()
    monkeypatch.setattr(inductor, "compile_with_caches", rec)
    return rec


def behind_of(compiled_fn):
    """The entry's graph callable's state (tiered.Behind)."""
    compiled_fn = getattr(compiled_fn, "forward", compiled_fn)      # a compiled module's compiled forward
    graph = compiled_fn._framejit_state.results[0].ns.env["__fj_graph"]
    while not hasattr(graph, "framejit_behind"):
        graph = graph.framejit_wraps
    return graph.framejit_behind


def answers_compiled(compiled_fn):
    """Does the graph answer with what the compiler returned (the recorder's callable, or inductor's)?"""
    behind = behind_of(compiled_fn)
    return behind.answer is not None and behind.answer is not behind.run_fx and behind.job is None


def test_compile_behind_is_a_bool_on_by_default(monkeypatch):
    monkeypatch.delenv("FRAMEJIT_COMPILE_BEHIND", raising=False)
    assert Config().compile_behind is True and Config.from_env().compile_behind is True
    monkeypatch.setenv("FRAMEJIT_COMPILE_BEHIND", "1")
    assert Config.from_env().compile_behind is True
    with pytest.raises(TypeError, match="Config.compile_behind must be True or False"):
        framejit.compile(scaled_relu, backend="inductor", compile_behind="no")
    monkeypatch.setenv("FRAMEJIT_COMPILE_BEHIND", "0")
    assert Config.from_env().compile_behind is False
    monkeypatch.setenv("FRAMEJIT_COMPILE_BEHIND", "later")
    with pytest.raises(ValueError, match="FRAMEJIT_COMPILE_BEHIND"):
        Config.from_env()


def test_first_call_answers_before_the_compile_second_waits_for_it(recorder):
    recorder.release.clear()               # the compile cannot end until the first call has answered
    compiled_fn = framejit.compile(scaled_relu, backend="inductor")
    (x, buf), (x2, buf2) = calls(1)[0], calls(1)[0]
    with torch.no_grad():
        got, expected = compiled_fn(x, buf), scaled_relu(x2, buf2)
        assert recorder.threads == []                   # answered with the compile still held
        assert all(torch.equal(a, b) for a, b in zip(got, expected)) and torch.equal(buf, buf2)
        recorder.release.set()
        compiled_fn(*calls(2)[1])                       # waits for the worker's compile
    assert recorder.threads == ["framejit-compile-behind"]


def test_every_call_behaves_as_eagerly_and_later_calls_run_the_compiled_code(recorder):
    with torch.no_grad():
        compiled_fn, _ = check_calls(scaled_relu, calls(4), backend="inductor")
    assert recorder.threads == ["framejit-compile-behind"]
    answer = behind_of(compiled_fn).answer
    while not hasattr(answer, "recorded"):                           # inside output_strides' restriding
        answer = answer.framejit_wraps
    assert answer.recorded


@pytest.mark.parametrize("why", ["option", "environment", "fullgraph", "check_accuracy", "inference_mode"])
def test_compiled_in_the_calling_thread_where_behind_does_not_apply(recorder, why, monkeypatch):
    options = {"compile_behind": False} if why == "option" else {"fullgraph": True} if why == "fullgraph" else \
        {"check_accuracy": True} if why == "check_accuracy" else {}
    if why == "environment":
        monkeypatch.setenv("FRAMEJIT_COMPILE_BEHIND", "0")
    compiled_fn = framejit.compile(scaled_relu, backend="inductor", **options)
    x, buf = calls(1)[0]
    mode = torch.inference_mode() if why == "inference_mode" else torch.no_grad()
    with mode, warnings.catch_warnings():
        warnings.simplefilter("ignore")                 # the accuracy mode's own notes
        compiled_fn(x, buf)
    assert recorder.threads and "framejit-compile-behind" not in recorder.threads


class _TrainStep(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(3)
        self.up, self.down, self.drop = torch.nn.Linear(8, 16), torch.nn.Linear(16, 4), torch.nn.Dropout(0.3)

    def forward(self, x):
        return self.down(self.drop(torch.tanh(self.up(x)))).pow(2).mean()


def test_a_training_graph_answers_its_first_step_with_eagers_autograd(recorder):
    """A training graph (grad on, parameters): its first call's fx code records eager's autograd graph (the
    first backward is eager's); it compiles on the worker; every step's loss, gradients and dropout draws
    equal eager's on a copy of the model."""
    import copy
    model = _TrainStep()
    reference, compiled_fn = copy.deepcopy(model), framejit.compile(model, backend="inductor")
    for step in range(3):
        x = randn(4, 8, seed=20 + step)
        torch.manual_seed(step)
        loss = compiled_fn(x)
        loss.backward()
        torch.manual_seed(step)
        expected = reference(x)
        expected.backward()
        assert torch.equal(loss, expected)
        for p, q in zip(model.parameters(), reference.parameters()):
            assert torch.equal(p.grad, q.grad)
        if step == 0:
            assert behind_of(compiled_fn).answer is None         # the first step ran the fx code
    assert recorder.threads == ["framejit-compile-behind"] and answers_compiled(compiled_fn)


def test_a_failed_compile_warns_and_the_fx_code_stays(monkeypatch):
    monkeypatch.setenv("FRAMEJIT_COMPILE_BEHIND", "1")
    rec = Recorder(fail=True)
    monkeypatch.setattr(inductor, "compile_with_caches", rec)
    compiled_fn = framejit.compile(scaled_relu, backend="inductor")
    with torch.no_grad():
        compiled_fn(*calls(1)[0])
        with pytest.warns(RuntimeWarning, match="inductor exploded.*fx code"):
            got = compiled_fn(*calls(2)[1])
        for i, (x, buf) in enumerate(calls(3)):
            x2, buf2 = x.clone(), buf.clone()
            got, expected = compiled_fn(x, buf), scaled_relu(x2, buf2)
            assert all(torch.equal(a, b) for a, b in zip(got, expected)) and torch.equal(buf, buf2)
    assert rec.threads == ["framejit-compile-behind"]


def test_inputs_resized_while_compiling_compile_again_for_the_next_call(recorder):
    compiled_fn = framejit.compile(scaled_relu, backend="inductor")
    x, buf = calls(1)[0]
    with torch.no_grad():
        with compile_behind.COMPILE_LOCK:              # the worker cannot start before the resize
            compiled_fn(x, buf)
            x.resize_(2, 8)                             # the caller's own tensor, changed after the call
        compiled_fn(*calls(2)[1])
    assert recorder.threads == ["framejit-compile-behind", "MainThread"]


def test_library_builds_wait_while_the_worker_compiles(monkeypatch):
    started = []
    monkeypatch.setattr(aoti_background, "_PENDING", [("folder", {}, "key")])
    monkeypatch.setattr(aoti_background.subprocess, "Popen", lambda *a, **k: started.append(a))
    monkeypatch.setattr(compile_behind, "busy", lambda: True)
    aoti_background.start_pending()
    assert started == [] and aoti_background._PENDING == [("folder", {}, "key")]
    aoti_background.start_pending(at_exit=True)         # at exit nothing waits for the worker
    assert len(started) == 1


def test_inductor_compiles_on_the_worker_thread_and_matches_eager(monkeypatch):
    monkeypatch.setenv("FRAMEJIT_COMPILE_BEHIND", "1")
    from torch._inductor import compile_fx as inductor_compile_fx
    threads = []
    real = inductor_compile_fx.compile_fx

    def spy(*args, **kwargs):
        threads.append(threading.current_thread().name)
        return real(*args, **kwargs)
    monkeypatch.setattr(inductor_compile_fx, "compile_fx", spy)
    with torch.no_grad():
        compiled_fn, _ = check_calls(scaled_relu, calls(3), backend="inductor", atol=1e-5)
    assert threads and set(threads) == {"framejit-compile-behind"}     # compile_fx calls itself once
    assert answers_compiled(compiled_fn)


_DRAWS_WHILE_COMPILING = """
import sys, time, torch
import torch._functorch.aot_autograd            # imported before framejit installs anything, as in a full suite
import threading, torch.fx
import framejit
plain_traces, real_trace = [], torch.fx.Tracer.trace


def trace(self, root, *args, **kwargs):          # where fx's plain Tracer (which fails foreign modules) runs
    if type(self) is torch.fx.Tracer:
        plain_traces.append(threading.current_thread().name)
    return real_trace(self, root, *args, **kwargs)
torch.fx.Tracer.trace = trace
from framejit.backends import compile_behind
width = 16 + time.time_ns() % 97                # a graph no cache of inductor's or framejit's holds yet
model = torch.nn.Sequential(torch.nn.Linear(8, width), torch.nn.ReLU(), torch.nn.Linear(width, 4)).eval()
compiled_fn, x = framejit.compile(model, backend="inductor", compile_behind=True), torch.randn(3, 8)
torch.manual_seed(5)
expected = torch.rand(100000)
torch.manual_seed(5)
with torch.no_grad():
    compiled_fn(x)
drawn = []
while compile_behind.busy() or not drawn:
    drawn.append(torch.rand(1))
    time.sleep(0.005)
print("MainThread" in plain_traces, "framejit-compile-behind" not in plain_traces)
print(len(drawn), torch.equal(torch.cat(drawn), expected[:len(drawn)]))
"""


def test_the_compile_leaves_the_programs_generator_and_modules_alone(tmp_path):
    """inductor puts the global generator's state back after compiling (preserve_rng_state, entered by its
    compile_fx and by AOT autograd, which bound the name at its import); on the worker that would rewind the
    draws the program made meanwhile (dynamo_reads.generator_kept_in). A fresh process, so that AOT autograd
    was imported before framejit first compiled behind, as in a full suite run (session 27's flaky failure).
    And the one trace inductor makes with fx's plain Tracer (which, while it runs, makes any module called
    in another thread raise) is made in the calling thread (compile_behind._trace_once_here)."""
    import os
    import subprocess
    import sys
    env = dict(os.environ, FRAMEJIT_CACHE_DIR=str(tmp_path / "cache"), TORCHINDUCTOR_CACHE_DIR=str(tmp_path / "ind"))
    proc = subprocess.run([sys.executable, "-c", _DRAWS_WHILE_COMPILING], env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    traced_here, not_on_worker, count, equal = proc.stdout.split()[-4:]
    assert int(count) > 1 and equal == "True", proc.stdout
    assert traced_here == not_on_worker == "True", proc.stdout


def test_a_forked_child_compiles_in_its_own_thread(recorder):
    """A job queued in the parent is never run in a forked child (no worker thread crosses a fork): the
    child's second call compiles in its calling thread instead of waiting forever."""
    import os
    compiled_fn = framejit.compile(scaled_relu, backend="inductor")
    with torch.no_grad(), compile_behind.COMPILE_LOCK:          # the parent's worker cannot start the job
        compiled_fn(*calls(1)[0])
        pid = os.fork()
        if pid == 0:                                             # the child: exits with 0 when all went well
            code = 1
            try:
                x, buf = calls(2)[1]
                got, expected = compiled_fn(x.clone(), buf.clone()), scaled_relu(x, buf)
                ok = all(torch.equal(a, b) for a, b in zip(got, expected))
                code = 0 if ok and recorder.threads == ["MainThread"] else 2
            finally:
                os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_a_first_call_that_raises_queues_nothing_and_the_next_call_is_first(recorder):
    def picky(x):
        return torch.linalg.cholesky(x @ x.t()) * 2      # raises on a matrix that is not positive-definite

    compiled_fn = framejit.compile(picky, backend="inductor")
    singular = torch.zeros(3, 3)
    with torch.no_grad():
        with pytest.raises(RuntimeError) as compiled_error:
            compiled_fn(singular)
        with pytest.raises(RuntimeError) as eager_error:
            picky(singular)
        assert type(compiled_error.value) is type(eager_error.value)
        assert recorder.threads == []                        # nothing was queued
        good = torch.eye(3) + 0.1
        assert torch.allclose(compiled_fn(good), picky(good))     # a first call again: fx code, then queued
        assert torch.allclose(compiled_fn(good), picky(good))
    assert recorder.threads == ["framejit-compile-behind"]


class _SlowToTrace(torch.nn.Module):
    """Traced by fx on the worker (as AOT autograd and inductor's pattern setup trace): while its forward runs,
    fx's Tracer has replaced torch.nn.Module.__call__ for the whole process."""

    def __init__(self, tracing, until):
        super().__init__()
        self.tracing, self.until = tracing, until

    def forward(self, x):
        self.tracing.set()
        self.until.wait(2)
        return x + 1


def test_a_conversion_waits_while_the_worker_traces(recorder, monkeypatch):
    """A frame converted while a compile behind traces with fx would read fx's Module.__call__ (and break the
    graph on it, as session 27's full run saw on GPT-2's embedding): conversions wait for the compile."""
    tracing, until = threading.Event(), threading.Event()
    real = recorder.__call__

    def tracing_compile(compile_fx, gm, inputs, options=None):
        torch.fx.symbolic_trace(_SlowToTrace(tracing, until))
        return real(compile_fx, gm, inputs, options)
    monkeypatch.setattr(inductor, "compile_with_caches", tracing_compile)
    layer = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU())

    def calls_a_module(x):
        return layer(x) * 2
    graphs = []

    def counting(gm, example_inputs):
        graphs.append(gm)
        return gm.forward
    first, second = framejit.compile(scaled_relu, backend="inductor"), framejit.compile(calls_a_module, backend=counting)
    x = randn(4, 8, seed=7)
    with torch.no_grad():
        first(*calls(1)[0])
        assert tracing.wait(30)                          # the worker is inside fx's trace
        got = second(x)
        until.set()
        torch.testing.assert_close(got, calls_a_module(x))
    assert len(graphs) == 1 and "linear" in graphs[0].code         # one graph, the module's work inside it


def test_the_backward_compiled_at_the_first_backward_holds_the_lock_and_inductors_settings(monkeypatch):
    """AOT autograd compiles a training graph's backward at its first backward, after framejit's compile call
    returned: that compile too runs under COMPILE_LOCK (a compile behind may run on the worker meanwhile) and
    with framejit's inductor settings (fallback_random: eager's random numbers)."""
    from torch._inductor import compile_fx as inductor_compile, config
    seen, real = [], inductor_compile._compile_fx_inner

    def inner(*args, **kwargs):                 # inductor's compile of one graph (the forward, the backward)
        seen.append((compile_behind.COMPILE_LOCK._is_owned(), config.fallback_random))
        return real(*args, **kwargs)
    monkeypatch.setattr(inductor_compile, "_compile_fx_inner", inner)
    import time
    w = torch.nn.Parameter(randn(8, 5, seed=4))
    scale = 1 + time.time_ns() % 10 ** 9 / 1e10          # a constant no graph in inductor's caches holds

    def loss(x):
        return (torch.tanh(x @ w) * scale).sum()
    x = randn(4, 8, seed=5)
    compiled_fn = framejit.compile(loss, backend="inductor", compile_behind=False)    # the forward compiles now
    got = compiled_fn(x)
    assert len(seen) == 1
    got.backward()
    grad, w.grad = w.grad, None
    loss(x).backward()
    torch.testing.assert_close(grad, w.grad)
    assert seen == [(True, True), (True, True)] and config.fallback_random is False


def test_the_compile_behind_is_in_the_conversions_metrics(recorder):
    """framejit.metrics(): the conversion's own time does not hold the compile made after its first call;
    `compiled_behind_s` does, added when the compile ends."""
    import time
    recorder.release.clear()
    framejit.reset()
    compiled_fn = framejit.compile(scaled_relu, backend="inductor")
    with torch.no_grad():
        compiled_fn(*calls(1)[0])
        entry = [m for m in framejit.metrics() if m.co_name == "scaled_relu"][-1]
        assert entry.compiled_behind_s is None
        time.sleep(0.3)                              # the compile is held this long
        recorder.release.set()
        compiled_fn(*calls(2)[1])
    assert entry.compiled_behind_s >= 0.25          # (the worker starts the held compile a moment after the call)


def test_a_conversion_does_not_wait_for_a_whole_compile(recorder):
    """Only fx traces keep a conversion waiting: a frame converted while a compile behind runs (not tracing)
    converts at once (a training step's resume function after loss.backward(), while its forward compiles)."""
    recorder.release.clear()                        # the compile runs (on the worker) until released
    graphs = []

    def counting(gm, example_inputs):
        graphs.append(gm)
        return gm.forward
    def sine(x):
        return torch.sin(x) * 2
    first, second = framejit.compile(scaled_relu, backend="inductor"), framejit.compile(sine, backend=counting)
    try:
        with torch.no_grad():
            first(*calls(1)[0])
            done = threading.Event()
            threading.Thread(target=lambda: (second(randn(3)), done.set()), daemon=True).start()
            assert done.wait(20) and len(graphs) == 1 and recorder.threads == []     # converted, compile held
    finally:
        recorder.release.set()


def test_a_conversion_compiling_in_its_thread_while_the_worker_compiles_and_traces(recorder):
    """The two locks in one order: a conversion (holding TRACE_LOCK) that compiles a graph in its own thread
    waits for the worker's compile, which traces (TRACE_LOCK) before it ends. Taken the other way round, each
    would wait for the other forever."""
    recorder.release.clear()
    recorder.then_traces = True

    def doubled(x):
        return torch.cos(x) * 2
    first, second = framejit.compile(scaled_relu, backend="inductor"), framejit.compile(doubled, backend="aot_eager")
    done, x = threading.Event(), randn(3, 4, seed=8)
    try:
        with torch.no_grad():
            first(*calls(1)[0])                     # the worker holds COMPILE_LOCK until `release`
        threading.Thread(target=lambda: (second(x), done.set()), daemon=True).start()
        threading.Timer(0.5, recorder.release.set).start()
        assert done.wait(60)
    finally:
        recorder.release.set()
    assert recorder.threads == ["framejit-compile-behind"]


def test_a_second_call_inside_a_conversion_waits_for_a_compile_that_traces(recorder):
    """A second call made while its thread holds TRACE_LOCK (as a conversion does: a lazy module's first
    call runs then) waits for the worker's compile, which traces before it ends: the wait lets the lock go."""
    recorder.release.clear()
    recorder.then_traces = True
    compiled_fn, done = framejit.compile(scaled_relu, backend="inductor"), threading.Event()
    with torch.no_grad():
        compiled_fn(*calls(1)[0])

        def second_call_in_a_conversion():
            with compile_behind.TRACE_LOCK, torch.no_grad():       # (grad mode is the thread's own)
                compiled_fn(*calls(2)[1])
            done.set()
        threading.Thread(target=second_call_in_a_conversion, daemon=True).start()
        threading.Timer(0.3, recorder.release.set).start()
        try:
            assert done.wait(60)
        finally:
            recorder.release.set()
