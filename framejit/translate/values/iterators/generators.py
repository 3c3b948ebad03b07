"""Generators consumed inside the translated region: genexprs and `yield`-based helper functions.

Why this exists: `sum(t.sum() for t in xs)`, `any(m is None for m in masks)` and small helper
generators driven by a for loop are common in model code; without them each is a graph break.

A GeneratorValue owns a child Translator over the generator's code that is run lazily, one step at a
time: `next_value` runs it from where it stopped to the next YIELD_VALUE (returning the yielded Value)
or to its return (returning None: exhausted). Stepping lazily keeps the order of the generator's work
and the consumer's work exactly as in Python (a consumer that mutates what the generator reads sees the
same interleaving). Consumers that take everything at once (list, tuple, sum, max, sorted...) go through
`unpack`, which steps to the end. for loops, next(), any(), all(), enumerate(), zip(), map(), filter()
and iter() over a generator stay lazy: any()/all() stop early as Python does.

A generator whose yield sits inside a try or with block is only supported when something guarantees it
runs to its end (a @contextmanager), or when closing it there runs none of its code (only `except C:`
clauses over Exception subclasses around the yield: GeneratorExit passes them, as in
collections.abc.Sequence.__iter__): otherwise Python would run its cleanup when the abandoned
generator is collected, which a translation cannot reproduce, so that is a graph break. Root frames that
are generators are never translated (the converter runs them as plain Python).
"""
import types

from ....errors import GraphBreak
from ...dispatch import RETURN, handler
from ..objects.exception_values import ExceptionValue, RaisedException, exception_of
from ..base import Const, IteratorValue, MethodValue, SeqValue, Value
from ..protocol import as_python, truth, unpack_iterable

_NOTHING = object()


class LazyIterator(Value):
    """An iterator whose items are produced on demand (`next_value`: a Value, or None when exhausted)."""
    __slots__ = ()

    def __init__(self):
        super().__init__(None)

    def is_lazy_iterator(self):
        return True

    def next_value(self, tx):
        raise NotImplementedError

    def unpack(self, tx):
        out = []
        while True:
            v = self.next_value(tx)
            if v is None:
                return out
            out.append(v)

    def python_type(self):
        return types.GeneratorType

    def load_attr(self, tx, name):
        if name in ("__next__", "__iter__", "send", "close"):
            return MethodValue(self, name)
        raise GraphBreak("attribute", f"attribute {name!r} of a {self.python_type().__name__}")

    def call_method(self, tx, name, args, kwargs):
        if name == "__iter__" and not args and not kwargs:
            return self
        if name == "__next__" and not args and not kwargs:
            return next_or_raise(tx, self)
        raise GraphBreak("method", f"{self.python_type().__name__}.{name}")


class GeneratorValue(LazyIterator):
    __slots__ = ("frame", "resume_at", "started", "done", "running", "yielded", "return_value", "owned",
                 "name")

    def __init__(self, frame, name):
        super().__init__()
        self.frame = frame                # child Translator over the generator's code
        self.resume_at = 0
        self.started = False
        self.done = False
        self.running = False
        self.yielded = _NOTHING
        self.return_value = Const(None)
        self.owned = False                # True: a @contextmanager that always runs it to the end
        self.name = name
        frame.generator = self

    def next_value(self, tx, sent=None):
        if self.done:
            return None
        if self.running:
            raise GraphBreak("raise", "ValueError: generator already executing")
        frame = self.frame
        if self.started:
            frame.push(sent if sent is not None else Const(None))
        elif sent is not None and not (isinstance(sent, Const) and sent.value is None):
            raise GraphBreak("raise", "TypeError: can't send non-None value to a just-started generator")
        self.started = True
        self.yielded = _NOTHING
        self.running = True
        try:
            rv = frame.run(self.resume_at)
        except GraphBreak as gb:
            exc = exception_of(gb)
            if exc is not None:                   # a Python exception leaves the generator: it is finished
                self.done = True
                if issubclass(exc.exc_type, StopIteration):          # PEP 479
                    raise RaisedException(ExceptionValue(RuntimeError, [Const("generator raised StopIteration")]))
            raise
        finally:
            self.running = False
        if self.yielded is not _NOTHING:
            value, self.yielded = self.yielded, _NOTHING
            return value
        self.done = True
        self.return_value = rv
        return None

    def call_method(self, tx, name, args, kwargs):
        if name == "send" and len(args) == 1 and not kwargs:
            v = self.next_value(tx, args[0])
            if v is None:
                raise GraphBreak("StopIteration", "generator.send() on a finished generator raises StopIteration")
            return v
        if name == "close" and not args and not kwargs:
            if self.started and not self.done and self.frame.instructions[self.resume_at - 1].exn is not None:
                raise GraphBreak("generator", "closing a generator paused inside a try or with block")
            self.done = True
            return Const(None)
        return super().call_method(tx, name, args, kwargs)

    def __repr__(self):
        return f"GeneratorValue({self.name})"


