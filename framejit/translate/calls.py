"""Calls: what happens when the frame calls something.

`call_value` decides, in this order, by explicit tables:
  1. lookasides (builtins, operator, math): symbolic stand-ins;
  2. "is a compiler tracing?" predicates: answer True;
  3. torch callables: a graph node (tensor args or factories), or a constant (CONSTANT_FUNCTIONS);
  4. tensor / container / constant methods;
  5. Python functions, bound methods, properties, nn.Modules: inlined (a child Translator);
  6. anything else (C functions, opaque callables): a graph break at the call.
"""
import functools
import inspect
import types

import torch

from ..errors import GraphBreak
from .context import CONST_TYPES, default_device
from .values.attrs import load_attr
from .lookasides.builtins_table import LOOKASIDES, as_python, unpack_iterable
from .values.containers.subscripts import call_container_method
from .source import AttrSource, ItemSource, fixed_source
from .lookasides.torch_table import (compiling_answer, graph_target, CONSTANT_FUNCTIONS, FACTORY_FUNCTIONS, LIKE_FACTORIES,
                          STATE_QUERIES, TENSOR_BREAK_METHODS, TENSOR_CONST_METHODS, is_autograd_function_apply,
                          is_graph_op, is_tensor_method_descriptor)
from .values.tensors.ndarrays import NdarrayValue
from .lookasides.autograd_functions import check_forward
from .values.objects.descriptor_calls import call_descriptor_get, is_descriptor_get
from .values.base import Const, DictValue, IteratorValue, MethodValue, ObjectValue, SeqValue, SetValue, TensorValue, Value, \
    iterated_sequence
from .lookasides import numpy_calls
from .lookasides.stdlib import method_lookaside
from .lookasides.lru_cached_calls import cached_call
from .lookasides import symbolic_factories
from ..dynamo_reads import is_compiler_disabled
from .lookasides.optimizers import tensor_value_rewrite
from .dispatch import CODE_LOOKASIDES
from .lookasides.process_state import process_lookaside
from .lookasides.str_format import format_values
from .values.managers.state_managers import CONTEXTMANAGER_HELPER_CODE, MANAGER_FACTORIES, TORCH_DECORATOR_CODE
from .values.managers.manager_call_paths import contextmanager_call, torch_decorated_call
from .values.objects.exception_values import builtin_protocol, instantiate
from .guards.identity import is_bound_builtin
from .values.objects.instance_dicts import is_instance_dict
from .values.objects.weak_refs import call_outside_ref, is_weak_ref
from .values.functions.function_values import FunctionValue, bind_arguments
from .values.tensors.tensor_type import tensor_type_method
from .values.tensors import tensor_subclasses
from .values.tensors import tensor_subclass_members
from .values.dicts.dict_kinds import fromkeys as dict_fromkeys, fromkeys_callable
from .values.numbers.sym_values import symbolic_metadata
from .values.dicts.identity_hashed_keys import has_tensor_keys
from .values.iterators.generators import make_generator
from .lookasides.state_calls import call_watching_state, is_state_setter, setter_break
from .lookasides.random_seeding import seeding_call

# Python modules whose functions are never inlined: calling them is a graph break (an opaque call).
NEVER_INLINE_PREFIXES = ("torch._", "torch.autograd", "torch.utils", "torch.distributed", "torch.fx",
                         "importlib", "logging", "threading", "multiprocessing", "subprocess", "os", "sys",
                         "inspect", "abc", "copy", "pickle", "io", "warnings", "traceback", "weakref")


def call_value(tx, fn, args, kwargs):
    if isinstance(fn, MethodValue):
        return call_method(tx, fn.receiver, fn.name, args, kwargs)
    if isinstance(fn, (ObjectValue, Const)):
        obj = fn.obj if isinstance(fn, ObjectValue) else fn.value
        return call_object(tx, fn, obj, args, kwargs)
    if isinstance(fn, FunctionValue) and fn.code.co_flags & inspect.CO_GENERATOR:
        return generator_of_function_value(tx, fn, args, kwargs)
    return fn.call(tx, args, kwargs)


def _hashable(obj):
    try:
        hash(obj)
        return True
    except TypeError:
        return False


