"""Expressions of a wanted kind, written from what the scope holds: `tensor(g, shape)`, `py_int(g)`...

Every function returns source text (tensors: text and TensorK) that is valid where it is written:
a tensor expression of shape ("B", "4") only appears when some name already has the batch dimension;
attribute reads only name attributes every instance surely has (others go through getattr with a
default); ops that may throw (indexing, dict lookups) are guarded. Depth bounds nesting.
Some templates break graphs on purpose (`.item()`, `.tolist()`, `opaque`, `helper_print`, boolean-mask
indexing) or draw from the RNG.
"""
from .kinds import (BATCH, BOOL, COLS, FLOAT, INT, MAT, SCALAR, STR, VEC, DictK, FuncK, ListK, NetK, ObjK,
                    ScalarK, SetK, TensorK, TupleK)

MAX_DEPTH = 3


# ---------------------------------------------------------------- what the scope offers


def names_of(g, test):
    return [(n, k) for n, k in g.scope.visible().items() if test(k)]


def tensor_names(g, shape, dtype="f"):
    return [(n, k) for n, k in names_of(g, lambda k: isinstance(k, TensorK) and k.shape == shape
                                        and k.dtype == dtype)]


def objects(g, cls):
    return [n for n, k in names_of(g, lambda k: isinstance(k, ObjK) and k.cls == cls)]


def sure_attr(g, cls, attr):
    return attr in g.attrs[cls].sure


def attribute_tensors(g, shape):
    """(text, kind) of tensors reachable as attributes: box.w, pt.b, net.buf, net.lin.weight, G_T."""
    out = []
    if shape == VEC:
        for name in objects(g, "Box"):
            if sure_attr(g, "Box", "w"):
                out.append((f"{name}.w", g.attrs["Box"].sure["w"]))
        for name in objects(g, "Point"):
            out.append((f"{name}.b", g.attrs["Point"].sure["b"]))
        for name, _ in names_of(g, lambda k: isinstance(k, NetK)):
            out.append((f"{name}.buf", TensorK(VEC)))
            out.append((f"{name}.lin.bias", TensorK(VEC, grad=True)))
        out.append(("G_T", TensorK(VEC)))
    if shape == MAT:
        for name, _ in names_of(g, lambda k: isinstance(k, NetK)):
            out.append((f"{name}.lin.weight", TensorK(MAT, grad=True)))
    return out


def batch_names(g):
    return tensor_names(g, BATCH)


def available(g, shape):
    """Can a tensor of this shape be written here?"""
    if "B" not in shape:
        return True
    return bool(batch_names(g) or tensor_names(g, COLS))


def shapes_here(g):
    shapes = [SCALAR, VEC, VEC, MAT]
    if batch_names(g):
        shapes += [BATCH, BATCH, BATCH, COLS]
    return shapes


def _grad(g, *kinds):
    return (not g.scope.no_grad) and any(k.grad for k in kinds)


def _fresh(g, *kinds):
    return TensorK(kinds[0].shape if kinds else SCALAR, "f", _grad(g, *kinds), False)


def _view(g, base, shape):
    """A view of `base`: may not be written in place if base is fixed, or it was made under no_grad
    from a tensor that needs grad (writing it later outside no_grad is an error)."""
    fixed = base.fixed or (g.scope.no_grad and base.grad)
    return TensorK(shape, "f", _grad(g, base), fixed)


def breaks(g):
    """Should this expression read a tensor's value in Python (a graph break)? Programs differ in how
    often (g.breakiness): some break everywhere, some hardly, so that graphs get long too."""
    return g.rng.random() < g.breakiness


# ---------------------------------------------------------------- tensors


def float_const(g):
    return g.rng.choice(["0.5", "2.0", "-1.0", "1.5", "0.25", "3.0"])


