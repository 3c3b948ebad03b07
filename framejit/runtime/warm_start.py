"""A warm start: the first miss of a frame builds its entry from a stored conversion instead of converting.

Why this exists (issue 24): with its graph stored as an AOTInductor library, what a second process of the
same program still paid on its first call was the conversion, most of it the torch._dynamo import that the
translator's FakeTensorMode triggers. So after a conversion (`remember`) whose one graph runs as a stored
library, the runtime writes the conversion down as plain data (persist/conversions.py): its guards as a plan
of checks on paths from the frame's parameters (persist/warm_guards.py), the paths of the graph's inputs,
the line that rebuilds the result, and the library's key. A later process's first miss of that frame
(`load`, before converting) finds it by the frame's code, names the objects the plan refers to in this
process, builds the entry, and checks its guards against this call: any failure, or anything that does not
fit, is a miss, and the frame converts as always. No translator, no fake tensor, no torch._dynamo or
torch._inductor import on this path.

What is stored (everything else converts as today, and is never stored): inductor (no options, no accuracy
mode), one graph that is exactly one stored library, no graph break, no side effect, a result built of graph
outputs and literals, a frame with no closure; guards of the kinds warm_guards.py knows, on paths from the
parameters, the frame's globals, or long-lived objects with a name (modules, module globals, functions and
classes by module and qualified name, methods of a class reached through a path); every constant a plain
atom or a dtype. The frame's modules are checked by type (class name and fingerprint), structure and
attributes, as the shared entry does (translate/guards/instance_guards.py), and pinned behind the module
watch's counter (translate/guards/module_watch.py). Only a frame's first conversion is stored.

`FRAMEJIT_CACHE_CONVERSIONS=0` turns this off (the libraries stay on).
"""
import builtins
import inspect
import logging
import os
import platform
import re
import sys
import types
import weakref

import torch

from ..backends import aoti_background, inductor_aoti
from ..backends.registry import BACKENDS
from ..convert.codegen import MISS, call_arguments_source, signature_source
from ..convert.results import ConvertResult
from ..persist import conversions, store as disk
from ..persist.conversions import class_fingerprint, code_digest
from ..persist.graph_key import global_state
from ..convert import raising_graphs
from ..persist.warm_guards import (CALL, ClassCheck, NotLoadable, atom, atom_value, check_path, entry_text,
                                      function_digest, reads_only, resolve_fixed, resolve_named)
from . import warm_words
from ..translate.guards import guard_set, module_watch, native_state, tensor_words
from ..translate.source import FIXED_OBJECTS

log = logging.getLogger("framejit.warm_start")
_FIXED_NAME = re.compile(r"__fj_fixed_(\d+)")


class NotStorable(Exception):
    """Why a conversion is not written down (it converts again in a later process, as before)."""


def enabled(opts):
    return (os.environ.get("FRAMEJIT_CACHE_CONVERSIONS", "1").strip().lower() not in ("0", "false", "no", "off")
            and inductor_aoti.enabled() and opts.backend is BACKENDS.get("inductor")
            and not opts.config.check_accuracy and disk.default_store() is not None)


def _key(fn, opts):
    """The record's key. Of inductor's settings only the TORCHINDUCTOR_* environment: the values a program set on
    torch._inductor.config are known only once it is imported (compiling imports it, a warm start does not), so
    a process with any such value loads no record (`load`), and the library's own key holds those it was built
    with."""
    settings = inductor_aoti._inductor_settings()[0]
    backend = repr(("inductor", (platform.machine(), torch._C._get_cpu_capability()), settings, global_state()))
    return conversions.conversion_key(fn.__code__, repr(opts.config), backend)


# ---- storing ------------------------------------------------------------------------------------

def remember(fn, result, opts, args, kwargs):
    """Write `result` (a frame's first conversion) down for later processes, if it can be, and start the
    background library builds the conversion scheduled; never raises."""
    try:
        if not enabled(opts):
            return None
        module_watch.install()         # classes are fingerprinted with the watch's wrappers in, as at load
        record = plan_of(fn, result, args, kwargs)
        conversions.put(disk.default_store(), _key(fn, opts), record)
        aoti_background.start_pending()
        return record
    except NotStorable as e:
        log.debug("framejit: conversion of %s not stored: %s", fn.__qualname__, e)
    except Exception as e:          # a bug here must cost the warm start only
        log.debug("framejit: conversion of %s not stored (%s: %s)", fn.__qualname__, type(e).__name__, e)
    aoti_background.start_pending()
    return None


