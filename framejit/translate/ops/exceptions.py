"""Handlers: raise, assert, with-blocks and exception handling.

CPython 3.11 has no setup instructions for try blocks: the normal path of try/except/else/finally
just runs through (NOPs, the duplicated finally body, jumps); handlers are reached only through the
exception table. A Python exception raised in the translated region (`raise`, a failing `assert`, a
missing dict key...) becomes an ExceptionValue that follows the exception table (values/objects/exception_values.py),
so except clauses, finally bodies and with-block exits are translated like other code; the handler-only
instructions (PUSH_EXC_INFO, CHECK_EXC_MATCH, WITH_EXCEPT_START, POP_EXCEPT, RERAISE) are handled
here. An exception that leaves the root frame is a graph break: the call runs as plain Python and
raises for real. Graph breaks that are not Python exceptions never reach a user's except clause.

BEFORE_WITH enters a context manager (see values/managers/state_managers.py for the torch state managers); Python
managers have their __enter__ and __exit__ inlined.

Ops that fail only on tensor *values* (an out-of-range index, a matrix that is not positive-definite)
pass fake propagation and would raise inside the compiled graph, out of reach of the frame's own
except clauses. So an op recorded inside a region whose handler can catch (an except clause, a with-
block of a Python context manager, which may suppress) must be one that cannot fail on values
(FAIL_FREE_OPS, an allow-list); any other op there is a graph break and the frame runs as plain
Python. try/finally does not count (the error propagates either way), nor do blocks of torch state
managers (no_grad, autocast...: their exit only restores state).
"""
import contextlib
import inspect
import types

import torch
import torch.fx

from ...errors import GraphBreak
from ..lookasides.builtins_table import as_python, python_type_of
from ..calls import call_method, call_value
from ..values.objects.exception_values import ExceptionValue, RaisedException, instantiate
from ..values.managers.state_managers import (STATE_NODE_TARGETS, ExitValue, GlobalStateManager, ManagerValue,
    NullManager, manager_for_object)
from ..dispatch import handler
from ..values.base import Const, MethodValue, ObjectValue


@handler("RAISE_VARARGS")
def raise_varargs(tx, inst):
    if inst.arg == 0:                               # bare `raise`: the exception being handled
        if not tx.handled_exceptions:
            raise RaisedException(ExceptionValue(RuntimeError, [Const("No active exception to reraise")]))
        raise RaisedException(tx.handled_exceptions[-1])
    value = _as_exception(tx, tx.peek(inst.arg))
    if inst.arg == 2:
        value.cause = tx.peek()
    raise RaisedException(value)


def _as_exception(tx, v):
    if isinstance(v, ExceptionValue):
        return v
    if isinstance(v, ObjectValue) and isinstance(v.obj, type) and issubclass(v.obj, BaseException):
        return instantiate(tx, v.obj, [], {})
    if isinstance(v, ObjectValue) and isinstance(v.obj, BaseException):
        raise GraphBreak("raise object", f"raising the existing {type(v.obj).__name__} object {v.obj!r}")
    try:
        t = python_type_of(v)
    except (NotImplementedError, AttributeError):
        t = None
    if isinstance(t, type) and not issubclass(t, BaseException) and not (t is type and isinstance(v, ObjectValue)):
        return ExceptionValue(TypeError, [Const("exceptions must derive from BaseException")])
    raise GraphBreak("raise object", f"raising {v!r}")


@handler("LOAD_ASSERTION_ERROR")
def load_assertion_error(tx, inst):
    tx.push(ObjectValue(AssertionError))


@handler("RERAISE")
def reraise(tx, inst):
    exc = tx.peek()
    if not isinstance(exc, ExceptionValue):
        raise GraphBreak("raise object", f"re-raising {exc!r}")
    raise RaisedException(exc)


@handler("PUSH_EXC_INFO")
def push_exc_info(tx, inst):
    exc = tx.pop()
    tx.push(tx.handled_exceptions[-1] if tx.handled_exceptions else Const(None))
    tx.push(exc)
    tx.handled_exceptions.append(exc)


@handler("POP_EXCEPT")
def pop_except(tx, inst):
    tx.pop()
    if tx.handled_exceptions:
        tx.handled_exceptions.pop()


@handler("CHECK_EXC_MATCH")
def check_exc_match(tx, inst):
    right, left = tx.peek(), tx.peek(2)
    classes = as_python(right)
    for c in classes if isinstance(classes, tuple) else (classes,):
        if not (isinstance(c, type) and issubclass(c, BaseException)):
            raise RaisedException(ExceptionValue(TypeError, [Const(
                "catching classes that do not inherit from BaseException is not allowed")]))
    if not isinstance(left, ExceptionValue):
        raise GraphBreak("except", f"matching {left!r} against an except clause")
    tx.pop()
    tx.push(Const(issubclass(left.exc_type, classes)))


