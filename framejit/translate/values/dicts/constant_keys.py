"""Dict keys that are constant hashables: strings, numbers, None, bools, enum members, and tuples and
frozensets of them -- which keys a dict from outside the frame may have and still be modelled or read.

Why this exists: a dict argument was modelled only with str/int keys, and a lookup in a dict from outside
the frame (a library's registry) accepted only str/int/bool/None/float keys. Library code keys its tables
with more than that: diffusers' attention registry with a str-Enum (`AttentionBackendName.NATIVE`), user
code `{("scale", "a"): 2.0}` passed in on every call. Each such key broke the graph, and a dict argument
with them was guarded by identity, so a new dict per call converted the frame again on every call.

A constant key is one whose hash and equality run no code of the user's: the Python types below, an
enum member (a singleton: its class's hash and eq are Enum's or its mixin's, or the class's own -- a
member compared with a member of the same class), and tuples and frozensets of constant keys.

Guards on such keys must tell `1`, `True` and `1.0` apart, and `"a"` from a str-Enum member whose value is
"a" (they are equal, with equal hashes, so `tuple(d.keys()) == (...)` alone would accept either): see
`guards/const_equality.same_keys`, which the DICT_KEYS guard uses when a key is not a plain str.

A key with no literal spelling (an enum member, a tuple holding one) is named in guard text by the object
itself (`fixed_source`); literal keys keep their repr (`DictKeySource`).
"""
import enum
import math
from dataclasses import dataclass

from ...source import DictKeySource, ItemSource, Source, fixed_source

_ATOMS = (str, int, bool, type(None), float, bytes, complex)


def is_constant_key(key):
    """Is `key` a constant hashable (see the module docstring)?"""
    t = type(key)
    if t in _ATOMS:
        return True
    if t is tuple or t is frozenset:
        return all(is_constant_key(k) for k in key)
    return isinstance(key, enum.Enum)


def all_constant_keys(keys):
    return all(is_constant_key(k) for k in keys)


def is_literal_key(key):
    """Does repr(key) spell the same key back in generated code (no enum member, no NaN or inf)?"""
    t = type(key)
    if t is float:
        return math.isfinite(key)
    if t is complex:
        return math.isfinite(key.real) and math.isfinite(key.imag)
    if t in _ATOMS:
        return True
    if t is tuple:
        return all(is_literal_key(k) for k in key)
    return False


@dataclass(frozen=True)
class DictObjectKeySource(Source):
    """DictKeySource for a key that has no literal spelling: the key is reached through a Source (an
    input tensor's, or the bound object of a constant key)."""
    base: Source
    key: Source
    lookup: bool = True

    def expr(self):
        method = "__getitem__" if self.lookup else "__contains__"
        return f"__fj_b['dict'].{method}({self.base.expr()}, {self.key.expr()})"

    def name(self):
        return f"{self.base.name()}[{self.key.name()}]" if self.lookup else f"{self.key.name()} in {self.base.name()}"

    def root(self):
        return self.base.root()


def key_label(key):
    """How a constant key reads in guard names and messages."""
    if isinstance(key, enum.Enum):
        return f"{type(key).__qualname__}.{key.name}"
    if type(key) is tuple:
        inner = ", ".join(key_label(k) for k in key)
        return f"({inner},)" if len(key) == 1 else f"({inner})"
    return repr(key)


def constant_key_source(base, key, lookup=True):
    """`dict.__getitem__(base, key)` (or `__contains__`) for a constant key, spelled literally when it can be."""
    if is_literal_key(key):
        return DictKeySource(base, key, lookup=lookup)
    return DictObjectKeySource(base, fixed_source(key, key_label(key)), lookup)


def item_source(base, key):
    """`base[key]` for an item of an exact dict: a literal subscript, or a lookup through the key object."""
    return ItemSource(base, key) if is_literal_key(key) else constant_key_source(base, key)
