"""`optimizer.step()` of torch.optim optimizers translated into the graph.

Why this exists: every optimizer's step is wrapped twice -- `Optimizer.profile_hook_step` (a
record_function block around the step hooks and the call) and `_use_grad_for_differentiable` (sets grad
mode to `defaults['differentiable']` around the step and asks a compiler to break there) -- and keeps its
state in `optimizer.state`, a defaultdict keyed by the parameters. The wrapper (recognised by its code
object, shared by every optimizer class) is stood in for here: with no step hooks registered (guarded:
the global hook dicts and the optimizer's own are empty), it becomes a record_function block (graph
nodes) around the undecorated step, inlined under the grad mode `_use_grad` would set (no break: the
ops it records are all in-place updates under no_grad). While the step runs, `self.state` is
`OptimizerState`: `state[p]` for a parameter reached through a Source is that parameter's real state
dict, wrapped with a Source `optimizer.state[<the parameter's path>]` -- its tensors become graph inputs
(exp_avg, momentum buffers, the `step` counter tensors, updated in place by the graph), and stores into
it (lazy initialisation on the first step, SGD's momentum buffers) are replayed after the graph like any
input dict's. Lazily made state is made for real before translating, as `_init_group` would at the start
of the step (`_initialize_state`), so one graph serves every step (SGD's momentum buffers, made by the
update itself on the first step, give a second graph, as under torch.compile; the state's keys are
guarded). A state object replaced (load_state_dict) fails its identity guard.
Learning rates and other hyperparameters are constants guarded by value: changing them recompiles.
"""
import inspect
import operator
from dataclasses import dataclass

import torch
import torch.optim.optimizer as optimizer_module
import torch.utils._foreach_utils

from ...dynamo_reads import is_eval_frame_wrapper
from ...errors import GraphBreak
from ..dispatch import CODE_LOOKASIDES, LOOKASIDES, lookaside
from ..source import AttrSource, ItemSource, Source, fixed_source
from ..values.base import Const, ObjectValue, SeqValue, TensorValue, Value
from ..values.managers.state_managers import GradModeManager
from .profiler_blocks import RecordFunctionManager

STEP_WRAPPER_CODE = torch.optim.Optimizer.profile_hook_step(lambda *args, **kwargs: None).__code__
USE_GRAD_CODE = optimizer_module._use_grad_for_differentiable(lambda self: None).__code__
_HOOK_DICTS = (("_global_optimizer_pre_hooks", optimizer_module._global_optimizer_pre_hooks),
               ("_global_optimizer_post_hooks", optimizer_module._global_optimizer_post_hooks))


@dataclass(frozen=True)
class ParamStateSource(Source):
    """`optimizer.state[param]`: one parameter's state dict (the key is the parameter's own path)."""
    state: Source
    param: Source

    def expr(self):
        return f"{self.state.expr()}[{self.param.expr()}]"

    def name(self):
        return f"{self.state.name()}[{self.param.name()}]"

    def root(self):
        return self.state.root()


class OptimizerState(Value):
    """`optimizer.state` while its step is translated: indexed by parameters (see the module docstring)."""
    __slots__ = ("state",)

    def __init__(self, state, source):
        super().__init__(source)
        self.state = state

    def python_type(self):
        return type(self.state)

    def getitem(self, tx, key):
        param = _real_input(tx, key)
        if param is None:
            raise GraphBreak("optimizer", "optimizer.state indexed by something other than an input parameter")
        return tx.ctx.wrap(self.state[param], ParamStateSource(self.source, key.source))

    def call_method(self, tx, name, args, kwargs):
        if name == "__getitem__" and len(args) == 1 and not kwargs:
            return self.getitem(tx, args[0])
        raise GraphBreak("optimizer", f"optimizer.state.{name}() is not supported in a graph")

    def __repr__(self):
        return "OptimizerState()"


def _real_input(tx, value):
    if not isinstance(value, TensorValue) or value.source is None:
        return None
    for source, tensor, node in tx.ctx.graph.inputs:
        if node is value.node:
            return tensor
    return None


def _closure_item(fn, name):
    try:
        return fn.__closure__[fn.__code__.co_freevars.index(name)].cell_contents
    except (ValueError, TypeError, IndexError):
        return None


