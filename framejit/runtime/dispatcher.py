"""The fast path: a generated function with the compiled function's own signature.

    def add_relu(x, y):                          # same parameters, defaults, *args/**kwargs as fn
        if __fj_stance_home._stance is not __fj_calm.stance and __fj_stance_check():
            return __fj_on_miss((x, y), {})      # torch.compiler.set_stance changed (runtime/stances.py)
        try:                                     # the first cache entry, inlined (convert/codegen.py text):
            __fj_ok = (type(x) is __fj_c0 and ...)   #   its guards,
        except Exception:
            __fj_ok = False
        if __fj_ok:
            __fj_o0, = __fj_graph(x, y)          #   its graph call and rebuilt result
            return __fj_o0
        for __fj_e in __fj_entries:              # the other entries of fn's code object
            if __fj_e is not __fj_first:
                __fj_r = __fj_e(x, y)
                if __fj_r is not __fj_MISS:
                    return __fj_r
        return __fj_on_miss((x, y), {})          # slow path: convert (compiled._on_miss)

Arguments are bound once, by CPython, when the dispatcher is called: nothing re-binds them and no
*args tuple or **kwargs dict is built on a hit. The common call — one entry whose guards pass — is a
single Python call: guards, graph, result. When the entries change (a conversion, framejit.reset())
the dispatcher's code is regenerated in place (`_framejit_refresh`), so the function object users hold
stays the same. For a function with free variables the closure tuple is `__fj_cl` (entries guard on
the cells of the function actually called, since several functions can share one code object).

A compiled module whose forward takes `(self, *args, **kwargs)` (transformers' decorated forwards)
gets a second dispatcher over the same entries as its `__call__` (other modules get `build_module_call`,
the same questions in front of a call of the compiled forward): it first asks what nn.Module.__call__
would ask (hooks, jit tracing, an instance forward, Module.compile()) and hands the call to it if
anything is set; otherwise it is the forward's dispatcher, so a model call is one Python frame. The
module's own answers are remembered until the module watch's counter moves (`needs_module_call`), and
the inlined guards drop the global-hooks term, which that first test has just checked.
"""
import re
import weakref

import torch

from ..convert.codegen import MISS, signature_source
from ..dynamo_reads import STANCE_GLOBAL, STANCE_HOME, STANCE_HOME_MOVED
from .stances import CALM, forces_miss_path
from ..translate.values.modules.module_values import GlobalHooksSource
from ..translate.guards.module_watch import EPOCH, watch
from ..translate.guards.native_state import state_bits, state_is
from ..translate.source import FIXED_OBJECTS


def _call_parts(code):
    names = code.co_varnames
    nargs, nkwonly = code.co_argcount, code.co_kwonlyargcount
    positional = list(names[:nargs])
    kwonly = list(names[nargs:nargs + nkwonly])
    i = nargs + nkwonly
    star = names[i] if code.co_flags & 0x04 else None
    if star:
        i += 1
    dstar = names[i] if code.co_flags & 0x08 else None
    call = positional + ([f"*{star}"] if star else []) + [f"{k}={k}" for k in kwonly] + \
        ([f"**{dstar}"] if dstar else [])
    miss_args = "(" + "".join(f"{p}, " for p in positional) + (f"*{star}, " if star else "") + ")"
    kw_items = [f"{k!r}: {k}" for k in kwonly] + ([f"**{dstar}"] if dstar else [])
    return ", ".join(call), miss_args, "{" + ", ".join(kw_items) + "}"


def module_call_fits(code):
    """Can a dispatcher for this forward also be its module's __call__ (same arguments as __call__)?"""
    return code.co_argcount == 1 and not code.co_kwonlyargcount and code.co_flags & 0x0C == 0x0C


_GLOBAL_HOOKS = GlobalHooksSource(True).expr()
_NOT_TRACING = state_bits("tracing", False)
# "is torch.jit tracing?" as nn.Module.__call__ asks it; through the native state reader when there is one
_TRACING = "__fj_tracing()" if _NOT_TRACING is None else f"not __fj_state_is{_NOT_TRACING}"


def _module_call_test(me):
    """nn.Module.__call__'s own questions about module `me`: the per-instance ones only when the module
    watch's counter moved since they were last all "no"."""
    return (f"((__fj_checked[0] != __fj_epoch[0] or __fj_checked[1] is not {me}) and "
            f"__fj_needs_module_call(__fj_checked, {me})) or not {_GLOBAL_HOOKS} or {_TRACING}")


