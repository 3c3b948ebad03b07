"""Guards: checks on Sources that must hold for a cache entry to be reused.

The translator adds a Guard for every Source whose value the graph or the Python result depends on.
`GuardSet.render` turns them into one Python boolean expression over the frame's arguments (with
constants bound by name, never spliced in as text), which codegen puts at the top of the generated
entry function. The same list gives readable strings for explain() and names the failing guard when
an entry keeps missing ("x.shape changed (8, 4) -> (16, 4)").
"""
import dataclasses
import re
import weakref
from dataclasses import dataclass

import torch

from .const_equality import same_constant, self_equal


@dataclass(frozen=True)
class TensorMeta:
    type: type
    dtype: torch.dtype
    device: torch.device
    shape: tuple
    stride: tuple
    requires_grad: bool

    @staticmethod
    def of(t):
        return TensorMeta(type(t), t.dtype, t.device, tuple(t.shape), tuple(t.stride()), t.requires_grad)


@dataclass(frozen=True)
class DynamicTensorMeta:
    """What a tensor with symbolic dimensions is guarded on: `shape` holds None at each dynamic dim (its
    range and relations are the SHAPES guard's, framejit/shapes/guard_text.py); a contiguous tensor's
    strides follow from its sizes, a non-contiguous one's are SHAPES facts (`x.stride(0) == __fj_sym1`)."""
    type: type
    dtype: torch.dtype
    device: torch.device
    shape: tuple
    requires_grad: bool
    contiguous: bool = True    # False: the strides are checked by the SHAPES guard (shapes/symbols.py)

    @staticmethod
    def of(t, dims):
        return DynamicTensorMeta(type(t), t.dtype, t.device,
                                 tuple(None if d in dims else n for d, n in enumerate(t.shape)), t.requires_grad,
                                 t.is_contiguous())


class WeakIdentity:
    """The expected object of an ID_MATCH guard on an nn.Module instance the frame receives (an
    argument, a closure cell), kept by a weak reference once the entry exists: the guard compares ids
    (`instance_guard_text`) and the entry is forgotten when the object dies (cache.CodeState), so a
    dead module's entries go with it instead of keeping it, its parameters and its graphs alive."""

    __slots__ = ("ref", "id", "label")

    def __init__(self, obj):
        self.ref = weakref.ref(obj)
        self.id = id(obj)
        self.label = _short(obj)


def instance_guard_text(g):
    """`source is <object>` by id (WeakIdentity): no reference to the object in the entry."""
    obj = g.expected
    return f"__fj_id({_operand(g.source.expr())}) == {obj.id if isinstance(obj, WeakIdentity) else id(obj)}"


def is_instance_guard(g, frame_params):
    """Is `g` the identity guard of an nn.Module the frame receives (a parameter, a closure cell)?"""
    from ..source import ClosureSource, LocalSource
    return g.kind == "ID_MATCH" and isinstance(g.expected, torch.nn.Module) and (
        isinstance(g.source, ClosureSource) or
        isinstance(g.source, LocalSource) and g.source.local in frame_params)


FUSED = ("NATIVE_STATE", "ATOMS_MATCH")     # expected = (what the native call checks, the guards it stands for)
ATOM_TYPES = (str, int, bool, type(None))   # equality runs no user code; float left out (nan, -0.0)


