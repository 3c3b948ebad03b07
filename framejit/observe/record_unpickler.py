"""Unpickling a record without running anything the file chose: an allow-list of what records hold.

Why this exists: a signed record (persist/signing.py) was written by framejit for this user, but what it
holds came from the user's program, and any object in a program can pickle itself as "call this
function with these arguments" (`__reduce__`): `os.system`, `subprocess.Popen`, `eval`, a function the
file itself defines. Loading a record must rebuild data, never run code the file picked, so the
unpickler here (Python's own pickle machine, with every opcode that calls something guarded) allows:

* calls (REDUCE, INST, OBJ) only to the reconstructors records are made of -- dill's (code objects,
  functions, cells, classes, namedtuples), copyreg's, torch's tensor and parameter rebuilders (storage
  bytes go through torch.load with weights_only=True), numpy's array rebuilder, `importlib.import_module`
  and `getattr` on modules and classes (dill and framejit name modules and methods that way), a short
  list of data classes (containers, torch.Size, torch.device, paths, enums...) and framejit's own
  record classes;
* instance creation (NEWOBJ, copyreg._reconstructor) of any class whose `__new__` is a C one
  (object.__new__ and the builtins' own) or one of the data classes above: creating an instance of your
  nn.Module subclass runs none of its code;
* BUILD (setting an object's state) through `__setstate__` only when the class's own code is not from
  the file; otherwise the state goes into the instance's __dict__;
* classes defined by value in the file (dill stores those from __main__) only with metaclass `type` or
  ABCMeta and without the special methods unpickling or printing could call (`__setstate__`,
  `__setattr__`, `__hash__`, `__eq__`, `__repr__`, `__del__`, `__getattr__`, `__set_name__`, descriptors
  ...): `__init__`, `__call__` and plain methods are fine, they run only when replay runs the frame;
* imports only of modules that are already imported or are not part of Python's standard library
  (your own package is imported as a plain unpickler would; `antigravity` is not).

Anything else is refused with a RecordError naming what the record asked for and saying that
trust=True (`--trust`) loads it with the unrestricted unpickler, which can run arbitrary code.
"""

from __future__ import annotations

import abc
import collections
import copyreg
import datetime
import decimal
import enum
import fractions
import functools
import importlib
import io
import pathlib
import pickle
import sys
import types
from typing import Any, Callable

import dill._dill as dill_internals
import torch

from framejit.observe.old_paths import OLD_PATHS
from framejit.observe.record_values import RecordedModule


class RefusedByRecordReader(pickle.UnpicklingError):
    """The record asks for something the restricted unpickler does not do (see the module doc)."""


# the only dunders a class defined by value in the record may define itself: data, or methods that run
# when the program (replayed) calls them, never while a record is read or described
_BY_VALUE_CLASS_DATA = frozenset({
    "__module__", "__qualname__", "__doc__", "__annotations__", "__slotnames__", "__orig_bases__",
    "__parameters__", "__dataclass_fields__", "__dataclass_params__", "__match_args__", "__abstractmethods__",
    "__firstlineno__", "__static_attributes__", "__slots__", "_abc_impl", "__dict__", "__weakref__",
})
_BY_VALUE_CLASS_METHODS = frozenset({"__init__", "__call__", "__enter__", "__exit__", "__post_init__"})
_BY_VALUE_METACLASSES = (type, abc.ABCMeta)

_DATA_CLASSES = frozenset({
    set, frozenset, list, dict, tuple, bytearray, bytes, str, int, float, complex, bool, slice, range,
    collections.OrderedDict, collections.defaultdict, collections.deque, collections.Counter,
    pathlib.PurePath, pathlib.PurePosixPath, pathlib.PureWindowsPath, pathlib.Path, pathlib.PosixPath,
    pathlib.WindowsPath, datetime.date, datetime.datetime, datetime.time, datetime.timedelta,
    datetime.timezone, decimal.Decimal, fractions.Fraction, types.SimpleNamespace,
    staticmethod, classmethod, property, functools.partial,
    torch.Size, torch.device, torch.torch_version.TorchVersion, torch.nn.Parameter,
})


