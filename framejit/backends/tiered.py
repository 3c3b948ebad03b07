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
import sys
import threading
import time
from typing import Callable, NamedTuple

import torch

from .passes.output_strides import GRAPH_SLOT     # the name generated entries call their graph by

log = logging.getLogger(__name__)
LOOK_EVERY = 0.5                # seconds between two looks at a build (a store lookup and a stat: 0.17 ms at load 6)
STEP_ASIDE_LOOKS = 8            # calls from callers that do not hold the callable under GRAPH_SLOT, at most

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
def asked(tiered):
    """Graphs compiled inside are tiered when `tiered` (the conversion's Config.tiered: convert/graph_entry.py
    sets it around the backend call, whose signature has no room for it)."""
    before = getattr(_ASKED, "value", False)
    _ASKED.value = bool(tiered)
    try:
        yield
    finally:
        _ASKED.value = before


def wanted():
    """Is the graph being compiled to be tiered (`asked`)?"""
    return getattr(_ASKED, "value", False)


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
    steps = STEP_ASIDE_LOOKS

    def run(*inputs):
        nonlocal steps
        next_look = tiers.next_look
        if next_look is not None:
            if monotonic() >= next_look:
                tiers.look(inputs)
        elif steps:
            caller = sys._getframe(1).f_globals
            if caller.get(GRAPH_SLOT) is run:
                caller[GRAPH_SLOT] = tiers.answer    # the switch is final: the caller calls the answer itself
            else:
                steps -= 1
        return tiers.answer(*inputs)
    run.framejit_tiers = tiers
    run.framejit_aoti_key = coming.key      # a stored conversion names the library (runtime/warm_start.py)
    return run