def call_object(tx, fn_value, obj, args, kwargs):
    if is_weak_ref(obj):                    # ref(): its referent, guarded (values/objects/weak_refs.py)
        return call_outside_ref(tx, fn_value, obj, args, kwargs)
    hashable = _hashable(obj)
    if hashable:
        if is_state_setter(obj):              # torch.set_default_dtype, torch.manual_seed, ...
            seeded = seeding_call(tx, obj, args, kwargs)      # a seed: a node in the graph
            if seeded is not None:
                return seeded
            raise setter_break(obj)
        impl = LOOKASIDES.get(obj) or process_lookaside(obj)
        if impl is not None:
            return impl(tx, args, kwargs)
        if obj in numpy_calls.TORCH_READERS and args and isinstance(args[0], NdarrayValue):
            return numpy_calls.torch_of_ndarray(tx, obj, args, kwargs)     # torch.as_tensor(ndarray)
        compiling = compiling_answer(obj)      # torch.compiler.is_compiling() and friends
        if compiling is not None:
            return Const(compiling)
        if obj in CONSTANT_FUNCTIONS or obj in STATE_QUERIES:
            if obj in tx.ctx.entry_state or obj in STATE_QUERIES:
                tx.ctx.guard_state(default_device if obj is torch.get_default_device else obj)
            return _const_call(tx, obj, args, kwargs)
        make_manager = MANAGER_FACTORIES.get(obj)
        if make_manager is not None:
            return make_manager(tx, args, kwargs)
        method_impl = method_lookaside(obj) if isinstance(obj, types.MethodType) else None
        if method_impl is not None:
            # a bound method whose function has a stand-in (e.g. transformers' Logger.warning_once)
            src = AttrSource(fn_value.source, "__self__") if fn_value.source is not None else None
            receiver = tx.ctx.wrap(obj.__self__, src) if src is not None else ObjectValue(obj.__self__)
            return method_impl(tx, [receiver, *args], kwargs)
    if hashable and is_bound_builtin(obj):     # d.get(k) on a real dict: the lookaside of dict.get
        descriptor = getattr(type(obj.__self__), obj.__name__, None) if not isinstance(obj.__self__, type) else None
        impl = LOOKASIDES.get(descriptor) if _hashable(descriptor) else None
        if impl is not None and not isinstance(fn_value.source, AttrSource) and is_instance_dict(obj.__self__):
            raise GraphBreak("call", f"{obj.__name__} of an object's __dict__ reached without the object: "
                             "its attributes change under the frame's model of them, so the call runs as Python")
        if impl is not None:
            src = AttrSource(fn_value.source, "__self__") if fn_value.source is not None else None
            receiver = tx.ctx.wrap(obj.__self__, src) if src is not None else ObjectValue(obj.__self__)
            return impl(tx, [receiver, *args], kwargs)
    if hashable and tensor_subclasses.any_overloaded(tx, [*args, *kwargs.values()]) and \
            (is_graph_op(obj) or is_tensor_method_descriptor(obj)):
        out = tensor_subclasses.callable_call(tx, obj, args, kwargs)      # a subclass's __torch_function__
        if out is not tensor_subclasses.NOT_DISPATCHED:
            return out
        if isinstance(obj, types.FunctionType) and not obj.__module__.startswith("torch._"):
            return inline_function(tx, obj, fn_value.source, args, kwargs)   # its inner ops dispatch
    if is_tensor_method_descriptor(obj) and args and isinstance(args[0], TensorValue):
        return call_method(tx, args[0], obj.__name__, args[1:], kwargs)
    if hashable and is_autograd_function_apply(obj):
        check_forward(tx, obj.__self__, args, kwargs)      # a forward with side effects is a break
    if hashable and is_graph_op(obj) and isinstance(obj, types.FunctionType) and \
            any(_is_callable_argument(a) for a in [*args, *kwargs.values()]):
        # a torch Python function given a callable (F.triplet_margin_with_distance_loss's distance
        # function, a module): no graph node can hold it, so the function's code is inlined
        return inline_function(tx, obj, fn_value.source, args, kwargs)
    if hashable and is_graph_op(obj):
        if any(_has_tensor(a) for a in args) or any(_has_tensor(v) for v in kwargs.values()) or \
                obj in FACTORY_FUNCTIONS:
            if obj in FACTORY_FUNCTIONS and "device" not in kwargs and obj not in LIKE_FACTORIES:
                tx.ctx.guard_state(default_device)            # the result's device may be the default
            if obj in symbolic_factories.FACTORIES and symbolic_factories.symbolic_data(args, kwargs):
                return symbolic_factories.tensor_of_numbers(tx, args, kwargs)    # a symbolic int stays symbolic
            return tx.ctx.graph.call_function(graph_target(obj), tuple(args), kwargs)
        return _const_call(tx, obj, args, kwargs, watch_state=True)
    inner = getattr(obj, "_framejit_fn", None) if isinstance(obj, types.FunctionType) else None
    if inner is not None:                 # a framejit.compile wrapper: inline the function it wraps
        src = AttrSource(fn_value.source, "_framejit_fn") if fn_value.source is not None else None
        return call_value(tx, tx.ctx.wrap(inner, src) if src is not None else ObjectValue(inner), args, kwargs)
    special = tx.ctx.special_calls.get(obj) if hashable else None
    if special is not None:
        return special(tx, args, kwargs)
    if isinstance(obj, types.FunctionType):
        return inline_function(tx, obj, fn_value.source, args, kwargs)
    if isinstance(obj, types.MethodType) and getattr(obj.__func__, "_framejit_fn", None) is not None and \
            isinstance(obj.__func__, types.FunctionType):
        # a compiled function bound to an object (a module compiled in place): inline the function it wraps
        src = fn_value.source
        inner = tx.ctx.wrap(obj.__func__._framejit_fn, AttrSource(AttrSource(src, "__func__"), "_framejit_fn")) \
            if src is not None else ObjectValue(obj.__func__._framejit_fn)
        self_value = tx.ctx.wrap(obj.__self__, AttrSource(src, "__self__")) if src is not None else \
            ObjectValue(obj.__self__)
        return call_value(tx, inner, [self_value, *args], kwargs)
    if isinstance(obj, types.MethodType) and isinstance(obj.__func__, types.FunctionType):
        self_source = AttrSource(fn_value.source, "__self__") if fn_value.source is not None else None
        self_value = tx.ctx.wrap(obj.__self__, self_source) if self_source is not None else ObjectValue(obj.__self__)
        return inline_function(tx, obj.__func__, None, [self_value, *args], kwargs)
    if isinstance(obj, functools.partial):
        src = fn_value.source
        pargs = [tx.ctx.wrap(a, ItemSource(AttrSource(src, "args"), i)) if src else ObjectValue(a) for i, a in enumerate(obj.args)]
        pkw = {k: (tx.ctx.wrap(v, ItemSource(AttrSource(src, "keywords"), k)) if src else ObjectValue(v)) for k, v in obj.keywords.items()}
        inner = tx.ctx.wrap(obj.func, AttrSource(src, "func")) if src else ObjectValue(obj.func)
        return call_value(tx, inner, [*pargs, *args], {**pkw, **kwargs})
    if isinstance(obj, torch.nn.Module):
        return tx.ctx.call_module(tx, fn_value, args, kwargs)
    if isinstance(obj, type):
        if issubclass(obj, BaseException) and builtin_protocol(obj):      # SomeError(...) to be raised
            return instantiate(tx, obj, args, kwargs)
        return tx.ctx.construct(tx, fn_value, obj, args, kwargs)
    if _is_subclasses_call(obj) and fn_value.source is not None and not args and not kwargs:
        return _subclasses(tx, obj.__self__, AttrSource(fn_value.source, "__self__"))
    if _is_constant_classmethod(obj) and all(isinstance(a, Const) for a in [*args, *kwargs.values()]):
        return _const_call(tx, obj, args, kwargs)      # int.from_bytes, bytes.fromhex, str.maketrans...
    fromkeys_owner = fromkeys_callable(obj)
    if fromkeys_owner is not None:                # MyDict.fromkeys(...): a builtin classmethod of a dict kind
        return dict_fromkeys(tx, fromkeys_owner, args, kwargs)
    if is_descriptor_get(obj):                  # torch.Tensor.shape.__get__(x): values/objects/descriptor_calls.py
        return call_descriptor_get(tx, obj, args, kwargs)
    call_method_fn = _python_call_method(obj)
    if call_method_fn is not None:              # an instance of a Python class with __call__
        return inline_function(tx, call_method_fn, None, [fn_value, *args], kwargs)
    name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None) or type(obj).__name__
    if isinstance(obj, _LRU_WRAPPER):
        # its cache is real state (inlining __wrapped__ would not get it right): answered now when the
        # arguments are known, else a break (lookasides/lru_cached_calls.py)
        return cached_call(tx, obj, name, args, kwargs)
    raise GraphBreak("call", f"call to {name} cannot be put in a graph (not a torch op and not Python code "
                     "framejit can inline)")


