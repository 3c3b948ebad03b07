"""Everything framejit watches around one frame conversion, in one place.

Why this exists: the converter (convert/frame.py) should only convert. Around it, each conversion must
also be timed by phase, leave a CompilationMetrics entry, feed an ExecutionRecorder (written as a
record on an internal failure, or always with Config.record_all), check that it left the global
torch/Python state alone (restoring it, and reporting a framejit bug, if not), log what happened
(and why a frame recompiled) and optionally run under cProfile. The runtime (runtime/compiled.py)
calls `observed_conversion`, which does all of that around `convert(observation)`.

The converter is handed the Observation and reports to it, importing nothing from here: its recorder
(ctx.recorder, fed by the translator), `note_restart(reason)` and `phase(name)`. None of this runs on
the per-call fast path.
"""
import contextlib
import gc
import logging
import re
import time
import warnings

from . import debug_log
from .break_warnings import warn_breaks
from ..errors import Unsupported
from .global_state import check_global_state, global_state_snapshot, restore_global_state, translation_state
from .metrics import DEFAULT_METRICS_SIZE, CompilationMetrics, PhaseTimer, metrics_store
from .record import ExecutionRecorder
from .record_file import try_write_record
from .record_values import global_names

log = logging.getLogger("framejit")

_LINE = re.compile(r'File "([^"]*)", line (\d+)')
# warnings.warn(stacklevel=) pointing at the user's call, from a function that observed_conversion calls:
# it, observed_conversion, runtime/compiled.py's _convert and _on_miss, the wrapper's on_miss, the
# wrapper, the user.
USER_STACKLEVEL = 7


class GlobalStateChanged(RuntimeWarning):
    """A conversion changed global torch/Python state (a framejit bug); the state was restored."""


def watch_state(call):
    """(call(), what it changed in global torch state); a change is undone (translate/lookasides/
    state_calls.py makes such a call a graph break)."""
    before = global_state_snapshot()
    changes = []
    try:
        out = call()
    finally:
        changes = check_global_state(before)
        if changes:
            restore_global_state(before)
    return out, changes


def _adding_behind(metrics):
    """What a graph compiled behind its first call reports when its compile ends (backends/tiered.py): the
    seconds, added to the conversion's metrics (a closure over them alone: the observation is not kept)."""
    def add(seconds):
        metrics.compiled_behind_s = (metrics.compiled_behind_s or 0.0) + seconds
    return add


class Observation:
    """What is collected about one conversion; the converter is handed it and reports to it."""

    def __init__(self, fn, opts, resume_of=None):
        self.metrics = CompilationMetrics.for_code(fn.__code__)
        self.recorder = None         # the ExecutionRecorder the translator feeds (None: not recording)
        self.timer = None            # the conversion's PhaseTimer
        self.state_base = None       # the global state after the program's own effects (program_effect)
        self.compiled_behind = _adding_behind(self.metrics)     # (seconds): a graph's compile behind ended
        if opts.config.record_all or opts.config.record_on_failure:
            self.recorder = ExecutionRecorder()
            self.recorder.record_function(fn)
            self.recorder.record_resume_of(resume_of)
            self.recorder.record_torch_state(translation_state())   # what the conversion starts from

    def note_restart(self, reason):
        """The converter restarted translation of this frame (a break inside an inlined call)."""
        self.metrics.restart_reasons.append(reason)
        log.debug("restarting conversion of %s: %s", self.metrics.co_name, reason)

    def watch_state(self, call):
        return watch_state(call)

    def program_effect(self, call):
        """Run `call()`, a change of global state the program itself makes (a lazy module's first call
        drawing its parameters from the RNG), which translation performs where eager would: the check
        that the conversion changed no global state starts from the state after it."""
        out = call()
        self.state_base = global_state_snapshot()
        return out

    def phase(self, name):
        """`with observation.phase("translate"):` times that phase of this conversion."""
        return self.timer.phase(name)


