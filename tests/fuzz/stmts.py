"""Statements: one function per family, each writing one statement (or block) valid in the scope.

`statement(g)` picks a family by weight; a family returns False when nothing in scope fits it, and
another is tried. Families cover tensor assignment and in-place writes (through names, views,
attributes, buffers, globals), Python scalars, lists/dicts/sets/tuples, objects (attributes set,
deleted, set through __dict__/setattr/properties/methods), the nn.Module, globals and a module's
attributes, prints, control flow (if/for/while, break/continue, early return), exceptions
(try/except/finally, raise, assert, shape errors, user context managers), grad-mode blocks,
class attributes, nested functions (closures,
nonlocal, lambdas, generators), graph breaks (.tolist(), .numpy(), int(tensor)), backward and
autograd.grad, RNG draws, aliases and del.
"""
from . import stmts_v2, stmts_v3
from .exprs import (any_value, available, condition, names_of, objects, py_bool, py_float, py_int, py_str,
                    shapes_here, sure_attr, tensor, value_of)
from .kinds import (BATCH, BOOL, COLS, FLOAT, INT, MAT, SCALAR, STR, VEC, DictK, FuncK, ListK, NetK, ObjK,
                    SetK, TensorK, TupleK, writable)

KEYS = "abcd"


def key(g):
    return repr(g.rng.choice(KEYS))


def _pick(g, items):
    return g.rng.choice(items) if items else None


def _mutable_of(g, test):
    return [(n, k) for n, k in g.scope.mutable().items() if test(k)]


def _rebindable_of(g, test):
    names = dict(g.scope.rebindable())
    for name in g.rebindable_globals():
        names[name] = g.scope.lookup(name)
    return [(n, k) for n, k in names.items() if test(k)]


def _bind_new(g, prefix, kind, text):
    name = g.fresh(prefix)
    g.emit(f"{name} = {text}")
    g.scope.bind(name, kind)
    return name


def _adds_sure(g):
    """Attributes set here are surely set afterwards only at the top of the entry function."""
    return g.scope is g.fn_scope and g.nested == 0


# ---------------------------------------------------------------- tensors


def assign_tensor(g):
    shape = g.rng.choice(shapes_here(g))
    text, kind = tensor(g, shape)
    _bind_new(g, "t", kind, text)
    return True


def update_tensor(g):
    target = _pick(g, _rebindable_of(g, lambda k: isinstance(k, TensorK) and k.dtype == "f"))
    if not target:
        return False
    name, kind = target
    value = value_of(g, kind)
    g.emit(f"{name} = {value}" if g.rng.random() < 0.5 else f"{name} = {name} * 0.5 + {value}")
    return True


def write_targets(g):
    """(text, kind) of tensors an in-place op may write here: names, attributes, list/dict items."""
    no_grad = g.scope.no_grad
    out = [(n, k) for n, k in g.scope.mutable().items() if writable(k, no_grad)]
    for name in objects(g, "Box"):
        kind = g.attrs["Box"].sure.get("w")
        if kind and writable(kind, no_grad) and not g.scope.is_frozen(name):
            out.append((f"{name}.w", kind))
    for name in objects(g, "Point"):
        kind = g.attrs["Point"].sure["b"]
        if writable(kind, no_grad):
            out.append((f"{name}.b", kind))
    for name, _ in names_of(g, lambda k: isinstance(k, NetK)):
        out.append((f"{name}.buf", TensorK(VEC)))
        if no_grad:
            out.append((f"{name}.lin.bias", TensorK(VEC, grad=True)))
    return out


def inplace(g):
    target = _pick(g, write_targets(g))
    if not target:
        return False
    text, kind = target
    r = g.rng
    shape = kind.shape
    same = lambda: value_of(g, kind.like(grad=False))                   # noqa: E731
    ops = [lambda: f"{text}.add_({same()})", lambda: f"{text}.mul_({py_float(g, 1)})",
           lambda: f"{text}.sub_({same()}, alpha=0.5)", lambda: f"{text}.clamp_(-2.0, 2.0)",
           lambda: f"{text}.zero_()", lambda: f"{text}.fill_({py_float(g, 1)})", lambda: f"{text}.copy_({same()})",
           lambda: f"{text}.abs_()", lambda: f"{text}.tanh_()", lambda: f"{text}.mul_({same()})",
           lambda: f"torch.mul({same()}, 2.0, out={text})", lambda: f"{text}.masked_fill_({text} < 0, 0.0)",
           lambda: f"{text}.addcmul_({same()}, {same()}, value=0.1)"]
    if text in g.scope.rebindable() or text in g.rebindable_globals():
        ops.append(lambda: f"{text} += {same()}")          # in place, and a rebinding of the name
        ops.append(lambda: f"{text} *= {py_float(g, 1)}")
    if shape in (VEC, MAT, BATCH):
        ops.append(lambda: f"{text}[{r.randrange(4) if shape != BATCH else 0}] = {value_of(g, TensorK(shape[1:]))}"
                   if shape != VEC else f"{text}[{r.randrange(4)}] = {py_float(g, 1)}")
        ops.append(lambda: f"{text}[{text} > 0] = {py_float(g, 1)}")
    if shape in (MAT, BATCH):
        ops.append(lambda: f"{text}[:, {r.randrange(4)}] = {py_float(g, 1)}")
        ops.append(lambda: f"{text}[:, 1:3] *= 2")
    if shape == MAT and "." not in text and "[" not in text:
        ops.append(lambda: f"{text}.t_()")
    if shape == VEC:
        ops.append(lambda: f"{text}[1:3] = {text}[:2].clone()")
        ops.append(lambda: f"{text}.index_add_(0, torch.tensor([0, 2]), torch.ones(2))")
    g.emit(r.choice(ops)())
    return True