@dataclass
class Guard:
    kind: str            # TENSOR_MATCH | CONST_MATCH | ID_MATCH | TYPE_MATCH | LEN_MATCH | DICT_KEYS | GRAD_MODE | STATE_MATCH
                         # | NATIVE_STATE (several state guards read by one native call: fuse_state_guards)
                         # | ATOMS_MATCH (a sequence's length and items, one native call: fuse_atom_items)
                         # | DYN_TENSOR_MATCH (a tensor with symbolic dims: DynamicTensorMeta)
                         # | SHAPES (source None: the ShapeEnv's facts, framejit/shapes/guard_text.py)
    source: object       # Source, or None for global-state guards
    expected: object
    origin: str = ""     # user source line that created it (for reports)

    def describe(self):
        if self.kind in FUSED:
            return "; ".join(g.describe() for g in self.expected[1])
        name = self.source.name() if self.source is not None else ""
        if self.kind == "DYN_TENSOR_MATCH":
            m = self.expected
            shape = ", ".join("*" if n is None else str(n) for n in m.shape)
            layout = "contiguous" if m.contiguous else "strides in the shape guards"
            return (f"{name}: Tensor {m.type.__name__} {str(m.dtype).replace('torch.', '')} {m.device} "
                    f"shape=[{shape}] (* dynamic) {layout} requires_grad={m.requires_grad}")
        if self.kind == "SHAPES":
            from ...shapes.guard_text import describe
            return "shape guards: " + "; ".join(describe(self.expected))
        if self.kind == "TENSOR_MATCH":
            m = self.expected
            return (f"{name}: Tensor {m.type.__name__} {str(m.dtype).replace('torch.', '')} "
                    f"{m.device} shape={list(m.shape)} stride={list(m.stride)} requires_grad={m.requires_grad}")
        if self.kind == "CONST_MATCH":
            return f"{name} == {self.expected!r}"
        if self.kind == "ID_MATCH":
            expected = self.expected
            return f"{name} is {expected.label if isinstance(expected, WeakIdentity) else _short(expected)}"
        if self.kind == "TYPE_MATCH":
            return f"type({name}) is {self.expected.__name__}"
        if self.kind == "LEN_MATCH":
            return f"len({name}) == {self.expected}"
        if self.kind == "DICT_KEYS":
            return f"list({name}.keys()) == {list(self.expected)!r}"
        if self.kind == "GRAD_MODE":
            return f"torch.is_grad_enabled() is {self.expected}"
        if self.kind == "STATE_MATCH":
            fn, value = self.expected
            return f"{fn.__module__.split('.')[0]}.{fn.__name__}() == {value!r}"
        return f"{self.kind} {name}"

    def explain_miss(self, env):
        """Plain words for why this guard failed given the generated code's environment, or None."""
        if self.kind in FUSED:
            return next((why for why in (g.explain_miss(env) for g in self.expected[1]) if why), None)
        if self.kind == "STATE_MATCH":
            fn, value = self.expected
            now = fn()
            return None if now == value else f"{fn.__name__}() changed {value!r} -> {now!r}"
        if self.kind == "SHAPES":
            from ...shapes.guard_text import explain_miss
            return explain_miss(self.expected, env)
        try:
            actual = eval(self.source.expr(), env) if self.source is not None else torch.is_grad_enabled()
        except Exception as e:
            return f"{self.source.name()} could not be read ({type(e).__name__})"
        name = self.source.name() if self.source is not None else "grad mode"
        if self.kind == "DYN_TENSOR_MATCH":
            return _explain_dynamic_tensor(name, self.expected, actual)
        if self.kind == "TENSOR_MATCH":
            if not isinstance(actual, torch.Tensor):
                return f"{name} is no longer a tensor (got {type(actual).__name__})"
            now, was = TensorMeta.of(actual), self.expected
            for f in ("type", "dtype", "device", "shape", "stride", "requires_grad"):
                a, b = getattr(was, f), getattr(now, f)
                if a != b:
                    a, b = (a.__name__, b.__name__) if f == "type" else (a, b)
                    if f == "shape" and len(a) == len(b):
                        for i, (p, q) in enumerate(zip(a, b)):
                            if p != q:
                                return f"{name}.shape[{i}] changed {p} -> {q}"
                    return f"{name}.{f} changed {a} -> {b}"
            return None
        if self.kind == "CONST_MATCH":
            ok = same_constant(actual, self.expected)
            return None if ok else f"{name} changed {self.expected!r} -> {actual!r}"
        if self.kind == "ID_MATCH":
            expected = self.expected.ref() if isinstance(self.expected, WeakIdentity) else self.expected
            return None if actual is expected else f"{name} is a different object now ({_short(actual)})"
        if self.kind == "TYPE_MATCH":
            return None if type(actual) is self.expected else f"type of {name} changed {self.expected.__name__} -> {type(actual).__name__}"
        if self.kind == "LEN_MATCH":
            return None if len(actual) == self.expected else f"len({name}) changed {self.expected} -> {len(actual)}"
        if self.kind == "DICT_KEYS":
            return None if tuple(actual.keys()) == self.expected else f"keys of {name} changed {list(self.expected)} -> {list(actual.keys())}"
        if self.kind == "GRAD_MODE":
            return None if actual is self.expected else f"grad mode changed {self.expected} -> {actual}"
        return None


