"""generate(seed) -> Program: the whole source of one fuzz program, a pure function of the seed.

The program is: the prelude (globals, classes, helpers: prelude.py), the entry `f` (a function, a
bound method or an nn.Module; its parameters drawn from PARAMS, its body from stmts.py), and
`make_inputs(call)`, which builds the
arguments of call number `call` from a seeded torch.Generator. How inputs change between calls is
part of the program: the same values every call, new values, a new batch size, a new int, an
attribute present on one call and absent on the next, requires_grad switched, the very same objects
passed again (state left by the previous call), one object passed for two parameters.
"""
import contextlib
import random
from dataclasses import dataclass

from . import prelude, stmts
from .kinds import (BATCH, BOOL, BOX_ATTRS, CFG_ATTRS, FLOAT, INT, MAT, POINT_ATTRS, STR, VEC, DictK, ListK,
                    NetK, ObjK, SetK, TensorK, TupleK)
from .scope import ObjectAttrs, Scope


@dataclass(frozen=True)
class Program:
    seed: int
    source: str
    backend: str
    calls: int


@dataclass(frozen=True)
class Param:
    name: str
    kind: object
    build: str                 # expression over B, n_value, g (a torch.Generator), call
    grad_leaf: bool = False


PARAMS = [
    Param("x", TensorK(BATCH), "torch.randn(B, 4, generator=g)"),
    Param("x", TensorK(BATCH, grad=True), "torch.randn(B, 4, generator=g).requires_grad_()", True),
    Param("y", TensorK(VEC), "torch.randn(4, generator=g)"),
    Param("w", TensorK(MAT, grad=True), "torch.randn(4, 4, generator=g).requires_grad_()", True),
    Param("m", TensorK(MAT), "torch.randn(4, 4, generator=g)"),
    Param("n", INT, "n_value"),
    Param("fl", FLOAT, "0.5 + call * 0.25 * VARY"),
    Param("flag", BOOL, "bool((call * VARY) % 2 == 0)"),
    Param("tag", STR, "'g' + str(call * VARY)"),
    Param("lst", ListK(INT), "[1, 2, n_value]"),
    Param("tl", ListK(TensorK(VEC)), "[torch.randn(4, generator=g) for _ in range(3)]"),
    Param("dt", DictK(TensorK(VEC)), "{'a': torch.randn(4, generator=g), 'b': torch.randn(4, generator=g)}"),
    Param("di", DictK(INT), "{'a': 1, 'c': n_value}"),
    Param("st", SetK(), "{1, 2, n_value}"),
    Param("tp", TupleK((INT, TensorK(VEC))), "(n_value, torch.randn(4, generator=g))"),
    Param("box", ObjK("Box"), "Box(BOX_W, n_value, 'b' + str(call))"),
    Param("pt", ObjK("Point"), "Point(n_value, torch.randn(4, generator=g))"),
    Param("cfg", ObjK("Cfg"), "Cfg(depth=n_value, scale=0.5)"),
    Param("net", NetK(), "Net(FUZZ_SEED % 5)"),
]
PARAM_WEIGHTS = {"x": 5, "y": 4, "w": 3, "m": 2, "n": 4, "fl": 2, "flag": 1, "tag": 1, "lst": 2, "tl": 2,
                 "dt": 1, "di": 1, "st": 1, "tp": 1, "box": 5, "pt": 1, "cfg": 1, "net": 2}
GLOBAL_KINDS = {"G_COUNT": INT, "G_SCALE": FLOAT, "G_FLAG": BOOL, "G_NAME": STR, "G_LIST": ListK(INT),
                "G_T": TensorK(VEC), "G_D": DictK(INT), "G_BOX": ObjK("Box")}
ALIASABLE = ("x", "y", "m", "lst", "tl", "box", "dt")
BATCH_SIZES = [(3, 3, 3), (3, 3, 3), (3, 3, 5), (2, 4, 2), (3, 1, 3)]