def view_alias(g):
    """A view or an alias of a writable tensor, written through later (the base must see it)."""
    target = _pick(g, [(n, k) for n, k in g.scope.mutable().items()
                       if writable(k, g.scope.no_grad) and k.shape in (VEC, MAT, BATCH)])
    if not target:
        return False
    name, kind = target
    r = g.rng
    if kind.shape == VEC:
        text, shape = r.choice([(f"{name}[1:3]", ("2",)), (f"{name}.view(2, 2)", ("2", "2")), (name, VEC),
                                (f"{name}[:]", VEC)])
    elif kind.shape == MAT:
        text, shape = r.choice([(f"{name}[0]", VEC), (f"{name}.t()", MAT), (f"{name}[:, 2]", VEC), (name, MAT),
                                (f"{name}.diagonal()", VEC)])
    else:
        text, shape = r.choice([(f"{name}[0]", VEC), (f"{name}[:, 0]", COLS), (name, BATCH)])
    alias = g.fresh("v")
    g.emit(f"{alias} = {text}")
    op = r.choice([".add_(1.0)", ".mul_(-1.0)", ".zero_()", "[0] = 5.0" if shape else ".add_(1.0)"])
    if shape in (("2",), ("2", "2")):
        g.emit(f"{alias}{op}")
        return True
    g.scope.bind(alias, kind.like(shape=shape))
    g.emit(f"{alias}{op}")
    return True


# ---------------------------------------------------------------- Python scalars and containers


def assign_scalar(g):
    kind = g.rng.choice([INT, INT, FLOAT, BOOL, STR])
    _bind_new(g, {"int": "k", "float": "fl", "bool": "b", "str": "s"}[kind.name], kind, value_of(g, kind))
    return True


def update_scalar(g):
    target = _pick(g, _rebindable_of(g, lambda k: k in (INT, FLOAT, BOOL, STR)))
    if not target:
        return False
    name, kind = target
    r = g.rng
    if kind == INT:
        g.emit(r.choice([f"{name} += {py_int(g, 1)}", f"{name} = {py_int(g)}", f"{name} -= 1",
                         f"{name} = ({name} * 3 + 1) % 11"]))
    elif kind == FLOAT:
        g.emit(r.choice([f"{name} *= 0.5", f"{name} = {py_float(g)}", f"{name} += {py_float(g, 1)}"]))
    elif kind == BOOL:
        g.emit(r.choice([f"{name} = not {name}", f"{name} = {py_bool(g)}"]))
    else:
        g.emit(r.choice([f"{name} += 'x'", f"{name} = {py_str(g)}"]))
    return True


TENSOR_LIST = ListK(TensorK(VEC))


def new_container(g):
    r = g.rng
    roll = r.random()
    ints = [n for n, k in names_of(g, lambda k: k == ListK(INT))]
    if roll < 0.3:
        text = r.choice([lambda: "[" + ", ".join(py_int(g, 1) for _ in range(r.randint(0, 4))) + "]",
                         lambda: f"list(range(min(abs({py_int(g, 1)}), 5)))",
                         lambda: f"[v * 2 for v in {r.choice(ints)} if v % 2 == 0]" if ints else "[1, 2]",
                         lambda: f"sorted({r.choice(ints)}, reverse=True)" if ints else "[3]",
                         lambda: f"{r.choice(ints)}[:2] + [{py_int(g, 1)}]" if ints else "[0]",
                         lambda: f"[len(str(v)) for v in range(3)]"])()
        _bind_new(g, "L", ListK(INT), text)
    elif roll < 0.5:
        kind = TensorK(VEC, grad=r.random() < 0.3 and not g.scope.no_grad)
        mats = [n for n, k in g.scope.visible().items() if isinstance(k, TensorK) and k.shape == MAT and k.dtype == "f"]
        text = r.choice([lambda: "[" + ", ".join(value_of(g, kind) for _ in range(r.randint(1, 3))) + "]",
                         lambda: f"list(torch.unbind({r.choice(mats)}))" if mats else f"[{value_of(g, kind)}]",
                         lambda: f"[{value_of(g, kind)} * i for i in range(3)]"])()
        if "unbind" in text:
            kind = kind.like(grad=True, fixed=True)      # views of a matrix that may need grad
        _bind_new(g, "tl", ListK(kind), text)
    elif roll < 0.75:
        if r.random() < 0.5:
            pairs = ", ".join(f"{k!r}: {py_int(g, 1)}" for k in r.sample(KEYS, r.randint(1, 3)))
            _bind_new(g, "di", DictK(INT), f"{{{pairs}}}")
        else:
            kind = TensorK(VEC, grad=False)
            pairs = ", ".join(f"{k!r}: {value_of(g, kind)}" for k in r.sample(KEYS, r.randint(1, 3)))
            _bind_new(g, "dt", DictK(kind), f"{{{pairs}}}")
    elif roll < 0.88:
        text = r.choice([lambda: "{" + ", ".join(py_int(g, 1) for _ in range(r.randint(1, 3))) + "}",
                         lambda: f"set({r.choice(ints)})" if ints else "{1}",
                         lambda: f"{{v % 3 for v in {r.choice(ints)}}}" if ints else "{2, 3}"])()
        _bind_new(g, "st", SetK(), text)
    else:
        kind = TupleK((INT, TensorK(VEC, grad=False)))
        _bind_new(g, "tp", kind, f"({py_int(g, 1)}, {value_of(g, kind.items[1])})")
    return True


