"""A stored conversion's guards and entry, rendered into Python in a later process (no translator, no fakes).

Why this exists: a stored conversion (persist/conversions.py) cannot hold the live objects a conversion's
guards name, so the runtime (runtime/warm_start.py) writes them down as a plan of plain checks on paths from
the frame's parameters, and here the plan becomes the text of an entry function again. Each check is one
of a few kinds, each with the meaning of the guard kind it came from (translate/guards/kinds/):

  ["is_const", path, True|False|None]   path is that object          (CONST_MATCH on a singleton)
  ["const", path, [type, value]]        same type and equal value     (CONST_MATCH on an atom; floats as hex)
  ["type", path, k]                     type(path) is class k         (TYPE_MATCH)
  ["len", path, n]                      len(path) == n                (LEN_MATCH)
  ["keys", path, [atoms]]               the keys, in order, same types (DICT_KEYS)
  ["tensor", path, [k, dtype, device, shape, stride, requires_grad, inference]]  (TENSOR_MATCH; inference
                                        absent in older records: False; requires_grad means a leaf too:
                                        a conversion that depends on a non-leaf input is not stored)
  ["grad", None, bool]                  grad mode                      (GRAD_MODE)
  ["state", f, atom]                    fixed function f() == atom     (STATE_MATCH)
  ["is", path, f]                       path is fixed object f         (ID_MATCH on a long-lived object)
  ["same", path, description]           path is an object like the one described (ID_MATCH on an object
                                        with no name, CONST_MATCH on a tuple): `Same` below

Objects a check or the entry's body needs and that have no name are described instead (`Same`):
  ["single", "None"|"True"|"False"]  ["atom", [type, value]]  ["fixed", f]  ["tuple", [descriptions]]
  ["func", module, qualname, code digest]   a function of that code (a decorated function's original,
                                            reached through its wrapper's closure)
  ["code", code digest]   ["prop", [code digests of fget, fset, fdel]]
  ["mutable", "dict"|"list"]   a container the frame reads through guards of its own (a registry dict):
                               only its type, its contents are checked by those guards

Objects are named, never stored: fixed objects (`fixed`) as a module by name, a module's globals, an
attribute path from a module, or a method of the class of a path; classes (`classes`) by module, qualified
name and class_fingerprint: a class that is importable is compared by identity, one defined in a function
by its name and fingerprint. Paths are validated (names of parameters, the frame's globals and the fixed
objects only) before anything is compiled.

Checks on the modules the frame receives (`tree`) run when the module watch's counter moved or another
module is passed (as the shared entry's do: translate/guards/module_guards.py); the others (`each_call`:
arguments, buffers, global state) run on every call.
"""
import ast
import re
import sys
import types
import weakref

import torch

from .conversions import class_fingerprint, code_digest

_CALLABLE = frozenset({"getattr", "hasattr", "type", "len", "tuple", "id"})
_HELPERS = _CALLABLE | {"__fj_g", "__fj_b"}
_FIXED = re.compile(r"__fj_fixed_(\d+)$")
_ATOMS = {"int": int, "str": str, "bool": bool, "float": float}


class NotLoadable(Exception):
    """The stored conversion does not fit this process or this call: a miss."""


def check_path(text, params, fixed_count):
    """Raise NotLoadable unless `text` is one expression over the parameters, the frame's globals, the
    fixed objects and a few builtins: attribute reads, subscripts by constants, calls of those builtins, of
    fixed objects (framejit's class-dictionary lookups) and of `__getitem__`/`__contains__` (a dict
    subclass read raw),
    `not`/`or`/`and`/`in`/`==`/`is` and sets of ids (hook tables, `'forward' in m.__dict__`, distinct modules)."""
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as e:
        raise NotLoadable(f"not an expression: {text[:60]}") from e
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            m = _FIXED.match(node.id)
            if not (node.id in params or node.id in _HELPERS or m and int(m.group(1)) < fixed_count):
                raise NotLoadable(f"a path names {node.id!r}")
        elif isinstance(node, ast.Call):
            func = node.func
            if node.keywords or not (isinstance(func, ast.Name) and (func.id in _CALLABLE or _FIXED.match(func.id))
                                     or isinstance(func, ast.Attribute) and func.attr in ("__getitem__", "__contains__")):
                raise NotLoadable("a path calls something other than a builtin, a fixed object or a raw read")
        elif not isinstance(node, (ast.Expression, ast.Attribute, ast.Subscript, ast.Constant, ast.Load, ast.UnaryOp,
                                   ast.Not, ast.BoolOp, ast.Or, ast.And, ast.Compare, ast.In, ast.NotIn, ast.Eq, ast.NotEq,
                                   ast.Is, ast.IsNot, ast.Tuple, ast.Set)):
            raise NotLoadable(f"a path holds {type(node).__name__}")
    return text