@handler("WITH_EXCEPT_START")
def with_except_start(tx, inst):
    exit_fn, exc = tx.peek(4), tx.peek()
    if not isinstance(exc, ExceptionValue):
        raise GraphBreak("with", f"leaving a with-block with {exc!r}")
    tx.push(call_value(tx, exit_fn, [ObjectValue(exc.exc_type), exc, Const(None)], {}))


@handler("CHECK_EG_MATCH", "PREP_RERAISE_STAR")
def exception_groups(tx, inst):
    raise GraphBreak("except*", "except* (exception groups) is not supported")


@handler("BEFORE_WITH")
def before_with(tx, inst):
    mgr = tx.peek()
    if isinstance(mgr, ObjectValue):
        mgr = manager_for_object(tx, mgr) or mgr
    if isinstance(mgr, ManagerValue):
        result = mgr.enter(tx)
        exit_fn = ExitValue(mgr)
    elif isinstance(mgr, ObjectValue) or mgr.has_methods():      # a Python context manager
        cls = python_type_of(mgr)
        for name in ("__enter__", "__exit__"):
            try:
                static = inspect.getattr_static(cls, name)
            except AttributeError:
                raise GraphBreak("raise", f"TypeError: {cls.__qualname__!r} object does not support the "
                                 "context manager protocol")
            if not isinstance(static, types.FunctionType):
                raise GraphBreak("with", f"{cls.__qualname__}.{name} is not Python code framejit can inline")
        exit_fn = MethodValue(mgr, "__exit__")
        result = call_method(tx, mgr, "__enter__", [], {})
    else:
        raise GraphBreak("with", f"with-block over {mgr!r} is not supported")
    tx.pop()
    tx.push(exit_fn)
    tx.push(result)


# ---- ops inside regions with handlers ----------------------------------------------------------------

# Ops (by function or method name; `name_` in-place variants included) whose only failures depend on
# shapes, dtypes and devices, which fake propagation already checked. Integer division and indexing
# with tensors are handled separately.
FAIL_FREE_OPS = frozenset("""
    add sub subtract mul multiply neg negative pos positive abs absolute truediv true_divide div divide
    floordiv floor_divide mod remainder fmod pow square sqrt rsqrt exp exp2 expm1 log log2 log10 log1p sin
    cos tan sinh cosh tanh asinh atan atan2 arctan sigmoid logsigmoid relu relu6 leaky_relu gelu silu mish
    elu selu celu softplus softsign hardtanh hardswish hardsigmoid erf erfc reciprocal sign sgn floor ceil
    round trunc frac clamp clip clamp_min clamp_max maximum minimum fmax fmin lerp addcmul addcdiv where
    masked_fill softmax log_softmax dropout eq ne lt le gt ge eq ne logical_and logical_or logical_not
    logical_xor and_ or_ xor invert not_ bitwise_and bitwise_or bitwise_xor bitwise_not isnan isinf
    isfinite nan_to_num sum mean prod amax amin max min std var norm logsumexp cumsum cumprod argmax argmin
    all any matmul mm bmm mv dot linear addmm baddbmm einsum outer layer_norm group_norm batch_norm rms_norm
    normalize conv1d conv2d conv3d max_pool1d max_pool2d avg_pool1d avg_pool2d adaptive_avg_pool1d
    adaptive_avg_pool2d scaled_dot_product_attention mse_loss l1_loss view reshape permute transpose t
    contiguous clone detach unsqueeze squeeze flatten unflatten expand expand_as repeat tile cat concat
    concatenate stack hstack vstack split chunk unbind flip roll movedim view_as reshape_as broadcast_to
    tril triu diagonal getitem setitem getattr to float half double bfloat16 int long bool type type_as copy fill
    zero zeros ones empty full arange zeros_like ones_like empty_like full_like rand randn rand_like
    randn_like eye linspace size dim numel
""".split())
_INTEGER_DIVISIONS = frozenset("truediv true_divide div divide floordiv floor_divide mod remainder fmod".split())


def _op_name(node):
    target = node.target
    name = target if isinstance(target, str) else getattr(target, "__name__", "")
    if name.endswith("_") and not name.endswith("__"):
        name = name[:-1]
    return name.strip("_") if name.startswith("__") else name


def _has_node(arg):
    if isinstance(arg, torch.fx.Node):
        return True
    if isinstance(arg, (tuple, list)):
        return any(_has_node(a) for a in arg)
    if isinstance(arg, slice):
        return any(_has_node(a) for a in (arg.start, arg.stop, arg.step))
    return False


