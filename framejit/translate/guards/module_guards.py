"""Cheap guards for big modules: module state checked through one counter, members read from a cache.

Why this exists: a transformer's captured forward depends on hundreds of facts about its module tree
(`self.h._modules['3'] is <Block>`, its hook tables are empty, `attn.training is False`, the weight's
dtype/shape/requires_grad...). Evaluated one by one through nn.Module attribute chains they cost
hundreds of microseconds per call. Most of them are about state that only changes through nn.Module's
and Parameter's own entry points, which guards/module_watch.py wraps to bump one counter (EPOCH).

A guard is *covered* when its Source is a path of module attributes (ModuleAttrSource) from a module
whose identity is itself guarded, and the fact cannot change without one of those entry points:

  ID_MATCH / TYPE_MATCH / immutable CONST_MATCH  on such a path (setattr/delattr/register_* rebind it)
  LEN_MATCH / items of a tuple held on such a path (tuples are immutable)
  TENSOR_MATCH of a Parameter on such a path       (data/requires_grad setters, in-place metadata ops)
  DICT_KEYS of a module's _modules/_parameters/_buffers table, and its hook tables (HookStateSource)
  hasattr(module, name) (object_attrs.PresenceSource: a getattr default, hasattr on a module)
  facts (guards/identity.py's `a is b`) relating such paths only

Guards on what is read from an immutable object whose identity is guarded (a code object's
co_varnames, items of a tuple) are implied by that guard and not rendered at all. Paths read by several
guards are evaluated once into locals (_Aliases).

The entry evaluates every other guard on every call, and the covered ones only when EPOCH moved since
they last passed:

    <other guards> and ((__fj_e := EPOCH[0]) == state[0]
                        or (<covered guards> and <refresh the member cache> and <state[0] = __fj_e>))
                   and (__fj_m := state[1]) is not None and <guards reading members through __fj_m>

The member cache holds the objects at covered paths that the rest of the entry needs (parameters fed to
the graph, config objects whose own attributes are still guarded): `__fj_m[3]` instead of a chain of
Module.__getattr__ calls. Buffers (plain tensors) keep their metadata checks, on the cached object.
"""
import copy
import dataclasses
import functools
import inspect
import re
import threading
import types
import weakref

import torch

from .guard_set import Guard, _operand, fuse_atom_items, fuse_state_guards
from .instance_guards import RootPins, shared_guards
from .dict_guards import VersionPlan, is_data_descriptor
from .identity import DistinctObjectsSource
from ..source import DictKeySource
from ..values.modules.module_values import HookStateSource, ModuleAttrSource
from .module_watch import EPOCH, watch
from ..values.objects.attribute_sources import InstanceHasSource, PresenceSource
from ..source import FIXED_OBJECTS, AttrSource, BuiltinSource, DefaultSource, FixedObjectSource, ItemSource, \
    LocalSource, Source, TypeSource

MODULE_TABLES = ("_modules", "_parameters", "_buffers")
IMMUTABLE_CONSTS = (int, float, bool, str, bytes, complex, type(None), torch.dtype, torch.device, torch.layout,
                    torch.memory_format, torch.Size)
IMMUTABLE_HOLDERS = (types.CodeType, tuple, str, bytes, frozenset, torch.Size)
_NAME = re.compile(r"\w+")          # a maximal run of word characters: what `\bname\b` finds


@dataclasses.dataclass(frozen=True)
class CachedSource(Source):
    """The object at `original`, read from the entry's member cache."""
    index: int
    original: Source

    def expr(self):
        return f"__fj_m[{self.index}]"

    def name(self):
        return self.original.name()

    def root(self):
        return self.original.root()


@dataclasses.dataclass(frozen=True)
class PinnedSource(Source):
    """The object at `original` when the version words (and the module watch, for its module-held
    prefix) keep it the same object: per-call guards on what is inside it (a config's list, read through
    the config's own __getattribute__) read it from the entry's constants (ModulePlan.pins) instead of
    evaluating the path, while `original is <object>` is checked with the versioned guards."""
    original: Source

    def expr(self):
        return self.original.expr()

    def name(self):
        return self.original.name()

    def root(self):
        return self.original.root()


def _on(g, source):
    """Guard `g` on another Source (dataclasses.replace, without its per-field bookkeeping: guard
    rendering makes one per guard and path, thousands for a big model)."""
    return Guard(g.kind, source, g.expected, g.origin)