def mutate_container(g):
    target = _pick(g, _mutable_of(g, lambda k: isinstance(k, (ListK, DictK, SetK))))
    if not target:
        return False
    name, kind = target
    r = g.rng
    if isinstance(kind, ListK):
        item = lambda: value_of(g, kind.item)          # noqa: E731
        ops = [lambda: f"{name}.append({item()})", lambda: f"{name}.insert(0, {item()})",
               lambda: f"if {name}:\n    {name}.pop()", lambda: f"if {name}:\n    {name}[0] = {item()}",
               lambda: f"if {name}:\n    del {name}[-1]", lambda: f"{name}.reverse()",
               lambda: f"{name} += [{item()}]" if name in g.scope.rebindable() or "." in name else f"{name}.extend([{item()}])",
               lambda: f"{name}.extend([{item()}, {item()}])", lambda: f"{name}[:] = {name}[::-1]",
               lambda: f"if len({name}) > 1:\n    {name}[0], {name}[1] = {name}[1], {name}[0]"]
        if kind.item == INT:
            ops += [lambda: f"{name}.sort()", lambda: f"{name}.sort(reverse=True)", lambda: f"{name}.clear()",
                    lambda: _guarded(f"3 in {name}", f"{name}.remove(3)")]
    elif isinstance(kind, DictK):
        value = lambda: value_of(g, kind.value)        # noqa: E731
        ops = [lambda: f"{name}[{key(g)}] = {value()}", lambda: f"{name}.pop({key(g)}, None)",
               lambda: f"{name}.setdefault({key(g)}, {value()})", lambda: f"{name}.update({{{key(g)}: {value()}}})",
               lambda: _guarded_del(name, key(g)), lambda: f"{name}.update({{{key(g)}: {value()}}})"]
        if name in g.scope.rebindable():
            ops.append(lambda: f"{name} |= {{{key(g)}: {value()}}}")
        if kind.value == INT:
            ops.append(lambda: f"{name}[{key(g)}] = {name}.get({key(g)}, 0) + 1")
    else:
        ops = [lambda: f"{name}.add({py_int(g, 1)})", lambda: f"{name}.discard({py_int(g, 1)})",
               lambda: f"{name}.update([{py_int(g, 1)}, 7])", lambda: f"{name}.clear()"]
    _emit_lines(g, r.choice(ops)())
    return True


def _guarded(cond, stmt):
    return f"if {cond}:\n    {stmt}"


def _guarded_del(name, k):
    return f"if {k} in {name}:\n    del {name}[{k}]"


def _emit_lines(g, text):
    for line in text.split("\n"):
        g.emit(line)


def tuple_ops(g):
    r = g.rng
    pairs = {}
    for name, kind in g.scope.rebindable().items():
        pairs.setdefault(kind, []).append(name)
    swappable = [names for names in pairs.values() if len(names) >= 2]
    if swappable and r.random() < 0.5:
        a, b = r.sample(r.choice(swappable), 2)
        g.emit(f"{a}, {b} = {b}, {a}")
        return True
    tuples = names_of(g, lambda k: isinstance(k, TupleK))
    if tuples:
        name, kind = r.choice(tuples)
        first, second = g.fresh("k"), g.fresh("t")
        g.emit(f"{first}, {second} = {name}")
        g.scope.bind(first, kind.items[0])
        g.scope.bind(second, kind.items[1])
        return True
    return False


# ---------------------------------------------------------------- objects, the module, globals


def object_ops(g):
    r = g.rng
    boxes = [n for n in objects(g, "Box") if not g.scope.is_frozen(n)]
    points = [n for n in objects(g, "Point") if not g.scope.is_frozen(n)]
    cfgs = [n for n in objects(g, "Cfg") if not g.scope.is_frozen(n)]
    roll = r.random()
    if roll < 0.12 or not (boxes or points or cfgs):
        w_kind = g.attrs["Box"].sure.get("w") or g.attrs["Box"].maybe.get("w") or TensorK(VEC)
        name = _bind_new(g, "ob", ObjK("Box"), f"Box({value_of(g, w_kind)}, {py_int(g, 1)}, {py_str(g, 1)})")
        if r.random() < 0.3:
            g.emit(f"G_OBJS.append({name})")
        return True
    if boxes and roll < 0.75:
        box_op(g, r.choice(boxes))
    elif points and roll < 0.87:
        name = r.choice(points)
        attrs = g.attrs["Point"].sure
        g.emit(r.choice([f"{name}.a = {py_int(g, 1)}", f"{name}.a += 1", f"{name}.b = {value_of(g, attrs['b'])}",
                         f"setattr({name}, 'a', {py_int(g, 1)})", f"print('point', {name}.a, hasattr({name}, 'c'))",
                         f"{name}.b = ({name}.norm() if {name}.a else {name}.b).detach()"]))
    elif cfgs:
        name = r.choice(cfgs)
        choice = r.random()
        if choice < 0.2:
            _bind_new(g, "cf", ObjK("Cfg"), f"dataclasses.replace({name}, depth={py_int(g, 1)})")
        else:
            g.emit(r.choice([f"{name}.depth += 1", f"{name}.scale = {py_float(g, 1)}", f"{name}.name = {py_str(g, 1)}",
                             f"print({name})", f"print(dataclasses.asdict({name})['depth'])",
                             f"{name}.depth = {name}.depth * 2 if {name}.scale > 0.3 else 0"]))
    else:
        return False
    return True


