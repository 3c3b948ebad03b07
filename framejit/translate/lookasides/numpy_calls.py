"""numpy code on tensors, traced as tensor code: the one module that knows how numpy runs in a graph.

Every numpy operation the frame does on arrays (a function of np, np.linalg, np.fft, an ndarray method
or attribute, an operator, indexing) becomes one graph node whose target runs torch's numpy-on-torch
implementation, `torch._numpy`, on the graph's tensors (`numpy_target`): fake propagation gives the
result's metadata, and the backend sees plain torch ops. Swapping that implementation means changing
this module only.

torch._numpy is not numpy, so each operation's result is also asked of real numpy on stand-ins
(`numpy_results.py`): numpy's answer says what the result is (an ndarray, a numpy scalar, a tuple of
them, its dtype), and when torch._numpy's graph result differs in dtype, rank or values on the
stand-ins, the operation is a graph break, so a result is never of another dtype than eager numpy's.
In-place operations (`a += b`, `a[i] = v`, `a.fill(v)`) run on a copy in the graph and are written back
with `copy_`, so the graph keeps the write and every view of the storage sees it.

Graph breaks, with reasons: np.random (numpy's own generator stream, which no graph reproduces),
numpy functions given torch tensors (numpy then calls the tensor's methods or returns tensors), ndarray
methods that need the data (item, tolist, ...), functions torch._numpy lacks, data-dependent shapes
(np.nonzero, boolean masks), anything whose numpy result type torch._numpy does not match.
"""
import operator
import re
import warnings

import numpy as np
import torch
import torch._numpy as tnp
from torch._numpy import _dtypes_impl

from ...errors import GraphBreak
from ..dispatch import LOOKASIDES
from ..values.tensors import ndarrays
from ..values.base import Const, MethodValue, ObjectValue, SeqValue, TensorValue
from ..values.tensors.ndarrays import TORCH_OF_NUMPY, NdarrayValue, is_numpy_constant, numpy_dtype
from ..values.operator_rules import BINARY, COMPARE, INPLACE, UNARY
from ..values.protocol import as_python
from .numpy_results import FULL_CHECK_LIMIT, Standin, ask_numpy, dtype_name, expected_result, is_dtype_like, \
    plain_constant

NUMPY_DEFAULTS = _dtypes_impl.DefaultDTypes(float_dtype=torch.float64, complex_dtype=torch.complex128,
                                            int_dtype=torch.int64)


def _check_defaults():
    """torch._numpy reads its default dtypes from torch's compiler config the first time; numpy's are
    set here before that happens. If someone set others, numpy code is not traced."""
    if _dtypes_impl._default_dtypes is None:
        _dtypes_impl._default_dtypes = NUMPY_DEFAULTS
    if _dtypes_impl._default_dtypes != NUMPY_DEFAULTS:
        raise GraphBreak("numpy", "torch._numpy's default dtypes were changed from numpy's float64/int64")


# ---- graph targets: torch._numpy run on the graph's tensors -------------------------------------------

_TARGETS = {}


def _to_tnp(x):
    if isinstance(x, torch.Tensor):
        return tnp.ndarray(x)
    if type(x) in (tuple, list):
        return type(x)(_to_tnp(i) for i in x)
    if isinstance(x, dict):
        return {k: _to_tnp(v) for k, v in x.items()}
    return x


def _from_tnp(x):
    if isinstance(x, tnp.ndarray):
        return x.tensor
    if isinstance(x, (tuple, list)):
        return tuple(_from_tnp(i) for i in x)
    return x


def _integer_operand(x):
    return type(x) in (int, bool) or isinstance(x, tnp.ndarray) and not (x.tensor.is_floating_point() or
                                                                          x.tensor.is_complex())


