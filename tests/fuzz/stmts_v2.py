"""Statement families of generator version 2 (`generate(seed, version=2)`; version 1 never uses them).

Version 1's programs are fixed by their seeds (the CI slice names seeds), so what came later lives
here: user types with dunder methods (Vec: operators, __len__, __iter__, __getitem__, __call__,
__eq__/__hash__ as a dict key), __getattr__/__setattr__ overrides (Lazy), a Box subclass calling
super() with a classmethod constructor, a class defined in the frame, tensor and module hooks
(register_hook, forward hooks and pre-hooks, removed or kept), an nn.Sequential global, functools /
itertools / operator helpers, string formatting, inference_mode blocks and a global the frame
creates.
"""
from .exprs import names_of, objects, py_float, py_int, py_str, shapes_here, tensor, value_of
from .kinds import BATCH, FLOAT, INT, SCALAR, STR, VEC, ListK, NetK, ObjK, TensorK


def _bind_new(g, prefix, kind, text):
    name = g.fresh(prefix)
    g.emit(f"{name} = {text}")
    g.scope.bind(name, kind)
    return name


def _emit_lines(g, text):
    for line in text.split("\n"):
        g.emit(line)


def user_types(g):
    r = g.rng
    roll = r.random()
    vecs = objects(g, "Vec")
    if roll < 0.25 or (roll < 0.6 and not vecs):
        _bind_new(g, "vc", ObjK("Vec"), f"Vec({value_of(g, TensorK(VEC))}, {py_float(g, 1)})")
        return True
    if roll < 0.6:
        v = r.choice(vecs)
        shape = r.choice([VEC, BATCH] if any(k.shape == BATCH for _, k in names_of(
            g, lambda k: isinstance(k, TensorK))) else [VEC])
        options = [
            lambda: _bind_new(g, "t", TensorK(VEC, grad=True), f"({v} + {tensor(g, VEC, 1)[0]}).t"),
            lambda: _bind_new(g, "t", TensorK(VEC, grad=True), f"(2 * {v}).t"),
            lambda: _bind_new(g, "k", INT, f"len({v})"),
            lambda: _bind_new(g, "t", TensorK(SCALAR, grad=True), f"{v}[{r.randrange(4)}]"),
            lambda: _bind_new(g, "L", ListK(INT), f"[int(e > 0) for e in {v}]"),
            lambda: _bind_new(g, "t", TensorK(shape, grad=True), f"{v}({tensor(g, shape, 1)[0]})"),
            lambda: g.emit(f"print({v}, {v} == Vec(torch.zeros(4), {v}.scale), len({{{v}: 1, {v}: 2}}))"),
            lambda: g.emit(f"{v}.scale = {py_float(g, 1)}"),
            lambda: g.emit(f"{v}.t = ({v} * 0.5).t.detach()"),
        ]
        r.choice(options)()
        return True
    if roll < 0.8:
        lazies = objects(g, "Lazy")
        if not lazies:
            _bind_new(g, "lz", ObjK("Lazy"), "Lazy()")
            return True
        lz = r.choice(lazies)
        r.choice([
            lambda: _bind_new(g, "k", INT, f"{lz}.dyn_{'x' * r.randint(1, 3)}"),
            lambda: g.emit(f"{lz}.a = {py_int(g, 1)}"),
            lambda: g.emit(f"setattr({lz}, 'b', {py_int(g, 1)})"),
            lambda: g.emit(f"print('lazy', {lz}.writes, getattr({lz}, 'dyn_ab', 0), hasattr({lz}, 'missing'), "
                           f"getattr({lz}, 'a', None))"),
        ])()
        return True
    if roll < 0.9:
        w_kind = g.attrs["Box"].sure.get("w") or TensorK(VEC)
        name = _bind_new(g, "sb", ObjK("Box"), f"SubBox.make({value_of(g, w_kind)})")
        g.emit(f"print('sub', {name}.bump({py_int(g, 1)}), isinstance({name}, Box), SubBox.twice({name}.n))")
        return True
    cls = g.fresh("Local")
    g.emit(f"class {cls}:")
    g.emit(f"    def __init__(self, v):")
    g.emit(f"        self.v = v")
    g.emit(f"    def get(self):")
    g.emit(f"        return self.v * 2")
    obj = _bind_new(g, "lo", ObjK(cls), f"{cls}({tensor(g, VEC, 1)[0]})")
    _bind_new(g, "t", TensorK(VEC, grad=True), f"{obj}.get()")
    return True


