"""A memo of fake-tensor op results by input metadata, so a repeated op skips FakeTensorMode dispatch.

Why this exists: running one torch op on fake tensors costs 80-500us (FakeTensorMode's Python
dispatch, cache-key building and output wrapping, once per aten op a torch function decomposes
into), and it is most of a capture's translation time. Models repeat the same ops on the same
shapes (every layer; every capture of the same model), and an op's output *metadata* is a function
of the inputs' metadata and the constant arguments. The memo maps

    (target, argument signature, global torch state) -> output recipe

where the signature holds, for each fake tensor, its shape, strides, storage offset, dtype, device
and requires_grad, and for everything else its type and value (only immutable kinds: numbers,
strings, None, dtypes, devices, layouts, memory formats, slices, Ellipsis, tuples/lists/dicts of
these). A recipe rebuilds fresh outputs on meta storage (a FakeTensor of the conversion's mode); an
output that is a view of an input is rebuilt on that input's storage as a view of it (`as_strided`
under a dispatch mode that hands back the prepared result, so autograd's view tracking records the
base exactly as for the real op: `_is_view()`, version counter, no-grad creation); a view of an
intermediate of the op (F.linear's 3-d output views its addmm result) as a view of a fresh root.

What is never memoised (the op always runs on fake tensors):
  - in-place and out= calls (method or function name ending in "_", operator.i*, setitem, `out=`),
    and any output that *is* one of the inputs;
  - outputs that require grad, grad mode with any input requiring grad, inference mode, active
    torch function / dispatch modes or functorch transforms (they can change what an op does);
  - non-strided or complex tensors, inputs of any other kind (generators, objects, callables);
    fake tensors carrying a constant (FakeTensorMode's small-constant propagation) take part with
    their exact value in the key, and a constant output only when it is a fresh tensor;
  - targets that are not torch's own: method names, builtins, OpOverloads and functions defined in
    torch's modules qualify; user functions (autograd.Function wrappers) do not;
  - a view output whose base is not one of the inputs; multi-output views in grad mode (autograd
    marks those specially); an output that shares an input's storage without being a view (`detach`);
  - ops that raised (only successes are recorded).
The memo is process-wide and bounded; entries hold only torch functions, names and metadata.
"""
import operator
import types

import torch
from torch._subclasses.fake_tensor import FakeTensor
from torch.utils._python_dispatch import TorchDispatchMode

MEMO_SIZE = 20_000

_SCALAR_TYPES = frozenset({int, float, bool, str, type(None), type(Ellipsis), torch.dtype, torch.device,
                           torch.layout, torch.memory_format})
_SEQ_TYPES = frozenset({tuple, list, torch.Size})
_INPLACE_OPERATORS = frozenset({operator.iadd, operator.isub, operator.imul, operator.itruediv,
                                operator.ifloordiv, operator.imod, operator.ipow, operator.imatmul,
                                operator.iand, operator.ior, operator.ixor, operator.ilshift,
                                operator.irshift, operator.setitem, operator.delitem, operator.iconcat})
_OP_TYPES = (types.BuiltinFunctionType, torch._ops.OpOverload, torch._ops.OpOverloadPacket)
_CONST_OUT_TYPES = frozenset({int, float, bool, torch.Size, torch.dtype, torch.device})
_AS_STRIDED = torch.ops.aten.as_strided.default
_DEVICE = torch.ops.prim.device.default
_STRIDED = torch.strided


def is_inplace_operator(target):
    """operator.iadd & co, setitem, delitem: the operator module's writing functions."""
    return target in _INPLACE_OPERATORS


def schema_writes(target):
    """A dispatcher operator (torch.ops.<ns>.<op>, or one overload of it) whose schema writes an argument
    (`aten.add_.Tensor`, a custom op declared with mutates_args): it hands back its input with the write
    done, so its node must stay."""
    if isinstance(target, torch._ops.OpOverload):
        return target._schema.is_mutable
    if isinstance(target, torch._ops.OpOverloadPacket):
        return any(getattr(target, name)._schema.is_mutable for name in target.overloads())
    return False


class _Unmemoisable(Exception):
    """Raised while building a signature: this call is never memoised."""


class _HandBack(TorchDispatchMode):
    """Answers the next as_strided with a prepared tensor, so autograd's view tracking (above the
    Python dispatch key) makes it a view of the as_strided input. Everything else runs normally."""

    def __init__(self, result):
        super().__init__()
        self.result = result

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func is _AS_STRIDED:
            return self.result
        if func is _DEVICE and type(args[0]) is FakeTensor:
            return args[0].fake_device          # what FakeTensorMode answers, without its dispatch
        return func(*args, **(kwargs or {}))


