"""Codegen: the generated entry function of one cache entry, as readable Python source.

An entry has the compiled function's own signature (so the fast path never re-binds arguments):

    def __fj_entry(x, y, *, scale=None):
        try:
            if not (<guards>):
                return __fj_MISS
        except Exception:
            return __fj_MISS
        __fj_o0, __fj_o1, = __fj_graph(x, y, __fj_g['w'])   # graph inputs, loaded by their Sources
        __fj_g['calls'] = __fj_c0                        # side effects, in program order
        return (__fj_o0, [__fj_o1, 3])                   # the return value, rebuilt exactly

On a graph break the last line instead calls the break function (see convert/resume.py) with the live stack
and locals. The source text is kept on the entry for reports ("transformed code").
"""
import builtins
import re

import torch

from .hooks import apply_bytecode_hooks
from ..translate.source import FIXED_OBJECTS
from ..translate.values.containers.deques import write_back_lines as deque_write_back
from ..translate.values.dicts.dict_kinds import DefaultDictValue, rebuild_dict, write_back_dict
from ..translate.values.base import Const, DictValue, ObjectValue, SeqValue, SetValue, TensorValue, Value
from ..translate.values.tensors.tensor_subclasses import as_subclass_after_graph, plain_tensor
from ..translate.values.dicts.identity_hashed_keys import IdentityKey
from ..translate.values.numbers.sym_values import SymValue
from ..translate.values.numbers.drawn_seeds import DrawnSeedValue
from ..translate.values.numbers.sym_concrete import holds_symbolic
from ..translate.context import is_namedtuple_class
from ..translate.source import LocalSource
from ..translate.guards.module_guards import CachedSource

MISS = object()
_LITERAL_TYPES = (bool, int, type(None), str)


def _float_tensor(value, _tensor=torch.tensor, _float64=torch.float64):
    """A dynamic Python float as the 0-dim tensor a tracing backend's graph takes (graph/float_inputs.py)."""
    return _tensor(value, dtype=_float64)


class Namespace:
    """Names bound into the generated code's globals; constants go in by name, never as text."""

    def __init__(self, f_globals):
        b = f_globals.get("__builtins__", builtins)
        self.env = {"__fj_g": f_globals, "__fj_b": b if isinstance(b, dict) else b.__dict__,
                    "__fj_MISS": MISS, "__fj_grad_enabled": torch.is_grad_enabled,
                    "getattr": getattr, "type": type, "len": len, "tuple": tuple, "Exception": Exception,
                    "__fj_id": id, "__fj_float_tensor": _float_tensor,
                    "__fj_plain_tensor": plain_tensor}
        self._ids = {}

    def bind(self, obj, by_name=False):
        """A name (or literal text) for `obj` in generated code; `by_name` always gives a name (an
        operand of `is`)."""
        if not by_name and type(obj) in _LITERAL_TYPES and (type(obj) is not int or -1000 < obj < 1000) and \
                (type(obj) is not str or len(obj) < 40):
            return repr(obj)
        key = id(obj)
        name = self._ids.get(key)
        if name is None:
            if holds_symbolic(obj):     # a SymInt as a constant would reach real code (values/numbers/sym_concrete.py)
                raise RuntimeError(f"framejit bug: a symbolic number reached generated code as a constant ({obj!r})")
            name = self._ids[key] = f"__fj_c{len(self._ids)}"
            self.env[name] = obj
        return name


