"""A compiled graph that raises: the call does, prints and mutates what the eager call does.

Why this exists: an op can fail on tensor *values* at run time (an index out of range, a matrix that is
not positive-definite) although it passed fake propagation. Eagerly, the Python side effects the frame
made before that op (an attribute incremented, a list appended, a global set) have happened when the
exception leaves the call; the compiled entry replays them after the graph, so a raising graph lost
them (torch.compile loses them too).

The scheme: the entry defers everything Python can see until after the graph, so when the graph raises
nothing the frame did is visible yet -- except what the graph itself did before the raising op. If that
partial run is undone, running the call again as plain Python does exactly what the eager call does:
the effects up to the failing op, then its exception (from the op itself, with eager's message). So:

  * an entry needs this only when some Python side effect happened before some graph op (an effect
    recorded after the last op would not have happened eagerly either: the exception propagates as is),
    or when an op that may raise sits inside a region of the frame whose handler could catch it (a try
    block, a Python context manager's with-block): the frame's handler must see the exception, as
    eagerly, and rerunning the frame as Python gives it exactly that;
  * then the graph call is wrapped in `try/except Exception`, whose handler undoes the partial run and
    returns `fn(<the same arguments>)` run as plain Python (a generated resume function runs its own
    code, which is the rest of the original frame);
  * what a partial run can leave behind, and how it is undone: draws from the default random generator
    (its state is saved before the graph and set back), in-place writes to tensors the graph reads
    from outside (their contents are copied aside before the graph and copied back), and grad mode
    (the graph's handler leaves it as eager would; read before the graph and set back). Only graphs that
    have such ops pay for saving them; a graph that only computes new tensors saves nothing.

The try block costs nothing on the fast path (3.11 exceptions are zero-cost until raised). Rerunning
rather than replaying the effects "before the failing op" needs no knowledge of which op failed
(a backend's compiled code does not say) and no values the graph computed before failing (they are gone
with its frame); it runs the graph's ops before the failing one twice, which only costs time.
"""
import functools

import torch

from ..backends.in_place import written_values

# ops that draw from the default generator (by name: call_function targets and tensor methods)
RANDOM_OPS = {"rand", "randn", "randint", "randperm", "rand_like", "randn_like", "randint_like", "bernoulli",
              "bernoulli_", "multinomial", "normal", "normal_", "uniform_", "poisson", "exponential_", "cauchy_",
              "geometric_", "log_normal_", "random_", "rrelu", "rrelu_", "dropout", "dropout_", "alpha_dropout",
              "feature_alpha_dropout", "dropout1d", "dropout2d", "dropout3d", "gumbel_softmax", "native_dropout",
              "fractional_max_pool2d", "fractional_max_pool3d", "rrelu_with_noise"}
# functional ops that write into their running-statistics arguments
RUNNING_STATS_OPS = {"batch_norm", "instance_norm"}


def needs_handler(effects, node_count):
    """Did a Python side effect happen before some graph op (so a raising op must leave it visible)?"""
    return any(e.at < node_count for e in effects)


def ops_in_handled_region(flagged, created):
    """Is an op that may raise on tensor values, inside a try block or a with-block whose __exit__ may
    suppress (translate/ops/exceptions.py flagged it), still in the graph? Then a raise must rerun the
    frame as Python too: its handler, not the caller, must see the exception."""
    if not flagged:
        return False
    kept = set(created)
    return any(node in kept for node in flagged)


def _name(target):
    return target if isinstance(target, str) else getattr(target, "__name__", "")


# ops that draw only in training mode: name -> (position of the training flag, its default)
TRAINING_FLAG = {"dropout": (2, True), "dropout1d": (2, True), "dropout2d": (2, True), "dropout3d": (2, True),
                 "alpha_dropout": (2, False), "feature_alpha_dropout": (2, False), "native_dropout": (2, True),
                 "rrelu": (3, False), "rrelu_": (3, False)}


def _draws(node):
    """Does this op draw from the default generator? (dropout and rrelu only when training)"""
    name = _name(node.target)
    if name not in RANDOM_OPS:
        return False
    flag = TRAINING_FLAG.get(name) if node.op == "call_function" else None
    if flag is not None:
        at, default = flag
        args = node.args
        training = node.kwargs.get("training", node.kwargs.get("train", args[at] if len(args) > at else default))
        if training is False:
            return False
        p = node.kwargs.get("p", args[1] if len(args) > 1 else None)
        return not ("dropout" in name and p == 0 and not _zero_dropout_draws())
    return True