def _numpy_reconstructors() -> dict[int, Any]:
    """numpy's array and scalar rebuilders, when numpy is loaded (numpy pickles arrays with them)."""
    numpy = sys.modules.get("numpy")
    if numpy is None:
        return {}
    found = {id(numpy.dtype): numpy.dtype, id(numpy.ndarray): numpy.ndarray}
    multiarray = sys.modules.get("numpy._core.multiarray") or sys.modules.get("numpy.core.multiarray")
    for name in ("_reconstruct", "scalar"):
        made = getattr(multiarray, name, None) if multiarray is not None else None
        if made is not None:
            found[id(made)] = made
    return found


def _load_storage_bytes(data: bytes) -> Any:
    """torch's storage rebuilder (torch.storage._load_from_bytes), but through the weights-only loader."""
    return torch.load(io.BytesIO(data), weights_only=True)


class RestrictedUnpickler(pickle._Unpickler):
    """dill's loader semantics (a __main__ of the record's own, old framejit paths) with every call
    checked against the allow-list in the module doc."""

    def __init__(self, file: io.BytesIO, main: types.ModuleType) -> None:
        super().__init__(file)
        self._main = main
        self._by_value: dict[int, Any] = {}       # classes and functions this file defined (kept alive)
        self._numpy = _numpy_reconstructors()
        self._calls: dict[int, Callable[..., Any]] = {
            id(copyreg._reconstructor): self._reconstructor,
            id(copyreg.__newobj__): self._newobj,
            id(getattr): self._getattr,
            id(setattr): self._setattr,
            id(importlib.import_module): self._import_module,
            id(dill_internals._import_module): self._import_module,
            id(dill_internals._get_attr): self._getattr,
            id(dill_internals._create_type): self._create_type,
            id(dill_internals._create_function): self._create_function,
            id(dill_internals._create_code): self._by_value_result(dill_internals._create_code),
            id(dill_internals._create_cell): self._by_value_result(dill_internals._create_cell),
            id(dill_internals._load_type): dill_internals._load_type,
            id(dill_internals._create_namedtuple): self._by_value_result(dill_internals._create_namedtuple),
            id(dill_internals._create_ftype): self._create_ftype,
            id(dill_internals._create_array): self._create_array,
            id(dill_internals._create_weakref): dill_internals._create_weakref,
            id(torch._utils._rebuild_tensor_v2): torch._utils._rebuild_tensor_v2,
            id(torch._utils._rebuild_tensor): torch._utils._rebuild_tensor,
            id(torch._utils._rebuild_parameter): torch._utils._rebuild_parameter,
            id(torch._utils._rebuild_parameter_with_state): self._rebuild_parameter_with_state,
            id(torch.storage._load_from_bytes): _load_storage_bytes,
            id(RecordedModule): RecordedModule,
        }

    # --- names --------------------------------------------------------------------------------

    def find_class(self, module: str, name: str) -> Any:
        if module in ("__main__", "__builtin__") and name == "__dict__" or (module, name) == ("__builtin__", "__main__"):
            return self._main.__dict__
        if module == "__main__":
            try:
                return self._main.__dict__[name]
            except KeyError:
                raise RefusedByRecordReader(
                    f"the record refers to {name!r} of the recording program's __main__, which it does not hold"
                ) from None
        if (module, name) == ("__builtin__", "NoneType"):
            return type(None)
        if module == "dill.dill":
            module = "dill._dill"
        moved = OLD_PATHS.get(module)
        if moved is not None:
            self._check_import(moved)
            try:
                return super().find_class(moved, name)
            except (ImportError, AttributeError):
                pass
        self._check_import(module)
        return super().find_class(module, name)

    def _check_import(self, module: str) -> None:
        if module in sys.modules:
            return
        top = module.split(".")[0]
        if top in sys.stdlib_module_names or top in sys.builtin_module_names:
            raise RefusedByRecordReader(f"the record imports the standard-library module {module!r}, which "
                                        "is not loaded in this process")

    # --- calls --------------------------------------------------------------------------------

    def _call(self, func: Any, args: tuple, kwargs: dict | None = None) -> Any:
        checked = self._calls.get(id(func))
        if checked is None:
            checked = self._numpy.get(id(func))
        if checked is None and isinstance(func, type) and self._is_data_class(func):
            checked = func
        if checked is None:
            raise RefusedByRecordReader(f"the record calls {_name(func)}, which is not among the "
                                        "reconstructors records are made of")
        return checked(*args, **(kwargs or {}))

    def _is_data_class(self, cls: type) -> bool:
        if id(cls) in self._by_value:
            return False
        if cls in _DATA_CLASSES or isinstance(cls, enum.EnumMeta):
            return True
        return issubclass(cls, tuple) and hasattr(cls, "_fields") and self._builtin_new(cls)

    def _builtin_new(self, cls: type) -> bool:
        """cls.__new__ runs no Python code (object.__new__, tuple.__new__, ...), or is a namedtuple's."""
        new = cls.__new__
        if isinstance(new, types.BuiltinFunctionType):
            return True
        globals_ = getattr(new, "__globals__", None)
        return (isinstance(new, types.FunctionType) and id(new) not in self._by_value
                and isinstance(globals_, dict) and str(globals_.get("__name__", "")).startswith("namedtuple_")
                and issubclass(cls, tuple))

    def _instantiable(self, cls: Any) -> type:
        if not isinstance(cls, type):
            raise RefusedByRecordReader(f"the record creates an instance of {_name(cls)}, which is not a class")
        if not (self._builtin_new(cls) or self._is_data_class(cls)):
            raise RefusedByRecordReader(f"the record creates a {_name(cls)}, whose __new__ would run Python code")
        return cls

    def _newobj(self, cls: Any, *args: Any) -> Any:
        return self._instantiable(cls).__new__(cls, *args)

    def _reconstructor(self, cls: Any, base: Any, state: Any) -> Any:
        self._instantiable(cls)
        if base is not object and base not in _DATA_CLASSES:
            raise RefusedByRecordReader(f"the record rebuilds a {_name(cls)} from {_name(base)}, which would run its code")
        return copyreg._reconstructor(cls, base, state)

    def _getattr(self, obj: Any, name: Any, *default: Any) -> Any:
        if type(name) is not str or not isinstance(obj, (types.ModuleType, type)):
            raise RefusedByRecordReader(f"the record reads an attribute of a {type(obj).__name__} (only modules' "
                                        "and classes' attributes are looked up while loading)")
        if isinstance(obj, type) and type(obj) not in _BY_VALUE_METACLASSES and not isinstance(obj, enum.EnumMeta) \
                and type(obj).__module__.split(".")[0] not in ("torch", "builtins", "framejit"):
            raise RefusedByRecordReader(f"the record reads {name!r} of {_name(obj)}, whose metaclass "
                                        f"{_name(type(obj))} could run code")
        return getattr(obj, name, *default)

    def _setattr(self, obj: Any, name: Any, value: Any) -> None:
        if id(obj) not in self._by_value or type(name) is not str:
            raise RefusedByRecordReader(f"the record sets an attribute of {_name(obj)}, which it did not define")
        if isinstance(obj, types.CellType) and name != "cell_contents":
            raise RefusedByRecordReader(f"the record sets {name!r} of a cell")
        if isinstance(obj, type):
            self._check_class_member(obj.__qualname__, name, value)
        setattr(obj, name, value)           # (dill fills cells and classes that refer to themselves so)

    def _import_module(self, name: Any, *rest: Any) -> Any:
        if type(name) is not str:
            raise RefusedByRecordReader("the record imports a module by a name that is not a string")
        self._check_import(name)
        return importlib.import_module(name)

    def _by_value_result(self, make: Callable[..., Any]) -> Callable[..., Any]:
        def made(*args: Any, **kwargs: Any) -> Any:
            result = make(*args, **kwargs)
            self._by_value[id(result)] = result
            return result
        return made

    def _create_function(self, fcode: Any, fglobals: Any, fname: Any = None, fdefaults: Any = None,
                         fclosure: Any = None, fdict: Any = None, fkwdefaults: Any = None) -> Any:
        # plain dicts and tuples only: a dict subclass the file defined would run its methods on update
        for part in (fglobals, fdict, fkwdefaults):
            if part is not None and type(part) is not dict:
                raise RefusedByRecordReader(f"the record makes a function from a {_name(part)}, not a dict")
        for part in (fdefaults, fclosure):
            if part is not None and type(part) is not tuple:
                raise RefusedByRecordReader(f"the record makes a function from a {_name(part)}, not a tuple")
        return self._by_value_result(dill_internals._create_function)(fcode, fglobals, fname, fdefaults, fclosure,
                                                                      fdict, fkwdefaults)

    def _create_type(self, metaclass: Any, name: Any = None, bases: Any = (), namespace: Any = None, *rest: Any) -> Any:
        if metaclass not in _BY_VALUE_METACLASSES or rest or type(name) is not str \
                or type(bases) is not tuple or type(namespace) is not dict:
            raise RefusedByRecordReader(f"the record defines a class {name!r} with metaclass {_name(metaclass)}, "
                                        "which could run code as the class is made")
        for base in bases:
            if not isinstance(base, type):
                raise RefusedByRecordReader(f"the record defines a class {name!r} on a base that is not a class")
        for member, value in namespace.items():
            self._check_class_member(name, member, value)
        return self._by_value_result(dill_internals._create_type)(metaclass, name, bases, namespace)

    def _check_class_member(self, class_name: str, member: Any, value: Any) -> None:
        if type(member) is not str:
            raise RefusedByRecordReader(f"the record defines a class {class_name!r} with a member named by a "
                                        f"{type(member).__name__}")
        if not (member.startswith("__") and member.endswith("__")) and member != "_abc_impl":
            return
        if member in _BY_VALUE_CLASS_METHODS and (isinstance(value, types.FunctionType) or value is None):
            return
        if member in _BY_VALUE_CLASS_DATA and id(value) not in self._by_value:
            return
        raise RefusedByRecordReader(f"the record defines a class {class_name!r} with its own {member}, which "
                                    "loading or printing the record could call")

    def _create_ftype(self, ftype: Any, func: Any, args: Any, kwds: Any) -> Any:
        if ftype not in (staticmethod, classmethod, property, functools.partial, types.MethodType):
            raise RefusedByRecordReader(f"the record wraps a function in {_name(ftype)}")
        return dill_internals._create_ftype(ftype, func, args, kwds)

    def _create_array(self, make: Any, args: Any, state: Any, npdict: Any = None) -> Any:
        if id(make) not in self._numpy:
            raise RefusedByRecordReader(f"the record rebuilds an array with {_name(make)}")
        return dill_internals._create_array(make, args, state, npdict)

    def _rebuild_parameter_with_state(self, data: Any, requires_grad: Any, backward_hooks: Any, state: Any) -> Any:
        # torch's version sets the state with setattr on the new Parameter: only plain data goes in
        parameter = torch._utils._rebuild_parameter(data, requires_grad, backward_hooks)
        if state is not None:
            if type(state) is not dict:
                raise RefusedByRecordReader("the record gives a Parameter a state that is not a dict")
            parameter.__dict__.update(state)
        return parameter

    # --- the opcodes that call ---------------------------------------------------------------------

    dispatch = dict(pickle._Unpickler.dispatch)

    def load_reduce(self) -> None:
        stack = self.stack
        args = stack.pop()
        if type(args) is not tuple:
            raise RefusedByRecordReader("the record calls something with arguments that are not a tuple")
        stack[-1] = self._call(stack[-1], args)
    dispatch[pickle.REDUCE[0]] = load_reduce

    def _instantiate(self, klass: Any, args: Any) -> None:
        if not isinstance(klass, type) or not self._is_data_class(klass):
            raise RefusedByRecordReader(f"the record instantiates {_name(klass)} with INST/OBJ")
        self.append(self._call(klass, tuple(args)))

    def load_newobj(self) -> None:
        args = self.stack.pop()
        cls = self.stack.pop()
        if type(args) is not tuple:
            raise RefusedByRecordReader(f"the record creates a {_name(cls)} from arguments that are not a tuple")
        self.append(self._newobj(cls, *args))
    dispatch[pickle.NEWOBJ[0]] = load_newobj

    def load_newobj_ex(self) -> None:
        kwargs = self.stack.pop()
        args = self.stack.pop()
        cls = self.stack.pop()
        if type(kwargs) is not dict or kwargs or type(args) is not tuple:
            raise RefusedByRecordReader(f"the record creates a {_name(cls)} with keyword arguments to __new__")
        self.append(self._newobj(cls, *args))
    dispatch[pickle.NEWOBJ_EX[0]] = load_newobj_ex

    def load_build(self) -> None:
        stack = self.stack
        state = stack.pop()
        inst = stack[-1]
        cls = type(inst)
        if isinstance(inst, types.FunctionType) and id(inst) in self._by_value:
            self._build_function(inst, state)      # dill: a function's __dict__ and its attributes
            return
        if isinstance(inst, type) or id(inst) in self._by_value:
            raise RefusedByRecordReader(f"the record sets the state of {_name(inst)} with BUILD")
        setstate = getattr(cls, "__setstate__", None)
        if setstate is not None:
            if id(setstate) in self._by_value or id(getattr(setstate, "__func__", None)) in self._by_value:
                raise RefusedByRecordReader(f"the record's {_name(cls)}.__setstate__ was defined by the record")
            setstate(inst, state)
            return
        state, slotstate = _state_parts(state, cls)
        if state:
            inst.__dict__.update(state)
        if slotstate:
            if cls.__setattr__ is not object.__setattr__:
                raise RefusedByRecordReader(f"the record sets slots of a {_name(cls)} through its __setattr__")
            for key, value in slotstate.items():
                object.__setattr__(inst, key, value)
    dispatch[pickle.BUILD[0]] = load_build

    def _build_function(self, fn: types.FunctionType, state: Any) -> None:
        """Attributes of a function the record defined: setting them runs nothing."""
        state, slotstate = _state_parts(state, fn)
        fn.__dict__.update(state)
        for key, value in slotstate.items():
            if type(key) is not str:
                raise RefusedByRecordReader(f"the record sets an attribute of {_name(fn)} named by a non-string")
            setattr(fn, key, value)

    def _check_container(self, obj: Any, what: str) -> None:
        """Items go into lists, dicts and sets, and into instances of installed classes (whose
        append/extend/__setitem__ are installed code); never into an instance of a class the record
        defined, whose methods would be the file's code."""
        for klass in type(obj).__mro__:
            if id(klass) in self._by_value:
                raise RefusedByRecordReader(f"the record {what} a {_name(type(obj))}, whose own methods it defined")

    def load_append(self) -> None:
        value = self.stack.pop()
        self._check_container(self.stack[-1], "appends to")
        self.stack[-1].append(value)
    dispatch[pickle.APPEND[0]] = load_append

    def load_appends(self) -> None:
        items = self.pop_mark()
        self._check_container(self.stack[-1], "appends to")
        self.stack[-1].extend(items)
    dispatch[pickle.APPENDS[0]] = load_appends

    def load_setitem(self) -> None:
        value = self.stack.pop()
        key = self.stack.pop()
        self._check_container(self.stack[-1], "sets items of")
        self.stack[-1][key] = value
    dispatch[pickle.SETITEM[0]] = load_setitem

    def load_setitems(self) -> None:
        items = self.pop_mark()
        target = self.stack[-1]
        self._check_container(target, "sets items of")
        for i in range(0, len(items), 2):
            target[items[i]] = items[i + 1]
    dispatch[pickle.SETITEMS[0]] = load_setitems

    def load_additems(self) -> None:
        items = self.pop_mark()
        target = self.stack[-1]
        self._check_container(target, "adds items to")
        target.update(items)
    dispatch[pickle.ADDITEMS[0]] = load_additems


