"""A stored entry's checks on state outside its arguments, run again only when a watched word moved.

Why this exists (issue 24): an entry built from a stored conversion (runtime/warm_start.py) ran its checks
on module globals, registries, class lookups, function fields and buffers (persist/warm_guards.py's
`each_call` plan) on every call: 35 us for resnet, 95 us for GPT-2 more than the converted entry
(bench/stored_entry_overhead.py), which watches the same facts through machine words
(translate/guards/dict_guards.py). This module gives the stored entry the same words: the dict and class
version tags, the pointer fields of functions, cells and objects, and a buffer's TensorImpl words
(translate/guards/dict_versions.py, tensor_words.py, read and compared in one C call by framejit/_words.c).
The stored record has no Sources, only paths (text), so what each check depends on is found here by walking
its path on this call's objects:

  d[k], dict.__getitem__(d, k), k in d, d.keys(), len(d)   d's version tag
  module.attr                               the module's __dict__ version tag (attr in it)
  cls.attr, mro_lookup(cls, attr)           cls's version tag (type's own lookup, a plain attribute)
  obj.attr, obj.__dict__ (a plain object)   its type and __dict__ pointers, its class's tag, its __dict__'s
                                            tag (dict_guards.plain_lookup_dicts decides "plain")
  fn.__code__ / __defaults__ / __kwdefaults__, cell.cell_contents   the pointer field
  fn.__closure__ / __globals__, a code object's fields, tuple items     nothing (immutable)
  type(x)                                   x's type pointer
  anything read from a module the frame receives   nothing: the module watch pins it (the entry's tree
                                                   check, `_Pin`), as the converted entry's pins do

A path may also pass through an object an `is` check run on every call fixes (an *anchor*: the closure cell
`__fj_cl[0].cell_contents is <the decorated forward>`): from there it is walked on that object, as the
converted entry versions what it reads from an object whose identity another guard checks
(translate/guards/dict_guards.py). Anchors themselves are never versioned, and every per-call check runs
before the versioned block, so an anchor holds whenever the words are compared.

A check whose path reads an argument, or anything not in that table, stays a per-call check. The versioned
checks run in a block only when the stamp is missing or a word moved (the entry compares the stamp's words,
each read once however many checks share it, in one native call); the block reads the words first,
runs the checks, and stamps only if they passed, every class tag read is valid, and every tensor's
metadata is within its words (the converted entry's `restamp` rules). A tree re-check (another module, the
module watch's counter moved) drops the stamp.
"""
import ast
import ctypes
import types

import torch

from ..translate.guards import dict_guards, dict_versions
from ..translate.guards.dict_versions import (as_ints, cell_contents, dict_pointer, dict_version, function_field,
                                              gather, type_pointer, type_version)
from ..translate.guards.tensor_words import stamp_allowed, tensor_words
from ..translate.values.objects.attribute_sources import mro_lookup


class NotVersioned(Exception):
    """A check whose value no word watches: it runs on every call."""


_PINNED = object()          # marks a value read from the received modules (the module watch pins it)
_FUNCTION_FIELDS = ("__code__", "__defaults__", "__kwdefaults__")


def versionable(item, env, params, roots, anchors=None):
    """Can check `item` (a plan entry: [kind, path, value]) be watched by words? Tried on this call."""
    try:
        check_words(item, env, params, roots, anchors)
        return True
    except Exception:
        return False


def versioned_checks(items, env, params, roots):
    """(indices of the `items` words can watch, the anchors they may walk through: {path's ast dump: name of
    the fixed object}). Anchors are the `is` checks left per call; the others are tried again through them."""
    versioned = {i for i, item in enumerate(items) if versionable(item, env, params, roots)}
    anchors, anchored = {}, set()
    for i, item in enumerate(items):
        if i not in versioned and isinstance(item, list) and len(item) == 3 and item[0] == "is" and \
                isinstance(item[1], str) and f"__fj_fixed_{item[2]}" in env:
            anchors[ast.dump(ast.parse(item[1], mode="eval").body)] = f"__fj_fixed_{item[2]}"
            anchored.add(i)
    if anchors:
        versioned |= {i for i, item in enumerate(items) if i not in versioned and i not in anchored and
                      versionable(item, env, params, roots, anchors)}
    return frozenset(versioned), anchors