def plan_of(fn, result, args, kwargs):
    """The record of a conversion (plain JSON data), or NotStorable."""
    code = fn.__code__
    if result.kind != "entry" or result.breaks:
        raise NotStorable("a graph break")
    chosen = result.companion or result
    parts = getattr(chosen.entry, "_framejit_parts", None)
    graph = result.ns.env.get("__fj_graph") if result.ns is not None else None
    library_key = getattr(graph, "framejit_aoti_key", None)    # a JIT graph whose library is built later
    while library_key is None and getattr(graph, "framejit_wraps", None) is not None:
        graph = graph.framejit_wraps       # passes/none_grads.py's hook: nothing to do on a library's outputs
        library_key = getattr(graph, "framejit_aoti_key", None)
    if parts is None or library_key is None:
        raise NotStorable("the graph is not one stored library")
    calls = [i for i, line in enumerate(parts[1]) if "__fj_graph(" in line]
    if len(calls) != 1:
        raise NotStorable("not one graph call")
    call = parts[1][calls[0]]
    n_outputs = len(re.findall(r"__fj_o\d+, ", call.split("=")[0])) if call.lstrip().startswith("__fj_o") else 0
    indent = call[:len(call) - len(call.lstrip())]
    bound = inspect.signature(fn, follow_wrapped=False).bind(*args, **kwargs)
    params = list(code.co_varnames[:code.co_argcount + code.co_kwonlyargcount +
                                   bool(code.co_flags & 0x04) + bool(code.co_flags & 0x08)])
    roots = [p for p in params if isinstance(bound.arguments.get(p), torch.nn.Module)]
    plan = _Plan(fn, roots, chosen.guards.guards)
    for g in chosen.guards.guards:
        plan.add(g)
    inputs = [plan.path(s.expr()) for s in getattr(result, "graph_input_sources", None) or ()]
    if len(inputs) != sum(1 for n in result.graph.graph.nodes if n.op == "placeholder"):
        raise NotStorable("the graph's inputs are not known by path")
    body = [indent + CALL if i == calls[0] else plan.path(line) for i, line in enumerate(parts[1])]
    consts = {}
    for name in sorted(set(re.findall(r"\b__fj_c\d+\b", "\n".join(body)))):
        consts[name] = plan.const_ref(parts[2].env[name])
    if any("__fj_m[" in line for line in body):
        raise NotStorable("the result reads the module member cache")
    return {"format": conversions.FORMAT, "frame": code.co_qualname, "params": params, "module_roots": roots,
            "closure": bool(code.co_freevars), "fixed": plan.fixed, "classes": plan.classes,
            "each_call": plan.each, "tree": plan.tree, "watch": plan.watch, "inputs": inputs,
            "n_outputs": n_outputs, "body": body, "consts": consts, "graph": library_key, "code": code_digest(code)}


