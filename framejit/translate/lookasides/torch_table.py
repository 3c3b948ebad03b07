"""Which torch callables become graph nodes, which fold to constants, and which must break.

Explicit tables, not heuristics spread through the translator:
  - a callable defined in one of GRAPH_OP_MODULES (torch, torch.nn.functional, torch.linalg, ...) is a
    graph op when any argument is a tensor, or when it is a factory (creates a tensor from constants);
  - CONSTANT_FUNCTIONS are called for real at translation time on constant arguments;
  - TENSOR_CONST_METHODS read metadata and fold to constants;
  - TENSOR_BREAK_METHODS need real data (.item(), .tolist(), ...) and cause a graph break;
  - "is a compiler tracing?" predicates answer True, "exporting?" False (compiling_answer).
"""
import builtins
import math
import operator
import sys
import types
import weakref

import torch
import torch._utils
import torch.nn.functional as F

from ...dynamo_reads import DYNAMO_MODULE

GRAPH_OP_MODULES = ("torch", "torch.functional", "torch.nn.functional", "torch.linalg", "torch.fft",
                    "torch.special", "torch._C._nn", "torch._C._linalg", "torch._C._fft",
                    "torch._C._special", "torch._C._VariableFunctions", "torch.nn.modules.utils")

FACTORY_FUNCTIONS = {torch.zeros, torch.ones, torch.empty, torch.full, torch.arange, torch.eye,
                     torch.linspace, torch.logspace, torch.tensor, torch.as_tensor, torch.randn,
                     torch.rand, torch.randint, torch.randperm, torch.zeros_like, torch.ones_like,
                     torch.empty_like, torch.full_like, torch.rand_like, torch.randn_like, torch.scalar_tensor,
                     torch.triu_indices, torch.tril_indices, torch.normal}
# factories that take their dtype and device from a tensor argument, not from the defaults
LIKE_FACTORIES = {torch.zeros_like, torch.ones_like, torch.empty_like, torch.full_like, torch.rand_like,
                  torch.randn_like}

CONSTANT_FUNCTIONS = {torch.is_grad_enabled, torch.get_default_dtype, torch.finfo, torch.iinfo,
                      torch.is_inference_mode_enabled, torch.is_autocast_enabled, torch.device,
                      torch.Size, torch.is_floating_point, torch.is_complex, torch.promote_types,
                      torch.result_type, torch.can_cast, torch.is_tensor, torch.numel,
                      torch.is_nonzero, torch.get_autocast_gpu_dtype if hasattr(torch, "get_autocast_gpu_dtype") else torch.is_tensor,
                      torch.jit.is_scripting, torch.jit.is_tracing, torch._C._get_tracing_state,
                      torch.are_deterministic_algorithms_enabled}
# Queries of other global state (translation never switches it): folded to their value, guarded by it.
STATE_QUERIES = {getattr(torch, name) for name in (
    "is_deterministic_algorithms_warn_only_enabled", "get_deterministic_debug_mode", "get_float32_matmul_precision",
    "get_num_threads", "get_num_interop_threads", "is_anomaly_enabled", "is_anomaly_check_nan_enabled",
    "is_warn_always_enabled", "get_default_device") if hasattr(torch, name)}
# ... and torch._C's own queries of process state that libraries ask (autocast on for any device, the
# cuBLAS TF32 flag behind `torch.backends.cuda.matmul.allow_tf32`, the privateuse1 backend's name,
# functorch transforms active): folded and guarded the same way.
STATE_QUERIES |= {getattr(torch._C, name) for name in (
    "_is_any_autocast_enabled", "_get_cublas_allow_tf32", "_get_privateuse1_backend_name",
    "_are_functorch_transforms_active") if hasattr(torch._C, name)}
# Functions that answer "is a compiler tracing me?": True during translation, as under torch.compile,
# so libraries take their compile-friendly paths. Recognised by identity.
COMPILING_PREDICATES = set()
for _mod, _name in ((torch.compiler, "is_compiling"), (torch.compiler, "is_dynamo_compiling"),
                    (torch._utils, "is_compiling")):
    _f = getattr(_mod, _name, None)
    if _f is not None:
        COMPILING_PREDICATES.add(_f)
