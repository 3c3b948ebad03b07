"""Compile metrics: what each frame conversion cost and produced, and where its time went.

Why this exists: to answer "why is framejit slow / recompiling / failing here"
without a debugger, every frame conversion leaves one `CompilationMetrics`
entry in a bounded store, and its phases are timed by a `PhaseTimer`.
Nothing here runs on the per-call fast path: entries are made and timers run
only while a frame is being converted, so a program whose frames are all
already converted pays nothing.

    entry = CompilationMetrics.for_code(code, frame_key="f (f.py:3)")
    with PhaseTimer(entry.frame_key) as timer:        # active timer for this thread/context
        with timer.phase("translate"):
            ...
            with phase("fake_propagation"):           # module-level: goes to the active timer
                ...
    entry.phase_times = dict(timer.times)
    metrics_store().add(entry)

    metrics()                     # list of the stored CompilationMetrics, oldest first
    compile_times()               # per-function phase times, as text
    compile_times(repr="csv", aggregate=True)

Phase times are inclusive: a phase that runs inside another (fake_propagation
inside translate) counts in both; a phase re-entered while already running
(recursive inlining) is counted once, by its outermost use.
"""

from __future__ import annotations

import contextvars
import csv
import dataclasses
import functools
import io
import itertools
import json
import os
import threading
import time
import types
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, TypeVar

PHASES = ("bytecode_analysis", "translate", "fake_propagation", "backend_compile", "codegen", "guard_build")
DEFAULT_METRICS_SIZE = 64

_ids = itertools.count(1)
F = TypeVar("F", bound=Callable[..., Any])


def _next_id() -> int:
    return next(_ids)


@dataclass
class CompilationMetrics:
    """One frame conversion: what it was, what it produced, what it cost, how it failed."""

    id: int = field(default_factory=_next_id)
    frame_key: str = ""
    co_name: str = ""
    co_filename: str = ""
    co_firstlineno: int = 0
    cache_size: int = 0
    """Converted versions of this frame already cached when this conversion started."""
    guard_count: int = 0
    graph_op_count: int = 0
    graph_node_count: int = 0
    graph_input_count: int = 0
    start_time: float = field(default_factory=time.time)
    entire_frame_compile_time_s: float | None = None
    backend_compile_time_s: float | None = None
    compiled_behind_s: float | None = None
    """Seconds the graphs of this conversion took to compile on the worker thread after their first call
    (backends/compile_behind.py), added as each compile ends; not in entire_frame_compile_time_s. None: none."""
    fail_type: str | None = None
    fail_reason: str | None = None
    fail_user_frame_filename: str | None = None
    fail_user_frame_lineno: int | None = None
    restart_reasons: list[str] = field(default_factory=list)
    has_installed_code: bool = False
    phase_times: dict[str, float] = field(default_factory=dict)
    recompile_reason: str | None = None
    outcome: str | None = None
    """'entry' (cached converted code), 'eager' (the frame runs as plain Python) or 'once'."""
    graph_break_count: int = 0
    global_state_changes: list[str] = field(default_factory=list)
    """Global state the conversion changed (a framejit bug; the state was restored)."""
    record_path: str | None = None
    profile_path: str | None = None

    @classmethod
    def for_code(cls, code: types.CodeType, frame_key: str | None = None, **values: Any) -> "CompilationMetrics":
        """An entry for converting `code`; frame_key defaults to 'name (file:line)'."""
        key = frame_key if frame_key is not None else frame_key_for(code)
        return cls(
            frame_key=key,
            co_name=code.co_name,
            co_filename=code.co_filename,
            co_firstlineno=code.co_firstlineno,
            **values,
        )

    def set_failure(self, exc: BaseException, filename: str | None = None, lineno: int | None = None) -> None:
        """Fill the fail_* fields from a conversion exception and the user source line it concerned."""
        exc_type = type(exc)
        module = exc_type.__module__
        self.fail_type = exc_type.__qualname__ if module == "builtins" else f"{module}.{exc_type.__qualname__}"
        self.fail_reason = str(exc)
        self.fail_user_frame_filename = filename
        self.fail_user_frame_lineno = lineno

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def frame_key_for(code: types.CodeType) -> str:
    """The name compile metrics and compile times use for a frame: 'qualname (file:line)'."""
    return f"{code.co_qualname} ({code.co_filename}:{code.co_firstlineno})"


class MetricsStore:
    """The most recent CompilationMetrics, at most `size` of them (oldest dropped first)."""

    def __init__(self, size: int = DEFAULT_METRICS_SIZE) -> None:
        self._lock = threading.Lock()
        self._entries: deque[CompilationMetrics] = deque(maxlen=_check_size(size))

    @property
    def size(self) -> int:
        return self._entries.maxlen or 0

    @size.setter
    def size(self, size: int) -> None:
        size = _check_size(size)
        with self._lock:
            self._entries = deque(self._entries, maxlen=size)

    def add(self, entry: CompilationMetrics) -> None:
        if not isinstance(entry, CompilationMetrics):
            raise TypeError(f"MetricsStore.add expects CompilationMetrics, got {type(entry).__name__}")
        with self._lock:
            self._entries.append(entry)

    def all(self) -> list[CompilationMetrics]:
        with self._lock:
            return list(self._entries)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)


