"""ConversionContext: the state shared by every translator of one conversion.

It owns the GraphBuilder, the GuardSet, the SideEffects and the config, and turns real Python objects
read from a Source into symbolic Values (`wrap`), adding the guard each kind of value needs:
tensors by type/dtype/device/shape/stride/requires_grad, constants by value, containers by type and
length (then their items), everything else by identity.
"""
import collections
import decimal
import enum
import fractions
import types

import torch

from .guards.guard_set import DynamicTensorMeta, GuardSet, TensorMeta
from .graph.builder import GraphBuilder
from .graph.float_inputs import add_float_input
from .side_effects import SideEffects
from ..bytecode.shared import decoded as decoded_shared
from ..errors import GraphBreak
from .lookasides.state_calls import store_break, store_runs_code
from .values.managers.state_managers import AutocastExit, GradModeExit, resumed_autocast_block, resumed_grad_block
from .lookasides.lazy_modules import is_uninitialized, uninitialized_break
from .guards.identity import IdentityTracker, guard_object
from .guards.numpy_inputs import wrap_numpy_input
from .guards import tensor_keyed_dicts
from .source import AttrSource, BuiltinSource, ClosureSource, ItemSource, LocalSource, PlainTensorSource
from .values.containers import deques
from .values.dicts import dict_kinds
from .values.dicts.constant_keys import all_constant_keys, item_source
from .values.objects.weak_refs import PROXY_TYPES, proxy_break
from .values.tensors import tensor_subclass_members, tensor_subclasses
from .values.base import Const, DictValue, ObjectValue, SeqValue, SetValue, TensorValue
from .values.objects.trusted_modules import TRUSTED_MODULES
from .values.containers.input_lists import InputList
from .values.protocol import CONST_TYPES, is_namedtuple_class, wrap_unsourced
from .values.dicts.model_outputs import ModelOutputValue, is_model_output_class
from .values.iterators.iterator_positions import MODELLED_TYPES as MODELLED_ITERATORS, wrap_input_iterator

# Queries of global torch state: folded to constants at translation, so guarded (ConversionContext.guard_state)
def is_cpu_autocast_enabled():
    return torch.is_autocast_enabled("cpu")


_function_modes_active = torch._C._len_torch_function_stack
EXACT_VALUE_TYPES = (decimal.Decimal, fractions.Fraction)
_CPU = torch.device("cpu")


def default_device():
    """The device torch factories default to: torch.get_default_device() without its cost in the usual
    case, where no torch function mode is active (torch.set_default_device and `with torch.device(...)`
    are such modes) and it is the CPU."""
    return torch.get_default_device() if _function_modes_active() else _CPU


STATE_FUNCTIONS = (torch.is_grad_enabled, torch.get_default_dtype, torch.is_inference_mode_enabled,
                   torch.are_deterministic_algorithms_enabled, is_cpu_autocast_enabled, default_device)

# Modules whose attributes are trusted not to be monkey-patched between calls: reading `torch.relu`
# guards the global `torch` by identity but not the attribute itself (a guard per op would be paid on
# every call).