def check_words(item, env, params, roots, anchors=None):
    """[(reader, role, owner)] the words that keep `item` true; raises NotVersioned (or anything) if none do."""
    kind, path, value = item
    if kind not in ("is_const", "const", "type", "len", "keys", "tensor", "is", "same") or path is None:
        raise NotVersioned(kind)
    walk = _Walk(env, params, roots, anchors)
    obj, pinned = walk.eval(ast.parse(path, mode="eval").body)
    out = walk.words
    if kind == "tensor":
        if type(obj) is not torch.Tensor:
            raise NotVersioned("not a plain tensor")
        found = tensor_words(obj)
        if found is None:
            raise NotVersioned("a tensor no words watch")
        if not stamp_allowed([reader.value or 0 for reader, _ in found], list(enumerate(role for _, role in found))):
            raise NotVersioned("a tensor whose metadata reaches past its words (a view's autograd data)")
        out += [(reader, role, obj) for reader, role in found]
    elif pinned:
        pass
    elif kind == "type":
        walk.add(type_pointer(obj), "pointer", obj)
    elif kind == "len" or kind == "keys":
        if isinstance(obj, dict):
            walk.add(dict_version(obj), "dict", obj)
        elif type(obj) not in (tuple, str) or kind == "keys":
            raise NotVersioned("a mutable container")
    elif kind == "const" and type(obj) not in (int, str, bool, float):
        raise NotVersioned("a mutable constant")
    elif kind == "same":
        _described(walk, obj, value)
    return out


def _described(walk, obj, d):
    """Words keeping a warm_guards.Same verdict on `obj` (identity fixed by the path)."""
    if d[0] == "func":
        walk.add(function_field(obj, "__code__"), "pointer", obj)
    elif d[0] == "tuple":
        if type(obj) is not tuple or len(obj) != len(d[1]):
            raise NotVersioned("another tuple")
        for x, dx in zip(obj, d[1]):
            _described(walk, x, dx)
    elif d[0] not in ("single", "atom", "fixed", "code", "prop", "mutable"):
        raise NotVersioned(d[0])


