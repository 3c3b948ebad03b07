"""One worker thread that compiles graphs behind the calls that need them, and the lock every compile holds.

Why this exists (issue 24, the cold first call): with inductor, a cold first call spends nearly all its time
in inductor (lowering, C++ compilation: bench/first_call_results.md), none of it needed for the first
result, which the graph's fx code (eager's own ops) gives exactly. So with Config.compile_behind (the default) a
static CPU graph (inference, or training: the first backward is eager's) answers its first call with its fx code
and compiles on this worker meanwhile; its second
call waits for the compile if it has not ended (backends/tiered.py, `answering_while_compiled`). The user's
own work between the two calls overlaps the compile; a program that calls again at once waits as long as it
did before; every call from the second on runs compiled code.

    submit(compile, grad_enabled)   a Job; `compile()` runs on the worker with grad mode as the caller had it
    Job.wait()                      (True, the result) or (False, the exception); never raises
    COMPILE_LOCK                    held around every compile framejit runs (inductor's compile_fx, AOT
                                    autograd, AOTInductor builds), on the worker and in the calling thread:
                                    those patch module-level configuration (inductor's, functorch's) for
                                    their duration, and two interleaved patches would leave one compile
                                    under the other's settings; taken through `compiling()`
    TRACE_LOCK                      held by every fx trace (once a compile went behind) and every
                                    conversion; always taken after COMPILE_LOCK, never before (`compiling`)
    busy()                          is a compile queued or running (aoti_background holds its children
                                    until not: a child at its own session's priority takes half the CPU)
    on_idle(callback)               called on the worker when its queue runs dry (aoti_background starts
                                    the children it held)

The worker starts at the first submit and is a daemon: a process that exits while a compile runs does not
wait for it (the graph's entry is gone with the process). A compile holds the first call's inputs until it
ends (their metadata is all it reads); a caller that changed an input's metadata meanwhile (`resize_`) gets
the compile refused (`inputs_unchanged`), and the graph compiles again at its next call.

What a compile on the worker changes for the whole process, and what keeps the program's threads from seeing it:
- the global random generator: inductor and AOT autograd put its state back after compiling
  (`preserve_rng_state`), which on the worker would rewind the program's own draws; on the worker that
  put-back is skipped (dynamo_reads.generator_kept_in, in every torch module that bound the name: the one
  place framejit touches torch._dynamo's utilities), and graphs whose inductor options autotune (which draws)
  compile in the calling thread (`autotunes`);
- torch.nn.Module.__call__ and __getattr__, which fx's Tracer replaces while it traces (AOT autograd's
  tracer and inductor's pattern setup): a conversion reads them, so every fx trace and every conversion
  holds TRACE_LOCK (`_traces_under_lock`, runtime/compiled.py) and a conversion never runs during a trace
  (it may during the rest of a compile); the program's own module calls go through the replacement, which
  for those tracers runs the module's forward as it is. The one trace with fx's plain Tracer (which makes a
  module called elsewhere raise) is made in the first submitting thread (`_trace_once_here`);
- inductor's and functorch's configuration: patched under COMPILE_LOCK only (the backward AOT autograd
  compiles at the first backward too: inductor.py);
- `warnings.catch_warnings` (inductor enters it while compiling): Python's own is not thread-safe, so a
  warnings filter the program changes while a compile runs can be undone when it ends (left alone).
"""
import collections
import contextlib
import logging
import os
import sys
import threading
import weakref

import torch

from ..dynamo_reads import generator_kept_in

log = logging.getLogger(__name__)

COMPILE_LOCK = threading.RLock()
TRACE_LOCK = threading.RLock()          # held by every fx trace once a compile went behind, and by conversions


