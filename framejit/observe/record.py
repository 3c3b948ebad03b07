"""Execution records: everything one frame's conversion depended on, in a file that can be replayed.

Why this exists: when converting a frame fails (or always, with
Config.record_all), the translator hands framejit an `ExecutionRecorder` filled
with what the conversion read; the resulting `Record` is written under
<debug_dir>/records/ so the failure can be reproduced later, in another
process, without the user's program (`python -m framejit replay FILE`).

What the translator calls while converting a frame (all cheap; nothing here
runs on the per-call fast path, only during conversion):

    recorder = ExecutionRecorder()
    recorder.record_function(fn)            # code, closure, defaults, module name
    #   or record_code(code) + record_closure(cells)
    recorder.record_options(backend, fullgraph)   # what the frame was compiled with
    recorder.record_args(args, kwargs)      # tensors copied now (values and layout)
    recorder.record_global(name, value)     # each global the conversion read
    recorder.record_builtin(name, value)    # each builtin it read
    recorder.record_module_attr(module, attr, value)   # each attribute read off a module
    recorder.record_code(callee_code)       # each inlined function's code (the first code is the frame's)
    recorder.record_resume_of((code, n))    # a resume function: the code it continues (from the runtime)
    record = recorder.to_record(exception)  # exception=None for a successful conversion
    path = record_file.try_write_record(record, config.debug_dir)  # never raises; None if it could not write

The module rule. A module whose attributes the translator reported reading
(through `record_module_attr`) becomes a `RecordedModule` stand-in holding just
those attributes, with module-valued attributes nested as stand-ins:
`torch.nn.functional` reached via `torch` ends up as
`record.globals["torch"].nn.functional`. Reading an attribute that was not
recorded falls back to the real module if it was importable by name when
recorded, and otherwise fails with an AttributeError saying so. A module with no recorded
attribute reads (e.g. a global recorded by name only) is stored by name and
re-imported on load, when it is importable: it is sys.modules[its __name__]
and not __main__; otherwise it becomes an (empty) stand-in too. Modules are
never pickled by value. The attribute *values* (functions, classes, tensors)
are pickled by dill with its usual rule: functions and classes importable by
name (torch.relu, math.sqrt, your package's helpers) are stored by reference
and imported on load; those defined in __main__ are stored by value. So
replaying a record that refers to your own package needs that package
importable; load_record says so clearly when it is not.

Arguments: dense tensors (also inside tuples/lists/dicts) are copied when
`record_args` is called, with dtype, shape, stride, storage offset and
requires_grad, and arguments that shared storage share it again on replay.
nn.Module arguments ("local modules") and other objects are stored whole
(dill/torch pickling at write time) and deep-copied for each replay run.

The file (marker, signature, JSON header, dill payload), its per-user signing key and the restricted
unpickler that reads it are in record_file.py, persist/signing.py and record_unpickler.py: this module is the
record and the recorder only. Every failure is a `RecordError` with a message meant for a person.
"""

from __future__ import annotations

import builtins
import copy
import dataclasses
import datetime
import importlib.metadata
import platform
import sys
import traceback
import types
from dataclasses import dataclass, field
from typing import Any

import torch

from framejit.observe.record_values import (
    EMPTY_CELL,
    RecordedModule,
    RecordedStorage,
    UnpicklableValue,
    main_globals_needed,
    rebuild_value,
    snapshot_value,
)


class RecordError(ValueError):
    """A record could not be written, read or rebuilt; the message says why, for a person."""


class RecordVersionWarning(UserWarning):
    """A record was made with a different torch version than the one replaying it."""


def exception_type_name(exc_type: type) -> str:
    """'ValueError' for builtins, 'package.module.Class' otherwise."""
    module = getattr(exc_type, "__module__", None)
    if module in (None, "builtins"):
        return exc_type.__qualname__
    return f"{module}.{exc_type.__qualname__}"


def framejit_version() -> str:
    try:
        return importlib.metadata.version("framejit")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


