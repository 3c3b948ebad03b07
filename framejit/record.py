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
    record = recorder.to_record(exception)  # exception=None for a successful conversion
    path = try_write_record(record, config.debug_dir)  # never raises; None if it could not write

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

File format: b"FRAMEJIT-RECORD\\n", one line of JSON (the header: format_version,
framejit/torch/python versions, created, function, exception, payload digest),
then the dill payload. Files are created with O_EXCL and mode 0600 in a 0700
directory and never overwritten. `load_record` checks the header before
unpickling anything and refuses files owned by someone else (unpickling runs
code) unless trust=True. Every failure is a `RecordError` with a message meant
for a person.
"""

from __future__ import annotations

import builtins
import copy
import dataclasses
import datetime
import hashlib
import importlib
import importlib.metadata
import io
import json
import logging
import os
import platform
import re
import stat
import sys
import traceback
import types
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import dill
import torch

from framejit.record_values import (
    EMPTY_CELL,
    RecordedModule,
    RecordedStorage,
    UnpicklableValue,
    main_globals_needed,
    rebuild_value,
    snapshot_value,
)

if TYPE_CHECKING:
    from framejit.record_replay import ReplayResult

MAGIC = b"FRAMEJIT-RECORD\n"
FORMAT_VERSION = 1
"""Fields added to Record since (config, torch_state, resume_of, main_globals) load with their defaults
from a record that lacks them (Record.__setstate__), so they did not need a new version."""
RECORD_SUFFIX = ".rec"
_MAX_NAME_SUFFIXES = 10_000
_HEADER_MESSAGE_LIMIT = 500

log = logging.getLogger("framejit.record")


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
            f"backend: {self.backend_name or self.backend!r}{' (fullgraph)' if self.fullgraph else ''}",
            f"globals: {', '.join(sorted(k for k in self.globals if not k.startswith('__'))) or '-'}",
            f"arguments: {len(self.args)} positional, {len(self.kwargs)} keyword",
        ]
        if self.resume_of is not None:
            lines.append(f"resume function of {self.resume_of[0].co_qualname} "
                         f"({self.resume_of[0].co_filename}:{self.resume_of[0].co_firstlineno})")
        changed = {k: v for k, v in self.torch_state.items() if _DEFAULT_TORCH_STATE.get(k, v) != v}
        if changed:
            lines.append("torch state: " + ", ".join(f"{k}={v!r}" for k, v in changed.items()))
        lines.extend(f"note: {n}" for n in self.notes)
        return "\n".join(lines)

    def header(self, payload: bytes) -> dict[str, Any]:
        """The JSON header written in front of this record's payload."""
        return {
            "format_version": FORMAT_VERSION,
            "framejit_version": self.framejit_version,
            "torch_version": self.torch_version,
            "python_version": self.python_version,
            "created": self.created,
            "function": self.qualname,
            "filename": self.filename,
            "firstlineno": self.firstlineno,
            "exception_type": self.exception_type,
            "exception_message": _truncate(self.exception_message, _HEADER_MESSAGE_LIMIT),
            "payload_sha256": hashlib.sha256(payload).hexdigest(),
            "payload_size": len(payload),
        }


# torch's own defaults: describe() names only the parts of a recorded state that differ from them
_DEFAULT_TORCH_STATE = {
    "grad_enabled": True,
    "inference_mode": False,
    "autocast_cpu_enabled": False,
    "default_dtype": torch.float32,
    "deterministic_algorithms": False,
    "float32_matmul_precision": "highest",
}


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


def _truncate(text: str | None, limit: int) -> str | None:
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
        from framejit.resume import RESUME_ORIGIN     # framejit.resume does not import this module

        origin = RESUME_ORIGIN.get(fn.__code__)
        original = origin[0]() if origin is not None else None
        self._resume_of = (original, origin[1]) if original is not None else None

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
        if not attrs and (isinstance(value, RecordedModule) or _importable_by_name(value)):
            return value  # an importable module goes by name; a stand-in (a replay re-recorded) as it is
        name = value.__dict__.get("__name__")
        standin = RecordedModule(name if isinstance(name, str) else "<module>", importable=_importable_by_name(value))
        standins[id(value)] = standin
        for attr, attr_value in attrs.items():
            standin.__dict__[attr] = self._standin_or_value(attr_value, standins)
        return standin