def _state_parts(state: Any, owner: Any) -> tuple[dict, dict]:
    """(instance dict state, slot state) of a BUILD, each a plain dict (empty when absent)."""
    slotstate = None
    if type(state) is tuple and len(state) == 2:
        state, slotstate = state
    for part in (state, slotstate):
        if part is not None and type(part) is not dict:
            raise RefusedByRecordReader(f"the record gives {_name(owner)} a state that is not a dict")
    return state or {}, slotstate or {}


def _name(obj: Any) -> str:
    """A name for what a record asked for, without calling anything of it (no repr, no __getattr__)."""
    cls = obj if isinstance(obj, type) else type(obj)
    try:
        module = type.__getattribute__(cls, "__module__") if isinstance(obj, type) else None
        qualname = type.__getattribute__(cls, "__qualname__")
    except Exception:
        return "an object"
    if isinstance(obj, type):
        return f"the class {module}.{qualname}"
    if isinstance(obj, (types.FunctionType, types.BuiltinFunctionType)):
        fn_module = obj.__module__ if isinstance(obj.__module__, str) else "?"
        fn_name = obj.__qualname__ if isinstance(obj.__qualname__, str) else "?"
        return f"{fn_module}.{fn_name}"
    return f"a {qualname}"


def restricted_loads(payload: bytes) -> tuple[Any, types.ModuleType]:
    """The object in `payload` and the __main__ made for it, through the allow-list."""
    main = types.ModuleType("__main__")
    return RestrictedUnpickler(io.BytesIO(payload), main).load(), main


__all__ = ["RefusedByRecordReader", "RestrictedUnpickler", "restricted_loads"]