def hooks(g):
    r = g.rng
    roll = r.random()
    leaves = [n for n in g.grad_leaves if g.scope.lookup(n) is not None]
    if roll < 0.3 and leaves and g.scope.grad_on:
        leaf = r.choice(leaves)
        handle = g.fresh("h")
        g.emit(f"{handle} = {leaf}.register_hook(lambda grad: grad * {r.choice(['2.0', '0.5', '-1.0'])})")
        if r.random() < 0.5:
            g.emit(f"(({leaf} * {tensor(g, g.scope.lookup(leaf).shape, 1)[0]}).sum()).backward()")
        if r.random() < 0.5:
            g.emit(f"{handle}.remove()")
        return True
    nets = [n for n, _ in names_of(g, lambda k: isinstance(k, NetK))] + ["G_SEQ"]
    net = r.choice(nets)
    shape = r.choice([s for s in shapes_here(g) if s in (VEC, BATCH)])
    if roll < 0.7:
        handle = g.fresh("h")
        if r.random() < 0.5:
            g.emit(f"{handle} = {net}.register_forward_hook(lambda m, args, out: out * 0.5)")
        else:
            g.emit(f"{handle} = {net}.register_forward_pre_hook(lambda m, args: (args[0] * 2,))")
        _bind_new(g, "t", TensorK(shape, grad=True), f"{net}({tensor(g, shape, 1)[0]})")
        if r.random() < 0.7:
            g.emit(f"{handle}.remove()")
        g.emit(f"G_HOOKS.append(len({net}._forward_hooks) + len({net}._forward_pre_hooks))")
        return True
    r.choice([
        lambda: _bind_new(g, "t", TensorK(shape, grad=True), f"G_SEQ({tensor(g, shape, 1)[0]})"),
        lambda: _emit_lines(g, "for layer in G_SEQ:\n    G_HOOKS.append(type(layer).__name__)"),
        lambda: _bind_new(g, "t", TensorK(shape, grad=True), f"G_SEQ[0]({tensor(g, shape, 1)[0]})"),
        lambda: g.emit("print('seq', len(G_SEQ), G_SEQ[0].weight.shape, G_SEQ.training)"),
    ])()
    return True


def functional(g):
    r = g.rng
    lists = [n for n, k in names_of(g, lambda k: k == ListK(INT))] or ["G_LIST"]
    lst = r.choice(lists)
    roll = r.random()
    if roll < 0.45:
        _bind_new(g, "L", ListK(INT), r.choice([
            f"list(itertools.accumulate({lst}))", f"list(map(abs, {lst}))", f"sorted({lst}, key=lambda v: -v)",
            f"list(reversed({lst}))", f"list(itertools.chain({lst}, [1]))", f"[a * b for a, b in zip({lst}, {lst}[1:])]",
            f"list(filter(lambda v: v % 2, {lst}))", f"[v for v, _ in itertools.product({lst}[:2], (0, 1))]"]))
    elif roll < 0.7:
        _bind_new(g, "k", INT, r.choice([
            f"functools.reduce(operator.add, {lst}, 0)", f"max({lst}, key=abs, default=0)", f"next(iter({lst}), -1)",
            f"(operator.itemgetter(0)({lst}) if {lst} else 0)", f"sum(1 for v in {lst} if v > 1)"]))
    elif roll < 0.85:
        shape = r.choice(shapes_here(g))
        text, kind = tensor(g, shape, 1)
        _bind_new(g, "t", kind.like(fixed=False), r.choice([
            f"functools.partial(helper_mix, k=2.0)({text})", f"operator.mul({text}, 2)",
            f"operator.add({text}, {text})", f"Square.apply({text})" if shape != SCALAR else f"operator.neg({text})",
            f"SubBox.twice({text})"]))
    else:
        _bind_new(g, "s", STR, r.choice([
            f"format({py_float(g, 1)}, '.2f')", f"'%d-%s' % ({py_int(g, 1)}, {py_str(g, 1)})",
            f"'{{}}:{{}}'.format({py_int(g, 1)}, {py_str(g, 1)})", f"{py_str(g, 1)}.split('-')[0]",
            f"{py_str(g, 1)}.replace('g', 'h')[::-1]", f"{py_str(g, 1)}.zfill(4) * 2"]))
    return True


def inference_block(g):
    with g.block("with torch.inference_mode():", no_grad=True, function=True):
        g.statements(g.rng.randint(1, 2))
    return True


def new_global(g):
    if "G_NEW" not in g.rebindable_globals():
        return False
    g.emit(f"G_NEW = {py_int(g, 1)}")
    return True


FAMILIES = [(user_types, 5), (hooks, 3), (functional, 4), (inference_block, 1), (new_global, 1)]