def _longest_run(sources):
    """(start, stop) of the longest run of three or more graph inputs that are consecutive members of
    the member cache (the parameters, usually), or None."""
    best, i = None, 0
    while i < len(sources):
        j = i
        if isinstance(sources[i], CachedSource):
            while j + 1 < len(sources) and isinstance(sources[j + 1], CachedSource) and \
                    sources[j + 1].index == sources[j].index + 1:
                j += 1
            if j - i >= 2 and (best is None or j - i + 1 > best[1] - best[0]):
                best = (sources[i].index, sources[j].index + 1)
        i = j + 1
    return best


def _distinct(g, members):
    """The distinct-inputs guard `g` over `members` only (None when fewer than two)."""
    if len(members) == len(g.source.members):
        return g
    if len(members) < 2:
        return None
    narrowed = DistinctObjectsSource()
    narrowed.members.extend(members)
    return _on(g, narrowed)


def _fixed_by_words(keys):
    """Do these watch keys (VersionPlan.determined) fix an object through version words alone?"""
    return bool(keys) and all(kind != "pin" for kind, _ in keys)


class ModulePlan:
    """Which guards of one conversion are covered by the module watch, and the member cache."""

    def __init__(self, guards, graph_inputs, f_globals=None, certain_types=None, store_targets=(), roots=None,
                 modules=None):
        certain = certain_types or {}
        # a shared entry (guards/instance_guards.py): the modules the frame receives, matched by type and
        # compared by id with the ones the covered guards last passed for; every module it matches by type
        self.roots = roots or {}
        self.modules = modules or {}
        self.guards = [g for g in fuse_state_guards(guards)   # `type(kwargs) is dict` always holds
                       if not (g.kind == "TYPE_MATCH" and certain.get(g.source) is g.expected)]
        self.certain = certain
        self.types = {}
        self.objects = {}
        for g in self.guards:
            if g.kind == "TYPE_MATCH":
                self.types[g.source] = g.expected
            elif g.kind == "ID_MATCH":
                self.objects[g.source] = g.expected
        self.guards = [g for g in (self.only_possible_aliases(g) for g in self.guards) if g is not None]
        self.tensors = {source: tensor for source, tensor, _ in graph_inputs}
        self._identity = {}
        self._fixed = {}
        self.guards = self.split_distinct(self.guards, f_globals)
        self.covered = [g for g in self.guards if self.is_covered(g)]
        covered_ids = {id(g) for g in self.covered}
        self.implied = [g for g in self.guards if id(g) not in covered_ids and self.is_implied(g)]
        covered_ids |= {id(g) for g in self.implied}
        pending = [g for g in self.guards if id(g) not in covered_ids and g.source is not None]
        self.versions = VersionPlan(pending, self.objects, self.weak_identity_covered(), f_globals,
                                    answers=self._probe)
        # by identity: `g not in <list>` compared each pair of guards field by field (quadratic; equal
        # guards are covered alike, VersionPlan.cover depending only on what a guard says)
        versioned_ids = {id(g) for g in self.versions.covered}
        self.pins = self.word_fixed_prefixes([g for g in pending if id(g) not in versioned_ids])
        if self.pins:
            checks = {source: Guard("ID_MATCH", source, obj) for source, obj in self.pins.items()}
            self.versions = VersionPlan(pending + list(checks.values()), self.objects, self.weak_identity_covered(),
                                        f_globals, answers=self.versions)
            kept = {id(g) for g in self.versions.covered}
            self.pins = {source: self.pins[source] for source, g in checks.items() if id(g) in kept}
        covered_ids |= {id(g) for g in self.versions.covered}
        for source, obj in self.versions.pinned.items():    # their identity, checked when EPOCH moves
            self.covered.append(Guard("ID_MATCH", source, obj))
        self.cache = {}                          # covered Source -> index in the member cache
        self.input_sources = [self.through_cache(s) for s, _, _ in graph_inputs] if self.covered else \
            [s for s, _, _ in graph_inputs]
        if self.roots and self.covered:          # a new root's modules are watched from the member cache
            for g in self.covered:
                if g.kind == "TYPE_MATCH" and issubclass(g.expected, torch.nn.Module):
                    self.through_cache(g.source)
        # modules the side effects store into, read from the member cache instead of a chain of
        # nn.Module attribute lookups (Swin's blocks reset their window sizes on every call)
        self.cached_targets = {s: self.through_cache(s) for s in store_targets
                               if self.covered and self.identity_covered(s)}
        self.before, self.after = [], []
        for g in self.guards:
            if id(g) in covered_ids:
                continue
            if self.pins and g.source is not None:
                g = _on(g, self.pinned_source(g.source))
            if not self.covered or g.source is None:
                self.before.append(g)
                continue
            cached = self.through_cache(g.source)
            (self.before if cached == g.source else self.after).append(
                g if cached == g.source else _on(g, cached))
        self.before = fuse_atom_items(self.before, self.sequence_type)
        self.after = fuse_atom_items(self.after, self.sequence_type)
        self.versioned = [_on(g, self.through_cache(g.source)) if self.covered else g
                          for g in self.versions.covered]
        # the graph's parameters (the longest run of consecutive members among its inputs) also as one
        # tuple of their own, the member after all others: ((start, stop), its index), or None
        run = _longest_run(self.input_sources)
        self.param_tuple = (run, len(self.cache)) if run is not None else None

    def known_types(self):
        """Source -> the type other guards check it has."""
        known = {}
        for other in self.guards:
            if other.kind == "TENSOR_MATCH":
                known[other.source] = other.expected.type
        known.update(self.types)
        known.update({s: type(obj) for s, obj in self.objects.items()})
        return known

    def only_possible_aliases(self, g):
        """The distinct-inputs guard (guards/identity.py) over just the members that could be the same object:
        two members whose types other guards check to differ never are. None if nothing is left."""
        if not isinstance(g.source, DistinctObjectsSource):
            return g
        members = g.source.members
        known = self.known_types()
        kinds = [known.get(m) for m in members]
        keep = [m for m, k in zip(members, kinds) if k is None or sum(k is j or j is None for j in kinds) > 1]
        return _distinct(g, keep)

    def split_distinct(self, guards, f_globals):
        """The distinct-inputs guard in two parts. Members whose object the version words fix (library
        registries and objects, guards/dict_guards.py) stay the objects they were, hence distinct, while the
        words match: their check is one more versioned guard. The per-call check keeps the others (the
        frame's inputs) and the fixed members whose type one of those could also have."""
        probe = self._probe = VersionPlan([], self.objects, self.weak_identity_covered(), f_globals)
        known = self.known_types()
        out = []
        for g in guards:
            if not isinstance(g.source, DistinctObjectsSource):
                out.append(g)
                continue
            fixed = [m for m in g.source.members if _fixed_by_words(probe.determined(m))]
            free = [m for m in g.source.members if m not in fixed]
            if len(fixed) < 2:
                out.append(g)
                continue
            free_kinds = [known.get(m) for m in free]
            exposed = [m for m in fixed if None in free_kinds or known.get(m) is None or known.get(m) in free_kinds]
            out += [part for part in (_distinct(g, fixed), _distinct(g, free + exposed)) if part is not None]
        return out

    # ---- coverage -----------------------------------------------------------------------------
    def is_module_root(self, source):
        return isinstance(self.objects.get(source), torch.nn.Module) or source in self.roots

    def module_at(self, source):
        """The module at `source` as translation saw it, when a guard matches it (by id or by type)."""
        obj = self.objects.get(source)
        return obj if obj is not None else self.modules.get(source)

    def weak_identity_covered(self):
        """identity_covered for the VersionPlans this plan holds, reaching the plan weakly: a bound
        method would make a cycle, and the plan holds the frame's input tensors (`self.tensors`), which
        must be freed when the call returns, as in eager, not when the cyclic GC runs."""
        plan = weakref.ref(self)
        return lambda source: plan().identity_covered(source)

    def identity_covered(self, source):
        """Can the object at `source` only be replaced through a watched entry point?"""
        known = self._identity.get(source)
        if known is None:
            known = self._identity[source] = self._identity_covered(source)
        return known

    def _identity_covered(self, source):
        if isinstance(source, ModuleAttrSource) or self.is_module_dict_attr(source):
            return self.identity_covered(source.base) or self.is_module_root(source.base)
        if isinstance(source, AttrSource) and source.attr == "__class__" or isinstance(source, TypeSource):
            # `obj.__class__` / `type(obj)`: rebound only by setattr
            return self.identity_covered(source.base) or self.is_module_root(source.base)
        if isinstance(source, ItemSource):
            return self.types.get(source.base) is tuple and self.identity_covered(source.base)
        return False

    def is_module_dict_attr(self, source):
        """`module.attr` read by a plain getattr (not a ModuleAttrSource) where attr is an instance
        attribute of a module whose identity is guarded: Module.__setattr__ is its only writer, as for
        a ModuleAttrSource."""
        if type(source) is not AttrSource:
            return False
        holder = self.module_at(source.base)
        if not isinstance(holder, torch.nn.Module) or type(holder).__getattribute__ is not object.__getattribute__:
            return False
        found = inspect.getattr_static(type(holder), source.attr, None)
        return source.attr in holder.__dict__ and not is_data_descriptor(found)

    def is_covered(self, g):
        s = g.source
        if s is None:
            return False
        if isinstance(s, HookStateSource):
            return self.identity_covered(s.module) or self.is_module_root(s.module)
        if isinstance(s, (PresenceSource, InstanceHasSource)):
            # hasattr(module, name), `name in module.__dict__`: names come and go through
            # __setattr__/__delattr__/register_* only
            return g.kind == "CONST_MATCH" and isinstance(self.module_at(s.base), torch.nn.Module) and \
                (self.identity_covered(s.base) or self.is_module_root(s.base))
        parts = getattr(s, "parts", None)
        if g.kind == "CONST_MATCH" and isinstance(parts, tuple) and hasattr(s, "template") and parts:
            # a fact about module paths only (guards/identity.py's `a is b` between two of them)
            return type(g.expected) in IMMUTABLE_CONSTS and all(
                isinstance(p, Source) and self.identity_covered(p) for p in parts)
        if not self.identity_covered(s):
            return False
        if g.kind in ("ID_MATCH", "TYPE_MATCH"):
            return True
        if g.kind == "CONST_MATCH":
            return type(g.expected) in IMMUTABLE_CONSTS
        if g.kind == "LEN_MATCH":
            return self.types.get(s) is tuple
        if g.kind == "TENSOR_MATCH":
            return isinstance(self.tensors.get(s), torch.nn.Parameter)
        if g.kind == "DICT_KEYS":
            return isinstance(s, ModuleAttrSource) and s.attr in MODULE_TABLES and s.where == "__dict__"
        return False

    # ---- implied by identity ----------------------------------------------------------------------
    def fixed(self, source):
        """Is the object at `source` certainly the one seen at translation, given the other guards?
        Yes for a source with an ID_MATCH guard, and for what is read from such an object when the
        object cannot change (a code object, a tuple, a string...)."""
        known = self._fixed.get(source)
        if known is None:
            known = self._fixed[source] = source in self.objects or self.fixed_by_base(source)
        return known

    def fixed_by_base(self, source):
        if isinstance(source, DefaultSource) and isinstance(source.key, int):   # fn.__defaults__[i]
            source = ItemSource(AttrSource(source.fn_source, "__defaults__"), source.key)
        if isinstance(source, ModuleAttrSource) or not isinstance(source, (AttrSource, ItemSource)):
            return False
        base = source.base
        if not self.fixed(base):
            return False
        kind = type(self.objects[base]) if base in self.objects else self.types.get(base)
        return kind in IMMUTABLE_HOLDERS

    def is_implied(self, g):
        """A guard on an attribute or item of an immutable object whose identity is guarded."""
        if g.source is None or g.kind not in ("ID_MATCH", "TYPE_MATCH", "LEN_MATCH", "CONST_MATCH"):
            return False
        if g.kind == "CONST_MATCH" and type(g.expected) not in IMMUTABLE_CONSTS:
            return False
        if g.kind == "LEN_MATCH" and self.types.get(g.source) not in IMMUTABLE_HOLDERS:
            return False                     # a list held in a tuple still changes length
        return self.fixed_by_base(g.source)

    # ---- objects the version words keep --------------------------------------------------------
    def word_fixed_prefixes(self, guards):
        """Source -> object: for guards still checked on every call, the longest path inside each whose
        object the version words fix (a config's `layer_types` list: the list may change in place, so
        its length and items stay per-call guards, but which list it is does not)."""
        found = {}
        for g in guards:
            s = g.source
            while isinstance(s, (AttrSource, ItemSource, DictKeySource)) and not isinstance(s, ModuleAttrSource):
                if self.versions.keeps(s):
                    found[s] = self.versions.value(s)
                    break
                s = s.base
        return found

    def pinned_source(self, source):
        if source in self.pins:
            return PinnedSource(source)
        return _map_parts(source, self.pinned_source)

    def sequence_type(self, source):
        """The exact type the guards give the object at `source` (a per-call guard's Source, which may
        read it from the member cache or the constants), or None."""
        while isinstance(source, (PinnedSource, CachedSource)):
            source = source.original
        return self.types.get(source) or self.certain.get(source)

    def bound_pins(self, guards, bind):
        """`guards` with each PinnedSource read from the entry's constants."""
        if not self.pins:
            return guards

        def bound(source):
            if isinstance(source, PinnedSource):
                return AliasSource(bind(self.pins[source.original]), source.original)
            return _map_parts(source, bound)
        return [g if g.source is None else _on(g, bound(g.source)) for g in guards]

    # ---- the member cache -----------------------------------------------------------------------
    def through_cache(self, source):
        """`source` with its longest covered prefix read from the member cache."""
        if self.identity_covered(source):
            index = self.cache.get(source)
            if index is None:
                index = self.cache[source] = len(self.cache)
            return CachedSource(index, source)
        return _map_parts(source, self.through_cache)

    def watch_objects(self):
        for obj in self.objects.values():
            if isinstance(obj, torch.nn.Module):
                watch(obj)
        for g in self.covered:
            tensor = self.tensors.get(g.source)
            if isinstance(tensor, torch.nn.Parameter):
                watch(tensor)

    # ---- rendering ------------------------------------------------------------------------------
    def certain_text(self, g, bind):
        return _certain_text(self.certain, g, bind)

    def render(self, bind, render_guard, out_of_line=lambda expr, internal=(): f"({expr})"):
        """The guard expression. The covered and versioned blocks, evaluated only when EPOCH or a word
        moved, are compiled once as functions of their own (`out_of_line`): the entry and its inlined
        copy in the dispatcher stay small."""
        plain_render, certain = render_guard, self.certain

        def render_guard(g, bind):           # reaches `certain`, not the plan (see _covered_block)
            return _certain_text(certain, g, bind) or plain_render(g, bind)
        before, after = self.bound_pins(self.before, bind), self.bound_pins(self.after, bind)
        terms = _Aliases(before + after)
        inner = _Aliases(self.versioned, prefix="__fj_q")
        versioned = self.versions.render(bind, [inner.render(g, bind, render_guard) for g in self.versioned],
                                         out_of_line)
        if not self.covered:
            parts = [terms.render(g, bind, render_guard) for g in before] + [versioned]
            return " and ".join(p for p in parts if p) or "True"
        self.watch_objects()
        roots = list(self.roots)
        state_list = [-1, ()] + [0] * len(roots)
        state = bind(state_list)
        epoch = bind(EPOCH)
        # a shared entry: the covered guards passed for the roots whose ids the state holds
        # (instance_guards.RootPins remembers them weakly and watches a new root's modules)
        pins = bind(RootPins(state_list)) if roots else None
        root_args = "".join(f", {r.expr()}" for r in roots)
        pin = f"{pins}.pin(__fj_e{root_args}) and " if roots else ""
        current = "".join(f" and __fj_id({_operand(r.expr())}) == {state}[{2 + i}]" for i, r in enumerate(roots))
        members = sorted(self.cache, key=self.cache.get)
        # checks these roots passed at this epoch: made current
        recall = f"{pins}.recall(__fj_e{root_args})" if roots else None
        covered = fuse_atom_items(self.covered, self.sequence_type)     # a conv's stride, padding...
        text = functools.partial(_covered_block, covered, members, self.param_tuple, render_guard, bind,
                                 f"{state}.__setitem__(1, ", f") is None and {pin}{state}.__setitem__(0, __fj_e) is None",
                                 recall)
        deferred = getattr(out_of_line, "deferred", None)
        call = deferred(text, self.covered, members, ("__fj_e",)) if deferred is not None else \
            out_of_line(text(), ("__fj_e",))
        parts = [terms.render(g, bind, render_guard) for g in before]
        parts.append(f"((__fj_e := {epoch}[0]) == {state}[0]{current} or {call})")
        parts.append(f"(__fj_m := {state}[1]) is not None")
        parts += [terms.render(g, bind, render_guard) for g in after]
        parts.append(versioned)
        return " and ".join(p for p in parts if p)


