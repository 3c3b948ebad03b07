"""torch's kernel- and flag-switching context managers, and the flag reads beside them, at translation.

Why this exists: `with sdpa_kernel([SDPBackend.MATH]):`, `with torch.backends.cudnn.flags(enabled=False):`,
`torch.backends.mkldnn.flags(...)` and the deprecated `torch.backends.cuda.sdp_kernel(...)` only switch
process-wide flags that choose kernels; their bodies are ordinary model code. They are
@contextlib.contextmanager generators that read and set the flags through torch._C builtins framejit
cannot inline, so each block was a graph break inside a with-block: the whole frame ran as Python.

One model for the family (`FLAG_BLOCKS`, by identity of the manager function): the block becomes a pair
of graph nodes around its body. `enter_flag_block(name, args, kwargs)` builds torch's own manager from
the block's constant arguments and enters it at run time, returning it; `exit_flag_block(manager)`
leaves it. So the flags inside the block, and after it, are exactly what torch's own manager sets and
restores, whatever they were when the graph runs (nothing to guard), and the graph's exception-safe
wrapper (values/managers/state_managers.py) leaves an entered block when an op of its body raises, as
the generator's `finally` would. Arguments that are not constants (or a manager whose constructor
raises on them, checked now) keep the old path. Enum members (SDPBackend) travel through the graph as
their names, so the graph stays plain printable fx.

Nothing is switched while translating (fake tensors pick no kernel); reads of the flags -- the torch._C
getters in `FLAG_GETTERS`, reached directly or through torch.backends' helpers such as
`flash_sdp_enabled()`, and the module properties such as `torch.backends.cudnn.enabled` -- are answered
with the value at frame entry under a STATE_MATCH guard. Inside a flag block that value would be the
block's, which translation does not know: such a read is a graph break (values/objects/attribute_model.py
checks the open managers' `switches_backend_flags` for the property reads). Writes of flags outside a block
stay graph breaks (lookasides/state_calls.py says why).

Backends that retrace the graph (aot_eager, inductor) run the two nodes once while tracing: the kernel
choice made under the block's flags is baked into the traced ops, as for torch.compile.
"""
import contextlib

import torch
import torch.backends.cudnn
import torch.backends.mkldnn
import torch.fx
import torch.nn.attention
from torch.nn.attention import SDPBackend

from ...errors import GraphBreak
from ..dispatch import lookaside
from ..values.base import Const, DictValue, ObjectValue, SeqValue
from ..values.managers.state_managers import (_HANDLE_EXITS, MANAGER_FACTORIES, STATE_NODE_TARGETS,
                                              GlobalStateManager, _state_node)

# name -> (torch's manager function, what its __enter__ gives: None or "dict" (a new empty dict))
FLAG_BLOCKS = {}


def _add_block(name, fn, enter_gives=None):
    if fn is not None:
        FLAG_BLOCKS[name] = (fn, enter_gives)


_add_block("torch.nn.attention.sdpa_kernel", torch.nn.attention.sdpa_kernel, "dict")
_add_block("torch.backends.cuda.sdp_kernel", getattr(torch.backends.cuda, "sdp_kernel", None), "dict")
for _sub in ("cudnn", "mkldnn", "miopen", "nnpack", "opt_einsum"):
    _module = getattr(torch.backends, _sub, None)
    _add_block(f"torch.backends.{_sub}.flags", getattr(_module, "flags", None))

# torch._C's flag getters (no arguments; they choose kernels or numerics). Their values at frame entry
# are what the frame reads; each read is guarded.
_GETTER_NAMES = (
    "_get_cudnn_enabled", "_get_cudnn_benchmark", "_get_cudnn_deterministic", "_get_cudnn_allow_tf32",
    "_get_cudnn_sdp_enabled", "_get_flash_sdp_enabled", "_get_mem_efficient_sdp_enabled",
    "_get_math_sdp_enabled", "_get_overrideable_sdp_enabled", "_get_fa3_sdp_enabled",
    "_get_math_sdp_allow_fp16_bf16_reduction", "_get_sdp_priority_order", "_get_mkldnn_enabled",
    "_get_mkldnn_deterministic", "_get_onednn_allow_tf32", "_get_nnpack_enabled", "_get_miopen_immediate",
    "_get_cublas_allow_fp16_reduced_precision_reduction", "_get_cublas_allow_bf16_reduced_precision_reduction",
    "_get_cublas_allow_fp16_accumulation", "_get_cpu_allow_fp16_reduced_precision_reduction",
    "_get_linalg_preferred_backend", "_get_blas_preferred_backend", "_get_rocm_fa_preferred_backend",
    "_get_qengine", "_get_deterministic_algorithms", "_get_deterministic_algorithms_warn_only")
FLAG_GETTERS = {getattr(torch._C, n) for n in _GETTER_NAMES if hasattr(torch._C, n)}


# ---- at run time: the graph's nodes ---------------------------------------------------------------