def _importable_by_name(module: types.ModuleType) -> bool:
    """A real module that `importlib.import_module(module.__name__)` gives back (and not __main__)."""
    if isinstance(module, RecordedModule):
        return False
    name = module.__dict__.get("__name__")
    return isinstance(name, str) and name != "__main__" and sys.modules.get(name) is module


class _RecordPickler(dill.Pickler):
    """dill, except that importable modules are always pickled by name (dill pickles some by value)."""

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, types.ModuleType) and _importable_by_name(obj):
            return (importlib.import_module, (obj.__name__,))
        return NotImplemented


def _dumps(obj: Any) -> bytes:
    buffer = io.BytesIO()
    _RecordPickler(buffer).dump(obj)
    return buffer.getvalue()


class _RecordUnpickler(dill.Unpickler):
    """dill's loader over a __main__ of the record's own: dill writes the globals of a function
    defined in __main__ as "the __main__ of the loading process" (there: framejit's command line), so
    they resolve to `main`, which load_record fills with the recorded names (Record.main_globals)."""

    def __init__(self, file: io.BytesIO, main: types.ModuleType) -> None:
        super().__init__(file)
        self._main = main

    def find_class(self, module: str, name: str) -> Any:
        if module == "__main__":
            if name == "__dict__":             # how dill writes the globals of __main__'s functions
                return self._main.__dict__
            try:
                return self._main.__dict__[name]
            except KeyError:
                raise RecordError(
                    f"the record refers to {name!r} of the recording program's __main__, which it does not hold"
                ) from None
        return super().find_class(module, name)


def _loads(payload: bytes) -> tuple[Any, types.ModuleType]:
    main = types.ModuleType("__main__")
    return _RecordUnpickler(io.BytesIO(payload), main).load(), main


# ---------------------------------------------------------------------------------------------
# Writing


def _file_stem(record: Record) -> str:
    outcome = record.exception_type.rsplit(".", 1)[-1] if record.exception_type else "ok"
    parts = [record.fn_name, outcome, str(record.firstlineno)]
    safe = [re.sub(r"[^A-Za-z0-9.-]+", "-", p).strip(".-")[:60] or "x" for p in parts]
    return "_".join(safe)


def _ensure_private_dir(directory: Path) -> None:
    """Create `directory` with mode 0700, or tighten an existing one of ours that is looser."""
    try:
        os.mkdir(directory, 0o700)
    except FileExistsError:
        pass
    except OSError as exc:
        raise RecordError(f"cannot create the records directory {directory}: {exc.strerror}") from None
    st = os.lstat(directory)
    if stat.S_ISLNK(st.st_mode):
        raise RecordError(f"refusing to write records into {directory}: it is a symbolic link")
    if not stat.S_ISDIR(st.st_mode):
        raise RecordError(f"cannot write records into {directory}: it exists and is not a directory")
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        raise RecordError(
            f"refusing to write records into {directory}: it belongs to user id {st.st_uid}, not to you; "
            "set FRAMEJIT_DEBUG_DIR (or Config.debug_dir) to a directory of your own"
        )
    if stat.S_IMODE(st.st_mode) != 0o700:
        os.chmod(directory, 0o700)


def _picklable_copy(value: Any, where: str, notes: list[str], memo: dict[int, Any]) -> Any:
    if isinstance(value, RecordedModule):
        if id(value) in memo:
            return memo[id(value)]
        copied = RecordedModule(value.__name__, importable=value.__dict__.get("__recorded_importable__", False))
        memo[id(value)] = copied
        for attr, attr_value in value.recorded_attributes().items():
            copied.__dict__[attr] = _picklable_copy(attr_value, f"{where}.{attr}", notes, memo)
        return copied
    try:
        _dumps(value)
        return value
    except Exception as exc:
        reason = f"{type(exc).__name__}: {exc}"
        notes.append(f"{where} ({type(value).__name__}) could not be pickled and was replaced by a placeholder: {reason}")
        try:
            value_repr = _truncate(repr(value), 200)
        except Exception:
            value_repr = f"<{type(value).__name__} object>"
        return UnpicklableValue(exception_type_name(type(value)), value_repr or "", _truncate(reason, 300) or "")