class Gen:
    """The state of writing one program: the RNG, the scopes, the lines written so far."""

    def __init__(self, seed, rng, budget, version=1):
        self.seed = seed
        self.version = version      # 2 adds stmts_v2's families and prelude.V2_CLASSES, 3 stmts_v3's
        self.rng = rng
        self.lines = []
        self.indent = 1
        self.counter = 0
        self.nested = 0
        self.has_nested = False
        self.budget = budget
        self.module_scope = Scope()
        for name, kind in GLOBAL_KINDS.items():
            self.module_scope.bind(name, kind)
        self.module_scope.frozen |= set(GLOBAL_KINDS) - {"G_LIST", "G_T", "G_D", "G_BOX"}
        self.fn_scope = self.module_scope.child(function=True)
        self.scope = self.fn_scope
        self.attrs = {"Box": ObjectAttrs(dict(BOX_ATTRS)), "Point": ObjectAttrs(dict(POINT_ATTRS)),
                      "Cfg": ObjectAttrs(dict(CFG_ATTRS))}
        self.global_writes = set()
        self.breakiness = 1.0       # how often expressions read tensor values in Python (exprs.breaks)
        self.deletes_tag = False    # Box.tag may be deleted (then it is never sure: objects outlive calls)
        self.params = []
        self.grad_leaves = []

    def emit(self, text):
        self.lines.append("    " * self.indent + text)

    def fresh(self, prefix):
        self.counter += 1
        return f"{prefix}{self.counter}"

    def rebindable_globals(self):
        return () if self.nested else tuple(sorted(self.global_writes))

    @contextlib.contextmanager
    def block(self, header, **flags):
        self.emit(header)
        outer = self.scope
        self.scope = outer.child(**flags)
        if flags.get("function"):
            self.has_nested = True
        self.indent += 1
        start = len(self.lines)
        try:
            yield self.scope
        finally:
            if len(self.lines) == start:
                self.emit("pass")
            self.indent -= 1
            self.scope = outer

    def statements(self, count):
        for _ in range(count):
            if self.budget <= 0:
                return
            self.budget -= 1
            stmts.statement(self)


def _choose_params(rng):
    names = list(PARAM_WEIGHTS)
    count = rng.randint(1, 5)
    chosen = []
    while len(chosen) < count:
        name = rng.choices(names, weights=[PARAM_WEIGHTS[n] for n in names])[0]
        if name not in chosen:
            chosen.append(name)
    if not any(n in chosen for n in ("x", "y", "w", "m", "tl", "dt", "net")):
        chosen.insert(0, rng.choice(["x", "y"]))
    params = []
    for name in chosen:
        variants = [p for p in PARAMS if p.name == name]
        params.append(rng.choice(variants))
    return params


def _signature(rng, params, extra):
    """The def line's parameter list, and how make_inputs passes each parameter (positional/keyword)."""
    names = [p.name for p in params] + [name for name, _ in extra]
    style = rng.random()
    keyword = set()
    parts = list(names)
    if style < 0.2 and len(names) > 1:
        split = rng.randint(1, len(names) - 1)
        parts = names[:split] + ["*"] + names[split:]
        keyword = set(names[split:])
    elif style < 0.35 and len(names) > 1:
        keyword = set(names[rng.randint(1, len(names) - 1):])      # passed by name, though positional
    return parts, keyword


def _make_inputs(rng, params, aliases, keyword, policy):
    lines = ["", "", "_KEPT = {}", "", "", "def make_inputs(call):",
             "    \"\"\"The arguments of call number `call` (0-based): fresh objects built the same way on "
             "both sides.\"\"\""]
    if policy["reuse"]:
        lines.append("    if 'args' in _KEPT:")
        lines.append("        return _KEPT['args']")
    lines.append(f"    VARY = {int(policy['vary'])}")
    lines.append(f"    B = {policy['batch']}[call]")
    lines.append(f"    n_value = {policy['n']}[call]")
    lines.append("    g = torch.Generator().manual_seed(FUZZ_SEED * 10 + call * VARY)")
    box_w = "torch.randn(4, generator=g)" + (".requires_grad_()" if policy["box_grad"] else "")
    built = []
    for p in params:
        lines.append(f"    {p.name} = {p.build.replace('BOX_W', box_w)}")
        if p.name == "box":
            if policy["box_tag_absent"]:
                lines.append("    if call >= 1 and hasattr(box, 'tag'):")
                lines.append("        del box.tag")
            if policy["box_extra"]:
                lines.append("    if call == 1:")
                lines.append("        box.extra = 5")
        if p.name == "x" and policy["toggle_grad"] and not p.grad_leaf:
            lines.append("    x.requires_grad_(call == 1)")
        built.append(p.name)
    for alias, source in aliases:
        lines.append(f"    {alias} = {source}" if policy["alias_same"] else
                     f"    {alias} = {[p for p in params if p.name == source][0].build.replace('BOX_W', box_w)}")
    positional = [n for n in built + [a for a, _ in aliases] if n not in keyword]
    kwargs = [n for n in built + [a for a, _ in aliases] if n in keyword]
    lines.append(f"    args = ({''.join(n + ', ' for n in positional)})")
    lines.append("    kwargs = {" + ", ".join(f"{n!r}: {n}" for n in kwargs) + "}")
    lines.append("    _KEPT['args'] = (args, kwargs)")
    lines.append("    return args, kwargs")
    return lines