class _Walk:
    """Evaluates a path as warm_guards' checks do, noting the words each read depends on."""

    def __init__(self, env, params, roots, anchors=None):
        self.env, self.params, self.roots, self.words = env, params, roots, []
        self.anchors = anchors or {}

    def add(self, reader, role, owner):
        if reader is None:
            raise NotVersioned("no word for this object")
        self.words.append((reader, role, owner))

    def eval(self, node):
        """(value, pinned)"""
        if self.anchors and not isinstance(node, (ast.Constant, ast.Name)):
            anchor = self.anchors.get(ast.dump(node))
            if anchor is not None:
                return self.env[anchor], False
        if isinstance(node, ast.Constant):
            return node.value, False
        if isinstance(node, ast.Name):
            if node.id in self.roots or node.id == "__fj_m":
                return self.params.get(node.id, self.env.get(node.id)), True
            if node.id in self.params:
                raise NotVersioned("an argument")
            return self.env[node.id], False
        if isinstance(node, ast.Attribute):
            return self.attr(node.value, node.attr)
        if isinstance(node, ast.Subscript):
            base, pinned = self.eval(node.value)
            key, _ = self.eval(node.slice)
            if not pinned:
                self.item(base)
            return base[key], pinned
        if isinstance(node, ast.Call):
            return self.call(node)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            value, pinned = self.eval(node.operand)
            return not value, pinned
        if isinstance(node, ast.BoolOp):
            values = [self.eval(v) for v in node.values]
            result = values[0][0]
            for v, _ in values[1:]:
                result = (result and v) if isinstance(node.op, ast.And) else (result or v)
            return result, all(p for _, p in values)
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            left, lp = self.eval(node.left)
            right, rp = self.eval(node.comparators[0])
            op = node.ops[0]
            if isinstance(op, (ast.In, ast.NotIn)):
                if not rp:
                    self.item(right)
                found = left in right
                return (found if isinstance(op, ast.In) else not found), lp and rp
            if isinstance(op, ast.Is):
                return left is right, lp and rp
            if isinstance(op, ast.IsNot):
                return left is not right, lp and rp
            if isinstance(op, (ast.Eq, ast.NotEq)) and all(type(x) in (int, str, bool, type(None))
                                                          for x in (left, right)):
                return (left == right) == isinstance(op, ast.Eq), lp and rp
        if isinstance(node, (ast.Set, ast.Tuple)):
            values = [self.eval(v) for v in node.elts]
            build = set if isinstance(node, ast.Set) else tuple
            return build(v for v, _ in values), all(p for _, p in values)
        raise NotVersioned(type(node).__name__)

    def item(self, base):
        """A read of an item / membership of `base`."""
        if isinstance(base, dict):
            self.add(dict_version(base), "dict", base)
        elif type(base) not in (tuple, str, frozenset, set, torch.Size):
            raise NotVersioned(f"an item of a {type(base).__name__}")
        elif type(base) is set:          # only the sets the path builds itself (of ids)
            pass

    def call(self, node):
        func = node.func
        if node.keywords:
            raise NotVersioned("keywords")
        if isinstance(func, ast.Name) and func.id == "getattr" and len(node.args) == 2 and \
                isinstance(node.args[1], ast.Constant):
            return self.attr(node.args[0], node.args[1].value)
        if isinstance(func, ast.Name) and func.id in ("type", "len", "tuple", "id") and len(node.args) == 1:
            obj, pinned = self.eval(node.args[0])
            if func.id == "type":
                if not pinned:
                    self.add(type_pointer(obj), "pointer", obj)
                return type(obj), pinned
            if func.id in ("len", "tuple") and not pinned:
                self.item(obj)
            return {"len": len, "tuple": tuple, "id": id}[func.id](obj), pinned
        if isinstance(func, ast.Attribute) and func.attr in ("__getitem__", "__contains__") and len(node.args) == 2:
            holder, hp = self.eval(func.value)
            d, dp = self.eval(node.args[0])
            key, _ = self.eval(node.args[1])
            if holder is not dict or not isinstance(d, dict):
                raise NotVersioned("a raw read of something other than a dict")
            if not dp:
                self.add(dict_version(d), "dict", d)
            return getattr(dict, func.attr)(d, key), dp
        if isinstance(func, ast.Name) and func.id.startswith("__fj_fixed_") and \
                self.env.get(func.id) is mro_lookup and 2 <= len(node.args) <= 3:
            cls, cp = self.eval(node.args[0])
            attr, _ = self.eval(node.args[1])
            after = self.eval(node.args[2])[0] if len(node.args) == 3 else None
            if not isinstance(cls, type):
                raise NotVersioned("a lookup on something other than a class")
            if not cp:
                self.add(type_version(cls), "class", cls)
            return mro_lookup(cls, attr, after), cp
        raise NotVersioned("a call")

    def attr(self, base_node, attr):
        holder, pinned = self.eval(base_node)
        value = getattr(holder, attr)
        if pinned:
            return value, True
        if type(holder) is types.ModuleType:
            if attr not in holder.__dict__:
                raise NotVersioned("a module attribute not in its dict")
            self.add(dict_version(holder.__dict__), "dict", holder.__dict__)
        elif isinstance(holder, types.FunctionType):
            if attr in _FUNCTION_FIELDS:
                self.add(function_field(holder, attr), "pointer", holder)
            elif attr not in ("__closure__", "__globals__"):
                raise NotVersioned(f"a function's {attr}")
        elif type(holder) is types.CellType and attr == "cell_contents":
            self.add(cell_contents(holder), "pointer", holder)
        elif type(holder) is types.CodeType:
            pass
        elif isinstance(holder, type):
            if not dict_guards._class_attr_is_plain(holder, attr):
                raise NotVersioned("a class attribute through a descriptor or a metaclass")
            self.add(type_pointer(holder), "pointer", holder)
            self.add(type_version(holder), "class", holder)
        elif attr == "__dict__":
            if not dict_guards.instance_dict_is_plain(holder):
                raise NotVersioned("an instance dict not read plainly")
            self._object(holder)
        else:
            extra = dict_guards.plain_lookup_dicts(holder, attr)
            if extra is None:
                raise NotVersioned("an attribute not read plainly")
            self._object(holder)
            inst = object.__getattribute__(holder, "__dict__")
            for d in [inst, *extra]:
                self.add(dict_version(d), "dict", d)
        return value, False

    def _object(self, obj):
        self.add(type_pointer(obj), "pointer", obj)
        self.add(dict_pointer(obj), "pointer", obj)
        self.add(type_version(type(obj)), "class", type(obj))