def constructor(g, shape):
    r = g.rng
    if shape == SCALAR:
        return f"torch.tensor({float_const(g)})"
    if shape == VEC:
        return r.choice(["torch.ones(4)", "torch.arange(4.0)", "torch.linspace(-1, 1, 4)",
                         f"torch.full((4,), {float_const(g)})", "torch.tensor([1.0, -2.0, 0.5, 3.0])",
                         "torch.zeros(4)"])
    if shape == MAT:
        return r.choice(["torch.eye(4)", "torch.ones(4, 4)", "(torch.arange(16.0).view(4, 4) / 8)",
                         f"torch.full((4, 4), {float_const(g)})"])
    batch = batch_names(g)
    if shape == BATCH and batch:
        b = r.choice(batch)[0]
        return r.choice([f"torch.ones_like({b})", f"torch.zeros({b}.shape[0], 4)",
                         f"{b}.new_full({b}.shape, {float_const(g)})", f"torch.zeros_like({b})"])
    if shape == COLS:
        b = r.choice(batch)[0] if batch else r.choice(tensor_names(g, COLS))[0]
        return r.choice([f"torch.arange({b}.shape[0]).float()", f"torch.ones({b}.shape[0])"])
    raise AssertionError(shape)


def leaf(g, shape):
    """A name, attribute or constructor of this shape."""
    r = g.rng
    options = tensor_names(g, shape)
    options += attribute_tensors(g, shape)
    if shape == VEC:
        for name, k in names_of(g, lambda k: k == ListK(TensorK(VEC))):
            options.append((f"({name}[-1] if {name} else torch.zeros(4))", TensorK(VEC, grad=k.item.grad)))
        for name, k in names_of(g, lambda k: isinstance(k, DictK) and isinstance(k.value, TensorK)):
            key = r.choice(["a", "b", "c"])
            options.append((f"{name}.get({key!r}, torch.ones(4))", TensorK(VEC, grad=k.value.grad)))
        for name, k in names_of(g, lambda k: isinstance(k, TupleK) and isinstance(k.items[-1], TensorK)):
            options.append((f"{name}[-1]", k.items[-1]))
    if options and r.random() < 0.8:
        text, kind = r.choice(options)
        return text, kind
    return constructor(g, shape), TensorK(shape)


UNARY = ["torch.sin({})", "({}).cos()", "({}).relu()", "torch.tanh({})", "torch.sigmoid({})",
         "({}).abs()", "({}).clamp(-1.0, 1.0)", "torch.exp(({}).clamp(max=3.0))", "({}).pow(2)",
         "(-{})", "({} / 2)", "F.gelu({})", "({}).square()", "torch.sqrt(({}).abs() + 1)",
         "({}).neg().add(1.0)", "({}).clone()", "torch.nan_to_num({})", "({}).floor()",
         "torch.atan2({0}, torch.ones_like({0}))", "F.leaky_relu({}, 0.1)", "({}).detach()",
         "({}).contiguous()", "({} > 0).float()", "({}).sign()", "({}).float()"]
UNARY_DIM = ["F.softmax({}, dim=-1)", "F.normalize({}, dim=-1)", "({}).cumsum(-1)", "torch.flip({}, [-1])",
             "({}).roll(1, -1)", "F.log_softmax({}, dim=-1)"]
BINARY = ["({} + {})", "({} - {})", "({} * {})", "torch.maximum({}, {})", "torch.minimum({}, {})",
          "torch.where({0} > 0, {0}, {1})", "({0} / ({1}.abs() + 1))", "torch.lerp({}, {}, 0.25)",
          "torch.add({}, {}, alpha=2)", "torch.hypot({}, {})"]


