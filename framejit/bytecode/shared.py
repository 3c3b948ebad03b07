"""Decoded instructions of a code object, decoded once and shared by every conversion that reads it.

Why this exists: a capture decodes the code of every function it inlines (a transformers model:
50-90 code objects, 5-7 ms), and every later capture of the same model (after a reset, a
recompile, another model using the same library code) decoded them all again. A code object is
immutable, so its decoded form only depends on it: the list is kept, keyed by the code object's
identity (held weakly; the entry goes when the code does), together with the position of each
instruction in the list (what a translator's jumps look up).

The shared list and its Instruction objects are read-only: code that edits instructions (resume
functions, break functions) copies them first (copy_instructions) or calls decode() for its own.
"""
import weakref

from .decode import decode


class DecodedCode(list):
    """The instructions of one code object, plus `position`: Instruction -> its index."""

    __slots__ = ("position",)


class DecodedCache:
    """code object -> DecodedCode, by identity, with weak references to the code objects."""

    def __init__(self):
        self._entries = {}       # id(code) -> (weakref to code, DecodedCode)

    def get(self, code):
        entry = self._entries.get(id(code))
        if entry is not None and entry[0]() is code:
            return entry[1]
        decoded = DecodedCode(decode(code))
        decoded.position = {inst: i for i, inst in enumerate(decoded)}
        key = id(code)
        entries = self._entries
        ref = weakref.ref(code, lambda r, key=key: entries.pop(key, None) if entries.get(key, (None,))[0] is r else None)
        entries[key] = (ref, decoded)
        return decoded

    def __len__(self):
        return len(self._entries)


SHARED = DecodedCache()


def decoded(code):
    """The shared, read-only decoded instructions of `code` (see the module docstring)."""
    return SHARED.get(code)