def words_unchanged(addresses, stamp):
    """The entry's inline test of a native stamp (`Stamp.words`): _words.unchanged, or False without it."""
    return dict_versions.native_unchanged is not None and dict_versions.native_unchanged(addresses, stamp)


class Stamp:
    """The words of the versioned checks when they last passed. `unchanged()` is the per-call test;
    `collect(params)` (before the checks) reads the words again for this call's objects, `commit()` (after
    they passed) keeps them; `drop()` when the module watch re-ran the tree checks. `words` is the native
    stamp as the entry compares it inline, [addresses, words] (b"", None when there is none): one C call, as
    a converted entry's words are."""

    __slots__ = ("items", "env", "roots", "anchors", "getter", "arg", "native", "stamp", "pending", "owners",
                 "words")

    def __init__(self, items, env, roots, anchors=None):
        self.items, self.env, self.roots, self.anchors = items, env, roots, anchors
        self.getter = self.arg = self.stamp = self.pending = self.owners = None
        self.native = False
        self.words = [b"", None]

    def unchanged(self):
        if self.native:
            return dict_versions.native_unchanged(self.arg, self.stamp)
        return self.stamp is not None and self.getter(self.arg) == self.stamp

    def drop(self):
        self.words[1] = None
        self.stamp = None
        self.native = False

    def collect(self, params):
        """Always True (the checks decide); when the words cannot be read this time, nothing is stamped."""
        self.pending = None
        try:
            words, seen = [], set()
            for item in self.items:
                for word in check_words(item, self.env, params, self.roots, self.anchors):
                    address = ctypes.addressof(word[0])
                    if address not in seen:      # checks on one module's globals share its dict's tag: read once
                        seen.add(address)
                        words.append(word)
            gathered = gather([reader for reader, _, _ in words])
            if gathered is None:
                return True
            read = gathered[0](gathered[1])
            values = as_ints(read)
            if any(values[i] == 0 for i, (_, role, _) in enumerate(words) if role == "class"):
                for _, role, owner in words:
                    if role == "class":
                        type_version(owner)          # a lookup gives the class a fresh tag: next call stamps
                return True
            if not stamp_allowed(values, [(i, role) for i, (_, role, _) in enumerate(words)
                                          if role in ("meta", "dims")]):
                return True
            self.pending = (gathered, read, [owner for _, _, owner in words])
        except Exception:
            self.pending = None
        return True

    def commit(self):
        if self.pending is not None:
            (self.getter, self.arg), self.stamp, self.owners = self.pending
            self.native = self.getter is dict_versions._native_gather
            self.words[1] = None
            if self.native:
                self.words[0] = self.arg
                self.words[1] = self.stamp
        self.pending = None
        return True
