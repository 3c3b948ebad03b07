"""SideEffects: mutations of Python state visible outside the frame, replayed after the graph.

The translator never touches real Python objects. When the frame appends to an input list, assigns
into an input dict, sets an attribute on an input object, writes a global or a closure cell, the
change is made to the symbolic value and recorded here, in program order. Codegen replays each
recorded mutation exactly once after the graph has run (and before any graph-break instruction), so
the user sees the same state as after an eager call.

Kinds of Effect:
  global    __fj_g[name] = value
  module_global  <another module's globals dict>[name] = value (a STORE_GLOBAL in a function of another
            module the frame inlined: torch.backends' flag managers, a library's module-level switch)
  cell      <cell>.cell_contents = value (a closure cell of the frame or of a function it inlined)
  attr      setattr(obj, name, value): objects whose own __setattr__ is part of the store (nn.Module)
  raw_attr  object.__setattr__(obj, name, value): plain Python objects, whose Python-level
            __setattr__ / property setter was already inlined (replaying through it would run it twice)
  delattr   delattr(obj, name): classes and other objects whose own __delattr__ is part of the delete
  raw_delattr  object.__delattr__(obj, name): plain Python objects (a Python __delattr__ / property
            deleter was already inlined)
  value_attr  setattr(<graph output>, name, value): a tensor the graph made (values/tensors/tensor_instance_attrs.py);
            its target is the TensorValue, not a Source
  list      obj[:] = [final items]       dict, set   obj.clear(); obj.update(final items)
Lists, dicts and sets are written back whole, once, at the position of their first mutation: the items are
the final ones, so later appends are included and nothing is replayed twice.

Attributes of real objects have one model, whatever spelling wrote them (`o.k = v`, setattr,
object.__setattr__, `o.__dict__[k] = v`, `vars(o).update(...)`, delattr, `del o.__dict__[k]`):
`attrs[(id(obj), name)]` is the Value the frame last stored, or DELETED, and `attr_log` lists
the names whose presence in an object's instance __dict__ the frame changed, in order (a key deleted and
stored again moves to the end of the dict, as in CPython). values/objects/attribute_model.py reads through both.
"""


import types

from .values.base import SetValue
from .values.objects.lookup_steps import DELETED


class Effect:
    __slots__ = ("kind", "target", "key", "value", "plain_module", "at")

    def __init__(self, kind, target, key=None, value=None, plain_module=False):
        self.kind = kind          # "global" | "attr" | "value_attr" | "raw_attr" | "delattr" | "raw_delattr" | "cell" | "list" | "dict" | "set" | "deque"
        self.target = target      # Source of the mutated object (global/cell: the Source of the slot)
        self.key = key            # global name / attribute name
        self.value = value        # the Value written (list/dict: the SeqValue/DictValue whose contents win)
        self.plain_module = plain_module   # attr: an nn.Module with nn.Module's own __setattr__
        self.at = 0               # how many graph nodes existed when it happened (convert/raising_graphs.py)

    def __repr__(self):
        return f"Effect({self.kind}, {self.target}, {self.key!r})"