def _picklable_record(record: Record) -> Record:
    """A copy of `record` in which every value dill cannot pickle is replaced by a placeholder."""
    notes = list(record.notes)
    memo: dict[int, Any] = {}

    def fix_mapping(mapping: dict | None, label: str) -> dict | None:
        if mapping is None:
            return None
        return {k: _picklable_copy(v, f"{label} {k!r}", notes, memo) for k, v in mapping.items()}

    def fix_sequence(values: tuple | None, label: str) -> tuple | None:
        if values is None:
            return None
        return tuple(_picklable_copy(v, f"{label} {i}", notes, memo) for i, v in enumerate(values))

    return dataclasses.replace(
        record,
        closure=fix_sequence(record.closure, "closure value") or (),
        defaults=fix_sequence(record.defaults, "default"),
        kwdefaults=fix_mapping(record.kwdefaults, "keyword default"),
        globals=fix_mapping(record.globals, "global") or {},
        builtins=fix_mapping(record.builtins, "builtin") or {},
        args=fix_sequence(record.args, "argument") or (),
        kwargs=fix_mapping(record.kwargs, "keyword argument") or {},
        backend=_picklable_copy(record.backend, "backend", notes, memo),
        main_globals=fix_mapping(record.main_globals, "__main__ global") or {},
        notes=notes,
    )


def dump_record(record: Record) -> bytes:
    """The bytes of a record file (header and payload) for `record`."""
    try:
        payload = _dumps(record)
    except Exception:
        try:
            payload = _dumps(_picklable_record(record))
        except Exception as exc:
            raise RecordError(f"could not pickle the record of {record.qualname}: {type(exc).__name__}: {exc}") from None
    header = json.dumps(record.header(payload), sort_keys=True).encode("utf-8")
    return MAGIC + header + b"\n" + payload


def write_record(record: Record, debug_dir: str | os.PathLike) -> Path:
    """Write `record` to <debug_dir>/records/<function>_<ExceptionType>_<firstlineno>[_N].rec (never overwrites)."""
    data = dump_record(record)
    debug_dir = Path(debug_dir).expanduser()
    try:
        debug_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise RecordError(f"cannot create the debug directory {debug_dir}: {exc.strerror or exc}") from None
    records_dir = debug_dir / "records"
    _ensure_private_dir(records_dir)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    stem = _file_stem(record)
    for n in range(_MAX_NAME_SUFFIXES):
        path = records_dir / f"{stem}{f'_{n}' if n else ''}{RECORD_SUFFIX}"
        try:
            fd = os.open(path, flags, 0o600)
        except FileExistsError:
            continue
        except OSError as exc:
            raise RecordError(f"cannot create the record file {path}: {exc.strerror or exc}") from None
        try:
            with os.fdopen(fd, "wb") as out:
                os.fchmod(out.fileno(), 0o600)
                out.write(data)
        except BaseException:
            path.unlink(missing_ok=True)
            raise
        return path
    raise RecordError(f"too many records named {stem}*{RECORD_SUFFIX} in {records_dir}; clean some up")


def try_write_record(record: Record, debug_dir: str | os.PathLike) -> Path | None:
    """write_record that logs instead of raising: recording must never hide the error being recorded."""
    try:
        path = write_record(record, debug_dir)
    except Exception as exc:
        log.warning("framejit: could not write an execution record for %s: %s", record.qualname, exc)
        return None
    log.info("framejit: wrote execution record %s", path)
    return path


# ---------------------------------------------------------------------------------------------
# Reading