def tensor(g, shape, depth=0):
    """(text, kind) of a float tensor expression of `shape`."""
    r = g.rng
    if depth >= MAX_DEPTH or r.random() < 0.3:
        return leaf(g, shape)
    choice = r.random()
    if choice < 0.22:
        a, ka = tensor(g, shape, depth + 1)
        template = r.choice(UNARY + (UNARY_DIM if shape else []))
        kind = _fresh(g, ka)
        if "detach" in template:
            kind = ka.like(grad=False)
        return template.format(a), kind
    if choice < 0.42:
        a, ka = tensor(g, shape, depth + 1)
        if shape in (BATCH, MAT) and r.random() < 0.3:
            b, kb = tensor(g, VEC, depth + 1)           # broadcast a row
        elif shape and r.random() < 0.15:
            b, kb = tensor(g, SCALAR, depth + 1)
        else:
            b, kb = tensor(g, shape, depth + 1)
        template = r.choice(BINARY)
        if "{0}" not in template and r.random() < 0.5 and kb.shape == shape:
            a, b, ka, kb = b, a, kb, ka
        return template.format(a, b), _fresh(g, ka, kb).like(shape=shape)
    if choice < 0.52:
        a, ka = tensor(g, shape, depth + 1)
        op = r.choice(["*", "+", "-", "/"])
        scalar = py_float(g, depth + 1) if r.random() < 0.5 else py_int(g, depth + 1)
        if op == "/":
            scalar = f"(abs({scalar}) + 1)"
        return f"({a} {op} {scalar})", _fresh(g, ka)
    if choice < 0.64:
        made = reduce_or_matmul(g, shape, depth)
        if made:
            return made
    if choice < 0.74:
        made = view_of(g, shape, depth)
        if made:
            return made
    if choice < 0.86:
        made = call_tensor_fn(g, shape, depth)
        if made:
            return made
    if choice < 0.90:
        made = random_tensor(g, shape, depth)
        if made:
            return made
    if choice < 0.95:
        made = container_tensor(g, shape, depth)
        if made:
            return made
    return leaf(g, shape)


def reduce_or_matmul(g, shape, depth):
    r = g.rng
    if shape == SCALAR:
        src_shape = r.choice(shapes_here(g))
        a, ka = tensor(g, src_shape, depth + 1)
        template = r.choice(["({}).sum()", "({}).mean()", "({}).amax()", "({}).norm()", "({}).std()",
                             "({}).abs().max()", "torch.dot(({0}).flatten()[:4], ({0}).flatten()[-4:])",
                             "({0})[({0}) > 0].sum()", "({}).logsumexp(0).sum()", "({}).var()",
                             "torch.topk(({}).flatten(), 2).values.sum()", "({}).flatten().sort().values[-1]",
                             "torch.cat(torch.chunk(({}).flatten(), 2)).sum()"]) \
            if src_shape else "({}).sum()"
        if src_shape == SCALAR:
            template = "({}).sum()"
        return template.format(a), _fresh(g, ka).like(shape=SCALAR)
    if shape == VEC:
        option = r.randrange(4)
        if option == 0:
            a, ka = tensor(g, MAT, depth + 1)
            b, kb = tensor(g, VEC, depth + 1)
            return r.choice(["({} @ {})", "torch.mv({}, {})", "torch.einsum('ij,j->i', {}, {})"]).format(a, b), \
                _fresh(g, ka, kb).like(shape=VEC)
        src = BATCH if available(g, BATCH) and r.random() < 0.6 else MAT
        a, ka = tensor(g, src, depth + 1)
        template = r.choice(["({}).sum(0)", "({}).mean(dim=0)", "({}).amax(0)", "({}).prod(0)",
                             "({}).max(dim=0).values", "({}).sum(0, keepdim=True).squeeze(0)"])
        return template.format(a), _fresh(g, ka).like(shape=VEC)
    if shape == MAT:
        if available(g, BATCH) and r.random() < 0.4:
            a, ka = tensor(g, BATCH, depth + 1)
            return f"(({a}).t() @ ({a}))", _fresh(g, ka).like(shape=MAT)
        a, ka = tensor(g, MAT, depth + 1)
        if r.random() < 0.5:
            b, kb = tensor(g, MAT, depth + 1)
            return r.choice(["({} @ {})", "torch.mm({}, {})", "torch.matmul({}, {})"]).format(a, b), \
                _fresh(g, ka, kb).like(shape=MAT)
        v, kv = tensor(g, VEC, depth + 1)
        return r.choice(["torch.outer({1}, {1})", "({0} * ({1})[:, None])", "torch.stack([{1}, {1}, {1}, {1}])"]
                        ).format(a, v), _fresh(g, ka, kv).like(shape=MAT)
    if shape == BATCH:
        a, ka = tensor(g, BATCH, depth + 1)
        b, kb = tensor(g, MAT, depth + 1)
        return r.choice(["({} @ {})", "F.linear({}, {})", "torch.mm({}, {})"]).format(a, b), \
            _fresh(g, ka, kb).like(shape=BATCH)
    if shape == COLS:
        a, ka = tensor(g, BATCH, depth + 1)
        template = r.choice(["({}).sum(-1)", "({}).mean(1)", "({}).amax(dim=-1)", "({}).norm(dim=1)"])
        return template.format(a), _fresh(g, ka).like(shape=COLS)
    return None