@contextlib.contextmanager
def _cyclic_gc_paused():
    """No automatic cyclic collection while a frame converts. A conversion allocates tens of thousands of
    short-lived objects, enough to trigger several full collections, each of which walks every object of
    the process: in a process holding a few models that was half of a ResNet-50 capture. Nothing of the
    program runs then that could depend on when a cycle is freed; the collector runs again after it."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def observed_conversion(fn, state, opts, args, kwargs, convert, on_failure, resume_of=None):
    """Run `convert(observation)` (-> ConvertResult) observed; returns (result, seconds). Internal failures become
    what `on_failure(fn, args, kwargs, opts, exc, recorder)` makes of them (runtime/failures.py: an eager
    ConvertResult); Unsupported (fullgraph=True) propagates after being counted. `resume_of`: for a
    generated resume function, (the code it continues, its prologue length), which records keep."""
    config = opts.config
    debug_log.install(config)
    store = metrics_store()
    if config.metrics_size != DEFAULT_METRICS_SIZE and store.size != config.metrics_size:
        store.size = config.metrics_size          # an explicit Config.metrics_size wins over the default
    obs = Observation(fn, opts, resume_of)
    m = obs.metrics
    m.cache_size = len(state.entries)
    if state.entries and state.recompile_reasons:
        m.recompile_reason = state.recompile_reasons[-1]
        log.info("%s", m.recompile_reason)
    before = global_state_snapshot()
    start = time.perf_counter()
    result = profile = None
    timer = obs.timer = PhaseTimer(m.frame_key)
    try:
        with timer, _cyclic_gc_paused(), debug_log.conversion_profile(config, m.frame_key) as profile:
            try:
                result = convert(obs)
            except Unsupported as e:
                m.set_failure(e, *_user_line(str(e)))
                raise
            except Exception as e:                 # a framejit bug or a backend failure
                result = on_failure(fn, args, kwargs, opts, e, obs.recorder)
                m.set_failure(e, *result.user_line)
                m.record_path = str(result.record_path) if result.record_path else None
    finally:
        elapsed = time.perf_counter() - start
        _check_global_state(fn, obs.state_base or before, m)
        m.entire_frame_compile_time_s = elapsed
        m.phase_times = dict(timer.times)
        m.backend_compile_time_s = timer.times.get("backend_compile")
        if config.profile_conversion and profile is not None:
            m.profile_path = str(profile)
        if result is not None:
            _fill(m, result)
            result.recompile_reason = m.recompile_reason
            result.metrics = m
        store.add(m)
    if config.record_all and m.record_path is None:
        path = write_conversion_record(fn, args, kwargs, opts, None, obs.recorder)
        m.record_path = str(path) if path else None
    _log_result(fn, result, m)
    if result is not None:
        warn_breaks(fn, result, USER_STACKLEVEL)
    on_conversion = getattr(opts.backend, "on_conversion", None)
    if on_conversion is not None:
        on_conversion(fn, result, m)
    return result, elapsed


def _fill(m, result):
    m.outcome = result.kind
    m.has_installed_code = result.kind == "entry"
    m.graph_break_count = len(result.breaks)
    if result.guards is not None:
        m.guard_count = len(result.guards)
    if result.graph is not None:
        nodes = list(result.graph.graph.nodes)
        m.graph_node_count = len(nodes)
        m.graph_input_count = sum(1 for n in nodes if n.op == "placeholder")
        m.graph_op_count = result.op_count
    if result.kind != "entry" and m.fail_type is None:
        m.fail_type = "eager fallback" if result.kind == "eager" else "run once eagerly"
        m.fail_reason = result.reason
        where = result.breaks[0].where if result.breaks else None
        m.fail_user_frame_filename, m.fail_user_frame_lineno = _user_line(where or "")


def _user_line(text):
    found = _LINE.search(text)
    return (found.group(1), int(found.group(2))) if found else (None, None)


def build_record(fn, args, kwargs, exc=None, recorder=None, opts=None):
    """The Record of converting `fn` on (args, kwargs); `recorder` is the one the translator filled."""
    rec = recorder
    if rec is None:
        rec = ExecutionRecorder()
        rec.record_torch_state(translation_state())
    rec.record_function(fn)
    for name in global_names(fn.__code__):
        if name in fn.__globals__:
            rec.record_global(name, fn.__globals__[name])
    rec.record_args(args, kwargs)
    if opts is not None:
        rec.record_options(opts.backend, opts.fullgraph)
        rec.record_config(opts.config)
    return rec.to_record(exc)


def write_conversion_record(fn, args, kwargs, opts, exc=None, recorder=None):
    """Write a record of this conversion under the config's debug dir; the path, or None if it failed."""
    try:
        return try_write_record(build_record(fn, args, kwargs, exc, recorder, opts), opts.config.debug_dir)
    except Exception:            # recording must never turn a fallback into a crash
        return None


def _check_global_state(fn, before, m):
    changes = check_global_state(before)
    if not changes:
        return
    restore_global_state(before)
    m.global_state_changes = changes
    message = (f"framejit bug: converting {fn.__qualname__} changed global state ({'; '.join(changes)}); "
               "framejit restored it. Please report this.")
    log.warning("%s", message)
    warnings.warn(message, GlobalStateChanged, stacklevel=USER_STACKLEVEL)


def _log_result(fn, result, m):
    if result is None or not log.isEnabledFor(logging.DEBUG):
        return
    seconds = m.entire_frame_compile_time_s or 0.0
    log.debug("converted %s -> %s in %.1f ms: %d ops, %d guards, %d breaks%s", m.frame_key, result.kind,
              seconds * 1000, m.graph_op_count, m.guard_count, m.graph_break_count,
              f" ({result.reason})" if result.reason else "")
    for info in result.breaks:
        log.debug("graph break in %s: %s", fn.__qualname__, info)
    if result.source_text:
        log.debug("generated entry for %s:\n%s", fn.__qualname__, result.source_text)
