"""Stored conversions: what a later process needs to build a frame's cache entry without translating it.

Why this exists (issue 24): with every graph stored as an AOTInductor library, a warm start still converted
each frame again, and a conversion builds fake tensors, whose mode imports all of torch._dynamo (1.3-1.7 s of
CPU). A stored conversion is plain JSON (never a pickle): the guards as a plan of checks on paths from the
frame's parameters (persist/warm_guards.py renders it), the expressions of the graph's inputs, the line that
rebuilds the result from the graph's outputs, and the key of the library that runs the graph. The runtime
(runtime/warm_start.py) makes the record from a conversion and builds an entry from it.

The record's key: the frame's code (its bytecode, constants, names, recursively: `code_digest`), framejit's
whole source (`sources_digest`: a conversion depends on all of it), torch's and Python's versions, the Config,
the backend and the storing format. What the conversion read beyond the code (module structure, classes and
the code of their methods, globals, tensor metadata, grad mode) is checked by the stored guards against the
call that loads it; a record that fails them, or does not read, is a miss and the frame converts as always.
Entries are sealed and written atomically by persist/store.py like every other entry.
"""
import hashlib
import json
import os
import sys
import types

from .graph_key import versions

FORMAT = 2
BACKEND = "framejit-conversion"
_SOURCES = []


def sources_digest():
    """A hash of every Python source of the framejit package (computed once per process)."""
    if not _SOURCES:
        package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        h = hashlib.sha256()
        for folder, dirs, files in sorted(os.walk(package)):
            dirs.sort()
            for name in sorted(files):
                if name.endswith(".py"):
                    path = os.path.join(folder, name)
                    with open(path, "rb") as f:
                        h.update(os.path.relpath(path, package).encode() + b"\0" + f.read() + b"\0")
        _SOURCES.append(h.hexdigest()[:24])
    return _SOURCES[0]


def code_digest(code):
    """A hash of what a code object does: bytecode, constants (nested code objects by their own digest),
    names, argument layout, flags and line table (no addresses, no refcount-dependent marshal flags)."""
    h = hashlib.sha256()
    _put_code(h, code)
    return h.hexdigest()[:32]


def _put_code(h, code):
    for part in (code.co_name, code.co_qualname, code.co_argcount, code.co_posonlyargcount, code.co_kwonlyargcount,
                 code.co_flags, code.co_names, code.co_varnames, code.co_freevars, code.co_cellvars):
        h.update(repr(part).encode() + b"\0")
    h.update(code.co_code + b"\0" + code.co_linetable + b"\0" + code.co_exceptiontable + b"\0")
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            _put_code(h, const)
        else:
            h.update(_const_text(const).encode() + b"\0")


def _const_text(const):
    """A constant as text that is the same in every process (a frozenset's order follows string hashing,
    which is randomized per process)."""
    if isinstance(const, types.CodeType):
        return "code:" + code_digest(const)
    if isinstance(const, frozenset):
        return "frozenset:{" + ",".join(sorted(_const_text(c) for c in const)) + "}"
    if isinstance(const, tuple):
        return "tuple:(" + ",".join(_const_text(c) for c in const) + ")"
    return type(const).__name__ + ":" + repr(const)


# attributes Python caches on a class as a program runs: pickling an instance sets `__slotnames__` (copyreg),
# so a process that pickled a tensor (a background library's job: backends/aoti_background.py) saw another
# torch.Tensor than one that did not, and no stored conversion it made ever loaded
_CACHES = frozenset({"__slotnames__"})


def class_fingerprint(cls):
    """What a class is across processes: its name, its bases' names, and for each class of its MRO the
    names of its attributes and the code of its functions (a changed method misses)."""
    h = hashlib.sha256()
    for klass in cls.__mro__:
        h.update(f"{klass.__module__}.{klass.__qualname__}\0".encode())
        if klass.__module__ == "builtins":
            continue
        for name in sorted(klass.__dict__):
            if name in _CACHES:
                continue
            value = klass.__dict__[name]
            if isinstance(value, (staticmethod, classmethod)):
                value = value.__func__
            h.update(name.encode() + b"=")
            if isinstance(value, types.FunctionType):
                h.update(code_digest(value.__code__).encode())
            elif isinstance(value, property):
                h.update(b"property:" + b",".join(code_digest(f.__code__).encode() if isinstance(f, types.FunctionType)
                                                   else b"-" for f in (value.fget, value.fset, value.fdel)))
            else:
                h.update(type(value).__qualname__.encode())
            h.update(b"\0")
    return h.hexdigest()[:32]


def conversion_key(code, config_text, backend_name):
    """The hex key of the stored conversion of `code` under these settings in this framejit and torch."""
    h = hashlib.sha256()
    for part in ("format", FORMAT, "code", code_digest(code), code.co_filename, code.co_qualname,
                 "versions", sorted(versions().items()), "sources", sources_digest(),
                 "config", config_text, "backend", backend_name):
        h.update(repr(part).encode() + b"\0")
    return h.hexdigest()


def put(store, key, record):
    """Write the record (plain JSON data) under `key`; a failure to write is not an error."""
    try:
        store.put(key, json.dumps(record, sort_keys=True).encode(), {"backend": BACKEND, "frame": record.get("frame")})
        return True
    except Exception:
        return False


def get(store, key):
    """The stored record of `key`, or None (absent, refused by its seal, not ours, not this format)."""
    try:
        entry = store.get(key)
    except Exception:
        return None
    if entry is None:
        return None
    meta, payload = entry
    if meta.get("backend") != BACKEND:
        return None
    try:
        record = json.loads(payload)
    except ValueError:
        return None
    if not isinstance(record, dict) or record.get("format") != FORMAT:
        return None
    return record


def torch_modules_loaded():
    """Which of torch's heavy subsystems this process has imported (for tests and reports)."""
    return sorted(m for m in ("torch._dynamo", "torch._inductor") if m in sys.modules)

