"""any / all / next / enumerate / zip / map / filter / iter given a lazy iterator (a generator, an itertools
kind: values/iterators/): they consume or wrap it lazily, item by item, as Python does; given anything else
they stay the builtins' own lookasides (lookasides/builtins_table.py), which this wraps.
"""
from ..dispatch import LOOKASIDES
from ..values.iterators import generators


def _wrap(builtin, lazy_impl, lazy_positions):
    """Use lazy_impl when an argument at lazy_positions is a LazyIterator, else the existing lookaside."""
    eager_impl = LOOKASIDES[builtin]

    def impl(tx, args, kwargs):
        positions = range(len(args)) if lazy_positions is None else lazy_positions
        if any(i < len(args) and isinstance(args[i], generators.LazyIterator) for i in positions) and not \
                (builtin is iter and len(args) != 1):
            return lazy_impl(tx, args, kwargs)
        return eager_impl(tx, args, kwargs)
    LOOKASIDES[builtin] = impl


_wrap(any, generators.lazy_any_all(True), (0,))
_wrap(all, generators.lazy_any_all(False), (0,))
_wrap(next, generators.lazy_next, (0,))
_wrap(enumerate, generators.lazy_enumerate, (0,))
_wrap(zip, generators.lazy_zip, None)
_wrap(map, generators.lazy_map, range(1, 64))
_wrap(filter, generators.lazy_filter, (1,))
_wrap(iter, generators.lazy_iter, (0,))