def _explain_dynamic_tensor(name, m, actual):
    if not isinstance(actual, torch.Tensor):
        return f"{name} is no longer a tensor (got {type(actual).__name__})"
    if type(actual) is not m.type:
        return f"{name}.type changed {m.type.__name__} -> {type(actual).__name__}"
    for f in ("dtype", "device", "requires_grad"):
        if getattr(actual, f) != getattr(m, f):
            return f"{name}.{f} changed {getattr(m, f)} -> {getattr(actual, f)}"
    if actual.dim() != len(m.shape):
        return f"{name}.dim() changed {len(m.shape)} -> {actual.dim()}"
    for i, n in enumerate(m.shape):
        if n is not None and actual.shape[i] != n:
            return f"{name}.shape[{i}] changed {n} -> {actual.shape[i]}"
    if m.contiguous and not actual.is_contiguous():
        return f"{name} is no longer contiguous (stride {tuple(actual.stride())})"
    return None


def _short(obj):
    r = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    if r is None:
        r = type(obj).__name__ + " object"
    return f"<{r}>"


class GuardSet:
    """Ordered, de-duplicated guards of one conversion."""

    def __init__(self):
        self.guards = []
        self._seen = set()

    def add(self, kind, source, expected, origin=""):
        key = (kind, source) if kind != "STATE_MATCH" else (kind, expected[0])
        if key in self._seen:
            return
        self._seen.add(key)
        self.guards.append(Guard(kind, source, expected, origin))

    def has(self, kind, source):
        """Was a guard of this kind on this source added (ID_MATCH: the object's identity is fixed)?"""
        return (kind, source) in self._seen

    def __len__(self):
        return len(self.guards)

    def weaken(self, guards):
        """Hold the expected objects of these ID_MATCH guards weakly (WeakIdentity)."""
        ids = {id(g) for g in guards}
        self.guards = [dataclasses.replace(g, expected=WeakIdentity(g.expected)) if id(g) in ids else g
                       for g in self.guards]

    def describe(self):
        return [g.describe() for g in self.guards]

    def render(self, bind):
        """One boolean expression; `bind(obj) -> name` binds a constant into the generated namespace."""
        parts = []
        for g in self.guards:
            parts.append(_render(g, bind))
        return " and ".join(p for p in parts if p) or "True"


def _contiguous_strides(shape):
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= size
    return tuple(reversed(strides))


def _stride_check(v, m, bind):
    """Exact strides, as cheaply as they can be checked once the shape matched: nothing for 0-d tensors;
    `is_contiguous()` (no tuple built) for contiguous tensors whose every dim is > 1, where contiguity
    fixes each stride exactly; `stride() == ...` otherwise (size-0/1 dims leave strides free)."""
    if not m.shape:
        return ""
    if m.stride == _contiguous_strides(m.shape) and all(d > 1 for d in m.shape):
        return f" and {v}.is_contiguous()"
    return f" and {v}.stride() == {bind(m.stride)}"


