"""Functions torch wraps with `torch._disable_dynamo` (Optimizer.zero_grad, and some fifty more): the wrapped
function itself is translated.

Why this exists: the wrapper's only job is to tell torch.compile not to trace the function; eagerly it
calls the function unchanged (its first call imports torch._dynamo and caches a "disabled" callable
on the function, which runs the function as it is when no compiler is active). framejit never imports
torch._dynamo, so the wrapper (one code object for every function torch wraps, recognised here) was a
call framejit could not inline, and `optimizer.zero_grad()` broke the graph. The function the wrapper
closes over (`fn`, also its `__wrapped__`) is inlined instead; where that function does something
framejit cannot translate, the break happens inside it as for any other function. The wrapper's
import and its cached attribute on the function are not reproduced: they are torch's bookkeeping for
its compiler, invisible to the function's behaviour.
"""
import torch

from ..dispatch import CODE_LOOKASIDES
from ..values.base import Const
from ...dynamo_reads import DISABLE_WRAPPER_CODE
from ...errors import GraphBreak


def _wrapped_function(wrapper):
    try:
        return wrapper.__closure__[wrapper.__code__.co_freevars.index("fn")].cell_contents
    except (ValueError, TypeError, IndexError):
        return None


def _zero_grad_to_none(self):
    """Optimizer.zero_grad(set_to_none=True) without its reads of `p.grad`: it sets every parameter's
    grad to None, and storing None where the grad is already None changes nothing. Reading them would
    guard each one (None before the first backward, a tensor after), two graphs where one does."""
    if not hasattr(self, "_zero_grad_profile_name"):
        self._patch_step_function()
    with torch.autograd.profiler.record_function(self._zero_grad_profile_name):
        for group in self.param_groups:
            for p in group["params"]:
                p.grad = None


_ZERO_GRAD = _wrapped_function(torch.optim.Optimizer.zero_grad)


def _sets_to_none(args, kwargs):
    given = args[1] if len(args) > 1 else kwargs.get("set_to_none", Const(True))
    return len(args) <= 2 and set(kwargs) <= {"set_to_none"} and isinstance(given, Const) and given.value is True


def disabled_wrapper_call(tx, fn, fn_source, args, kwargs):
    inner = _wrapped_function(fn)
    if inner is None:
        raise GraphBreak("call", "a torch._disable_dynamo wrapper without its function")
    if inner is _ZERO_GRAD and _sets_to_none(args, kwargs):
        return tx.inline(_zero_grad_to_none, None, list(args[:1]), {})
    return tx.inline(inner, None, list(args), dict(kwargs))


CODE_LOOKASIDES[DISABLE_WRAPPER_CODE] = disabled_wrapper_call


# ---- torch.compiler.disable / torch._dynamo.disable: the user's "do not compile this" -----------------
# Unlike torch._disable_dynamo above (torch's own bookkeeping, inlined), this is the user's or a library's
# request that the function run as plain Python: torch.compile breaks the graph at the call and runs the
# callee uncompiled. Its wrapper (eval_frame's `_fn`) carries `_torchdynamo_disable = True`; that marker
# is read by dynamo_reads.is_compiler_disabled, nothing of torch._dynamo is imported or called. The wrapper used to be inlined (its
# eval-frame switching calls were breaks: 3 graphs / 8 breaks around one disabled helper, torch.compile
# 2 graphs / 1 break).

