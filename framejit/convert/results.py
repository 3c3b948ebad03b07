"""What a conversion is given and what it gives back: its options, its result, its breaks.

The runtime (runtime/compiled.py) builds `Options` once per compiled function and hands every
conversion (convert/frame.py) an observation (observe/conversion.py's, or `UNOBSERVED`); each conversion
returns a `ConvertResult`, whose kinds are:
  entry      a generated entry to add to the cache (graph and guards)
  eager      the frame runs as plain Python from now on (an unsupported construct that no split can
             isolate: a break inside a loop, try or with block, a generator...), with the reason
  once       run this call eagerly but do not cache (the call raises in Python, or its arguments do
             not bind): the next call converts again
and whose `breaks` are the `BreakInfo`s explain() shows.
"""
import contextlib

from .callees import CalleeWrappers
from ..shapes.memory import ShapeMemory


class BreakInfo:
    """One graph break, as explain() shows it."""

    def __init__(self, kind, reason, where, fn_name, hint=None):
        self.kind = kind
        self.reason = reason
        self.where = where
        self.fn_name = fn_name
        self.hint = hint

    @property
    def line(self):
        return self.where

    def __str__(self):
        text = f"{self.reason}\n{self.where}" if self.where else self.reason
        return text + (f"\n    hint: {self.hint}" if self.hint else "")

    def __repr__(self):
        return f"BreakInfo({self.kind!r}, {self.reason!r})"


class ConvertResult:
    def __init__(self, kind, entry=None, reason=None, guards=None, graph=None, source_text=None, breaks=(),
                 ns=None, op_count=0, replacement=None, dies_with=(), companion=None):
        self.kind = kind              # "entry" | "eager" | "once"
        self.companion = companion    # "entry": the shared entry over the same graph (instance_guards.py), or None
        self.dies_with = dies_with    # weak refs to the modules whose death ends the entry (guards.WeakIdentity)
        self.replacement = replacement  # "eager": what to run instead of fn (same semantics), or None
        self.entry = entry
        self.reason = reason
        self.guards = guards
        self.graph = graph
        self.source_text = source_text
        self.breaks = list(breaks)
        self.ns = ns
        self.op_count = op_count


class Options:
    """What a compiled function was compiled with: backend callable, config, fullgraph, and `wrap`,
    which compiles generated resume functions with the same options."""

    def __init__(self, backend, config, fullgraph, wrap, observer=None, shape_memory=None):
        self.shape_memory = shape_memory if shape_memory is not None else ShapeMemory()  # automatic dynamic
        self.backend = backend
        self.config = config
        self.fullgraph = fullgraph
        self.wrap = wrap
        self.observer = observer      # called with (code, ConvertResult, seconds) after each conversion
        self.key = (backend, fullgraph, config, observer)   # resume functions are cached per options
        self.callee_wrappers = CalleeWrappers(wrap)          # callees that break run compiled (convert/callees.py)


class Unobserved:
    """The observation a conversion reports to (observe/conversion.py's Observation hands its own), for
    a conversion nobody watches (replay_conversion): no recorder, phases not timed."""
    recorder = None
    compiled_behind = None       # nobody hears when a graph's compile behind ends

    def note_restart(self, reason):
        pass

    def program_effect(self, call):
        return call()

    def watch_state(self, call):
        """Nobody watches global torch state here: only framejit.compile's conversions (observed) make a
        torch call that changes it a graph break (translate/lookasides/state_calls.py)."""
        return call(), []

    def phase(self, name):
        return contextlib.nullcontext()


UNOBSERVED = Unobserved()
