"""Guard kinds as objects: one class per kind, owning its words, its rendering, its miss explanation
and its answers to the plans that make checking it cheap (guard_kind.py says what each answers).

guard_kind.py  GuardKind, the registry (`kind_named`), what all kinds share
tensors.py     TENSOR_MATCH, DYN_TENSOR_MATCH (and the metadata they expect)
objects.py     CONST_MATCH, ID_MATCH, TYPE_MATCH, LEN_MATCH, DICT_KEYS, ATOMS_MATCH
state.py       GRAD_MODE, STATE_MATCH, NATIVE_STATE
shapes.py      SHAPES
Imports only the guards/ helpers that read or compare values (const_equality, tensor_words,
native_state), never the guard set or the plans: those import the kinds.
"""
from .guard_kind import KINDS, GuardKind, kind_named
from .objects import ATOMS_MATCH, CONST_MATCH, DICT_KEYS, ID_MATCH, LEN_MATCH, TYPE_MATCH, WeakIdentity
from .shapes import SHAPES
from .state import GRAD_MODE, NATIVE_STATE, STATE_MATCH
from .tensors import DYN_TENSOR_MATCH, TENSOR_MATCH, DynamicTensorMeta, TensorMeta

__all__ = ["KINDS", "GuardKind", "kind_named", "ATOMS_MATCH", "CONST_MATCH", "DICT_KEYS", "ID_MATCH", "LEN_MATCH",
           "TYPE_MATCH", "WeakIdentity", "SHAPES", "GRAD_MODE", "NATIVE_STATE", "STATE_MATCH", "DYN_TENSOR_MATCH",
           "TENSOR_MATCH", "DynamicTensorMeta", "TensorMeta"]