def _state_kind(fn):
    """native_state's name for a state query framejit guards, or None."""
    if not fn.__module__.startswith(("torch", "framejit")):
        return None
    return {"is_cpu_autocast_enabled": "autocast", "get_default_dtype": "dtype"}.get(fn.__name__)


def fuse_state_guards(guards):
    """The grad-mode, CPU-autocast and default-dtype guards as one NATIVE_STATE guard (one native call
    per compiled call instead of a binding call each), where they can all be read natively; else
    `guards`, rendered as Python calls."""
    from .native_state import state_bits
    found = []
    for g in guards:
        if g.kind == "GRAD_MODE":
            found.append((g, state_bits("grad", g.expected)))
        elif g.kind == "STATE_MATCH" and _state_kind(g.expected[0]):
            found.append((g, state_bits(_state_kind(g.expected[0]), g.expected[1])))
    if not found or any(bits is None for _, bits in found):
        return guards
    mask = value = 0
    for _, (m, v) in found:
        mask, value = mask | m, value | v
    parts = [g for g, _ in found]
    fused = Guard("NATIVE_STATE", None, ((mask, value), parts), parts[0].origin)
    ids = {id(g) for g in parts}
    out = []
    for g in guards:
        if id(g) not in ids:
            out.append(g)
        elif g is parts[0]:
            out.append(fused)
    return out


def _native_same_atoms():
    try:
        from ..._words import same_atoms
    except ImportError:
        return None
    return same_atoms


def fuse_atom_items(guards, sequence_type):
    """A list or tuple of strings/ints/bools/None guarded item by item — `len(s) == n`, then each
    `s[i]`'s type and value (a config's `layer_types`: two guards per layer) — as one ATOMS_MATCH guard
    read by one native call (`_words.same_atoms`), at the length guard's place. `sequence_type(source)`
    is the exact type other guards give the sequence; only a list or tuple is fused. Without the
    native module, `guards` as they are."""
    if _native_same_atoms() is None:
        return guards
    from ..source import ItemSource
    on = {}
    for g in guards:
        if g.source is not None:
            on.setdefault(g.source, []).append(g)
    fused, used = {}, set()
    for g in guards:
        if g.kind != "LEN_MATCH" or g.expected < 2 or sequence_type(g.source) not in (list, tuple):
            continue
        values, parts = [], [g]
        for i in range(g.expected):
            mine = on.get(ItemSource(g.source, i), [])
            consts = [h for h in mine if h.kind == "CONST_MATCH" and type(h.expected) in ATOM_TYPES
                      and self_equal(h.expected)]
            if len(consts) != 1 or any(h is not consts[0] and not (h.kind == "TYPE_MATCH" and
                                                                   h.expected is type(consts[0].expected))
                                       for h in mine):
                break
            values.append(consts[0].expected)
            parts += mine
        else:
            fused[id(g)] = Guard("ATOMS_MATCH", g.source, (tuple(values), parts), g.origin)
            used |= {id(h) for h in parts}
    if not fused:
        return guards
    return [fused.get(id(g), g) for g in guards if id(g) in fused or id(g) not in used]


def _native_tensor_check(meta):
    from .tensor_words import input_check
    return input_check(meta)


def _operand(e):
    """`e` as an operand of `is`, `==`, `.attr` (a source may render as `not (...)`, `a or b`...)."""
    return e if e is None or re.fullmatch(r"[\w.]+", e) else f"({e})"


