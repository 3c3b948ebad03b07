"""Which dimensions of a tensor (and which Python ints) one conversion makes symbolic.

    dynamic=True    every dimension of every input tensor, except parameters and what mark_static names
    dynamic=None    the dimensions automatic dynamic has seen change (memory.py), and the marked ones
    dynamic=False   only what mark_dynamic names

A dimension automatic dynamic learnt gets a symbol from 0 (oblivious.py): one entry serves sizes 0 and 1
too, guarded only where the graph's meaning depends on them (a broadcast of size 1), so sizes 3, 2, 1, 0
are two conversions (torch.compile: four). Marked dimensions and dynamic=True keep torch's 0/1
specialization (a size 0 or 1 stays static: one more entry each), unless mark_dynamic's min is 0 or 1. Parameters
(and tensors reached through nn.Module attributes) keep static shapes unless mark_dynamic says
otherwise. Only plain strided tensors at storage offset 0 get symbols: contiguous ones, and non-contiguous
ones (a transpose, a permute, a column slice, an expand) whose strides become expressions of the sizes
or symbols of their own (symbols.py), each guarded. A tensor at another storage offset (`x[2:]`) and
other layouts stay static (guarded exactly).
"""
import torch

from .marks import ALL, has_marks, marks_of
from .oblivious import FROM_ZERO, from_zero


class ShapePolicy:
    """The policy of one conversion: `dynamic` (True/None/False) and the code's ShapeMemory."""

    __slots__ = ("dynamic", "memory", "floats", "float_tensors")

    def __init__(self, dynamic, memory, floats=False):
        self.dynamic = dynamic
        self.memory = memory
        self.floats = floats        # may a Python float become a symbolic input (backends.runs_graph_as_is)?
        # else a dynamic float is a 0-dim tensor input read by `.item()` in the graph (tracing backends:
        # AOT autograd takes no SymFloat inputs); False after a conversion had to decide on its value
        self.float_tensors = not floats

    def wants_symbols(self, arguments):
        """Does this conversion need a ShapeEnv: dynamic=True, something remembered, or a marked tensor
        among the arguments (at the top or one container down)?"""
        if self.dynamic is True or (self.memory and self.dynamic is not False):
            return True
        return any(has_marks(t) for t in _tensors_in(arguments))

    def tensor_dims(self, t, name, through_module=False):
        """{dim: (min, max)} of the dimensions of `t` (read as `name`) to make symbolic, or None."""
        if not _symbolic_layout(t) or name in self.memory.static_tensors:
            return None
        marks = marks_of(t)
        explicit, maybe, static = marks if marks is not None else ({}, (), ())
        if ALL in static:
            return None
        chosen = {}
        if self.dynamic is True and not through_module and not isinstance(t, torch.nn.Parameter):
            chosen = {d: (None, None) for d in range(t.dim())}
        elif self.dynamic is None and not isinstance(t, torch.nn.Parameter):
            chosen = {d: (None, None) for d in maybe}
            chosen.update({d: FROM_ZERO for d in self.memory.dims_of(name)})
        chosen.update(explicit)
        shape = t.shape
        out = {d: bounds for d, bounds in chosen.items()
               if d not in static and d < len(shape) and (shape[d] > 1 or from_zero(bounds))}
        return out or None

    def number_dynamic(self, name, kind=int):
        return self.dynamic is not False and name in self.memory.numbers and \
            (kind is int or self.floats or self.float_tensors and name not in self.memory.static_numbers)


def _symbolic_layout(t):
    if type(t) not in (torch.Tensor, torch.nn.Parameter) or t.layout is not torch.strided or t.is_nested:
        return False
    if t.dim() == 0 or t.storage_offset() != 0:
        return False
    return not (t.is_quantized or t.is_meta or t.is_inference() or t.is_conj() or t.is_neg())


def _tensors_in(arguments):
    for v in arguments:
        if isinstance(v, torch.Tensor):
            yield v
        elif isinstance(v, (list, tuple)):
            yield from (x for x in v if isinstance(x, torch.Tensor))
        elif isinstance(v, dict):
            yield from (x for x in v.values() if isinstance(x, torch.Tensor))
