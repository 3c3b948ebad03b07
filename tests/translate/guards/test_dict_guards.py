"""Versioned guards (translate/guards/dict_guards.py, translate/guards/dict_versions.py): state outside the frame checked through dict and
class version tags. Each test compiles a function reading another module's globals, a registry dict, a
plain object's attributes or a transformers config, then changes that state the way users do and checks
the compiled call follows eager; the fast-path tests check the guards really are skipped when nothing
changed (a counting __getattribute__ is not called) and re-run when something did.
"""
import abc
import types

import pytest
import torch

import framejit
from framejit.translate.guards import dict_guards, dict_versions
from framejit.translate.values.objects import attribute_model as object_attrs

pytestmark = pytest.mark.skipif(not dict_versions.ENABLED, reason="no dict version tags on this Python")


@pytest.fixture(autouse=True, params=["native", "ctypes"])
def always_versioned(monkeypatch, request):
    """These small functions read too little state for words to pay off; version them anyway, so the
    tests exercise the words (test_small_functions_keep_plain_guards checks the real choice). Every
    test runs with each word reader: the native one (framejit/_words.c) and the ctypes one."""
    if "plain_guards" not in request.node.name:
        monkeypatch.setattr(dict_guards.VersionPlan, "worth_it", lambda self: True)
    if request.param == "native" and dict_versions._native_gather is None:
        pytest.skip("framejit/_words.c is not built")
    if request.param == "ctypes":
        if "native_word_reader" in request.node.name:
            pytest.skip("about the native reader")
        monkeypatch.setattr(dict_versions, "_native_gather", None)


def test_the_native_word_reader_is_built_where_gcc_is_and_reads_what_ctypes_reads():
    import shutil
    if shutil.which("gcc") is None:
        pytest.skip("no gcc: `make` leaves the native reader out")
    assert dict_versions._native_gather is not None, "make did not build framejit/_words.so"
    d, cls = {"a": 1}, type("Probe", (), {})
    readers = [dict_versions.dict_version(d), dict_versions.type_version(cls), dict_versions.type_pointer(d)]
    native, packed = dict_versions.gather(readers)
    assert native is dict_versions._native_gather
    slow = dict_versions.gather(readers, native=False)
    assert dict_versions.as_ints(native(packed)) == slow[0](slow[1]) == tuple(r.value for r in readers)
    before = native(packed)
    unchanged = dict_versions.native_unchanged
    assert unchanged(packed, before) and not unchanged(packed, None) and not unchanged(packed, before[:-8])
    d["b"] = 2
    assert native(packed) != before and not unchanged(packed, before) and unchanged(packed, native(packed))
    with pytest.raises(TypeError):
        native(bytearray(packed))
    with pytest.raises(ValueError):
        native(packed[:7])


def _library(source):
    """A module of its own (its globals are not the test's), like a library the model calls into."""
    mod = types.ModuleType("fj_test_library")
    exec(source, mod.__dict__)
    return mod


def _compiled(fn):
    counter = framejit.CompileCounter()
    return framejit.compile(fn, backend=counter), counter


def test_version_words_move_on_every_kind_of_change():
    d = {"a": 1}
    tag = dict_versions.dict_version(d)
    before = tag.value
    _ = d["a"]
    assert tag.value == before
    d["a"] = object()
    assert tag.value > before

    class Slot:
        pass
    obj = Slot()
    obj.x = 1
    pointer = dict_versions.dict_pointer(obj)
    kind = dict_versions.type_pointer(obj)
    assert pointer.value == id(obj.__dict__) and kind.value == id(Slot)
    obj.__dict__ = {"x": 2}
    assert pointer.value == id(obj.__dict__)
    version = dict_versions.type_version(Slot)
    seen = version.value
    Slot.y = 3
    assert version.value != seen


def test_another_modules_global_rebound_is_noticed_and_steady_calls_do_not_recompile():
    lib = _library("SCALE = 2.0\ndef scale(x):\n    return x * SCALE\n")

    def f(x):
        return lib.scale(x) + 1

    cf, counter = _compiled(f)
    x = torch.randn(3)
    for _ in range(3):
        torch.testing.assert_close(cf(x), f(x))
    assert counter.frame_count == 1
    lib.SCALE = 5.0
    torch.testing.assert_close(cf(x), x * 5.0 + 1)
    lib.unrelated = 1                      # moves the tag, the guards pass again: no recompile
    torch.testing.assert_close(cf(x), x * 5.0 + 1)
    assert counter.frame_count == 2