def _check_size(size: int) -> int:
    if isinstance(size, bool) or not isinstance(size, int):
        raise TypeError(f"metrics store size must be an int, got {type(size).__name__} {size!r}")
    if size < 0:
        raise ValueError(f"metrics store size must be >= 0, got {size}")
    return size


class CompileTimes:
    """Per-function phase times: frame_key -> phase -> one time per conversion of that frame. Bounded, as
    a process may convert without end (functions made and compiled in a loop): the last
    `MAX_FUNCTIONS` functions converted, the last `MAX_TIMES` conversions of each."""

    MAX_FUNCTIONS = 256
    MAX_TIMES = 256

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._per_function: dict[str, dict[str, list[float]]] = {}

    def add(self, frame_key: str, times: dict[str, float]) -> None:
        with self._lock:
            phases = self._per_function.pop(frame_key, None) or {}
            self._per_function[frame_key] = phases          # the most recent last
            while len(self._per_function) > self.MAX_FUNCTIONS:
                del self._per_function[next(iter(self._per_function))]
            for name, seconds in times.items():
                kept = phases.setdefault(name, [])
                kept.append(seconds)
                if len(kept) > self.MAX_TIMES:
                    del kept[0]

    def per_function(self) -> dict[str, dict[str, list[float]]]:
        with self._lock:
            return {key: {p: list(ts) for p, ts in phases.items()} for key, phases in self._per_function.items()}

    def totals(self) -> dict[str, float]:
        """Seconds per phase, summed over every conversion of every function."""
        totals: dict[str, float] = {}
        for phases in self.per_function().values():
            for name, times in phases.items():
                totals[name] = totals.get(name, 0.0) + sum(times)
        return _in_phase_order(totals)

    def clear(self) -> None:
        with self._lock:
            self._per_function.clear()

    def report(self, repr: str = "str", aggregate: bool = False) -> str:  # noqa: A002 - the public name
        """Text ('str') or CSV ('csv') of per-conversion times, or of totals with aggregate=True."""
        if repr not in ("str", "csv"):
            raise ValueError(f"compile_times repr must be 'str' or 'csv', got {repr!r}")
        if not isinstance(aggregate, bool):
            raise TypeError(f"compile_times aggregate must be True or False, got {type(aggregate).__name__} "
                            f"{aggregate!r}")
        data = {key: _in_phase_order(phases) for key, phases in self.per_function().items()}
        if repr == "csv":
            return _csv_report(data, aggregate)
        return _text_report(data, aggregate)


def _in_phase_order(mapping: dict[str, Any]) -> dict[str, Any]:
    order = {name: i for i, name in enumerate(PHASES)}
    return dict(sorted(mapping.items(), key=lambda kv: (order.get(kv[0], len(order)), kv[0])))


def _text_report(data: dict[str, dict[str, list[float]]], aggregate: bool) -> str:
    kind = "totals per function and overall" if aggregate else "one value per conversion"
    lines = [f"framejit compile times (seconds; {kind})"]
    if not data:
        lines.append("(nothing was compiled)")
        return "\n".join(lines) + "\n"
    width = max(len(p) for p in PHASES)
    overall: dict[str, float] = {}
    for key, phases in data.items():
        lines.append(key)
        for name, times in phases.items():
            overall[name] = overall.get(name, 0.0) + sum(times)
            if aggregate:
                lines.append(f"  {name:<{width}}  {sum(times):.6f}  ({len(times)} conversions)")
            else:
                lines.append(f"  {name:<{width}}  {', '.join(f'{t:.6f}' for t in times)}")
    if aggregate:
        lines.append("all functions")
        lines.extend(f"  {name:<{width}}  {total:.6f}" for name, total in _in_phase_order(overall).items())
    return "\n".join(lines) + "\n"


def _csv_report(data: dict[str, dict[str, list[float]]], aggregate: bool) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    if aggregate:
        writer.writerow(["function", "phase", "conversions", "total_seconds"])
        overall: dict[str, list[float]] = {}
        for key, phases in data.items():
            for name, times in phases.items():
                overall.setdefault(name, []).extend(times)
                writer.writerow([key, name, len(times), f"{sum(times):.6f}"])
        for name, times in _in_phase_order(overall).items():
            writer.writerow(["(all)", name, len(times), f"{sum(times):.6f}"])
    else:
        writer.writerow(["function", "phase", "conversion", "seconds"])
        for key, phases in data.items():
            for name, times in phases.items():
                for i, seconds in enumerate(times):
                    writer.writerow([key, name, i, f"{seconds:.6f}"])
    return out.getvalue()


_ACTIVE_TIMER: contextvars.ContextVar["PhaseTimer | None"] = contextvars.ContextVar("framejit_phase_timer", default=None)


def _check_phase(name: str) -> str:
    if name not in PHASES:
        raise ValueError(f"unknown compile phase {name!r}; the phases are: {', '.join(PHASES)}")
    return name


