"""What happens when framejit itself fails on a frame (a translator bug, a backend or codegen error).

The user's program must not fail because of framejit: the frame falls back to plain Python with one
warning, and an execution record of the frame is written (record.py) so the failure can be replayed in
a fresh process with `python -m framejit replay PATH`.
"""
import traceback
import warnings

from .convert import ConvertResult
from .record import ExecutionRecorder, try_write_record


def build_record(fn, args, kwargs, exc=None):
    rec = ExecutionRecorder()
    rec.record_function(fn)
    for name in fn.__code__.co_names:
        if name in fn.__globals__:
            rec.record_global(name, fn.__globals__[name])
    rec.record_args(args, kwargs)
    return rec.to_record(exc)


def handle_internal_failure(fn, args, kwargs, opts, exc):
    path = None
    if opts.config.record_on_failure:
        try:
            path = try_write_record(build_record(fn, args, kwargs, exc), opts.config.debug_dir)
        except Exception:            # recording must never turn a fallback into a crash
            path = None
    where = f" A record of the frame was written to {path} (replay it with `python -m framejit replay {path}`)." \
        if path else ""
    message = (f"framejit failed to convert {fn.__qualname__} ({type(exc).__name__}: {exc}); it runs as plain "
               f"Python.{where}")
    warnings.warn(message, RuntimeWarning, stacklevel=5)
    result = ConvertResult("eager", reason=message)
    result.exception = exc
    result.traceback = traceback.format_exc()
    result.record_path = path
    return result