_FILE_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a named pipe"), (stat.S_ISCHR, "a character device"),
               (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def _record_path(path: str | os.PathLike) -> Path:
    """`path` as a Path, refusing what cannot name a record file before anything is opened."""
    try:
        text = os.fspath(path)
    except TypeError:
        raise RecordError(f"a record path must be a str or os.PathLike, not {type(path).__name__}") from None
    if isinstance(text, bytes):
        text = os.fsdecode(text)
    if not text.strip():
        raise RecordError("no record file given (the path is empty); records are the .rec files in "
                          "<debug dir>/records/")
    if "\0" in text:
        raise RecordError(f"{text!r} is not a valid path (it contains a NUL character)")
    return Path(text)


def _read_file(path: Path) -> tuple[bytes, os.stat_result]:
    """The bytes of a record file. Anything but a regular file is refused before a byte is read (a named
    pipe is opened without waiting for a writer and never read from), and a file that does not start
    with the record marker is refused after reading just the marker's length."""
    flags = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise RecordError(f"no such record file: {path}") from None
    except OSError as exc:
        raise RecordError(f"cannot open record file {path}: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        for is_kind, kind in _FILE_KINDS:
            if is_kind(st.st_mode):
                hint = " (records are the .rec files in <debug dir>/records/)" if kind == "a directory" else ""
                raise RecordError(f"{path} is {kind}, not a record file{hint}")
        if not stat.S_ISREG(st.st_mode):
            raise RecordError(f"{path} is not a regular file, so it is not a framejit record")
        chunks = [_read_exactly(fd, len(MAGIC), path)]
        if chunks[0] != MAGIC:
            raise RecordError(f"{path} is not a framejit record (it does not start with the framejit record marker)")
        while True:
            chunk = _read_some(fd, 1 << 20, path)
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks), st
    finally:
        os.close(fd)


def _read_some(fd: int, size: int, path: Path) -> bytes:
    try:
        return os.read(fd, size)
    except OSError as exc:
        raise RecordError(f"cannot read record file {path}: {exc.strerror or exc}") from None


def _read_exactly(fd: int, size: int, path: Path) -> bytes:
    data = b""
    while len(data) < size:
        chunk = _read_some(fd, size - len(data), path)
        if not chunk:
            break
        data += chunk
    return data


def _split(data: bytes, path: Path) -> tuple[dict[str, Any], bytes]:
    if not data.startswith(MAGIC):
        raise RecordError(f"{path} is not a framejit record (it does not start with the framejit record marker)")
    end = data.find(b"\n", len(MAGIC))
    if end < 0:
        raise RecordError(f"{path} is a corrupt framejit record: its header line is incomplete")
    try:
        header = json.loads(data[len(MAGIC):end].decode("utf-8"))
    except (ValueError, RecursionError):          # not UTF-8, not JSON, or absurdly nested
        raise RecordError(f"{path} is a corrupt framejit record: its header is not valid JSON") from None
    required = ("format_version", "python_version", "torch_version", "payload_sha256")
    if not isinstance(header, dict) or any(k not in header for k in required):
        raise RecordError(f"{path} is a corrupt framejit record: its header lacks {', '.join(required)}")
    return header, data[end + 1:]


def read_record_header(path: str | os.PathLike) -> dict[str, Any]:
    """The JSON header of a record file, read without unpickling anything (so safe on any file)."""
    path = _record_path(path)
    data, _ = _read_file(path)
    return _split(data, path)[0]


def _check_trusted(path: Path, st: os.stat_result) -> None:
    if not hasattr(os, "getuid"):
        return
    uid = os.getuid()
    if st.st_uid != uid:
        raise RecordError(
            f"refusing to load {path}: it is owned by user id {st.st_uid}, not by you (user id {uid}). "
            "Loading a record unpickles it, which can run arbitrary code; pass trust=True (--trust) "
            "only if you trust where it came from"
        )
    if stat.S_IMODE(st.st_mode) & 0o022:
        raise RecordError(
            f"refusing to load {path}: other users can write to it (mode {stat.S_IMODE(st.st_mode):o}). "
            f"Loading a record unpickles it, which can run arbitrary code; `chmod 600 {path}` or pass "
            "trust=True (--trust) if you trust it"
        )


def _python_major_minor(version: str) -> str:
    return ".".join(str(version).split(".")[:2])


def _check_versions(header: dict[str, Any], path: Path) -> None:
    if header["format_version"] != FORMAT_VERSION:
        raise RecordError(
            f"{path} uses record format version {header['format_version']!r}, but this framejit "
            f"({framejit_version()}) reads format version {FORMAT_VERSION}"
        )
    recorded_python = str(header["python_version"])
    here = platform.python_version()
    if _python_major_minor(recorded_python) != _python_major_minor(here):
        raise RecordError(
            f"{path} was recorded with Python {recorded_python}, but this is Python {here}: code objects "
            f"only replay on the same Python major.minor version ({_python_major_minor(recorded_python)})"
        )
    if str(header["torch_version"]) != torch.__version__:
        warnings.warn(
            f"{path} was recorded with torch {header['torch_version']}, this is torch {torch.__version__}; "
            "the replay may behave differently",
            RecordVersionWarning,
            stacklevel=3,
        )


def _unpickle(payload: bytes, path: Path) -> Any:
    try:
        record, main = _loads(payload)
    except RecordError as exc:
        raise RecordError(f"could not load the contents of {path}: {exc}") from None
    except ModuleNotFoundError as exc:
        raise RecordError(
            f"{path} refers to the module {exc.name!r}, which cannot be imported here. Records store "
            "importable functions and classes by name; replay from where that module is importable "
            "(e.g. the project's directory, or with it on PYTHONPATH)"
        ) from None
    except Exception as exc:
        raise RecordError(
            f"could not load the contents of {path} ({type(exc).__name__}: {_truncate(str(exc), 300)}); "
            "the file may be damaged or refer to code that changed since it was recorded"
        ) from None
    if isinstance(record, Record):
        _fill_main(record, main)
    return record


def _fill_main(record: Record, main: types.ModuleType) -> None:
    """Give the functions of the recording program's __main__ their recorded globals; a recorded
    function from __main__ shares that namespace with them, as it did when recorded."""
    namespace = main.__dict__
    for name, value in record.main_globals.items():
        namespace.setdefault(name, value)
    if record.module_name == "__main__":
        namespace.update(record.globals)
        record.globals = namespace


def check_record_file(path: str | os.PathLike, *, trust: bool = False) -> dict[str, Any]:
    """Everything load_record checks before it unpickles anything (the file, its owner and mode, the
    header, the versions, the digest); returns the header. Raises RecordError for anything wrong."""
    return _checked(_record_path(path), trust)[0]


def _checked(path: Path, trust: bool) -> tuple[dict[str, Any], bytes]:
    data, st = _read_file(path)
    if not trust:
        _check_trusted(path, st)
    header, payload = _split(data, path)
    _check_versions(header, path)
    if len(payload) != header.get("payload_size", len(payload)) or (
        hashlib.sha256(payload).hexdigest() != header["payload_sha256"]
    ):
        raise RecordError(
            f"{path} is a corrupt framejit record: its contents do not match the digest in its header "
            "(truncated or modified)"
        )
    return header, payload


def load_record(path: str | os.PathLike, *, trust: bool = False) -> Record:
    """Read and check a record file, then unpickle it. Raises RecordError for anything wrong."""
    path = _record_path(path)
    _, payload = _checked(path, trust)
    record = _unpickle(payload, path)
    if not isinstance(record, Record):
        raise RecordError(f"{path} is a corrupt framejit record: it holds a {type(record).__name__}, not a Record")
    return record


def replay(path_or_record: "Record | str | os.PathLike", *, run: bool = False, trust: bool = False) -> "ReplayResult":
    """framejit.replay(path, run=False, trust=False): load (if given a path) and replay a record in this
    process -- convert the recorded frame again and compare the outcome (see framejit.record_replay)."""
    from framejit.record_replay import replay_record  # framejit.record_replay imports this module

    for name, value in (("run", run), ("trust", trust)):
        if not isinstance(value, bool):
            raise TypeError(f"framejit.replay({name}=...) must be True or False, got {type(value).__name__} {value!r}")
    if isinstance(path_or_record, Record):
        record = path_or_record
    else:
        record = load_record(path_or_record, trust=trust)
    return replay_record(record, run=run)


__all__ = [
    "EMPTY_CELL",
    "ExecutionRecorder",
    "FORMAT_VERSION",
    "MAGIC",
    "Record",
    "RecordError",
    "check_record_file",
    "RecordVersionWarning",
    "RecordedModule",
    "UnpicklableValue",
    "dump_record",
    "exception_type_name",
    "load_record",
    "read_record_header",
    "replay",
    "try_write_record",
    "write_record",
]

