"""itertools iterators inside the translated frame.

Why this exists: `product`, `chain`, `combinations`, `zip_longest`, `islice`, `accumulate`, `pairwise`,
`groupby`... drive loops over layers, shapes and tensors in model and library code; as opaque objects
each is a graph break at its construction.

Each iterator does what its C implementation does, in the same order, so a consumer that interleaves
work with it sees what Python shows it:
  product, combinations, combinations_with_replacement, permutations
                  read their whole input when made (as the C code does), then yield tuples
  chain, chain.from_iterable, zip_longest, islice, accumulate, starmap, pairwise, groupby (and its
  groups), takewhile, dropwhile, filterfalse, compress, cycle, count, repeat
                  lazy (`LazyIterator.next_value`): each step pulls from their inputs only what the C
                  code would pull, and calls functions (accumulate's func, starmap's, groupby's key)
                  when it would call them
They cannot leave the frame (no rebuild): one that escapes makes the frame run as Python.
"""
import itertools

from ....errors import GraphBreak
from ..base import Const, IteratorValue, SeqValue
from .generators import LazyIterator, as_iterator, step
from ..operator_rules import binary_op, compare_op
from ..protocol import as_python, truth, unpack_iterable


class _Lazy(LazyIterator):
    """A lazy itertools iterator; `kind` is the real itertools type (its python_type)."""
    __slots__ = ("state",)
    kind = None

    def __init__(self, **state):
        super().__init__()
        self.state = state

    def python_type(self):
        return self.kind

    def __repr__(self):
        return f"{self.kind.__name__}Value"


def _arg(args, kwargs, i, name, default):
    if len(args) > i:
        return args[i]
    return kwargs.get(name, default)


def _tuples(rows):
    return IteratorValue([SeqValue(tuple, list(r)) for r in rows])


# ---- eager combinatorics --------------------------------------------------------------------------

def product_lookaside(tx, args, kwargs):
    repeat = as_python(kwargs.get("repeat", Const(1)))
    pools = [unpack_iterable(tx, a) for a in args] * repeat
    return _tuples(itertools.product(*pools))


def combinations_lookaside(tx, args, kwargs):
    pool = unpack_iterable(tx, _arg(args, kwargs, 0, "iterable", None))
    return _tuples(itertools.combinations(pool, as_python(_arg(args, kwargs, 1, "r", None))))


def combinations_wr_lookaside(tx, args, kwargs):
    pool = unpack_iterable(tx, _arg(args, kwargs, 0, "iterable", None))
    return _tuples(itertools.combinations_with_replacement(pool, as_python(_arg(args, kwargs, 1, "r", None))))


def permutations_lookaside(tx, args, kwargs):
    pool = unpack_iterable(tx, _arg(args, kwargs, 0, "iterable", None))
    return _tuples(itertools.permutations(pool, as_python(_arg(args, kwargs, 1, "r", Const(None)))))


# ---- lazy ones -----------------------------------------------------------------------------------

class ChainValue(_Lazy):
    kind = itertools.chain

    def next_value(self, tx):
        s = self.state
        while True:
            if s["current"] is None:
                if s["outer"] is None:
                    return None
                iterable = step(tx, s["outer"])
                if iterable is None:
                    s["outer"] = None
                    return None
                s["current"] = as_iterator(tx, iterable)
            v = step(tx, s["current"])
            if v is not None:
                return v
            s["current"] = None


def chain_lookaside(tx, args, kwargs):
    if kwargs:
        raise GraphBreak("bad call", "TypeError: chain() takes no keyword arguments")
    return ChainValue(outer=IteratorValue(args), current=None)


def chain_from_iterable_lookaside(tx, args, kwargs):
    return ChainValue(outer=as_iterator(tx, args[0]), current=None)


class ZipLongestValue(_Lazy):
    kind = itertools.zip_longest

    def next_value(self, tx):
        s = self.state
        its, active = s["its"], s["active"]
        if not its or s["done"]:
            return None
        row = []
        for i, it in enumerate(its):
            if not active[i]:
                row.append(s["fill"])
                continue
            v = step(tx, it)
            if v is None:
                active[i] = False
                s["left"] -= 1
                if s["left"] == 0:
                    s["done"] = True
                    return None
                v = s["fill"]
            row.append(v)
        return SeqValue(tuple, row)


def zip_longest_lookaside(tx, args, kwargs):
    its = [as_iterator(tx, a) for a in args]
    return ZipLongestValue(its=its, active=[True] * len(its), left=len(its), done=False,
                           fill=kwargs.get("fillvalue", Const(None)))