class Rebuilder:
    """Python expressions that rebuild symbolic values as real objects after the graph ran."""

    def __init__(self, ns, output_index, cached=None):
        self.ns = ns
        self.output_index = output_index     # fx Node -> i, the graph output named __fj_o<i>
        self.cached = cached or {}           # Source -> the same object read from the member cache
        self.prelude = []                    # statements creating shared mutable objects
        self._memo = {}
        self._counts = {}
        self._reloaded = {}                  # Source -> name it was read into in the prelude

    def count(self, v):
        """First pass: count references so shared mutable values are built once (identity)."""
        self._counts[id(v)] = self._counts.get(id(v), 0) + 1
        if self._counts[id(v)] > 1:
            return
        for child in _children(v):
            self.count(child)

    def declare(self, v, make_expr):
        """Create v's real object in the prelude under a fresh name and remember it before its parts
        are built, so parts that refer back to v (cycles, shared cells) reuse the same object."""
        name = f"__fj_v{len(self.prelude)}"
        self.prelude.append(f"{name} = {make_expr}")
        self._memo[id(v)] = name
        return name

    def reload(self, source):
        """The object at `source` as the frame saw it: anything but an argument is read in the prelude,
        before the side effects run (they may rebind the path: `items[0]` after `items.pop(0)`)."""
        if isinstance(source, LocalSource):
            return source.expr()
        if source in self.cached:
            return self.cached[source].expr()
        name = self._reloaded.get(source)
        if name is None:
            name = self._reloaded[source] = f"__fj_v{len(self.prelude)}"
            self.prelude.append(f"{name} = {source.expr()}")
        return name

    def known(self, v):
        """The expression v was already rebuilt as (declared or built), or None."""
        return self._memo.get(id(v))

    def expr(self, v):
        memo = self._memo.get(id(v))
        if memo is not None:
            return memo
        e = self._expr(v)
        if isinstance(v, (SeqValue, DictValue, SetValue)) and v.source is None and self._counts.get(id(v), 0) > 1 \
                and not (isinstance(v, SeqValue) and v.kind is tuple):
            name = f"__fj_v{len(self.prelude)}"
            self.prelude.append(f"{name} = {e}")
            e = name
        self._memo[id(v)] = e
        return e

    def key(self, k):
        """A dict key: a constant, or the object an identity key stands for (values/dicts/identity_hashed_keys.py)."""
        return self.expr(k.value) if type(k) is IdentityKey else self.ns.bind(k)

    def _expr(self, v):
        if isinstance(v, Const):
            return self.ns.bind(v.value)
        if isinstance(v, (TensorValue, SymValue, DrawnSeedValue)):   # a SymValue: a size the graph computes
            if v.node.op == "placeholder" and v.source is not None:
                return self.reload(v.source)
            if isinstance(v, TensorValue) and v.cls is not None:   # a tensor subclass instance (values/tensors/tensor_subclasses.py):
                name = f"__fj_v{len(self.prelude)}"        # made once, however often the value is reached
                self.prelude.append(f"{name} = {self.ns.bind(as_subclass_after_graph)}"
                                    f"(__fj_o{self.output_index[v.node]}, {self.ns.bind(v.cls)})")
                return name
            return f"__fj_o{self.output_index[v.node]}"
        if v.source is not None and isinstance(v, (SeqValue, DictValue, SetValue, ObjectValue)):
            return self.reload(v.source)
        if isinstance(v, SeqValue):
            items = [self.expr(i) for i in v.items]
            if v.kind is tuple:
                return "(" + "".join(f"{i}, " for i in items) + ")"
            if v.kind is list:
                return "[" + ", ".join(items) + "]"
            if is_namedtuple_class(v.kind):
                return f"{self.ns.bind(v.kind)}({', '.join(items)})"
            return f"{self.ns.bind(v.kind)}(({''.join(f'{i}, ' for i in items)}))"
        if isinstance(v, DictValue):
            body = ", ".join(f"{self.key(k)}: {self.expr(x)}" for k, x in v.items.items())
            d = "{" + body + "}"
            if v.kind is dict:
                return d
            factory = self.expr(v.factory) if isinstance(v, DefaultDictValue) else "None"
            return f"{self.ns.bind(rebuild_dict)}({self.ns.bind(v.kind)}, {d}, {factory})"
        if isinstance(v, SetValue):
            return ("{" + ", ".join(self.expr(i) for i in v.items) + "}") if v.items else "set()"
        return v.rebuild(self)           # every other kind rebuilds itself (values/base.py: Value.rebuild)


def _children(v):
    """The values rebuilding v reaches: the kind's own answer (Value.rebuild_parts), also the break
    decision's (convert/frame.py)."""
    if not isinstance(v, Value):        # a slot with no value (None) among the live values
        return []
    return v.rebuild_parts() or []


def tensors_in(values):
    """Graph tensors, symbolic sizes and drawn seeds (not untouched inputs) reachable from values, in
    first-seen order."""
    out, seen, stack = [], set(), list(reversed(values))
    visited = set()
    while stack:
        v = stack.pop()
        if id(v) in visited:
            continue
        visited.add(id(v))
        if isinstance(v, (TensorValue, SymValue, DrawnSeedValue)):    # (a number torch.seed() drew)
            if not (v.node.op == "placeholder" and v.source is not None) and v.node not in seen:
                seen.add(v.node)
                out.append(v)
        else:
            stack.extend(reversed(_children(v)))
    return out