@dataclass
class Record:
    """What one frame's conversion depended on, plus its outcome and the versions that produced it."""

    code: types.CodeType
    fn_name: str
    qualname: str
    module_name: str
    filename: str
    firstlineno: int
    closure: tuple = ()
    """Closure cell contents, in co_freevars order; EMPTY_CELL for an empty cell."""
    defaults: tuple | None = None
    kwdefaults: dict | None = None
    globals: dict[str, Any] = field(default_factory=dict)
    builtins: dict[str, Any] = field(default_factory=dict)
    args: tuple = ()
    kwargs: dict[str, Any] = field(default_factory=dict)
    exception_type: str | None = None
    """Qualified name of the exception the conversion raised; None if it succeeded."""
    exception_message: str | None = None
    exception_traceback: str | None = None
    framejit_version: str = field(default_factory=framejit_version)
    torch_version: str = field(default_factory=lambda: torch.__version__)
    python_version: str = field(default_factory=platform.python_version)
    created: str = field(default_factory=lambda: datetime.datetime.now(datetime.timezone.utc).isoformat())
    notes: list[str] = field(default_factory=list)
    """Things the writer had to give up on (e.g. values that could not be pickled)."""
    inlined: tuple[str, ...] = ()
    """Qualified names of the functions the conversion inlined (for reading; not needed to replay)."""
    backend_name: str | None = None
    """The registered name of the backend the frame was compiled with (None: an unregistered callable)."""
    backend: Any = None
    """The backend callable itself (pickled like any value: by reference when importable, by value when
    defined in __main__), used when backend_name is not registered in the replaying process."""
    fullgraph: bool = False
    config: dict[str, Any] = field(default_factory=dict)
    """The Config fields the frame was compiled with (framejit.config.Config), by name."""
    torch_state: dict[str, Any] = field(default_factory=dict)
    """The global torch state when the conversion started (global_state.translation_state()): grad
    mode, inference mode, autocast, default dtype... replay converts under the same state."""
    resume_of: tuple[types.CodeType, int] | None = None
    """For a generated resume function: the code of the function it continues and the number of
    instructions its prologue puts before the copy of that code (resume.RESUME_ORIGIN), so a replay
    maps its instructions back to the original as the recorded conversion did."""
    main_globals: dict[str, Any] = field(default_factory=dict)
    """The globals of the recording program's __main__ that functions and classes defined there name
    (record_values.main_globals_needed). dill pickles those by value with "the loading process's
    __main__" as their globals; load_record gives them a __main__ of their own holding these (and, when
    the recorded function itself is from __main__, its recorded globals: one namespace, as it was)."""

    def __setstate__(self, state: dict[str, Any]) -> None:
        for f in dataclasses.fields(self):          # a record of an older format lacks newer fields
            if f.name not in state:
                state[f.name] = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
        self.__dict__.update(state)

    @property
    def failed(self) -> bool:
        return self.exception_type is not None

    def build_function(self) -> types.FunctionType:
        """The recorded function, rebuilt over the recorded globals, builtins and closure. Its globals
        are `self.globals` itself: the recorded functions of the same module share it."""
        freevars = self.code.co_freevars
        if len(self.closure) != len(freevars):
            raise RecordError(
                f"record of {self.qualname} is inconsistent: the code has {len(freevars)} free variable(s) "
                f"{freevars} but {len(self.closure)} closure value(s) were recorded"
            )
        function_globals = self.globals
        function_globals.setdefault("__name__", self.module_name)
        function_builtins = dict(builtins.__dict__)
        function_builtins.update(self.builtins)
        function_globals["__builtins__"] = function_builtins
        cells = tuple(types.CellType() if v is EMPTY_CELL else types.CellType(v) for v in self.closure)
        fn = types.FunctionType(self.code, function_globals, self.fn_name, self.defaults, cells or None)
        fn.__kwdefaults__ = dict(self.kwdefaults) if self.kwdefaults else None
        fn.__qualname__ = self.qualname
        return fn

    def rebuild_args(self) -> tuple[tuple, dict[str, Any]]:
        """Fresh copies of the recorded arguments (new tensors, deep-copied modules) for one run."""
        storages: dict[int, torch.UntypedStorage] = {}
        memo: dict[int, Any] = {}
        args = tuple(rebuild_value(a, storages, memo) for a in self.args)
        kwargs = {k: rebuild_value(v, storages, memo) for k, v in self.kwargs.items()}
        return _fresh((args, kwargs))

    def outcome(self) -> str:
        if not self.failed:
            return "conversion succeeded"
        return f"conversion failed with {self.exception_type}: {self.exception_message}"

    def describe(self) -> str:
        """A few lines saying what this record is."""
        lines = [
            f"function {self.qualname} ({self.filename}:{self.firstlineno})",
            f"outcome: {self.outcome()}",
            f"recorded {self.created} with framejit {self.framejit_version}, torch {self.torch_version}, "
            f"Python {self.python_version}",
            f"backend: {self.backend_name if isinstance(self.backend_name, str) else shown(self.backend)}"
            f"{' (fullgraph)' if self.fullgraph is True else ''}",
            f"globals: {', '.join(sorted(k for k in self.globals if isinstance(k, str) and not k.startswith('__'))) or '-'}",
            f"arguments: {len(self.args)} positional, {len(self.kwargs)} keyword",
        ]
        if self.resume_of is not None:
            lines.append(f"resume function of {self.resume_of[0].co_qualname} "
                         f"({self.resume_of[0].co_filename}:{self.resume_of[0].co_firstlineno})")
        changed = {k: v for k, v in self.torch_state.items() if _DEFAULT_TORCH_STATE.get(k, v) != v}
        if changed:
            lines.append("torch state: " + ", ".join(f"{k}={shown(v)}" for k, v in changed.items()))
        lines.extend(f"note: {n}" for n in self.notes)
        return "\n".join(lines)