def _initialize_state(opt):
    """Create the lazily made state of parameters that have a gradient and no state yet, for real, as the
    step's own `_init_group(group, <lists>...)` does first thing (torch's optimizers all have one): so the
    graph is the steady-state step from the first call on. Eager's step would create the same tensors at
    the same point (and skips its creation when they exist)."""
    init = getattr(type(opt), "_init_group", None)
    if init is None or not (type(opt).__module__ or "").startswith("torch.optim"):
        return
    try:
        lists = len(inspect.signature(init).parameters) - 2          # (self, group, <lists>...)
    except (TypeError, ValueError):
        return
    for group in opt.param_groups:
        if not any(p.grad is not None and not opt.state.get(p) for p in group["params"]):
            continue
        with torch.no_grad():
            try:
                init(opt, group, *[[] for _ in range(lists)])
            except Exception as e:
                raise GraphBreak("optimizer", f"{type(opt).__name__}._init_group raised {type(e).__name__}: {e}")


def _see_through_compiler_wrapper(opt_cls):
    """torch's own compiler, once imported (by anyone), replaces every optimizer class's `_init_group`
    with a wrapper that keeps itself from compiling it (torch._dynamo's eval_frame; framejit does not import
    it). The step calls it: it is inlined as the function it wraps."""
    init = getattr(opt_cls, "_init_group", None)
    inner = getattr(init, "__wrapped__", None)
    code = getattr(init, "__code__", None)
    if inner is None or code is None or init in LOOKASIDES or \
            not is_eval_frame_wrapper(code):
        return
    LOOKASIDES[init] = lambda tx, args, kwargs: tx.inline(inner, None, list(args), dict(kwargs))


def step_wrapper_call(tx, fn, fn_source, args, kwargs):
    """Optimizer.profile_hook_step's wrapper(self, *args, **kwargs)."""
    opt_value = args[0] if args else None
    opt = getattr(opt_value, "obj", None)
    if not isinstance(opt_value, ObjectValue) or opt_value.source is None or not isinstance(opt, torch.optim.Optimizer):
        raise GraphBreak("optimizer", "Optimizer.step called on something other than an optimizer reached from the frame")
    guards = tx.ctx.guards
    for name, hooks in _HOOK_DICTS:
        guards.add("LEN_MATCH", fixed_source(hooks, f"torch.optim.optimizer.{name}"), len(hooks))
        if hooks:
            raise GraphBreak("optimizer", "optimizer step hooks are registered: the step runs as Python")
    for name in ("_optimizer_step_pre_hooks", "_optimizer_step_post_hooks"):
        hooks = getattr(opt, name)
        guards.add("LEN_MATCH", AttrSource(opt_value.source, name), len(hooks))
        if hooks:
            raise GraphBreak("optimizer", "optimizer step hooks are registered: the step runs as Python")
    inner = _closure_item(fn, "func")
    if inner is None:
        raise GraphBreak("optimizer", "an Optimizer.step wrapper without its function")
    _initialize_state(opt)
    _see_through_compiler_wrapper(type(opt))
    state_source = AttrSource(opt_value.source, "state")
    guards.add("ID_MATCH", state_source, opt.state)
    tx.ctx.wrapped[state_source] = OptimizerState(opt.state, state_source)
    block = RecordFunctionManager(f"Optimizer.step#{type(opt).__name__}.step", None)
    block.enter(tx)
    if inner.__code__ is USE_GRAD_CODE:
        step = _closure_item(inner, "func")
        defaults = tx.ctx.wrap(opt.defaults, AttrSource(opt_value.source, "defaults"))
        differentiable = tx.call_method(defaults, "__getitem__", [Const("differentiable")], {}) \
            if not isinstance(defaults, ObjectValue) else None
        if not isinstance(differentiable, Const) or type(differentiable.value) is not bool:
            raise GraphBreak("optimizer", "optimizer.defaults['differentiable'] is not a constant bool")
        grad_mode = GradModeManager(differentiable.value, torch.set_grad_enabled)
        grad_mode.enter(tx)
        out = tx.inline(step, None, list(args), dict(kwargs))
        grad_mode.exit(tx)
    else:
        out = tx.inline(inner, None, list(args), dict(kwargs))
    tx.call_method(opt_value, "_optimizer_step_code", [], {})
    block.exit(tx)
    return out