class _Plan:
    def __init__(self, fn, roots, guards):
        self.fn, self.roots = fn, roots
        self.fixed, self.classes, self.each, self.tree, self.watch = [], [], [], [], []
        self._fixed_ids, self._class_ids = {}, {}
        # methods of classes defined in functions are named through a path to an object of the class
        self._typed = [(g.source.expr(), g.expected) for g in guards
                       if g.kind.name == "TYPE_MATCH" and g.source is not None and isinstance(g.expected, type)]

    def path(self, text):
        return _FIXED_NAME.sub(lambda m: f"__fj_fixed_{self.fixed_index(FIXED_OBJECTS[int(m.group(1))])}", text)

    def fixed_index(self, obj):
        i = self._fixed_ids.get(id(obj))
        if i is None:
            self.fixed.append(self._name_of(obj))
            i = self._fixed_ids[id(obj)] = len(self.fixed) - 1
        return i

    def _name_of(self, obj):
        if isinstance(obj, types.ModuleType) and obj.__name__ and \
                sys.modules.get(obj.__name__) is obj:
            return ["module", obj.__name__]
        if type(obj) is dict and isinstance(obj.get("__name__"), str):
            module = sys.modules.get(obj["__name__"])
            if module is not None and module.__dict__ is obj:
                return ["globals", obj["__name__"]]
        module, qualname = _home(obj), getattr(obj, "__qualname__", None)
        if isinstance(module, str) and isinstance(qualname, str) and resolve_named(module, qualname) is obj:
            if isinstance(obj, types.FunctionType):
                return ["attr", module, qualname, code_digest(obj.__code__)]
            return ["attr", module, qualname]
        if isinstance(obj, types.FunctionType) and isinstance(module, str):
            outer = resolve_named(module, obj.__qualname__)     # a decorated function: its wrapper has the name
            cells = _cell_path(outer, obj) if isinstance(outer, types.FunctionType) else None
            if cells is not None:
                return ["cell", self.fixed_index(outer), cells, code_digest(obj.__code__)]
        if isinstance(obj, types.FunctionType):
            for path, cls in self._typed:
                if cls.__dict__.get(obj.__name__) is obj:
                    return ["method", self.path(path), obj.__name__]
        name = _global_name(obj)
        if name is not None:
            return ["attr", *name]
        raise NotStorable(f"{type(obj).__name__} {qualname or ''} has no name in another process")

    def describe(self, obj):
        """A description of `obj` another process can check an object against (warm_guards.Same)."""
        if obj is None or obj is True or obj is False:
            return ["single", repr(obj)]
        a = atom(obj)
        if a is not None:
            return ["atom", a]
        if type(obj) is tuple:
            return ["tuple", [self.describe(x) for x in obj]]
        if type(obj) in (dict, list):
            return ["mutable", type(obj).__name__]
        try:
            return ["fixed", self.fixed_index(obj)]
        except NotStorable:
            pass
        if isinstance(obj, types.FunctionType) and isinstance(obj.__module__, str):
            return ["func", obj.__module__, obj.__qualname__, code_digest(obj.__code__)]
        if isinstance(obj, types.CodeType):
            return ["code", code_digest(obj)]
        if type(obj) is property:
            return ["prop", [function_digest(f) for f in (obj.fget, obj.fset, obj.fdel)]]
        raise NotStorable(f"a {type(obj).__name__} with no name in another process")

    def const_ref(self, obj):
        """How the entry's body gets a constant it names (`resolve_const`)."""
        if obj is self.fn or getattr(obj, "__qualname__", None) == "_rerun_target.<locals>.plain" and \
                getattr(obj, "__module__", None) == raising_graphs.__name__:
            return ["rerun"]          # the frame run as Python when its graph raises (convert/raising_graphs.py)
        if isinstance(obj, torch.device):
            return ["device", str(obj)]
        if isinstance(obj, torch.Size):
            return ["size", list(obj)]
        if type(obj) is tuple:
            return ["tuple", [self.const_ref(x) for x in obj]]
        if obj is None or obj is True or obj is False:
            return ["single", repr(obj)]
        a = atom(obj)
        if a is not None:
            return ["atom", a]
        return ["fixed", self.fixed_index(obj)]

    def class_index(self, cls):
        i = self._class_ids.get(cls)
        if i is None:
            self.classes.append([cls.__module__, cls.__qualname__, class_fingerprint(cls)])
            i = self._class_ids[cls] = len(self.classes) - 1
        return i

    def add(self, g):
        kind = g.kind.name
        if kind == "NATIVE_STATE":
            for inner in g.expected[1]:
                self.add(inner)
            return
        path = self.path(g.source.expr()) if g.source is not None else None
        tree = path is not None and reads_only(path, self.roots)
        x = g.expected
        if kind == "CONST_MATCH":
            if x is None or x is True or x is False:
                item = ["is_const", path, x]
            elif atom(x) is not None and not isinstance(x, torch.dtype):
                item = ["const", path, atom(x)]
            elif type(x) is tuple:
                item = ["same", path, self.describe(x)]
            else:
                raise NotStorable(f"a constant {type(x).__name__}")
        elif kind == "TYPE_MATCH":
            item = ["type", path, self.class_index(x)]
            if tree and issubclass(x, torch.nn.Module):
                self.watch.append(path)
        elif kind == "LEN_MATCH":
            item = ["len", path, int(x)]
        elif kind == "DICT_KEYS":
            keys = [atom(k) for k in x]
            if any(k is None or k[0] == "dtype" for k in keys):
                raise NotStorable("dict keys that are not atoms")
            item = ["keys", path, keys]
        elif kind == "TENSOR_MATCH":
            if x.leaf_checked and x.leaf is not True:   # stored checks test leaf-ness only as True
                raise NotStorable("a non-leaf tensor input")
            item = ["tensor", path, [self.class_index(x.type), str(x.dtype).replace("torch.", ""), str(x.device),
                                     list(x.shape), list(x.stride), bool(x.requires_grad), bool(x.inference)]]
            if tree and issubclass(x.type, torch.nn.Parameter):
                self.watch.append(path)
            else:
                tree = False        # plain tensors (buffers) are checked on every call: no watch sees them
        elif kind == "GRAD_MODE":
            item = ["grad", None, bool(x)]
        elif kind == "STATE_MATCH":
            f, value = x
            if atom(value) is None:
                raise NotStorable("a state that is not an atom")
            item = ["state", None, [self.fixed_index(f), atom(value)]]
        elif kind == "ID_MATCH" and not isinstance(x, torch.nn.Module) and path is not None:
            d = self.describe(x)
            item = ["is", path, d[1]] if d[0] == "fixed" else ["same", path, d]
        else:
            raise NotStorable(f"a {kind} guard")
        (self.tree if tree else self.each).append(item)


