"""What a caller can observe after a call, as plain comparable data, and the differences between two.

`Snapshot().take(roots)` walks the named roots (arguments, result, globals) once, in order, and turns
every object into a tagged tuple: tensors by dtype, shape, stride, requires_grad, values, .grad and
which earlier tensor they share storage with; containers recursively; user objects by class name and
attributes (instance __dict__ in order, then slots); nn.Modules by training flag, parameters, buffers,
plain attributes and children; stand-in modules by their attributes. A mutable object met a second
time becomes ("ref", <path where first met>), so identity (a returned input, one object passed
twice, a list stored in a global and returned) is compared as structure.

Classes are compared by qualified name, since each side loads the program into its own namespace.
`diff(a, b)` yields (path, message, is_identity) for every difference, up to a limit.
"""
import math
import types

import torch

RTOL = 1e-4
ATOL = 1e-5
_ATOMS = (type(None), bool, int, str, bytes)
_MODULE_INTERNALS = {"_parameters", "_buffers", "_modules", "_non_persistent_buffers_set", "training",
                     "_backward_pre_hooks", "_backward_hooks", "_is_full_backward_hook", "_forward_hooks",
                     "_forward_hooks_with_kwargs", "_forward_hooks_always_called", "_forward_pre_hooks",
                     "_forward_pre_hooks_with_kwargs", "_state_dict_hooks", "_state_dict_pre_hooks",
                     "_load_state_dict_pre_hooks", "_load_state_dict_post_hooks"}


class Snapshot:
    def __init__(self):
        self.seen = {}          # id(obj) -> path where it was first met
        self.storages = {}      # storage data pointer -> path of the first tensor on it
        self.alive = []         # keep walked objects alive so their ids stay unique

    def take(self, roots):
        """roots: list of (name, object) -> list of (name, snapshot)."""
        return [(name, self.snap(obj, name, 0)) for name, obj in roots]

    def _first_time(self, obj, path):
        key = id(obj)
        if key in self.seen:
            return ("ref", self.seen[key])
        self.seen[key] = path
        self.alive.append(obj)
        return None

    def snap(self, obj, path, depth):
        if depth > 12:
            return ("deep",)
        if isinstance(obj, _ATOMS):
            return ("v", type(obj).__name__, obj)
        if isinstance(obj, float):
            return ("f", obj)
        if isinstance(obj, torch.Tensor):
            return self.tensor(obj, path, depth)
        if isinstance(obj, (torch.dtype, torch.device, torch.Size, complex, range, slice)):
            return ("v", type(obj).__name__, repr(obj))
        if isinstance(obj, tuple):
            return ("tuple",) + tuple(self.snap(v, f"{path}[{i}]", depth + 1) for i, v in enumerate(obj))
        if isinstance(obj, BaseException):
            return ("exc", type(obj).__qualname__, str(obj))
        if isinstance(obj, (types.FunctionType, types.BuiltinFunctionType, types.MethodType, type)):
            return ("callable", type(obj).__name__, getattr(obj, "__qualname__", repr(obj)))
        if isinstance(obj, (list, dict, set, frozenset, torch.nn.Module, types.ModuleType)) or hasattr(obj, "__dict__") \
                or hasattr(type(obj), "__slots__"):
            ref = self._first_time(obj, path)
            if ref:
                return ref
        if isinstance(obj, list):
            return ("list",) + tuple(self.snap(v, f"{path}[{i}]", depth + 1) for i, v in enumerate(obj))
        if isinstance(obj, dict):
            return ("dict",) + tuple((repr(k), self.snap(v, f"{path}[{k!r}]", depth + 1)) for k, v in obj.items())
        if isinstance(obj, (set, frozenset)):
            return (type(obj).__name__, tuple(sorted(repr(v) for v in obj)))
        if isinstance(obj, torch.nn.Module):
            return self.module(obj, path, depth)
        if isinstance(obj, types.ModuleType):
            if obj.__name__ != "aux":
                return ("pymodule", obj.__name__)
            return ("pymodule", obj.__name__) + self.attrs(vars(obj), path, depth, skip_dunder=True)
        if hasattr(obj, "__dict__") or hasattr(type(obj), "__slots__"):
            return self.instance(obj, path, depth)
        return ("other", type(obj).__qualname__)

    def tensor(self, t, path, depth):
        ref = self._first_time(t, path)
        if ref:
            return ref
        try:
            return self._tensor(t, path, depth)
        except RuntimeError as exc:           # e.g. an unbind view whose base was written in place
            return ("unreadable tensor", str(exc).split(".")[0])

    def _tensor(self, t, path, depth):
        storage = None
        if t.numel() and t.layout == torch.strided:
            storage = self.storages.setdefault(t.untyped_storage().data_ptr(), path)
        grad = None
        if t.is_leaf and t.grad is not None:
            grad = self.snap(t.grad, path + ".grad", depth + 1)
        values = t.detach().clone()
        return ("T", str(t.dtype), tuple(t.shape), tuple(t.stride()), t.requires_grad, values, grad,
                storage if storage != path else None)

    def attrs(self, mapping, path, depth, skip_dunder=False, skip=()):
        out = []
        for name, value in list(mapping.items()):
            if name in skip or (skip_dunder and name.startswith("__")):
                continue
            if isinstance(value, types.ModuleType) and value.__name__ != "aux":
                continue
            out.append((name, self.snap(value, f"{path}.{name}", depth + 1)))
        return tuple(out)

    def instance(self, obj, path, depth):
        state = self.attrs(getattr(obj, "__dict__", {}), path, depth)
        slots = []
        for cls in type(obj).__mro__:
            for slot in getattr(cls, "__slots__", ()):
                if slot in ("__dict__", "__weakref__"):
                    continue
                try:
                    value = getattr(obj, slot)
                except AttributeError:
                    slots.append((slot, ("unset",)))
                    continue
                slots.append((slot, self.snap(value, f"{path}.{slot}", depth + 1)))
        return ("obj", type(obj).__qualname__, state, tuple(slots))

    def module(self, mod, path, depth):
        params = tuple((n, self.snap(p, f"{path}.{n}", depth + 1)) for n, p in mod._parameters.items())
        buffers = tuple((n, self.snap(b, f"{path}.{n}", depth + 1)) for n, b in mod._buffers.items())
        plain = self.attrs(vars(mod), path, depth, skip=_MODULE_INTERNALS)
        children = tuple((n, self.snap(c, f"{path}.{n}", depth + 1)) for n, c in mod._modules.items())
        return ("module", type(mod).__qualname__, mod.training, params, buffers, plain, children)


