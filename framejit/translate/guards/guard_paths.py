"""The Sources guard rendering reads through, and the pass that reads a shared path once.

A module plan (guards/module_guards.py) rewrites guard Sources before rendering them: an object the
module watch keeps is read from the entry's member cache (CachedSource), one the version words keep
from the entry's constants (PinnedSource), and a path that several guards read is evaluated once into
a local (Aliases, AliasSource). `parts` and `map_parts` walk and rebuild any Source's path.
"""
import copy
import dataclasses

from ..source import BuiltinSource, FixedObjectSource, LocalSource, Source


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


def fixed_keys(guards, sources):
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
        stack += parts(s)
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


class Aliases:
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
            d = 1 + max((visit(p, source) for p in parts(source)), default=-1)
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
        mapped = map_parts(source, lambda s: self._substitute(s, pending))
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
        return map_parts(source, self.reuse)

    def render(self, g, bind, render_guard):
        if g.source is None:
            return render_guard(g, bind)
        pending = []
        source = self._substitute(g.source, pending)
        term = render_guard(g if source == g.source else g.on(source), bind)
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


def parts(source):
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


def map_parts(source, fn):
    """A copy of `source` with fn applied to each Source it is built from (see parts)."""
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