_ENUM_PREFIX = "SDPBackend."


def _to_literal(value):
    """A constant argument as something fx prints as code (SDPBackend members become their names)."""
    if isinstance(value, SDPBackend):
        return _ENUM_PREFIX + value.name
    if isinstance(value, (list, tuple)):
        return type(value)(_to_literal(v) for v in value)
    return value


def _from_literal(value):
    if isinstance(value, str) and value.startswith(_ENUM_PREFIX):
        return SDPBackend.__members__[value[len(_ENUM_PREFIX):]]
    if isinstance(value, (list, tuple)):
        return type(value)(_from_literal(v) for v in value)
    return value


def enter_flag_block(name, args, kwargs):
    """Enter torch's own manager `name` with the block's arguments; the handle exit_flag_block takes."""
    fn, _ = FLAG_BLOCKS[name]
    manager = fn(*_from_literal(args), **{k: _from_literal(v) for k, v in kwargs})
    manager.__enter__()
    return manager


def exit_flag_block(manager):
    manager.__exit__(None, None, None)


torch.fx.node.has_side_effect(enter_flag_block)
torch.fx.node.has_side_effect(exit_flag_block)
STATE_NODE_TARGETS.update((enter_flag_block, exit_flag_block))
# the tracing backends' region pass (backends/passes/state_regions.py) runs them for real between regions
enter_flag_block.framejit_state_switch = exit_flag_block
exit_flag_block.framejit_state_switch = True
_HANDLE_EXITS[enter_flag_block] = f"__import__({__name__!r}, fromlist=['_']).exit_flag_block"


# ---- at translation ---------------------------------------------------------------------------------

class FlagBlock(GlobalStateManager):
    """A with-block over one of FLAG_BLOCKS: an enter node and an exit node; no state switched now."""
    __slots__ = ("name", "args", "kwargs", "node")
    switches_backend_flags = True

    def __init__(self, name, args, kwargs):
        super().__init__()
        self.name = name
        self.args = args                  # literals (see _to_literal)
        self.kwargs = kwargs              # a tuple of (name, literal) pairs
        self.node = None

    def python_type(self):
        return contextlib._GeneratorContextManager

    def enter_result(self):
        return DictValue({}) if FLAG_BLOCKS[self.name][1] == "dict" else Const(None)

    def apply_enter(self, tx):
        self.node = _state_node(tx, enter_flag_block, (self.name, self.args, self.kwargs))
        self.node.meta["example_value"] = None

    def apply_exit(self, tx):
        _state_node(tx, exit_flag_block, (self.node,)).meta["example_value"] = None

    def undo(self):
        pass                              # nothing was switched while translating

    def __repr__(self):
        return f"FlagBlock({self.name})"


def _block_factory(name):
    def make(tx, args, kwargs):
        try:
            pos = tuple(_python(v) for v in args)
            kw = {k: _python(v) for k, v in kwargs.items()}
        except ValueError:
            raise GraphBreak("with", f"{name}() with arguments that are not constants") from None
        # (torch's manager checks its arguments when entered, in the graph: a raise there re-runs the
        # frame as Python, which raises as eager does)
        literal = _to_literal(pos), tuple((k, _to_literal(v)) for k, v in kw.items())
        if not _printable(literal) or _from_literal(literal) != (pos, tuple(kw.items())):
            raise GraphBreak("with", f"{name}() with an argument that cannot be written into a graph")
        return FlagBlock(name, *literal)
    return make


def _printable(value):
    if isinstance(value, (list, tuple)):
        return all(_printable(v) for v in value)
    return value is None or type(value) in (bool, int, float, str)


def _python(value):
    """The constant a Value stands for (a constant, an SDPBackend member, a list or tuple of those)."""
    if isinstance(value, Const):
        return value.value
    if isinstance(value, ObjectValue) and isinstance(value.obj, SDPBackend):
        return value.obj
    if isinstance(value, SeqValue) and value.kind in (list, tuple):
        return value.kind(_python(v) for v in value.items)
    raise ValueError(value)


for _name, (_fn, _) in FLAG_BLOCKS.items():
    MANAGER_FACTORIES[_fn] = _block_factory(_name)


def inside_flag_block(tx):
    """Is a flag block open at this point of the translation (its flags are not the entry values)?"""
    return any(getattr(m, "switches_backend_flags", False) for m in tx.active_managers)


def _flag_read(getter):
    def read(tx, args, kwargs):
        if args or kwargs:
            raise GraphBreak("bad call", f"TypeError: {getter.__name__}() takes no arguments")
        if inside_flag_block(tx):
            raise GraphBreak("call", f"{getter.__name__}() inside a kernel-flag block (its value there is "
                             "the block's)")
        tx.ctx.guard_state(getter)
        value = getter()
        return SeqValue(list, [Const(v) for v in value]) if isinstance(value, list) else Const(value)
    return read


for _getter in FLAG_GETTERS:
    lookaside(_getter)(_flag_read(_getter))
