"""Guards implied by unchanged dicts and object fields: library state checked through one tuple of words.

Why this exists: after the module watch (guards/module_guards.py) the guards left on a transformers forward
are mostly about state outside the module tree: other modules' globals
(`modeling_utils.is_torchdynamo_compiling is <function>`), registries (`ALL_MASK_ATTENTION_FUNCTIONS
._global_mapping['sdpa'] is <function>`, the keys of that dict), config attributes
(`config.use_cache is False`), the cells and defaults of library decorators. A guard is *versioned*
when the value it checks is a function of state that one machine word each can watch:

  module globals / a registry dict        d[key], dict.__getitem__(d, key), `key in d`, d.keys()
  an attribute of a module object         module.__dict__[attr] (present at translation)
  an attribute of a plain Python object   its instance __dict__ and its class (version tag), when
                                          attribute lookup is object's own (or a DICT_DETERMINED_LOOKUPS
                                          override) and `attr` is not a data descriptor (property, slot)
  an attribute of a class                 the class (version tag): functions, plain values; its metaclass
                                          `type` or abc.ABCMeta (whose lookup is type's own)
  a cell's contents, a function's         the pointer field in the object
  __code__ / __defaults__ / __kwdefaults__
  items of a tuple, a function's __closure__ / __globals__ (immutable once made)

starting from an object named directly (FixedObjectSource), a global of the frame, or an object whose
identity another guard checks. The kinds covered are ID_MATCH, immutable CONST_MATCH, TYPE_MATCH (a
heap type also watches the object's type pointer), tuple LEN_MATCH, DICT_KEYS and identity facts
between such values. Tensors and the frame's own closure cells are never versioned.

The entry then reads, on every call, a tuple of words (guards/dict_versions.py, one C call): the version tag
of each of those dicts, the version tag of each class involved (it moves when the class or a base class
changes), the pointer fields, and for each object whose attributes are versioned its type pointer and
__dict__ pointer (neither `obj.__class__ = ...` nor `obj.__dict__ = ...` touches a dict):

    ((__fj_s := read_words()) == stamp[0] or __fj_blockN(...))   # the block: guards, then restamp

The versioned guards (which include `type(obj) is T` and `obj.__dict__ is D` for those objects) run
only when a word moved: the first call, or after a change anywhere in what the words watch. `restamp`
re-checks the structural facts above (attribute lookup still plain, no data descriptor appeared,
every class tag valid) before it records the words, so a stamp always describes a state in which the
versioned guards passed and their values were functions of what the words watch. Where the words
would cost as much as the guards (`worth_it`), the guards stay plain.
"""
import abc
import builtins
import types

import torch

from . import dict_versions
from ..source import DictKeySource
from .dict_versions import ENABLED, as_ints, cell_contents, dict_pointer, dict_version, function_field, gather, \
    type_pointer, type_version
from ..values.modules.module_values import HookStateSource, ModuleAttrSource
from .tensor_words import stamp_allowed, tensor_words
from ..values.objects.attribute_model import DICT_DETERMINED_LOOKUPS
from ..values.objects.attribute_sources import ClassLookupSource, InstanceHasSource, PresenceSource, mro_lookup
from ..source import AttrSource, FixedObjectSource, FIXED_OBJECTS, GlobalSource, ItemSource, NamespaceSource, Source

HEAPTYPE = 1 << 9
_MISSING = object()
_READONLY_FUNCTION_ATTRS = ("__closure__", "__globals__")
_IMMUTABLE = (tuple, str, bytes, frozenset, int, float, bool, type(None), torch.Size)
_PLAIN_CLASS_ATTR_TYPES = (types.FunctionType, staticmethod, property, types.BuiltinFunctionType)


def _builtins_dict(f_globals):
    b = f_globals.get("__builtins__", builtins)
    return b if isinstance(b, dict) else b.__dict__


def _is_heap(t):
    return bool(t.__flags__ & HEAPTYPE)


def _class_lookup(t, attr):
    """The object `attr` names on t's MRO, or _MISSING."""
    for k in t.__mro__:
        found = k.__dict__.get(attr, _MISSING)
        if found is not _MISSING:
            return found
    return _MISSING


def is_data_descriptor(found):
    """Does a class attribute decide `obj.attr` before the instance __dict__ (property, slot...)?"""
    t = type(found)
    return hasattr(t, "__get__") and (hasattr(t, "__set__") or hasattr(t, "__delete__"))


