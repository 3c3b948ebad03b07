"""Everything framejit watches around one frame conversion, in one place.

Why this exists: the converter (convert.py) should only convert. Around it, each conversion must
also be timed by phase, leave a CompilationMetrics entry, feed an ExecutionRecorder (written as a
record on an internal failure, or always with Config.record_all), check that it left the global
torch/Python state alone (restoring it, and reporting a framejit bug, if not), log what happened
(and why a frame recompiled) and optionally run under cProfile. api._convert calls
`observed_conversion`, which does all of that around `convert()`.

The translator reaches the conversion being observed through a context variable: `current_recorder()`
(set as ctx.recorder) and `note_restart(reason)`. None of this runs on the per-call fast path.
"""
import contextvars
import logging
import re
import time
import warnings

from . import debug_log
from .break_warnings import warn_breaks
from .errors import Unsupported
from .global_state import check_global_state, global_state_snapshot, restore_global_state, translation_state
from .metrics import DEFAULT_METRICS_SIZE, CompilationMetrics, PhaseTimer, metrics_store
from .record import ExecutionRecorder

log = logging.getLogger("framejit")

_CURRENT = contextvars.ContextVar("framejit_conversion", default=None)
_LINE = re.compile(r'File "([^"]*)", line (\d+)')
# warnings.warn(stacklevel=) pointing at the user's call, from a function that observed_conversion calls:
# it, observed_conversion, api._convert, api._on_miss, the wrapper's on_miss, the wrapper, the user.
USER_STACKLEVEL = 7


class GlobalStateChanged(RuntimeWarning):
    """A conversion changed global torch/Python state (a framejit bug); the state was restored."""


class Observation:
    """What is collected about the conversion running in this context."""

    def __init__(self, fn, opts):
        self.metrics = CompilationMetrics.for_code(fn.__code__)
        self.recorder = None
        if opts.config.record_all or opts.config.record_on_failure:
            self.recorder = ExecutionRecorder()
            self.recorder.record_function(fn)
            self.recorder.record_torch_state(translation_state())   # what the conversion starts from


def current_recorder():
    """The ExecutionRecorder of the conversion running in this context (None if not recording)."""
    obs = _CURRENT.get()
    return None if obs is None else obs.recorder


def note_restart(reason):
    """The converter restarted translation of the current frame (a break inside an inlined call)."""
    obs = _CURRENT.get()
    if obs is not None:
        obs.metrics.restart_reasons.append(reason)
        log.debug("restarting conversion of %s: %s", obs.metrics.co_name, reason)


def observed_conversion(fn, state, opts, args, kwargs, convert):
    """Run `convert()` (-> ConvertResult) observed; returns (result, seconds). Internal failures become
    an eager ConvertResult (failures.py); Unsupported (fullgraph=True) propagates after being counted."""
    config = opts.config
    debug_log.install(config)
    store = metrics_store()
    if config.metrics_size != DEFAULT_METRICS_SIZE and store.size != config.metrics_size:
        store.size = config.metrics_size          # an explicit Config.metrics_size wins over the default
    obs = Observation(fn, opts)
    m = obs.metrics
    m.cache_size = len(state.entries)
    if state.entries and state.recompile_reasons:
        m.recompile_reason = state.recompile_reasons[-1]
        log.info("%s", m.recompile_reason)
    before = global_state_snapshot()
    token = _CURRENT.set(obs)
    start = time.perf_counter()
    result = profile = None
    timer = PhaseTimer(m.frame_key)
    try:
        with timer, debug_log.conversion_profile(config, m.frame_key) as profile:
            try:
                result = convert()
            except Unsupported as e:
                m.set_failure(e, *_user_line(str(e)))
                raise
            except Exception as e:                 # a framejit bug or a backend failure
                m.set_failure(e, *_failing_user_line(e, fn.__code__))
                from .failures import handle_internal_failure
                result = handle_internal_failure(fn, args, kwargs, opts, e, obs.recorder)
                m.record_path = str(result.record_path) if result.record_path else None
    finally:
        _CURRENT.reset(token)
        elapsed = time.perf_counter() - start
        _check_global_state(fn, before, m)
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
        from .failures import write_conversion_record
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


def _failing_user_line(exc, code):
    """(filename, line) of the innermost user instruction being translated when `exc` was raised."""
    from .translate.translator import Translator
    tb, inst, inst_code = exc.__traceback__, None, None
    while tb is not None:
        candidate = tb.tb_frame.f_locals.get("self")
        if isinstance(candidate, Translator) and candidate.inst is not None:
            inst, inst_code = candidate.inst, candidate.code
        tb = tb.tb_next
    if inst is None:
        return code.co_filename, code.co_firstlineno
    pos = getattr(inst, "positions", None)
    line = pos.lineno if pos is not None and pos.lineno is not None else inst_code.co_firstlineno
    return inst_code.co_filename, line


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