def view_of(g, shape, depth):
    """Views of other tensors (writes through them reach their base)."""
    r = g.rng
    options = []
    if shape == VEC:
        options += [(MAT, "({})[{i}]"), (MAT, "({})[:, {i}]"), (MAT, "({}).diagonal()"), (VEC, "({}).view(-1)"),
                    (VEC, "({})[:]"), (MAT, "({}).select(0, {i})"), (MAT, "({}).unbind(0)[{i}]")]
        if available(g, BATCH):
            options += [(BATCH, "({})[0]"), (BATCH, "({})[-1]")]
    elif shape == MAT:
        options += [(MAT, "({}).t()"), (MAT, "({}).transpose(0, 1)"), (MAT, "({}).reshape(4, 4)"), (MAT, "({}).T"),
                    (MAT, "({}).mT"),
                    (MAT, "({})[:, :]"), (VEC, "({}).expand(4, 4)"), (VEC, "({}).unsqueeze(0).expand(4, -1)")]
    elif shape == BATCH:
        options += [(BATCH, "({})[:, :]"), (BATCH, "({}).view({}.shape[0], -1)"), (BATCH, "({}).reshape(-1, 4)"),
                    (BATCH, "({}).narrow(1, 0, 4)")]
    elif shape == COLS:
        options += [(BATCH, "({})[:, {i}]"), (BATCH, "({}).select(1, {i})")]
    elif shape == SCALAR:
        options += [(VEC, "({})[{i}]"), (MAT, "({})[{i}, {i}]"), (VEC, "({}).sum(0)")]
    options = [o for o in options if available(g, o[0])]
    if not options:
        return None
    src_shape, template = r.choice(options)
    if "{}.shape" in template:
        names = batch_names(g)
        if not names:
            return None
        name, kind = r.choice(names)
        return template.format(name, name), _view(g, kind, shape)
    a, ka = tensor(g, src_shape, depth + 1)
    kind = _view(g, ka, shape)
    if "expand" in template:
        kind = kind.like(fixed=True)
    return template.format(a, i=r.randrange(4)), kind


def call_tensor_fn(g, shape, depth):
    """Closures, helpers, the module, methods: calls that take a tensor and give one back."""
    r = g.rng
    a, ka = tensor(g, shape, depth + 1)
    options = [("scale_a({})", False), ("scale_b({})", False), ("helper_mix({}, {k})", False),
               ("helper_mix(*({},), **{{'k': {k}}})", False), ("helper_kw({}, 1, 2, k={k}, extra=3)", False),
               ("helper_kw(*[{}], **{{'k': {k}}})", False), ("helper_rec({}, 2)", False),
               ("(lambda t, s=2.0: t * s)({})", False)]
    if breaks(g):
        options += [("opaque({})", False), ("helper_print({})", False)]
    for name, kind in names_of(g, lambda k: isinstance(k, FuncK) and k.shape in (None, shape)):
        options += [(name + "({})", kind.grad)] * 2
    if shape in (VEC, BATCH):
        for name, _ in names_of(g, lambda k: isinstance(k, NetK)):
            options += [(name + "({})", True)] * 2
    if shape in (VEC, BATCH, MAT) and objects(g, "Box") and sure_attr(g, "Box", "w") and sure_attr(g, "Box", "n"):
        box = r.choice(objects(g, "Box"))
        options.append((f"{box}.scaled({{}})", g.attrs["Box"].sure["w"].grad))
    template, grad = r.choice(options)
    text = template.format(a, k=py_int(g, depth + 1) if r.random() < 0.5 else py_float(g, depth + 1))
    kind = _fresh(g, ka)
    if grad and not g.scope.no_grad:
        kind = kind.like(grad=True)
    return text, kind