def box_op(g, name):
    r = g.rng
    attrs = g.attrs["Box"]
    sure = attrs.sure
    ops = [lambda: f"{name}.extra = {py_int(g, 1)}", lambda: f"setattr({name}, 'extra', {py_int(g, 1)})",
           lambda: f"{name}.__dict__['extra'] = {py_int(g, 1)}", lambda: f"vars({name})['extra'] = {py_int(g, 1)}",
           lambda: f"{name}.level = {py_int(g, 1)}", lambda: f"{name}.kind = {py_str(g, 1)}",
           lambda: _guarded(f"hasattr({name}, 'extra')", f"del {name}.extra"),
           lambda: f"{name}.__dict__.pop('extra', None)",
           lambda: f"print(sorted(vars({name})))", lambda: f"print(getattr({name}, 'extra', None), {name}.kind)",
           lambda: f"{name}.__dict__.update(extra={py_int(g, 1)})", lambda: f"object.__setattr__({name}, 'extra', 3)",
           lambda: f"{name}.extra = getattr({name}, 'extra', 0) + 1"]
    if "n" in sure:
        ops += [lambda: f"{name}.n = {py_int(g, 1)}", lambda: f"{name}.n += 1", lambda: f"{name}.bump({py_int(g, 1)})",
                lambda: f"helper_note({name}, {py_int(g, 1)})", lambda: f"setattr({name}, 'n', getattr({name}, 'n') * 2)",
                lambda: f"{name}.__dict__['n'] = {name}.n - 1"] * 2
    if "w" in sure:
        ops += [lambda: f"{name}.w = {value_of(g, sure['w'])}", lambda: f"{name}.w = {name}.w * 2",
                lambda: f"setattr({name}, 'w', {value_of(g, sure['w'])})"]
        if "n" in sure:
            ops.append(lambda: f"print('total', round({name}.total.item(), 3))")
    if "items" in sure:
        ops += [lambda: f"{name}.push({py_int(g, 1)})", lambda: f"{name}.items.append({py_int(g, 1)})",
                lambda: f"{name}.items = {name}.items[-2:]"]
    if "tag" in sure:
        ops.append(lambda: f"{name}.tag = {name}.tag + 'y'")
    if g.deletes_tag:
        ops += [lambda: _guarded(f"hasattr({name}, 'tag')", f"delattr({name}, 'tag')"),
                lambda: f"{name}.__dict__.pop('tag', None)", lambda: _guarded(f"'tag' in vars({name})", f"del {name}.tag")]
    text = r.choice(ops)()
    _emit_lines(g, text)
    if "extra" in text and ("= " in text or "update" in text or "setattr" in text) and "del " not in text \
            and "pop" not in text and "print" not in text:
        (sure if _adds_sure(g) else attrs.maybe)["extra"] = INT
    if "del " in text or "delattr" in text or "pop(" in text:
        for attr in ("tag", "extra"):
            if f"'{attr}'" in text or f".{attr}" in text:
                attrs.maybe[attr] = sure.pop(attr, attrs.maybe.get(attr, STR if attr == "tag" else INT))


def net_ops(g):
    nets = [n for n, _ in names_of(g, lambda k: isinstance(k, NetK))]
    if not nets:
        return False
    name = g.rng.choice(nets)
    r = g.rng
    ops = [lambda: f"{name}.calls += 1", lambda: f"{name}.scale = {py_float(g, 1)}",
           lambda: f"{name}.buf.add_({value_of(g, TensorK(VEC))})", lambda: f"{name}.buf.mul_(0.5)",
           lambda: f"{name}.train({py_bool(g, 1)})", lambda: f"{name}.eval()", lambda: f"{name}.extra = {py_int(g, 1)}",
           lambda: f"with torch.no_grad():\n    {name}.lin.bias.add_(0.1)",
           lambda: f"{name}.buf = {name}.buf + 1.0", lambda: f"print('net', {name}.calls, {name}.training)",
           lambda: f"{name}.lin.weight.requires_grad_({py_bool(g, 1)})" if r.random() < 0.3 else f"{name}.calls = 0",
           lambda: f"{name}.zero_grad()", lambda: f"print('params', sum(p.numel() for p in {name}.parameters()))",
           lambda: f"for p_ in {name}.parameters():\n    print('p', tuple(p_.shape), p_.requires_grad)",
           lambda: f"{name}.scale = {name}.scale * 0.5 if {name}.training else 1.0",
           lambda: f"print(sorted({name}.state_dict()))", lambda: f"setattr({name}, 'scale', {py_float(g, 1)})"]
    _emit_lines(g, r.choice(ops)())
    return True