class SideEffects:
    def __init__(self, position=lambda: 0):
        self.position = position   # the graph's node count now: where in the graph an effect happens
        self.effects = []
        self.globals = {}          # name -> Value written in the frame (later loads see it)
        self.module_globals = {}   # (id(globals dict), name) -> Value written into another module's globals
        self.attrs = {}            # (id(obj), name) -> Value written, or DELETED
        self.attr_log = []         # (id(obj), name, present after): the frame's edits of instance __dict__s
        self._mutated = set()      # id(SeqValue/DictValue) already recorded

    def _add(self, effect):
        effect.at = self.position()
        self.effects.append(effect)

    def mark(self):
        return (len(self.effects), dict(self.globals), dict(self.module_globals), dict(self.attrs),
                len(self.attr_log), set(self._mutated))

    def rollback(self, mark):
        n, g, mg, a, log, m = mark
        del self.effects[n:]
        del self.attr_log[log:]
        self.globals, self.module_globals, self.attrs, self._mutated = g, mg, a, m

    def store_global(self, name, source, value):
        self.globals[name] = value
        self._add(Effect("global", source, name, value))

    def store_module_global(self, namespace, name, value):
        """`name = value` run by a function whose globals are `namespace`, another module's dict (a
        real object that lives as long as its module: the replay names it directly)."""
        self.module_globals[(id(namespace), name)] = value
        self._add(Effect("module_global", namespace, name, value))

    def pending_module_global(self, namespace, name):
        """The Value the frame stored at `name` of another module's globals (by a function of that
        module or as an attribute of the module object), DELETED, or None."""
        return self.module_globals.get((id(namespace), name))

    def store_attr(self, obj, obj_source, name, value, raw=False, in_dict=True):
        """obj.name = value; `in_dict`: the store lands in obj's instance __dict__ (not a slot)."""
        self.attrs[(id(obj), name)] = value
        if isinstance(obj, types.ModuleType):    # the same slot as a global of that module
            self.module_globals[(id(obj.__dict__), name)] = value
        if in_dict:
            self.attr_log.append((id(obj), name, True))
        self._add(Effect("raw_attr" if raw else "attr", obj_source, name, value,
                                   plain_module=not raw and _has_module_setattr(obj)))

    def delete_attr(self, obj, obj_source, name, raw=False, in_dict=True):
        """del obj.name (the caller checked it exists)."""
        self.attrs[(id(obj), name)] = DELETED
        if isinstance(obj, types.ModuleType):
            self.module_globals[(id(obj.__dict__), name)] = DELETED
        if in_dict:
            self.attr_log.append((id(obj), name, False))
        self._add(Effect("raw_delattr" if raw else "delattr", obj_source, name))

    def dict_edits(self, obj):
        """[(name, present after)]: the frame's edits of obj's instance __dict__, in program order."""
        key = id(obj)
        return [(name, present) for k, name, present in self.attr_log if k == key]

    def pending_attr(self, obj, name):
        """The Value the frame stored at obj.name, DELETED, or None when the frame has not touched it."""
        if isinstance(obj, types.ModuleType):    # a module's attributes are its globals
            return self.module_globals.get((id(obj.__dict__), name))
        return self.attrs.get((id(obj), name))

    def store_value_attr(self, key_obj, target_value, name, value):
        """target_value.name = value where target_value (a tensor the graph makes) has no Source: replayed on
        the graph's output; `key_obj` (its graph node) files it for later reads."""
        self.attrs[(id(key_obj), name)] = value
        self._add(Effect("value_attr", target_value, name, value))

    def store_cell(self, cell_source, value):
        self._add(Effect("cell", cell_source, None, value))

    def mutate_container(self, value):
        """An input list/dict/set (a value with a Source) changed; its final contents are written back."""
        if value.source is None or id(value) in self._mutated:
            return
        self._mutated.add(id(value))
        kind = getattr(value, "effect_kind", None) or \
            ("dict" if isinstance(value.items, dict) else "set" if isinstance(value, SetValue) else "list")
        self._add(Effect(kind, value.source, None, value))

    def mutated(self, value):
        """Has the frame changed input container `value` so far (its write-back is pending)?"""
        return id(value) in self._mutated

    def __bool__(self):
        return bool(self.effects)


def _has_module_setattr(obj):
    """Is `obj` an nn.Module whose __setattr__ is nn.Module's (the module watch's wrapper counts)? For
    such a module, storing a plain value that its __dict__ already holds changes nothing."""
    import torch
    from .guards.module_watch import unwrapped
    return isinstance(obj, torch.nn.Module) and \
        unwrapped(type(obj).__setattr__) is unwrapped(torch.nn.Module.__setattr__)