def step(tx, it):
    """Next item of an iterator value (None when exhausted)."""
    if isinstance(it, IteratorValue):
        if it.pos < len(it.items):
            it.pos += 1
            return it.items[it.pos - 1]
        return None
    if isinstance(it, LazyIterator):
        return it.next_value(tx)
    raise GraphBreak("iterate", f"iteration over {it!r}")


def next_or_raise(tx, it):
    v = step(tx, it)
    if v is None:
        raise GraphBreak("StopIteration", "next() on an exhausted iterator raises StopIteration")
    return v


def as_iterator(tx, v):
    """iter(v): lazy iterators stay themselves; everything else becomes an IteratorValue."""
    if isinstance(v, (LazyIterator, IteratorValue)):
        return v
    return IteratorValue(unpack_iterable(tx, v))


def make_generator(frame, name):
    return GeneratorValue(frame, name)


# ---- handlers ---------------------------------------------------------------------------------------

@handler("RETURN_GENERATOR")
def return_generator(tx, inst):
    if getattr(tx, "generator", None) is None:
        raise GraphBreak("generator", "a generator frame outside an inlined generator")
    tx.push(Const(None))               # popped by the POP_TOP that follows


@handler("YIELD_VALUE")
def yield_value(tx, inst):
    gen = getattr(tx, "generator", None)
    if gen is None:
        raise GraphBreak("generator", "yield outside an inlined generator")
    if inst.exn is not None and not gen.owned and not _closes_silently(tx, inst):
        raise GraphBreak("generator", "a yield inside a try or with block of a generator that may be left "
                         "unfinished (its cleanup would run when Python collects it)")
    gen.yielded = tx.pop()
    gen.resume_at = tx.index[inst] + 1
    return RETURN


def _closes_silently(tx, inst):
    """Would closing the generator at this yield run none of its code? Python closes an abandoned
    generator by raising GeneratorExit at the yield. When the only block around the yield is a chain of
    `except C:` clauses (`except (A, B):` too) over Exception subclasses, GeneratorExit matches none and
    leaves at once: nothing to reproduce (collections.abc.Sequence.__iter__'s `except IndexError`). A
    finally, a with block, a bare except or an enclosing block: False."""
    code = tx.instructions
    i = tx.index[inst.exn.target]
    if code[i].opname != "PUSH_EXC_INFO":
        return False
    i += 1
    while code[i].opname != "RERAISE":
        classes = []
        while code[i].opname == "LOAD_GLOBAL":          # read (and guarded) as the handler would read it
            try:
                classes.append(as_python(tx.load_global(code[i].argval)))
            except GraphBreak:
                return False
            i += 1
        if len(classes) > 1:
            if code[i].opname != "BUILD_TUPLE" or code[i].arg != len(classes):
                return False
            i += 1
        if not classes or code[i].opname != "CHECK_EXC_MATCH" or \
                code[i + 1].opname != "POP_JUMP_FORWARD_IF_FALSE":
            return False
        if not all(isinstance(c, type) and issubclass(c, Exception) for c in classes):
            return False
        i = tx.index[code[i + 1].target]
    cleanup = code[i].exn                        # RERAISE 0 -> COPY 3; POP_EXCEPT; RERAISE 1
    if cleanup is None:
        return False
    j = tx.index[cleanup.target]
    return all(code[k].exn is None for k in range(j, j + 3))


