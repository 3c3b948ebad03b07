"""What happens when framejit itself fails on a frame (a translator bug, a backend or codegen error).

The user's program must not fail because of framejit: the frame falls back to plain Python with one
warning, and an execution record of the frame is written (record.py) so the failure can be replayed in
a fresh process with `python -m framejit replay PATH` (or `framejit.replay(PATH)`).

The record holds what the translator reported reading while it converted the frame (globals,
builtins, module attributes: ctx.recorder), plus every global the frame's code names, so that a
replay with --run can also execute it; the options, Config and global torch state the conversion
ran under (observe.py records the state before converting); and for a resume function, the code it
continues.
"""
import traceback
import warnings

from .convert import ConvertResult
from .global_state import translation_state
from .record import ExecutionRecorder, try_write_record
from .record_values import global_names


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


def handle_internal_failure(fn, args, kwargs, opts, exc, recorder=None):
    path = None
    if opts.config.record_on_failure or opts.config.record_all:
        path = write_conversion_record(fn, args, kwargs, opts, exc, recorder)
    where = f" A record of the frame was written to {path} (replay it with `python -m framejit replay {path}`)." \
        if path else ""
    message = (f"framejit failed to convert {fn.__qualname__} ({type(exc).__name__}: {exc}); it runs as plain "
               f"Python.{where}")
    from .observe import USER_STACKLEVEL
    warnings.warn(message, RuntimeWarning, stacklevel=USER_STACKLEVEL)
    result = ConvertResult("eager", reason=message)
    result.exception = exc
    result.traceback = "".join(traceback.format_exception(exc))
    result.record_path = path
    return result
