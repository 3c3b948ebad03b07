"""Tiered first calls: a graph whose library is being built answers with its fx code until the library lands.

Why this exists (issue 24, the cold goal): an inference graph's AOTInductor library is built after the first
result, in a child process (backends/aoti_background.py), for later processes. The first process still
waited for inductor's JIT compile (most of a cold first call: lowering and C++ compilation) before its first
result. In tiered mode (`framejit.compile(..., tiered=True)`, `FRAMEJIT_TIERED=1`: Config.tiered) such a
graph is not compiled at all in this process: its fx code (`gm.forward`, eager's own ops, as the eager
backend runs it: exact semantics) answers, and once the child has stored the library, the library does, as a
tiered JIT moves a method from its interpreter to compiled code.

    first calls        the fx code; at most once every LOOK_EVERY seconds (time.monotonic) a look at the build
    library stored     it is loaded (in the calling thread, once) and answers every later call
    a "no" entry       (the library did not behave as eager, or AOTInductor could not compile the graph), or
                       the build ended without an entry: the graph compiles on the JIT path (`compile_jit`,
                       in the calling thread, once) and that answers; if that compile fails, the fx code stays
    after a switch     the callable steps out of its callers' path as output_strides.py's wrapper does: a
                       generated entry calls its graph by the name `__fj_graph` in its namespace, and that
                       name is rebound to what answers now, so a call costs the library's own time

Which library is coming is one value, `Coming` (its key, and how to look at its build): the AOTInductor
library of an inference graph is one kind (aoti_background.coming); another kind of library (a training
graph's) plugs in by making its own `Coming` and handing it to `answering_while_built`.

Only the "later" route gets this (stored_libraries.py): a graph whose library is stored runs it, and every
other graph (training, symbolic sizes, libraries off, another backend) compiles at its first call as before.
"""
import contextlib
import logging
import threading
import time
import warnings
from typing import Callable, NamedTuple

import torch

from .passes.output_strides import stepping_aside   # how a wrapper leaves the entry's call path

log = logging.getLogger(__name__)
LOOK_EVERY = 0.5                # seconds between two looks at a build (a store lookup and a stat: 0.17 ms at load 6)

# what a look at a build says
READY, BUILDING, FAILED = "ready", "building", "failed"

_ASKED = threading.local()


class Coming(NamedTuple):
    """A library being built for a graph: `key` names it (the callable carries it as `framejit_aoti_key`,
    so a stored conversion names the library: runtime/warm_start.py); `look()` returns (READY, the loaded
    library), (BUILDING, None) or (FAILED, None), and never raises."""
    key: str
    look: Callable[[], tuple]


@contextlib.contextmanager
def asked(tiered, behind=False, report=None):
    """Graphs compiled inside are tiered when `tiered` (the conversion's Config.tiered), else compiled behind
    their first call when `behind` (Config.compile_behind, where the conversion allows it), each calling
    `report(seconds)` when its compile behind ends (the conversion's metrics: compiled_behind_s):
    convert/graph_entry.py sets it around the backend call, whose signature has no room for it."""
    before = getattr(_ASKED, "value", None), getattr(_ASKED, "report", None)
    _ASKED.value = "tiered" if tiered else "behind" if behind else None
    _ASKED.report = report
    try:
        yield
    finally:
        _ASKED.value, _ASKED.report = before


def wanted():
    """Is the graph being compiled to be tiered (`asked`)?"""
    return getattr(_ASKED, "value", None) == "tiered"


def behind_wanted():
    """Is the graph being compiled to be compiled behind its first call (`asked`)?"""
    return getattr(_ASKED, "value", None) == "behind"


class Tiers:
    """Where one tiered graph is: `now` is "fx", "library" or "jit"; `answer` the callable that answers."""

    def __init__(self, run_fx, coming, compile_jit):
        self.now, self.answer = "fx", run_fx
        self.coming, self.compile_jit = coming, compile_jit
        self.next_look = 0.0            # the first call looks (and starts the build: aoti_background)
        self.lock = threading.Lock()

    def look(self, inputs):
        """One look at the build; switch to the library, or to the JIT path when none is coming."""
        with self.lock:
            if self.next_look is None or time.monotonic() < self.next_look:
                return                      # another thread looked meanwhile
            what, library = self.coming.look()
            if what == BUILDING:
                self.next_look = time.monotonic() + LOOK_EVERY
                return
            self.next_look = None
            compile_jit, self.compile_jit = self.compile_jit, None     # the graph is not held after the switch
            if what == READY:
                self.now, self.answer = "library", library
                log.debug("framejit tiered: graph %s runs its library", self.coming.key)
                return
            compiled = self._compile(compile_jit, inputs)
            if compiled is not None:
                self.now, self.answer = "jit", compiled
            log.debug("framejit tiered: no library for %s: %s", self.coming.key,
                      "compiled on the JIT path" if compiled is not None else "its fx code stays")

    @staticmethod
    def _compile(compile_jit, inputs):
        """The JIT path's callable for this call's inputs (real tensors with the conversion's metadata: the
        entry's guards passed), or None when it fails (then the fx code stays: still eager's result)."""
        grad = torch.is_grad_enabled()
        try:
            return compile_jit(list(inputs))
        except Exception as e:
            log.debug("framejit tiered: the JIT compile failed: %s: %s", type(e).__name__, e)
            return None
        finally:
            torch._C._set_grad_enabled(grad)        # a backend tracing grad-mode nodes runs them for real