def _module_call_env():
    env = {"__fj_module_call": torch.nn.Module.__call__, "__fj_tracing": torch._C._get_tracing_state,
           "__fj_state_is": state_is, "__fj_checked": [None, None], "__fj_epoch": EPOCH,
           "__fj_needs_module_call": needs_module_call}
    for key in re.findall(r"__fj_fixed_(\d+)", _GLOBAL_HOOKS):
        env[f"__fj_fixed_{key}"] = FIXED_OBJECTS[int(key)]
    return env


def build_module_call(forward, original):
    """The compiled module's __call__ when its forward takes other arguments than (self, *args,
    **kwargs): nn.Module.__call__'s questions, then the compiled forward directly (saving its two
    extra frames), or nn.Module.__call__ itself when it has anything to do. The questions are asked of
    the `original` module, whose __dict__ (hook tables, forward, _compiled_call_impl) the compiled one
    shares: remembering the compiled module itself would make it part of a cycle through its class."""
    env = dict(_module_call_env(), __fj_forward=forward, __fj_original=original)
    exec(compile(f"def __call__(self, *args, **kwargs):\n"
                 f"    if {_module_call_test('__fj_original')}:\n"
                 f"        return __fj_module_call(self, *args, **kwargs)\n"
                 f"    return __fj_forward(self, *args, **kwargs)\n", "<framejit module call>", "exec"), env)
    return env.pop("__call__")           # its globals must not hold it (a cycle)


def needs_module_call(checked, module):
    """Would nn.Module.__call__ do more than call forward for this module's own sake (its hooks,
    Module.compile(), an instance-level forward)? Each can only be set through an entry point the
    module watch wraps (register_*hook, RemovableHandle.remove, __setattr__), which moves EPOCH, so a
    "no" is remembered in `checked` ([epoch, module]) until the counter moves."""
    epoch = EPOCH[0]
    if (module._forward_hooks or module._forward_pre_hooks or module._backward_hooks or
            module._backward_pre_hooks or module._compiled_call_impl is not None or "forward" in module.__dict__):
        return True
    watch(module)
    checked[1] = module
    checked[0] = epoch
    return False


def _without_global_hooks_term(guard_expr):
    term = f"({_GLOBAL_HOOKS})"
    for text in (f"{term} and ", f" and {term}"):
        if text in guard_expr:
            return guard_expr.replace(text, "", 1)
    return guard_expr


def _without_self_term(guard_expr, me, env, self_object):
    """The entry's leading `self is <module>` term (by id: guards.WeakIdentity) holds by construction
    once `self` is set to that module (`self_object`): dropped. Kept when the entry was made for
    another module of the class. A shared entry's leading `type(self) is <class>` holds too, and its
    `__fj_id(self)` (translate/guards/instance_guards.py) is a constant."""
    found = re.match(rf"__fj_id\({re.escape(me)}\) == (\d+) and ", guard_expr)
    if found is not None and int(found.group(1)) == id(self_object):
        guard_expr = guard_expr[found.end():]
    found = re.match(rf"{re.escape(me)} is (__fj_c\d+) and ", guard_expr)
    if found is not None and env.get(found.group(1)) is self_object:
        guard_expr = guard_expr[found.end():]
    found = re.match(rf"type\({re.escape(me)}\) is (__fj_c\d+) and ", guard_expr)
    if found is not None and env.get(found.group(1)) is type(self_object):
        guard_expr = guard_expr[found.end():]
    return guard_expr.replace(f"__fj_id({me})", str(id(self_object)))


def _source(code, name, first_parts, module_call=False, self_object=None, closure_arg=False):
    call, miss_args, miss_kwargs = _call_parts(code)
    head = "__fj_cl, " if code.co_freevars else ""
    me = code.co_varnames[0] if code.co_varnames else None
    lines = [f"def {name}({signature_source(code, closure_arg)}):"]
    if module_call:
        # asked of the original module when there is one (build_module_call says why); it shares the
        # compiled module's __dict__
        asked = "__fj_self" if self_object is not None else me
        lines += [f"    if {_module_call_test(asked)}:", f"        return __fj_module_call({call})"]
    if self_object is not None:
        lines += [f"    {me} = __fj_self"]
    # torch.compiler.set_stance: one identity test while the stance stays as last judged (runtime/stances.py)
    lines += [f"    if __fj_stance_home.{STANCE_GLOBAL} is not __fj_calm.stance and __fj_stance_check():",
              f"        return __fj_on_miss({head if closure_arg else ''}{miss_args}, {miss_kwargs})"]
    if first_parts is not None:
        guard_expr, body, parts_ns = first_parts
        if module_call:
            guard_expr = _without_global_hooks_term(guard_expr)
        if self_object is not None:
            guard_expr = _without_self_term(guard_expr, me, parts_ns.env, self_object)
        lines += ["    try:", f"        __fj_ok = ({guard_expr})", "    except Exception:", "        __fj_ok = False",
                  "    if __fj_ok:"]
        lines += ["        " + line for line in body]
    lines += ["    for __fj_e in __fj_entries:",
              "        if __fj_e is not __fj_first:",
              f"            __fj_r = __fj_e({head}{call})",
              "            if __fj_r is not __fj_MISS:",
              "                return __fj_r",
              f"    return __fj_on_miss({head if closure_arg else ''}{miss_args}, {miss_kwargs})"]
    return "\n".join(lines) + "\n"


