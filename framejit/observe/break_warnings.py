"""One warning per distinct graph break, ever: users see each break once, not on every recompile.

A graph break is not an error (the code runs correctly, as plain Python there) but it costs speed, so
each distinct (reason, source line) is reported once with a GraphBreakWarning that points at the line.
The set of reasons already warned about is bounded (oldest forgotten first), so a program that
generates endless distinct breaks cannot grow memory. Silence them with
`warnings.filterwarnings("ignore", category=framejit.GraphBreakWarning)`.
"""
import threading
import warnings
from collections import OrderedDict

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


def warn_breaks(fn, result, stacklevel, warned=WARNED):
    for info in result.breaks:
        if warned.first_time((info.kind, info.reason, info.where)):
            warnings.warn(f"framejit: graph break in {fn.__qualname__}: {info}", GraphBreakWarning,
                          stacklevel=stacklevel)
