"""Statement families of generator version 3 (`generate(seed, version=3)`: version 2's plus these, and
the aot_eager backend drawn for most programs instead of a quarter): torch.autocast blocks (issue 23).

Autocast changes the dtype of matmul-like ops (bfloat16 on CPU) and nests with grad-mode and
inference-mode blocks and with graph breaks inside; the backends must run every such region exactly
as eager does. The blocks: autocast on (bfloat16, sometimes float16 or without its cast cache),
autocast switched off inside another, and a block that ends by casting its results back to float32
(as user code around an autocast region does), so the rest of the program keeps float32 tensors.
"""
from .exprs import names_of, tensor
from .kinds import MAT, VEC, TensorK

HEADERS = [
    ('with torch.autocast("cpu", dtype=torch.bfloat16):', 6),
    ('with torch.autocast("cpu", dtype=torch.bfloat16, cache_enabled=False):', 1),
    ('with torch.autocast("cpu", dtype=torch.float16):', 1),
    ('with torch.autocast("cpu", enabled=False):', 1),
    ('with torch.autocast("cpu", dtype=torch.bfloat16, enabled=FLAG):', 1),
]


def _header(g):
    r = g.rng
    header = r.choices([h for h, _ in HEADERS], weights=[w for _, w in HEADERS])[0]
    return header.replace("FLAG", r.choice(["True", "False", "G_FLAG"]))


def autocast_block(g):
    """An autocast block around ordinary statements (grad blocks, breaks, nested defs may come in)."""
    with g.block(_header(g)):
        g.statements(g.rng.randint(1, 3))
    return True


def autocast_matmul(g):
    """A matmul under autocast, its result cast back to float32 after the block (or inside it)."""
    r = g.rng
    mats = [n for n, k in names_of(g, lambda k: isinstance(k, TensorK) and k.shape == MAT and k.dtype == "f")]
    a = tensor(g, VEC, 1)[0]
    b = r.choice(mats) if mats and r.random() < 0.7 else tensor(g, MAT, 1)[0]
    name = g.fresh("ac")
    grad = not g.scope.no_grad
    with g.block(_header(g)):
        op = r.choice(["({a} @ {b})", "torch.mv({b}, {a})", "F.linear({a}, {b})", "torch.matmul({a}, {b}).relu()"])
        g.emit(f"{name} = {op.format(a=a, b=b)}")
        if r.random() < 0.4:
            g.statements(1)
    g.emit(f"{name} = {name}.float()")
    g.scope.bind(name, TensorK(VEC, grad=grad and r.random() < 0.5))
    return True


FAMILIES = [(autocast_block, 4), (autocast_matmul, 4)]
COMPOUND = {autocast_block, autocast_matmul}