def _certain_text(certain, g, bind):
    """The frame's own *args / **kwargs are a tuple / a dict for sure: their length and keys are
    checked without a call (`not args`, `[*kwargs] == [...]`). None for other guards."""
    kind = certain.get(g.source) if g.source is not None else None
    if g.kind == "LEN_MATCH" and kind is tuple and g.expected == 0:
        return f"not {g.source.expr()}"
    if g.kind == "DICT_KEYS" and kind is dict:
        return f"[*{g.source.expr()}] == {bind(list(g.expected))}"
    return None


def _covered_block(covered, members, param_tuple, render_guard, bind, refresh_head, refresh_tail, recall):
    """The covered block's text: its guards (module paths share long prefixes: aliases), then the member
    cache refreshed and the epoch stamped. A function of what it is handed only, not of the plan: the
    shared entry renders it on its first call (OutOfLine.deferred), and must not keep the plan's input
    tensors and modules alive until then."""
    shared = _Aliases(covered, prefix="__fj_k")
    plain_render = render_guard

    def render_guard(g, bind):
        s = g.source
        if type(s) is HookStateSource and s.empty and g.kind == "CONST_MATCH" and g.expected is True:
            return f"{bind(_no_hooks)}({s.module.expr()})"    # what s.expr() says, in a few characters
        return plain_render(g, bind)
    terms_text = [shared.render(g, bind, render_guard) for g in covered]
    # the members through the aliases the covered terms named (evaluated before it, all having passed)
    tuple_text = f"({''.join(shared.reuse(s).expr() + ', ' for s in members)})"
    if param_tuple is not None:
        (start, stop), _ = param_tuple
        tuple_text = f"((__fj_mm := {tuple_text}) + (__fj_mm[{start}:{stop}],))"
    block = " and ".join(terms_text + [f"{refresh_head}{tuple_text}{refresh_tail}"])
    return f"{recall} or ({block})" if recall is not None else block


