"""What happens when framejit itself fails on a frame (a translator bug, a backend or codegen error).

The user's program must not fail because of framejit: the frame falls back to plain Python with one
warning, and an execution record of the frame is written (observe/record.py) so the failure can be replayed in
a fresh process with `python -m framejit replay PATH` (or `framejit.replay(PATH)`).

The record holds what the translator reported reading while it converted the frame (globals,
builtins, module attributes: ctx.recorder), plus every global the frame's code names, so that a
replay with --run can also execute it; the options, Config and global torch state the conversion ran
under (observe/conversion.py records the state before converting, and writes the record). The
metrics entry names the user's line the translator was at when it failed.
"""
import traceback
import warnings

from ..convert.results import ConvertResult
from ..observe.conversion import USER_STACKLEVEL, write_conversion_record
from ..translate.translator import Translator


def handle_internal_failure(fn, args, kwargs, opts, exc, recorder=None):
    path = None
    if opts.config.record_on_failure or opts.config.record_all:
        path = write_conversion_record(fn, args, kwargs, opts, exc, recorder)
    where = f" A record of the frame was written to {path} (replay it with `python -m framejit replay {path}`)." \
        if path else ""
    message = (f"framejit failed to convert {fn.__qualname__} ({type(exc).__name__}: {exc}); it runs as plain "
               f"Python.{where}")
    warnings.warn(message, RuntimeWarning, stacklevel=USER_STACKLEVEL)
    result = ConvertResult("eager", reason=message)
    result.exception = exc
    result.traceback = "".join(traceback.format_exception(exc))
    result.record_path = path
    result.user_line = _failing_user_line(exc, fn.__code__)
    return result


def _failing_user_line(exc, code):
    """(filename, line) of the innermost user instruction being translated when `exc` was raised."""
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