def global_ops(g):
    r = g.rng
    writable_globals = g.rebindable_globals()
    ops = [lambda: f"G_LIST.append({py_int(g, 1)})", lambda: f"G_D[{key(g)}] = {py_int(g, 1)}",
           lambda: "G_BOX.n += 1", lambda: f"G_T.add_({value_of(g, TensorK(VEC))})",
           lambda: f"aux.hits += 1", lambda: f"aux.K = {py_int(g, 1)}", lambda: f"setattr(aux, 'note', {py_str(g, 1)})",
           lambda: f"G_LIST[:] = G_LIST[-3:]", lambda: f"G_D.pop({key(g)}, None)",
           lambda: "Box.limit = Box.limit + 1", lambda: f"helper_count({py_int(g, 1)})",
           lambda: f"print('limit', Box.limit, G_BOX.limit)", lambda: "G_LOG.append(G_NAME)"]
    if "G_COUNT" in writable_globals:
        ops += [lambda: f"G_COUNT += {py_int(g, 1)}", lambda: "G_COUNT = G_COUNT * 2 % 13"] * 2
    if "G_SCALE" in writable_globals:
        ops.append(lambda: f"G_SCALE = {py_float(g, 1)}")
    if "G_FLAG" in writable_globals:
        ops.append(lambda: "G_FLAG = not G_FLAG")
    if "G_NAME" in writable_globals:
        ops.append(lambda: f"G_NAME = {py_str(g, 1)}")
    if "G_T" in writable_globals:
        ops.append(lambda: f"G_T = {value_of(g, TensorK(VEC))}")
        ops.append(lambda: "G_T = G_T * 0.5")
    _emit_lines(g, r.choice(ops)())
    return True


# ---------------------------------------------------------------- prints and graph breaks


def print_stmt(g):
    r = g.rng
    parts = []
    for _ in range(r.randint(1, 3)):
        roll = r.random()
        if roll < 0.3:
            text, kind = tensor(g, r.choice(shapes_here(g)), 1)
            parts.append(r.choice([f"({text}).detach()", f"tuple(({text}).shape)", f"({text}).dtype"]))
        elif roll < 0.55:
            parts.append(py_int(g, 1))
        elif roll < 0.7:
            parts.append(f"round({py_float(g, 1)}, 3)")
        elif roll < 0.85:
            parts.append(py_str(g, 1))
        else:
            containers = [n for n, k in names_of(g, lambda k: k in (ListK(INT), DictK(INT), SetK()))]
            parts.append(f"sorted({r.choice(containers)})" if containers else py_bool(g, 1))
    tail = r.choice(["", "", ", sep='|'", ", end=';\\n'"])
    g.emit(f"print({repr(g.fresh('p'))}, {', '.join(parts)}{tail})")
    return True


def break_stmt(g):
    """Graph breaks that leave a value behind: .tolist(), .numpy(), int()/float() of a tensor."""
    r = g.rng
    text, _ = tensor(g, r.choice([VEC, MAT, SCALAR]), 1)
    roll = r.random()
    if roll < 0.3:
        _bind_new(g, "fl", FLOAT, f"round(float(sum(({text}).detach().flatten().tolist())), 3)")
    elif roll < 0.5:
        _bind_new(g, "fl", FLOAT, f"round(float(({text}).detach().numpy().sum()), 3)")
    elif roll < 0.7:
        _bind_new(g, "k", INT, f"int(({text}).detach().abs().sum().clamp(max=20))")
    elif roll < 0.85:
        _bind_new(g, "L", ListK(INT), f"[int(v > 0) for v in ({text}).detach().flatten().tolist()]")
    else:
        _bind_new(g, "t", TensorK(VEC), f"opaque({tensor(g, VEC, 1)[0]}).detach()")
    return True


# ---------------------------------------------------------------- control flow


def if_stmt(g):
    cond = condition(g)
    if g.rng.random() < 0.1:
        name = g.fresh("k")
        cond = f"({name} := {py_int(g, 1)}) > 2"       # binds name, whichever branch runs
        g.scope.bind(name, INT)
    with g.block(f"if {cond}:"):
        g.statements(g.rng.randint(1, 3))
    if g.rng.random() < 0.4:
        with g.block(f"elif {condition(g)}:" if g.rng.random() < 0.3 else "else:"):
            g.statements(g.rng.randint(1, 2))
    return True