def _last_raw_stores(effects):
    """The effects with one raw attribute store where a later store to the same attribute of the same
    target overwrites an earlier one and only stores that run no user code come in between (raw
    stores, and nn.Module.__setattr__ on modules that keep it), so nothing can read the overwritten
    value. The later store takes the earlier one's place: an attribute the first store created keeps
    its place in the object's __dict__ (vars() order is observable)."""
    out = []
    for e in effects:
        if e.kind == "raw_attr":
            j = len(out) - 1
            while j >= 0 and (out[j].kind in ("raw_attr", "raw_delattr") or out[j].kind == "attr" and out[j].plain_module):
                if out[j].target == e.target and out[j].key == e.key:
                    if out[j].kind == "raw_attr":
                        out[j] = e
                        e = None
                    break                  # a delete in between: the store before it must happen
                j -= 1
        if e is not None:
            out.append(e)
    return out


def side_effect_lines(effects, rb):
    lines = []
    for e in _last_raw_stores(effects):
        if e.kind == "global":
            lines.append(f"__fj_g[{e.key!r}] = {rb.expr(e.value)}")
        elif e.kind == "module_global":
            lines.append(f"{rb.ns.bind(e.target)}[{e.key!r}] = {rb.expr(e.value)}")
        elif e.kind == "attr" and e.plain_module and isinstance(e.value, Const) and \
                not isinstance(e.value.value, (torch.Tensor, torch.nn.Module)):
            # re-storing the object the attribute holds changes nothing (Swin resets its window sizes
            # on every call): skip nn.Module.__setattr__ then
            target, value = rb.reload(e.target), rb.ns.bind(e.value.value, by_name=True)
            lines.append(f"if {target}.__dict__.get({e.key!r}, __fj_MISS) is not {value}: "
                         f"setattr({target}, {e.key!r}, {value})")
        elif e.kind == "attr":
            lines.append(f"setattr({rb.reload(e.target)}, {e.key!r}, {rb.expr(e.value)})")
        elif e.kind == "value_attr":      # a tensor the graph made: its output (values/tensors/tensor_instance_attrs.py)
            lines.append(f"setattr({rb.expr(e.target)}, {e.key!r}, {rb.expr(e.value)})")
        elif e.kind == "raw_attr":        # the store itself (a Python __setattr__/property already ran)
            lines.append(f"{rb.ns.bind(object.__setattr__)}({rb.reload(e.target)}, {e.key!r}, {rb.expr(e.value)})")
        elif e.kind == "delattr":
            lines.append(f"delattr({rb.reload(e.target)}, {e.key!r})")
        elif e.kind == "raw_delattr":     # the delete itself (a Python __delattr__/property deleter already ran)
            lines.append(f"{rb.ns.bind(object.__delattr__)}({rb.reload(e.target)}, {e.key!r})")
        elif e.kind == "cell":
            lines.append(f"{e.target.expr()} = {rb.expr(e.value)}")
        elif e.kind == "list":
            items = ", ".join(rb.expr(i) for i in e.value.items)
            lines.append(f"{rb.reload(e.target)}[:] = [{items}]")
        elif e.kind == "list_extend":     # an input list the frame only appended to (values/containers/input_lists.py)
            items = "".join(f"{rb.expr(i)}, " for i in e.value.appended)
            lines.append(f"{rb.reload(e.target)}.extend(({items}))")
        elif e.kind == "dict":
            body = ", ".join(f"{rb.key(k)}: {rb.expr(x)}" for k, x in e.value.items.items())
            if e.value.kind is dict:
                lines.append(f"__fj_d = {rb.reload(e.target)}; __fj_d.clear(); __fj_d.update({{{body}}})")
            else:                     # a dict subclass: its own __setitem__ already ran in the frame
                lines.append(f"{rb.ns.bind(write_back_dict)}({rb.reload(e.target)}, {{{body}}})")
        elif e.kind == "deque":
            lines.append(deque_write_back(rb.reload(e.target), [rb.expr(i) for i in e.value.items]))
        elif e.kind == "set":
            items = "".join(f"{rb.expr(i)}, " for i in e.value.items)
            lines.append(f"__fj_d = {rb.reload(e.target)}; __fj_d.clear(); __fj_d.update(({items}))")
    return lines


