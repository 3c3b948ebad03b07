"""One warning per root cause of graph breaks, ever: users see each cause once, not on every recompile
and not once per enclosing function.

A graph break is not an error (the code runs correctly, as plain Python there) but it costs speed, so
each distinct cause (reason, source line) is reported once with a GraphBreakWarning that points at the
line. A break deep inside nested calls shows up in every frame above it: the outermost compiled frame
breaks at its call ("the called function has a graph break inside (<cause>)"), the callee runs through
a compiled wrapper and breaks at its own call, and so on down to the cause. Those are one cause: the
first frame to meet it warns, naming the cause, its line and the call it was reached from; the frames
below and the cause's own frame stay quiet.
The set of reasons already warned about is bounded (oldest forgotten first), so a program that
generates endless distinct breaks cannot grow memory. Silence them with
`warnings.filterwarnings("ignore", category=framejit.GraphBreakWarning)`.
"""
import threading
import warnings
from collections import OrderedDict

from ..errors import CALLEE_BREAK_PREFIX, CALLEE_BREAK_SUFFIX

MAX_REMEMBERED = 1024


class GraphBreakWarning(UserWarning):
    """framejit split a graph here (the code in between runs as plain Python)."""


class WarnedOnce:
    def __init__(self, limit=MAX_REMEMBERED):
        self.limit = limit
        self._seen = OrderedDict()
        self._lock = threading.Lock()

    def first_time(self, key):
        with self._lock:
            if key in self._seen:
                self._seen.move_to_end(key)
                return False
            self._seen[key] = None
            if len(self._seen) > self.limit:
                self._seen.popitem(last=False)
            return True

    def __len__(self):
        return len(self._seen)


WARNED = WarnedOnce()


def root_cause(info):
    """(the cause of a break, in words with its file and line; whether it lies in a called function)."""
    reason = info.reason
    if reason.startswith(CALLEE_BREAK_PREFIX) and reason.endswith(CALLEE_BREAK_SUFFIX):
        return reason[len(CALLEE_BREAK_PREFIX):-len(CALLEE_BREAK_SUFFIX)], True
    where = (info.where or "").strip().splitlines()
    return (f"{reason}, {where[0].strip()}" if where else reason), False


def warn_breaks(fn, result, stacklevel, warned=WARNED):
    for info in result.breaks:
        cause, inside_a_call = root_cause(info)
        if not warned.first_time(cause):
            continue
        if inside_a_call:
            message = (f"framejit: graph break inside the functions {fn.__qualname__} calls: {cause}\n"
                       f"reached from {fn.__qualname__}:\n{info.where}\n"
                       "    (each function on the way runs as plain Python around the call, through a compiled "
                       "wrapper; this is the one warning for this cause)")
        else:
            message = f"framejit: graph break in {fn.__qualname__}: {info}"
        warnings.warn(message, GraphBreakWarning, stacklevel=stacklevel)
