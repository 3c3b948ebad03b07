"""GraphBuilder: the torch.fx.Graph one frame's tensor work is recorded into.

Every tensor operation the translator meets becomes an fx node. Its output metadata (shape, dtype,
device, strides) comes from running the same operation on fake tensors under one FakeTensorMode per
conversion: no real compute happens at capture time. Real tensors reached from the frame (arguments,
globals, module parameters) become placeholders, remembered with their Source so codegen can load
them and guards can check them.

The builder can roll back to a mark (nodes created by an instruction that then graph-breaks are
erased), and `finish` returns a linted GraphModule whose outputs are the requested values.
"""
import contextlib
import contextvars
import linecache
import logging
import operator
import weakref

import numpy as np
import torch
import torch.fx as fx
from torch._dispatch.python import enable_python_dispatcher
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.experimental.symbolic_shapes import GuardOnDataDependentSymNode, compute_unbacked_bindings

from . import fake_memo
from .module_order import new_event_log
from .fake_inputs import fake_of_input
from .shape_rules import RULES as SHAPE_RULES, rule_output
from .overlap import check_overlap, tensors_of, versions_of
from ..values.base import Const, DictValue, ObjectValue, SeqValue, TensorValue
from ..values.numbers.sym_values import SYM_TYPES, SliceValue, SymValue, constant_of, unbacked_symbols_of
from ..values.numbers.sym_concrete import holds_symbolic
from ..values.dicts.identity_hashed_keys import IdentityKey, has_tensor_keys
from ...errors import GraphBreak


_NO_CONTEXT = contextlib.nullcontext()
_RUNNING_FAKE = contextvars.ContextVar("framejit_running_fake", default=False)


class _QuietFakeFailures(logging.Filter):
    """FakeTensorMode logs a traceback at ERROR level when an op's meta kernel raises, before raising;
    translation turns that exception into a graph break (the op raises as eagerly there), so the log
    is torch-internal noise on the user's stderr."""

    def filter(self, record):
        return not _RUNNING_FAKE.get()


logging.getLogger("torch._subclasses.fake_tensor").addFilter(_QuietFakeFailures())


def _placeholder_name(source_name):
    out = "".join(c if c.isalnum() else "_" for c in source_name).strip("_") or "input"
    return ("l_" + out) if not out[0].isalpha() else out


# torch's FakeTensorMode keeps one process-wide dispatch cache, never trimmed, whose keys hold the
# constant arguments of each op (`x * 3`, `x * 4`... one entry each): a process converting without end
# would grow it without end. Cleared (torch's own cache_clear) when it passes this many entries.
FAKE_DISPATCH_CACHE_LIMIT = 20_000


def _bound_fake_dispatch_cache():
    cache = getattr(FakeTensorMode, "cache", None)
    if isinstance(cache, dict) and len(cache) > FAKE_DISPATCH_CACHE_LIMIT:
        FakeTensorMode.cache_clear()


class StaticInputsNeeded(GraphBreak):
    """Inputs on one storage, one of them with symbolic sizes: the conversion starts again with
    `names` static (convert/frame.py)."""

    def __init__(self, names):
        super().__init__("shapes", f"inputs {' and '.join(names)} share memory: their sizes stay static")
        self.names = names