_LRU_WRAPPER = type(functools.lru_cache(None)(lambda: None))
_CALLABLE_KINDS = (types.FunctionType, types.MethodType, types.BuiltinFunctionType, functools.partial)


def _is_callable_argument(v):
    """Is this argument a function, method or module (something a graph node cannot take)?"""
    if isinstance(v, (Const, TensorValue, SeqValue, DictValue)):
        return False
    try:
        kind = v.python_type()
    except Exception:
        return False
    return isinstance(kind, type) and (issubclass(kind, _CALLABLE_KINDS) or issubclass(kind, torch.nn.Module))


_CONSTANT_CLASSES = (int, float, complex, str, bytes)


def _is_constant_classmethod(obj):
    """A builtin classmethod of an immutable builtin type: a pure function of constant arguments.

    The owner is compared by identity: a bound method's __self__ may be any object (a tensor subclass
    whose __torch_function__ sees every ==, a user object with its own __eq__), and `in` would call
    its __eq__ at translation time, an effect the eager call does not have."""
    if not isinstance(obj, types.BuiltinMethodType):
        return False
    owner = getattr(obj, "__self__", None)
    return any(owner is cls for cls in _CONSTANT_CLASSES)


def _is_subclasses_call(obj):
    return isinstance(obj, types.BuiltinMethodType) and getattr(obj, "__name__", None) == "__subclasses__" \
        and isinstance(getattr(obj, "__self__", None), type)