def _zero_safe(fn):
    """Integer floor division and remainder by zero: numpy gives 0 (and a warning), torch raises. The
    target divides by 1 where the divisor is 0 and puts 0 there, as numpy does."""
    def run(a, b, *rest, **kwargs):
        if not (_integer_operand(a) and _integer_operand(b)):
            return fn(a, b, *rest, **kwargs)
        zero = tnp.asarray(b) == 0
        out = fn(a, tnp.where(zero, 1, b) if isinstance(b, tnp.ndarray) else (b or 1), *rest, **kwargs)
        if isinstance(out, tuple):
            return tuple(tnp.where(zero, 0, o) for o in out)
        return tnp.where(zero, 0, out)
    return run


# operations that raise in torch on an integer zero divisor (by the label numpy_op is given)
ZERO_DIVISION = {"np.floor_divide", "np.remainder", "np.mod", "np.fmod", "np.divmod", "operator//", "operator%",
                 "operator//=", "operator%=", "ndarray.__floordiv__", "ndarray.__mod__", "ndarray.__divmod__",
                 "ndarray.__rfloordiv__", "ndarray.__rmod__", "divmod()"}


def _zero_safe_inplace(fn):
    safe = _zero_safe({operator.ifloordiv: operator.floordiv, operator.imod: operator.mod}.get(fn, fn))

    def run(arr, b):
        result = safe(arr, b)
        arr.tensor.copy_(tnp.asarray(result).tensor)      # same_kind casting was checked by numpy
    return run


def numpy_target(label, fn, inplace=False):
    """A graph-node target running `fn` (a torch._numpy callable) on tensors as ndarrays; `inplace`:
    fn mutates its first argument, which the target copies first and returns."""
    key = (label, inplace)
    target = _TARGETS.get(key)
    if target is not None:
        return target
    if label in ZERO_DIVISION:
        fn = _zero_safe(fn) if not inplace else _zero_safe_inplace(fn)
    if inplace:
        def target(dest, *args, **kwargs):
            arr = tnp.ndarray(dest.clone())
            fn(arr, *_to_tnp(args), **_to_tnp(kwargs))
            return arr.tensor
    else:
        def target(*args, **kwargs):
            return _from_tnp(fn(*_to_tnp(args), **_to_tnp(kwargs)))
    name = "numpy_" + re.sub(r"\W", "_", label) + ("_inplace" if inplace else "")
    target.__name__ = target.__qualname__ = name
    target.__module__ = __name__
    _TARGETS[key] = target
    return target


# ---- arguments: graph values and the stand-ins numpy checks the result type on ------------------

class Args:
    """Arguments of one numpy operation: graph values (for the node) and oracle values (for numpy)."""

    def __init__(self, tx, allow_tensors=False):
        self.tx = tx
        self.allow_tensors = allow_tensors
        self.standins = []

    def one(self, v):
        if isinstance(v, NdarrayValue):
            return v.tensor, self._standin(v.tensor.fake, v.scalar)
        if isinstance(v, TensorValue):
            if not self.allow_tensors:
                raise GraphBreak("numpy", "a numpy function given a torch tensor (numpy then calls the tensor's "
                                 "own methods or returns a tensor); convert it with .numpy() first")
            return tensor_as_ndarray(v).tensor, self._standin(v.fake, False)
        if is_numpy_constant(v):
            obj = v.obj if isinstance(v, ObjectValue) else v.value
            return constant_tensor(self.tx, obj), obj
        if isinstance(v, (Const, ObjectValue)):
            obj = v.value if isinstance(v, Const) else v.obj
            if is_dtype_like(obj):
                return Const(dtype_name(obj)), obj
            if isinstance(v, Const) and not isinstance(obj, (tuple, list, dict, set)) or \
                    isinstance(obj, tuple) and plain_constant(obj):
                return Const(obj), obj
            raise GraphBreak("numpy", f"a numpy operation given {type(obj).__name__}")
        if isinstance(v, SeqValue) and v.kind in (tuple, list):
            pairs = [self.one(i) for i in v.items]
            return SeqValue(v.kind, [p[0] for p in pairs]), v.kind(p[1] for p in pairs)
        raise GraphBreak("numpy", f"a numpy operation given {v!r}")

    def _standin(self, fake, scalar):
        dtype = numpy_dtype(fake)
        if dtype is None:
            raise GraphBreak("numpy", f"numpy has no dtype for a {fake.dtype} tensor")
        s = Standin(tuple(fake.shape), dtype, scalar)
        self.standins.append(s)
        return s

    def all(self, args, kwargs):
        pa = [self.one(a) for a in args]
        pk = {k: self.one(v) for k, v in kwargs.items()}
        return ([p[0] for p in pa], {k: p[0] for k, p in pk.items()},
                [p[1] for p in pa], {k: p[1] for k, p in pk.items()})


