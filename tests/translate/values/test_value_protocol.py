"""The value protocol is explicit: every operation the translator asks of a value is a method of Value
(framejit/translate/values/base.py) with a default, and callers call it -- nobody probes a value for a
method with hasattr, or tells kinds apart by class name.

Why this exists: kinds used to opt into about 18 optional methods that callers probed for in about 30
places, and codegen and the break decision each held their own copy of which kinds can be rebuilt and
what they contain. A new kind then had to be known to every one of those places.
"""
import ast
import inspect
from pathlib import Path

import framejit  # noqa: F401  (imports every kind)
from framejit.translate.values.base import GENERIC, Const, IteratorValue, ObjectValue, SeqValue, Value

ROOT = Path(framejit.__file__).resolve().parent
BASE = ROOT / "translate" / "values" / "base.py"
PROTOCOL = {name for name, member in vars(Value).items() if inspect.isfunction(member) and not name.startswith("_")} \
    | {"made_in_frame", "children", "store_cached"}


def _probes(path):
    """(line, text) of hasattr(x, "op") / getattr(x, "op", default) with op a protocol operation."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("hasattr", "getattr") \
                and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) and node.args[1].value in PROTOCOL \
                and (node.func.id == "hasattr" or len(node.args) == 3):
            out.append((node.lineno, ast.unparse(node)))
    return out


def _subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def test_no_probe_of_the_value_protocol_outside_base():
    found = [f"{p.relative_to(ROOT)}:{line}: {text}" for p in sorted(ROOT.rglob("*.py")) if p != BASE
             for line, text in _probes(p)]
    assert not found, "call the Value method (values/base.py documents its default):\n" + "\n".join(found)


def test_the_probe_finder_finds_probes():
    source = 'def f(v):\n    return hasattr(v, "truth") or getattr(type(v), "made_in_frame", False)\n'
    path = Path(__file__).with_name("_probe_sample.py")
    path.write_text(source)
    try:
        assert [line for line, _ in _probes(path)] == [2, 2]
    finally:
        path.unlink()


def test_no_kind_is_told_apart_by_its_class_name():
    names = {sub.__name__ for sub in _subclasses(Value)}
    found = []
    for p in sorted((ROOT / "translate").rglob("*.py")) + sorted((ROOT / "convert").rglob("*.py")):
        text = p.read_text()
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Compare):
                named = {c.value for c in ast.walk(node) if isinstance(c, ast.Constant)} & names
                if named:
                    found.append(f"{p.relative_to(ROOT)}:{node.lineno}: {ast.get_source_segment(text, node)}")
    assert not found, "a kind told apart by its class name (use isinstance or a Value method):\n" + "\n".join(found)


def test_a_kind_that_rebuilds_names_its_parts():
    """rebuild() and rebuild_parts() go together: codegen walks the parts, the break decision asks them."""
    wrong = []
    for kind in _subclasses(Value):
        rebuilds = kind.rebuild is not Value.rebuild
        has_parts = kind.rebuild_parts is not Value.rebuild_parts
        if rebuilds and not has_parts:
            wrong.append(f"{kind.__module__}.{kind.__qualname__} rebuilds but says it cannot be rebuilt")
    assert not wrong, "\n".join(wrong)


def test_defaults():
    v = IteratorValue([Const(1)])
    assert v.rebuild_parts() is None and v.truth(None) is GENERIC and v.getitem(None, Const(0)) is GENERIC
    assert not v.is_lazy_iterator() and not v.is_callable()
    assert SeqValue(list, [Const(1)]).rebuild_parts()[0].value == 1
    assert ObjectValue(len).rebuild_parts() == []