def _subclasses(tx, cls, cls_source):
    """cls.__subclasses__(): the live subclasses, guarded on every call (classes come and go)."""
    from .guards.identity import FactSource
    listed = FactSource("{0}.__subclasses__()", (cls_source,))
    found = cls.__subclasses__()
    # which classes, by id and name, not by a reference: a guard must not keep a subclass alive (it would
    # stay in the list after eager code dropped it); what the frame reads off them is guarded as usual
    tx.ctx.guards.add("CONST_MATCH", FactSource("tuple([(id(c), c.__qualname__) for c in {0}.__subclasses__()])",
                                                (cls_source,)), tuple((id(c), c.__qualname__) for c in found))
    return SeqValue(list, [tx.ctx.wrap(c, ItemSource(listed, i), guard=False) for i, c in enumerate(found)])


def _python_call_method(obj):
    from .guards.identity import is_plain_instance
    if not is_plain_instance(obj):
        return None
    fn = inspect.getattr_static(type(obj), "__call__", None)
    return fn if isinstance(fn, types.FunctionType) else None


def _has_tensor(v):
    if isinstance(v, TensorValue):
        return True
    if isinstance(v, SeqValue):
        return any(_has_tensor(i) for i in v.items)
    if isinstance(v, DictValue):
        return any(_has_tensor(i) for i in v.items.values()) or has_tensor_keys(v.items)
    return False