def _memoisable_target(op, target):
    if op == "call_method":
        return not target.endswith("_") or target.endswith("__") and not target.startswith("__i")
    if target in _INPLACE_OPERATORS or schema_writes(target):
        return False
    name = getattr(target, "__name__", "")
    if name.endswith("_") and not name.endswith("__") and getattr(target, "__module__", None) != "_operator":
        return False        # torch.relu_ and friends (operator.and_, or_, not_ are not in place)
    if isinstance(target, _OP_TYPES):
        return True
    return isinstance(target, types.FunctionType) and (target.__module__ or "").startswith("torch.")


class FakeOpMemo:
    """Op results on fake tensors by input metadata (see the module docstring)."""

    def __init__(self, size=MEMO_SIZE):
        self.size = size
        self.entries = {}
        self.hits = 0
        self.misses = 0

    # ---- keys ---------------------------------------------------------------------------------
    def key(self, op, target, args, kwargs):
        """The memo key of a call with fake arguments, plus the flat list of its fake tensors; or
        (None, None) when the call is never memoised."""
        if not _memoisable_target(op, target) or "out" in kwargs:
            return None, None
        if torch.is_inference_mode_enabled() or torch._C._len_torch_function_stack() or \
                torch._C._len_torch_dispatch_stack() or torch._C._are_functorch_transforms_active():
            return None, None
        grad = torch.is_grad_enabled()
        tensors = []
        try:
            sig = tuple(self._sig(a, tensors) for a in args)
            ksig = tuple((k, self._sig(v, tensors)) for k, v in kwargs.items())
        except _Unmemoisable:
            return None, None
        if grad and any(t.requires_grad for t in tensors):
            return None, None
        state = (grad, torch.get_default_dtype(), torch.is_autocast_enabled("cpu"),
                 torch.get_autocast_dtype("cpu"), torch.is_autocast_enabled("cuda"),
                 torch.get_autocast_dtype("cuda"), torch.are_deterministic_algorithms_enabled())
        key = (op, target, sig, ksig, state)
        try:
            hash(key)
        except TypeError:
            return None, None
        return key, tensors

    def _sig(self, v, tensors):
        kind = type(v)
        if kind is FakeTensor:
            if v.layout is not _STRIDED or v.dtype.is_complex or v.is_inference():
                raise _Unmemoisable
            tensors.append(v)
            constant = v.constant
            if constant is not None:
                if type(constant) is not torch.Tensor or constant.numel() != 1:
                    raise _Unmemoisable
                constant = repr(constant.item())     # exact: -0.0, nan and inf included
            return (FakeTensor, v.shape, v.stride(), v.storage_offset(), v.dtype, v.device, v.requires_grad,
                    constant)
        if kind in _SCALAR_TYPES:
            return (kind, v)
        if kind in _SEQ_TYPES:
            return (kind, tuple(self._sig(x, tensors) for x in v))
        if kind is slice:
            return (slice, self._sig(v.start, tensors), self._sig(v.stop, tensors), self._sig(v.step, tensors))
        if kind is dict:
            return (dict, tuple((self._sig(k, tensors), self._sig(x, tensors)) for k, x in v.items()))
        raise _Unmemoisable

    # ---- lookup / store -----------------------------------------------------------------------
    def lookup(self, key, tensors, fake_mode):
        """The outputs recorded for `key`, rebuilt for `tensors` under `fake_mode`; None on a miss
        (or when a recipe does not apply to these inputs: the op then runs for real)."""
        recipe = self.entries.get(key)
        if recipe is None:
            self.misses += 1
            return None
        kind, payload = recipe
        try:
            if kind == "const":
                out = payload
            elif kind == "tensor":
                out = _rebuild(payload, tensors, fake_mode)
            else:
                out = kind([_rebuild(p, tensors, fake_mode) for p in payload])
        except RuntimeError:
            self.misses += 1
            return None
        self.hits += 1
        return out

    def store(self, key, tensors, out):
        recipe = _recipe(out, tensors)
        if recipe is None:
            return
        if len(self.entries) >= self.size:
            for stale in list(self.entries)[: self.size // 2]:
                self.entries.pop(stale, None)
        self.entries[key] = recipe

    def clear(self):
        self.entries.clear()


def _recipe(out, tensors):
    kind = type(out)
    if kind in _CONST_OUT_TYPES:
        return ("const", out)
    if isinstance(out, torch.Tensor):
        part = _tensor_recipe(out, tensors)
        return None if part is None else ("tensor", part)
    if kind in (tuple, list) and out and all(isinstance(o, torch.Tensor) for o in out):
        parts = [_tensor_recipe(o, tensors) for o in out]
        if any(p is None for p in parts):
            return None
        if any(p[1] is not None for p in parts):
            return None        # views of an intermediate: one fresh root each would not share storage
        if torch.is_grad_enabled() and any(p[0] is not None for p in parts):
            return None        # multi-output views: autograd gives them a creation mark of their own
        return (kind, parts)
    return None


def _tensor_recipe(t, tensors):
    """How to rebuild fake output `t`: (base, root, shape, stride, offset, dtype, device, requires_grad)
    where base is the index of the input `t` is a view of, root the (shape, stride, dtype, device) of
    the fresh tensor `t` is a view of when that is an intermediate of the op (F.linear's addmm result),
    both None for a fresh output."""
    if type(t) is not FakeTensor or t.layout is not _STRIDED or t.dtype.is_complex or any(t is i for i in tensors):
        return None
    constant = t.constant
    if constant is not None:        # FakeTensorMode computed the value: a fresh tensor holding it
        if type(constant) is not torch.Tensor or t._is_view() or t.storage_offset() or t.requires_grad:
            return None
        return (None, None, tuple(t.shape), t.stride(), 0, t.dtype, t.device, False, constant.clone())
    base = root = None
    if t._is_view():
        origin = t._base
        bases = [k for k, i in enumerate(tensors) if i is origin or i._base is origin]
        if len(bases) > 1:
            return None                 # a view of one of several aliasing inputs: which one is unknown
        if bases:
            base = bases[0]
        elif type(origin) is FakeTensor and origin.storage_offset() == 0 and not origin.requires_grad and \
                origin.constant is None and origin.layout is _STRIDED:
            root = (tuple(origin.shape), origin.stride(), origin.dtype, origin.device)
        else:
            return None
    elif t.requires_grad or t.storage_offset() or _shares_storage(t, tensors):
        return None                     # (`detach` shares its input's storage without being a view)
    return (base, root, tuple(t.shape), t.stride(), t.storage_offset(), t.dtype, t.device, t.requires_grad, None)


def _shares_storage(t, tensors):
    """Does output `t`, not a view, share a storage with one of the op's inputs? A rebuilt fresh output
    would not, and the overlap of a later write through it (`t += t.detach().t()`, graph/overlap.py)
    would be lost (fuzz seed 510103)."""
    try:
        key = t.untyped_storage()._cdata
        return any(i.untyped_storage()._cdata == key for i in tensors)
    except (RuntimeError, NotImplementedError):
        return True


def _rebuild(part, tensors, fake_mode):
    base, root, shape, stride, offset, dtype, device, requires_grad, constant = part
    if constant is not None:
        # as FakeTensorMode makes a constant: the fake holds the real value, the converter maps the
        # value to the fake and tracks its storage (a write through an alias invalidates it)
        value = constant.clone()
        out = FakeTensor(fake_mode, torch.empty_strided(shape, stride, dtype=dtype, device="meta"), device,
                         constant=value)
        converter = fake_mode.fake_tensor_converter
        converter.set_tensor_memo(value, out)
        converter.add_constant_storage_mapping(out)
        return out
    if base is None and root is None:
        return FakeTensor(fake_mode, torch.empty_strided(shape, stride, dtype=dtype, device="meta"), device)
    if base is None:
        root_shape, root_stride, root_dtype, root_device = root
        origin = FakeTensor(fake_mode, torch.empty_strided(root_shape, root_stride, dtype=root_dtype, device="meta"),
                            root_device)
    else:
        origin = tensors[base]
    meta = torch.empty(0, dtype=dtype, device="meta")
    meta.set_(origin.untyped_storage(), offset, shape, stride)      # shares the base's storage, as views do
    with _HandBack(FakeTensor(fake_mode, meta, device)):
        out = _AS_STRIDED(origin, shape, stride, offset)
    if out.requires_grad != requires_grad:
        raise RuntimeError("the rebuilt view differs from the recorded one")
    return out


SHARED = FakeOpMemo()