def random_tensor(g, shape, depth):
    r = g.rng
    if shape in (VEC, MAT, SCALAR) and r.random() < 0.5:
        dims = ", ".join(shape) if shape else ""
        return r.choice([f"torch.rand({dims})", f"torch.randn({dims})"]) if dims else "torch.rand(())", TensorK(shape)
    a, ka = tensor(g, shape, depth + 1)
    template = r.choice(["torch.rand_like({})", "F.dropout({}, p=0.5, training=True)", "({0} + torch.randn_like({0}))",
                         "torch.bernoulli(torch.full_like({}, 0.5))"])
    kind = TensorK(shape) if "like" in template and "+" not in template else _fresh(g, ka)
    return template.format(a), kind


def container_tensor(g, shape, depth):
    r = g.rng
    if shape == VEC:
        tls = names_of(g, lambda k: k == ListK(TensorK(VEC)) or k == ListK(TensorK(VEC, grad=True)))
        if tls and r.random() < 0.5:
            name, kind = r.choice(tls)
            return (r.choice([f"(torch.stack({name}).sum(0) if {name} else torch.zeros(4))",
                              f"sum({name}, torch.zeros(4))",
                              f"(torch.stack([t * (i + 1) for i, t in enumerate({name})]).mean(0) if {name} else torch.ones(4))"]),
                    _fresh(g, kind.item))
        a, ka = tensor(g, VEC, depth + 1)
        return f"torch.cat([({a})[:2], ({a})[2:] * 2])", _fresh(g, ka)
    if shape == BATCH and batch_names(g):
        a, ka = tensor(g, BATCH, depth + 1)
        return f"torch.stack([row * 2 for row in {a}])" if r.random() < 0.5 else f"torch.cat([{a}[:1], {a}[1:]])", \
            _fresh(g, ka)
    if shape == SCALAR:
        lists = names_of(g, lambda k: k == ListK(INT))
        if lists:
            name = r.choice(lists)[0]
            return f"torch.tensor(float(sum({name})))", TensorK(SCALAR)
    return None


# ---------------------------------------------------------------- Python scalars


def _vars(g, kind):
    return [n for n, k in names_of(g, lambda k: k == kind)]


def py_int(g, depth=0):
    r = g.rng
    options = [lambda: str(r.randint(0, 5))] * 2
    names = _vars(g, INT)
    if names:
        options += [lambda: r.choice(names)] * 4
    if depth < MAX_DEPTH:
        options += [lambda: f"({py_int(g, depth + 1)} + {py_int(g, depth + 1)})",
                    lambda: f"({py_int(g, depth + 1)} * 2 % 7)",
                    lambda: f"min({py_int(g, depth + 1)}, 4)",
                    lambda: f"abs({py_int(g, depth + 1)} - 3)",
                    lambda: f"({py_int(g, depth + 1)} // 2)",
                    lambda: "G_COUNT", lambda: "aux.K",
                    lambda: f"int({py_bool(g, depth + 1)})"]
        tshape = r.choice(shapes_here(g))
        options += [lambda: f"{tensor(g, tshape, depth + 1)[0]}.dim()",
                    lambda: f"{tensor(g, tshape, depth + 1)[0]}.numel()",
                    lambda: f"{tensor(g, tshape, depth + 1)[0]}.ndim",
                    lambda: f"len(torch.split({tensor(g, VEC, depth + 1)[0]}, {r.randint(1, 3)}))",
                    lambda: f"int(torch.arange(min(abs({py_int(g, depth + 1)}), 6) + 1).sum())"]
        if breaks(g):
            options += [lambda: f"int(({tensor(g, tshape, depth + 1)[0]} > 0).sum())",
                        lambda: f"round(float({tensor(g, SCALAR, depth + 1)[0]}.clamp(-9, 9)))",
                        lambda: f"({tensor(g, VEC, depth + 1)[0]}).argmax().item()"]
        if batch_names(g):
            options.append(lambda: f"{r.choice(batch_names(g))[0]}.shape[0]")
        for name in _containers(g):
            options.append(lambda name=name: f"len({name})")
        for name in _vars(g, ListK(INT)):
            options += [lambda name=name: f"sum({name})", lambda name=name: f"({name}[0] if {name} else -1)",
                        lambda name=name: f"max({name}, default=0)"]
        for name in _vars(g, DictK(INT)):
            options.append(lambda name=name: f"{name}.get({r.choice('abc')!r}, 0)")
        for name in _vars(g, STR):
            options.append(lambda name=name: f"len({name})")
        for name in objects(g, "Box"):
            if sure_attr(g, "Box", "n"):
                options += [lambda name=name: f"{name}.n"] * 2
            options += [lambda name=name: f"getattr({name}, 'extra', 0)", lambda name=name: f"{name}.level",
                        lambda name=name: f"{name}.limit", lambda name=name: f"len({name}.__dict__)"]
            if sure_attr(g, "Box", "items"):
                options.append(lambda name=name: f"len({name}.items)")
        for name in objects(g, "Point"):
            options.append(lambda name=name: f"{name}.a")
        for name in objects(g, "Cfg"):
            options.append(lambda name=name: f"{name}.depth")
        for name, _ in names_of(g, lambda k: isinstance(k, NetK)):
            options.append(lambda name=name: f"{name}.calls")
        for name, k in names_of(g, lambda k: isinstance(k, TupleK) and k.items[0] == INT):
            options.append(lambda name=name: f"{name}[0]")
    return r.choice(options)()