# ... and "am I being exported?": False (framejit does not export).
NOT_EXPORTING_PREDICATES = {f for f in (getattr(torch.compiler, "is_exporting", None),) if f is not None}
# Modules that user code may have imported (framejit never imports them) whose `is_compiling` is the
# same question; looked up in sys.modules when a call is translated, and matched by identity.
# (The name is only a sys.modules key: framejit never imports or calls into that package.)
_INCUMBENT = DYNAMO_MODULE
LATE_COMPILING_PREDICATES = ((_INCUMBENT, "is_compiling"), (_INCUMBENT + ".external_utils", "is_compiling"))
# Helpers of libraries that only wrap torch.compiler.is_compiling()/is_exporting() in a try/import
# (matched by module and qualified name, since framejit does not import those libraries).
NAMED_COMPILING_PREDICATES = {("transformers.utils.import_utils", "is_torchdynamo_compiling"): True,
                              ("transformers.utils.import_utils", "is_torchdynamo_exporting"): False}


def compiling_answer(fn):
    """True/False if `fn` is a "compiling?"/"exporting?" predicate, else None (translation time only)."""
    if fn in COMPILING_PREDICATES:
        return True
    if fn in NOT_EXPORTING_PREDICATES:
        return False
    for mod_name, attr in LATE_COMPILING_PREDICATES:
        mod = sys.modules.get(mod_name)
        if mod is not None and getattr(mod, attr, None) is fn:
            return True
    if isinstance(fn, types.FunctionType):
        return NAMED_COMPILING_PREDICATES.get((fn.__module__, fn.__qualname__))
    return None


TENSOR_CONST_METHODS = {"size", "dim", "ndimension", "numel", "nelement", "stride", "is_contiguous",
                        "is_floating_point", "is_complex", "element_size", "get_device", "type_as_dtype",
                        "has_names", "is_signed", "storage_offset", "is_inference"}
TENSOR_BREAK_METHODS = {"item", "tolist", "numpy", "data_ptr", "__bool__", "__int__", "__float__",
                        "__index__", "backward", "untyped_storage", "storage", "nonzero_static_check",
                        "register_hook", "retain_grad", "__len__", "__iter__", "cpu_numpy", "__array__"}

# Python operators on tensors, by name used in BINARY_OP / COMPARE_OP, map to these fx targets.
# Operators of torch's dispatcher reached through torch.ops: the packet (`torch.ops.aten.add`, a custom
# library's `torch.ops.transformers.grouped_mm_fallback`) and one overload of it (`torch.ops.aten.add.Tensor`).
TORCH_OPS_TYPES = (torch._ops.OpOverloadPacket, torch._ops.OpOverload)

OPERATOR_NAMES = {getattr(operator, n) for n in dir(operator) if not n.startswith("_")}


def is_graph_op(fn):
    if fn in FACTORY_FUNCTIONS:
        return True
    if is_autograd_function_apply(fn):
        return True
    if isinstance(fn, TORCH_OPS_TYPES):       # torch.ops.<ns>.<op>(...) and torch.ops.<ns>.<op>.<overload>(...)
        return True
    mod = getattr(fn, "__module__", None)
    if mod in GRAPH_OP_MODULES:
        return True
    if mod is None and isinstance(fn, type(torch.add)):
        self_obj = getattr(fn, "__self__", None)
        name = getattr(self_obj, "__name__", "")
        return name.startswith("torch")
    return False


def is_tensor_method_descriptor(fn):
    """An unbound torch.Tensor method, e.g. torch.Tensor.add."""
    name = getattr(fn, "__name__", None)
    return name is not None and getattr(torch.Tensor, name, None) is fn


def is_autograd_function_apply(fn):
    """`MyFunction.apply` of a torch.autograd.Function subclass: one graph node that runs the Function
    (its forward on fake tensors at translation, forward and custom backward for real at run time)."""
    owner = getattr(fn, "__self__", None)
    return getattr(fn, "__name__", None) == "apply" and isinstance(owner, type) and \
        issubclass(owner, torch.autograd.Function) and owner is not torch.autograd.Function


_APPLY_TARGETS = weakref.WeakKeyDictionary()     # autograd.Function subclass -> graph target


def graph_target(fn):
    """The fx target recorded for graph op `fn`: itself, except `SomeFunction.apply`, which fx would
    print as `torch.autograd.function.apply`: a small named function calling it instead."""
    if not is_autograd_function_apply(fn):
        return fn
    owner = fn.__self__
    target = _APPLY_TARGETS.get(owner)
    if target is None:
        def target(*args, **kwargs):
            return owner.apply(*args, **kwargs)
        target.__name__ = target.__qualname__ = f"{owner.__name__}_apply"
        target.__module__ = "framejit.autograd_functions"
        _APPLY_TARGETS[owner] = target
    return target