def _home(obj):
    """The module an object is found in by its qualified name: its own `__module__`, or for a builtin
    method or slot of a class (`object.__setattr__`, `dict.__new__`) that class's module."""
    module = getattr(obj, "__module__", None)
    if isinstance(module, str):
        return module
    owner = getattr(obj, "__objclass__", None)
    if owner is None and isinstance(getattr(obj, "__self__", None), type):
        owner = obj.__self__
    return getattr(owner, "__module__", None) if isinstance(owner, type) else None


def _cell_path(outer, obj, depth=3):
    """The closure-cell indices that lead from function `outer` to `obj` (a decorated function's original,
    through one or more wrappers), or None."""
    for i, cell in enumerate(outer.__closure__ or ()):
        try:
            inner = cell.cell_contents
        except ValueError:              # an empty cell
            continue
        if inner is obj:
            return [i]
        if depth > 1 and isinstance(inner, types.FunctionType):
            rest = _cell_path(inner, obj, depth - 1)
            if rest is not None:
                return [i, *rest]
    return None


def _global_name(obj):
    """(module, name) of a module-level instance (a sentinel, a registry object): a global of its class's
    module that is this object, or None."""
    module = sys.modules.get(getattr(type(obj), "__module__", None) or "")
    if module is None:
        return None
    names = [k for k, v in vars(module).items() if v is obj and isinstance(k, str) and not k.startswith("__")]
    return (module.__name__, names[0]) if len(names) == 1 else None


# ---- loading ------------------------------------------------------------------------------------