@contextlib.contextmanager
def compiling():
    """COMPILE_LOCK, for a compile in any thread. The two locks are taken in one order, COMPILE_LOCK then
    TRACE_LOCK (the worker's compile traces under its COMPILE_LOCK): a conversion holding TRACE_LOCK that
    compiles a graph in its own thread lets TRACE_LOCK go while it waits for COMPILE_LOCK (the worker's trace
    could not end otherwise) and takes it back before going on."""
    with contextlib.nullcontext() if COMPILE_LOCK._is_owned() else _trace_lock_let_go():
        COMPILE_LOCK.acquire()
    try:
        yield
    finally:
        COMPILE_LOCK.release()


@contextlib.contextmanager
def _trace_lock_let_go():
    """This thread's hold on TRACE_LOCK (however deep) let go for the block, taken back after it."""
    if not TRACE_LOCK._is_owned():
        yield
        return
    held = TRACE_LOCK._release_save()
    try:
        yield
    finally:
        TRACE_LOCK._acquire_restore(held)

_QUEUE = collections.deque()
_WAKE = threading.Condition()
_STATE = {"worker": None, "running": 0}
_IDLE_CALLBACKS = []
_UNFINISHED = weakref.WeakSet()         # queued or running jobs (a forked child ends them: `_after_fork`)


class Forked(RuntimeError):
    """The job was queued in the parent of this forked process: no worker here will run it."""


class Job:
    """One compile on the worker: `wait()` blocks until it ended (the GIL is released meanwhile)."""

    def __init__(self, compile, grad_enabled):
        self.compile, self.grad_enabled = compile, grad_enabled
        self.done = threading.Event()
        self.ok, self.value = False, None

    def wait(self):
        with _trace_lock_let_go():          # (a conversion's thread) the compile may trace before it ends
            self.done.wait()
        return self.ok, self.value

    def ended(self):
        return self.done.is_set()

    def run(self):
        compile, self.compile = self.compile, None          # the job holds nothing once it ran
        try:
            generator_kept_in(WORKER_NAME)
            with compiling(), torch.set_grad_enabled(self.grad_enabled):
                self.value, self.ok = compile(), True
        except BaseException as e:          # reported to the waiting call, never raised on the worker
            self.value, self.ok = e, False
        finally:
            self.done.set()


def submit(compile, grad_enabled):
    """Queue `compile()` for the worker; the Job."""
    job = Job(compile, grad_enabled)
    if _STATE["worker"] is None:
        _trace_once_here()
        _traces_under_lock()
    with _WAKE:
        _QUEUE.append(job)
        _UNFINISHED.add(job)
        worker = _STATE["worker"]
        if worker is None or not worker.is_alive():
            worker = threading.Thread(target=_work, name=WORKER_NAME, daemon=True)
            _STATE["worker"] = worker
            worker.start()
        _WAKE.notify()
    return job


WORKER_NAME = "framejit-compile-behind"


def _traces_under_lock():
    """fx's Tracer replaces torch.nn.Module.__call__ and __getattr__ (and sets is_fx_tracing) for the whole
    process while it traces, and the compile on the worker traces (AOT autograd, inductor's patterns). A
    conversion in another thread reads those (it inlines Module.__call__) and broke its graph on the
    replacement (session 27's GPT-2 failure). So from the first compile behind on, every fx trace holds
    TRACE_LOCK, as every conversion does (runtime/compiled.py): a conversion waits for a trace (a fraction of
    a second), not for the whole compile (a training step's first call converts its resume function while
    the forward graph compiles). Installed once, on torch.fx.Tracer.trace (subclasses call it)."""
    tracer = torch.fx.Tracer
    original = tracer.trace
    if getattr(original, "framejit_under_lock", False):
        return

    def trace(self, root, concrete_args=None):
        with TRACE_LOCK:
            return original(self, root, concrete_args)
    trace.framejit_under_lock = True
    trace.__wrapped__ = original
    tracer.trace = trace


