"""Automatic dynamic: what a compiled function has seen change between calls, per code and source.

Under `dynamic=None` (the default) a function starts static. When a call misses because a size of an
input changed (`x.shape[1]` was 16, now 17), that dimension is remembered here by the input's source
name, and the recompile makes it symbolic, so the sizes after hit that entry. The same holds for a
Python int the graph reads (a step counter). One memory per cached code (runtime/cache.py's CodeState),
so every compiled function sharing the code learns together; `framejit.reset()` forgets it with the cache.
"""


class ShapeMemory:
    __slots__ = ("dims", "numbers", "static_numbers", "static_tensors")

    def __init__(self):
        self.dims = {}          # source name -> set of dims seen to change
        self.numbers = set()    # source names of ints seen to change
        self.static_numbers = set()   # floats a conversion had to decide on (translate/graph/float_inputs.py)
        # inputs sharing a storage with another input (`f(w, w.t())`): their fakes must share one fake
        # storage, which only static fakes can (translate/graph/builder.py), so they stay static
        self.static_tensors = set()

    def __bool__(self):
        return bool(self.dims or self.numbers)

    def note_sizes(self, name, before, after):
        """Dims whose size differs between shapes `before` and `after` (same rank): remembered, and
        returned (empty when the rank changed: that stays a static recompile)."""
        if len(before) != len(after):
            return ()
        changed = tuple(i for i, (a, b) in enumerate(zip(before, after)) if a != b)
        if changed:
            self.dims.setdefault(name, set()).update(changed)
        return changed

    def note_number(self, name):
        self.numbers.add(name)

    def note_static_number(self, name):
        self.static_numbers.add(name)

    def note_static_tensor(self, name):
        self.static_tensors.add(name)

    def dims_of(self, name):
        return self.dims.get(name, ())