# torch's own defaults: describe() names only the parts of a recorded state that differ from them
_DEFAULT_TORCH_STATE = {
    "grad_enabled": True,
    "inference_mode": False,
    "autocast_cpu_enabled": False,
    "default_dtype": torch.float32,
    "deterministic_algorithms": False,
    "float32_matmul_precision": "highest",
}


def shown(value: Any) -> str:
    """A value of a record, for describing it: the repr of plain data, else only its kind. Describing a
    record runs none of its objects' code (a repr that the recording program defined)."""
    if value is None or type(value) in (str, int, float, bool, torch.dtype, torch.device):
        return repr(value)
    kind = type(value)
    name = type.__getattribute__(kind, "__qualname__")
    if isinstance(value, (types.FunctionType, types.BuiltinFunctionType, type)):
        qualname = type.__getattribute__(value, "__qualname__") if isinstance(value, type) else value.__qualname__
        return f"<{name} {qualname if isinstance(qualname, str) else '?'}>"
    return f"<{name} object>"


def _fresh(args_and_kwargs: tuple[tuple, dict[str, Any]]) -> tuple[tuple, dict[str, Any]]:
    """Deep copies of the nn.Module arguments (one copy per module, however often it is passed)."""
    memo: dict[int, Any] = {}

    def fresh(value: Any) -> Any:
        if isinstance(value, torch.nn.Module):
            try:
                return copy.deepcopy(value, memo)
            except Exception:  # a module that cannot be copied is reused as is
                return value
        if type(value) is tuple:
            return tuple(fresh(v) for v in value)
        if type(value) is list:
            value[:] = [fresh(v) for v in value]      # rebuilt for this run: changed in place (aliasing)
        elif type(value) is dict:
            value.update((k, fresh(v)) for k, v in value.items())
        return value

    args, kwargs = args_and_kwargs
    return tuple(fresh(a) for a in args), {k: fresh(v) for k, v in kwargs.items()}


def truncate(text: str | None, limit: int) -> str | None:
    if text is None or len(text) <= limit:
        return text
    return text[: limit - 3] + "..."


