"""A training graph run from its stored AOTInductor library pair (forward, backward), without inductor.

Why this exists (issue 24): a process started again compiled its training graph (forward + loss) through
inductor's caches, which costs the imports of torch._inductor's compile machinery and AOT autograd (GPT-2's
2-layer training step: about 2.5 s of the 3.9 s warm first call). backends/training_library.py compiles the
forward and the backward graph that AOT autograd partitions into two AOTInductor libraries; this module runs
them with what torch itself has loaded (`torch._C._aoti`), as one `torch.autograd.Function`:

  forward    the forward library on the inputs (inside Function.forward: no grad); its outputs are the
             graph's own outputs, then the tensors the backward needs. Those are saved with
             `ctx.save_for_backward` (an in-place write of one before the backward, and a second backward
             without retain_graph, raise as in eager). A saved tensor that is a view of an input is saved
             as a view of the input itself (the library's alias would not share the input's version
             counter). Outputs eager returns without grad are marked non-differentiable.
  backward   each incoming gradient copied into the strides the backward graph was traced with (as AOT
             autograd does), then the backward library on (saved..., gradients...); its results go to the
             inputs in `plan["grads"]` (None for the rest). As AOT autograd's (framejit's JIT inductor
             path): a backward that keeps the graph (retain_graph, create_graph) raises when the backward
             has donated buffers (`plan["donates"]`: a saved intermediate); else, under create_graph=True,
             the gradients come out of a Function whose own backward raises.

The plan is the entry's JSON metadata (training_library.py writes it):
  n_inputs, n_user: the graph's inputs and outputs; non_diff: outputs without grad;
  n_constants: the graph module's own tensors (parameters, buffers), the forward library's first inputs
  (`LibraryPair.constants`, this process's: their values are in the key);
  saved: per saved tensor ["out", j] (the forward library's output j) or ["view", i, j] (a view of the
  forward library's input i, constants first, with the geometry of its output j);
  tangents: per backward gradient input [output index, size, stride]; grads: the input of each backward
  library output.
"""
import sys

import torch

DOUBLE_BACKWARD = "torch.compile with aot_autograd does not currently support double backward"
DONATED = ("This backward function was compiled with non-empty donated buffers which requires create_graph=False "
           "and retain_graph=False. Please keep backward(create_graph=False, retain_graph=False) across all "
           "backward() function calls, or set torch._functorch.config.donated_buffer=False to disable donated "
           "buffer.")


def _donating():
    """torch._functorch.config.donated_buffer (its default, True, unless a program imported and changed it)."""
    config = sys.modules.get("torch._functorch.config")
    return getattr(config, "donated_buffer", True) if config is not None else True


class LibraryPair:
    """The two loaded libraries and the plan that connects them."""

    def __init__(self, forward, backward, plan, constants=()):
        self.forward, self.backward, self.plan = forward, backward, plan
        self.constants = tuple(c.detach() for c in constants)


def _coerced(grad, size, stride):
    if tuple(grad.shape) == tuple(size) and tuple(grad.stride()) == tuple(stride):
        return grad
    out = torch.empty_strided(size, stride, dtype=grad.dtype, device=grad.device)
    out.copy_(grad)
    return out


class _OnceDifferentiable(torch.autograd.Function):
    """The backward library's gradients under create_graph=True: they require grad, and differentiating
    them raises AOT autograd's error."""

    @staticmethod
    def forward(ctx, run, _anchor, *args):
        return tuple(run(*args))

    @staticmethod
    def backward(ctx, *grads):
        raise RuntimeError(DOUBLE_BACKWARD)


class TrainingStep(torch.autograd.Function):
    @staticmethod
    def forward(ctx, pair, *inputs):
        plan = pair.plan
        everything = (*pair.constants, *inputs)
        outs = pair.forward(*everything)
        saved = []
        for slot in plan["saved"]:
            if slot[0] == "out":
                saved.append(outs[slot[1]])
            else:                           # a view of an input: the input's own view (its version counter)
                geometry = outs[slot[2]]
                saved.append(everything[slot[1]].detach().as_strided(geometry.shape, geometry.stride(), geometry.storage_offset()))
        ctx.save_for_backward(*saved)
        ctx.pair = pair
        user = outs[:plan["n_user"]]
        if plan["non_diff"]:
            ctx.mark_non_differentiable(*[user[i] for i in plan["non_diff"]])
        return tuple(user)

    @staticmethod
    def backward(ctx, *grads):
        plan = ctx.pair.plan
        saved = ctx.saved_tensors
        if plan.get("donates") and torch._C._autograd._get_current_graph_task_keep_graph() and _donating():
            raise RuntimeError(DONATED)
        tangents = [_coerced(grads[i], size, stride) for i, size, stride in plan["tangents"]]
        if torch.is_grad_enabled():
            anchor = torch.empty(0, requires_grad=True)
            got = _OnceDifferentiable.apply(ctx.pair.backward, anchor, *saved, *tangents)
        else:
            got = ctx.pair.backward(*saved, *tangents)
        result = [None] * plan["n_inputs"]
        for position, grad in zip(plan["grads"], got):
            result[position] = grad
        return (None, *result)


def runner(pair):
    """The compiled callable of the graph: inputs in, the graph's outputs (a tuple) out."""
    def run_training_library(*inputs):
        return TrainingStep.apply(pair, *inputs)
    run_training_library.library_pair = pair
    return run_training_library