def _containers(g):
    return [n for n, k in names_of(g, lambda k: isinstance(k, (ListK, DictK, SetK)))]


def py_float(g, depth=0):
    r = g.rng
    options = [lambda: float_const(g)] * 2
    names = _vars(g, FLOAT)
    if names:
        options += [lambda: r.choice(names)] * 3
    if depth < MAX_DEPTH:
        options += [lambda: "G_SCALE", lambda: "aux.factor",
                    lambda: f"({py_float(g, depth + 1)} * 0.5)",
                    lambda: f"float({py_int(g, depth + 1)})",
                    lambda: f"math.sqrt(abs({py_float(g, depth + 1)}))",
                    lambda: f"max({py_float(g, depth + 1)}, 0.1)"]
        if breaks(g):
            options += [lambda: f"round({tensor(g, SCALAR, depth + 1)[0]}.item(), 3)",
                        lambda: f"float({tensor(g, SCALAR, depth + 1)[0]}.clamp(-5, 5))"]
        for name in objects(g, "Cfg"):
            options.append(lambda name=name: f"{name}.scale")
        for name, _ in names_of(g, lambda k: isinstance(k, NetK)):
            options.append(lambda name=name: f"{name}.scale")
    return r.choice(options)()


def py_bool(g, depth=0):
    r = g.rng
    options = [lambda: r.choice(["True", "False"])]
    names = _vars(g, BOOL)
    if names:
        options += [lambda: r.choice(names)] * 3
    if depth < MAX_DEPTH:
        options += [lambda: f"({py_int(g, depth + 1)} > {py_int(g, depth + 1)})",
                    lambda: f"({py_int(g, depth + 1)} % 2 == 0)",
                    lambda: f"(not {py_bool(g, depth + 1)})", lambda: "G_FLAG",
                    lambda: f"({py_float(g, depth + 1)} > 0.5)",
                    lambda: "torch.is_grad_enabled()",
                    lambda: f"({tensor(g, SCALAR, depth + 1)[0]}.item() > 0)" if breaks(g) else "True",
                    lambda: f"bool(({tensor(g, VEC, depth + 1)[0]} > 0).any())" if breaks(g) else "False",
                    lambda: f"{tensor(g, r.choice(shapes_here(g)), depth + 1)[0]}.requires_grad",
                    lambda: f"{tensor(g, MAT, depth + 1)[0]}.is_contiguous()",
                    lambda: f"{tensor(g, r.choice(shapes_here(g)), depth + 1)[0]}.is_leaf",
                    lambda: f"({tensor(g, r.choice(shapes_here(g)), depth + 1)[0]}.grad_fn is None)",
                    lambda: f"any(v > 2 for v in [{py_int(g, depth + 1)}, {py_int(g, depth + 1)}])",
                    lambda: f"(0 <= {py_int(g, depth + 1)} < 3)",
                    lambda: f"(type({py_int(g, depth + 1)}) is int)"]
        for name in objects(g, "Box"):
            options += [lambda name=name: f"hasattr({name}, {r.choice(['tag', 'extra', 'n', 'missing'])!r})",
                        lambda name=name: f"isinstance({name}, Box)",
                        lambda name=name: f"({r.choice(['tag', 'extra', '_level'])!r} in {name}.__dict__)"]
        for name in _vars(g, DictK(INT)) + _vars(g, DictK(TensorK(VEC))) + _vars(g, DictK(TensorK(VEC, grad=True))):
            options.append(lambda name=name: f"({r.choice('abc')!r} in {name})")
        for name in _vars(g, SetK()):
            options.append(lambda name=name: f"({py_int(g, depth + 1)} in {name})")
        for name in _vars(g, ListK(INT)):
            options.append(lambda name=name: f"bool({name})")
        for name in _vars(g, STR):
            options.append(lambda name=name: f"{name}.startswith('g')")
        for name, _ in names_of(g, lambda k: isinstance(k, NetK)):
            options.append(lambda name=name: f"{name}.training")
    return r.choice(options)()


