"""SideEffects: mutations of Python state visible outside the frame, replayed after the graph.

The translator never touches real Python objects. When the frame appends to an input list, assigns
into an input dict, sets an attribute on an input object, writes a global or a closure cell, the
change is made to the symbolic value and recorded here, in program order. Codegen replays each
recorded mutation exactly once after the graph has run (and before any graph-break instruction), so
the user sees the same state as after an eager call.
"""


class Effect:
    __slots__ = ("kind", "target", "key", "value")

    def __init__(self, kind, target, key=None, value=None):
        self.kind = kind          # "global" | "attr" | "cell" | "list" | "dict"
        self.target = target      # Source of the mutated object (global/cell: the Source of the slot)
        self.key = key            # global name / attribute name
        self.value = value        # the Value written (list/dict: the SeqValue/DictValue whose contents win)

    def __repr__(self):
        return f"Effect({self.kind}, {self.target}, {self.key!r})"


class SideEffects:
    def __init__(self):
        self.effects = []
        self.globals = {}          # name -> Value written in the frame (later loads see it)
        self.attrs = {}            # (id(obj), name) -> Value written
        self._mutated = set()      # id(SeqValue/DictValue) already recorded

    def mark(self):
        return (len(self.effects), dict(self.globals), dict(self.attrs), set(self._mutated))

    def rollback(self, mark):
        n, g, a, m = mark
        del self.effects[n:]
        self.globals, self.attrs, self._mutated = g, a, m

    def store_global(self, name, source, value):
        self.globals[name] = value
        self.effects.append(Effect("global", source, name, value))

    def store_attr(self, obj, obj_source, name, value):
        self.attrs[(id(obj), name)] = value
        self.effects.append(Effect("attr", obj_source, name, value))

    def store_cell(self, cell_source, value):
        self.effects.append(Effect("cell", cell_source, None, value))

    def mutate_container(self, value):
        """An input list/dict (a value with a Source) changed; its final contents are written back."""
        if value.source is None or id(value) in self._mutated:
            return
        self._mutated.add(id(value))
        kind = "list" if isinstance(value.items, list) else "dict"
        self.effects.append(Effect(kind, value.source, None, value))

    def __bool__(self):
        return bool(self.effects)