ENTRY_STYLES = ["function"] * 6 + ["method", "module"]


def _entry(style, parts, lines):
    """The entry `f`: a plain function, a bound method of an object with state, or an nn.Module whose
    forward is the body (compiled as a module)."""
    if style == "function":
        return "\n\ndef f(" + ", ".join(parts) + "):\n" + "\n".join(lines) + "\n"
    body = "\n".join("    " + line for line in lines)
    params = ", ".join(["self"] + parts)
    if style == "method":
        return ("\n\nclass Entry:\n    def __init__(self):\n        self.calls = 0\n\n"
                f"    def f({params}):\n        self.calls += 1\n{body}\n\n\nG_ENTRY = Entry()\nf = G_ENTRY.f\n")
    return ("\n\nclass EntryModule(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.calls = 0\n        self.register_buffer('steps', torch.zeros(()))\n\n"
            f"    def forward({params}):\n        self.calls += 1\n        self.steps.add_(1.0)\n{body}\n\n\n"
            "G_ENTRY = EntryModule()\nf = G_ENTRY\n")


def generate(seed, size=None, version=1):
    """The program for this seed (size: the statement budget; default drawn from the seed). Version 1
    is what the CI slice and the first runs used; version 2 adds stmts_v2's families; version 3 adds
    stmts_v3's autocast blocks and draws aot_eager for 70% of the programs (a quarter before)."""
    rng = random.Random(seed)
    backend = "aot_eager" if rng.random() < (0.7 if version >= 3 else 0.25) else "eager"
    calls = rng.choice([2, 3, 3])
    params = _choose_params(rng)
    policy = {
        "reuse": rng.random() < 0.15,
        "vary": rng.random() < 0.4,
        "batch": rng.choice(BATCH_SIZES),
        "n": rng.choice([(2, 2, 2), (2, 2, 3), (1, 1, 1), (3, 0, 3)]),
        "box_grad": rng.random() < 0.2,
        "box_tag_absent": rng.random() < 0.2,
        "box_extra": rng.random() < 0.2,
        "toggle_grad": rng.random() < 0.1,
        "alias_same": rng.random() < 0.7,
    }
    aliases = []
    if rng.random() < 0.15:
        candidates = [p for p in params if p.name in ALIASABLE]
        if candidates:
            source = rng.choice(candidates)
            aliases.append((source.name + "2", source.name))
    gen = Gen(seed, rng, budget=size if size is not None else rng.randint(6, 22), version=version)
    gen.breakiness = rng.choice([0.0, 0.1, 0.3, 1.0])
    if version >= 2:
        # version 1 made the entry's own scope like a nested def's (grad mode unknown), so it never
        # wrote backward(), autograd.grad or tensor hooks at the entry's top level
        gen.fn_scope.grad_on = True
    if policy["box_grad"]:
        gen.attrs["Box"].sure["w"] = TensorK(VEC, grad=True)
    gen.deletes_tag = rng.random() < 0.3
    if policy["box_tag_absent"] or gen.deletes_tag:
        gen.attrs["Box"].maybe["tag"] = gen.attrs["Box"].sure.pop("tag")
    if policy["box_extra"]:
        gen.attrs["Box"].maybe["extra"] = INT
    for p in params:
        kind = p.kind
        if p.name == "x" and policy["toggle_grad"]:
            kind = kind.like(grad=True)
        gen.fn_scope.bind(p.name, kind)
        gen.params.append(p.name)
        if p.grad_leaf:
            gen.grad_leaves.append(p.name)
            gen.fn_scope.pinned.add(p.name)
    for alias, source in aliases:
        kind = gen.fn_scope.lookup(source)
        gen.fn_scope.bind(alias, kind)
        gen.params.append(alias)
        if source in gen.grad_leaves:
            gen.grad_leaves.append(alias)
            gen.fn_scope.pinned.add(alias)
    if rng.random() < 0.35:
        gen.global_writes = set(rng.sample(["G_COUNT", "G_SCALE", "G_FLAG", "G_NAME", "G_T"], rng.randint(1, 3)))
    if version >= 2 and rng.random() < 0.2:
        gen.global_writes.add("G_NEW")              # a global the frame creates
    if gen.global_writes:
        gen.emit("global " + ", ".join(sorted(gen.global_writes)))
    gen.statements(gen.budget)
    gen.emit(stmts.return_text(gen))

    parts, keyword = _signature(rng, params, aliases)
    source = prelude.render(rng, seed, backend, calls, version)
    source += _entry(rng.choice(ENTRY_STYLES), parts, gen.lines)
    source += "\n".join(_make_inputs(rng, params, aliases, keyword, policy)) + "\n"
    return Program(seed, source, backend, calls)
