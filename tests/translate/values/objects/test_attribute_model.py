"""Differential tests of the attribute model (framejit/translate/values/attribute_model.py).

Two families a differential fuzzer found on attributes of objects passed in:
  * answers that depend on an attribute, key or global being *absent* (hasattr false, a getattr
    default, a caught AttributeError or NameError, `'k' in o.__dict__`, a method not shadowed by an
    instance attribute) must be guarded, so a later call where it exists does what eager does. These
    tests call the compiled function several times and change the state in between (check_script).
  * one model of an object's attributes, whichever way the frame writes, deletes and reads them
    (`o.k = v`, setattr, object.__setattr__, `o.__dict__[k] = v`, `vars(o).update()`, delattr,
    `del o.__dict__[k]`, dict methods on `o.__dict__`), on objects passed in, globals, objects made
    in the frame, classes, slots, properties, __getattr__ / __getattribute__ overrides, nested and
    aliased objects, around graph breaks and caught exceptions.
"""
import dataclasses
import functools
import types

import pytest
import torch

import framejit
from tests.differential import CASE_FIELDS, case, check, check_script, outcome, randn, run_case

X = randn(3, seed=1)
ONE = dict(fullgraph=True, graphs=1)      # the model needs no graph break for these


def _same(a, b):
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and torch.equal(a, b)
    if isinstance(a, dict):
        return isinstance(b, dict) and list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    return a == b


class Obj:
    """A plain object compared by its attributes (in order), so the harness sees what the frame did."""

    def __init__(self, **attrs):
        self.__dict__.update(attrs)

    def __eq__(self, other):
        return type(other) is type(self) and _same(vars(self), vars(other))

    __hash__ = object.__hash__


class WithClassValue(Obj):
    v = 5


class Slots:
    __slots__ = ("a", "b")

    def __init__(self, **attrs):
        for k, v in attrs.items():
            setattr(self, k, v)

    def __eq__(self, other):
        return type(other) is Slots and all(getattr(self, k, None) == getattr(other, k, None) for k in self.__slots__)

    __hash__ = object.__hash__


class Fallback(Obj):
    """__getattr__ answers names starting with 'dyn'."""

    def __getattr__(self, name):
        if name.startswith("dyn"):
            return len(name)
        raise AttributeError(name)


class Renaming(Obj):
    """A __getattribute__ of its own: `virtual` is made up, the rest is object's lookup."""
    k = 100

    def __getattribute__(self, name):
        if name == "virtual":
            return 5
        return object.__getattribute__(self, name)


class Temperature(Obj):
    def __init__(self, celsius=1.0):
        self._c = celsius

    @property
    def fahrenheit(self):
        return self._c * 9 / 5 + 32

    @fahrenheit.setter
    def fahrenheit(self, value):
        self._c = (value - 32) * 5 / 9

    @fahrenheit.deleter
    def fahrenheit(self):
        del self._c


class Doubled:
    """A data descriptor written in Python: stores twice the value under a private name."""

    def __set_name__(self, owner, name):
        self.key = "_" + name

    def __get__(self, obj, cls=None):
        return self if obj is None else obj.__dict__.get(self.key, 0)

    def __set__(self, obj, value):
        obj.__dict__[self.key] = int(value) * 2

    def __delete__(self, obj):
        del obj.__dict__[self.key]


class Record(Obj):
    size = Doubled()


COMPUTED = []


class Lazy(Obj):
    @functools.cached_property
    def total(self):
        COMPUTED.append("total")
        return 7


# ---------------------------------------------------------------- absence, across calls


def flag_or_default(x, o):
    if hasattr(o, "flag"):
        return x + 1
    return x + getattr(o, "v", 10)


def test_an_attribute_that_appears_after_the_first_call_is_seen():
    """The issue's repro: a config flag set after the first call."""
    def script(f):
        c = Obj()
        seen = [outcome(f, X, c)]
        c.flag = 1
        seen.append(outcome(f, X, c))
        del c.flag
        c.v = 3
        seen.append(outcome(f, X, c))
        del c.v
        seen.append(outcome(f, X, c))
        return seen
    check_script(flag_or_default, script)


CONFIG = Obj()