CALL = "__fj_call__"           # the body's graph call, made again at load from the inputs' paths
_BODY_NAMES = frozenset({"__fj_cl", "__fj_g", "__fj_b", "__fj_MISS", "__fj_d", "__fj_rng", "__fj_kept", CALL,
                         "setattr", "delattr", "getattr", "type", "len", "tuple", "id", "Exception", "set", "list",
                         "dict"})
_BODY_NAME = re.compile(r"__fj_(o|v)(\d+)$|__fj_c\d+$")


def check_body(lines, n_outputs, params, fixed_count, consts):
    """The entry's body after its guards (the graph call as the line `__fj_call__`, the side effects, the
    result rebuilt, a raising graph's handler): one block of statements that names only graph outputs, its
    own temporaries, the stored constants (`consts`), the fixed objects, the parameters and a few builtins."""
    if not all(isinstance(line, str) and "\n" not in line for line in lines) or \
            sum(line.strip() == CALL for line in lines) != 1:
        raise NotLoadable("a malformed body")
    try:
        tree = ast.parse("def __fj_body():\n" + "".join(f"    {line}\n" for line in lines))
    except SyntaxError as e:
        raise NotLoadable("the body does not parse") from e
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            name, m = node.id, _BODY_NAME.match(node.id)
            fixed = _FIXED.match(name)
            ok = name in _BODY_NAMES or name in params or bool(fixed and int(fixed.group(1)) < fixed_count)
            if not ok and m is not None:
                ok = int(m.group(2)) < n_outputs if m.group(1) == "o" else m.group(1) == "v" or name in consts
            if not ok:
                raise NotLoadable(f"the body names {name!r}")
    return lines


def atom(value):
    """A constant as JSON ([type, value]), or None when it is not one a stored check may hold."""
    if type(value) is float:
        return None if value != value else ["float", value.hex()]
    if type(value) in (int, str, bool):
        return [type(value).__name__, value]
    if isinstance(value, torch.dtype):
        return ["dtype", str(value).replace("torch.", "")]
    return None


def atom_value(a):
    kind, value = a
    if kind == "float":
        return float.fromhex(value)
    if kind == "dtype":
        dtype = getattr(torch, value, None)
        if not isinstance(dtype, torch.dtype):
            raise NotLoadable(f"no dtype {value}")
        return dtype
    if kind not in _ATOMS or type(value) is not _ATOMS[kind] and not (kind == "int" and type(value) is int):
        raise NotLoadable(f"a constant of kind {kind}")
    return value


def resolve_named(module, qualname):
    """The object at `module`.`qualname` in this process, without importing anything, or None."""
    obj = sys.modules.get(module)
    if obj is None or "<locals>" in qualname:
        return None
    for part in qualname.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


class ClassCheck:
    """Is a class the stored one? Importable classes by identity (bound into the text); a class defined
    inside a function by name and fingerprint, answered once per class object."""

    def __init__(self, ref):
        self.module, self.qualname, self.fingerprint = ref
        self.known = weakref.WeakKeyDictionary()
        resolved = resolve_named(self.module, self.qualname)
        self.exact = resolved if isinstance(resolved, type) and self._same(resolved) else None

    def _same(self, cls):
        return (cls.__module__, cls.__qualname__) == (self.module, self.qualname) and \
            class_fingerprint(cls) == self.fingerprint

    def __call__(self, cls):
        ok = self.known.get(cls)
        if ok is None:
            ok = self.known[cls] = self._same(cls)
        return ok