class GraphBuilder:
    def __init__(self, phase, shapes=None):
        _bound_fake_dispatch_cache()
        self.phase = phase            # the conversion's phase timer (fake propagation is timed)
        self.graph = fx.Graph()
        # shapes: a framejit.shapes ShapeContext when this conversion has symbolic sizes (its ShapeEnv
        # under the fake mode), else None: static shapes, as before
        self.shapes = shapes
        self.fake_mode = FakeTensorMode(shape_env=shapes.env if shapes is not None else None,
                                        allow_non_fake_inputs=False)
        self.inputs = []              # [(source, real tensor, placeholder node)]
        self.input_by_id = {}         # id(real tensor) -> TensorValue (aliases share one placeholder)
        self.input_storages = {}      # real storage -> (fake, source name, symbolic?) of the first input on it
        self.created = []             # nodes in creation order, for rollback
        self.order_events = new_event_log()   # only while distributed.execution_order listens (module_order.py)
        self.current_stack_trace = None
        self.module_call_count = 0     # inlined module calls so far (lookasides/modules.py numbers them)
        self.op_memo = fake_memo.SHARED    # fake results by input metadata, shared by conversions

    # ---- inputs -------------------------------------------------------------------------------
    def add_input(self, tensor, source, dims=None):
        """The Value of input tensor `tensor` read from `source`; `dims` ({dim: (min, max)}): the
        dimensions to make symbolic (shapes/policy.py), None for a static fake."""
        known = self.input_by_id.get(id(tensor))
        if known is not None:
            return known
        # an input first read inside an inference_mode block is still the tensor it is: its fake is an
        # inference tensor only when the real one is (else the backend's trace of the graph cannot set
        # requires_grad on it: "inference tensor outside InferenceMode", fuzz seeds 401440, 401527)
        with torch.inference_mode(tensor.is_inference()):
            if dims:
                fake = self._fake_input(tensor, source.name(), True, lambda: self.shapes.fake_tensor(
                    self.fake_mode, tensor, _operand(source.expr()), source.name(), dims))
            else:
                fake = self._fake_input(tensor, source.name(), False, lambda: fake_of_input(self.fake_mode, tensor))
        node = self._placeholder(source, fake)
        if isinstance(tensor, torch.nn.Parameter):
            node.meta["is_param"] = True
        value = TensorValue(node, fake, source)
        self.inputs.append((source, tensor, node))
        self.input_by_id[id(tensor)] = value
        return value

    def add_number_input(self, number, source):
        """A Python int read from `source` as a graph input: a SymValue over a placeholder."""
        sym = self.shapes.number(number, _operand(source.expr()), source.name())
        if not isinstance(sym, SYM_TYPES):
            return Const(number, source)
        node = self._placeholder(source, sym)
        value = SymValue(node, sym, source)
        self.inputs.append((source, number, node))
        return value

    def _placeholder(self, source, fake):
        if self.inputs:
            with self.graph.inserting_after(self.inputs[-1][2]):
                node = self.graph.placeholder(_placeholder_name(source.name()))
        else:
            with self.graph.inserting_before(next(iter(self.graph.nodes), None)):
                node = self.graph.placeholder(_placeholder_name(source.name()))
        node.meta["example_value"] = fake
        node.meta["source"] = source.name()
        if isinstance(fake, torch.Tensor):
            # the input's autograd identity before the graph writes it (backends/passes/none_grads.py keep_none_grads)
            node.meta["grad_fn_at_entry"] = (fake.requires_grad, fake.grad_fn)
        return node

    def _fake_input(self, tensor, name, symbolic, make_fake):
        """The fake of input `name` (`make_fake()`, with symbolic sizes when `symbolic`); inputs on one
        storage get fakes on one fake storage (`f(w, w.detach().t())`: two tensors that are not views of
        each other), so ops and functionalization see their overlap (graph/overlap.py). A fake storage
        with a symbolic size cannot be shared: when one of them is symbolic, both are remembered static
        and the conversion starts again (StaticInputsNeeded)."""
        try:
            storage = tensor.untyped_storage()._cdata
        except (RuntimeError, NotImplementedError):       # no storage (sparse, some subclasses)
            return make_fake()
        known = self.input_storages.get(storage)
        if known is not None and (symbolic or known[2]):
            raise StaticInputsNeeded((known[1], name))
        fake = make_fake()
        first = known[0] if known is not None else None
        if first is None:
            self.input_storages[storage] = (fake, name, symbolic)
        elif first.untyped_storage()._cdata != fake.untyped_storage()._cdata and fake.layout == torch.strided:
            with self.fake_mode:
                shared = torch.empty(0, dtype=fake.dtype, device=fake.device)
                shared.set_(first.untyped_storage(), fake.storage_offset(), fake.shape, fake.stride())
                shared.requires_grad_(tensor.requires_grad)
                if getattr(fake, "framejit_history_unreadable", False):    # keep it a non-leaf, marked
                    with torch.enable_grad():
                        shared = shared.view_as(shared)
                    shared.framejit_history_unreadable = True
            fake = shared
        return fake

    # ---- operations ---------------------------------------------------------------------------
    def call_function(self, target, args, kwargs):
        return self._record("call_function", target, args, kwargs)

    def call_method(self, name, args, kwargs):
        return self._record("call_method", name, args, kwargs)

    def _record(self, op, target, args, kwargs):
        fx_args = tuple(_to_arg(a, False) for a in args)
        fx_kwargs = {k: _to_arg(v, False) for k, v in kwargs.items()}
        fake_args = tuple(_to_arg(a, True) for a in args)
        fake_kwargs = {k: _to_arg(v, True) for k, v in kwargs.items()}
        tensors = tensors_of(fake_args, fake_kwargs)
        versions = versions_of(tensors)
        given_out = fake_kwargs.get("out")
        # the `out=` tensor's shape before the op resizes it (its fake is the same object after)
        out_shape_before = tuple(given_out.shape) if isinstance(given_out, torch.Tensor) else None
        try:
            with self.phase("fake_propagation"):
                try:
                    out = self._run_fake(op, target, fake_args, fake_kwargs)
                except TypeError as e:
                    # a symbolic number where the op's schema takes a plain one ("is_causal must be bool,
                    # not SymBool"): eagerly it is a plain number, so the op gets the example's value, guarded
                    if "Sym" not in str(e) or not _holds_sym_number((fake_args, fake_kwargs)):
                        raise
                    fx_args, fake_args = _plain_numbers(fx_args, fake_args)
                    fx_kwargs, fake_kwargs = _plain_numbers(fx_kwargs, fake_kwargs)
                    out = self._run_fake(op, target, fake_args, fake_kwargs)
        except (torch._subclasses.fake_tensor.DataDependentOutputException,
                torch._subclasses.fake_tensor.DynamicOutputShapeException) as e:
            raise GraphBreak("data-dependent op", f"{_target_name(target)} has a data-dependent output ({type(e).__name__})")
        except GuardOnDataDependentSymNode as e:       # the op decides on a size read from data (unbacked)
            gb = GraphBreak("data-dependent op", f"{_target_name(target)} decides on a size computed from tensor data "
                            f"({str(e).splitlines()[0] if str(e) else ''})")
            gb.symbols = unbacked_symbols_of(e)
            raise gb
        except torch._subclasses.fake_tensor.UnsupportedFakeTensorException as e:
            raise GraphBreak("fake tensor", f"{_target_name(target)} cannot run on fake tensors: {e}")
        except (RuntimeError, TypeError, ValueError, IndexError) as e:
            # the op itself fails on these inputs (shape mismatch, bad argument): eagerly it raises too,
            # so it runs as plain Python at a break and raises there, exactly as eagerly
            raise GraphBreak("op raised", f"{_target_name(target)} raises {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
        check_overlap(op, target, fake_args, fake_kwargs, tensors, versions)   # what fake kernels do not check
        itself = _input_handed_back(target, args, fake_args, fake_kwargs, out, tensors, versions)
        if itself is not None:
            return itself
        node = self.graph.create_node(op, target, fx_args, fx_kwargs)
        self.created.append(node)
        if out_shape_before is not None:
            node.meta["out_shape_before"] = out_shape_before      # backends/passes/out_arguments.py
        if self.shapes is not None and self.shapes.env.pending_fresh_unbacked_symbols:
            # the unbacked symbols this op made (nonzero's length, item's value) are bound to its output:
            # how a later trace of the graph (AOT autograd, on the same ShapeEnv) finds them again
            bindings = compute_unbacked_bindings(self.shapes.env, out)
            if bindings:
                node.meta["unbacked_bindings"] = bindings
        if self.order_events is not None:
            used = [a.node for a in args if isinstance(a, TensorValue) and a.node.meta.get("is_param")]
            if used:
                self.order_events.append(("use", node, used))
        if self.current_stack_trace:
            node.meta["stack_trace"] = self.current_stack_trace
        result = self._wrap(node, out, target)
        written = kwargs.get("out")
        if isinstance(written, TensorValue) and isinstance(result, TensorValue) and written.fake is out:
            return written          # `op(..., out=t)` returns t itself, as eagerly (`r is t`)
        return result

    def _run_fake(self, op, target, fake_args, fake_kwargs):
        """The op's result on fake tensors: from the shared memo when the same op already ran on
        inputs of the same metadata (graph/fake_memo.py), else run under the conversion's FakeTensorMode."""
        memo = self.op_memo
        key, tensors = memo.key(op, target, fake_args, fake_kwargs) if self.shapes is None else (None, None)
        if key is not None:
            out = memo.lookup(key, tensors, self.fake_mode)
            if out is not None:
                return out
        if op == "call_function" and target in SHAPE_RULES:          # graph/shape_rules.py
            with self.fake_mode:
                out = rule_output(target, fake_args, fake_kwargs)
            if out is not None:
                if key is not None:
                    memo.store(key, tensors, out)
                return out
        token = _RUNNING_FAKE.set(True)
        try:
            # with symbolic sizes, composite ops decompose through the Python dispatcher, whose kernels
            # read sizes as SymInts: C++ ones read them as ints, which would fix every size they touch
            with self.fake_mode, (enable_python_dispatcher() if self.shapes is not None else _NO_CONTEXT):
                if op == "call_method":
                    def run():
                        return getattr(fake_args[0], target)(*fake_args[1:], **fake_kwargs)
                else:
                    def run():
                        return target(*fake_args, **fake_kwargs)
                # sizes from 0 (shapes/oblivious.py): torch's size tests answer the general path
                out = self.shapes.run_op(run) if self.shapes is not None else run()
        finally:
            _RUNNING_FAKE.reset(token)
        if key is not None:
            memo.store(key, tensors, out)
        return out

    def _wrap(self, node, out, target):
        if isinstance(out, torch.Tensor):
            node.meta["example_value"] = out
            # its autograd identity before later ops write it (backends/passes/state_regions.py hands it on
            # as "grad_fn_at_entry" of a region that takes this value as an input)
            # (autograd refuses to read the grad_fn of some written views: then it is not recorded)
            try:
                node.meta["grad_fn_made"] = (out.requires_grad, out.grad_fn)
            except RuntimeError:
                pass
            return TensorValue(node, out)
        if isinstance(out, (tuple, list)) and all(isinstance(o, torch.Tensor) or o is None for o in out):
            # None items: an op's optional outputs that its constant arguments turned off
            # (F.multi_head_attention_forward's weights under need_weights=False)
            node.meta["example_value"] = out
            items = []
            for i, o in enumerate(out):
                if o is None:
                    items.append(Const(None))
                    continue
                item = self.graph.create_node("call_function", operator.getitem, (node, i), {})
                item.meta["example_value"] = o
                self.created.append(item)
                items.append(TensorValue(item, o))
            return SeqValue(type(out), items)
        if isinstance(out, SYM_TYPES):
            constant = constant_of(out)
            if constant is not None:
                self.graph.erase_node(node)
                self.created.remove(node)
                return Const(constant)
            node.meta["example_value"] = out
            return SymValue(node, out)
        if isinstance(out, torch.Size) and any(isinstance(d, torch.SymInt) for d in out):
            node.meta["example_value"] = out
            return self.sizes_of(node, out)
        if out is None or isinstance(out, (int, float, bool, torch.Size, torch.dtype, torch.device)):
            # ops that mutate and return nothing, or metadata queries: keep the node (it may be impure)
            node.meta["example_value"] = out
            return Const(out)
        raise GraphBreak("unsupported output", f"{_target_name(target)} returned {type(out).__name__}")

    # ---- rollback / finish --------------------------------------------------------------------
    def mark(self):
        return len(self.created)

    def rollback(self, mark):
        while len(self.created) > mark:
            node = self.created.pop()
            self.graph.erase_node(node)

    def sizes_of(self, node, size):
        """A torch.Size with symbolic items computed by `node`, as a torch.Size SeqValue."""
        items = []
        for i, d in enumerate(size):
            constant = constant_of(d) if isinstance(d, torch.SymInt) else d
            if constant is not None:
                items.append(Const(constant))
                continue
            item = self.graph.create_node("call_function", operator.getitem, (node, i), {})
            item.meta["example_value"] = d
            self.created.append(item)
            items.append(SymValue(item, d))
        return SeqValue(torch.Size, items)

    def size_of(self, value, dim):
        """`value.shape[dim]` of a TensorValue: a Const, or a SymValue read by an aten.sym_size node."""
        d = value.fake.shape[dim]
        constant = constant_of(d) if isinstance(d, torch.SymInt) else d
        if constant is not None:
            return Const(constant)
        node = self.graph.create_node("call_function", torch.ops.aten.sym_size.int, (value.node, dim), {})
        node.meta["example_value"] = d
        self.created.append(node)
        return SymValue(node, d)

    @property
    def symbolic(self):
        return self.shapes is not None and self.shapes.used

    def finish(self, output_values):
        """Set the graph's outputs and return a GraphModule plus the list of example inputs: the real
        inputs, or for a graph with symbolic sizes their fakes (SymInts for numbers), which backends
        that trace (aot_eager, inductor) compile for every size at once."""
        self.graph.output(tuple(v.node for v in output_values))
        _drop_unused_sizes(self.graph)
        _refuse_symbolic_literals(self.graph)
        gm = fx.GraphModule(torch.nn.Module(), self.graph)
        gm.graph.lint()
        forget_source_with(gm)
        if self.symbolic:
            return gm, [node.meta["example_value"] for _, _, node in self.inputs]
        return gm, [t for _, t, _ in self.inputs]

    def op_count(self):
        return sum(1 for n in self.graph.nodes if n.op in ("call_function", "call_method", "call_module")
                   and n.target is not operator.getitem)


_SIZE_TARGETS = (operator.getitem, torch.ops.aten.sym_size.int)


def _drop_unused_sizes(graph):
    """Erase the size arithmetic nothing uses (a comparison whose truth decided a branch at
    translation, a shape read only to be printed): the graph computes only what it returns or feeds."""
    for node in reversed(list(graph.nodes)):
        if node.op != "call_function" or node.users:
            continue
        if isinstance(node.meta.get("example_value"), SYM_TYPES) and (
                node.target in _SIZE_TARGETS or getattr(node.target, "__module__", None) in ("_operator", "operator")):
            graph.erase_node(node)


def _refuse_symbolic_literals(graph):
    """A SymInt written into the graph as a literal argument (not read by a node) would reach a real
    kernel at run time ("SymIntArrayRef expected to contain only concrete integers"): a framejit bug
    (values/numbers/sym_concrete.py), failed here so the frame falls back with a record instead of crashing."""
    for node in graph.nodes:
        if node.op in ("call_function", "call_method") and any(
                holds_symbolic(a) for a in (*node.args, *node.kwargs.values())):
            raise RuntimeError(f"framejit bug: a symbolic number is a literal argument of graph node {node.format_node()}")


def _operand(e):
    return e if e.isidentifier() or all(c.isalnum() or c in "._" for c in e) else f"({e})"


def _target_name(target):
    return target if isinstance(target, str) else getattr(target, "__name__", repr(target))


def _input_handed_back(target, args, fake_args, fake_kwargs, out, tensors, versions):
    """The argument's own Value when a non-mutating op returned that very tensor: x.float() of a float
    tensor, x.to(its dtype), x.contiguous() of a contiguous one, x.cpu(), torch.as_tensor(x). Eagerly
    it is the same object (`is`, is_leaf, grad_fn say so); no node is recorded. In-place ops (a name
    ending in "_", operator.i*, out=) also hand back their input, and keep their node."""
    if not isinstance(out, torch.Tensor) or "out" in fake_kwargs:
        return None
    name = target if isinstance(target, str) else getattr(target, "__name__", "")
    if name.endswith("_") or name.startswith("__i") or fake_memo.is_inplace_operator(target) or \
            fake_memo.schema_writes(target):
        return None
    for value, fake in zip(args, fake_args):
        if fake is out and isinstance(value, TensorValue):
            return value if versions_of(tensors) == versions else None
    return None


def _to_arg(v, fake):
    """A Value as an op argument: fx nodes for the graph (fake=False) or fake tensors to run it on."""
    if isinstance(v, TensorValue):
        return v.fake if fake else v.node
    if isinstance(v, SymValue):
        return v.sym if fake else v.node
    if isinstance(v, Const):
        return v.value
    if isinstance(v, SeqValue):
        items = [_to_arg(i, fake) for i in v.items]
        return items if v.kind is list else tuple(items)
    if isinstance(v, SliceValue):
        return slice(*[_to_arg(p, fake) for p in v.parts])
    if isinstance(v, DictValue) and not has_tensor_keys(v.items):     # (an object key: the object itself)
        return {(k.ident if type(k) is IdentityKey else k): _to_arg(x, fake) for k, x in v.items.items()}
    if isinstance(v, ObjectValue) and isinstance(v.obj, np.generic):
        return v.obj.item()     # a numpy scalar constant: torch reads it as the Python number (x.view(np.prod(s)))
    if isinstance(v, ObjectValue) and (fake or _graphable_object(v.obj)):
        return v.obj
    raise GraphBreak("graph argument", f"cannot pass {v!r} into a graph op")


_PLAIN_OF_SYM = {torch.SymBool: bool, torch.SymInt: int, torch.SymFloat: float}


def _holds_sym_number(fake):
    if type(fake) in _PLAIN_OF_SYM:
        return True
    if isinstance(fake, (tuple, list)):
        return any(_holds_sym_number(x) for x in fake)
    if isinstance(fake, dict):
        return any(_holds_sym_number(x) for x in fake.values())
    return False


def _plain_numbers(fx_arg, fake):
    """(fx_arg, fake) with every symbolic number in `fake` (and its node in `fx_arg`, the same structure)
    replaced by the example's value; reading the value records its guard in the ShapeEnv."""
    plain = _PLAIN_OF_SYM.get(type(fake))
    if plain is not None:
        value = plain(fake)
        return value, value
    if isinstance(fake, (tuple, list)):
        pairs = [_plain_numbers(a, f) for a, f in zip(fx_arg, fake)]
        return type(fake)(p[0] for p in pairs), type(fake)(p[1] for p in pairs)
    if isinstance(fake, dict):
        pairs = {k: _plain_numbers(fx_arg[k], f) for k, f in fake.items()}
        return {k: p[0] for k, p in pairs.items()}, {k: p[1] for k, p in pairs.items()}
    return fx_arg, fake


def _graphable_object(obj):
    return isinstance(obj, (torch.dtype, torch.device, torch.memory_format, torch.layout, type(Ellipsis), slice))


def forget_source_with(gm):
    """torch.fx registers each GraphModule's generated source for tracebacks (in linecache and in its
    loader's cache) and never removes it: a long-running process that keeps converting (recompiles,
    framejit.reset()) would keep every graph's source. Dropped when the GraphModule dies."""
    key = type(gm).forward.__code__.co_filename
    if key.startswith("<eval_with_key>"):
        weakref.finalize(gm, _forget_source, key).atexit = False


def _forget_source(key):
    linecache.cache.pop(key, None)
    cache = getattr(getattr(fx.graph_module, "_loader", None), "eval_cache", None)
    if isinstance(cache, dict):
        cache.pop(key, None)
