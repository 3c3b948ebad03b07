"""The package layout stays true: imports between framejit's packages go one way, and no module
imports itself back through others.

Every import statement under framejit/ is read from the source (at module level or inside a function:
a lazy import is still an import), plus the modules named as strings to importlib (the replay harness
finds its converter that way). The rule, lowest first:

    errors, config, _words,              the leaves: import nothing of framejit
    dynamo_reads, torch_versions, random_draws
    bytecode/, accuracy/, persist/       the leaves only
    backends/                            persist/ and the leaves
    shapes/                              bytecode/ and the leaves
    translate/                           shapes/, bytecode/ and the leaves
    distributed/                         translate/, shapes/, backends/, bytecode/ and the leaves
    convert/                             translate/, distributed/, backends/, shapes/, bytecode/, leaves
    runtime/                             convert/ and all it may import, and observe/ (beside)
    observe/                             beside the pipeline: backends/, persist/ (the signing key) and the
                                         leaves only (a conversion reports to it through the observation
                                         the runtime hands it)
    tools/ (replay, explain, report/)    on top of runtime/: they re-run conversions or read the cache
    torch_compile_args                   backends/ and the leaves (torch.compile's arguments as framejit's)
    api                                  everything above
    __init__, __main__, cli, demo, examples, testing   the entry points: anything

Inside translate/ the rooms are ranked too, and a module imports only rooms of its rank or lower
(values/ holds its kinds by family: tensors/, numbers/, containers/, dicts/, objects/, modules/,
functions/, iterators/, managers/, all of rank 1; lookasides/ alone registers lookasides, and importing
it installs them all):

    0  dispatch (the opcode and lookaside tables), source
    1  values/        2  graph/, lookasides/        3  guards/
    4  side_effects, context, calls        5  ops/        6  translator

Inside guards/, the kinds (guards/kinds/) are what the guard set and the plans dispatch to: they import
only the guards/ helpers that read or compare values, never the set or the plans.

The interpreter's own recursion (a lookaside or a value calling back into the call dispatch) goes
through the translator it is given (tx.call, tx.call_method, tx.inline, tx.child, tx.load_global), not
an import.
"""
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "framejit"

LEAVES = {"framejit.errors", "framejit.config", "framejit._words", "framejit.dynamo_reads", "framejit.torch_versions",
          "framejit.random_draws"}
ENTRY_POINTS = {"framejit", "framejit.__main__", "framejit.cli", "framejit.demo", "framejit.examples",
                "framejit.testing"}
ALLOWED = {
    "leaves": set(),
    "bytecode": {"leaves"},
    "persist": {"leaves"},
    "backends": {"leaves", "persist"},
    "accuracy": {"leaves"},                                    # compare results, clone inputs, minify graphs
    "shapes": {"leaves", "bytecode"},                          # symbolic sizes
    "translate": {"leaves", "bytecode", "shapes"},
    "distributed": {"leaves", "bytecode", "shapes", "translate", "backends"},
    "convert": {"leaves", "bytecode", "shapes", "translate", "backends", "distributed", "accuracy"},
    "runtime": {"leaves", "bytecode", "backends", "shapes", "translate", "distributed", "convert", "observe",
                "accuracy", "persist"},
    "observe": {"leaves", "backends", "persist"},          # persist/signing.py signs records too
    "tools": {"leaves", "bytecode", "backends", "shapes", "translate", "distributed", "convert", "runtime",
              "observe", "accuracy", "persist"},
    "torch_compile_args": {"leaves", "backends"},     # torch.compile's arguments as framejit's (api uses it)
    "api": {"leaves", "persist", "bytecode", "backends", "shapes", "translate", "distributed", "convert", "runtime",
            "observe", "tools", "accuracy", "torch_compile_args"},
}
TRANSLATE_RANKS = {
    "dispatch": 0, "source": 0,
    "values": 1,
    "graph": 2, "lookasides": 2,
    "guards": 3,
    "side_effects": 4, "context": 4, "calls": 4,
    "ops": 5,
    "translator": 6,
}


GUARD_KINDS = "framejit.translate.guards.kinds"
GUARD_KIND_HELPERS = {"framejit.translate.guards.const_equality", "framejit.translate.guards.tensor_words",
                      "framejit.translate.guards.native_state"}


def _modules():
    """{module name: (path, is_package)} for every framejit module (the C extension included)."""
    found = {}
    for path in ROOT.rglob("*.py"):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        if is_pkg:
            parts.pop()
        found[".".join(parts)] = (path, is_pkg)
    for path in ROOT.glob("*.c"):
        found[f"framejit.{path.stem}"] = (None, False)
    return found


MODULES = _modules()


def _imports(name):
    """(line, imported module) for every framejit module `name` imports, at any depth of its file."""
    path, is_pkg = MODULES[name]
    return [] if path is None else _imports_in(path.read_text(), name, is_pkg)


def _imports_in(source, name, is_pkg):
    package = name.split(".") if is_pkg else name.split(".")[:-1]
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = ".".join(package[:len(package) - node.level + 1] + ([node.module] if node.module else []))
            else:
                base = node.module
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                out.append((node.lineno, sub if sub in MODULES else base))
        elif isinstance(node, ast.Import):
            out.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", None) in ("import_module", "find_spec") \
                and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str) \
                and node.args[0].value != "framejit":
            # (the package itself is imported before any of its modules: looking its public surface up
            # at run time, as the replay harness's fallback to framejit.compile does, orders nothing)
            out.append((node.lineno, node.args[0].value))
    return [(line, target) for line, target in out if target.split(".")[0] == "framejit"]


GRAPH = {name: _imports(name) for name in MODULES}