def global_config_flag(x):
    if hasattr(CONFIG, "flag"):
        return x + 1
    return x + getattr(CONFIG, "scale", 10)


def test_a_global_config_flag_set_later_is_seen():
    def script(f):
        CONFIG.__dict__.clear()
        seen = [outcome(f, X)]
        CONFIG.flag = True
        seen.append(outcome(f, X))
        del CONFIG.flag
        CONFIG.scale = 2
        seen.append(outcome(f, X))
        return seen
    check_script(global_config_flag, script)


def caught_attribute_error(x, o):
    try:
        v = o.v
    except AttributeError:
        v = 10
    return x + v


def in_instance_dict(x, o):
    return x + ("k" in o.__dict__) + ("k" in vars(o)) + vars(o).get("j", 7)


def method_call(x, o):
    return o.method(x)


def getattr_on_class(x, cls):
    return x + getattr(cls, "v", 10) + hasattr(cls, "w")


def nested_default(x, o):
    return x + getattr(o.inner, "v", 10)


def slot_or_default(x, o):
    return x + hasattr(o, "a") + getattr(o, "a", 5)


def fallback_or_default(x, o):
    return x + o.dyn + getattr(o, "other", 1)


def own_lookup_default(x, o):
    return x + o.virtual + getattr(o, "zz", 7)


def module_default(x, m):
    return x + getattr(m, "v", 10)


def _appears(make, name, value=1):
    def script(f):
        o = make()
        seen = [outcome(f, X, o)]
        setattr(o, name, value)
        seen.append(outcome(f, X, o))
        delattr(o, name)
        seen.append(outcome(f, X, o))
        return seen
    return script


def _method_shadowed_then_replaced(f):
    class K:
        def method(self, x):
            return x + 1
    o = K()
    seen = [outcome(f, X, o)]
    o.method = lambda x: x * 0 + 42             # an instance attribute shadows the class's function
    seen.append(outcome(f, X, o))
    del o.method
    K.method = lambda self, x: x + 100          # the class's function replaced
    seen.append(outcome(f, X, o))
    return seen


def _class_gains_attribute(f):
    class Base:
        pass

    class K(Base):
        pass
    seen = [outcome(f, X, K)]
    Base.v = 1                                   # through a base class
    seen.append(outcome(f, X, K))
    K.w = 2
    seen.append(outcome(f, X, K))
    return seen


def _nested_changes(f):
    o = Obj(inner=Obj())
    seen = [outcome(f, X, o)]
    o.inner.v = 1
    seen.append(outcome(f, X, o))
    o.inner = Obj()
    seen.append(outcome(f, X, o))
    return seen


def _class_value_shadowed(f):
    o = WithClassValue()
    seen = [outcome(f, X, o)]
    o.v = 1
    seen.append(outcome(f, X, o))
    del o.v
    WithClassValue.v = 9
    try:
        seen.append(outcome(f, X, o))
    finally:
        WithClassValue.v = 5
    return seen


def class_value(x, o):
    return x + o.v + getattr(o, "v", 100)


ACROSS_CALLS = [
    (caught_attribute_error, _appears(Obj, "v")),
    (in_instance_dict, _appears(Obj, "k")),
    (in_instance_dict, _appears(Obj, "j", 3)),
    (method_call, _method_shadowed_then_replaced),
    (getattr_on_class, _class_gains_attribute),
    (nested_default, _nested_changes),
    (class_value, _class_value_shadowed),
    (slot_or_default, _appears(Slots, "a", 2)),
    (fallback_or_default, _appears(Fallback, "other", 4)),
    (fallback_or_default, _appears(Fallback, "dyn", 10)),
    (own_lookup_default, _appears(Renaming, "zz")),
    (module_default, _appears(lambda: types.ModuleType("fj_test_module"), "v")),
    (flag_or_default, _appears(types.SimpleNamespace, "flag")),
]


@pytest.mark.parametrize("fn,script", ACROSS_CALLS, ids=[f"{f.__name__}-{s.__name__}" for f, s in ACROSS_CALLS])
def test_absence_is_guarded(fn, script):
    check_script(fn, script)


def missing_global(x):
    try:
        v = MAYBE_DEFINED          # noqa: F821  (defined and removed by the test)
    except NameError:
        v = 10
    return x + v