@handler("GET_YIELD_FROM_ITER")
def get_yield_from_iter(tx, inst):
    tx.push(as_iterator(tx, tx.pop()))


@handler("SEND")
def send(tx, inst):
    sent = tx.peek()
    receiver = tx.peek(2)
    if isinstance(receiver, GeneratorValue):
        v = receiver.next_value(tx, sent)
    elif isinstance(sent, Const) and sent.value is None:
        v = step(tx, receiver)
    else:
        raise GraphBreak("raise", "AttributeError: sending a value into an iterator that is not a generator")
    tx.pop()
    if v is None:
        tx.pop()
        tx.push(receiver.return_value if isinstance(receiver, GeneratorValue) else Const(None))
        return inst.target
    tx.push(v)


# ---- lazy builtins over generators ------------------------------------------------------------------

class EnumerateIterator(LazyIterator):
    __slots__ = ("it", "count")

    def __init__(self, it, start):
        super().__init__()
        self.it = it
        self.count = start

    def python_type(self):
        return enumerate

    def next_value(self, tx):
        v = step(tx, self.it)
        if v is None:
            return None
        self.count += 1
        return SeqValue(tuple, [Const(self.count - 1), v])


class ZipIterator(LazyIterator):
    __slots__ = ("its", "strict")

    def __init__(self, its, strict):
        super().__init__()
        self.its = its
        self.strict = strict

    def python_type(self):
        return zip

    def next_value(self, tx):
        items = []
        for it in self.its:
            v = step(tx, it)
            if v is None:
                if self.strict and (items or any(step(tx, other) is not None for other in self.its[1:])):
                    raise GraphBreak("raise", "ValueError: zip() arguments have different lengths")
                return None
            items.append(v)
        return SeqValue(tuple, items)


class MapIterator(LazyIterator):
    __slots__ = ("fn", "its")

    def __init__(self, fn, its):
        super().__init__()
        self.fn = fn
        self.its = its

    def python_type(self):
        return map

    def next_value(self, tx):
        items = []
        for it in self.its:
            v = step(tx, it)
            if v is None:
                return None
            items.append(v)
        return tx.call(self.fn, items, {})


class FilterIterator(LazyIterator):
    __slots__ = ("fn", "it")

    def __init__(self, fn, it):
        super().__init__()
        self.fn = fn
        self.it = it

    def python_type(self):
        return filter

    def next_value(self, tx):
        while True:
            v = step(tx, self.it)
            if v is None:
                return None
            keep = v if isinstance(self.fn, Const) and self.fn.value is None else tx.call(self.fn, [v], {})
            if truth(tx, keep):
                return v


def lazy_any_all(want):
    def impl(tx, args, kwargs):
        it = args[0]
        while True:
            v = step(tx, it)
            if v is None:
                return Const(not want)
            if truth(tx, v) is want:
                return Const(want)
    return impl


def lazy_next(tx, args, kwargs):
    v = step(tx, args[0])
    if v is None:
        if len(args) > 1:
            return args[1]
        raise GraphBreak("StopIteration", "next() on an exhausted iterator raises StopIteration")
    return v


def lazy_enumerate(tx, args, kwargs):
    start = args[1] if len(args) > 1 else kwargs.get("start", Const(0))
    return EnumerateIterator(args[0], as_python(start))


def lazy_zip(tx, args, kwargs):
    strict = as_python(kwargs.get("strict", Const(False)))
    return ZipIterator([as_iterator(tx, a) for a in args], strict)


def lazy_map(tx, args, kwargs):
    return MapIterator(args[0], [as_iterator(tx, a) for a in args[1:]])


def lazy_filter(tx, args, kwargs):
    return FilterIterator(args[0], as_iterator(tx, args[1]))


def lazy_iter(tx, args, kwargs):
    return args[0]