class _Pin:
    """The modules the tree checks were last run for (weakly), the module watch's counter then, and their
    verdict: 1 passed, 0 failed (a module changed after the entry ran: the entry misses at once until the
    counter moves again, instead of running every check on every call), -1 not known.

    `fast` is what the entry compares inline on a steady call, as a converted entry does (module_guards.py):
    [the counter when the checks last passed, or -1; the id of each root then]. A root's death sets it to -1
    before its id can be another object's (the weak reference's callback), so equal ids are the same roots."""

    def __init__(self, env, stamp=None, n_roots=0):
        self.refs, self.epoch, self.verdict, self.env, self.stamp = (), -1, -1, env, stamp
        self.fast = [-1] + [0] * n_roots
        self.members = [()]           # the member cache the tree checks last pinned (the entry reads it, `__fj_mc`)

    def known(self, roots, _epoch=module_watch.EPOCH):
        refs = self.refs
        if self.epoch != _epoch[0] or len(refs) != len(roots):
            return -1
        for ref, obj in zip(refs, roots):
            if ref() is not obj:
                return -1
        if self.verdict == 1:
            self._fast(roots)
        return self.verdict

    def _fast(self, roots):
        fast = self.fast
        fast[0] = -1
        fast[1:] = [id(r) for r in roots]
        fast[0] = self.epoch

    def pin(self, roots, watched, members):
        for obj in (*roots, *watched):
            if isinstance(obj, (torch.nn.Module, torch.nn.Parameter)):
                module_watch.watch(obj)
        self.env["__fj_m"] = self.members[0] = members
        self._note(roots, 1)

    def refuse(self, roots):
        for obj in roots:
            if isinstance(obj, torch.nn.Module):
                module_watch.watch(obj)
        self._note(roots, 0)

    def _note(self, roots, verdict):
        if self.stamp is not None:
            self.stamp.drop()          # what the stamped checks read from these modules is read again
        fast = self.fast
        fast[0] = -1
        self.refs = tuple(weakref.ref(r, lambda _, fast=fast: fast.__setitem__(0, -1)) for r in roots)
        self.epoch, self.verdict = module_watch.EPOCH[0], verdict
        if verdict == 1:
            self._fast(roots)


def load(fn, opts, args, kwargs):
    """The entry of `fn`'s stored conversion if it passes this call's guards, else None; never raises."""
    try:
        if not enabled(opts):
            return None
        if inductor_aoti._inductor_settings()[1]:
            raise NotLoadable("the program set values on torch._inductor.config")
        store = disk.default_store()
        record = conversions.get(store, _key(fn, opts))
        if record is None:
            return None
        if record.get("code") != code_digest(fn.__code__):
            return None
        return _build(fn, record, store, args, kwargs)
    except NotLoadable as e:
        log.debug("framejit: stored conversion of %s not used: %s", fn.__qualname__, e)
    except Exception as e:
        log.debug("framejit: stored conversion of %s not used (%s: %s)", fn.__qualname__, type(e).__name__, e)
    return None