def test_a_global_defined_after_a_caught_name_error_is_seen():
    g = globals()

    def script(f):
        g.pop("MAYBE_DEFINED", None)
        seen = [outcome(f, X)]
        g["MAYBE_DEFINED"] = 1
        seen.append(outcome(f, X))
        del g["MAYBE_DEFINED"]
        seen.append(outcome(f, X))
        return seen
    check_script(missing_global, script)


class Point:
    def shifted(self, x):
        return x + 1


def made_in_frame(x):
    p = Point()
    return p.shifted(x) + getattr(p, "scale", 10)


def test_the_class_of_an_object_made_in_the_frame_is_guarded():
    def script(f):
        seen = [outcome(f, X)]
        original = Point.shifted
        Point.shifted = lambda self, x: x + 100
        seen.append(outcome(f, X))
        Point.scale = 5
        seen.append(outcome(f, X))
        del Point.scale
        Point.shifted = original
        seen.append(outcome(f, X))
        return seen
    check_script(made_in_frame, script)


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)

    def forward(self, x):
        y = self.lin(x)
        if getattr(self, "extra", None) is not None:
            y = y + self.extra
        if hasattr(self, "flag"):
            y = y * 2
        return y


def test_a_module_attribute_that_appears_is_seen_without_a_per_call_hasattr():
    torch.manual_seed(0)
    model = Model()
    compiled = framejit.compile(model)
    x = randn(3)
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model.lin(x))
        code = "\n".join(framejit.explain(model)(x).transformed_code)
        assert "hasattr" not in code, code        # under the module watch (translate/guards/module_guards.py)
        model.extra = 3.0
        torch.testing.assert_close(compiled(x), model.lin(x) + 3.0)
        model.flag = True
        torch.testing.assert_close(compiled(x), (model.lin(x) + 3.0) * 2)
        del model.flag, model.extra
        torch.testing.assert_close(compiled(x), model.lin(x))


# ---------------------------------------------------------------- one model, within a call


def dict_write_then_attribute_read(x, o):
    o.a = 1
    o.__dict__["b"] = 2
    return x + o.b + o.a


def vars_update_then_read(x, o):
    vars(o).update(a=1, b=2)
    o.c = 3
    return x + o.a + o.b + o.c, list(vars(o))


def object_setattr_then_dict_read(x, o):
    object.__setattr__(o, "a", 5)
    return x + o.__dict__["a"] + len(o.__dict__)


def delattr_then_hasattr_and_default(x, o):
    delattr(o, "a")
    return x + hasattr(o, "a") + getattr(o, "a", 7)


def dict_delete_then_attribute_default(x, o):
    del o.__dict__["a"]
    return x + getattr(o, "a", 7)


def set_delete_set_moves_the_key_last(x, o):
    o.a = 3
    del o.a
    o.a = 4
    return x + o.a, list(o.__dict__)


def delete_then_class_value(x, o):
    del o.v
    return x + o.v


def dict_methods(x, o):
    popped = o.__dict__.pop("a")
    o.__dict__.setdefault("b", 3)
    got = o.__dict__.get("c", 9)
    return x + popped + o.b + got + getattr(o, "a", 50), sorted(o.__dict__.items())


def dict_clear_then_default(x, o):
    o.__dict__.clear()
    return x + getattr(o, "a", 50)


def dict_view_after_write(x, o):
    d = o.__dict__
    keys = d.keys()
    o.k = 2
    return x + d["k"], list(keys), "k" in vars(o)


def aliased_dict_write(x, a, b):
    a.__dict__["v"] = 10
    del b.w
    return x + b.v + getattr(a, "w", 3)


def nested_alias(x, o, inner):
    o.inner.v = 3
    return x + inner.v


def tensor_through_the_dict(x, o):
    o.t = x * 2
    o.__dict__["u"] = o.t + 1
    return o.u


def slot_write_delete(x, s):
    s.a = 2
    del s.b
    return x + s.a + getattr(s, "b", 10)


def property_set_and_delete(x, t):
    t.fahrenheit = 50.0
    f = t.fahrenheit
    del t.fahrenheit
    return x + f, hasattr(t, "_c")