class ExecutionRecorder:
    """Collects what one frame's conversion read; `to_record` turns it into a `Record`."""

    def __init__(self) -> None:
        self._code: types.CodeType | None = None
        self._module_name = "__framejit_replay__"
        self._closure: tuple = ()
        self._defaults: tuple | None = None
        self._kwdefaults: dict | None = None
        self._globals: dict[str, Any] = {}
        self._builtins: dict[str, Any] = {}
        # id(module) -> (module, {attr: value}); the module is kept so its id stays valid.
        self._module_attrs: dict[int, tuple[types.ModuleType, dict[str, Any]]] = {}
        self._args: tuple = ()
        self._kwargs: dict[str, Any] = {}
        self._storages: dict[int, RecordedStorage] = {}
        self._inlined: list[types.CodeType] = []
        self._backend_name: str | None = None
        self._backend: Any = None
        self._fullgraph = False
        self._config: dict[str, Any] = {}
        self._torch_state: dict[str, Any] = {}
        self._resume_of: tuple[types.CodeType, int] | None = None

    def record_function(self, fn: types.FunctionType) -> None:
        """Record a plain Python function's code, closure, defaults and module name."""
        if not isinstance(fn, types.FunctionType):
            raise TypeError(f"record_function expects a Python function, got {type(fn).__name__}")
        if self._code is not None and self._code is not fn.__code__ and self._code not in self._inlined:
            self._inlined.insert(0, self._code)   # an inlined callee was recorded before the frame itself
        self._code = None
        self.record_code(fn.__code__)
        self.record_closure(fn.__closure__)
        self._defaults = fn.__defaults__
        self._kwdefaults = dict(fn.__kwdefaults__) if fn.__kwdefaults__ else None
        module_name = fn.__globals__.get("__name__")
        if isinstance(module_name, str):
            self._module_name = module_name

    def record_resume_of(self, resume_of: tuple[types.CodeType, int] | None) -> None:
        """For a generated resume function: the code it continues and its prologue length, handed over
        by the runtime through the observation (convert/resume.py keeps that table)."""
        self._resume_of = resume_of

    def record_config(self, config: Any) -> None:
        """Record the framejit.Config the frame was compiled with (its fields, by name)."""
        self._config = {f.name: getattr(config, f.name) for f in dataclasses.fields(config)}

    def record_torch_state(self, state: dict[str, Any]) -> None:
        """Record the global torch state the conversion starts from (global_state.translation_state())."""
        self._torch_state = dict(state)

    def record_code(self, code: types.CodeType) -> None:
        """The first code recorded is the frame's own; later ones are the inlined callees' (kept by name)."""
        if not isinstance(code, types.CodeType):
            raise TypeError(f"record_code expects a code object, got {type(code).__name__}")
        if self._code is None:
            self._code = code
        elif code is not self._code and code not in self._inlined:
            self._inlined.append(code)

    def record_options(self, backend: Any, fullgraph: bool = False) -> None:
        """Record the backend (its registered name, if any, and the callable) and fullgraph."""
        from framejit.backends import BACKENDS

        if isinstance(backend, str):
            self._backend_name, self._backend = backend, BACKENDS.get(backend)
        else:
            names = [name for name, fn in BACKENDS.items() if fn is backend]
            self._backend_name = names[0] if names else None
            self._backend = backend
        self._fullgraph = bool(fullgraph)

    def record_closure(self, cells: tuple | None) -> None:
        """Record closure cells (a function's __closure__); empty cells are kept as EMPTY_CELL."""
        values = []
        for cell in cells or ():
            try:
                values.append(cell.cell_contents)
            except ValueError:
                values.append(EMPTY_CELL)
        self._closure = tuple(values)

    def record_global(self, name: str, value: Any) -> None:
        """Record a global the conversion read (the first value read wins)."""
        self._globals.setdefault(name, value)

    def record_builtin(self, name: str, value: Any) -> None:
        self._builtins.setdefault(name, value)

    def record_module_attr(self, module: types.ModuleType, attr: str, value: Any) -> None:
        """Record that the conversion read `module.attr` and got `value`."""
        if not isinstance(module, types.ModuleType):
            raise TypeError(f"record_module_attr expects a module, got {type(module).__name__}")
        entry = self._module_attrs.get(id(module))
        if entry is None:
            entry = self._module_attrs[id(module)] = (module, {})
        entry[1].setdefault(attr, value)

    def record_args(self, args: tuple, kwargs: dict[str, Any] | None = None) -> None:
        """Record the call's arguments; tensors are copied now, so later mutation does not leak in."""
        memo: dict[int, tuple] = {}
        self._args = tuple(snapshot_value(a, self._storages, memo) for a in args)
        self._kwargs = {k: snapshot_value(v, self._storages, memo) for k, v in (kwargs or {}).items()}

    def to_record(self, exception: BaseException | None = None) -> Record:
        """The Record of everything recorded so far, with `exception` as the outcome (None: success)."""
        code = self._code
        if code is None:
            raise RecordError("nothing to record: record_code or record_function was never called")
        standins: dict[int, RecordedModule] = {}
        exc_type = exc_message = exc_traceback = None
        if exception is not None:
            exc_type = exception_type_name(type(exception))
            exc_message = str(exception)
            exc_traceback = "".join(traceback.format_exception(exception))
        return Record(
            code=code,
            fn_name=code.co_name,
            qualname=code.co_qualname,
            module_name=self._module_name,
            filename=code.co_filename,
            firstlineno=code.co_firstlineno,
            closure=tuple(self._standin_or_value(v, standins) for v in self._closure),
            defaults=self._defaults,
            kwdefaults=self._kwdefaults,
            globals={k: self._standin_or_value(v, standins) for k, v in self._globals.items()},
            builtins={k: self._standin_or_value(v, standins) for k, v in self._builtins.items()},
            args=self._args,
            kwargs=dict(self._kwargs),
            exception_type=exc_type,
            exception_message=exc_message,
            exception_traceback=exc_traceback,
            inlined=tuple(c.co_qualname for c in self._inlined),
            backend_name=self._backend_name,
            backend=self._backend,
            fullgraph=self._fullgraph,
            config=dict(self._config),
            torch_state=dict(self._torch_state),
            resume_of=self._resume_of,
            main_globals=self._main_globals(standins),
        )

    def _main_globals(self, standins: dict[int, RecordedModule]) -> dict[str, Any]:
        main = sys.modules.get("__main__")
        main_dict = getattr(main, "__dict__", None)
        if not isinstance(main_dict, dict):
            return {}
        reachable = [*self._globals.values(), *self._closure, *(self._defaults or ()),
                     *(self._kwdefaults or {}).values(), *self._args, *self._kwargs.values(), self._backend]
        needed = main_globals_needed(reachable, main_dict)
        return {k: self._standin_or_value(v, standins) for k, v in needed.items()}

    def _standin_or_value(self, value: Any, standins: dict[int, RecordedModule]) -> Any:
        if not isinstance(value, types.ModuleType):
            return value
        standin = standins.get(id(value))
        if standin is not None:
            return standin
        _, attrs = self._module_attrs.get(id(value), (None, {}))
        if not attrs and (isinstance(value, RecordedModule) or importable_by_name(value)):
            return value  # an importable module goes by name; a stand-in (a replay re-recorded) as it is
        name = value.__dict__.get("__name__")
        standin = RecordedModule(name if isinstance(name, str) else "<module>", importable=importable_by_name(value))
        standins[id(value)] = standin
        for attr, attr_value in attrs.items():
            standin.__dict__[attr] = self._standin_or_value(attr_value, standins)
        return standin


def importable_by_name(module: types.ModuleType) -> bool:
    """A real module that `importlib.import_module(module.__name__)` gives back (and not __main__)."""
    if isinstance(module, RecordedModule):
        return False
    name = module.__dict__.get("__name__")
    return isinstance(name, str) and name != "__main__" and sys.modules.get(name) is module


__all__ = [
    "EMPTY_CELL",
    "ExecutionRecorder",
    "Record",
    "RecordError",
    "RecordVersionWarning",
    "RecordedModule",
    "UnpicklableValue",
    "exception_type_name",
    "importable_by_name",
    "shown",
    "truncate",
]