def _const_call(tx, fn, args, kwargs, watch_state=False):
    """Call `fn` for real on constants (watch_state: a torch callable not known to be a pure query, which
    is a graph break if it changes global state: lookasides/state_calls.py)."""
    if fn in (torch.is_tensor,):
        return Const(isinstance(args[0], TensorValue))
    if fn in (torch.is_floating_point, torch.is_complex, torch.numel):
        # metadata of the one tensor, given by position or as `input=` (as torch's own signature names it)
        given = [*args, *kwargs.values()]
        if len(given) == 1 and isinstance(given[0], TensorValue) and set(kwargs) <= {"input"}:
            return Const(fn(given[0].fake))
    if any(_has_tensor(a) for a in args):
        raise GraphBreak("call", f"{fn.__name__} on a tensor is not supported")
    real_args = [as_python(a) for a in args]
    real_kwargs = {k: as_python(v) for k, v in kwargs.items()}
    try:
        if watch_state:
            out = call_watching_state(tx, fn, lambda: fn(*real_args, **real_kwargs))
        else:
            out = fn(*real_args, **real_kwargs)
    except GraphBreak:
        raise
    except Exception as e:
        raise GraphBreak("constant call raised", f"{getattr(fn, '__name__', fn)} raised {type(e).__name__}: {e}")
    from .context import wrap_unsourced
    return wrap_unsourced(out)


# ---- methods ------------------------------------------------------------------------------------

def call_method(tx, recv, name, args, kwargs):
    if isinstance(recv, TensorValue):
        return call_tensor_method(tx, recv, name, args, kwargs)
    if isinstance(recv, (SeqValue, DictValue, SetValue)):
        return call_container_method(tx, recv, name, args, kwargs)
    if isinstance(recv, Const):
        if isinstance(recv.value, str) and name == "join":
            return Const(recv.value.join(as_python(x) for x in unpack_iterable(tx, args[0])))
        # methods of constants run for real on arguments made only of constants (str.format(d=...),
        # format_map, translate, ...); anything else (tensors, objects) is a GraphBreak from as_python
        try:
            real_args = [as_python(a) for a in args]
            real_kwargs = {k: as_python(v) for k, v in kwargs.items()}
        except GraphBreak:
            if name == "format" and type(recv.value) is str:     # '{0.x}'.format(obj): field by field
                return format_values(tx, recv.value, args, kwargs)
            raise
        try:
            out = getattr(recv.value, name)(*real_args, **real_kwargs)
        except Exception as e:
            raise GraphBreak("constant op raised", f"{type(recv.value).__name__}.{name} raised {type(e).__name__}: {e}")
        from .context import wrap_unsourced
        if hasattr(type(out), "__next__"):   # range(3).__iter__(), "ab".__iter__(): an iterator of the frame's own
            seq = recv.value if name == "__iter__" else recv.value[::-1] if type(recv.value) is range else None
            return IteratorValue([wrap_unsourced(x) for x in out], iterated_sequence(Const(seq)))
        return wrap_unsourced(out)
    if isinstance(recv, ObjectValue):
        return call_object_method(tx, recv, name, args, kwargs)
    return recv.call_method(tx, name, args, kwargs)