def property_wins_over_a_dict_entry(x, t):
    t.__dict__["fahrenheit"] = 100.0       # a data descriptor decides before the instance __dict__
    return x + t.fahrenheit


def fallback_then_instance(x, o):
    before = o.dyna
    o.dyna = 10
    return x + before + o.dyna


def fallback_after_delete(x, o):
    del o.dynb
    return x + o.dynb


def own_lookup_after_write(x, o):
    o.a = 2
    return x + o.virtual + o.a


def hasattr_computes_a_cached_property(x, o):
    return x + hasattr(o, "total") + ("total" in vars(o)), list(COMPUTED)


def python_data_descriptor(x, r):
    r.size = 3
    first = r.size
    del r.size
    return x + first + r.size, list(vars(r))


def python_data_descriptor_on_a_new_object(x):
    r = Record()
    r.size = 4
    return x + r.size, r


def own_lookup_after_dict_edits(x, o):
    vars(o)["a"] = 4
    del o.b
    return x + o.a + len(vars(o)) + hasattr(o, "b") + getattr(o, "b", 10) + o.virtual, list(vars(o))


def own_lookup_after_class_write(x, o):
    type(o).k = 7
    out = x + o.k
    type(o).k = 100
    return out


def own_lookup_dict_delete_then_items(x, o):
    if "c" in o.__dict__:
        del o.__dict__["c"]
    total = 0
    for key, v in list(vars(o).items()):
        total += v
    return x + total + getattr(o, "c", 5), sorted(vars(o))


def dict_entry_under_a_property_name(x, t):
    t.__dict__["fahrenheit"] = 1.0
    d = t.__dict__.pop("fahrenheit")
    return x + d + t.fahrenheit, "fahrenheit" in vars(t)


def cached_property_fills_itself_in(x, o):
    return x + o.total + o.total, "total" in vars(o), list(COMPUTED)


def made_in_frame_dict(x):
    o = Obj()
    o.__dict__["a"] = 3
    o.b = 1
    del o.__dict__["a"]
    o.a = 2
    return x + o.a + o.b + len(vars(o)), o


def made_in_frame_delete(x):
    o = Obj(a=1)
    del o.a
    return x + hasattr(o, "a") + getattr(o, "a", 4), o


def class_attribute_written_then_read_through_instance(x, o):
    WithClassValue.v = 8
    out = x + o.v
    WithClassValue.v = 5
    return out


def class_attribute_deleted(x, cls):
    del cls.v
    out = x + getattr(cls, "v", 1) + hasattr(cls, "v")
    cls.v = 2
    return out


def repr_after_write(x, o):
    o.a = 5
    return x, repr(o)


def equality_after_write(x, a, b):
    a.v = 2
    return x, a == b


def write_then_break_then_read(x, o):
    o.a = 2
    o.__dict__["b"] = 3
    print("break")
    return x + o.a + o.b, list(vars(o))


def delete_then_break_then_read(x, o):
    del o.a
    print("break")
    o.__dict__["c"] = 1
    return x + getattr(o, "a", 5) + o.c, list(vars(o))


def caught_after_delete(x, o):
    del o.a
    try:
        v = o.a
    except AttributeError:
        v = -1
    return x + v


def increments_in_a_loop(x, o):
    for i in range(3):
        o.__dict__["n"] = o.n + i
    return x * o.n


class Box(Obj):
    def bump(self):
        self.__dict__["n"] = self.n + 1
        return self


def method_writes_through_its_dict(x, o):
    o.bump().bump()
    return x + o.n


@dataclasses.dataclass(eq=False)
class Settings(Obj):
    width: int = 1
    depth: int = 2


def dataclass_vars(x, s):
    vars(s)["width"] = 5
    return x + s.width + s.depth, list(vars(s))


