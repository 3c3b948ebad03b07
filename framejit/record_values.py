"""Stand-ins that let an execution record hold a frame's inputs faithfully and portably.

Why this exists: an execution record (framejit.record) must carry what a frame's
conversion read -- module attributes, closure cells, tensor arguments -- in a form
that pickles, survives the trip to another process and rebuilds into fresh
objects for each replay. The pieces here are that form:

* `RecordedModule`: a types.ModuleType subclass standing in for a real module,
  holding only the attributes the conversion read. Attribute values that are
  modules are themselves RecordedModules, so `torch.nn.functional` reached via
  `torch` is a stand-in nested in the stand-in for `torch`. Reading an attribute
  that was not recorded raises AttributeError saying so -- unless the real module
  was importable by name when it was recorded (torch, math, your package): then
  the stand-in imports it and returns the real attribute, so code the original
  conversion never reached (a replay after a fix, or `--run`) still runs, while
  everything the conversion did read keeps its recorded value.
* `EMPTY_CELL`: the marker for a closure cell that had no value yet.
* `RecordedTensor` / `RecordedStorage`: a tensor argument kept as a copy of its
  storage bytes plus dtype, shape, stride, storage offset, requires_grad and
  whether it was an nn.Parameter. Rebuilding gives a new tensor with the same
  layout; arguments that shared storage share it again after rebuilding.
* `snapshot_value` / `rebuild_value`: apply that to tensors inside tuples,
  lists and dicts (other values, e.g. nn.Module arguments, are kept as they are
  and pickled whole by dill).
* `UnpicklableValue`: what a value that dill cannot pickle is replaced with when
  a record is written, so one odd global does not lose the whole record.
* `main_globals_needed`: the globals of __main__ that functions and classes
  defined there (pickled by value, over the replaying process's stand-in for
  __main__) name, so a record can carry them.
"""

from __future__ import annotations

import dis
import functools
import importlib
import types
from dataclasses import dataclass
from typing import Any

import torch


class _EmptyCell:
    """Marker for a closure cell that was empty (its variable not yet assigned)."""

    _instance: "_EmptyCell | None" = None

    def __new__(cls) -> "_EmptyCell":
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "EMPTY_CELL"

    def __reduce__(self) -> str:
        return "EMPTY_CELL"


EMPTY_CELL = _EmptyCell()


class RecordedModule(types.ModuleType):
    """A module stand-in holding only the attributes a conversion read from the real module."""

    def __init__(self, name: str, doc: str | None = None, importable: bool = False) -> None:
        super().__init__(name, doc)
        self.__dict__["__recorded_name__"] = name
        self.__dict__["__recorded_importable__"] = importable

    def __getattr__(self, attr: str) -> Any:
        # Only called when normal lookup fails: the attribute was never recorded.
        if self.__dict__.get("__recorded_importable__") and not (attr.startswith("__") and attr.endswith("__")):
            try:
                real = importlib.import_module(self.__dict__["__name__"])
            except ImportError:
                pass
            else:
                return getattr(real, attr)
        raise AttributeError(
            f"recorded module {self.__dict__.get('__name__')!r} has no recorded attribute {attr!r} "
            "(an execution record keeps only the module attributes read during the original conversion)"
        )

    def __repr__(self) -> str:
        return f"<recorded module {self.__dict__.get('__name__')!r}>"

    def recorded_attributes(self) -> dict[str, Any]:
        """The attributes this stand-in holds (excluding module bookkeeping)."""
        return {k: v for k, v in self.__dict__.items() if k not in _MODULE_BOOKKEEPING}

    def __reduce__(self) -> tuple:
        # The state is applied after the object is memoised, so cycles between
        # stand-ins (a module whose attribute leads back to it) pickle fine.
        return (RecordedModule, (self.__dict__["__name__"], None, self.__dict__.get("__recorded_importable__", False)),
                self.recorded_attributes())

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)


_MODULE_BOOKKEEPING = frozenset(RecordedModule("_").__dict__)


@dataclass(eq=False)
class UnpicklableValue:
    """Placeholder for a recorded value that could not be pickled."""

    type_name: str
    value_repr: str
    reason: str

    def __repr__(self) -> str:
        return f"<unpicklable {self.type_name}: {self.value_repr} ({self.reason})>"