def render_check(item, env, classes, native_tensor=None, packed=()):
    """The check as an expression. `native_tensor(dtype, device, shape, stride, requires_grad, inference)`,
    when given, is (check, spec) for one native call testing an exact torch.Tensor so
    (translate/guards/tensor_words.py's input_check, what a converted entry uses), or None. `packed` names the
    frame's own *args and **kwargs (an exact tuple and dict): their length and keys are tested without a call."""
    kind, path, value = item
    e = f"({path})" if path is not None else None
    if path in packed and kind == "len" and int(value) == 0:      # the frame's *args: an exact tuple
        return f"not {path}"
    if path in packed and kind == "keys" and _same_atoms is not None:     # its **kwargs: an exact dict
        return f"{_bind(env, _same_atoms)}([*{path}], {_bind(env, tuple(atom_value(a) for a in value))})"
    if kind == "is_const":
        if value not in (True, False, None):
            raise NotLoadable("is_const of a non-singleton")
        return f"{e} is {value!r}"
    if kind == "const":
        name = _bind(env, atom_value(value))
        return f"type({e}) is {value[0]} and {e} == {name}"
    if kind == "type":
        return _class_test(f"type({e})", value, env, classes)
    if kind == "len":
        return f"len({e}) == {int(value)}"
    if kind == "keys":
        keys = tuple(atom_value(a) for a in value)
        return f"{_bind(env, _same_atoms or _same_keys)}(tuple({e}.keys()), {_bind(env, keys)})"
    if kind == "tensor":
        k, dtype, device, shape, stride, requires_grad, *inference = value
        inference = bool(inference[0]) if inference else False
        dtype = atom_value(["dtype", dtype])
        native = native_tensor(dtype, torch.device(device), tuple(shape), tuple(stride), bool(requires_grad),
                               inference) \
            if native_tensor is not None and classes[int(k)].exact is torch.Tensor else None
        if native is not None:
            return f"{_bind(env, native[0])}({e}, {_bind(env, native[1])})"
        head = _class_test(f"type({e})", k, env, classes)
        where = f"{e}.is_cpu" if device == "cpu" else f"{e}.device == {_bind(env, torch.device(device))}"
        return (f"{head} and {e}.dtype is {_bind(env, dtype)} and {where} and {e}.shape == "
                f"{_bind(env, torch.Size(shape))} and {e}.stride() == {_bind(env, tuple(stride))} and "
                f"{e}.requires_grad is {bool(requires_grad)!r}{f' and {e}.is_leaf' if requires_grad else ''} and "
                f"{e}.is_inference() is {inference!r}")
    if kind == "grad":
        return f"{_bind(env, torch.is_grad_enabled)}() is {bool(value)!r}"
    if kind == "state":
        f, expected = value
        return f"{_fixed(f)}() == {_bind(env, atom_value(expected))}"
    if kind == "is":
        return f"{e} is {_fixed(value)}"
    if kind == "same":
        return f"{_bind(env, Same(value, env))}({e})"
    raise NotLoadable(f"a check of kind {kind!r}")


class Same:
    """Is an object like the described one (module docstring)? The last object that passed is kept, so a
    check on a long-lived object (a function in a module) costs one identity test after the first call."""

    __slots__ = ("test", "last")

    def __init__(self, description, env):
        self.test, self.last = tester(description, env), _NOTHING

    def __call__(self, obj):
        if obj is self.last:
            return True
        if self.test(obj):
            if type(obj) not in (dict, list):      # a mutable one may be replaced by an equal-typed other
                self.last = obj
            return True
        return False


_NOTHING = object()


def tester(d, env):
    """A predicate for description `d` (fixed objects are read from `env`, already resolved)."""
    kind = d[0]
    if kind == "single":
        expected = {"None": None, "True": True, "False": False}[d[1]]
        return lambda obj: obj is expected
    if kind == "atom":
        value = atom_value(d[1])
        if isinstance(value, torch.dtype):
            return lambda obj: obj is value
        return lambda obj: type(obj) is type(value) and obj == value
    if kind == "fixed":
        expected = env[_fixed(d[1])]
        return lambda obj: obj is expected
    if kind == "tuple":
        items = [tester(x, env) for x in d[1]]
        return lambda obj: type(obj) is tuple and len(obj) == len(items) and all(t(x) for t, x in zip(items, obj))
    if kind == "func":
        module, qualname, digest = d[1], d[2], d[3]
        return lambda obj: (type(obj) is types.FunctionType and obj.__module__ == module and
                            obj.__qualname__ == qualname and code_digest(obj.__code__) == digest)
    if kind == "code":
        return lambda obj: type(obj) is types.CodeType and code_digest(obj) == d[1]
    if kind == "prop":
        digests = list(d[1])
        return lambda obj: type(obj) is property and [function_digest(f) for f in (obj.fget, obj.fset, obj.fdel)] == digests
    if kind == "mutable":
        cls = {"dict": dict, "list": list}[d[1]]
        return lambda obj: type(obj) is cls
    raise NotLoadable(f"a description of kind {kind!r}")


