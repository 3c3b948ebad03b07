"""SideEffects: mutations of Python state visible outside the frame, replayed after the graph.

The translator never touches real Python objects. When the frame appends to an input list, assigns
into an input dict, sets an attribute on an input object, writes a global or a closure cell, the
change is made to the symbolic value and recorded here, in program order. Codegen replays each
recorded mutation exactly once after the graph has run (and before any graph-break instruction), so
the user sees the same state as after an eager call.

Kinds of Effect:
  global    __fj_g[name] = value
  cell      <cell>.cell_contents = value (a closure cell of the frame or of a function it inlined)
  attr      setattr(obj, name, value): objects whose own __setattr__ is part of the store (nn.Module)
  raw_attr  object.__setattr__(obj, name, value): plain Python objects, whose Python-level
            __setattr__ / property setter was already inlined (replaying through it would run it twice)
  list      obj[:] = [final items]       dict, set   obj.clear(); obj.update(final items)
Lists, dicts and sets are written back whole, once, at the position of their first mutation: the items are
the final ones, so later appends are included and nothing is replayed twice.
"""


from .values import SetValue


class Effect:
    __slots__ = ("kind", "target", "key", "value", "plain_module")

    def __init__(self, kind, target, key=None, value=None, plain_module=False):
        self.kind = kind          # "global" | "attr" | "raw_attr" | "cell" | "list" | "dict" | "set"
        self.target = target      # Source of the mutated object (global/cell: the Source of the slot)
        self.key = key            # global name / attribute name
        self.value = value        # the Value written (list/dict: the SeqValue/DictValue whose contents win)
        self.plain_module = plain_module   # attr: an nn.Module with nn.Module's own __setattr__

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

    def store_attr(self, obj, obj_source, name, value, raw=False):
        self.attrs[(id(obj), name)] = value
        self.effects.append(Effect("raw_attr" if raw else "attr", obj_source, name, value,
                                   plain_module=not raw and _has_module_setattr(obj)))

    def store_cell(self, cell_source, value):
        self.effects.append(Effect("cell", cell_source, None, value))

    def mutate_container(self, value):
        """An input list/dict/set (a value with a Source) changed; its final contents are written back."""
        if value.source is None or id(value) in self._mutated:
            return
        self._mutated.add(id(value))
        kind = "dict" if isinstance(value.items, dict) else "set" if isinstance(value, SetValue) else "list"
        self.effects.append(Effect(kind, value.source, None, value))

    def __bool__(self):
        return bool(self.effects)


def _has_module_setattr(obj):
    """Is `obj` an nn.Module whose __setattr__ is nn.Module's (the module watch's wrapper counts)? For
    such a module, storing a plain value that its __dict__ already holds changes nothing."""
    import torch
    from .module_watch import unwrapped
    return isinstance(obj, torch.nn.Module) and \
        unwrapped(type(obj).__setattr__) is unwrapped(torch.nn.Module.__setattr__)