def answering_while_built(run_fx, coming, compile_jit):
    """The callable of a graph whose library `coming` is being built: `run_fx` answers until it lands, then
    the library (or `compile_jit(inputs)`'s callable when none comes); see the module doc."""
    tiers = Tiers(run_fx, coming, compile_jit)
    monotonic = time.monotonic
    step_aside = stepping_aside()

    def run(*inputs):
        next_look = tiers.next_look
        if next_look is not None:
            if monotonic() >= next_look:
                tiers.look(inputs)
        else:
            step_aside(run, tiers.answer)
        return tiers.answer(*inputs)
    run.framejit_tiers = tiers
    run.framejit_aoti_key = coming.key      # a stored conversion names the library (runtime/warm_start.py)
    return run


class InputsChanged(RuntimeError):
    """The first call's inputs changed metadata while the graph compiled for them (`resize_`)."""


HERE = "here"           # Behind.job of a graph that compiles in the calling thread at its next call


class Behind:
    """Where one graph compiled behind its calls is (`answering_while_compiled`): `answer` is None until the
    compile's outcome is known, then the compiled callable, or the fx code when the compile failed."""

    def __init__(self, run_fx, compile_jit, report=None):
        self.run_fx, self.compile_jit, self.report = run_fx, compile_jit, report
        self.job, self.answer, self.lock = None, None, threading.Lock()

    def call(self, inputs):
        with self.lock:
            first = self.job is None and self.answer is None
            if first:
                self.job = False                   # claimed: a concurrent first call runs the fx code too
        if first:
            from . import compile_behind
            before = compile_behind.metadata(inputs)
            try:
                result = self.run_fx(*inputs)      # the first result: eager's ops, exact
            except BaseException:                  # it raised (as eagerly): the next call is a first call
                with self.lock:
                    self.job = None
                raise
            if compile_behind.inputs_unchanged(inputs, before):
                self._submit(inputs, before)
            else:                                  # it changed an input's sizes or strides (`t_()`): the
                self.job = HERE                    # graph compiles at the next call, for inputs as they come
            return result
        return self._settled(inputs)(*inputs)

    def _submit(self, inputs, before):
        from . import compile_behind
        compile_jit, report = self.compile_jit, self.report

        def compile():
            start = time.perf_counter()
            try:
                compiled = compile_jit(list(inputs))
            finally:
                if report is not None:             # the conversion's metrics (compiled_behind_s)
                    report(time.perf_counter() - start)
            if not compile_behind.inputs_unchanged(inputs, before):
                raise InputsChanged("an input's metadata changed while the graph compiled")
            return compiled
        self.job = compile_behind.submit(compile, torch.is_grad_enabled())

    def _settled(self, inputs):
        """The answer, waiting for the compile if it has not ended (the second call)."""
        with self.lock:
            if self.answer is not None:
                return self.answer
            job = self.job
        if job is False:                            # the first call's fx code is still running elsewhere
            return self.run_fx
        ok, value = (False, InputsChanged()) if job is HERE else job.wait()
        from . import compile_behind
        with self.lock:
            if self.answer is None:
                if ok and callable(value):
                    self.answer = value
                elif isinstance(value, (InputsChanged, compile_behind.Forked)):   # no usable compile: again here
                    compiled = Tiers._compile(self.compile_jit, inputs)
                    self.answer = compiled if compiled is not None else self.run_fx
                else:                                   # as a failed backend at conversion: a warning, eager ops
                    why = f"{type(value).__name__}: {value}" if not ok else f"it returned {type(value).__name__}"
                    warnings.warn(f"framejit: the backend failed on a graph compiled behind its first call ({why}); "
                                  "the graph runs its fx code (eager's ops)", RuntimeWarning, stacklevel=4)
                    self.answer = self.run_fx
                self.compile_jit = self.job = self.report = None  # nothing is held after the switch
            return self.answer


def answering_while_compiled(run_fx, key, compile_jit):
    """The callable of a graph compiled behind its calls (backends/compile_behind.py): its first call answers
    with `run_fx` and then queues `compile_jit(first inputs)` on the compile worker; a later call waits for
    that compile if it has not ended and from then on the compiled callable answers. A compile that failed
    warns and leaves `run_fx` answering; one made for inputs whose metadata changed (or queued before a fork)
    is made again in the calling thread, once. A first call that raises queues nothing. `key` is the
    library the graph's callable names (None: none)."""
    behind = Behind(run_fx, compile_jit, getattr(_ASKED, "report", None))
    step_aside = stepping_aside()

    def run(*inputs):
        answer = behind.answer
        if answer is None:
            return behind.call(inputs)
        step_aside(run, answer)
        return answer(*inputs)
    run.framejit_behind = behind
    if key is not None:
        run.framejit_aoti_key = key         # a stored conversion names the library (runtime/warm_start.py)
    return run