WITHIN = [
    case(dict_write_then_attribute_read, X, Obj(), **ONE),
    case(vars_update_then_read, X, Obj(z=0), **ONE),
    case(object_setattr_then_dict_read, X, Obj(z=0), **ONE),
    case(delattr_then_hasattr_and_default, X, Obj(a=1), **ONE),
    case(dict_delete_then_attribute_default, X, Obj(a=1), **ONE),
    case(set_delete_set_moves_the_key_last, X, Obj(z=0), **ONE),
    case(delete_then_class_value, X, WithClassValue(v=1), **ONE),
    case(dict_methods, X, Obj(a=2), **ONE),
    case(dict_clear_then_default, X, Obj(a=1), **ONE),
    case(dict_view_after_write, X, Obj(z=0), **ONE),
    case(aliased_dict_write, X, *(lambda o: (o, o))(Obj(v=1, w=2)), name="aliased_dict_write_same", **ONE),
    case(aliased_dict_write, X, Obj(v=1, w=2), Obj(v=4, w=2), name="aliased_dict_write_distinct", **ONE),
    case(nested_alias, X, *(lambda i: (Obj(inner=i), i))(Obj(v=0)), **ONE),
    case(tensor_through_the_dict, X, Obj(), **ONE),
    case(slot_write_delete, X, Slots(b=1), **ONE),
    case(property_set_and_delete, X, Temperature(), **ONE),
    case(property_wins_over_a_dict_entry, X, Temperature()),
    case(fallback_then_instance, X, Fallback(), **ONE),
    case(fallback_after_delete, X, Fallback(dynb=1), **ONE),
    case(own_lookup_after_write, X, Renaming(), **ONE),
    case(own_lookup_after_dict_edits, X, Renaming(b=1, c=2)),
    case(own_lookup_after_class_write, X, Renaming()),
    case(own_lookup_dict_delete_then_items, X, Renaming(a=1, c=2)),
    case(dict_entry_under_a_property_name, X, Temperature()),
    case(cached_property_fills_itself_in, X, Lazy(), **ONE),
    case(hasattr_computes_a_cached_property, X, Lazy(), **ONE),
    case(python_data_descriptor, X, Record(), **ONE),
    case(python_data_descriptor_on_a_new_object, X, **ONE),
    case(made_in_frame_dict, X, **ONE),
    case(made_in_frame_delete, X, **ONE),
    case(class_attribute_written_then_read_through_instance, X, WithClassValue()),
    case(class_attribute_deleted, X, type("Deletable", (), {"v": 2})),
    case(repr_after_write, X, types.SimpleNamespace(b=2)),
    case(equality_after_write, X, types.SimpleNamespace(v=1), types.SimpleNamespace(v=2)),
    case(write_then_break_then_read, X, Obj()),
    case(delete_then_break_then_read, X, Obj(a=1, b=2)),
    case(caught_after_delete, X, Obj(a=1), **ONE),
    case(increments_in_a_loop, X, Obj(n=1), **ONE),
    case(method_writes_through_its_dict, X, Box(n=0), **ONE),
    case(dataclass_vars, X, Settings(), **ONE),
    case(vars_update_then_read, X, types.SimpleNamespace(z=0), name="vars_update_then_read_namespace", **ONE),
]


@pytest.mark.parametrize(CASE_FIELDS, WITHIN)
def test_one_model_of_attributes(fn, args, kwargs, options):
    run_case(fn, args, kwargs, options)


def test_dict_writes_and_attribute_writes_stay_in_one_graph():
    """The model needs no graph break for the issue's repro: both writes are replayed, in order."""
    o = Obj()
    check(dict_write_then_attribute_read, X, o, fullgraph=True, graphs=1)


# ---------------------------------------------------------------- generated programs


class Plain:
    k = 100

    def meth(self):
        return 3


class PlainFallback(Plain):
    def __getattr__(self, name):
        if name == "c":
            return 42
        raise AttributeError(name)


class PlainProperty(Plain):
    @property
    def c(self):
        return self.__dict__.get("a", 0) + 1

    @c.setter
    def c(self, value):
        self.__dict__["b"] = value


class PlainOwnLookup(Plain):
    def __getattribute__(self, name):
        if name == "c":
            return 7
        return object.__getattribute__(self, name)


class PlainSlots:
    __slots__ = ("a", "b", "__dict__")
    k = 100

    def meth(self):
        return 3