def constant_tensor(tx, obj):
    """A numpy scalar known at translation, as a 0-d tensor of its dtype in the graph."""
    dtype = TORCH_OF_NUMPY.get(obj.dtype)
    if dtype is None:
        raise GraphBreak("numpy", f"numpy scalar of dtype {obj.dtype} has no torch dtype")
    return tx.ctx.graph.call_function(torch.tensor, (Const(obj.item()),), {"dtype": Const(dtype)})


def tensor_as_ndarray(t):
    """`t.numpy()` / np.asarray(t): the same data read as an ndarray (eagerly these raise on tensors that
    require grad, live off the CPU, have a conjugate bit or a dtype numpy lacks)."""
    fake = t.fake
    if fake.requires_grad:
        raise GraphBreak("numpy", "Tensor.numpy() of a tensor that requires grad raises RuntimeError")
    if fake.device.type != "cpu":
        raise GraphBreak("numpy", "Tensor.numpy() of a tensor off the CPU raises TypeError")
    if fake.is_conj() or fake.is_neg() or numpy_dtype(fake) is None:
        raise GraphBreak("numpy", f"Tensor.numpy() of this tensor ({fake.dtype}) raises")
    return NdarrayValue(t)


# ---- one operation --------------------------------------------------------------------------------

def _cast_to(tx, expected, out):
    if isinstance(expected, (np.ndarray, np.generic)) and out.fake.dtype is not TORCH_OF_NUMPY[expected.dtype]:
        return tx.ctx.graph.call_method("to", (out, Const(TORCH_OF_NUMPY[expected.dtype])), {})
    if isinstance(expected, (tuple, list)):
        return SeqValue(out.kind, [_cast_to(tx, e, o) for e, o in zip(expected, out.items)])
    return out


def _as_values(expected, out):
    if isinstance(expected, np.ndarray):
        return NdarrayValue(out)
    if isinstance(expected, np.generic):
        return NdarrayValue(out, scalar=True)
    if isinstance(expected, (tuple, list)):           # np.split gives a list, np.linalg.eigh a namedtuple
        return SeqValue(type(expected), [_as_values(e, o) for e, o in zip(expected, out.items)])
    return out


# positions of (base, exponent) among the arguments of the power operations, by label
POWER = {"operator**": (0, 1), "operator**=": (0, 1), "np.power": (0, 1), "np.pow": (0, 1),
         "ndarray.__pow__": (0, 1), "ndarray.__rpow__": (1, 0)}
# torch._numpy functions whose values are not numpy's
WRONG_VALUES = {"np.cbrt": "torch._numpy computes it as x ** (1/3), NaN for negative x"}


def _integer_typed(v):
    if isinstance(v, NdarrayValue):
        return v.dtype.kind in "iub"
    obj = _real(v) if isinstance(v, (Const, ObjectValue)) else None
    return type(obj) in (int, bool) or isinstance(obj, (np.integer, np.bool_))