@dataclass(eq=False)
class RecordedStorage:
    """A copy of one tensor storage's bytes (shared by every recorded tensor that used it)."""

    data: torch.Tensor
    """A 1-D uint8 tensor holding the storage bytes."""
    device: str


@dataclass(eq=False)
class RecordedTensor:
    """A tensor argument: its storage copy and the metadata to rebuild the same layout."""

    storage: RecordedStorage
    dtype: torch.dtype
    shape: tuple[int, ...]
    stride: tuple[int, ...]
    storage_offset: int
    requires_grad: bool
    is_parameter: bool
    was_leaf: bool

    def __repr__(self) -> str:
        grad = ", requires_grad=True" if self.requires_grad else ""
        return f"RecordedTensor({self.dtype}, shape={list(self.shape)}, stride={list(self.stride)}{grad})"

    def rebuild(self, storages: dict[int, torch.UntypedStorage]) -> torch.Tensor:
        """A fresh tensor with the recorded values and layout; `storages` shares storages across calls."""
        storage = storages.get(id(self.storage))
        if storage is None:
            storage = self.storage.data.clone().to(self.storage.device).untyped_storage()
            storages[id(self.storage)] = storage
        with torch.no_grad():
            tensor = torch.empty(0, dtype=self.dtype, device=self.storage.device)
            tensor.set_(storage, self.storage_offset, self.shape, self.stride)
        if self.is_parameter:
            return torch.nn.Parameter(tensor, requires_grad=self.requires_grad)
        if self.requires_grad:
            tensor.requires_grad_(True)
        return tensor


def _is_plain_dense_tensor(value: Any) -> bool:
    return (
        type(value) in (torch.Tensor, torch.nn.Parameter)
        and value.layout == torch.strided
        and not value.is_quantized
        and value.device.type != "meta"
    )


def snapshot_tensor(tensor: torch.Tensor, storages: dict[int, RecordedStorage]) -> RecordedTensor:
    """Copy a dense tensor's storage and layout; `storages` makes aliasing tensors share one copy."""
    untyped = tensor.untyped_storage()
    key = untyped.data_ptr() if untyped.nbytes() else id(untyped)
    recorded_storage = storages.get(key)
    if recorded_storage is None:
        with torch.no_grad():
            raw = torch.empty(0, dtype=torch.uint8, device=tensor.device).set_(untyped)
            data = raw.detach().clone().cpu()
        recorded_storage = RecordedStorage(data=data, device=str(tensor.device))
        storages[key] = recorded_storage
    return RecordedTensor(
        storage=recorded_storage,
        dtype=tensor.dtype,
        shape=tuple(tensor.shape),
        stride=tuple(tensor.stride()),
        storage_offset=tensor.storage_offset(),
        requires_grad=tensor.requires_grad,
        is_parameter=isinstance(tensor, torch.nn.Parameter),
        was_leaf=tensor.is_leaf,
    )


def snapshot_value(value: Any, storages: dict[int, RecordedStorage], memo: dict[int, tuple] | None = None) -> Any:
    """Replace dense tensors (also inside tuples, lists, dicts) by RecordedTensors; keep the rest.
    `memo` (one per recording) keeps identity: a tensor or list passed twice is one object on replay,
    as the conversion's aliasing guards saw it."""
    memo = {} if memo is None else memo
    known = memo.get(id(value))
    if known is not None:
        return known[1]
    if _is_plain_dense_tensor(value):
        out: Any = snapshot_tensor(value, storages)
    elif type(value) is tuple:
        out = tuple(snapshot_value(v, storages, memo) for v in value)
    elif type(value) is list:
        out = []
        memo[id(value)] = (value, out)        # before the items: a list that holds itself
        out.extend(snapshot_value(v, storages, memo) for v in value)
    elif type(value) is dict:
        out = {}
        memo[id(value)] = (value, out)
        out.update((k, snapshot_value(v, storages, memo)) for k, v in value.items())
    elif getattr(type(value), "_framejit_compiled", False):
        # a framejit.compile(module) result (as `self` of its forward): record the module it wraps,
        # which shares its state and pickles like any module
        out = type(value)._framejit_original
    else:
        out = value
    memo[id(value)] = (value, out)
    return out