def signature_source(code, with_closure):
    """Parameter list text of a code object (defaults are attached to the function afterwards)."""
    names = code.co_varnames
    nargs, nposonly, nkwonly = code.co_argcount, code.co_posonlyargcount, code.co_kwonlyargcount
    params = ["__fj_cl"] if with_closure else []
    for i in range(nargs):
        params.append(names[i])
        if nposonly and i == nposonly - 1:
            params.append("/")
    i = nargs + nkwonly
    if code.co_flags & 0x04:
        params.append("*" + names[i])
        i += 1
    elif nkwonly:
        params.append("*")
    params.extend(names[nargs:nargs + nkwonly])
    if code.co_flags & 0x08:
        params.append("**" + names[i])
    return ", ".join(params)


def call_arguments_source(code):
    """The arguments that call a function of `code`'s signature with the entry's own parameters
    (`x, y, *args, scale=scale, **kwargs`)."""
    names = code.co_varnames
    nargs, nkwonly = code.co_argcount, code.co_kwonlyargcount
    i = nargs + nkwonly
    star = names[i] if code.co_flags & 0x04 else None
    dstar = names[i + bool(star)] if code.co_flags & 0x08 else None
    return ", ".join(list(names[:nargs]) + ([f"*{star}"] if star else []) +
                     [f"{k}={k}" for k in names[nargs:nargs + nkwonly]] + ([f"**{dstar}"] if dstar else []))


def graph_call_source(input_sources, n_outputs, param_tuple=None):
    """The graph call, its outputs unpacked into __fj_o0, __fj_o1, ... (a tuple unpack is cheaper than
    indexing on the fast path). `param_tuple` ((start, stop), k) says member k of the module member cache
    (module_guards.CachedSource) is the tuple of members start..stop-1, which the arguments hold in a
    row: they are then one tuple made by concatenation (`*((x,) + __fj_m[k])`), not a list built,
    extended and copied."""
    args = [s.expr() for s in input_sources]
    call = f"__fj_graph({', '.join(args)})"
    if param_tuple is not None:
        (start, stop), member = param_tuple
        at = next(i for i, s in enumerate(input_sources) if isinstance(s, CachedSource) and s.index == start)
        before, after = args[:at], args[at + stop - start:]
        parts = ([f"({''.join(a + ', ' for a in before)})"] if before else []) + [f"__fj_m[{member}]"] + \
            ([f"({''.join(a + ', ' for a in after)})"] if after else [])
        call = f"__fj_graph(*({' + '.join(parts)}))"
    if n_outputs == 0:
        return call
    return "".join(f"__fj_o{i}, " for i in range(n_outputs)) + "= " + call


def build_entry(fn_code, f_globals, with_closure, guard_expr_fn, body_fn):
    """Assemble and exec the entry function. `guard_expr_fn(ns)` and `body_fn(ns)` give source text.
    An entry has no defaults: functions sharing a code object share its entries, and their callers
    (runtime/dispatcher.py, api._on_miss) pass every argument, bound by the function actually called."""
    ns = Namespace(f_globals)
    guard_expr = guard_expr_fn(ns)
    body = body_fn(ns)
    src = [f"def __fj_entry({signature_source(fn_code, with_closure)}):"]
    if guard_expr != "True":
        src += ["    try:", f"        if not ({guard_expr}):", "            return __fj_MISS",
                "    except Exception:", "        return __fj_MISS"]
    src += ["    " + line for line in body]
    text = "\n".join(src) + "\n"
    for key in set(re.findall(r"__fj_fixed_(\d+)", text)):      # FixedObjectSource names
        ns.env[f"__fj_fixed_{key}"] = FIXED_OBJECTS[int(key)]
    filename = f"<framejit entry {fn_code.co_name}>"
    exec(compile(text, filename, "exec"), ns.env)
    plain = ns.env.pop("__fj_entry")         # its globals must not hold it (a cycle)
    entry = apply_bytecode_hooks(fn_code, plain)     # framejit.register_bytecode_hook
    if entry is plain and entry.__code__ is plain.__code__:
        # the dispatcher may inline this entry's text (runtime/dispatcher.py); not when a hook replaced its code
        entry._framejit_parts = (guard_expr, body, ns)
    return entry, text, ns

