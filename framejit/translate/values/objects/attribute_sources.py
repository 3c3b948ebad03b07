"""The Sources of the attribute model's guards (objects/attribute_model.py), and the class lookup they call.

  mro_lookup(cls, attr)      the raw class-dictionary lookup attribute access starts with (ABSENT if no
                             class on the MRO has attr): ClassLookupSource guards what it returns
  hasattr(base, attr)        PresenceSource: an answer that depends on an attribute being there or not
  attr in base.__dict__      InstanceHasSource: an object's (or a class's) own attributes
"""
import dataclasses

from ...source import Source, fixed_source


class _Absent:
    """What mro_lookup returns when no class on the MRO has the name (bound into guards by name)."""
    __slots__ = ()

    def __repr__(self):
        return "ABSENT"


ABSENT = _Absent()


def mro_lookup(cls, name, after=None):
    """The raw attribute `name` from the __dict__ of the first class on cls's MRO (after class `after`,
    for super()) that has it, or ABSENT: the first step of attribute lookup (_PyType_Lookup)."""
    mro = cls.__mro__
    if after is not None:
        mro = mro[mro.index(after) + 1:] if after in mro else ()
    for klass in mro:
        d = klass.__dict__
        if name in d:
            return d[name]
    return ABSENT


_LOOKUP = fixed_source(mro_lookup, "mro_lookup")


@dataclasses.dataclass(frozen=True)
class ClassLookupSource(Source):
    """`mro_lookup(cls, attr[, after])`: what a class's MRO holds under `attr` (ABSENT if nothing)."""
    cls: Source
    attr: str
    after: Source = None

    def expr(self):
        after = f", {self.after.expr()}" if self.after is not None else ""
        return f"{_LOOKUP.expr()}({self.cls.expr()}, {self.attr!r}{after})"

    def name(self):
        start = f" after {self.after.name()}" if self.after is not None else ""
        return f"class lookup of {self.attr!r} on {self.cls.name()}{start}"

    def root(self):
        return self.cls.root()


@dataclasses.dataclass(frozen=True)
class PresenceSource(Source):
    """`hasattr(base, attr)`."""
    base: Source
    attr: str
    boolean = True

    def expr(self):
        return f"hasattr({self.base.expr()}, {self.attr!r})"

    def name(self):
        return f"hasattr({self.base.name()}, {self.attr!r})"

    def root(self):
        return self.base.root()


@dataclasses.dataclass(frozen=True)
class InstanceHasSource(Source):
    """`attr in base.__dict__` (an object's own attributes, or a class's own __dict__)."""
    base: Source
    attr: str
    boolean = True

    def expr(self):
        return f"({self.attr!r} in {self.base.expr()}.__dict__)"

    def name(self):
        return f"{self.attr!r} in {self.base.name()}.__dict__"

    def root(self):
        return self.base.root()