def _build(fn, record, store, args, kwargs):
    code = fn.__code__
    b = fn.__globals__.get("__builtins__", builtins)
    env = {"__fj_g": fn.__globals__, "__fj_b": b if isinstance(b, dict) else b.__dict__, "__fj_MISS": MISS,
           "getattr": getattr, "type": type, "len": len, "tuple": tuple, "Exception": Exception, "__fj_m": ()}
    if record["params"] != list(code.co_varnames[:len(record["params"])]):
        raise NotLoadable("another parameter list")
    closure = bool(code.co_freevars)
    if bool(record.get("closure")) != closure:
        raise NotLoadable("a closure where there was none, or none where there was one")
    signature = signature_source(code, closure)
    call_args = ("__fj_cl, " if closure else "") + call_arguments_source(code)
    lead = (fn.__closure__,) if closure else ()
    arguments = dict(inspect.signature(fn, follow_wrapped=False).bind(*args, **kwargs).arguments)
    if closure:
        arguments["__fj_cl"] = fn.__closure__

    def on_call(path):
        return eval(path, dict(env), dict(arguments))      # a path of the plan (checked by warm_guards)
    for i, ref in enumerate(record["fixed"]):
        if ref[0] == "cell":            # a decorated function's original, in its wrapper's closure (_cell_path)
            obj = env[f"__fj_fixed_{int(ref[1])}"] if int(ref[1]) < i else None
            for index in ref[2]:
                obj = obj.__closure__[int(index)].cell_contents
            if not isinstance(obj, types.FunctionType) or code_digest(obj.__code__) != ref[3]:
                raise NotLoadable("a wrapped function changed")
            env[f"__fj_fixed_{i}"] = obj
            continue
        env[f"__fj_fixed_{i}"] = obj = resolve_fixed(ref, on_call)
        if ref[0] == "attr" and len(ref) > 3 and code_digest(obj.__code__) != ref[3]:
            raise NotLoadable(f"{ref[2]} changed")
    for name, ref in record.get("consts", {}).items():
        if not re.fullmatch(r"__fj_c\d+", name):
            raise NotLoadable(f"a constant named {name!r}")
        env[name] = resolve_const(ref, env, fn)
    module_watch.install()             # as when the record was made (class_fingerprint sees its wrappers)
    classes = [ClassCheck(ref) for ref in record["classes"]]
    roots, params = list(record["module_roots"]), set(record["params"]) | ({"__fj_cl"} if closure else set())
    for item in record["each_call"]:
        if isinstance(item, list) and len(item) == 3 and isinstance(item[1], str):
            check_path(item[1], params, len(record["fixed"]))
    versioned, anchors = warm_words.versioned_checks(record["each_call"], env, arguments, roots)
    stamp = warm_words.Stamp([record["each_call"][i] for i in sorted(versioned)], env, roots, anchors)
    pin = _Pin(env, stamp, len(roots))
    env["__fj_mc"] = pin.members
    env["__fj_known"], env["__fj_pin"], env["__fj_refuse"] = pin.known, pin.pin, pin.refuse
    env["__fj_st"], env["__fj_sw"], env["__fj_unchanged"] = stamp, stamp.words, warm_words.words_unchanged
    env["__fj_pf"], env["__fj_EP"], env["__fj_id"] = pin.fast, module_watch.EPOCH, id
    packed = code.co_varnames[code.co_argcount + code.co_kwonlyargcount:][:bool(code.co_flags & 0x04) +
                                                                           bool(code.co_flags & 0x08)]
    text, guards, body = entry_text(record, signature, call_args, env, classes, versioned, _native_tensor,
                                    _native_state, fast=True, packed=frozenset(packed))
    graph, _ = inductor_aoti.load_stored(store, record["graph"])
    if graph is None:
        raise NotLoadable("its library is not in the cache")
    env["__fj_graph"] = graph
    exec(compile(text, f"<framejit stored entry {code.co_name}>", "exec"), env)
    if not env["__fj_guards"](*lead, *args, **kwargs):
        raise NotLoadable("its guards fail for this call")
    entry = env.pop("__fj_entry")
    # the dispatcher inlines it as it inlines a converted entry (its guards and body, over a copy of its names)
    entry._framejit_parts = (guards, body, types.SimpleNamespace(env=env))
    result = ConvertResult("entry", entry=entry, guards=_NoGuards(), graph=None, source_text=text, ns=_Names(),
                           op_count=0)
    result.stored = True
    return result


def _native_tensor(dtype, device, shape, stride, requires_grad, inference=False):
    """An argument's tensor check as one native call, as the converted entry's (or None); inference-ness is in
    the dispatch-key word it compares (tensor_words.input_check)."""
    meta = types.SimpleNamespace(type=torch.Tensor, dtype=dtype, device=device, shape=shape, stride=stride,
                                 requires_grad=requires_grad, inference=inference)
    return tensor_words.input_check(meta)


def _native_state(pieces):
    """Grad mode and the state checks as one native call, as the converted entry fuses them
    (guard_set.fuse_state_guards): (check, mask, value), or None."""
    mask = value = 0
    for kind, fn, expected in pieces:
        name = "grad" if kind == "grad" else guard_set._state_kind(fn) if callable(fn) else None
        bits = native_state.state_bits(name, expected) if name is not None else None
        if bits is None:
            return None
        mask, value = mask | bits[0], value | bits[1]
    return native_state.state_is, mask, value


def resolve_const(ref, env, fn):
    """The constant `ref` (`_Plan.const_ref`) names, in this process (fixed objects already resolved)."""
    kind = ref[0]
    if kind == "rerun":
        return raising_graphs._rerun_target(fn)
    if kind == "device":
        return torch.device(ref[1])
    if kind == "size":
        return torch.Size([int(x) for x in ref[1]])
    if kind == "tuple":
        return tuple(resolve_const(x, env, fn) for x in ref[1])
    if kind == "single":
        return {"None": None, "True": True, "False": False}[ref[1]]
    if kind == "atom":
        return atom_value(ref[1])
    if kind == "fixed":
        return env[f"__fj_fixed_{int(ref[1])}"]
    raise NotLoadable(f"a constant of kind {kind!r}")


class _NoGuards:
    """What a miss report reads of a loaded entry's guards: none it can explain (they are in its text)."""
    guards = ()


class _Names:
    env = {}