def py_str(g, depth=0):
    r = g.rng
    options = [lambda: repr(r.choice(["x", "ab", "g1", "tag"]))]
    names = _vars(g, STR)
    if names:
        options += [lambda: r.choice(names)] * 3
    if depth < MAX_DEPTH:
        options += [lambda: "G_NAME", lambda: f"({py_str(g, depth + 1)} + '-' + str({py_int(g, depth + 1)}))",
                    lambda: f"{py_str(g, depth + 1)}.upper()", lambda: f"str({py_int(g, depth + 1)})",
                    lambda: f"({py_str(g, depth + 1)} + 'x')", lambda: f"'-'.join([{py_str(g, depth + 1)}, 'z'])"]
        for name in objects(g, "Box"):
            if sure_attr(g, "Box", "tag"):
                options.append(lambda name=name: f"{name}.tag")
            options += [lambda name=name: f"getattr({name}, 'tag', 'none')", lambda name=name: f"{name}.kind",
                        lambda name=name: f"type({name}).__name__"]
        for name in objects(g, "Cfg"):
            options.append(lambda name=name: f"{name}.name")
    return r.choice(options)()


def condition(g):
    """An if/while condition: Python values, or tensor-derived values (data-dependent branches)."""
    r = g.rng
    roll = r.random()
    if roll < 0.6 or not breaks(g):
        return py_bool(g)
    if roll < 0.85:
        a = tensor(g, r.choice(shapes_here(g)), 1)[0]
        return r.choice([f"({a}).sum() > 0", f"({a} > 0).any()", f"({a}).mean().item() < 0.5",
                         f"bool(({a}).abs().max() > 1)"])
    names = batch_names(g)
    if names:
        return f"{r.choice(names)[0]}.shape[0] > 3"
    return py_bool(g)


def value_of(g, kind, depth=1):
    """Text of an expression of `kind` (used to assign a name or an attribute of that kind)."""
    if isinstance(kind, TensorK):
        text, got = tensor(g, kind.shape, depth)
        if got.grad and not kind.grad:
            text = f"({text}).detach()"
        return text
    if kind == INT:
        return py_int(g, depth)
    if kind == FLOAT:
        return py_float(g, depth)
    if kind == BOOL:
        return py_bool(g, depth)
    if kind == STR:
        return py_str(g, depth)
    if isinstance(kind, ListK):
        return "[" + ", ".join(value_of(g, kind.item, depth + 1) for _ in range(g.rng.randint(0, 3))) + "]"
    raise AssertionError(kind)


def any_value(g):
    """(text, kind) of some value worth returning, printing or storing."""
    r = g.rng
    roll = r.random()
    if roll < 0.45:
        return tensor(g, r.choice(shapes_here(g)))
    if roll < 0.65:
        return py_int(g), INT
    if roll < 0.75:
        return py_float(g), FLOAT
    if roll < 0.85:
        return py_str(g), STR
    return py_bool(g), BOOL


__all__ = ["tensor", "py_int", "py_float", "py_bool", "py_str", "condition", "value_of", "any_value",
           "available", "shapes_here", "names_of", "objects", "sure_attr", "ScalarK", "SetK"]