def _check_operation(label, args):
    if label in WRONG_VALUES:
        raise GraphBreak("numpy", f"{label}: {WRONG_VALUES[label]}")
    where = POWER.get(label)
    if where is not None and len(args) > 1:
        base, exponent = args[where[0]], args[where[1]]
        if _integer_typed(base) and _integer_typed(exponent) and \
                not (isinstance(exponent, (Const, ObjectValue)) and _real(exponent) >= 0):
            raise GraphBreak("numpy", f"{label}: integers to integer powers the graph cannot see (numpy raises "
                             "ValueError on a negative one, torch does not)")


def numpy_op(tx, label, tnp_fn, np_fn, args, kwargs, allow_tensors=False):
    """Run one numpy operation in the graph (torch._numpy) with numpy's result type (real numpy on
    stand-ins), returning NdarrayValues (or a tuple of them)."""
    _check_defaults()
    _check_operation(label, args)
    prepared = Args(tx, allow_tensors)
    gargs, gkwargs, oargs, okwargs = prepared.all(args, kwargs)
    target = numpy_target(label, tnp_fn)
    out = tx.ctx.graph.call_function(target, tuple(gargs), gkwargs)
    expected = expected_result(label, np_fn, (gargs, gkwargs, oargs, okwargs), prepared, out, target)
    out = _cast_to(tx, expected, out)
    result = _as_values(expected, out)
    if isinstance(result, NdarrayValue) and not result.scalar:
        for a in args:                  # np.asarray(a), a.astype(a.dtype, copy=False): numpy returns `a`
            if isinstance(a, NdarrayValue) and a.tensor is result.tensor and not a.scalar:
                return a
    return result


def numpy_inplace(tx, label, tnp_fn, np_fn, dest, args, kwargs):
    """An operation that writes into ndarray `dest`: computed on a copy in the graph and copied back (numpy
    checks the write on a writable stand-in: casting errors, bad shapes)."""
    _check_defaults()
    _check_operation(label, [dest, *args])
    if dest.scalar:
        raise GraphBreak("numpy", f"{label} on a numpy scalar (scalars are immutable)")
    prepared = Args(tx)
    gargs, gkwargs, oargs, okwargs = prepared.all([dest, *args], kwargs)
    new = tx.ctx.graph.call_function(numpy_target(label, tnp_fn, inplace=True), tuple(gargs), gkwargs)
    for full in (False, True):
        if full and sum(s.numel() for s in prepared.standins) > FULL_CHECK_LIMIT:
            raise GraphBreak("numpy", f"{label}: the arrays are too large to check the write on")
        try:
            ask_numpy(np_fn, oargs, okwargs, full, writable=True)
            break
        except Exception as e:
            if full:
                raise GraphBreak("numpy", f"{label}: numpy raises {type(e).__name__} on this write")
    if not isinstance(new, TensorValue) or new.fake.dtype is not dest.tensor.fake.dtype:
        raise GraphBreak("numpy", f"{label}: torch._numpy changed the array's dtype")
    tx.ctx.graph.call_method("copy_", (dest.tensor, new), {})
    return dest


# ---- the bridge NdarrayValue routes to --------------------------------------------------------------

DATA_METHODS = {"item", "tolist", "tobytes", "tofile", "dump", "dumps", "__array__", "__float__", "__int__",
                "__bool__", "__index__", "__complex__", "itemset", "getfield", "setfield", "byteswap",
                "view", "resize", "setflags", "__array_wrap__", "__reduce__", "__dlpack__", "__iter__"}
INPLACE_METHODS = {"fill", "sort", "put"}
TNP_ATTRIBUTES = {"T", "real", "imag", "mT"}
INPLACE_DUNDERS = {f"__{fn.__name__}__": sym for sym, fn in INPLACE.items()}


def _method_runner(name):
    return lambda a, *args, **kwargs: getattr(a, name)(*args, **kwargs)


def _attribute_runner(name):
    return lambda a: getattr(a, name)