STATEMENTS = [
    "{t}.{a} = {k}", "{t}.{a} = x + {k}", "{t}.__dict__['{a}'] = {k}", "vars({t})['{a}'] = {k}",
    "setattr({t}, '{a}', {k})", "object.__setattr__({t}, '{a}', {k})", "vars({t}).update({a}={k})",
    "if hasattr({t}, '{a}'):\n    del {t}.{a}", "if '{a}' in {t}.__dict__:\n    del {t}.__dict__['{a}']",
    "{t}.__dict__.pop('{a}', None)", "{t}.__dict__.setdefault('{a}', {k})",
    "acc = acc + getattr({t}, '{a}', {k})", "acc = acc + (1 if hasattr({t}, '{a}') else 0)",
    "acc = acc + ('{a}' in {t}.__dict__)", "acc = acc + len(vars({t}))", "acc = acc + vars({t}).get('{a}', {k})",
    "try:\n    acc = acc + {t}.{a}\nexcept AttributeError:\n    acc = acc - 1",
    "acc = acc + {t}.k", "acc = acc + {t}.meth()", "del {t}.{a}", "acc = acc + {t}.{a}",
    "print('break', acc.shape)", "acc = acc + x[i].sum()",
    "for key, v in list(vars({t}).items()):\n    if type(v) is int:\n        acc = acc + v",
    "m = Plain()\nm.__dict__['{a}'] = {k}\nm.{a} = m.{a} + 1\nacc = acc + m.{a} + len(vars(m))\n{t}.child = m",
    "{t}.inner = Plain()\n{t}.inner.{a} = {k}\nacc = acc + getattr({t}.inner, 'b', 2)",
    "try:\n    {t}.{a} = 1\n    acc = acc + x[i].sum()\nexcept IndexError:\n    acc = acc + 100",
    "type({t}).k = {k}\nacc = acc + {t}.k\ntype({t}).k = 100",
]
KINDS = [Plain, Plain, PlainFallback, PlainProperty, PlainOwnLookup, PlainSlots]
PLAIN_METH = Plain.meth


def _program(seed):
    import random
    import textwrap
    rng = random.Random(seed)
    lines = [rng.choice(STATEMENTS).format(t=rng.choice("oop"), a=rng.choice("abc"), k=rng.randint(0, 9))
             for _ in range(8)]
    source = ("def program(x, i, o, p):\n    acc = x * 0\n" + textwrap.indent("\n".join(lines), "    ") +
              "\n    return acc, sorted(getattr(o, '__dict__', {}))\n")
    namespace = {"Plain": Plain}
    exec(compile(source, f"<attribute program {seed}>", "exec"), namespace)
    return namespace["program"], rng.choice(KINDS), rng.random() < 0.3


def _state(obj):
    inst = object.__getattribute__(obj, "__dict__")
    slots = [getattr(obj, n, None) for n in ("a", "b")] if type(obj) is PlainSlots else []
    return sorted((k, v) for k, v in inst.items() if type(v) is int), slots


@pytest.mark.parametrize("seed", range(40))
def test_generated_attribute_programs(seed):
    """Random programs of attribute reads, writes and deletes in every spelling, on one object or two
    aliased ones, with graph breaks and raising ops, called three times on objects with different
    attributes while the class changes in between."""
    import random
    program, kind, aliased = _program(seed)

    def make(rng):
        obj = kind()
        for name in "abc":
            if rng.random() < 0.5:
                if kind is PlainSlots and name != "c":
                    setattr(obj, name, rng.randint(0, 9))
                else:
                    object.__getattribute__(obj, "__dict__")[name] = rng.randint(0, 9)
        return obj

    def script(f):
        seen = []
        try:
            for call in range(3):
                rng = random.Random(seed * 7 + call)
                if call and rng.random() < 0.5:
                    setattr(Plain, rng.choice("ab"), rng.randint(20, 30))
                if call and rng.random() < 0.3:
                    Plain.meth = (lambda v: lambda self: v)(rng.randint(4, 9))
                o = make(rng)
                p = o if aliased else make(rng)
                i = torch.tensor([0, 5]) if rng.random() < 0.2 else torch.tensor([0, 1])
                seen += [outcome(f, X, i, o, p), _state(o), _state(p)]
        finally:
            for name in "ab":
                if name in Plain.__dict__:
                    delattr(Plain, name)
            Plain.meth = PLAIN_METH
        return seen
    check_script(program, script)