def for_stmt(g):
    r = g.rng
    roll = r.random()
    lists = [(n, k) for n, k in names_of(g, lambda k: isinstance(k, ListK))]
    dicts = [(n, k) for n, k in names_of(g, lambda k: isinstance(k, DictK))]
    var = g.fresh("i")
    if roll < 0.35 or not (lists or dicts):
        header = f"for {var} in range({r.choice(['2', '3', f'min(abs({py_int(g, 1)}), 3)'])}):"
        binds = {var: INT}
        frozen = set()
    elif roll < 0.65 and lists:
        name, kind = r.choice(lists)
        if r.random() < 0.5:
            header = f"for {var} in list({name}):"
            binds = {var: kind.item}
        else:
            item = g.fresh("e")
            header = f"for {var}, {item} in enumerate({name}[:]):"
            binds = {var: INT, item: kind.item}
        frozen = {name}
    elif roll < 0.8 and dicts:
        name, kind = r.choice(dicts)
        value = g.fresh("val")
        header = f"for {var}, {value} in list({name}.items()):" if r.random() < 0.6 else \
            f"for {var}, {value} in sorted({name}.items()):"
        binds = {var: STR, value: kind.value}
        frozen = {name}
    else:
        batches = [n for n, k in names_of(g, lambda k: isinstance(k, TensorK) and k.shape in (BATCH, MAT)
                                           and k.dtype == "f")]
        if not batches:
            return False
        name = r.choice(batches)
        kind = g.scope.lookup(name)
        header = f"for {var} in {name}:"
        binds = {var: kind.like(shape=VEC, fixed=kind.fixed or (g.scope.no_grad and kind.grad))}
        frozen = set()
    with g.block(header, loop=True) as scope:
        for n, k in binds.items():
            scope.bind(n, k)
        scope.frozen |= set(binds) | frozen
        g.statements(r.randint(1, 3))
        if r.random() < 0.25:
            with g.block(f"if {py_bool(g, 1)}:"):
                g.emit(r.choice(["break", "continue"]))
    return True


def while_stmt(g):
    counter = g.fresh("w")
    g.emit(f"{counter} = {g.rng.randint(1, 3)}")
    with g.block(f"while {counter} > 0:", loop=True) as scope:
        scope.frozen.add(counter)
        g.emit(f"{counter} -= 1")
        g.statements(g.rng.randint(1, 2))
    return True


RAISERS = [            # (statement, the exception classes a handler may name to catch it)
    (lambda g: f"raise FuzzError('stop ' + str({py_int(g, 1)}))", ["FuzzError", "Exception"]),
    (lambda g: f"raise ValueError({py_str(g, 1)})", ["ValueError", "(RuntimeError, ValueError)", "Exception"]),
    (lambda g: "_ = G_D['missing']", ["KeyError", "LookupError", "(KeyError, IndexError)"]),
    (lambda g: "_ = G_LIST[100]", ["IndexError", "LookupError", "(KeyError, IndexError)"]),
    (lambda g: f"_ = {tensor(g, VEC, 1)[0]} @ torch.ones(3, 2)", ["RuntimeError", "Exception"]),
    (lambda g: f"_ = {tensor(g, MAT, 1)[0]}.view(5, 3)", ["RuntimeError", "(RuntimeError, ValueError)"]),
    (lambda g: f"_ = helper_check({py_int(g, 1)} * 20)", ["FuzzError", "Exception"]),
    (lambda g: "_ = int('x')", ["ValueError", "Exception"]),
    (lambda g: f"_ = 1 / ({py_int(g, 1)} * 0)", ["ZeroDivisionError", "ArithmeticError"]),
    (lambda g: f"_ = torch.cat([{tensor(g, VEC, 1)[0]}, torch.ones(2, 2)])", ["RuntimeError", "Exception"]),
    (lambda g: "_ = G_BOX.missing_attr", ["AttributeError", "Exception"]),
    (lambda g: f"assert {py_bool(g, 1)}, 'assertion ' + {py_str(g, 1)}", ["AssertionError", "Exception"]),
    (lambda g: f"_ = {tensor(g, VEC, 1)[0]} + torch.ones(3)", ["RuntimeError", "Exception"]),
]
HANDLERS = sorted({h for _, hs in RAISERS for h in hs})


def raising(g):
    """(statement text, handlers that catch it)."""
    text, handlers = g.rng.choice(RAISERS)
    return text(g), handlers


def try_stmt(g):
    r = g.rng
    catching = HANDLERS
    with g.block("try:", in_try=True):
        g.statements(r.randint(0, 2))
        if r.random() < 0.75:
            text, catching = raising(g)
            if r.random() < 0.5:
                with g.block(f"if {py_bool(g, 1)}:"):
                    _emit_lines(g, text)
            else:
                _emit_lines(g, text)
        g.statements(r.randint(0, 1))
    handlers = r.randint(0 if r.random() < 0.2 else 1, 2)
    for _ in range(handlers):
        exc = g.fresh("err")
        with g.block(f"except {r.choice(catching if r.random() < 0.8 else HANDLERS)} as {exc}:", in_try=True):
            g.emit(r.choice([f"print('caught', type({exc}).__name__)", f"print('caught', type({exc}).__name__, {exc})",
                             f"print('caught', str({exc})[:40])", f"print('caught', {exc}.args[:1])"]))
            g.statements(r.randint(0, 1))
            if r.random() < 0.1:
                g.emit("raise")
    if handlers and r.random() < 0.2:
        with g.block("else:", in_try=True):
            g.statements(1)
    if not handlers or r.random() < 0.35:
        with g.block("finally:", in_try=True):
            g.statements(r.randint(1, 2))
    return True


def raise_stmt(g):
    with g.block(f"if {py_bool(g, 1)}:"):
        _emit_lines(g, raising(g)[0])
    return True