class IsliceValue(_Lazy):
    """islice's C loop: skip to `next`, stop at `stop`, advance by `step`; drop the input at the end."""
    kind = itertools.islice

    def next_value(self, tx):
        s = self.state
        it = s["it"]
        if it is None:
            return None
        stop = s["stop"]
        while s["cnt"] < s["next"]:
            if step(tx, it) is None:
                s["it"] = None
                return None
            s["cnt"] += 1
        if stop is not None and s["cnt"] >= stop:
            s["it"] = None
            return None
        v = step(tx, it)
        if v is None:
            s["it"] = None
            return None
        s["cnt"] += 1
        s["next"] += s["step"]
        if stop is not None and s["next"] > stop:
            s["next"] = stop
        return v


def islice_lookaside(tx, args, kwargs):
    if kwargs or not 2 <= len(args) <= 4:
        raise GraphBreak("bad call", "TypeError: islice expected 2 to 4 arguments")
    bounds = [as_python(a) for a in args[1:]]
    if len(bounds) == 1:
        start, stop, stride = 0, bounds[0], 1
    else:
        start, stop, stride = (bounds + [None])[:3]
        start = 0 if start is None else start
        stride = 1 if stride is None else stride
    if any(b is not None and (not isinstance(b, int) or b < 0) for b in (start, stop)) or \
            not isinstance(stride, int) or stride < 1:
        raise GraphBreak("bad call", "ValueError: invalid islice arguments")
    return IsliceValue(it=as_iterator(tx, args[0]), next=start, stop=stop, step=stride, cnt=0)


class AccumulateValue(_Lazy):
    kind = itertools.accumulate

    def next_value(self, tx):
        s = self.state
        if s["initial"] is not None:
            s["total"], s["initial"] = s["initial"], None
            return s["total"]
        v = step(tx, s["it"])
        if v is None:
            return None
        if s["total"] is None:
            s["total"] = v
        elif s["func"] is None:
            s["total"] = binary_op(tx, "+", s["total"], v)
        else:
            s["total"] = tx.call(s["func"], [s["total"], v], {})
        return s["total"]


def accumulate_lookaside(tx, args, kwargs):
    func = _arg(args, kwargs, 1, "func", None)
    if isinstance(func, Const) and func.value is None:
        func = None
    initial = kwargs.get("initial")
    if isinstance(initial, Const) and initial.value is None:
        initial = None
    return AccumulateValue(it=as_iterator(tx, _arg(args, kwargs, 0, "iterable", None)), func=func,
                           initial=initial, total=None)


class RepeatValue(_Lazy):
    kind = itertools.repeat

    def next_value(self, tx):
        s = self.state
        if s["times"] is not None:
            if s["times"] <= 0:
                return None
            s["times"] -= 1
        return s["obj"]

    def length(self, tx):
        if self.state["times"] is None:
            raise GraphBreak("bad call", "TypeError: len() of unsized object")
        return max(self.state["times"], 0)


def repeat_lookaside(tx, args, kwargs):
    times = _arg(args, kwargs, 1, "times", None)
    return RepeatValue(obj=_arg(args, kwargs, 0, "object", None),
                       times=None if times is None else as_python(times))


class CountValue(_Lazy):
    kind = itertools.count

    def next_value(self, tx):
        s = self.state
        v = s["n"]
        s["n"] = binary_op(tx, "+", v, s["step"])
        return v


def count_lookaside(tx, args, kwargs):
    start = _arg(args, kwargs, 0, "start", Const(0))
    stride = _arg(args, kwargs, 1, "step", Const(1))
    if not (isinstance(start, Const) and isinstance(stride, Const)):
        raise GraphBreak("call", "itertools.count over non-constant numbers")
    return CountValue(n=start, step=stride)


class CycleValue(_Lazy):
    kind = itertools.cycle

    def next_value(self, tx):
        s = self.state
        if s["it"] is not None:
            v = step(tx, s["it"])
            if v is not None:
                s["saved"].append(v)
                return v
            s["it"] = None
        if not s["saved"]:
            return None
        v = s["saved"][s["pos"] % len(s["saved"])]
        s["pos"] += 1
        return v


def cycle_lookaside(tx, args, kwargs):
    return CycleValue(it=as_iterator(tx, args[0]), saved=[], pos=0)


class StarmapValue(_Lazy):
    kind = itertools.starmap

    def next_value(self, tx):
        v = step(tx, self.state["it"])
        if v is None:
            return None
        return tx.call(self.state["fn"], unpack_iterable(tx, v), {})


def starmap_lookaside(tx, args, kwargs):
    return StarmapValue(fn=args[0], it=as_iterator(tx, args[1]))