def _trace_once_here():
    """Inductor traces one function with fx's plain Tracer the first time it generates code in a process
    (loop_body's stand-in graph module, cached): a plain Tracer replaces torch.nn.Module.__call__ for the whole
    process while it traces, and any module called in another thread meanwhile raises "module is not installed
    as a submodule". Done here, in the calling thread, before the first compile leaves it. (The tracer AOT
    autograd and inductor's patterns use runs a foreign module's forward as it is; conversions wait for
    every trace: `_traces_under_lock`.)"""
    try:
        from torch._inductor.loop_body import InterpreterShim
        InterpreterShim._dummy_gm()
    except Exception as e:               # another torch's inside: nothing to do ahead
        log.debug("framejit compile behind: inductor's stand-in graph module not made ahead: %s", e)


def autotunes(options):
    """Do inductor `options` (or settings the program made on torch._inductor.config) benchmark kernels while
    compiling? Autotuning runs kernels on random inputs inside its own generator save and restore, which
    on the worker would rewind the program's draws: such graphs compile in the calling thread."""
    words = ("autotune", "coordinate_descent")
    if any(any(w in str(k) for w in words) and v for k, v in (options or {}).items()):
        return True
    config = sys.modules.get("torch._inductor.config")
    if config is None:
        return False
    try:
        return bool(config.max_autotune or config.max_autotune_gemm or config.max_autotune_pointwise or
                    config.coordinate_descent_tuning)
    except AttributeError:
        return True


def busy():
    """Is a compile queued or running?"""
    with _WAKE:
        return bool(_QUEUE) or _STATE["running"] > 0


def _work():
    while True:
        with _WAKE:
            while not _QUEUE:
                _WAKE.wait()
            job = _QUEUE.popleft()
            _STATE["running"] += 1
        try:
            job.run()
        finally:
            with _WAKE:
                _UNFINISHED.discard(job)
                _STATE["running"] -= 1
                idle = not _QUEUE
        if idle:
            _after_idle()


def _after_fork():
    """In a forked child (a DataLoader worker): no worker thread came along, and the lock may have been held
    by it at the fork. The lock is made anew, and the jobs the parent had not finished end as `Forked`, so
    a graph waiting for one compiles in its calling thread instead of waiting forever."""
    global _WAKE
    COMPILE_LOCK._at_fork_reinit()
    TRACE_LOCK._at_fork_reinit()
    _WAKE = threading.Condition()
    _QUEUE.clear()
    _STATE.update(worker=None, running=0)
    for job in list(_UNFINISHED):
        job.compile, job.ok, job.value = None, False, Forked("queued before this process was forked")
        job.done.set()
    _UNFINISHED.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


def on_idle(callback):
    """Call `callback()` on the worker each time its queue runs dry (aoti_background.py starts the library
    builds it held while the worker compiled)."""
    if callback not in _IDLE_CALLBACKS:
        _IDLE_CALLBACKS.append(callback)


def _after_idle():
    for callback in list(_IDLE_CALLBACKS):
        try:
            callback()
        except Exception as e:
            log.debug("framejit compile behind: %r after the queue ran dry: %s", callback, e)


def metadata(inputs):
    """What a compile reads of its inputs, to check after it ran."""
    return [(x.shape, x.stride(), x.storage_offset(), x.dtype, x.device) if isinstance(x, torch.Tensor) else None
            for x in inputs]


def inputs_unchanged(inputs, before):
    return metadata(inputs) == before


def plain_state():
    """Does the calling thread hold nothing a compile on another thread would miss? Its grad mode is carried
    (`submit`); inference mode, autocast, dispatch and function modes, functorch transforms are not: a
    graph converted under one of them compiles in the calling thread as before."""
    try:
        return not (torch.is_inference_mode_enabled() or torch.is_autocast_enabled("cpu") or
                    torch.is_autocast_enabled("cuda") or torch._C._len_torch_dispatch_stack() or
                    torch._C._len_torch_function_stack() or torch._C._are_functorch_transforms_active())
    except Exception:
        return False