def function_digest(f):
    """A property's accessor as text: its code's digest, '-' for none, its kind for a builtin."""
    if f is None:
        return "-"
    if isinstance(f, types.FunctionType):
        return code_digest(f.__code__)
    return "builtin:" + type(f).__qualname__ + ":" + str(getattr(f, "__qualname__", ""))


def _fixed(i):
    return f"__fj_fixed_{int(i)}"


def _class_test(expr, k, env, classes):
    check = classes[int(k)]
    if check.exact is not None:
        return f"{expr} is {_bind(env, check.exact)}"
    return f"{_bind(env, check)}({expr})"


try:                    # the native comparison a converted entry uses for keys (framejit/_words.c)
    from .._words import same_atoms as _same_atoms
except ImportError:
    _same_atoms = None


def _same_keys(keys, expected):
    return len(keys) == len(expected) and all(type(a) is type(b) and a == b for a, b in zip(keys, expected))


def _bind(env, obj):
    name = f"__fj_k{len(env)}"
    env[name] = obj
    return name


def resolve_fixed(ref, call_env):
    """The fixed object `ref` names in this process; `call_env(expr)` evaluates a path on this call's
    arguments (a method of a class defined in a function is reached through an object of it)."""
    kind = ref[0]
    if kind == "module":
        obj = sys.modules.get(ref[1])
    elif kind == "globals":
        module = sys.modules.get(ref[1])
        obj = getattr(module, "__dict__", None)
    elif kind == "attr":
        obj = resolve_named(ref[1], ref[2])
    elif kind == "method":
        obj = type(call_env(ref[1])).__dict__.get(ref[2])
    else:
        raise NotLoadable(f"a fixed object of kind {kind!r}")
    if obj is None:
        raise NotLoadable(f"{ref} is not in this process")
    return obj


def entry_text(record, signature, call_args, env, classes, versioned=frozenset(), native_tensor=None,
               native_state=None, fast=False, packed=()):
    """The text of `__fj_guards` (the checks: those on the received modules first, only when the module watch
    moved or other modules came since they last ran, `__fj_tree`, which pins them and the graph inputs read from them,
    `__fj_m`) and of `__fj_entry` (the guards, then the stored body with the graph call made from the inputs'
    paths). The `each_call` checks whose indices are in `versioned` run in `__fj_stamped` only when
    `__fj_st.unchanged()` says a watched word moved (runtime/warm_words.py). Names the runtime binds:
    __fj_graph, __fj_MISS, __fj_known, __fj_pin, __fj_refuse, __fj_m, __fj_st, __fj_fixed_<i>, the constants
    `consts` names. `native_tensor` (render_check) and `native_state` ([(kind, function or None, expected)]
    of the grad / state checks -> (check, mask, value) for one native call, or None) render the argument
    tensors and the state as a converted entry does. Returns (the text, the guard expression, the body's lines
    after the guards), the last two as a converted entry's `_framejit_parts` hold them for the dispatcher to
    inline (runtime/dispatcher.py). With `fast`, the steady call tests what the converted entry tests, inline: the module watch's counter and the roots' ids against the pin's (`__fj_pf`: [counter when the
    tree checks passed, id of each root], `__fj_EP` the counter, `__fj_id` id) before asking `__fj_known`, and
    the stamp's words in one native call (`__fj_unchanged(*__fj_sw)`, `__fj_sw` the stamp's [addresses, words])
    before asking `__fj_st`; the member cache is read into a local, `__fj_m := __fj_mc[0]` (the pin's holder), so
    a dispatcher's copy of the names never reads a stale one. `packed`: render_check's. Raises NotLoadable for anything the plan should not hold."""
    params = set(record["params"]) | ({"__fj_cl"} if record.get("closure") else set())
    nfixed = len(record["fixed"])
    roots = list(record["module_roots"])
    if not set(roots) <= params:
        raise NotLoadable("a module root is not a parameter")
    inputs = [check_path(p, params, nfixed) for p in record["inputs"]]
    members = [p for p in inputs if reads_only(p, roots)]
    member_at = {p: f"__fj_m[{i}]" for i, p in enumerate(members)}
    each, stamped, fused = [], [], set()
    states = [(i, item) for i, item in enumerate(record["each_call"]) if item[0] in ("grad", "state")]
    if states and native_state is not None:
        pieces = [("grad", None, bool(item[2])) if item[0] == "grad" else
                  ("state", env.get(_fixed(item[2][0])), atom_value(item[2][1])) for _, item in states]
        found = native_state(pieces)
        if found is not None:
            each.append(f"{_bind(env, found[0])}({int(found[1])}, {int(found[2])})")
            fused = {i for i, _ in states}
    for i, item in enumerate(record["each_call"]):
        if i in fused:
            continue
        (stamped if i in versioned else each).append(render_check(_checked(item, params, nfixed, member_at), env,
                                                                  classes, native_tensor, packed))
    tree = [render_check(_checked(item, params, nfixed, {}), env, classes) for item in record["tree"]]
    watch = [check_path(p, params, nfixed) for p in record["watch"]]
    n = int(record["n_outputs"])
    body = check_body(list(record["body"]), n, params, nfixed, set(record.get("consts", {})))
    roots_tuple = "(" + "".join(f"{r}, " for r in roots) + ")"
    src = [f"def __fj_tree({signature}):",
           "    try:",
           f"        __fj_passed = {' and '.join(tree) or 'True'}",
           "    except Exception:",
           "        __fj_passed = False",
           "    if not __fj_passed:",
           f"        __fj_refuse({roots_tuple})",
           "        return False",
           f"    __fj_pin({roots_tuple}, [{', '.join(watch)}], ({''.join(p + ', ' for p in members)}))",
           "    return True"]
    pinned = "".join(f" and __fj_id({r}) == __fj_pf[{i + 1}]" for i, r in enumerate(roots))
    test = ([("__fj_EP[0] == __fj_pf[0]" + pinned + " or " if fast else "") +
             f"(__fj_v := __fj_known({roots_tuple})) == 1 or __fj_v == -1 and __fj_tree({call_args})"]
            if roots else []) + (["(__fj_m := __fj_mc[0]) is not None"] if roots and fast else []) + each
    if stamped:
        src += [f"def __fj_stamped({signature}):", "    __fj_st.collect(locals())",
                f"    return {' and '.join(stamped)} and __fj_st.commit()"]
        test.append(("__fj_unchanged(__fj_sw[0], __fj_sw[1]) or " if fast else "") +
                    f"__fj_st.unchanged() or __fj_stamped({call_args})")
    guards = " and ".join(f"({t})" for t in test) or "True"
    src += [f"def __fj_guards({signature}):", f"    return {guards}"]
    src += [f"def __fj_entry({signature}):", "    try:",      # the guards inline: no call on the steady path
            f"        if not ({guards}):", "            return __fj_MISS",
            "    except Exception:", "        return __fj_MISS"]
    call = f"__fj_graph({_graph_arguments(inputs, members)})"
    call = "".join(f"__fj_o{i}, " for i in range(n)) + "= " + call if n else call
    lines = [line.replace(CALL, call) if line.strip() == CALL else line for line in body]
    src += ["    " + line for line in lines]
    return "\n".join(src) + "\n", guards, lines