def _no_hooks(m):
    """HookStateSource(m, empty=True)'s expression as a function: a model's covered block checks it for
    every module (a tenth of the block's text to compile, written out)."""
    return not (m._forward_pre_hooks or m._forward_hooks or m._backward_hooks or m._backward_pre_hooks)


def _fixed_keys(guards, sources):
    """The FIXED_OBJECTS keys the paths of `guards` and `sources` name (FixedObjectSource anywhere in them)."""
    seen, keys = set(), set()
    stack = [g.source for g in guards if g.source is not None] + list(sources)
    while stack:
        s = stack.pop()
        if s in seen:
            continue
        seen.add(s)
        if isinstance(s, FixedObjectSource):
            keys.add(s.key)
        stack += _parts(s)
    return keys


@dataclasses.dataclass(frozen=True)
class AliasSource(Source):
    """A Source already evaluated into a local of the entry by an earlier guard term."""
    local: str
    original: Source

    def expr(self):
        return self.local

    def name(self):
        return self.original.name()


_CHEAP = (LocalSource, CachedSource, FixedObjectSource, BuiltinSource, AliasSource, PinnedSource)


class _Aliases:
    """Common subexpressions of guard Sources: a path read by two or more guards is evaluated once,
    into a local, by a term of its own placed just before the first guard that needs it (a term that is
    always evaluated, so later guards never see it unassigned)."""

    def __init__(self, guards, prefix="__fj_p"):
        self.prefix = prefix
        direct, parents, depth = {}, {}, {}

        def visit(source, parent):
            if parent is not None:
                parents.setdefault(source, []).append(parent)
            if source in depth:
                return depth[source]
            depth[source] = 0
            d = 1 + max((visit(p, source) for p in _parts(source)), default=-1)
            depth[source] = d
            return d

        for g in guards:
            if g.source is not None:
                direct[g.source] = direct.get(g.source, 0) + 1
                visit(g.source, None)
        del visit                    # a recursive closure is a cycle (function <-> its cell)
        # how many times each path would be evaluated, given the paths aliased above it
        self.counts, aliased = {}, set()
        for source in sorted(depth, key=depth.get, reverse=True):
            n = direct.get(source, 0) + sum(1 if p in aliased else self.counts.get(p, 0)
                                            for p in parents.get(source, ()))
            self.counts[source] = n
            if n >= 2 and not isinstance(source, _CHEAP):
                aliased.add(source)
        self.names = {}
        # Source -> what it renders as, once substituted: every alias its path needs is named by then, so
        # substituting it again would emit no term and build an equal Source (thousands of guards share
        # a model's module paths)
        self.done = {}

    def _substitute(self, source, pending):
        done = self.done.get(source)
        if done is not None:
            return done
        mapped = _map_parts(source, lambda s: self._substitute(s, pending))
        if self.counts.get(source, 0) >= 2 and not isinstance(source, _CHEAP):
            name = self.names[source] = f"{self.prefix}{len(self.names)}"
            pending.append(f"({name} := {mapped.expr()}) is not __fj_MISS")
            mapped = AliasSource(name, source)
        self.done[source] = mapped
        return mapped

    def reuse(self, source):
        """`source` read through the aliases already named (no new ones): for text placed after every
        term rendered so far (the member cache's refresh at the end of the covered block)."""
        name = self.names.get(source)
        if name is not None:
            return AliasSource(name, source)
        return _map_parts(source, self.reuse)

    def render(self, g, bind, render_guard):
        if g.source is None:
            return render_guard(g, bind)
        pending = []
        source = self._substitute(g.source, pending)
        term = render_guard(g if source == g.source else _on(g, source), bind)
        return " and ".join(pending + [term]) if term else " and ".join(pending)