def grad_block(g):
    r = g.rng
    header, no_grad, grad_on = r.choice([("with torch.no_grad():", True, False), ("with torch.no_grad():", True, False),
                                         ("with torch.enable_grad():", False, True),
                                         (f"with torch.set_grad_enabled({py_bool(g, 1)}):", False, False)])
    with g.block(header, no_grad=no_grad, grad_on=grad_on):
        g.statements(r.randint(1, 3))
    return True


def manager_block(g):
    """A user context manager (Tracker: may swallow the exception) or contextlib.suppress around code
    that may raise."""
    r = g.rng
    roll = r.random()
    if roll < 0.6:
        header = f"with Tracker(G_LOG, swallow={r.choice(['True', 'False'])}) as {g.fresh('tr')}:"
    elif roll < 0.8:
        header = f"with contextlib.suppress({r.choice(['KeyError', 'RuntimeError', 'FuzzError', 'ValueError'])}):"
    else:
        header = "with contextlib.nullcontext():"
    with g.block(header, in_try=True):
        g.statements(r.randint(0, 2))
        if r.random() < 0.5:
            with g.block(f"if {py_bool(g, 1)}:"):
                _emit_lines(g, raising(g)[0])
    return True


def early_return(g):
    if g.nested:
        return False
    with g.block(f"if {condition(g)}:"):
        g.emit(return_text(g))
    return True


# ---------------------------------------------------------------- nested functions


def nested_def(g):
    r = g.rng
    if g.nested >= 2:
        return False
    roll = r.random()
    name = g.fresh("fn")
    if roll < 0.4:
        param = g.fresh("a")
        shape = r.choice([VEC, MAT] + ([BATCH] if available(g, BATCH) else []))
        g.nested += 1
        with g.block(f"def {name}({param}):", function=True) as scope:
            scope.bind(param, TensorK(shape, grad=True))
            g.statements(r.randint(0, 2))
            text, kind = tensor(g, shape, 1)
            g.emit(f"return {param} * 0.5 + {text}")
        g.nested -= 1
        g.scope.bind(name, FuncK(grad=True, shape=shape))
        text, kind = tensor(g, shape, 1)
        _bind_new(g, "t", kind.like(grad=not g.scope.no_grad), f"{name}({text})")
    elif roll < 0.55:
        counter = g.fresh("c")
        g.emit(f"{counter} = 0")
        g.nested += 1
        with g.block(f"def {name}(step):", function=True) as scope:
            g.emit(f"nonlocal {counter}")
            g.emit(f"{counter} += step")
            scope.bind("step", INT)
            g.statements(r.randint(0, 1))
            g.emit(f"return {counter}")
        g.nested -= 1
        g.emit(f"{name}(1)")
        g.emit(f"{name}({py_int(g, 1)})")
        g.scope.bind(counter, INT)
        g.scope.frozen.add(counter)        # its cell is rebound by the closure only
    elif roll < 0.7:
        factor = py_float(g, 1)
        g.emit(f"{name} = lambda a: a * {factor} + 1.0")
        g.scope.bind(name, FuncK(grad=False))
    elif roll < 0.82:
        lists = [n for n, k in names_of(g, lambda k: k == TENSOR_LIST or k == ListK(TensorK(VEC, grad=True))
                                        or k == ListK(TensorK(VEC, grad=True, fixed=True)))]
        source = r.choice(lists) if lists else f"[{tensor(g, VEC, 1)[0]}, {tensor(g, VEC, 1)[0]}]"
        g.nested += 1
        with g.block(f"def {name}(items):", function=True) as scope:
            scope.bind("items", ListK(TensorK(VEC, grad=True)))
            with g.block("for item in items:") as inner:
                inner.bind("item", TensorK(VEC, grad=True, fixed=True))
                inner.frozen.add("item")
                g.emit(f"yield item * {py_float(g, 1)}")
        g.nested -= 1
        _bind_new(g, "t", TensorK(VEC, grad=True),
                  r.choice([f"sum({name}({source}), torch.zeros(4))", f"torch.stack(list({name}({source}))).sum(0)"
                            if lists else f"sum({name}({source}), torch.ones(4))"]))
    else:
        g.nested += 1
        with g.block(f"def {name}():", function=True):
            g.statements(r.randint(1, 3))
            g.emit(f"return {py_int(g, 1)}")
        g.nested -= 1
        _bind_new(g, "k", INT, f"{name}()")
    return True


# ---------------------------------------------------------------- autograd, RNG, odds and ends


def backward_stmt(g):
    if not g.scope.grad_on:
        return False
    leaves = [n for n in g.grad_leaves if g.scope.lookup(n) is not None]
    if not leaves:
        return False
    r = g.rng
    leaf = r.choice(leaves)
    kind = g.scope.lookup(leaf)
    other, _ = tensor(g, kind.shape, 1)
    loss = f"(({leaf} * {other}).sum() + {leaf}.pow(2).sum())"
    roll = r.random()
    if roll < 0.5:
        g.emit(f"{loss}.backward()")
    elif roll < 0.75:
        name = g.fresh("gr")
        g.emit(f"{name}, = torch.autograd.grad({loss}, [{leaf}])")
        g.scope.bind(name, kind.like(grad=False, fixed=False))
    elif roll < 0.9:
        g.emit(f"print('grad none', {leaf}.grad is None)")
    else:
        _emit_lines(g, r.choice([f"{leaf}.grad = None", _guarded(f"{leaf}.grad is not None", f"{leaf}.grad.zero_()")]))
    return True


