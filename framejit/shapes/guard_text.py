"""The ShapeEnv's facts about one conversion's symbols as guard text, and in words.

A symbolic entry is valid for every call whose sizes satisfy what the conversion relied on:

  * each symbol's range (at least 2 for a size, torch's 0/1 specialization, at least 0 for a size from 0
    (oblivious.py); mark_dynamic's min/max),
  * duck typing: every other read of a symbol equals its first read (`y.size(0) == x.size(0)`),
  * the ShapeEnv's replacements (a symbol found equal to an expression of others, or to a constant),
  * the ShapeEnv's guards: every relation a branch, a view or a broadcast decided.

`render` gives one boolean expression whose first term per symbol binds it by walrus
(`(__fj_sym0 := x.size(0)) >= 2`), so each size is read once; `terms` gives the same facts one by one,
each standalone (sizes read in place), with words, for recompile reasons and explain().
"""
import sympy
from torch.utils._sympy.numbers import int_oo
from torch.utils._sympy.printers import PythonPrinter

from ..errors import GraphBreak

_PRINTER = PythonPrinter()


def _finite(bound):
    """Is a range bound a finite number (not torch's int_oo, sympy's oo)?"""
    try:
        int(bound)
    except Exception:
        return False
    return bound not in (int_oo, -int_oo, sympy.oo, -sympy.oo)


def _stride_facts(shapes):
    """[(read text, words, sympy expression)]: each stride of a non-contiguous symbolic input equals the
    expression its fake was made with (symbols.py `_strides`), its storage offset 0."""
    out = []
    for text, words, value in shapes.stride_checks:
        node = getattr(value, "node", None)
        expr = shapes.env.replace(node.expr) if node is not None else sympy.Integer(value)
        out.append((text, words, expr))
    return out


def _facts(shapes):
    """[(sympy relation over the symbols, words for where it came from)], in a stable order."""
    env = shapes.env
    facts = []
    for sym, info in shapes.symbols.items():
        rng = env.var_to_range.get(sym)
        lo = rng.lower if rng is not None else None
        hi = rng.upper if rng is not None else None
        if info.number is None and not info.from_zero and (lo is None or not _finite(lo) or lo < 2):
            lo = sympy.Integer(2)
        if info.bounds[0] is not None:
            lo = sympy.Integer(max(int(lo), info.bounds[0])) if lo is not None and _finite(lo) else sympy.Integer(info.bounds[0])
        if info.bounds[1] is not None:
            hi = sympy.Integer(min(int(hi), info.bounds[1])) if hi is not None and _finite(hi) else sympy.Integer(info.bounds[1])
        if lo is not None and _finite(lo):
            facts.append((sympy.Ge(sym, lo, evaluate=False), "range"))
        if hi is not None and _finite(hi):
            facts.append((sympy.Le(sym, hi, evaluate=False), "range"))
    for sym, value in env.replacements.items():
        if sym in shapes.symbols:
            facts.append((sympy.Eq(sym, value, evaluate=False), "replacement"))
    ranges = tuple(env.var_to_range.items())
    for g in env.guards:
        if not _implied_by_ranges(env, g.expr, ranges):
            facts.append((g.expr, "relation"))
    return facts


def _implied_by_ranges(env, expr, ranges):
    """Does the relation follow from the symbols' ranges alone (which are guarded themselves)? A view's
    `Eq(Mod(s0*s1, s1), 0)` does; `s1 > 4` (a branch) narrowed the range and is checked as the range."""
    try:
        return env._maybe_evaluate_static(expr, axioms=(), var_to_range=ranges) == sympy.true
    except Exception:
        return False


def _check_known(shapes, expr):
    unknown = [s for s in expr.free_symbols if s not in shapes.symbols]
    if unknown:
        raise GraphBreak("dynamic shape", f"a shape guard depends on a symbol framejit did not make ({unknown[0]})")


def render(shapes):
    """One Python boolean expression (text) over the entry's arguments, or "True"."""
    names = {sym: sympy.Symbol(f"__fj_sym{i}", integer=True) for i, sym in enumerate(shapes.symbols)}
    facts = _facts(shapes)
    lower = {}                       # symbol -> its lower bound, checked where the symbol is read
    for expr, kind in facts:
        if kind == "range" and isinstance(expr, sympy.Ge) and expr.lhs in names and expr.lhs not in lower:
            lower[expr.lhs] = expr
    parts = []
    for sym, info in shapes.symbols.items():
        first, _ = info.reads[0]
        if sym in lower:             # bind each symbol where it is first read: `(__fj_sym0 := x.size(0)) >= 2`
            parts.append(f"({names[sym]} := {first}) >= {_PRINTER.doprint(lower[sym].rhs)}")
        else:
            parts.append(f"(({names[sym]} := {first}) is not None)")
        parts += [f"{text} == {names[sym]}" for text, _ in info.reads[1:]]
    for text, _, expr in _stride_facts(shapes):         # after every symbol is bound
        _check_known(shapes, expr)
        parts.append(f"{text} == {_PRINTER.doprint(expr.xreplace(names))}")
    seen = {id(e) for e in lower.values()}
    texts = set()
    for expr, _ in facts:
        if id(expr) in seen:
            continue
        _check_known(shapes, expr)
        text = _PRINTER.doprint(expr.xreplace(names))
        if text not in texts and text != "True":
            texts.add(text)
            parts.append(f"({text})")
    return " and ".join(parts) if parts else "True"


def terms(shapes):
    """[(standalone Python text, words)], each fact on its own: the reads and relations."""
    reads = {sym: sympy.Symbol(f"({info.reads[0][0]})", integer=True) for sym, info in shapes.symbols.items()}
    words = {sym: sympy.Symbol(info.reads[0][1]) for sym, info in shapes.symbols.items()}
    out = []
    for sym, info in shapes.symbols.items():
        first_text, first_words = info.reads[0]
        out += [(f"{text} == {first_text}", f"{w} == {first_words}") for text, w in info.reads[1:]]
    for text, w, expr in _stride_facts(shapes):
        if all(s in shapes.symbols for s in expr.free_symbols):
            out.append((f"{text} == {_PRINTER.doprint(expr.xreplace(reads))}",
                        f"{w} == {_PRINTER.doprint(expr.xreplace(words))}"))
    for expr, _ in _facts(shapes):
        if any(s not in shapes.symbols for s in expr.free_symbols):
            continue
        out.append((_PRINTER.doprint(expr.xreplace(reads)), _PRINTER.doprint(expr.xreplace(words))))
    return out


def describe(shapes):
    """Words for explain() and the report: the dynamic dims with their symbols, then the shape guards."""
    lines = []
    for sym, info in shapes.symbols.items():
        where = ", ".join(w for _, w in info.reads)
        lines.append(f"{where}: dynamic ({sym})")
    lines += [w for _, w in terms(shapes)]
    return lines


def explain_miss(shapes, env):
    """Words for the first fact that no longer holds for the call's arguments (`env`), or None."""
    for text, words in terms(shapes):
        try:
            ok = eval(text, env)
        except Exception as e:
            return f"{words} could not be checked ({type(e).__name__})"
        if not ok:
            values = []
            for sym, info in shapes.symbols.items():
                if info.reads[0][1] in words:
                    try:
                        values.append(f"{info.reads[0][1]} = {eval(info.reads[0][0], env)}")
                    except Exception:
                        pass
            return f"{words} no longer holds ({', '.join(values)})" if values else f"{words} no longer holds"
    return None
