"""What a graph that raises leaves of torch's global state: exactly what eager's with-blocks leave.

Why this exists: an op can fail on tensor values at run time (an index out of range, a dtype mix that
autocast makes) after passing fake propagation. Eagerly the exception then leaves the frame through the
with-blocks open at that op, each `__exit__` restoring the state from before its block, innermost first;
every other state change the frame made before the op stays (`torch.set_grad_enabled(False)` called as a
function, the end of a no_grad block that a resume function was given, an inference-mode block already
left). Putting grad mode back as it was when the graph *started* is wrong for all of those (fuzz seed
512181: a resume function leaves its given no_grad block, then raises in an autocast block; eager ends
with grad on, the graph's handler turned it off again).

So each grad-mode switch node made in a graph (`_set_grad_enabled`, `_enter_inference_mode`,
`_exit_inference_mode`) carries in `node.meta[UNWIND_GRAD]` the grad mode an exception raised right after
it leaves behind: the mode from before the outermost block the graph opened that is still open there (a
grad-mode block, or an inference-mode block, whose exit restores grad mode too), or None when no such
block is open (the mode stays as it is). The translator knows it statically (the grad mode at entry is
guarded, every block's mode from before it is known). Between two switch nodes grad mode does not move,
so a block entered or left without a node (its mode was already in force) changes nothing the value of
the last switch node does not already say. At run time the handler closes the autocast / inference-mode
handles still open (innermost first) and then sets grad mode to the value of the last switch node run,
if any. Two handlers read it: the fx code of the graph (`restore_state_on_error`: the eager backend, a
custom backend calling the GraphModule) and backends/passes/state_regions.py (aot_eager, inductor).

A block a resume function was given (entered for real before it, `GradModeExit`) is not the graph's to
unwind: an op inside it reruns the frame as Python (translate/ops/exceptions.py GIVEN_EXIT), and that
rerun must start from the state the graph started in, which convert/raising_graphs.py puts back.
"""
import torch

# node.meta key of grad-mode switch nodes (backends/passes/state_regions.py names the same string)
UNWIND_GRAD = "framejit_unwind_grad"
# Python expressions (over the `torch` global of fx's generated code) closing each kind of handle
HANDLE_EXITS = {torch.autograd.grad_mode._enter_inference_mode: "torch.autograd.grad_mode._exit_inference_mode",
                torch.amp.autocast_mode._enter_autocast: "torch.amp.autocast_mode._exit_autocast"}
GRAD_SWITCHES = frozenset({torch._C._set_grad_enabled, torch.autograd.grad_mode._enter_inference_mode,
                           torch.autograd.grad_mode._exit_inference_mode})


def unwind_grad_mode(active_managers, opening=None):
    """The grad mode an exception leaving the frame now would leave (None: as it is): the mode from before
    the outermost open block, opened in this graph, that switches grad mode. `opening`: a block being
    entered, not on `active_managers` yet."""
    for manager in [*active_managers, opening]:
        before = getattr(manager, "grad_before_block", None)
        if before is not None:
            return before
    return None


def mark_unwind(node, active_managers, opening=None):
    if node.target in GRAD_SWITCHES:
        node.meta[UNWIND_GRAD] = unwind_grad_mode(active_managers, opening)


def restore_state_on_error(graph):
    """Make the graph's generated Python code exception-safe: if an op raises, close the autocast /
    inference-mode handles still open and leave grad mode as eager's with-blocks would (see above).
    (Backends that retrace the graph, such as aot_eager and inductor, take the state changes out of the
    runtime code themselves: backends/passes/state_regions.py.)"""
    if getattr(graph, "framejit_restores_state", False):
        return
    graph.framejit_restores_state = True
    graph.on_generate_code(lambda previous: _restoring_transformer(graph, previous))


def _with_unwind_marks(lines, marks):
    """`lines` with `__fj_unwind_grad = <mode>` after the line of each marked node (fx writes a call's
    line as `<node name> = <target>(...)`), or None when some marked node's line is not found."""
    left = dict(marks)
    out = []
    for line in lines:
        name = line.split(" = ", 1)[0] if " = " in line else None
        if name in left and not line.startswith(f"{name} = None"):
            line += f";  __fj_unwind_grad = {left.pop(name)!r}"
        out.append(line)
    return out if not left else None


def _restoring_transformer(graph, previous):
    def transform(body):
        if previous is not None:
            body = previous(body)
        handles = [(n.name, HANDLE_EXITS[n.target]) for n in graph.nodes
                   if n.op == "call_function" and n.target in HANDLE_EXITS]
        inner = "".join(body).split("\n")
        if inner and inner[-1] == "":
            inner.pop()
        marks = {n.name: n.meta[UNWIND_GRAD] for n in graph.nodes if n.op == "call_function" and UNWIND_GRAD in n.meta}
        marked = _with_unwind_marks(inner, marks)
        head = [f"{name} = None\n" for name, _ in handles]
        tail = ["except BaseException:\n"]
        tail += [f"    if {name} is not None: {close}({name})\n" for name, close in reversed(handles)]
        if marked is None:                # not fx's usual layout: grad mode as the graph started
            head.append("__fj_unwind_grad = torch.is_grad_enabled()\n")
        else:
            inner = marked
            head.append("__fj_unwind_grad = None\n")
        tail += ["    if __fj_unwind_grad is not None: torch._C._set_grad_enabled(__fj_unwind_grad)\n", "    raise\n"]
        return head + ["try:\n"] + ["    " + line + "\n" for line in inner] + tail
    return transform