def random_stmt(g):
    r = g.rng
    roll = r.random()
    if roll < 0.5:
        _bind_new(g, "k", INT, "random.randint(0, 3)")
    elif roll < 0.8:
        _bind_new(g, "t", TensorK(VEC), r.choice(["torch.rand(4)", "torch.randn(4) * 0.1", "torch.randperm(4).float()"]))
    else:
        g.emit(f"torch.manual_seed({py_int(g, 1)})")
    return True


def misc_stmt(g):
    r = g.rng
    roll = r.random()
    if roll < 0.25:
        alias_target = _pick(g, _mutable_of(g, lambda k: isinstance(k, (ListK, DictK, ObjK, TensorK))))
        if alias_target:
            _bind_new(g, "al", alias_target[1], alias_target[0])
            return True
    if roll < 0.45:
        g.emit("import math as m_math")
        _bind_new(g, "fl", FLOAT, f"m_math.sqrt(abs({py_float(g, 1)}))")
        return True
    if roll < 0.6 and g.scope is g.fn_scope and g.nested == 0 and not g.has_nested:
        deletable = [n for n in g.scope.names if n not in g.params and not g.scope.is_frozen(n)]
        if deletable:
            name = r.choice(deletable)
            g.emit(f"del {name}")
            del g.scope.names[name]
            return True
    if roll < 0.8:
        g.emit(f"assert {py_bool(g, 1)} or True, 'never'" if r.random() < 0.7 else f"assert {py_bool(g, 1)}")
        return True
    if roll < 0.9:
        lists = [n for n, k in names_of(g, lambda k: k == ListK(INT))]
        dicts = [n for n, k in names_of(g, lambda k: isinstance(k, DictK))]
        if lists and r.random() < 0.5:
            name = r.choice(lists)
            first, rest = g.fresh("k"), g.fresh("L")
            with g.block(f"if {name}:"):
                g.emit(f"{first}, *{rest} = {name}")
                g.emit(f"print('unpacked', {first}, len({rest}))")
            return True
        if dicts:
            name = r.choice(dicts)
            _bind_new(g, "L", ListK(INT), r.choice([f"[len(k) for k in {name}.keys()]",
                                                     f"[i for i, _ in enumerate({name}.values())]",
                                                     f"sorted(len(k) * 2 for k in {name})"]))
            return True
        _bind_new(g, "s", STR, f"','.join(sorted([{py_str(g, 1)}, {py_str(g, 1)}], key=lambda s: (len(s), s)))")
        return True
    _bind_new(g, "s", STR, f"type({any_value(g)[0]}).__name__")
    return True


# ---------------------------------------------------------------- picking one


FAMILIES = [
    (assign_tensor, 14), (update_tensor, 6), (inplace, 8), (view_alias, 3), (assign_scalar, 6),
    (update_scalar, 4), (new_container, 6), (mutate_container, 7), (tuple_ops, 2), (object_ops, 10),
    (net_ops, 4), (global_ops, 6), (print_stmt, 5), (break_stmt, 3), (if_stmt, 6), (for_stmt, 4),
    (while_stmt, 1), (try_stmt, 5), (raise_stmt, 0.4), (grad_block, 3), (early_return, 1), (nested_def, 4),
    (manager_block, 2),
    (backward_stmt, 3), (random_stmt, 2), (misc_stmt, 3),
]
COMPOUND = {if_stmt, for_stmt, while_stmt, try_stmt, grad_block, nested_def, manager_block,
            stmts_v2.inference_block} | stmts_v3.COMPOUND
BREAKING = {print_stmt, break_stmt}


def statement(g):
    r = g.rng
    catalogue = FAMILIES + stmts_v2.FAMILIES if g.version >= 2 else FAMILIES
    if g.version >= 3:
        catalogue = catalogue + stmts_v3.FAMILIES
    families = [(f, w * (g.breakiness if f in BREAKING else 1)) for f, w in catalogue
                if f not in COMPOUND or g.scope.depth - g.fn_scope.depth < 2]
    total = sum(w for _, w in families)
    for _ in range(10):
        pick = r.uniform(0, total)
        for family, weight in families:
            pick -= weight
            if pick <= 0:
                break
        mark = len(g.lines)
        if family(g):
            return
        del g.lines[mark:]
    assign_tensor(g)


def return_text(g):
    r = g.rng
    values = [n for n in g.scope.visible() if not n.startswith("G_")]
    roll = r.random()
    if roll < 0.08 or not values:
        return "return None"
    if roll < 0.3:
        return f"return {r.choice(values)}"
    if roll < 0.4:
        name = r.choice(values)
        return f"return {name}, {name}"
    if roll < 0.5:
        chosen = r.sample(values, min(len(values), r.randint(1, 3)))
        return "return {" + ", ".join(f"{n!r}: {n}" for n in chosen) + "}"
    if roll < 0.6:
        return f"return {tensor(g, r.choice(shapes_here(g)))[0]}"
    chosen = r.sample(values, min(len(values), r.randint(2, 4)))
    return "return " + ", ".join(chosen)