class Bridge:
    def attribute(self, tx, arr, name):
        if name in TNP_ATTRIBUTES and hasattr(tnp.ndarray, name):
            run = _attribute_runner(name)
            return numpy_op(tx, f"ndarray.{name}", run, run, [arr], {})
        if name in DATA_METHODS or name in INPLACE_METHODS or callable(getattr(tnp.ndarray, name, None)):
            if callable(getattr(np.ndarray, name, None)):
                return MethodValue(arr, name)
        raise GraphBreak("numpy", f"ndarray.{name} is not supported in a graph")

    def method(self, tx, arr, name, args, kwargs):
        sym = INPLACE_DUNDERS.get(name)
        if sym is not None and len(args) == 1 and not kwargs:      # a.__iadd__(b) spelled out
            return self.binary(tx, sym, arr, args[0])
        if name in DATA_METHODS:
            raise GraphBreak("data-dependent", f"ndarray.{name}() needs the array's values, which a graph does not have")
        run = _method_runner(name)
        if name in INPLACE_METHODS:
            return numpy_inplace(tx, f"ndarray.{name}", run, run, arr, args, kwargs)
        if not callable(getattr(tnp.ndarray, name, None)):
            raise GraphBreak("numpy", f"ndarray.{name} has no tensor implementation (torch._numpy)")
        return numpy_op(tx, f"ndarray.{name}", run, run, [arr, *args], kwargs)

    def getitem(self, tx, arr, index):
        return numpy_op(tx, "getitem", operator.getitem, operator.getitem, [arr, index], {})

    def setitem(self, tx, arr, index, value):
        numpy_inplace(tx, "setitem", operator.setitem, operator.setitem, arr, [index, value], {})

    def binary(self, tx, sym, a, b):
        """`a <sym> b` with an ndarray or numpy scalar on either side."""
        if isinstance(a, TensorValue) or isinstance(b, TensorValue):
            return _with_tensor(tx, sym, a, b)
        graph_values = [x for x in (a, b) if isinstance(x, NdarrayValue)]
        fn = BINARY.get(sym) or INPLACE.get(sym) or COMPARE[sym]
        if not graph_values:             # numpy scalars and constants: computed for real, numpy's way
            try:
                with np.errstate(all="ignore"), warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    return numpy_constant(fn(_real(a), _real(b)))
            except GraphBreak:
                raise
            except Exception as e:
                raise GraphBreak("constant op raised", f"{sym} on numpy constants raised {type(e).__name__}: {e}")
        if sym in INPLACE and isinstance(a, NdarrayValue) and not a.scalar:
            return numpy_inplace(tx, f"operator{sym}", fn, fn, a, [b], {})
        if sym in INPLACE:
            fn = BINARY[sym[:-1]]
        return numpy_op(tx, f"operator{sym}", fn, fn, [a, b], {})

    def unary(self, tx, sym, a):
        fn = UNARY[sym]
        if is_numpy_constant(a):
            return numpy_constant(fn(_real(a)))
        return numpy_op(tx, f"operator_unary{sym}", fn, fn, [a], {})


def _real(v):
    if isinstance(v, ObjectValue):
        return v.obj
    if isinstance(v, Const):
        return v.value
    raise GraphBreak("numpy", f"{v!r} is not a constant")


def numpy_constant(obj):
    """A numpy scalar or Python constant computed at translation."""
    if isinstance(obj, np.generic):
        return ObjectValue(obj)
    if isinstance(obj, np.ndarray):
        raise GraphBreak("numpy", "an ndarray computed from constants at translation")
    return Const(obj)


def _category(dtype):
    return 3 if dtype.is_complex else 2 if dtype.is_floating_point else 0 if dtype is torch.bool else 1


