"""Machine words that say "unchanged": dict and type version tags, object fields holding pointers.

Why this exists: a transformers forward reads dozens of facts from outside the module tree on every
call — other modules' globals (`is_torchdynamo_compiling`, `create_causal_mask`...), registries (the
attention-mask function tables), config attributes. Checked one by one they were most of a compiled
call's own cost. All of them live in dicts (module globals, registry dicts, instance __dict__s) and
classes, and CPython 3.11 keeps for every dict a version tag (PEP 509) that moves on each mutation, and
for every class a version tag that is reset on any change to it or its bases; a cell's contents and
a function's code and defaults are pointers in the object. guards/dict_guards.py turns
guards on such values into one comparison of a tuple of these words; the full guards run only when a
word moved.

Each reader is a ctypes integer laid over the field (offsets are 3.11 facts, in bytecode/py311.py);
`.value` reads the live word. The layout is checked against live objects at import, and every reader
against the object it is made for; where that fails (another Python, another layout) the readers are
None and callers keep the plain guards. A reader never outlives its object: the caller keeps the
object alive for as long as it keeps the reader.
"""
import ctypes
import operator
import struct
import sys
import types

try:
    from ...bytecode import py311 as _layout
except ImportError:                       # another CPython: no version guards
    _layout = None


def _layout_ok():
    if _layout is None or sys.implementation.name != "cpython" or ctypes.sizeof(ctypes.c_void_p) != 8:
        return False
    probe = {"a": 1}
    tag = ctypes.c_uint64.from_address(id(probe) + _layout.DICT_VERSION_OFFSET)
    seen = [tag.value]
    probe["b"] = 2
    seen.append(tag.value)
    probe["a"] = object()
    seen.append(tag.value)
    del probe["b"]
    seen.append(tag.value)
    _ = probe["a"]
    seen.append(tag.value)
    if not seen[0] < seen[1] < seen[2] < seen[3] == seen[4]:
        return False

    class Probe:
        pass
    obj = Probe()
    obj.a = 1
    if ctypes.c_void_p.from_address(id(obj) + _layout.OB_TYPE_OFFSET).value != id(Probe):
        return False
    inst = obj.__dict__                   # made on first use: read the pointer after
    if _dict_pointer_address(obj) is None or \
            ctypes.c_void_p.from_address(_dict_pointer_address(obj)).value != id(inst):
        return False
    version = ctypes.c_uint32.from_address(id(Probe) + _layout.TYPE_VERSION_OFFSET)
    _ = obj.a                              # a lookup gives the class a tag
    before = version.value
    Probe.b = 2
    after_change = version.value
    _ = obj.a
    if not (before != 0 and after_change == 0 and version.value not in (0, before)):
        return False

    def probe_fn(a=1, *, b=2):
        return obj
    cell = probe_fn.__closure__[0]
    if ctypes.c_void_p.from_address(id(cell) + _layout.CELL_CONTENTS_OFFSET).value != id(obj):
        return False
    return all(ctypes.c_void_p.from_address(id(probe_fn) + offset).value == id(getattr(probe_fn, name))
               for name, offset in _layout.FUNCTION_FIELD_OFFSETS.items())


def _dict_pointer_address(obj):
    t = type(obj)
    if t.__flags__ & _layout.MANAGED_DICT_FLAG:
        return id(obj) + _layout.MANAGED_DICT_OFFSET
    if t.__dictoffset__ > 0:
        return id(obj) + t.__dictoffset__
    return None


ENABLED = _layout_ok()


def dict_version(d):
    """A reader of `d`'s version tag, or None."""
    if not ENABLED or not isinstance(d, dict):
        return None
    return ctypes.c_uint64.from_address(id(d) + _layout.DICT_VERSION_OFFSET)


def type_pointer(obj):
    """A reader whose value is id(type(obj)), or None."""
    if not ENABLED:
        return None
    word = ctypes.c_void_p.from_address(id(obj) + _layout.OB_TYPE_OFFSET)
    return word if word.value == id(type(obj)) else None


def dict_pointer(obj):
    """A reader whose value is id(obj.__dict__) (the instance dict, however it is reached), or None."""
    if not ENABLED:
        return None
    try:
        inst = object.__getattribute__(obj, "__dict__")
    except AttributeError:
        return None
    address = _dict_pointer_address(obj)
    if address is None:
        return None
    word = ctypes.c_void_p.from_address(address)
    return word if word.value == id(inst) else None


def type_version(cls):
    """A reader of class `cls`'s version tag (0: changed since last looked up, or none given yet), or None."""
    if not ENABLED or not isinstance(cls, type):
        return None
    getattr(cls, "__framejit_probe__", None)          # a lookup assigns a tag if there is none
    return ctypes.c_uint32.from_address(id(cls) + _layout.TYPE_VERSION_OFFSET)


def cell_contents(cell):
    """A reader whose value is id(cell.cell_contents) (None when empty), or None."""
    if not ENABLED or type(cell) is not types.CellType:
        return None
    return ctypes.c_void_p.from_address(id(cell) + _layout.CELL_CONTENTS_OFFSET)


def function_field(fn, name):
    """A reader whose value is id(getattr(fn, name)) for `__code__`, `__defaults__`, `__kwdefaults__`
    (None for absent defaults: CPython stores NULL), or None."""
    offset = _layout.FUNCTION_FIELD_OFFSETS.get(name) if ENABLED else None
    if offset is None or type(fn) is not types.FunctionType:
        return None
    return ctypes.c_void_p.from_address(id(fn) + offset)


# The process's address space as one ctypes array of 64-bit words (2**48 bytes, more than x86-64 and
# AArch64 user space): `operator.itemgetter(*word_indices)(_SPACE)` reads many scattered words in one
# C call, about twice as fast as `.value` on each reader. Nothing is read but the words asked for.
_SPACE = (ctypes.c_uint64 * (1 << 45)).from_address(0) if ENABLED else None

try:                                       # the native reader (framejit/_words.c), built by `make`
    from ..._words import gather as _native_gather, unchanged as native_unchanged
except ImportError:
    _native_gather = native_unchanged = None


def gather(readers, native=True):
    """(getter, arg) such that `getter(arg)` reads the readers' words in one C call, or None: with the
    native reader, bytes of the words (compared with a bytes stamp; `as_ints` turns them into
    integers); else a tuple of ints via itemgetter over _SPACE. A 32-bit reader (a class version tag)
    is read as the 64-bit word it starts, whose upper half is padding CPython leaves zero; every
    reader is checked against its own `.value` once here."""
    if _SPACE is None or not readers:
        return None
    addresses = []
    for reader in readers:
        address = ctypes.addressof(reader)
        if address % 8 or address >> 48:
            return None
        addresses.append(address)
    expected = tuple(r.value or 0 for r in readers)                 # a NULL pointer reads as None
    if native and _native_gather is not None:
        packed = struct.pack(f"={len(addresses)}Q", *addresses)
        if as_ints(_native_gather(packed)) == expected:
            return _native_gather, packed
    indices = [address // 8 for address in addresses]
    getter = operator.itemgetter(*(indices if len(indices) > 1 else indices * 2))
    if getter(_SPACE)[:len(indices)] != expected:
        return None
    if len(indices) == 1:
        getter = _one(getter)
    return getter, _SPACE


def as_ints(words):
    """A read of `gather`'s getter as a tuple of integers."""
    return struct.unpack(f"={len(words) // 8}Q", words) if type(words) is bytes else words


def _one(getter):
    return lambda space: getter(space)[:1]