@functools.lru_cache(maxsize=None)
def _zero_dropout_draws():
    """Does dropout with p=0 draw from the generator? (not on CPU today: ATen returns the input; probed)"""
    state = torch.default_generator.get_state()
    try:
        torch.nn.functional.dropout(torch.ones(4), 0.0, True)
        after = torch.default_generator.get_state()
        return not torch.equal(after, state)
    finally:
        torch.default_generator.set_state(state)


def _written(node):
    """The fx nodes whose tensors `node` writes into: what backends/in_place.py reads as a write (`out=`,
    a trailing underscore, setitem, `x += y` and the other augmented assignments, `inplace=True`), and
    the running statistics a functional batch/instance norm updates."""
    out = list(written_values(node))
    if node.op == "call_function" and _name(node.target) in RUNNING_STATS_OPS:
        args = list(node.args)
        out += args[1:3] + [node.kwargs.get("running_mean"), node.kwargs.get("running_var")]
    return [n for n in out if n is not None]


def _storage(node):
    value = node.meta.get("example_value") if hasattr(node, "meta") else None
    if isinstance(value, torch.Tensor):
        try:
            return value.untyped_storage()._cdata
        except Exception:
            return None
    return None


def partial_run_leftovers(gm):
    """(indices of the graph inputs some op writes into, whether any op draws random numbers)."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    by_storage = {}
    for i, p in enumerate(placeholders):
        by_storage.setdefault(_storage(p), []).append(i)
    written, random = set(), False
    for node in gm.graph.nodes:
        if node.op not in ("call_function", "call_method"):
            continue
        if _draws(node):
            random = True
        for target in _written(node):
            items = target if isinstance(target, (list, tuple)) else [target]
            for t in items:
                if not hasattr(t, "op"):
                    continue
                key = _storage(t)
                if key is None:                   # not known: every input could be behind it
                    written.update(range(len(placeholders)))
                else:
                    written.update(by_storage.get(key, ()))
    return sorted(written), random


def _save(t):
    return t.detach().clone()


def _put_back(t, saved):
    # an inference tensor can be written only in inference mode (and the op that failed may have been
    # just such a write)
    with torch.inference_mode() if t.is_inference() else torch.no_grad():
        if t.shape == saved.shape and t.stride() == saved.stride():
            t.copy_(saved)
        else:
            t.set_(saved)


def _rerun_target(fn):
    """fn's code run as plain Python with the entry's arguments (and closure, for shared code)."""
    import types

    def plain(cl, *args, **kwargs):
        f = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, cl)
        f.__kwdefaults__ = fn.__kwdefaults__
        return f(*args, **kwargs)
    return plain if fn.__code__.co_freevars else fn


def _switches_grad_mode(gm):
    targets = (torch._C._set_grad_enabled, torch.autograd.grad_mode._enter_inference_mode)
    return any(n.op == "call_function" and n.target in targets for n in gm.graph.nodes)


def wrap_graph_call(call_line, gm, input_exprs, fn, call_args, ns):
    """The entry lines around `call_line` (the graph call) for a frame whose effects must survive a
    raising graph (see the module docstring)."""
    written, random = partial_run_leftovers(gm)
    before, undo = [], []
    if _switches_grad_mode(gm):
        # the graph's own handler leaves grad mode as eager's with-blocks would at the failing op
        # (translate/values/managers/raise_unwinding.py); the rerun starts where the graph started
        grad = ns.bind(torch.is_grad_enabled, by_name=True)
        before.append(f"__fj_grad_at_start = {grad}()")
        undo.append(f"{ns.bind(torch._C._set_grad_enabled, by_name=True)}(__fj_grad_at_start)")
    if random:
        gen = ns.bind(torch.default_generator, by_name=True)
        before.append(f"__fj_rng = {gen}.get_state()")
        undo.append(f"{gen}.set_state(__fj_rng)")
    if written:
        save, put = ns.bind(_save, by_name=True), ns.bind(_put_back, by_name=True)
        exprs = [input_exprs[i] for i in written]
        before.append(f"__fj_kept = ({''.join(f'{save}({e}), ' for e in exprs)})")
        undo += [f"{put}({e}, __fj_kept[{k}])" for k, e in enumerate(exprs)]
    rerun = ns.bind(_rerun_target(fn), by_name=True)
    head = "__fj_cl, " if fn.__code__.co_freevars else ""
    return before + ["try:", "    " + call_line, "except Exception:"] + ["    " + u for u in undo] + \
        [f"    return {rerun}({head}{call_args})"]