def _with_tensor(tx, sym, a, b):
    """A torch tensor and a numpy scalar: torch reads a numpy scalar as a Python number (Tensor's own
    operators run; numpy defers to them); an ndarray with a tensor is not traced."""
    def as_torch_operand(v, other):
        if isinstance(v, TensorValue) or isinstance(v, Const) and not isinstance(v.value, np.generic):
            return v
        if is_numpy_constant(v):
            return Const(_real(v).item())
        if isinstance(v, NdarrayValue) and v.scalar and other.fake.ndim > 0 and \
                _category(v.tensor.fake.dtype) <= _category(other.fake.dtype):
            return v.tensor                # then a 0-d tensor leaves the dtype alone, as a Python number does
        raise GraphBreak("numpy", f"operator {sym} between a torch tensor and a numpy array or a numpy scalar the "
                         "graph computes (torch reads it as a Python number, whose dtype a graph value lacks)")
    from ..values.operator_rules import binary_op, compare_op
    x, y = as_torch_operand(a, b if isinstance(b, TensorValue) else a), \
        as_torch_operand(b, a if isinstance(a, TensorValue) else b)
    return compare_op(tx, sym, x, y) if sym in COMPARE else binary_op(tx, sym, x, y)


ndarrays.BRIDGE = Bridge()


# ---- numpy's callables ------------------------------------------------------------------------------

# Functions of dtypes and shapes only: answered at translation by numpy itself, on stand-ins of the real
# shape (broadcast views: no memory).
METADATA_FUNCTIONS = {"shape", "ndim", "size", "result_type", "promote_types", "can_cast", "issubdtype",
                      "iinfo", "finfo", "dtype", "isscalar", "min_scalar_type", "isdtype", "issubsctype",
                      "iscomplexobj", "isrealobj", "broadcast_shapes", "typename", "mintypecode"}
# np.asarray(t) of a torch tensor reads it through t.__array__() (t.numpy()); other numpy functions
# given tensors call the tensor's own methods or return tensors, which is not traced.
TENSOR_READERS = {"asarray", "array", "asanyarray", "ascontiguousarray", "copy",
                  # the *_like factories read a tensor through its __array__ (no method of the tensor is
                  # called) and return an ndarray; empty_like's values are undefined, so it is not here
                  "ones_like", "zeros_like", "full_like"}


def _metadata_call(name, np_fn):
    def impl(tx, args, kwargs):
        real = [_meta_arg(a) for a in args]
        real_kw = {k: _meta_arg(v) for k, v in kwargs.items()}
        try:
            out = np_fn(*real, **real_kw)
        except Exception as e:
            raise GraphBreak("constant call raised", f"np.{name} raised {type(e).__name__}: {e}")
        return numpy_constant(out) if not isinstance(out, (np.dtype, np.finfo, np.iinfo, tuple, type)) or \
            isinstance(out, tuple) and not plain_constant(out) else Const(out)
    return impl


def _meta_arg(v):
    if isinstance(v, NdarrayValue):
        dtype = v.dtype
        return dtype.type(0) if v.scalar else np.broadcast_to(np.zeros((), dtype), tuple(v.tensor.fake.shape))
    if isinstance(v, TensorValue):
        raise GraphBreak("numpy", "a numpy function given a torch tensor")
    if isinstance(v, SeqValue):
        return v.kind(_meta_arg(i) for i in v.items) if v.kind in (tuple, list) else _real(v)
    if isinstance(v, (Const, ObjectValue)):
        return _real(v)
    raise GraphBreak("numpy", f"a numpy function given {v!r}")


# pure functions of small constants (np.prod(x.shape)): computed now when no argument is an array and the
# result is a numpy scalar or a Python constant; an ndarray result is made in the graph (a fresh array)
FOLDABLE = {"prod", "sum", "mean", "max", "min", "amax", "amin", "argmax", "argmin", "round", "around", "all",
            "any", "allclose", "isclose", "array_equal", "median", "std", "var", "ptp", "dot", "inner", "clip",
            "floor", "ceil", "cumsum", "cumprod", "linalg.norm", "average"}


