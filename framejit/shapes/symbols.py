"""ShapeContext: the symbols of one conversion, built on torch's ShapeEnv.

One ShapeEnv per conversion sits under the conversion's FakeTensorMode. An input tensor with dynamic
dimensions gets a fake whose sizes are SymInts of that ShapeEnv and whose strides are expressions of
them (a transpose's, a permute's) or symbols of their own (a slice's row stride); a Python int made
dynamic gets a SymInt of its own.
Ops run on those fakes, and every decision torch or the frame takes on a symbolic size (a view's
legality, `if x.shape[1] > 16`, broadcasting two sizes) is recorded by the ShapeEnv as a guard.

Each symbol remembers where it was read, as Python text over the entry's arguments (`x.size(1)`) and
in words (`x.shape[1]`): guard_text.py renders the ShapeEnv's facts over those reads. Sizes are duck
typed as torch does: two dims of the same size at conversion share one symbol (and are guarded equal).
A dimension whose bounds start below 2 (automatic dynamic's, oblivious.py) gets a symbol from 0, not 0/1
specialized, and the conversion's ops then run size-oblivious (`run_op`).
"""
import dataclasses

import torch
import torch._guards
from torch.fx.experimental.symbolic_shapes import DimDynamic, ShapeEnv

from .oblivious import from_zero, run_oblivious


@dataclasses.dataclass(frozen=True)
class ReadSource(torch._guards.Source):
    """Where a symbol was read, in words: the ShapeEnv's own bookkeeping names its symbols' sources."""
    label: str

    @property
    def _name_template(self):
        return self.label

    def guard_source(self):
        return torch._guards.GuardSource.LOCAL


@dataclasses.dataclass
class Symbol:
    expr: object                 # the sympy symbol
    reads: list                  # [(python text, words)], the first one defines it
    bounds: tuple = (None, None)  # mark_dynamic's (min, max)
    number: type = None          # int/float for a Python number input (its type is guarded elsewhere)
    from_zero: bool = False      # a size from 0 (not 0/1 specialized): oblivious.py


class ShapeContext:
    def __init__(self, capture_scalars=False):
        self.env = ShapeEnv(allow_scalar_outputs=capture_scalars, allow_dynamic_output_shape_ops=capture_scalars)
        self.symbols = {}            # sympy symbol -> Symbol, in creation order
        self.dynamic_inputs = []     # (words, {dim: symbol words}) for reports
        self.float_symbols = {}      # unbacked symbol -> source name of a float passed as a tensor (graph/float_inputs.py)
        self.stride_checks = []      # (python text, words, SymInt or int): a non-contiguous input's strides
        self.oblivious = False       # has a size from 0: ops run size-oblivious (oblivious.py)

    def _symbol(self, value, text, words, dynamic_dim, bounds=(None, None), number=None):
        source = ReadSource(words)
        zero_one = number is None and from_zero(bounds)
        if number is None:
            expr = self.env.create_symbol(value, source, dynamic_dim, do_not_specialize_zero_one=zero_one)
        else:
            expr = self.env.create_unspecified_symbol(value, source, dynamic_dim)
        if not getattr(expr, "is_Symbol", False):       # 0/1 specialized: a constant
            return value
        known = self.symbols.get(expr)
        if known is None:
            known = self.symbols[expr] = Symbol(expr, [], bounds, number, zero_one)
            if zero_one:
                self.env.size_like.add(expr)
                self.oblivious = True
        known.reads.append((text, words))
        if bounds != (None, None):
            known.bounds = bounds
        if number is None:
            return self.env.create_symintnode(expr, hint=value, source=source)
        return self.env.create_symintnode(expr, hint=value, source=source) if number is int else \
            self.env.create_symfloatnode(expr, hint=value, source=source)

    def fake_tensor(self, fake_mode, t, text, words, dims):
        """A fake of real tensor `t` (read by Python text `text`, storage offset 0) whose dimensions `dims`
        ({dim: (min, max)}) are symbols; its strides are expressions of them (`_strides`)."""
        sizes = []
        for d, n in enumerate(t.shape):
            if d in dims:
                sizes.append(self._symbol(n, f"{text}.size({d})", f"{words}.shape[{d}]", DimDynamic.DUCK, dims[d]))
            else:
                sizes.append(n)
        strides = self._strides(t, sizes, text, words)
        with fake_mode:
            fake = torch.empty_strided(sizes, strides, dtype=t.dtype, device=t.device)
        if t.requires_grad:
            fake.requires_grad_(True)
            try:
                leaf, unreadable = t.is_leaf, False
            except RuntimeError:        # a view autograd refuses to read (graph/fake_inputs.py)
                leaf, unreadable = False, True
            if not leaf:                # a non-leaf input has a non-leaf fake, as from_tensor makes it
                with fake_mode, torch.enable_grad():
                    fake = torch._C._functions.DelayedError("framejit: backward through an example input", 1)(fake)
                if unreadable:
                    fake.framejit_history_unreadable = True
        self.dynamic_inputs.append((words, {d: str(s) for d, s in enumerate(sizes) if d in dims}))
        return fake

    def _strides(self, t, sizes, text, words):
        """The strides of `t` over its symbolic `sizes`, as torch's fakes make them: walking the dims from
        the smallest stride up, a stride equal to (stride * size) of the dim below it is that product
        (a contiguous tensor, a transpose, a permute); any other stride (a slice's row stride, `x[:, :5]`)
        is a symbol of its own (duck sized), 0 and 1 stay constants. A non-contiguous input's strides
        are guarded one by one against those expressions (`stride_checks`, rendered in the SHAPES guard)."""
        real = t.stride()
        if t.is_contiguous():
            out, step = [], 1
            for size in reversed(sizes):
                out.append(step)
                step = step * size
            return out[::-1]
        out = [None] * t.dim()
        candidates = {1: 1}          # real stride value -> its expression
        for d in sorted(range(t.dim()), key=lambda i: (real[i], t.shape[i])):
            st = real[d]
            if st == 0:
                out[d] = 0
            elif st in candidates:
                out[d] = candidates[st]
            else:
                out[d] = self._symbol(st, f"{text}.stride({d})", f"{words}.stride({d})", DimDynamic.DUCK)
            candidates.setdefault(st * t.shape[d], out[d] * sizes[d])
        for d, expr in enumerate(out):
            node = getattr(expr, "node", None)
            sym = node.expr if node is not None else None
            if sym is not None and sym in self.symbols and (f"{text}.stride({d})", f"{words}.stride({d})") in self.symbols[sym].reads:
                continue         # the stride's own symbol: bound by its read
            self.stride_checks.append((f"{text}.stride({d})", f"{words}.stride({d})", expr))
        self.stride_checks.append((f"{text}.storage_offset()", f"{words}.storage_offset()", 0))
        return out

    def run_op(self, run):
        """run() (an op on fakes): size-oblivious where this conversion has sizes from 0 (oblivious.py)."""
        return run_oblivious(run) if self.oblivious else run()

    def number(self, value, text, words):
        """A SymInt (SymFloat) standing for Python number `value` read by `text`."""
        out = self._symbol(value, text, words, DimDynamic.DYNAMIC, number=type(value))
        self.dynamic_inputs.append((words, {None: str(out)}))
        return out

    @property
    def used(self):
        """Did the conversion make symbols: input sizes and numbers, or unbacked ones (data-dependent
        sizes and `.item()` values, Config.capture_data_dependent)?"""
        env = self.env
        return bool(self.symbols) or bool(env.unbacked_symint_counter or env.unbacked_symfloat_counter)