def test_a_registry_entry_replaced_or_removed_is_noticed():
    lib = _library("import torch\nACTS = {'relu': torch.relu, 'tanh': torch.tanh}\n"
                   "def act(name, x):\n    return ACTS[name](x)\n")

    def f(x):
        return lib.act("relu", x) * 2

    cf, _ = _compiled(f)
    x = torch.randn(5)
    torch.testing.assert_close(cf(x), f(x))
    lib.ACTS["relu"] = torch.sigmoid
    torch.testing.assert_close(cf(x), torch.sigmoid(x) * 2)
    del lib.ACTS["relu"]
    with pytest.raises(KeyError):
        cf(x)


def test_a_registry_the_frame_itself_mutates_stays_correct():
    lib = _library("CALLS = {'n': 0}\ndef bump():\n    CALLS['n'] = CALLS['n'] + 1\n    return CALLS['n']\n")

    def f(x):
        return x * lib.bump()

    cf, counter = _compiled(f)
    x = torch.ones(2)
    for n in range(1, 5):
        torch.testing.assert_close(cf(x), x * n)
    assert lib.CALLS["n"] == 4


class Settings:
    scale = 3.0                            # a class attribute, read through the instance

    def __init__(self):
        self.shift = 1.0


SETTINGS = Settings()


def read_settings(x):
    return x * SETTINGS.scale + SETTINGS.shift


@pytest.mark.parametrize("change", ["instance", "class", "new_dict", "new_class", "property"])
def test_plain_object_attributes_follow_every_kind_of_change(change):
    global SETTINGS
    saved = SETTINGS
    SETTINGS = Settings()
    try:
        cf, _ = _compiled(read_settings)
        x = torch.randn(4)
        torch.testing.assert_close(cf(x), read_settings(x))
        if change == "instance":
            SETTINGS.shift = -2.0
        elif change == "class":
            Settings.scale = 7.0
        elif change == "new_dict":
            SETTINGS.__dict__ = {"shift": 10.0}
        elif change == "new_class":
            SETTINGS.__class__ = type("Other", (Settings,), {"scale": 0.5})
        else:
            Settings.shift = property(lambda self: 4.0)
        torch.testing.assert_close(cf(x), read_settings(x))
    finally:
        SETTINGS = saved
        Settings.scale = 3.0
        if "shift" in Settings.__dict__:
            del Settings.shift


READS = []


class Counted:
    """A class whose __getattribute__ counts calls; registered in the lookup table by the test."""

    def __getattribute__(self, name):
        READS.append(name)
        return object.__getattribute__(self, name)


COUNTED = Counted()
COUNTED.factor = 2.0
for _i in range(8):
    setattr(COUNTED, f"term{_i}", float(_i))


def read_counted(x):
    # enough reads that one tuple of words is cheaper than the guards (else they stay plain)
    extra = COUNTED.term0 + COUNTED.term1 + COUNTED.term2 + COUNTED.term3 + COUNTED.term4 + COUNTED.term5 + \
        COUNTED.term6 + COUNTED.term7
    return x * COUNTED.factor + extra


def test_versioned_guards_are_skipped_until_something_changes(monkeypatch):
    key = (Counted.__getattribute__.__module__, Counted.__getattribute__.__qualname__)
    monkeypatch.setitem(dict_guards.DICT_DETERMINED_LOOKUPS, key, lambda obj, attr: (attr, []))
    monkeypatch.setattr(COUNTED, "factor", 2.0)          # restored after the test (it changes it)
    cf, counter = _compiled(read_counted)
    x = torch.randn(3)
    torch.testing.assert_close(cf(x), x * 2.0 + 28)
    torch.testing.assert_close(cf(x), x * 2.0 + 28)        # the first call stamps the words
    reads = len(READS)
    for _ in range(5):
        torch.testing.assert_close(cf(x), x * 2.0 + 28)
    assert len(READS) == reads                          # guards on COUNTED's attributes were not evaluated
    COUNTED.factor = 3.0
    torch.testing.assert_close(cf(x), x * 3.0 + 28)
    assert len(READS) > reads