def _fold_constants(label, np_fn, args, kwargs):
    values = [*args, *kwargs.values()]
    if not all(isinstance(v, (Const, ObjectValue, SeqValue)) for v in values):
        return None
    try:
        real = [as_python(a) for a in args]
        real_kw = {k: as_python(v) for k, v in kwargs.items()}
    except GraphBreak:
        return None
    if any(isinstance(x, (np.ndarray, torch.Tensor)) for x in [*real, *real_kw.values()]):
        return None
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = np_fn(*real, **real_kw)
    except Exception as e:
        raise GraphBreak("constant call raised", f"{label} raised {type(e).__name__}: {e}")
    return None if isinstance(out, np.ndarray) else numpy_constant(out)


def _array_call(label, tnp_fn, np_fn, allow_tensors):
    foldable = label.partition(".")[2] in FOLDABLE

    def impl(tx, args, kwargs):
        if foldable:
            folded = _fold_constants(label, np_fn, args, kwargs)
            if folded is not None:
                return folded
        if isinstance(np_fn, np.ufunc) and all(isinstance(a, (Const, ObjectValue)) for a in [*args, *kwargs.values()]) \
                and all(_scalar_constant(a) for a in [*args, *kwargs.values()]):
            try:             # a ufunc of constants (np.sqrt(2.0)): a numpy scalar, computed now
                with np.errstate(all="ignore"), warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    return numpy_constant(np_fn(*[_real(a) for a in args], **{k: _real(v) for k, v in kwargs.items()}))
            except Exception as e:
                raise GraphBreak("constant call raised", f"{label} raised {type(e).__name__}: {e}")
        if "out" in kwargs:
            raise GraphBreak("numpy", f"{label}(..., out=...) is not supported")
        return numpy_op(tx, label, tnp_fn, np_fn, args, kwargs, allow_tensors=allow_tensors)
    return impl


def _scalar_constant(v):
    obj = _real(v)
    return isinstance(obj, (int, float, bool, complex, np.generic)) or is_dtype_like(obj) or obj is None


def _scalar_type_call(cls, tnp_fn):
    """np.float32(2.0): a numpy scalar computed now; np.float32(array): a conversion in the graph."""
    label = f"np.{cls.__name__}"

    def impl(tx, args, kwargs):
        if all(isinstance(a, (Const, ObjectValue)) for a in [*args, *kwargs.values()]):
            try:
                out = cls(*[_real(a) for a in args], **{k: _real(v) for k, v in kwargs.items()})
            except Exception as e:
                raise GraphBreak("constant call raised", f"{label} raised {type(e).__name__}: {e}")
            return numpy_constant(out)
        return numpy_op(tx, label, tnp_fn, cls, args, kwargs)
    return impl


def _breaking(label, reason):
    def impl(tx, args, kwargs):
        raise GraphBreak("numpy", f"{label}: {reason}")
    return impl


def _register(namespace, prefix, tnp_namespace, with_tnp):
    """Install lookasides for numpy's callables in `namespace`: with_tnp, those torch._numpy implements
    (by the same name); otherwise the rest, as graph breaks naming why (an alias such as np.concat is the
    same object as np.concatenate, found by the first pass)."""
    for name in dir(namespace):
        if name.startswith("_"):
            continue
        obj = getattr(namespace, name)
        label = f"{prefix}.{name}"
        if isinstance(obj, type):
            if with_tnp and issubclass(obj, np.generic) and obj in TORCH_OF_NUMPY_TYPES and hasattr(tnp, name):
                LOOKASIDES.setdefault(obj, _scalar_type_call(obj, getattr(tnp, name)))
            elif with_tnp and obj in (np.dtype, np.iinfo, np.finfo):
                LOOKASIDES.setdefault(obj, _metadata_call(name, obj))
            continue
        if not callable(obj) or isinstance(obj, type(np)):
            continue
        try:
            hash(obj)
        except TypeError:
            continue
        if obj in LOOKASIDES:
            continue
        impl_fn = getattr(tnp_namespace, name, None) if tnp_namespace is not None else None
        if with_tnp:
            if name in METADATA_FUNCTIONS and tnp_namespace is tnp:
                LOOKASIDES[obj] = _metadata_call(name, obj)
            elif impl_fn is not None and callable(impl_fn):
                LOOKASIDES[obj] = _array_call(label, impl_fn, obj, allow_tensors=name in TENSOR_READERS)
        elif tnp_namespace is None:
            LOOKASIDES[obj] = _breaking(label, "np.random uses numpy's own global generator, whose stream a graph "
                                        "cannot reproduce; it runs as plain Python")
        else:
            LOOKASIDES[obj] = _breaking(label, "torch._numpy has no tensor implementation of it")