class _TimedPhase:
    """`timer.phase(name)`: a context manager and a decorator timing one phase on one timer."""

    def __init__(self, timer: "PhaseTimer", name: str) -> None:
        self._timer = timer
        self._name = name

    def __enter__(self) -> None:
        self._timer._enter(self._name)

    def __exit__(self, *exc_info: object) -> None:
        self._timer._exit(self._name)

    def __call__(self, func: F) -> F:
        @functools.wraps(func)
        def timed(*args: Any, **kwargs: Any) -> Any:
            with self:
                return func(*args, **kwargs)

        return timed  # type: ignore[return-value]


class PhaseTimer:
    """Times the phases of one frame's conversion; `with timer:` makes it the active timer."""

    def __init__(self, frame_key: str, table: CompileTimes | None = None) -> None:
        self.frame_key = frame_key
        self.times: dict[str, float] = {}
        self._depth: dict[str, int] = {}
        self._started: dict[str, float] = {}
        self._table = table if table is not None else default_compile_times()
        self._tokens: list[contextvars.Token] = []
        self._finished = False

    def phase(self, name: str) -> _TimedPhase:
        return _TimedPhase(self, _check_phase(name))

    def _enter(self, name: str) -> None:
        depth = self._depth.get(name, 0)
        if depth == 0:
            self._started[name] = time.perf_counter()
        self._depth[name] = depth + 1

    def _exit(self, name: str) -> None:
        depth = self._depth[name] - 1
        self._depth[name] = depth
        if depth == 0:
            elapsed = time.perf_counter() - self._started.pop(name)
            self.times[name] = self.times.get(name, 0.0) + elapsed

    def total(self) -> float:
        return sum(self.times.values())

    def finish(self) -> None:
        """Add this conversion's times to the global table (once; `with timer:` does it on exit)."""
        if not self._finished:
            self._finished = True
            self._table.add(self.frame_key, dict(self.times))

    def __enter__(self) -> "PhaseTimer":
        self._tokens.append(_ACTIVE_TIMER.set(self))
        return self

    def __exit__(self, *exc_info: object) -> None:
        _ACTIVE_TIMER.reset(self._tokens.pop())
        self.finish()


class _ActivePhase:
    """`phase(name)`: times a phase on whichever PhaseTimer is active; does nothing if none is."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._timers: list[PhaseTimer | None] = []

    def __enter__(self) -> None:
        timer = _ACTIVE_TIMER.get()
        self._timers.append(timer)
        if timer is not None:
            timer._enter(self._name)

    def __exit__(self, *exc_info: object) -> None:
        timer = self._timers.pop()
        if timer is not None:
            timer._exit(self._name)

    def __call__(self, func: F) -> F:
        name = self._name

        @functools.wraps(func)
        def timed(*args: Any, **kwargs: Any) -> Any:
            with _ActivePhase(name):
                return func(*args, **kwargs)

        return timed  # type: ignore[return-value]


def phase(name: str) -> _ActivePhase:
    """Context manager / decorator timing `name` on the active PhaseTimer (a no-op without one)."""
    return _ActivePhase(_check_phase(name))


def active_timer() -> PhaseTimer | None:
    return _ACTIVE_TIMER.get()


_DEFAULT_STORE = MetricsStore()
_DEFAULT_COMPILE_TIMES = CompileTimes()


def metrics_store() -> MetricsStore:
    """The process-wide store of CompilationMetrics (its size is settable: metrics_store().size = n)."""
    return _DEFAULT_STORE


def default_compile_times() -> CompileTimes:
    return _DEFAULT_COMPILE_TIMES


def metrics() -> list[CompilationMetrics]:
    """The stored CompilationMetrics, oldest first."""
    return _DEFAULT_STORE.all()


def clear_metrics() -> None:
    """Forget the stored CompilationMetrics and the accumulated compile times."""
    _DEFAULT_STORE.clear()
    _DEFAULT_COMPILE_TIMES.clear()


def compile_times(repr: str = "str", aggregate: bool = False) -> str:  # noqa: A002 - the public name
    """Per-function phase times of every conversion so far, as text or CSV (see CompileTimes.report)."""
    return _DEFAULT_COMPILE_TIMES.report(repr=repr, aggregate=aggregate)


def iter_report_lines(store: MetricsStore | None = None, table: CompileTimes | None = None) -> Iterator[str]:
    """JSON lines: one {"kind": "compilation", ...} per stored entry, then one {"kind": "compile_times"}."""
    store = store if store is not None else _DEFAULT_STORE
    table = table if table is not None else _DEFAULT_COMPILE_TIMES
    for entry in store.all():
        yield json.dumps({"kind": "compilation", **entry.as_dict()}, default=str)
    yield json.dumps({"kind": "compile_times", "per_function": table.per_function(), "totals": table.totals()})


def write_report(path: str | os.PathLike, store: MetricsStore | None = None, table: CompileTimes | None = None) -> None:
    """Write the JSON-lines metrics report (Config.report_path / $FRAMEJIT_REPORT) to `path`."""
    with open(path, "w", encoding="utf-8") as out:
        for line in iter_report_lines(store, table):
            out.write(line + "\n")