def test_transformers_config_attributes_are_versioned_and_changes_are_noticed():
    transformers = pytest.importorskip("transformers")
    config = transformers.GPT2Config(n_embd=8, n_layer=1, n_head=2)

    class Head(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.config = config
            self.lin = torch.nn.Linear(8, 8)

        def forward(self, x):
            y = self.lin(x)
            if self.config.output_hidden_states:
                y = y * 2
            return y * self.config.hidden_size            # attribute_map: hidden_size -> n_embd

    model = Head()
    eager = Head()
    eager.load_state_dict(model.state_dict())
    cm = framejit.compile(model)
    x = torch.randn(2, 8)
    torch.testing.assert_close(cm(x), eager(x))
    config.output_hidden_states = True
    torch.testing.assert_close(cm(x), eager(x))
    config.n_embd = 16
    torch.testing.assert_close(cm(x), eager(x))
    model.config = transformers.GPT2Config(n_embd=3, n_layer=1, n_head=1)
    eager.config = model.config
    torch.testing.assert_close(cm(x), eager(x))


def test_a_list_inside_the_defaults_tuple_can_still_change_length():
    def f(x, steps=([1.0, 2.0],)):
        for v in steps[0]:
            x = x + v
        return x

    cf, _ = _compiled(f)
    x = torch.zeros(2)
    torch.testing.assert_close(cf(x), f(x))
    f.__defaults__[0][0].append(4.0)
    torch.testing.assert_close(cf(x), x + 7.0)


def test_a_library_closure_cell_and_function_code_and_defaults_are_watched():
    lib = _library(
        "def make():\n"
        "    factor = 2.0\n"
        "    def scale(x, shift=1.0):\n"
        "        return x * factor + shift\n"
        "    def set_factor(v):\n"
        "        nonlocal factor\n"
        "        factor = v\n"
        "    return scale, set_factor\n"
        "scale, set_factor = make()\n")

    def f(x):
        return lib.scale(x) - 1

    cf, _ = _compiled(f)
    x = torch.randn(3)
    torch.testing.assert_close(cf(x), f(x))
    torch.testing.assert_close(cf(x), f(x))
    lib.set_factor(5.0)                                    # the cell's contents change, no dict does
    torch.testing.assert_close(cf(x), x * 5.0)
    lib.scale.__defaults__ = (3.0,)
    torch.testing.assert_close(cf(x), x * 5.0 + 2.0)
    factor = None
    lib.scale.__code__ = (lambda x, shift=0.0: x - shift + 0 * factor).__code__
    torch.testing.assert_close(cf(x), x - 3.0 - 1)


class _Recorder:
    def value(self):
        return 1.0


class _OtherRecorder(_Recorder):
    def value(self):
        return 10.0


def test_a_library_object_whose_class_is_reassigned_is_noticed():
    lib = _library("def read(rec, x):\n    return x * rec.value()\n")
    lib.REC = _Recorder()
    lib2 = _library("def use(x):\n    return LIB.read(LIB.REC, x)\n")
    lib2.LIB = lib

    def f(x):
        return lib2.use(x) + 1

    cf, _ = _compiled(f)
    x = torch.randn(3)
    torch.testing.assert_close(cf(x), f(x))
    torch.testing.assert_close(cf(x), f(x))
    lib.REC.__class__ = _OtherRecorder
    torch.testing.assert_close(cf(x), x * 10.0 + 1)


def test_small_functions_keep_plain_guards():
    lib = _library("SCALE = 2.0\ndef scale(x):\n    return x * SCALE\n")

    def f(x):
        return lib.scale(x)

    cf, _ = _compiled(f)
    x = torch.randn(3)
    torch.testing.assert_close(cf(x), x * 2.0)
    code = "\n".join(framejit.explain(f)(x).transformed_code)
    assert "__fj_s" not in code and "['SCALE']" in code, code
    lib.SCALE = 3.0
    torch.testing.assert_close(cf(x), x * 3.0)


def test_two_library_dicts_becoming_one_object_is_noticed_though_the_inputs_check_skips_them():
    lib = _library("A = {'k': 2.0}\nB = {'k': 2.0}\nC = {'k': 0.0}\n"
                   "def use(x):\n    A['k'] = A['k'] + 1.0\n    return x * B['k'] + C['k']\n"
                   "def use_input(x, d):\n    d['k'] = 5.0\n    return use(x)\n")

    def f(x):
        return lib.use(x)

    def g(x, d):
        return lib.use_input(x, d)

    cf, counter = _compiled(f)
    x = torch.randn(3)
    torch.testing.assert_close(cf(x), x * 2.0)
    lib.A["k"] = 2.0
    torch.testing.assert_close(cf(x), x * 2.0)
    lib.A["k"] = 2.0
    code = "\n".join(framejit.explain(f)(x).transformed_code)
    assert "['A']" not in code.split("return __fj_MISS")[0], code    # library dicts: not in the per-call check
    lib.A["k"] = 2.0
    lib.B = lib.A                                                 # now one object: B['k'] sees the update
    torch.testing.assert_close(cf(x), x * 3.0)
    lib.B = {"k": 2.0}
    lib.A["k"] = 2.0
    cg, _ = _compiled(g)
    torch.testing.assert_close(cg(x, {"k": 0.0}), x * 2.0)
    lib.A["k"] = 2.0
    torch.testing.assert_close(cg(x, lib.C), x * 2.0 + 5.0)       # an input that is a library dict
    assert lib.C["k"] == 5.0


class _KindsHead(torch.nn.Module):
    """Reads a list held by its config, as transformers models read `config.layer_types`."""

    def __init__(self, config):
        super().__init__()
        self.config = config
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        for kind in self.config.layer_kinds:
            x = self.lin(x) if kind == "linear" else x.relu() - 0.5
        return x


@pytest.mark.parametrize("change", ["item", "append", "rebind", "rebind_equal_then_item"])
def test_a_config_list_changed_in_place_or_rebound_is_noticed(change):
    transformers = pytest.importorskip("transformers")
    config = transformers.GPT2Config(n_embd=4, n_layer=1, n_head=1)
    config.layer_kinds = ["linear", "relu"]
    torch.manual_seed(0)
    model = _KindsHead(config)
    counter = framejit.CompileCounter()
    cm = framejit.compile(model, backend=counter)
    x = torch.randn(2, 4)
    torch.testing.assert_close(cm(x), model(x))
    torch.testing.assert_close(cm(x), model(x))
    assert counter.frame_count == 1
    if change == "item":
        config.layer_kinds[1] = "linear"
    elif change == "append":
        config.layer_kinds.append("linear")
    elif change == "rebind":
        config.layer_kinds = ["relu"]
    else:
        config.layer_kinds = ["linear", "relu"]          # an equal list: the old one's checks would pass
        torch.testing.assert_close(cm(x), model(x))
        config.layer_kinds[0] = "relu"                   # ...and now only the new one changed
    torch.testing.assert_close(cm(x), model(x))
    torch.testing.assert_close(cm(x), model(x))


class CountedConfig:
    """A config whose __getattribute__ counts calls (registered in the lookup table by the test)."""

    def __getattribute__(self, name):
        READS.append(name)
        return object.__getattribute__(self, name)


def test_a_config_list_is_checked_per_call_without_reading_the_config(monkeypatch):
    key = (CountedConfig.__getattribute__.__module__, CountedConfig.__getattribute__.__qualname__)
    monkeypatch.setitem(dict_guards.DICT_DETERMINED_LOOKUPS, key, lambda obj, attr: (attr, []))
    config = CountedConfig()
    config.layer_kinds = ["linear", "relu"]
    torch.manual_seed(0)
    model = _KindsHead(config)
    cm = framejit.compile(model)
    x = torch.randn(2, 4)
    torch.testing.assert_close(cm(x), model(x))
    torch.testing.assert_close(cm(x), model(x))          # the first call stamps the words
    reads = len(READS)
    for _ in range(3):
        cm(x)
    assert len(READS) == reads                           # the list's items were checked on the list itself
    config.layer_kinds.append("linear")
    torch.testing.assert_close(cm(x), model(x))
    assert len(READS) > reads


class AbstractLayer(abc.ABC):
    flag = False

    @abc.abstractmethod
    def run(self, x):
        ...


class ScaledLayer(AbstractLayer):
    scale = 2.0

    def run(self, x):
        return x * self.scale


def read_abc_class(x):
    return ScaledLayer.scale * x if not ScaledLayer.flag else x - 1


@pytest.mark.parametrize("change", ["own", "base", "metaclass_registry"])
def test_class_attributes_of_an_abc_are_versioned_and_follow_changes(change):
    cf, counter = _compiled(read_abc_class)
    x = torch.randn(3)
    torch.testing.assert_close(cf(x), read_abc_class(x))
    code = "\n".join(framejit.explain(read_abc_class)(x).transformed_code)
    assert "ScaledLayer" not in code and "__fj_block0(" in code      # versioned, not read per call
    try:
        if change == "own":
            ScaledLayer.scale = 5.0
        elif change == "base":
            AbstractLayer.flag = True
        else:
            AbstractLayer.register(int)           # ABCMeta state that is not a class attribute
        torch.testing.assert_close(cf(x), read_abc_class(x))
    finally:
        ScaledLayer.scale = 2.0
        AbstractLayer.flag = False


# ---- absence and class lookups (translate/values/object_attrs.py) ------------------------------------------------

LIBRARY_CONFIG = _library(
    "class Config:\n"
    "    def adjust(self, x):\n"
    "        return x + 1.0\n"
    "CFG = Config()\n"
    "def run(x):\n"
    "    y = CFG.adjust(x) * getattr(CFG, 'scale', 1.0)\n"
    "    return y * 2 if hasattr(CFG, 'flag') else y\n")


@pytest.mark.parametrize("change", ["appears", "flag", "method_replaced", "method_shadowed"])
def test_absence_and_methods_of_a_library_object_are_versioned_and_follow_changes(change):
    lib = LIBRARY_CONFIG
    lib.CFG.__dict__.clear()

    def f(x):
        return lib.run(x)

    cf, counter = _compiled(f)
    x = torch.randn(3)
    torch.testing.assert_close(cf(x), f(x))
    code = "\n".join(framejit.explain(f)(x).transformed_code)
    lookup = f"__fj_fixed_{id(object_attrs.mro_lookup)}("
    assert "hasattr" not in code and lookup not in code and "__fj_block" in code, code   # no per-call work
    original = lib.Config.adjust
    try:
        if change == "appears":
            lib.CFG.scale = 3.0
        elif change == "flag":
            lib.CFG.flag = True
        elif change == "method_replaced":
            lib.Config.adjust = lambda self, x: x - 1.0
        else:
            lib.CFG.adjust = lambda x: x * 10.0
        torch.testing.assert_close(cf(x), f(x))
        lib.CFG.__dict__.clear()
        lib.Config.adjust = original
        torch.testing.assert_close(cf(x), f(x))
    finally:
        lib.Config.adjust = original
        lib.CFG.__dict__.clear()


def absent_on_counted(x):
    return x * getattr(COUNTED, "missing", 3.0) + hasattr(COUNTED, "factor")


def test_an_absence_behind_a_dict_determined_lookup_is_not_checked_per_call(monkeypatch):
    key = (Counted.__getattribute__.__module__, Counted.__getattribute__.__qualname__)
    monkeypatch.setitem(dict_guards.DICT_DETERMINED_LOOKUPS, key, lambda obj, attr: (attr, []))
    cf, _ = _compiled(absent_on_counted)
    x = torch.randn(3)
    torch.testing.assert_close(cf(x), x * 3.0 + 1)
    torch.testing.assert_close(cf(x), x * 3.0 + 1)           # the first call stamps the words
    reads = len(READS)
    for _ in range(5):
        torch.testing.assert_close(cf(x), x * 3.0 + 1)
    assert len(READS) == reads                               # hasattr(COUNTED, ...) was not evaluated
    monkeypatch.setattr(COUNTED, "missing", 5.0, raising=False)
    torch.testing.assert_close(cf(x), x * 5.0 + 1)


class Shape:
    def area(self, x):
        return x * 2


SHAPE = Shape()


def method_of_a_global(x):
    return SHAPE.area(x)


def test_class_lookups_are_versioned_where_plain_guards_would_call_python():
    """The real choice (VersionPlan.worth_it): a guard calling mro_lookup costs more than a word."""
    cf, _ = _compiled(method_of_a_global)
    x = torch.randn(3)
    torch.testing.assert_close(cf(x), x * 2)
    code = "\n".join(framejit.explain(method_of_a_global)(x).transformed_code)
    assert "__fj_block" in code and f"__fj_fixed_{id(object_attrs.mro_lookup)}(" not in code, code
    Shape.area = lambda self, x: x * 3
    try:
        torch.testing.assert_close(cf(x), x * 3)
    finally:
        Shape.area = lambda self, x: x * 2