_FIELD_NAMES = {}


def _field_names(cls):
    """The dataclass field names of a Source class (None if it is no dataclass), looked up once per class:
    dataclasses.fields() on every path part was a tenth of guard rendering."""
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = tuple(f.name for f in dataclasses.fields(cls)) \
            if dataclasses.is_dataclass(cls) else ()
    return names


def _parts(source):
    """The Sources `source` is built from: dataclass fields holding Sources (or tuples of them), and a
    `members` list (guards/identity.py's DistinctObjectsSource)."""
    if isinstance(source, (CachedSource, AliasSource, PinnedSource)):
        return []                       # read from the cache or a local: its original path is not evaluated
    members = getattr(source, "members", None)
    if isinstance(members, list):
        return [m for m in members if isinstance(m, Source)]
    out = []
    for name in _field_names(type(source)):
        value = getattr(source, name)
        if isinstance(value, Source):
            out.append(value)
        elif isinstance(value, tuple):
            out += [v for v in value if isinstance(v, Source)]
    return out


def _map_parts(source, fn):
    """A copy of `source` with fn applied to each Source it is built from (see _parts)."""
    if isinstance(source, (CachedSource, AliasSource, PinnedSource)):
        return source
    members = getattr(source, "members", None)
    if isinstance(members, list):
        new = [fn(m) if isinstance(m, Source) else m for m in members]
        if any(a is not b for a, b in zip(new, members)):
            clone = copy.copy(source)
            object.__setattr__(clone, "members", new)
            return clone
        return source
    changes = None
    for name in _field_names(type(source)):
        value = getattr(source, name)
        if isinstance(value, Source):
            new = fn(value)
            if new is not value:
                changes = changes or {}
                changes[name] = new
        elif isinstance(value, tuple) and value and all(isinstance(v, Source) for v in value):
            new = tuple(fn(v) for v in value)
            if any(a is not b for a, b in zip(new, value)):
                changes = changes or {}
                changes[name] = new
    if not changes:
        return source
    cls = type(source)
    return cls(**{name: changes.get(name, getattr(source, name)) for name in _field_names(cls)})