def plain_lookup_dicts(obj, attr):
    """If `obj.attr` is a function of obj's instance __dict__, its classes' __dict__s and a few more
    dicts, the list of those extra dicts; else None."""
    resolved = _resolved_name(obj, attr)
    if resolved is None:
        return None
    attr, extra = resolved
    t = type(obj)
    try:
        inst = object.__getattribute__(obj, "__dict__")
    except AttributeError:
        return None
    if type(inst) is not dict:
        return None
    found = _class_lookup(t, attr)
    if found is not _MISSING and is_data_descriptor(found):
        return None
    if attr in inst or (found is not _MISSING and not hasattr(type(found), "__get__")):
        return extra
    return None


def _resolved_name(obj, attr):
    """(the name object.__getattribute__ finally looks up for `obj.attr`, the extra dicts choosing it)
    when obj's lookup is object's own or a DICT_DETERMINED_LOOKUPS override; else None."""
    t = type(obj)
    if isinstance(obj, (torch.Tensor, type, types.ModuleType)) or not _is_heap(t):
        return None
    extra = []
    if t.__getattribute__ is not object.__getattribute__:
        for k in t.__mro__:
            override = k.__dict__.get("__getattribute__")
            if override is None or override is object.__getattribute__:
                continue
            lookup = DICT_DETERMINED_LOOKUPS.get((getattr(override, "__module__", None),
                                                  getattr(override, "__qualname__", None)))
            answer = lookup(obj, attr) if lookup is not None else None
            if answer is None:
                return None
            attr, dicts = answer
            extra += dicts
    return attr, extra


# metaclasses whose class-attribute lookup is type's own (no __getattribute__/__getattr__ of theirs,
# no data descriptors a class attribute could be shadowed by): abc.ABCMeta, behind every ABC
_PLAIN_METACLASSES = (type, abc.ABCMeta)


def _class_attr_is_plain(cls, attr):
    meta = type(cls)
    if meta not in _PLAIN_METACLASSES or any(attr in k.__dict__ for k in meta.__mro__):
        return False
    found = _class_lookup(cls, attr)
    return found is not _MISSING and (not hasattr(type(found), "__get__") or
                                      isinstance(found, _PLAIN_CLASS_ATTR_TYPES))


def presence_dicts(obj, attr):
    """If hasattr(obj, attr) is a function of obj's instance __dict__, its classes' __dict__s and a few
    more dicts (object's own lookup or a DICT_DETERMINED_LOOKUPS override, no __getattr__, no data
    descriptor -- a property could raise -- under that name), the list of those extra dicts; else None."""
    resolved = _resolved_name(obj, attr)
    if resolved is None:
        return None
    attr, extra = resolved
    t = type(obj)
    if _class_lookup(t, "__getattr__") is not _MISSING or not instance_dict_is_plain(obj):
        return None
    found = _class_lookup(t, attr)
    return extra if found is _MISSING or not is_data_descriptor(found) else None


def presence_is_plain(obj, attr):
    return presence_dicts(obj, attr) is not None


def instance_dict_is_plain(obj):
    """Is `obj.__dict__` the instance dict itself (the class's `__dict__` is the usual getset descriptor)?"""
    t = type(obj)
    if isinstance(obj, (torch.Tensor, type, types.ModuleType)):
        return False
    try:
        inst = object.__getattribute__(obj, "__dict__")
    except AttributeError:
        return False
    return type(inst) is dict and type(_class_lookup(t, "__dict__")) in (types.GetSetDescriptorType,
                                                                         types.MemberDescriptorType)


def class_presence_is_plain(cls, attr):
    """Is hasattr(cls, attr) a function of the __dict__s on cls's MRO (type's own lookup, and whatever
    holds the name answers without running code)?"""
    meta = type(cls)
    if meta not in _PLAIN_METACLASSES or any(attr in k.__dict__ for k in meta.__mro__):
        return False
    found = _class_lookup(cls, attr)
    return found is _MISSING or not hasattr(type(found), "__get__") or \
        isinstance(found, _PLAIN_CLASS_ATTR_TYPES + (classmethod,))