def _graph_arguments(inputs, members):
    """The graph call's arguments: the inputs' paths, or, when consecutive members of the member cache run
    three or more, one tuple made of the other inputs and that run (`__fj_m` itself when it is all of it, a
    slice of it otherwise), starred: `*((x, ) + __fj_m)`, as the converted entry passes its parameters."""
    singles, parts, k, i = [], [], 0, 0
    while i < len(inputs):
        if inputs[i] not in members:
            singles.append(inputs[i])
            i += 1
            continue
        j = i
        while j < len(inputs) and inputs[j] in members:
            j += 1
        start, stop = k, k + (j - i)
        if stop - start < 3:
            singles += [f"__fj_m[{m}]" for m in range(start, stop)]
        else:
            if singles:
                parts.append("(" + "".join(f"{a}, " for a in singles) + ")")
                singles = []
            parts.append("__fj_m" if (start, stop) == (0, len(members)) else f"__fj_m[{start}:{stop}]")
        k, i = stop, j
    if not parts:
        return ", ".join(singles)
    if singles:
        parts.append("(" + "".join(f"{a}, " for a in singles) + ")")
    return f"*({' + '.join(parts)})"


def reads_only(path, roots):
    """Does `path` read from the parameters in `roots` only (and at least one)?"""
    names = {n.id for n in ast.walk(ast.parse(path, mode="eval"))
             if isinstance(n, ast.Name) and n.id not in _CALLABLE}
    return bool(names) and names <= set(roots)


def _checked(item, params, nfixed, member_at):
    if not (isinstance(item, list) and len(item) == 3 and isinstance(item[0], str)):
        raise NotLoadable("a malformed check")
    if item[1] is not None:
        check_path(item[1], params, nfixed)
        if item[1] in member_at:
            return [item[0], member_at[item[1]], item[2]]
    return item