class PairwiseValue(_Lazy):
    kind = itertools.pairwise

    def next_value(self, tx):
        s = self.state
        if s["it"] is None:
            return None
        if s["old"] is None:
            s["old"] = step(tx, s["it"])
            if s["old"] is None:
                s["it"] = None
                return None
        new = step(tx, s["it"])
        if new is None:
            s["it"] = None
            s["old"] = None
            return None
        pair = SeqValue(tuple, [s["old"], new])
        s["old"] = new
        return pair


def pairwise_lookaside(tx, args, kwargs):
    return PairwiseValue(it=as_iterator(tx, args[0]), old=None)


class _PredicateValue(_Lazy):
    """takewhile / dropwhile / filterfalse: a predicate called on each item as the C code calls it."""

    def _test(self, tx, v):
        return truth(tx, tx.call(self.state["pred"], [v], {}))


class TakewhileValue(_PredicateValue):
    kind = itertools.takewhile

    def next_value(self, tx):
        s = self.state
        if s["stopped"]:
            return None
        v = step(tx, s["it"])
        if v is None:
            return None
        if self._test(tx, v):
            return v
        s["stopped"] = True
        return None


class DropwhileValue(_PredicateValue):
    kind = itertools.dropwhile

    def next_value(self, tx):
        s = self.state
        while True:
            v = step(tx, s["it"])
            if v is None:
                return None
            if s["started"] or not self._test(tx, v):
                s["started"] = True
                return v


class FilterfalseValue(_PredicateValue):
    kind = itertools.filterfalse

    def next_value(self, tx):
        s = self.state
        while True:
            v = step(tx, s["it"])
            if v is None:
                return None
            keep = v if isinstance(s["pred"], Const) and s["pred"].value is None else tx.call(s["pred"], [v], {})
            if not truth(tx, keep):
                return v


def takewhile_lookaside(tx, args, kwargs):
    return TakewhileValue(pred=args[0], it=as_iterator(tx, args[1]), stopped=False)


def dropwhile_lookaside(tx, args, kwargs):
    return DropwhileValue(pred=args[0], it=as_iterator(tx, args[1]), started=False)


def filterfalse_lookaside(tx, args, kwargs):
    return FilterfalseValue(pred=args[0], it=as_iterator(tx, args[1]))


class CompressValue(_Lazy):
    kind = itertools.compress

    def next_value(self, tx):
        s = self.state
        while True:
            v = step(tx, s["data"])
            if v is None:
                return None
            sel = step(tx, s["selectors"])
            if sel is None:
                return None
            if truth(tx, sel):
                return v


def compress_lookaside(tx, args, kwargs):
    data = _arg(args, kwargs, 0, "data", None)
    selectors = _arg(args, kwargs, 1, "selectors", None)
    return CompressValue(data=as_iterator(tx, data), selectors=as_iterator(tx, selectors))


# ---- groupby -------------------------------------------------------------------------------------

_UNSET = object()


class GroupbyValue(_Lazy):
    """groupby's C state: the current item and key, the target key, and which group is current."""
    kind = itertools.groupby

    def _step(self, tx):
        s = self.state
        v = step(tx, s["it"])
        if v is None:
            return False
        s["currkey"] = v if s["key"] is None else tx.call(s["key"], [v], {})
        s["currvalue"] = v
        return True

    def same_key(self, tx, a, b):
        return truth(tx, compare_op(tx, "==", a, b))

    def next_value(self, tx):
        s = self.state
        s["currgrouper"] = None
        while True:
            if s["currkey"] is _UNSET:
                pass
            elif s["tgtkey"] is _UNSET:
                break
            elif not self.same_key(tx, s["tgtkey"], s["currkey"]):
                break
            if not self._step(tx):
                return None
        s["tgtkey"] = s["currkey"]
        grouper = GrouperValue(parent=self, tgtkey=s["tgtkey"])
        s["currgrouper"] = grouper
        return SeqValue(tuple, [s["currkey"], grouper])


class GrouperValue(_Lazy):
    kind = type(next(itertools.groupby([1]))[1])

    def next_value(self, tx):
        parent = self.state["parent"]
        ps = parent.state
        if ps["currgrouper"] is not self:
            return None
        if ps["currvalue"] is _UNSET:
            if not parent._step(tx):
                return None
        if not parent.same_key(tx, self.state["tgtkey"], ps["currkey"]):
            return None
        v = ps["currvalue"]
        ps["currvalue"] = _UNSET
        return v


def groupby_lookaside(tx, args, kwargs):
    key = _arg(args, kwargs, 1, "key", None)
    if isinstance(key, Const) and key.value is None:
        key = None
    return GroupbyValue(it=as_iterator(tx, _arg(args, kwargs, 0, "iterable", None)), key=key,
                        currkey=_UNSET, currvalue=_UNSET, tgtkey=_UNSET, currgrouper=None)