def can_fail_on_values(node):
    """True if the node's op may raise at run time even though it ran fine on fake tensors."""
    if node.target in STATE_NODE_TARGETS:
        return False
    name = _op_name(node)
    if name not in FAIL_FREE_OPS or _mixed_float_dtypes(node):
        return True
    if name in ("getitem", "setitem") and len(node.args) > 1 and _has_node(node.args[1]) and \
            not isinstance(node.args[0], (tuple, list)):
        example = node.args[0].meta.get("example_value") if isinstance(node.args[0], torch.fx.Node) else None
        return example is None or isinstance(example, torch.Tensor)     # indexing with tensor values
    if name in _INTEGER_DIVISIONS:
        out = node.meta.get("example_value")
        return not isinstance(out, torch.Tensor) or not (out.is_floating_point() or out.is_complex())
    return False


def _mixed_float_dtypes(node):
    """Do the op's tensor arguments have two floating dtypes? Several meta kernels do not check what the real
    kernel refuses there: under CPU autocast `torch.mv(a.t() @ a, v)` multiplies a bfloat16 matrix by a
    float vector, which the fake ran (float32 out) and the kernel refuses ("addmv input tensors must have
    the same dtype"); in a `contextlib.suppress(RuntimeError)` block eagerly swallowed, the graph raised
    past it (fuzz seed 628476)."""
    dtypes = set()
    for arg in (*node.args, *node.kwargs.values()):
        for a in (arg if isinstance(arg, (tuple, list)) else (arg,)):
            value = a.meta.get("example_value") if isinstance(a, torch.fx.Node) else None
            if isinstance(value, torch.Tensor) and value.is_floating_point():
                dtypes.add(value.dtype)
    return len(dtypes) > 1


# _region_catches' answer for a block whose real __exit__ a resume function was given (truthy)
GIVEN_EXIT = "given exit"

# What may stand between PUSH_EXC_INFO and CHECK_EXC_MATCH: loading the classes an except clause names.
_EXCEPT_CLASS_LOADS = frozenset({"LOAD_GLOBAL", "LOAD_FAST", "LOAD_DEREF", "LOAD_CLASSDEREF", "LOAD_NAME",
                                 "LOAD_ATTR", "LOAD_CONST", "BUILD_TUPLE", "NOP", "EXTENDED_ARG", "CACHE"})


def _region_catches(tx, exn):
    """Can the handler of this exception-table entry stop an exception (an except clause, or the __exit__
    of a Python context manager), as opposed to a finally body or torch state restore that re-raises?
    GIVEN_EXIT: the __exit__ of a state block a resume function was given (entered for real before the
    frame), which must run on every exception that leaves the block."""
    head = exn.target
    i = tx.index.get(head)
    if i is None or head.opname != "PUSH_EXC_INFO":
        return False                                 # a cleanup block: re-raises
    nxt = tx.instructions[i + 1].opname
    if nxt == "POP_TOP":
        return True                                  # bare `except:`
    if nxt != "WITH_EXCEPT_START":
        j = i + 1
        while tx.instructions[j].opname in _EXCEPT_CLASS_LOADS:
            j += 1
        return tx.instructions[j].opname in ("CHECK_EXC_MATCH", "CHECK_EG_MATCH")    # else: a finally body
    slot = exn.depth - 1
    exit_fn = tx.stack[slot] if 0 <= slot < len(tx.stack) else None
    if isinstance(exit_fn, ExitValue):
        if exit_fn.source is not None:
            return GIVEN_EXIT
        mgr = exit_fn.manager
        if isinstance(mgr, GlobalStateManager) or getattr(mgr, "never_suppresses", False):
            return False
        if isinstance(mgr, NullManager) and mgr.kind is not contextlib.suppress:
            return False
    return True


def check_ops_in_handled_region(tx, inst, nodes):
    """Called by the translator after an instruction inside an exception-table region recorded nodes."""
    exn = inst.exn
    caught = False
    while exn is not None:
        caught = _region_catches(tx, exn)
        if caught:
            break
        exn = exn.target.exn
    if not caught:
        return
    # kept in the graph: if one raises at run time, the entry undoes the graph's partial run and reruns
    # the frame as plain Python, so the frame's own handler sees eager's exception (convert/raising_graphs.py).
    # Inside a block whose real __exit__ the frame was given (grad mode, autocast split by a break) any op
    # counts, not only those that fail on values: one that fails where its fake did not (a dtype mix that
    # autocast makes) must not leave the block entered either.
    if caught is GIVEN_EXIT:
        tx.ctx.handled_region_ops.extend(node for node in nodes if node.target not in STATE_NODE_TARGETS)
    else:
        tx.ctx.handled_region_ops.extend(node for node in nodes if can_fail_on_values(node))