def _render(g, bind):
    e = _operand(g.source.expr() if g.source is not None else None)
    if g.kind == "TENSOR_MATCH":
        m = g.expected
        v = e if e.isidentifier() else "__fj_t"
        native = _native_tensor_check(m)
        if native is not None:               # one native call; the getters only if it can't tell
            first = f"{bind(native[0])}({v if v == e else f'(__fj_t := {e})'}, {bind(native[1])})"
            head = f"type({v}) is {bind(m.type)}"
        else:
            head = f"type({v}) is {bind(m.type)}" if v == e else f"type(__fj_t := {e}) is {bind(m.type)}"
        device = f"{v}.is_cpu" if m.device.type == "cpu" else f"{v}.device == {bind(m.device)}"
        plain = (f"{head} and {v}.dtype is {bind(m.dtype)} and {device}"
                 f" and {v}.shape == {bind(torch.Size(m.shape))}{_stride_check(v, m, bind)}"
                 f" and {v}.requires_grad is {m.requires_grad}")
        return plain if native is None else f"({first} or ({plain}))"
    if g.kind == "DYN_TENSOR_MATCH":
        m = g.expected
        v = e if e.isidentifier() else "__fj_t"
        head = f"type({v}) is {bind(m.type)}" if v == e else f"type(__fj_t := {e}) is {bind(m.type)}"
        device = f"{v}.is_cpu" if m.device.type == "cpu" else f"{v}.device == {bind(m.device)}"
        sizes = "".join(f" and {v}.size({i}) == {n}" for i, n in enumerate(m.shape) if n is not None)
        layout = f" and {v}.is_contiguous()" if m.contiguous else ""     # else: strides in SHAPES
        plain = (f"{head} and {v}.dtype is {bind(m.dtype)} and {device} and {v}.dim() == {len(m.shape)}{sizes}"
                 f"{layout} and {v}.requires_grad is {m.requires_grad}")
        from .tensor_words import dynamic_input_check
        native = dynamic_input_check(m)
        if native is None:
            return plain
        # one native call for all but the symbolic sizes and the strides; the getters only if it can't tell
        first = f"{bind(native[0])}({v if v == e else f'(__fj_t := {e})'}, {bind(native[1])})"
        return f"(({first}{layout}) or ({plain}))"
    if g.kind == "SHAPES":
        from ...shapes.guard_text import render
        return render(g.expected)
    if g.kind == "CONST_MATCH":
        x = g.expected
        if x is True and getattr(g.source, "boolean", False):
            return e                       # the expression is a bool test already
        if x is None or x is True or x is False:
            return f"{e} is {x!r}"
        if not self_equal(x):                 # a NaN somewhere: `==` would never hold
            return f"{bind(same_constant)}({e}, {bind(x)})"
        return f"type({e}) is {bind(type(x))} and {e} == {bind(x)}"
    if g.kind == "ID_MATCH":
        if type(g.expected) in (int, float, str, bytes, complex):     # bind() spells these as literals,
            x = g.expected                                            # and `is` on a literal is an error
            return f"type({e}) is {bind(type(x))} and {e} == {bind(x)}"
        return f"{e} is {bind(g.expected)}"
    if g.kind == "TYPE_MATCH":
        return f"type({e}) is {bind(g.expected)}"
    if g.kind == "LEN_MATCH":
        return f"len({e}) == {int(g.expected)}"
    if g.kind == "DICT_KEYS":
        return f"tuple({e}.keys()) == {bind(tuple(g.expected))}"
    if g.kind == "GRAD_MODE":
        return f"__fj_grad_enabled() is {g.expected}"
    if g.kind == "ATOMS_MATCH":
        return f"{bind(_native_same_atoms())}({e}, {bind(g.expected[0])})"
    if g.kind == "NATIVE_STATE":
        from .native_state import bits_term
        return bits_term(g.expected[0], bind)
    if g.kind == "STATE_MATCH":
        fn, value = g.expected
        call = f"{bind(fn)}()"
        if fn.__name__ == "is_cpu_autocast_enabled":       # skip the Python wrapper on the fast path
            call = f"{bind(torch.is_autocast_enabled)}('cpu')"
        if fn.__name__ == "default_device" and value == torch.device("cpu"):
            # no torch function mode active (one C call) already means the CPU
            return f"(not {bind(torch._C._len_torch_function_stack)}() or {call} == {bind(value)})"
        return f"{call} is {value!r}" if isinstance(value, bool) else f"{call} == {bind(value)}"
    raise ValueError(g.kind)