def call_tensor_method(tx, t, name, args, kwargs):
    if t.cls is not None:                   # a tensor subclass instance (values/tensors/tensor_subclasses.py)
        out = tensor_subclass_members.subclass_method(tx, t, name, args, kwargs)
        if out is not tensor_subclasses.NOT_DISPATCHED:
            return out
    if name == "as_subclass":
        return tensor_subclass_members.as_subclass(tx, t, args, kwargs)
    if name == "type":                      # x.type() / x.type(torch.float64): values/tensors/tensor_type.py
        return tensor_type_method(tx, t, args, kwargs)
    if name in TENSOR_CONST_METHODS:
        if name in ("size", "numel", "nelement", "stride") and not kwargs:
            out = symbolic_metadata(tx, t, name, args)     # dynamic shapes: graph values, not constants
            if out is not None:
                return out
        if any(not isinstance(a, Const) for a in args):
            raise GraphBreak("method", f"tensor.{name} with non-constant arguments")
        out = getattr(t.fake, name)(*[a.value for a in args], **{k: v.value for k, v in kwargs.items()})
        return Const(tuple(out) if isinstance(out, list) else out)
    if name == "numpy":
        return numpy_calls.tensor_numpy(tx, t, args, kwargs)
    if name == "item" and not args and not kwargs and tx.ctx.config.capture_data_dependent:
        return tx.ctx.graph.call_method("item", (t,), {})      # an unbacked SymInt/SymFloat (Config)
    if name == "__len__" and not args and not kwargs:     # x.__len__() is len(x): a size, not data
        return LOOKASIDES[len](tx, [t], {})
    if name == "__iter__" and not args and not kwargs:    # x.__iter__() is iter(x): its rows (unbind), not data
        return LOOKASIDES[iter](tx, [t], {})
    if name in TENSOR_BREAK_METHODS:
        raise GraphBreak("data-dependent", f"tensor.{name}() needs the tensor's data, which a graph does not have")
    if name in ("requires_grad_",) and t.source is not None:
        wanted = (args[0] if args else kwargs.get("requires_grad", Const(True)))
        if len(args) + len(kwargs) <= 1 and set(kwargs) <= {"requires_grad"} and isinstance(wanted, Const) \
                and type(wanted.value) is bool and wanted.value == t.fake.requires_grad:
            return t        # asks for the flag the input already has (its guard fixes it): changes nothing
        raise GraphBreak("method", "requires_grad_ on an input tensor")
    rewritten = tensor_value_rewrite(tx, t, name, args, kwargs)    # value=<0-dim tensor> (optimizers)
    if rewritten is not None:
        return rewritten
    out = tx.ctx.graph.call_method(name, (t, *args), kwargs)
    if name.endswith("_") and not name.endswith("__") and isinstance(out, TensorValue):
        return t          # in-place: the same tensor object
    return out


def call_object_method(tx, recv, name, args, kwargs):
    obj = recv.obj
    try:
        static = inspect.getattr_static(type(obj), name)
    except AttributeError:
        static = None
    if isinstance(static, staticmethod):
        return call_value(tx, ObjectValue(static.__func__), args, kwargs)
    if isinstance(static, classmethod):
        return inline_function(tx, static.__func__, None, [ObjectValue(type(obj)), *args], kwargs)
    if isinstance(static, types.FunctionType):
        return inline_function(tx, static, None, [recv, *args], kwargs)
    attr = load_attr(tx, recv, name)
    if isinstance(attr, MethodValue) and attr.receiver is recv:
        raise GraphBreak("method", f"{type(obj).__name__}.{name} is not supported")
    return call_value(tx, attr, args, kwargs)


# ---- inlining -----------------------------------------------------------------------------------

def inline_function(tx, fn, fn_source, args, kwargs, *, closure_values=None, defaults=None, kwdefaults=None):
    """Run a Python function's code symbolically in a child translator and return its value
    (for a generator function: a GeneratorValue that runs the code lazily when iterated)."""
    lookaside = LOOKASIDES.get(fn)          # a stand-in for this Python function (nn.Module.__call__...)
    if lookaside is not None:
        return lookaside(tx, args, kwargs)
    code_lookaside = CODE_LOOKASIDES.get(fn.__code__)   # e.g. optimizers' step wrapper (lookasides/optimizers.py)
    if code_lookaside is not None:
        return code_lookaside(tx, fn, fn_source, args, kwargs)
    if fn.__code__ is CONTEXTMANAGER_HELPER_CODE:      # a @contextlib.contextmanager function
        return contextmanager_call(tx, fn, fn_source, args, kwargs)
    if fn.__code__ is TORCH_DECORATOR_CODE:            # a function decorated with @torch.no_grad() & co
        return torch_decorated_call(tx, fn, fn_source, args, kwargs)
    child = _inline_frame(tx, fn, fn_source, args, kwargs, closure_values, defaults, kwdefaults)
    if fn.__code__.co_flags & inspect.CO_GENERATOR:
        return make_generator(child, fn.__qualname__)
    return child.run()


def generator_of_function_value(tx, fv, args, kwargs):
    """Calling a generator function (or genexpr) made in the frame: a lazily run GeneratorValue."""
    if tx.depth >= tx.ctx.config.inline_depth:
        raise GraphBreak("recursion", f"inlining deeper than {tx.ctx.config.inline_depth} calls")
    bound = bind_arguments(fv.code, fv.code.co_qualname, args, kwargs, (list(fv.defaults), fv.kwdefaults))
    child = tx.child(fv.code, fv.f_globals, locals_=bound, closure=fv.closure, globals_source=fv.globals_source,
                     fn_name=fv.code.co_qualname)
    return make_generator(child, fv.code.co_qualname)