def build_dispatcher(fn, entries, on_miss, module_call=False, self_object=None, closure_arg=False):
    """The dispatcher of `fn` over `entries`; with `module_call`, the one for its module's __call__.
    With `self_object` (a compiled module's original), the first argument is replaced by it: forward
    runs on the module the user compiled, so `type(self)` inside it is the user's class, not the
    subclass framejit.compile(module) made. With `closure_arg`, the closure is the first parameter
    (`__fj_cl`) instead of fn's own, and a miss passes it on: `on_miss(closure, args, kwargs)`."""
    code = fn.__code__
    name = "__call__" if module_call else _safe_name(code.co_name)
    fixed = {"__fj_entries": entries, "__fj_on_miss": on_miss, "__fj_MISS": MISS, "__fj_self": self_object,
             "__fj_calm": CALM, "__fj_stance_check": forces_miss_path}
    if not closure_arg:
        fixed["__fj_cl"] = fn.__closure__
    env = dict(fixed, __fj_first=None, __fj_stance_home=STANCE_HOME[0], __builtins__=__builtins__)
    if module_call:
        env.update(_module_call_env())
    filename = f"<framejit {'module call' if module_call else 'dispatcher'} {code.co_qualname}>"
    exec(compile(_source(code, name, None, module_call, self_object, closure_arg), filename, "exec"), env)
    dispatcher = env.pop(name)           # its globals must not hold it (a cycle)
    dispatcher.__defaults__ = fn.__defaults__
    dispatcher.__kwdefaults__ = fn.__kwdefaults__
    base = dict(env)
    dispatcher_ref = weakref.ref(dispatcher)

    def refresh():
        # the dispatcher is reached weakly: it holds this function (an attribute), and a cycle would
        # keep a dead compiled function's graphs until the cyclic GC ran
        target = dispatcher_ref()
        if target is None:
            return
        while True:
            first = entries[0] if entries else None
            parts = getattr(first, "_framejit_parts", None)
            scratch = dict(base)
            if parts is not None:
                scratch.update(parts[2].env)
            scratch.update(fixed)
            scratch["__fj_stance_home"] = STANCE_HOME[0]
            scratch["__fj_first"] = first if parts is not None else None
            exec(compile(_source(code, name, parts, module_call, self_object, closure_arg), filename, "exec"),
                 scratch)
            new_code = scratch.pop(name).__code__
            env.update(scratch)          # the dispatcher's globals now hold the inlined entry's names,
            for stale in [key for key in env if key not in scratch]:
                del env[stale]           # and no longer those of an entry that was forgotten
            target.__code__ = new_code
            # dropping those names may free a module whose death forgets an entry (a nested refresh):
            # never leave an entry that is gone inlined
            if (entries[0] if entries else None) is first:
                return

    dispatcher._framejit_refresh = refresh
    dispatcher._framejit_env = _EnvRef(env)      # (the dispatcher holds it; its globals must not: a cycle)
    _LIVE_ENVS.add(dispatcher._framejit_env)
    return dispatcher


class _EnvRef:
    """A dispatcher's globals, held weakly (a dict cannot be weakly referenced itself)."""
    __slots__ = ("env", "__weakref__")

    def __init__(self, env):
        self.env = env


# every live dispatcher's globals (each dies with its dispatcher, whose __globals__ holds its _EnvRef)
_LIVE_ENVS = weakref.WeakSet()


def _stance_home_moved(module):
    """torch's stance module was imported (dynamo_reads.py): every dispatcher reads the stance from it now."""
    for ref in list(_LIVE_ENVS):
        ref.env["__fj_stance_home"] = module


STANCE_HOME_MOVED.append(_stance_home_moved)


def _safe_name(name):
    return name if name.isidentifier() and not name.startswith("__fj") else "framejit_wrapper"
