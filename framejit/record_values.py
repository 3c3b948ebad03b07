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
"""

from __future__ import annotations

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


def snapshot_value(value: Any, storages: dict[int, RecordedStorage]) -> Any:
    """Replace dense tensors (also inside tuples, lists, dicts) by RecordedTensors; keep the rest."""
    if _is_plain_dense_tensor(value):
        return snapshot_tensor(value, storages)
    if type(value) in (tuple, list):
        return type(value)(snapshot_value(v, storages) for v in value)
    if type(value) is dict:
        return {k: snapshot_value(v, storages) for k, v in value.items()}
    if getattr(type(value), "_framejit_compiled", False):
        # a framejit.compile(module) result (as `self` of its forward): record the module it wraps,
        # which shares its state and pickles like any module
        return type(value)._framejit_original
    return value


def rebuild_value(value: Any, storages: dict[int, torch.UntypedStorage]) -> Any:
    """Inverse of snapshot_value, giving fresh tensors (pass one `storages` dict per rebuild)."""
    if isinstance(value, RecordedTensor):
        return value.rebuild(storages)
    if type(value) in (tuple, list):
        return type(value)(rebuild_value(v, storages) for v in value)
    if type(value) is dict:
        return {k: rebuild_value(v, storages) for k, v in value.items()}
    return value