def _inline_frame(tx, fn, fn_source, args, kwargs, closure_values, defaults, kwdefaults):
    code = fn.__code__ if fn is not None else None
    module = getattr(fn, "__module__", "") or ""
    if module.startswith(NEVER_INLINE_PREFIXES) and not module.startswith("torch.nn"):
        raise GraphBreak("call", f"call to {fn.__qualname__} (module {module}) is not inlined")
    if hasattr(fn, "__framejit_watch__"):
        # framejit's module-watch wrapper (register_forward_hook, add_module, _apply...): inlined, its bump
        # of the watch counter would be traced as a constant store and later changes went unnoticed
        raise GraphBreak("call", f"{fn.__qualname__} changes a watched module; it runs as plain Python")
    if code.co_flags & (inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR | inspect.CO_ITERABLE_COROUTINE):
        raise GraphBreak("generator", f"{fn.__qualname__} is a coroutine or async generator function")
    if tx.depth >= tx.ctx.config.inline_depth:
        raise GraphBreak("recursion", f"inlining deeper than {tx.ctx.config.inline_depth} calls")
    if getattr(fn, "_framejit_disabled", False):
        raise GraphBreak("disabled", f"{fn.__qualname__} is marked framejit.disable; it runs as plain Python")
    if is_compiler_disabled(fn):
        raise GraphBreak("disabled", f"{fn.__qualname__} is marked torch.compiler.disable; it runs as plain Python")
    defaults = fn.__defaults__ if defaults is None else defaults
    kwdefaults = fn.__kwdefaults__ if kwdefaults is None else kwdefaults
    bound = bind_arguments(code, fn.__qualname__, args, kwargs, _wrap_defaults(tx, fn, fn_source, defaults, kwdefaults))
    if closure_values is None:
        closure_values = _closure_values(tx, fn, fn_source)
    globals_source = None
    if fn.__globals__ is not tx.ctx.f_globals:       # another module's globals: named directly, no path
        globals_source = fixed_source(fn.__globals__, f"{fn.__module__}.__dict__")
    child = tx.child(code, fn.__globals__, locals_=bound, closure=closure_values, globals_source=globals_source,
                     fn_name=fn.__qualname__)
    if tx.ctx.recorder is not None:
        tx.ctx.recorder.record_code(code)
    return child


def _wrap_defaults(tx, fn, fn_source, defaults, kwdefaults):
    from .source import DefaultSource
    pos = []
    # One identity guard on the defaults tuple fixes every item (a tuple never changes): constants need
    # nothing more, and the guards other items get are implied by it (module_guards.ModulePlan).
    whole = fn_source is not None and defaults and type(defaults) is tuple
    if whole:
        tx.ctx.guards.add("ID_MATCH", AttrSource(fn_source, "__defaults__"), defaults)
    for i, d in enumerate(defaults or ()):
        pos.append(d if isinstance(d, Value) else
                   (tx.ctx.wrap(d, DefaultSource(fn_source, i), guard=not (whole and type(d) in CONST_TYPES))
                    if fn_source else _unsourced(d)))
    kw = {}
    for k, d in (kwdefaults or {}).items():
        kw[k] = d if isinstance(d, Value) else (tx.ctx.wrap(d, DefaultSource(fn_source, k)) if fn_source else _unsourced(d))
    return pos, kw


def _unsourced(obj):
    from .context import wrap_unsourced
    return wrap_unsourced(obj)


def _closure_values(tx, fn, fn_source):
    from .values.functions.cells import CellValue
    if not fn.__closure__:
        return ()
    out = []
    if fn_source is None:                  # a function reached without a path (a class's method): named directly
        fn_source = fixed_source(fn, fn.__qualname__)
    for i, cell in enumerate(fn.__closure__):
        src = ItemSource(AttrSource(fn_source, "__closure__"), i)
        out.append(tx.ctx.real_cell(cell, src))
    return tuple(out)