_STILL_PLAIN = {
    "class": _class_attr_is_plain,
    "instance": lambda obj, attr: plain_lookup_dicts(obj, attr) is not None,
    "presence": presence_is_plain,
    "class presence": class_presence_is_plain,
    "dict": lambda obj, attr: instance_dict_is_plain(obj),
}

# Guard Sources that make a call each time they are evaluated count as this many steps of a path when
# deciding whether version words pay off (VersionPlan.worth_it): mro_lookup is a Python function walking
# an MRO (~10 steps' time), hasattr a builtin (~3)
_CALL_STEPS = {ClassLookupSource: 10, PresenceSource: 3}


def _path_steps(s):
    """The sources read on the way to `s` (a directly named object is no read)."""
    steps = []
    while isinstance(s, Source) and not isinstance(s, FixedObjectSource):
        steps.append(s)
        s = getattr(s, "base", None)
    return steps


class VersionPlan:
    """Which guards of one conversion are versioned, and what they rely on (`watched`)."""

    def __init__(self, guards, objects, identity_watched=lambda source: False, f_globals=None, answers=None):
        """`answers`: an earlier plan over the same objects, identity test and globals, whose answers about
        Sources (their values, what fixes them, the words met) this one shares instead of working them out
        again: they depend on those three and the live objects only, not on which guards are planned."""
        self.f_globals = f_globals            # the frame's globals: `__fj_g` in generated code
        self.objects = objects                # Source -> object, from every ID_MATCH guard
        self.identity_watched = identity_watched  # can the object at a Source change only via the module watch?
        self.pinned = {}                      # such Source -> object: needs an ID_MATCH under the watch
        # what the covered guards rely on, by key (kind, id...): kind "dict", "class", "field" and
        # "object" -> (the object, its word readers); "plain" -> (the object, (attr, is_class)), a lookup
        # re-checked before each restamp
        self.watched = {}
        self._known = {}                      # every key met while planning -> its entry, or None
        self._roles = {}                      # id(tensor) -> role of each of its words (tensor_words)
        self._determined = {}
        self._values = {}
        if answers is not None:
            self._known, self._roles = answers._known, answers._roles
            self._determined, self._values = answers._determined, answers._values
        self.covered = []
        if not ENABLED:
            return
        for g in guards:
            deps = self.cover(g)
            if deps:
                self.covered.append(g)
                for kind, key in deps:
                    if kind == "pin":
                        self.pinned[key] = self.value(key)
                    else:
                        self.watched.setdefault((kind, key), self._known[(kind, key)])
        if not self.worth_it():
            self.covered, self.pinned, self.watched = [], {}, {}

    def worth_it(self):
        """Is one tuple of words cheaper than the guards it stands for? A word costs about what one step
        of a guard's path does (a global, an attribute, an item: each read once, shared prefixes once),
        plus about two for reading and comparing the tuple: not for a function reading a global or
        two, but 57 guards on paths three or four steps long are worth 57 words."""
        steps = set()
        for g in self.covered:
            steps.update(_path_steps(g.source))
        calls = sum(_CALL_STEPS.get(type(x), 1) - 1 for x in steps)
        tensor_checks = 6 * sum(g.kind == "TENSOR_MATCH" for g in self.covered) + calls
        words = sum(4 if kind == "tensor" else len(readers)
                    for (kind, _), (_, readers) in self.watched.items() if kind != "plain")
        return len(steps) + tensor_checks > words + 2

    # ---- what a Source's value depends on ---------------------------------------------------------
    def value(self, s):
        """The object at `s` now (at planning, i.e. as translation saw it), or _MISSING."""
        if s in self._values:
            return self._values[s]
        v = _MISSING
        try:
            if s in self.objects:
                v = self.objects[s]
            elif isinstance(s, FixedObjectSource):
                v = FIXED_OBJECTS[s.key]
            elif isinstance(s, GlobalSource):
                v = self.f_globals[s.global_name]
            elif isinstance(s, NamespaceSource):
                v = self.f_globals if not s.builtins else _builtins_dict(self.f_globals)
            elif isinstance(s, ClassLookupSource):
                after = self.value(s.after) if s.after is not None else None
                v = mro_lookup(self.value(s.cls), s.attr, after)
            elif isinstance(s, PresenceSource):
                v = hasattr(self.value(s.base), s.attr)
            elif isinstance(s, InstanceHasSource):
                v = s.attr in self.value(s.base).__dict__
            elif isinstance(s, DictKeySource) and s.lookup:
                v = dict.__getitem__(self.value(s.base), s.key)
            elif isinstance(s, ItemSource):
                v = self.value(s.base)[s.index]
            elif isinstance(s, AttrSource):
                v = getattr(self.value(s.base), s.attr)
        except Exception:
            v = _MISSING
        self._values[s] = v
        return v

    def determined(self, s):
        """Frozenset of the watch keys (see `watched`) that fix which object is at `s` (empty: fixed by a
        guard rendered elsewhere, or named directly), or None when it is not fixed that way."""
        if s in self._determined:
            return self._determined[s]
        self._determined[s] = None                        # no cycles through a half-built answer
        if isinstance(s, (FixedObjectSource, NamespaceSource)):
            result = frozenset()
        elif s in self.objects:
            structural = self.structural(s)
            result = frozenset() if structural is None else structural
        elif self.identity_watched(s) and self.value(s) is not _MISSING:
            result = frozenset({("pin", s)})              # fixed once its identity is guarded too
        else:
            result = self.structural(s)
        self._determined[s] = result
        return result

    def keeps(self, s):
        """Do the words (with pins: the module watch) fix which object is at `s`, as translation saw it?"""
        return bool(self.determined(s)) and self.value(s) is not _MISSING

    def structural(self, s):
        """The watch keys that decide the object at `s`, given its base is fixed, or None."""
        if isinstance(s, GlobalSource):
            ok = type(self.f_globals) is dict and s.global_name in self.f_globals
            return frozenset({self._dict(self.f_globals)}) if ok else None
        if isinstance(s, (ClassLookupSource, PresenceSource, InstanceHasSource)):
            return self.lookup_facts(s)
        if isinstance(s, (ModuleAttrSource, HookStateSource)) or not isinstance(s, (AttrSource, ItemSource,
                                                                                    DictKeySource)):
            return None
        base = self.determined(s.base)
        if base is None:
            return None
        holder = self.value(s.base)
        if holder is _MISSING or self.value(s) is _MISSING:
            return None
        if isinstance(s, DictKeySource):
            return base | {self._dict(holder)} if isinstance(holder, dict) else None
        if isinstance(s, ItemSource):
            if type(holder) is dict:
                return base | {self._dict(holder)}
            return base if type(holder) in (tuple, torch.Size) else None
        attr = s.attr
        if isinstance(holder, types.FunctionType):
            if attr in _READONLY_FUNCTION_ATTRS:
                return base
            field = self._field(holder, attr, function_field(holder, attr))
            return None if field is None else base | {field}
        if type(holder) is types.CellType and attr == "cell_contents":
            field = self._field(holder, attr, cell_contents(holder))
            return None if field is None else base | {field}
        if type(holder) is types.ModuleType:
            obj = self._object(holder, with_dict=False)
            if attr not in holder.__dict__ or obj is None:
                return None
            return base | {obj, self._dict(holder.__dict__)}
        if isinstance(holder, type):
            obj = self._object(holder, with_dict=False)
            version = self._class(holder)
            if not _class_attr_is_plain(holder, attr) or obj is None or version is None:
                return None
            return base | {obj, version, self._plain(holder, attr, "class")}
        if attr == "__dict__":                       # the instance dict itself
            obj = self._object(holder, with_dict=True)
            version = self._class(type(holder))
            if not instance_dict_is_plain(holder) or obj is None or version is None:
                return None
            return base | {obj, version, self._plain(holder, attr, "dict")}
        extra = plain_lookup_dicts(holder, attr)
        if extra is None:
            return None
        obj = self._object(holder, with_dict=True)
        version = self._class(type(holder))
        if obj is None or version is None:
            return None
        inst = object.__getattribute__(holder, "__dict__")
        return base | {obj, version, self._plain(holder, attr, "instance")} | {self._dict(d) for d in [inst] + extra}

    def lookup_facts(self, s):
        """The watch keys deciding a class lookup, hasattr(), or `attr in obj.__dict__`, or None."""
        base = self.determined(s.cls if isinstance(s, ClassLookupSource) else s.base)
        if base is None or self.value(s) is _MISSING:
            return None
        if isinstance(s, ClassLookupSource):      # the MRO's dicts: the class's version tag covers them all
            after = frozenset() if s.after is None else self.determined(s.after)
            cls = self.value(s.cls)
            version = self._class(cls) if isinstance(cls, type) else None
            return None if after is None or version is None else base | after | {version}
        holder = self.value(s.base)
        attr = s.attr
        if type(holder) is types.ModuleType:
            obj = self._object(holder, with_dict=False)
            if obj is None or "__getattr__" in holder.__dict__ and isinstance(s, PresenceSource):
                return None
            return base | {obj, self._dict(holder.__dict__)}
        if isinstance(holder, type):
            obj = self._object(holder, with_dict=False)
            version = self._class(holder)
            if obj is None or version is None:
                return None
            if isinstance(s, PresenceSource):
                if not class_presence_is_plain(holder, attr):
                    return None
                return base | {obj, version, self._plain(holder, attr, "class presence")}
            return base | {obj, version} if type(holder) in _PLAIN_METACLASSES else None
        extra = presence_dicts(holder, attr) if isinstance(s, PresenceSource) else \
            ([] if instance_dict_is_plain(holder) else None)
        obj = self._object(holder, with_dict=True)
        version = self._class(type(holder))
        if extra is None or obj is None or version is None:
            return None
        inst = object.__getattribute__(holder, "__dict__")
        kind = "presence" if isinstance(s, PresenceSource) else "dict"
        return base | {obj, version, self._plain(holder, attr, kind)} | {self._dict(d) for d in [inst] + extra}

    def _watch(self, key, make):
        """`key` if what it watches can be watched (its entry made once by `make`), else None."""
        if key not in self._known:
            self._known[key] = make()
        return key if self._known[key] is not None else None

    def _dict(self, d):
        return self._watch(("dict", id(d)), lambda: (d, [dict_version(d)]))

    def _field(self, obj, attr, reader):
        """A pointer field of a fixed object (a cell's contents, a function's __code__...): a word."""
        return self._watch(("field", (id(obj), attr)), lambda: (obj, [reader]) if reader is not None else None)

    def _class(self, cls):
        return self._watch(("class", id(cls)),
                           lambda: (cls, [reader]) if (reader := type_version(cls)) is not None else None)

    def _tensor(self, t):
        def make():
            found = tensor_words(t)
            if found is None:
                return None
            self._roles[id(t)] = [role for _, role in found]
            return t, [reader for reader, _ in found]
        return self._watch(("tensor", id(t)), make)

    def _plain(self, obj, attr, kind):
        """A lookup re-checked before each restamp: `kind` names the check (_STILL_PLAIN)."""
        return self._watch(("plain", (id(obj), attr, kind)), lambda: (obj, (attr, kind)))

    def _object(self, obj, with_dict):
        """Watch obj's type pointer (and __dict__ pointer): the words that `obj.__class__ = ...` and
        `obj.__dict__ = ...` change."""
        def make():
            readers = [type_pointer(obj)] + ([dict_pointer(obj)] if with_dict else [])
            return (obj, readers) if all(r is not None for r in readers) else None
        return self._watch(("object", (id(obj), with_dict)), make)

    # ---- which guards are versioned -----------------------------------------------------------------
    def cover(self, g):
        s = g.source
        if s is None:
            return None
        deps = None
        if g.kind == "ID_MATCH":
            deps = self.structural(s)
        elif g.kind == "TYPE_MATCH":
            deps = self.determined(s)
            if deps is not None and _is_heap(g.expected):     # `obj.__class__ = ...`: watch its type pointer
                obj = self.value(s)
                word = self._object(obj, with_dict=False) if obj is not _MISSING else None
                deps = None if word is None else deps | {word}
        elif g.kind == "TENSOR_MATCH":                    # a buffer: its TensorImpl's words (guards/tensor_words.py)
            deps = self.determined(s)
            t = self.value(s)
            if deps and type(t) is torch.Tensor:
                word = self._tensor(t)
                deps = None if word is None else deps | {word}
            else:
                deps = None
        elif g.kind == "LEN_MATCH":
            if type(self.value(s)) in _IMMUTABLE:
                deps = self.determined(s)
        elif g.kind == "DICT_KEYS":
            d = self.determined(s)
            holder = self.value(s)
            if d is not None and type(holder) is dict:
                deps = d | {self._dict(holder)}
        elif g.kind == "CONST_MATCH" and type(g.expected) in _IMMUTABLE:
            deps = self._const_deps(s)
        return deps

    def _const_deps(self, s):
        if isinstance(s, DictKeySource) and not s.lookup:
            base = self.determined(s.base)
            holder = self.value(s.base)
            return base | {self._dict(holder)} if base is not None and isinstance(holder, dict) else None
        parts = getattr(s, "parts", None)
        members = getattr(s, "members", None)
        facts = parts if isinstance(parts, tuple) and hasattr(s, "template") else \
            members if isinstance(members, list) else None
        if facts is not None:                             # identity facts between fixed values
            found = [self.determined(p) if isinstance(p, Source) else None for p in facts]
            return None if not facts or any(f is None for f in found) else frozenset().union(*found)
        if type(self.value(s)) in _IMMUTABLE:
            return self.determined(s)
        return None

    # ---- the fast check ----------------------------------------------------------------------------
    def words(self):
        """(reader, kind) of every word the entry compares on each call, in order; a tensor's words
        have their tensor_words role ("meta", "dims", "word") as kind."""
        out = []
        for (kind, key), (_, readers) in self.watched.items():
            if kind == "plain":
                continue
            kinds = self._roles[key] if kind == "tensor" else [kind] * len(readers)
            out += list(zip(readers, kinds))
        return out

    def restamp(self, stamp, class_positions, limits=()):
        """Record the words read before the versioned guards passed, if every class tag in them is valid
        and the lookups the guards rely on are still plain (else the next call checks everything again)."""
        classes = [cls for (kind, _), (cls, _) in self.watched.items() if kind == "class"]
        lookups = [(obj, how) for (kind, _), (obj, how) in self.watched.items() if kind == "plain"]

        def record(read):
            words = as_ints(read)
            if not stamp_allowed(words, limits):          # a tensor's metadata reaches past its words
                return True
            if any(words[i] == 0 for i in class_positions):
                for cls in classes:
                    type_version(cls)                     # a lookup gives the class a fresh tag
                return True
            for obj, (attr, kind) in lookups:
                if not _STILL_PLAIN[kind](obj, attr):
                    return True
            stamp[0] = read
            return True
        return record

    def requirement_guards(self, bind):
        """The checks behind the type and __dict__ pointer words, for the versioned block."""
        terms = []
        for (kind, key), (obj, _) in self.watched.items():
            if kind == "object":
                terms.append(f"type({bind(obj)}) is {bind(type(obj))}")
                if key[1]:                                # with its __dict__
                    inst = object.__getattribute__(obj, "__dict__")
                    terms.append(f"{bind(object.__getattribute__)}({bind(obj)}, '__dict__') is {bind(inst)}")
        return terms

    def render(self, bind, block_terms, out_of_line=lambda expr, internal=(): f"({expr})"):
        """The per-call check around the versioned guards' terms (compiled out of line: see
        module_guards.ModulePlan.render)."""
        if not self.covered:
            return ""
        stamp = [None]
        words = self.words()
        bind(tuple(self.watched.values()))                # what the words point into lives as long as the entry
        gathered = gather([reader for reader, _ in words])
        if gathered is not None:                          # one C call for every word
            read = f"{bind(gathered[0])}({bind(gathered[1])})"
        else:
            read = "(" + "".join(f"{bind(reader)}.value, " for reader, _ in words) + ")"
        classes = [i for i, (_, kind) in enumerate(words) if kind == "class"]
        limits = [(i, kind) for i, (_, kind) in enumerate(words) if kind in ("meta", "dims")]
        block = " and ".join(self.requirement_guards(bind) + list(block_terms))
        block = f"{block} and {bind(self.restamp(stamp, classes, limits))}(__fj_s)"
        if gathered is not None and gathered[0] is dict_versions._native_gather:   # native_unchanged too
            # compare in place (nothing allocated per call); the block reads the words before its guards
            check = f"{bind(dict_versions.native_unchanged)}({bind(gathered[1])}, {bind(stamp)}[0])"
            return f"({check} or {out_of_line(f'(__fj_s := {read}) is not None and {block}', ('__fj_m',))})"
        return f"((__fj_s := {read}) == {bind(stamp)}[0] or {out_of_line(block, ('__fj_m', '__fj_s'))})"