# ---------------------------------------------------------------- differences


def _label(path, sub):
    if isinstance(sub, int):
        return f"{path}[{sub}]"
    return f"{path}.{sub}"


def diff(a, b, path="", out=None, limit=8):
    """Differences between two snapshots: list of (path, message, is_identity)."""
    if out is None:
        out = []
    if len(out) >= limit:
        return out
    if a[0] != b[0]:
        identity = a[0] == "ref" or b[0] == "ref"
        out.append((path, f"{_show(a)} (eager) != {_show(b)} (compiled)", identity))
        return out
    tag = a[0]
    if tag == "T":
        _diff_tensor(a, b, path, out, limit)
    elif tag == "f":
        x, y = a[1], b[1]
        if not (x == y or (math.isnan(x) and math.isnan(y)) or math.isclose(x, y, rel_tol=RTOL, abs_tol=ATOL)):
            out.append((path, f"{x!r} (eager) != {y!r} (compiled)", False))
    elif tag in ("list", "tuple"):
        if len(a) != len(b):
            out.append((path, f"length {len(a) - 1} (eager) != {len(b) - 1} (compiled): "
                              f"{_show(a)} vs {_show(b)}", False))
            return out
        for i, (x, y) in enumerate(zip(a[1:], b[1:])):
            diff(x, y, f"{path}[{i}]", out, limit)
    elif tag == "dict":
        _diff_pairs(a[1:], b[1:], path, out, limit, "key", lambda p, k: f"{p}[{k}]")
    elif tag == "obj":
        if a[1] != b[1]:
            out.append((path, f"class {a[1]} (eager) != {b[1]} (compiled)", False))
            return out
        _diff_pairs(a[2], b[2], path + ".__dict__", out, limit, "attribute", lambda p, k: f"{p[:-9]}.{k}")
        _diff_pairs(a[3], b[3], path, out, limit, "slot", lambda p, k: f"{p}.{k}")
    elif tag == "module":
        if a[1] != b[1] or a[2] != b[2]:
            out.append((path, f"module {a[1]} training={a[2]} (eager) != {b[1]} training={b[2]} (compiled)", False))
        for i, what in ((3, "parameter"), (4, "buffer"), (5, "attribute"), (6, "submodule")):
            _diff_pairs(a[i], b[i], path + "." + what + "s", out, limit, what, lambda p, k: f"{p.rsplit('.', 1)[0]}.{k}")
    elif tag == "pymodule":
        _diff_pairs(a[2:], b[2:], path + ".__dict__", out, limit, "attribute", lambda p, k: f"{p[:-9]}.{k}")
    elif a != b:
        out.append((path, f"{_show(a)} (eager) != {_show(b)} (compiled)", tag == "ref"))
    return out