class ConversionContext:
    def __init__(self, config, f_globals, break_at, observation, shape_policy=None, shapes=None):
        self.config = config
        self.phase = observation.phase   # `with ctx.phase("translate"):` times a phase of the conversion
        # dynamic shapes (framejit/shapes/): which inputs get symbols, and the conversion's ShapeContext
        # (None: every size is a constant, as without dynamic shapes)
        self.shape_policy = shape_policy
        self.graph = GraphBuilder(observation.phase, shapes)
        self.guards = GuardSet()
        self.side_effects = SideEffects(position=self.graph.mark)   # a bound method of the graph: no cycle through self
        self.f_globals = f_globals
        self.break_at = break_at or {}   # root call index -> the callee's own break, in words
        self.wrapped = {}            # Source -> Value (one Value per source: aliasing and mutation)
        # torch state managers entered and not yet exited (translation order), including a grad-mode
        # block a resume function starts inside (state_managers.GradModeExit among its arguments)
        self.active_managers = []
        self.certain_types = {}      # Source -> the type CPython guarantees it (the frame's *args, **kwargs)
        self.frame_params = ()       # the frame's parameter names (and __fj_cl): what guard blocks may read
        # global torch state at frame entry (translated with-blocks change the real state while
        # translating): what queries of it are guarded against
        self.entry_state = {f: f() for f in STATE_FUNCTIONS}
        self.watch_state = observation.watch_state   # (call) -> (result, changes of global torch state)
        # (call) -> its result: the program's own change of global state, made at translation where eager
        # makes it (a lazy module's initialization drawing from the RNG), kept after the conversion
        self.program_effect = getattr(observation, "program_effect", _run)
        self.recorder = observation.recorder     # ExecutionRecorder when recording
        self.compiled_behind = getattr(observation, "compiled_behind", None)   # (seconds) -> None, or None
        self.restart_reasons = []
        self.special_calls = {}      # callable -> fn(tx, args, kwargs): per-conversion lookasides
        self.instruction_count = 0
        self._local_objects = set()
        self._real_cells = {}        # id(real cell) -> CellValue (every inlined call sees the same cell)
        self.identity = IdentityTracker(self.guards)   # aliasing between mutable inputs (guards/identity.py)
        self.instance_dicts = {}     # id(object) -> its InstanceDictValue (values/objects/attribute_model.py): one view each
        # > 0 while translating with tensor subclass dispatch off (values/tensors/tensor_subclasses.py)
        self.torch_function_disabled = 0
        self.dict_kind_objects = {}  # id(DictValue) -> (it, the real dict-kind argument) (values/dicts/dict_kinds.py)
        # graph ops that may raise on tensor values inside a region whose handler could catch it
        # (ops/exceptions.py): their graph call reruns the frame as Python if it raises (convert/raising_graphs.py)
        self.handled_region_ops = []

    def guard_state(self, fn):
        """The frame read global torch state through `fn` (or used it implicitly): guard its entry value
        (state that translation never switches is read now)."""
        if fn is torch.is_grad_enabled:
            self.guards.add("GRAD_MODE", None, self.entry_state[fn])
        else:
            self.guards.add("STATE_MATCH", None, (fn, self.entry_state[fn] if fn in self.entry_state else fn()))

    # ---- helpers used by handlers -------------------------------------------------------------
    def decode(self, code):
        """The instructions of `code`, decoded once per process (bytecode/shared.py): read-only."""
        return decoded_shared(code)

    def count_backedge(self, tx):
        self.instruction_count += 1
        if self.instruction_count > 100_000:
            raise GraphBreak("loop", "the loop runs too many iterations to unroll")

    def builtin_value(self, name, obj):
        # Builtins are not guarded: a global defined later with a builtin's name is not noticed.
        return ObjectValue(obj, BuiltinSource(name))

    def wrap_foreign_global(self, obj):
        return wrap_unsourced(obj) if not isinstance(obj, torch.Tensor) else _raise(
            GraphBreak("global", "a tensor global of a module framejit cannot reach"))

    def real_cell(self, cell, cell_source):
        """The CellValue of a real cell; cell_source reaches the cell (a ClosureSource reaches its contents)."""
        from .values.functions.cells import CellValue
        known = self._real_cells.get(id(cell))
        if known is not None and known.real is cell:
            return known
        if isinstance(cell_source, ClosureSource) or cell_source is None:
            contents_source = cell_source
        else:
            contents_source = AttrSource(cell_source, "cell_contents")
        value = self._real_cells[id(cell)] = CellValue(real=cell, contents_source=contents_source)
        return value

    def is_local_object(self, value):
        return id(value) in self._local_objects

    def store_object_attr(self, tx, obj, name, value):
        if store_runs_code(obj.obj, name):          # torch.backends.cudnn.deterministic = True
            raise store_break(obj.obj, name)
        if isinstance(obj.obj, torch.nn.Module) and isinstance(value, TensorValue) and \
                not _plain_tensor_attribute(obj.obj, name, value):
            raise GraphBreak("store attr", f"assigning a tensor to module attribute .{name}")
        obj.edited = True
        self.side_effects.store_attr(obj.obj, obj.source, name, value)

    def call_module(self, tx, fn_value, args, kwargs):
        from .lookasides.modules import call_module
        return call_module(tx, fn_value, args, kwargs)

    def construct(self, tx, cls_value, cls, args, kwargs):
        from .values.dicts.model_outputs import ModelOutputValue, is_model_output_class
        if is_model_output_class(cls):          # transformers' ModelOutput dataclasses (values/dicts/model_outputs.py)
            return ModelOutputValue.construct(tx, cls, args, kwargs)
        if tensor_subclass_members.constructible(cls):       # `Sub(t)` with Sub's own __new__ in Python
            return tensor_subclass_members.construct(tx, cls, args, kwargs)
        from .values.objects.class_calls import construct
        return construct(tx, cls_value, cls, args, kwargs)

    def wrap(self, obj, source, guard=True):
        known = self.wrapped.get(source)
        if known is not None:
            return known
        value = self.identity.alias(obj, source) if guard else None
        if value is None:
            value = self._wrap(obj, source, guard)
            if guard:
                self.identity.track(obj, source, value)
        self.wrapped[source] = value
        return value

    def _wrap(self, obj, source, guard):
        g = self.guards
        t = type(obj)
        if t in PROXY_TYPES:                  # before any isinstance: a proxy answers them as its referent
            raise proxy_break(source.name())
        if isinstance(obj, torch.Tensor):
            if is_uninitialized(obj):
                raise uninitialized_break(source.name())
            if tensor_subclasses.traceable_input(obj):
                return self._wrap_subclass_input(obj, source)
            if tensor_subclasses.dispatch_wrapper_input(obj):
                return self._wrap_dispatch_input(obj, source)
            reason = tensor_subclasses.untraceable_reason(obj)
            if reason is not None:            # its ops would each be a break: say why once
                raise GraphBreak("tensor subclass", reason)
            if t not in (torch.Tensor, torch.nn.Parameter) and not isinstance(obj, torch.nn.Parameter):
                g.add("ID_MATCH", source, obj)
                return ObjectValue(obj, source)
            dims = self._dynamic_dims(obj, source)
            if dims:
                g.add("DYN_TENSOR_MATCH", source, DynamicTensorMeta.of(obj, dims))
                return self.graph.add_input(obj, source, dims)
            g.add("TENSOR_MATCH", source, TensorMeta.of(obj))
            return self.graph.add_input(obj, source)
        if t is GradModeExit:                 # a resume function starting inside a grad-mode block
            return resumed_grad_block(self, obj, source)
        if t is AutocastExit:                 # ... or inside an autocast block
            return resumed_autocast_block(self, obj, source)
        if (t is int or t is float) and guard and self.graph.shapes is not None and \
                self.shape_policy.number_dynamic(source.name(), t):
            g.add("TYPE_MATCH", source, t)      # its value: a graph input, its relations the SHAPES guard's
            if t is float and not self.shape_policy.floats:
                return add_float_input(self.graph, obj, source)     # a 0-dim tensor, `.item()` in the graph
            return self.graph.add_number_input(obj, source)
        if t in CONST_TYPES or isinstance(obj, enum.Enum):
            if guard:
                g.add("CONST_MATCH" if t in CONST_TYPES else "ID_MATCH", source, obj)
            return Const(obj, source)
        if t in EXACT_VALUE_TYPES:         # immutable numbers matched by value (NaN too: guards/const_equality.py)
            if guard:
                g.add("CONST_MATCH", source, obj)
            return Const(obj, source)
        if t is torch.Size:
            if guard:
                g.add("CONST_MATCH", source, obj)
            return Const(obj, source)
        if t is list and guard:        # items read (and guarded) only if the frame reads them
            g.add("TYPE_MATCH", source, t)
            return InputList(self, obj, source)
        if (t is tuple or t is list or is_namedtuple_class(t)) and not getattr(obj, "__dict__", None):
            if guard:
                g.add("TYPE_MATCH", source, t)
                g.add("LEN_MATCH", source, len(obj))
                if hasattr(obj, "__dict__"):    # a namedtuple subclass's instance: modelled while it holds no attributes
                    g.add("CONST_MATCH", dict_kinds.EmptyInstanceDictSource(source), True)
            items = [self.wrap(x, ItemSource(source, i), guard) for i, x in enumerate(obj)]
            if t is tuple and all(isinstance(i, Const) for i in items):
                return Const(obj, source)
            return SeqValue(t, items, source)
        if t is dict and all_constant_keys(obj):      # by its keys, not identity (values/dicts/constant_keys.py)
            if guard:
                g.add("TYPE_MATCH", source, t)
                g.add("DICT_KEYS", source, tuple(obj.keys()))
            return DictValue({k: self.wrap(v, item_source(source, k), guard) for k, v in obj.items()}, source)
        if t is dict and tensor_keyed_dicts.wrappable(obj):       # {param: state} (guards/tensor_keyed_dicts.py)
            return tensor_keyed_dicts.wrap_input(self, obj, source, guard)
        if t is collections.deque:
            return deques.wrap_input(self, obj, source, guard)
        if t is not dict and isinstance(obj, dict) and dict_kinds.wrappable_input(obj) and \
                (isinstance(source.root(), LocalSource) or t in dict_kinds.STDLIB_KINDS):
            return dict_kinds.wrap_input(self, obj, source, guard)   # OrderedDict, defaultdict, a subclass
        if t is set and all_constant_keys(obj):      # str, numbers, enum members, tuples (constant_keys.py)
            if guard:                         # by contents: a set is mutable, and often made per call
                g.add("CONST_MATCH", source, set(obj))
            return SetValue([Const(x) for x in obj], source)
        if t is frozenset and all_constant_keys(obj):      # immutable: by value, as a constant
            if guard:
                g.add("CONST_MATCH", source, obj)
            return Const(obj, source)
        if t is slice or t is range:
            if guard:            # by value: a slice the frame builds is new on every call
                by_value = t is range or all(type(p) in CONST_TYPES for p in (obj.start, obj.stop, obj.step))
                g.add("CONST_MATCH", source, obj) if by_value else g.add("ID_MATCH", source, obj)
            return Const(obj, source)
        if guard and t.__module__ == "numpy":     # ndarrays and numpy scalars (guards/numpy_inputs.py)
            value = wrap_numpy_input(self, obj, source)
            if value is not None:
                return value
        if guard and t in MODELLED_ITERATORS:        # by the items left (values/iterators/iterator_positions.py)
            value = wrap_input_iterator(self, obj, source)
            if value is not None:
                return value
        if guard and is_model_output_class(t):       # by class and keys, not identity (values/dicts/model_outputs.py)
            return ModelOutputValue.of_input(self, obj, source)
        if guard:
            guard_object(self, obj, source)
        if isinstance(obj, torch.nn.Module):
            from .values.modules.module_values import ModuleValue
            return ModuleValue(obj, source)
        return ObjectValue(obj, source)

    def _wrap_subclass_input(self, obj, source):
        """A tensor subclass input: the graph gets a plain alias of it, guarded as a tensor, and the
        frame a Value tagged with its class (values/tensors/tensor_subclasses.py)."""
        self.guards.add("TYPE_MATCH", source, type(obj))
        plain, plain_source = tensor_subclasses.plain_tensor(obj), PlainTensorSource(source)
        dims = self._dynamic_dims(plain, plain_source)
        if dims:
            self.guards.add("DYN_TENSOR_MATCH", plain_source, DynamicTensorMeta.of(plain, dims))
        else:
            self.guards.add("TENSOR_MATCH", plain_source, TensorMeta.of(plain))
        with torch._C.DisableTorchFunctionSubclass():     # describing the alias reads its base, x
            value = self.graph.add_input(plain, plain_source, dims)
        value.source = source
        value.cls = type(obj)
        tensor_subclasses.remember_input(value, obj)
        return value

    def _wrap_dispatch_input(self, obj, source):
        """A wrapper subclass input with its own __torch_dispatch__ (tensor_subclasses.dispatch_wrapper_input):
        the graph takes the object itself, guarded on its type and metadata and on its inner tensors'."""
        self.guards.add("TENSOR_MATCH", source, TensorMeta.of(obj))
        names, _ = obj.__tensor_flatten__()
        for name in names:
            self.guards.add("TENSOR_MATCH", AttrSource(source, name), TensorMeta.of(getattr(obj, name)))
        return self.graph.add_input(obj, source)

    def _dynamic_dims(self, tensor, source):
        """{dim: (min, max)} of the dims of input `tensor` to make symbolic (framejit/shapes/policy.py)."""
        if self.graph.shapes is None or id(tensor) in self.graph.input_by_id:
            return None
        return self.shape_policy.tensor_dims(tensor, source.name())

    def wrap_attr(self, owner, owner_source, name, obj):
        """Wrap owner.name; attributes of trusted modules are not guarded (see TRUSTED_MODULES)."""
        source = AttrSource(owner_source, name) if owner_source is not None else None
        trusted = isinstance(owner, types.ModuleType) and owner.__name__ in TRUSTED_MODULES
        if source is None:
            return wrap_unsourced(obj)
        return self.wrap(obj, source, guard=not trusted)


def _plain_tensor_attribute(module, name, value):
    """Does `module.name = <tensor>` only set an instance attribute (Phi-3's longrope `long_inv_freq`)? Then
    it is a side effect like any attribute store, replayed after the graph with nn.Module's __setattr__.
    Not when the name is a parameter, buffer or submodule (registries the frame's reads do not follow),
    the value a Parameter, or the class has a __setattr__ of its own."""
    from .guards.module_watch import unwrapped
    if unwrapped(type(module).__setattr__) is not unwrapped(torch.nn.Module.__setattr__):
        return False
    if isinstance(value.fake, torch.nn.Parameter):
        return False
    registries = (module.__dict__.get("_parameters", {}), module.__dict__.get("_buffers", {}),
                  module.__dict__.get("_modules", {}))
    return not any(name in r for r in registries)


def _raise(e):
    raise e


def _run(call):
    return call()