def plan_for(ctx, shared=False):
    """The ModulePlan of a conversion (made once, when its entry is generated); with `shared`, the plan
    of its shared entry (guards/instance_guards.py), or None when it has none."""
    name = "shared_module_plan" if shared else "module_plan"
    if name in vars(ctx):
        return vars(ctx)[name]
    targets = [e.target for e in ctx.side_effects.effects if e.kind in ("attr", "raw_attr")]
    if not shared:
        plan = ModulePlan(ctx.guards.guards, ctx.graph.inputs, ctx.f_globals, ctx.certain_types, targets)
    else:
        found = shared_guards(ctx.guards.guards, ctx.frame_params)
        plan = None if found is None else ModulePlan(found[0], ctx.graph.inputs, ctx.f_globals, ctx.certain_types,
                                                     targets, roots=found[1], modules=found[2])
    setattr(ctx, name, plan)
    return plan


class OutOfLine:
    """Compiles a guard block as `def __fj_blockN(<the names it reads>): return (<block>)` into the
    entry's namespace and returns the call expression. The parameters are the frame's own parameter
    names found in the block's text plus the entry locals it reads (`internal`). With `lazy` (the shared
    entry's blocks, which no call needs until another instance comes), the text is compiled when the
    block is first called: compiling a big model's block costs as much as rendering it."""

    def __init__(self, ns, params, lazy=False, defer=False):
        self.ns = ns
        self.params = tuple(params)
        self.count = 0
        self.lazy = lazy
        if not defer:
            self.deferred = None

    def deferred(self, text, guards, sources, internal=()):
        """A lazy block whose text, too, is made on its first call (`text()`, rendering `guards` on
        `sources`): it takes every frame parameter, as which ones the text reads is not known yet. The
        fixed objects the paths name are bound now, while they are certainly alive."""
        for key in _fixed_keys(guards, sources):
            self.ns.env[f"__fj_fixed_{key}"] = FIXED_OBJECTS[key]
        names = self.params + tuple(internal)
        name = f"__fj_block{self.count}"
        self.count += 1
        self.ns.env[name] = LazyBlock(name, None, None, (text, names, self.ns))
        return f"{name}({', '.join(names)})"

    def __call__(self, expr, internal=()):
        # one scan of the (long) block text for every name it mentions, not one regex search per parameter
        used = set(_NAME.findall(expr))
        names = [p for p in self.params + tuple(internal) if p in used]
        name = f"__fj_block{self.count}"
        self.count += 1
        src = f"def {name}({', '.join(names)}):\n    return ({expr})\n"
        for key in set(re.findall(r"__fj_fixed_(\d+)", src)):
            self.ns.env[f"__fj_fixed_{key}"] = FIXED_OBJECTS[int(key)]
        # its own globals (what is bound so far, all its text names): a function in the dict that is its
        # globals is a cycle, which would keep the entry and its modules until the cyclic GC ran
        env = dict(self.ns.env)
        self.ns.env[name] = LazyBlock(name, src, env) if self.lazy else _compiled_block(name, src, env)
        return f"{name}({', '.join(names)})"