def _room(name):
    if name in LEAVES:
        return "leaves"
    if name in ENTRY_POINTS:
        return "entry"
    if name == "framejit.api":
        return "api"
    return name.split(".")[1]


def _translate_rank(name):
    return TRANSLATE_RANKS[name.split(".")[2]] if name.count(".") >= 2 else 0


def test_every_module_has_a_room():
    rooms = {_room(name) for name in MODULES}
    assert rooms <= set(ALLOWED) | {"entry"}, sorted(rooms - set(ALLOWED) - {"entry"})
    unranked = {n.split(".")[2] for n in MODULES if n.startswith("framejit.translate.")} - set(TRANSLATE_RANKS)
    assert not unranked, f"rank these rooms of translate/ in TRANSLATE_RANKS: {sorted(unranked)}"


def test_imports_between_packages_go_down():
    wrong = []
    for name, imports in GRAPH.items():
        room = _room(name)
        if room == "entry":
            continue
        for line, target in imports:
            if target not in MODULES:
                wrong.append(f"{name}:{line} imports {target}, which does not exist")
                continue
            to = _room(target)
            if to != room and to not in ALLOWED[room]:
                wrong.append(f"{name}:{line} ({room}) imports {target} ({to})")
    assert not wrong, "imports against the layout:\n" + "\n".join(wrong)


def test_imports_inside_translate_go_down():
    wrong = []
    for name, imports in GRAPH.items():
        if not name.startswith("framejit.translate."):
            continue
        for line, target in imports:
            if target.startswith("framejit.translate.") and _translate_rank(target) > _translate_rank(name):
                wrong.append(f"{name}:{line} (rank {_translate_rank(name)}) imports {target} "
                             f"(rank {_translate_rank(target)})")
    assert not wrong, "imports up the rooms of translate/:\n" + "\n".join(wrong)


def test_guard_kinds_import_no_guard_plan():
    wrong = []
    for name, imports in GRAPH.items():
        if not name.startswith(GUARD_KINDS):
            continue
        for line, target in imports:
            if target.startswith("framejit.translate.") and not target.startswith(GUARD_KINDS) and \
                    target not in GUARD_KIND_HELPERS:
                wrong.append(f"{name}:{line} imports {target}")
    assert not wrong, "guard kinds importing above their helpers:\n" + "\n".join(wrong)


def _cycles():
    """Strongly connected groups of modules (Tarjan), biggest first."""
    index, low, stack, on_stack, groups = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for _, w in GRAPH.get(v, ()):
            if w not in MODULES:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1 or any(t == v for _, t in GRAPH.get(v, ())):
                groups.append(sorted(group))

    for v in sorted(MODULES):
        if v not in index:
            visit(v)
    return sorted(groups, key=len, reverse=True)


def test_no_import_cycles():
    cycles = [c for c in _cycles() if not set(c) <= ENTRY_POINTS]
    assert not cycles, "modules that import each other (directly or through others):\n" + \
        "\n".join(", ".join(c) for c in cycles)


def test_imports_inside_functions_and_by_name_are_imports():
    """A cycle hidden in a function, or behind importlib, is still a cycle."""
    source = ("import torch\n"
              "def f(tx):\n"
              "    from ..calls import call_value\n"
              "    from . import objects\n"
              "    return importlib.import_module('framejit.runtime.cache')\n")
    found = {target for _, target in _imports_in(source, "framejit.translate.values.functions", False)}
    assert found == {"framejit.translate.calls", "framejit.translate.values.objects", "framejit.runtime.cache"}


TRANSLATE = ROOT / "translate"
REGISTRIES = {"LOOKASIDES", "CODE_LOOKASIDES"}


def _registrations(path):
    """(line, text) of every write into a lookaside table, and every @lookaside(...) use, in path."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AugAssign) else []
        for t in targets:
            if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and t.value.id in REGISTRIES:
                out.append((node.lineno, ast.unparse(t)))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                isinstance(node.func.value, ast.Name) and node.func.value.id in REGISTRIES and \
                node.func.attr in ("update", "setdefault"):
            out.append((node.lineno, ast.unparse(node.func)))
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            out.extend((d.lineno, "@lookaside(...)") for d in node.decorator_list
                       if isinstance(d, ast.Call) and isinstance(d.func, ast.Name) and d.func.id == "lookaside")
    return out


def test_lookasides_register_in_lookasides_only():
    """translate/lookasides/ installs every lookaside (its __init__ imports its modules): a value kind's
    module holds the implementation, never the registration, so no import has a hidden effect."""
    wrong = [f"{p.relative_to(ROOT)}:{line}: {text}" for p in sorted(ROOT.rglob("*.py"))
             if TRANSLATE / "lookasides" not in p.parents and p.name != "dispatch.py"
             for line, text in _registrations(p)]
    assert not wrong, "register these in a module of translate/lookasides/:\n" + "\n".join(wrong)


def test_every_lookaside_module_is_installed():
    installed = {target.rsplit(".", 1)[1] for _, target in GRAPH["framejit.translate.lookasides"]}
    modules = {p.stem for p in (TRANSLATE / "lookasides").glob("*.py") if p.stem != "__init__"}
    assert modules <= installed, f"import these in translate/lookasides/__init__.py: {sorted(modules - installed)}"


def test_value_module_names_do_not_repeat_inside_translate():
    """A name means one thing: values/dicts/identity_hashed_keys.py, not a second identity_keys.py."""
    seen = {}
    for p in sorted(TRANSLATE.rglob("*.py")):
        if p.stem != "__init__":
            seen.setdefault(p.stem, []).append(str(p.relative_to(TRANSLATE)))
    repeated = {name: paths for name, paths in seen.items()
                if len(paths) > 1 and any(path.startswith("values/") for path in paths)}
    assert not repeated, f"module names used twice in translate/: {repeated}"
