"""Shrink a failing program while it keeps failing the same way.

Greedy deletion over the program's AST: for every statement of the entry function (innermost blocks
too) and every module-level statement the program does not need to run (globals, classes, helpers),
try the program without it; a compound statement is also tried replaced by its body; so are the
statements of module-level class bodies. A candidate is
kept when the runner still reports a mismatch of the wanted kind (and, if given, one whose text
contains `needle`). Passes repeat until nothing more can go; then the number of calls is lowered.
Each candidate runs in a pool worker, so a candidate that loops forever only costs the time limit.
"""
import ast
import copy

ESSENTIAL = {"f", "make_inputs", "_KEPT", "FUZZ_SEED", "FUZZ_BACKEND", "FUZZ_CALLS", "G_ENTRY", "Entry",
             "EntryModule"}


def _entry(tree):
    """The entry function's def: `f`, or the method `f` / `forward` of the Entry classes."""
    for stmt in tree.body:
        if isinstance(stmt, ast.FunctionDef) and stmt.name == "f":
            return stmt
        if isinstance(stmt, ast.ClassDef) and stmt.name in ("Entry", "EntryModule"):
            for item in stmt.body:
                if isinstance(item, ast.FunctionDef) and item.name in ("f", "forward"):
                    return item
    raise ValueError("no entry function")


def _signature(answer, kind, needle):
    for m in answer.get("mismatches", ()):
        if m["kind"] == kind and (needle is None or needle in m["detail"] or needle in m["where"]):
            return True
    return False


def _bodies(node):
    """Every statement list inside node (itself included when it has one)."""
    for field in ("body", "orelse", "finalbody"):
        stmts = getattr(node, field, None)
        if isinstance(stmts, list) and stmts and isinstance(stmts[0], ast.stmt):
            yield stmts
            for stmt in stmts:
                yield from _bodies(stmt)
    for handler in getattr(node, "handlers", ()):
        yield handler.body
        for stmt in handler.body:
            yield from _bodies(stmt)


def _module_level_removable(stmt):
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return False
    names = set()
    if isinstance(stmt, (ast.FunctionDef, ast.ClassDef)):
        names.add(stmt.name)
    for target in getattr(stmt, "targets", ()):
        if isinstance(target, ast.Name):
            names.add(target.id)
    return not (names & ESSENTIAL)


def _candidates(tree):
    """(description, function that edits a copy of the tree) for every single-step simplification."""
    out = []
    lists = list(_bodies(_entry(tree)))
    for li, stmts in enumerate(lists):
        for si in range(len(stmts) - 1, -1, -1):
            out.append(("f", li, si, "drop"))
            if any(isinstance(getattr(stmts[si], f, None), list) for f in ("body",)) and \
                    not isinstance(stmts[si], ast.FunctionDef):
                out.append(("f", li, si, "inline"))
    for si in range(len(tree.body) - 1, -1, -1):
        if _module_level_removable(tree.body[si]):
            out.append(("module", 0, si, "drop"))
    for ci, stmt in enumerate(tree.body):
        if isinstance(stmt, ast.ClassDef) and stmt.name not in ("Entry", "EntryModule"):
            for si in range(len(stmt.body) - 1, -1, -1):
                out.append(("class", ci, si, "drop"))
    return out


def _apply(tree, edit):
    tree = copy.deepcopy(tree)
    where, li, si, action = edit
    if where == "module":
        stmts = tree.body
    elif where == "class":
        stmts = tree.body[li].body
    else:
        stmts = list(_bodies(_entry(tree)))[li]
    if si >= len(stmts):
        return None
    target = stmts[si]
    if action == "inline" and not isinstance(getattr(target, "body", None), list):
        return None
    if action == "drop":
        replacement = []
    else:
        replacement = list(target.body)
        if isinstance(target, ast.Try):
            replacement += target.finalbody
    stmts[si:si + 1] = replacement
    if not stmts:
        stmts.append(ast.Pass())
    return tree


def _set_calls(tree, calls):
    tree = copy.deepcopy(tree)
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "FUZZ_CALLS" for t in stmt.targets):
            stmt.value = ast.Constant(calls)
    return tree


def minimize(source, kind, pool, needle=None, log=None, max_runs=600):
    """The smallest program found that still shows a `kind` mismatch (source text), and runs used."""
    tree = ast.parse(source)
    runs = 0

    def still_fails(candidate):
        nonlocal runs
        runs += 1
        text = ast.unparse(candidate) + "\n"
        return _signature(pool.run_one(text, name="min"), kind, needle), text

    ok, best_text = still_fails(tree)
    if not ok:
        raise ValueError(f"the program does not show a {kind!r} mismatch to begin with")
    changed = True
    while changed and runs < max_runs:
        changed = False
        edits = _candidates(tree)
        position = 0
        while position < len(edits) and runs < max_runs:
            edit = edits[position]
            position += 1
            candidate = _apply(tree, edit)
            if candidate is None or len(ast.unparse(candidate)) >= len(best_text) - 1:
                continue                            # no smaller (a lone statement became `pass`)
            ok, text = still_fails(candidate)
            if ok:
                tree, best_text, changed = candidate, text, True
                edits = _candidates(tree)           # indices moved; carry on from about the same place
                position -= 1
                if log:
                    log(f"  {edit[3]} {edit[0]} statement: {len(best_text.splitlines())} lines left")
    for calls in (1, 2):
        candidate = _set_calls(tree, calls)
        ok, text = still_fails(candidate)
        if ok:
            tree, best_text = candidate, text
            break
    return best_text, runs