def _compiled_block(name, src, env):
    exec(compile(src, f"<framejit guard block {name}>", "exec"), env)
    return env.pop(name)


_RENDER_LOCK = threading.Lock()


class LazyBlock:
    """A guard block compiled on its first call (OutOfLine's `lazy`); its text and globals are fixed when
    it is made, so compiling later gives the function compiling at once would have. A deferred block
    (OutOfLine.deferred) has no text yet: `pending` is (text function, parameter names, namespace), and
    its first call renders the text, binding its constants into the entry's namespace, whose names are
    its globals then."""

    __slots__ = ("name", "src", "env", "fn", "pending")

    def __init__(self, name, src, env, pending=None):
        self.name, self.src, self.env, self.fn, self.pending = name, src, env, None, pending

    def __call__(self, *args):
        fn = self.fn
        if fn is None:
            with _RENDER_LOCK:                   # two threads' first calls: one renders and compiles
                fn = self.fn
                if fn is None:
                    if self.pending is not None:
                        text, names, ns = self.pending
                        self.src = f"def {self.name}({', '.join(names)}):\n    return ({text()})\n"
                        self.env = dict(ns.env)
                        self.env.pop(self.name, None)    # itself in its own globals: a cycle (see OutOfLine)
                    fn = self.fn = _compiled_block(self.name, self.src, self.env)
                    self.src = self.env = self.pending = None    # its own globals hold what it needs
        return fn(*args)


def render(ctx, ns, instances=(), shared=False):
    """The entry's guard expression; `instances`: ID_MATCH guards rendered by id (guards.WeakIdentity);
    `shared`: the shared entry's (guards/instance_guards.py)."""
    from .guard_set import _render, instance_guard_text
    by_id = {id(g.expected) for g in instances}

    def render_guard(g, bind):
        if g.kind == "ID_MATCH" and id(g.expected) in by_id and g.source in {i.source for i in instances}:
            return instance_guard_text(g)
        return _render(g, bind)
    # the shared entry's covered block is even rendered on its first call (no symbolic constants to
    # refuse there, which must fail the conversion, not a later call)
    defer = shared and ctx.graph.shapes is None
    return plan_for(ctx, shared).render(ns.bind, render_guard, OutOfLine(ns, ctx.frame_params, lazy=shared,
                                                                         defer=defer))