def rebuild_value(value: Any, storages: dict[int, torch.UntypedStorage], memo: dict[int, Any] | None = None) -> Any:
    """Inverse of snapshot_value, giving fresh tensors (pass one `storages` and one `memo` per rebuild:
    what was one object is one object again)."""
    memo = {} if memo is None else memo
    if id(value) in memo:
        return memo[id(value)]
    if isinstance(value, RecordedTensor):
        out: Any = value.rebuild(storages)
    elif type(value) is tuple:
        out = tuple(rebuild_value(v, storages, memo) for v in value)
    elif type(value) is list:
        out = memo[id(value)] = []
        out.extend(rebuild_value(v, storages, memo) for v in value)
    elif type(value) is dict:
        out = memo[id(value)] = {}
        out.update((k, rebuild_value(v, storages, memo)) for k, v in value.items())
    else:
        out = value
    memo[id(value)] = out
    return out


# ---------------------------------------------------------------------------------------------
# Functions that cannot be imported back by name


def global_names(code: types.CodeType) -> list[str]:
    """Names `code` (and the code of functions and classes defined in it) reads or writes as globals."""
    names: list[str] = []
    seen: set[str] = set()
    pending = [code]
    while pending:
        current = pending.pop()
        for inst in dis.get_instructions(current):
            if inst.opname in ("LOAD_GLOBAL", "STORE_GLOBAL", "DELETE_GLOBAL", "LOAD_NAME", "STORE_NAME",
                               "DELETE_NAME") and inst.argval not in seen:
                seen.add(inst.argval)
                names.append(inst.argval)
        pending.extend(c for c in current.co_consts if isinstance(c, types.CodeType))
    return names


_MAX_VISITED = 100_000


def main_globals_needed(values: Any, main_globals: dict[str, Any]) -> dict[str, Any]:
    """The globals of __main__ that the functions and classes defined there, reachable from `values`,
    name (transitively: a helper's helper). dill pickles such a function by value with "the __main__
    of the loading process" as its globals; a record carries these names so that the replaying
    process can fill in a __main__ of its own (framejit.record's loader), where `torch` and the
    user's helpers are defined again."""
    needed: dict[str, Any] = {}
    seen: set[int] = set()
    pending = list(values)
    while pending and len(seen) < _MAX_VISITED:      # bounded: an argument may hold a whole dataset
        value = pending.pop()
        if id(value) in seen or isinstance(value, (torch.Tensor, str, bytes, int, float, type(None))):
            continue
        seen.add(id(value))
        if isinstance(value, types.FunctionType):
            if value.__globals__ is main_globals:
                for name in global_names(value.__code__):
                    if name in main_globals and name not in needed:
                        needed[name] = main_globals[name]
                        pending.append(main_globals[name])
            pending.extend(value.__defaults__ or ())
            pending.extend((value.__kwdefaults__ or {}).values())
            pending.extend(value.__dict__.values())
            for cell in value.__closure__ or ():
                try:
                    pending.append(cell.cell_contents)
                except ValueError:
                    pass
        elif isinstance(value, type):
            if value.__module__ == "__main__":
                pending.extend(vars(value).values())
                pending.extend(value.__bases__)
        elif isinstance(value, (staticmethod, classmethod)):
            pending.append(value.__func__)
        elif isinstance(value, property):
            pending.extend((value.fget, value.fset, value.fdel))
        elif isinstance(value, types.MethodType):
            pending.extend((value.__func__, value.__self__))
        elif isinstance(value, functools.partial):
            pending.extend((value.func, *value.args, *value.keywords.values()))
        elif isinstance(value, (list, tuple, set, frozenset)):
            pending.extend(value)
        elif isinstance(value, dict):
            pending.extend(value.values())
        elif isinstance(value, RecordedModule):
            pending.extend(value.recorded_attributes().values())
        elif not isinstance(value, types.ModuleType):
            if type(value).__module__ == "__main__":
                pending.append(type(value))
            try:
                state = getattr(value, "__dict__", None)
            except Exception:
                state = None
            if isinstance(state, dict):
                pending.extend(state.values())
    return needed