CODE_LOOKASIDES[STEP_WRAPPER_CODE] = step_wrapper_call


def _pure_query(fn):
    """A torch helper answering a fixed question (which devices have foreach/fused kernels): called for
    real at translation, its answer a constant."""
    def impl(tx, args, kwargs):
        if args or kwargs:
            raise GraphBreak("call", f"{fn.__name__}() with arguments")
        from ..values.protocol import wrap_unsourced
        return wrap_unsourced(fn())
    return impl


for _name in ("_get_fused_kernels_supported_devices", "_get_foreach_kernels_supported_devices"):
    _fn = getattr(torch.utils._foreach_utils, _name, None)
    if _fn is not None:
        lookaside(_fn)(_pure_query(_fn))


# ---- a 0-dim tensor where a Scalar is expected -------------------------------------------------------
# Under a compiler `_get_value(step)` keeps optimizer step counters as tensors, so the single-tensor
# paths pass `value=<0-dim tensor>` to addcdiv_/addcmul_, whose `value` is a Scalar: eagerly that is an
# .item() (data-dependent). The same arithmetic in tensor ops, in the kernel's order:
# self + (value * t1) / t2  and  self + value * t1 * t2.
_SCALAR_VALUE_METHODS = {"addcdiv_": ("div", True), "addcdiv": ("div", False),
                         "addcmul_": ("mul", True), "addcmul": ("mul", False)}


def tensor_value_rewrite(tx, t, name, args, kwargs):
    """The result of `t.<name>(t1, t2, value=<tensor>)` as tensor ops, or None when it does not apply."""
    how = _SCALAR_VALUE_METHODS.get(name)
    value = kwargs.get("value")
    if how is None or not isinstance(value, TensorValue) or value.fake.dim() != 0 or len(args) != 2 or \
            set(kwargs) != {"value"}:
        return None
    combine, in_place = how
    graph = tx.ctx.graph
    scaled = graph.call_function(torch.mul, (args[0], value), {})
    term = graph.call_function(getattr(torch, combine), (scaled, args[1]), {})
    if in_place:
        graph.call_method("add_", (t, term), {})
        return t
    return graph.call_function(torch.add, (t, term), {})


def _foreach_with_scalar_tensor(fn, method):
    """torch._foreach_addcdiv_(self, t1, t2, scalars) with `scalars` a 1-D tensor (foreach optimizers under
    a compiler stack their step sizes): fake tensors cannot run that overload (its CPU check sees the meta
    device), and on CPU torch runs it tensor by tensor with each element as the Scalar anyway -- so it is
    recorded the same way, through tensor_value_rewrite. Any other call is the plain graph op."""
    def impl(tx, args, kwargs):
        scalars = args[3] if len(args) == 4 and not kwargs else None
        lists = args[:3]
        if not isinstance(scalars, TensorValue) or scalars.fake.dim() != 1 or \
                not all(isinstance(l, SeqValue) and all(isinstance(i, TensorValue) for i in l.items) for l in lists) \
                or len({len(l.items) for l in lists}) != 1 or scalars.fake.shape[0] != len(lists[0].items):
            return tx.ctx.graph.call_function(fn, tuple(args), kwargs)
        graph = tx.ctx.graph
        outs = []
        for i, (t, a, b) in enumerate(zip(*(l.items for l in lists))):
            value = graph.call_function(operator.getitem, (scalars, Const(i)), {})
            outs.append(tensor_value_rewrite(tx, t, method, [a, b], {"value": value}))
        return Const(None) if method.endswith("_") else SeqValue(list, outs)
    return impl


for _fn, _method in ((torch._foreach_addcdiv_, "addcdiv_"), (torch._foreach_addcmul_, "addcmul_"),
                     (torch._foreach_addcdiv, "addcdiv"), (torch._foreach_addcmul, "addcmul")):
    lookaside(_fn)(_foreach_with_scalar_tensor(_fn, _method))