TORCH_OF_NUMPY_TYPES = {d.type for d in TORCH_OF_NUMPY}
for _with_tnp in (True, False):
    _register(np.random, "np.random", None, _with_tnp)
    _register(np.linalg, "np.linalg", tnp.linalg, _with_tnp)
    _register(np.fft, "np.fft", tnp.fft, _with_tnp)
    _register(np, "np", tnp, _with_tnp)


# ---- torch <-> numpy at the tensor side -------------------------------------------------------------

def tensor_numpy(tx, t, args, kwargs):
    """Tensor.numpy(): the tensor's own data as an ndarray (no copy, no node)."""
    force = kwargs.get("force", args[0] if args else Const(False))
    if not isinstance(force, Const) or force.value:
        raise GraphBreak("numpy", "Tensor.numpy(force=True) is not supported")
    return tensor_as_ndarray(t)


def _from_numpy(tx, args, kwargs):
    (arr,) = args
    if isinstance(arr, NdarrayValue) and not arr.scalar:
        return arr.tensor
    raise GraphBreak("numpy", f"torch.from_numpy of {arr!r}")


LOOKASIDES[torch.from_numpy] = _from_numpy

# torch functions that read an ndarray as a tensor: torch.tensor copies it, the others share its memory
# when the dtype allows
TORCH_READERS = {torch.tensor: True, torch.as_tensor: False, torch.asarray: False}


def torch_of_ndarray(tx, fn, args, kwargs):
    """torch.tensor(a) / torch.as_tensor(a) / torch.asarray(a) of an ndarray or numpy scalar (a numpy
    scalar gives a 0-d tensor of its dtype)."""
    if len(args) != 1 or set(kwargs) - {"dtype"}:
        raise GraphBreak("numpy", f"torch.{fn.__name__} of an ndarray with arguments other than dtype")
    out = args[0].tensor
    copy = TORCH_READERS[fn]
    dtype = kwargs.get("dtype")
    if dtype is not None and not (isinstance(dtype, Const) and isinstance(dtype.value, torch.dtype)):
        raise GraphBreak("numpy", f"torch.{fn.__name__} of an ndarray with dtype {dtype!r}")
    if dtype is not None and dtype.value is not out.fake.dtype:
        return tx.ctx.graph.call_method("to", (out, dtype), {})
    return tx.ctx.graph.call_method("clone", (out,), {}) if copy else out


def _wrap_builtin(builtin, np_fn):
    """abs(a), round(a)...: numpy's function on arrays and numpy scalars, the builtin's own lookaside
    otherwise."""
    plain = LOOKASIDES[builtin]
    traced = _array_call(f"{builtin.__name__}()", getattr(tnp, np_fn.__name__), np_fn, allow_tensors=False)

    def impl(tx, args, kwargs):
        if args and ndarrays.numpy_involved(args[0]):
            return traced(tx, args, kwargs)
        return plain(tx, args, kwargs)
    LOOKASIDES[builtin] = impl


_wrap_builtin(abs, np.absolute)