def _diff_pairs(a, b, path, out, limit, what, join):
    keys_a = [k for k, _ in a]
    keys_b = [k for k, _ in b]
    if keys_a != keys_b:
        missing = [k for k in keys_a if k not in keys_b]
        extra = [k for k in keys_b if k not in keys_a]
        if missing or extra:
            out.append((path, f"{what}s {keys_a} (eager) != {keys_b} (compiled): missing {missing}, extra {extra}",
                        False))
        else:
            out.append((path, f"{what} order {keys_a} (eager) != {keys_b} (compiled)", False))
    vals_b = dict(b)
    for k, v in a:
        if k in vals_b:
            diff(v, vals_b[k], join(path, k), out, limit)


def _diff_tensor(a, b, path, out, limit):
    _, dtype_a, shape_a, stride_a, rg_a, val_a, grad_a, storage_a = a
    _, dtype_b, shape_b, stride_b, rg_b, val_b, grad_b, storage_b = b
    for what, x, y in (("dtype", dtype_a, dtype_b), ("shape", shape_a, shape_b), ("requires_grad", rg_a, rg_b)):
        if x != y:
            out.append((path, f"{what} {x} (eager) != {y} (compiled)", False))
            return
    if not _close(val_a, val_b):
        out.append((path, f"values differ: eager={_short(val_a)} compiled={_short(val_b)}", False))
    if stride_a != stride_b:
        out.append((path, f"stride {stride_a} (eager) != {stride_b} (compiled)", False))
    if (grad_a is None) != (grad_b is None):
        out.append((path + ".grad", f"{'None' if grad_a is None else 'a tensor'} (eager) != "
                                    f"{'None' if grad_b is None else 'a tensor'} (compiled)", False))
    elif grad_a is not None:
        diff(grad_a, grad_b, path + ".grad", out, limit)
    if storage_a != storage_b:
        out.append((path, f"shares storage with {storage_a or 'nothing earlier'} (eager) != "
                          f"{storage_b or 'nothing earlier'} (compiled)", True))


def _close(x, y):
    if x.dtype.is_floating_point or x.dtype.is_complex:
        return torch.allclose(x, y, rtol=RTOL, atol=ATOL, equal_nan=True)
    return torch.equal(x, y)


def _short(t):
    text = repr(t.tolist()) if t.numel() <= 16 else f"tensor{tuple(t.shape)} sum={t.double().sum().item():.6g}"
    return text[:200]


def _show(snap):
    tag = snap[0]
    if tag == "v":
        return repr(snap[2])
    if tag == "f":
        return repr(snap[1])
    if tag == "ref":
        return f"the object from {snap[1]}"
    if tag == "T":
        return f"a new tensor{snap[2]}"
    if tag == "obj":
        return f"a {snap[1]} object"
    if tag == "exc":
        return f"{snap[1]}({snap[2]!r})"
    return f"{tag} {str(snap[1:])[:120]}"
