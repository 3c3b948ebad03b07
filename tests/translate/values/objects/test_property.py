"""Property test: random small programs over tensors, lists and ints behave the same under framejit.

Hand-written differential tests only cover the combinations someone thought of. Here hypothesis
draws programs from a small statement grammar -- tensor expressions of known shapes, Python int
arithmetic, list append/pop/index, if/else on ints, shapes and tensor values, for loops over
range() and over lists, and statements that force graph breaks (print, .item(), a branch on a
tensor) -- renders each as Python source, execs it into a function and demands, through
tests/differential.check, that the compiled function matches eager: outputs, mutated inputs and
stdout. Every name keeps one type (and, for tensors, one shape) for the whole program, so every
drawn program is valid Python that runs without error.

The grammar is the `ProgramWriter` class; shrinking works on hypothesis' draws, so a failure is
reported as the smallest program that still fails, with its source in the message.
`KNOWN_FAILURES` lists productions switched off because framejit gets them wrong today; each has
a strict-xfail reproducer below.
"""

import linecache
import textwrap

import pytest
import torch
from hypothesis import HealthCheck, given, note, settings, strategies as st

import framejit
from tests import differential
from tests.differential import check, randn

# Input tensors by name and shape; `ts` is an input list of (3, 4) tensors, `ints` one of ints.
INPUT_TENSORS = {"a": (3, 4), "b": (3, 4), "w": (4, 4), "v": (4,)}
INPUT_TENSOR_LISTS = {"ts": (3, 4)}
INPUT_INT_LISTS = ("ints",)
INPUT_INTS = ("n",)
PARAMS = ("a", "b", "w", "v", "ts", "ints", "n")

MAX_BLOCK_DEPTH = 2
MAX_FIRST_DIM = 24

# Productions framejit gets wrong today (name -> what goes wrong); the writer never draws them.
KNOWN_FAILURES = {}


def make_inputs(variant=0):
    """Fresh arguments for a drawn program (check() deep-copies them per run).

    Variant 1 has the same types and shapes but other values, list lengths and int argument, so
    a function compiled for variant 0 must either pass its guards correctly or recompile.
    """
    if variant == 0:
        a, b = randn(3, 4, seed=1), randn(3, 4, seed=2)
        w, v = randn(4, 4, seed=3) * 0.5, randn(4, seed=4)
        return a, b, w, v, [randn(3, 4, seed=5), randn(3, 4, seed=6)], [2, 5], 3
    a, b = -randn(3, 4, seed=11), randn(3, 4, seed=12).abs()
    w, v = randn(4, 4, seed=13) * 0.5, -randn(4, seed=14).abs()
    return a, b, w, v, [randn(3, 4, seed=15), randn(3, 4, seed=16), randn(3, 4, seed=17)], [6], 5


class Scope:
    """Names visible at one point of the program, with their types; children see a copy."""

    def __init__(self):
        self.tensors = dict(INPUT_TENSORS)
        self.ints = list(INPUT_INTS)
        self.tensor_lists = dict(INPUT_TENSOR_LISTS)
        self.int_lists = list(INPUT_INT_LISTS)
        self.frozen = set()  # lists being iterated by an enclosing for loop: no append/pop
        self.in_loop = False

    def child(self):
        inner = Scope.__new__(Scope)
        inner.tensors = dict(self.tensors)
        inner.ints = list(self.ints)
        inner.tensor_lists = dict(self.tensor_lists)
        inner.int_lists = list(self.int_lists)
        inner.frozen = set(self.frozen)
        inner.in_loop = self.in_loop
        return inner

    def result(self):
        """The tuple a program returns: every visible tensor, int and list."""
        tensors = ", ".join(sorted(self.tensors))
        ints = ", ".join(self.ints)
        lists = ", ".join(sorted(self.tensor_lists) + self.int_lists)
        return f"({tensors},), ({ints},), ({lists},)"


def shapes_with_numel(numel):
    """The shapes a tensor of `numel` elements may be reshaped to."""
    shapes = [(numel,)]
    shapes += [(d, numel // d) for d in (2, 3, 4, 6) if numel % d == 0 and d < numel]
    return shapes


class ProgramWriter:
    """The grammar: every method draws one syntactic piece and returns its source (and type)."""

    # Statement kinds, simplest first (shrinking moves towards the front). A statement that
    # forces a graph break is drawn a third as often as the others: a break inside a loop sends
    # the whole frame to eager, which would leave little compiled code to compare.
    SIMPLE_STATEMENTS = ("assign_tensor", "assign_int", "append", "pop", "index", "new_list",
                         "slice_list", "inplace", "reorder_list", "unpack")
    BLOCK_STATEMENTS = ("if_int", "if_shape", "for_range", "for_list", "for_enumerate",
                        "for_range_of_int")
    BREAKING_STATEMENTS = ("print_int", "item_to_int", "if_tensor")
    BREAK_ODDS = 3  # one breaking statement per BREAK_ODDS plain ones
    TENSOR_EXPRS = ("var", "unary", "binary", "scalar", "matmul", "sum", "reshape", "cat",
                    "stack", "row", "transpose")
    INT_EXPRS = ("const", "var", "len", "shape", "arith", "builtin", "list_item")

    def __init__(self, draw):
        self.draw = draw
        self.counter = 0

    # ------------------------------------------------------------ drawing helpers

    def pick(self, options):
        options = [o for o in options if o not in KNOWN_FAILURES]
        return self.draw(st.sampled_from(options))

    def small(self, low, high):
        return self.draw(st.integers(low, high))

    def fresh(self, prefix):
        self.counter += 1
        return f"{prefix}{self.counter}"

    # ------------------------------------------------------------ expressions

    def int_expr(self, scope, depth=1):
        kind = self.pick(self.INT_EXPRS if depth > 0 else self.INT_EXPRS[:4])
        if kind == "builtin":
            left, right = self.int_expr(scope, depth - 1), self.int_expr(scope, depth - 1)
            return self.pick([f"min({left}, {right})", f"max({left}, {right})",
                              f"abs({left} - {right})", f"sum({self.pick(scope.int_lists)}) % 7"])
        if kind == "list_item":
            name = self.pick(scope.int_lists)
            return f"({name}[{self.int_expr(scope, depth - 1)} % len({name})] if {name} else 0)"
        if kind == "const":
            return str(self.small(0, 5))
        if kind == "var":
            return self.pick(scope.ints)
        if kind == "len":
            return f"len({self.pick(sorted(scope.tensor_lists) + scope.int_lists)})"
        if kind == "shape":
            name = self.pick(sorted(scope.tensors))
            shape = scope.tensors[name]
            if not shape:
                return f"{name}.dim()"
            return f"{name}.shape[{self.small(0, len(shape) - 1)}]"
        op = self.pick(["+", "-", "*"])
        return f"({self.int_expr(scope, depth - 1)} {op} {self.int_expr(scope, depth - 1)}) % 7"

    def int_condition(self, scope):
        left = self.int_expr(scope)
        kind = self.pick(["gt", "even", "eq"])
        if kind == "gt":
            return f"{left} > {self.small(0, 4)}"
        if kind == "even":
            return f"{left} % 2 == 0"
        return f"{left} == {self.small(0, 4)}"

    def shape_condition(self, scope):
        name = self.pick(sorted(scope.tensors))
        shape = scope.tensors[name]
        kind = self.pick(["dim", "numel", "first"] if shape else ["dim", "numel"])
        if kind == "dim":
            return f"{name}.dim() == {self.small(0, 2)}"
        if kind == "numel":
            return f"{name}.numel() > {self.small(1, 12)}"
        return f"{name}.shape[0] == {self.small(2, 4)}"

    def tensor_var(self, scope, shape=None):
        names = sorted(n for n, s in scope.tensors.items() if shape is None or s == shape)
        if not names:
            return None, None
        name = self.pick(names)
        return name, scope.tensors[name]

    def tensor_expr(self, scope, depth=2):
        """(source, shape) of a tensor expression."""
        kind = self.pick(self.TENSOR_EXPRS if depth > 0 else ("var",))
        if kind == "var":
            return self.tensor_var(scope)
        if kind == "matmul":
            left, shape = self.tensor_var(scope)
            if not shape or shape[-1] != 4:
                return left, shape
            if self.pick(["w", "v"]) == "w":
                return f"({left} @ w)", shape
            return f"({left} @ v)", shape[:-1]
        inner, shape = self.tensor_expr(scope, depth - 1)
        if kind == "unary":
            return self.pick([f"torch.relu({inner})", f"{inner}.tanh()", f"(-{inner})",
                              f"{inner}.abs()"]), shape
        if kind == "binary":
            other, _ = self.tensor_var(scope, shape)
            other = other or inner
            return f"({inner} {self.pick(['+', '*', '-'])} {other})", shape
        if kind == "scalar":
            op = self.pick(["*", "+", "-"])
            scalar = self.pick(["int", "float"])
            value = self.int_expr(scope, 0) if scalar == "int" else self.pick(["0.5", "1.5", "-2.0"])
            return f"({inner} {op} {value})", shape
        if kind == "sum":
            if not shape:
                return inner, shape
            dim = self.small(0, len(shape) - 1)
            return f"{inner}.sum({dim})", shape[:dim] + shape[dim + 1:]
        if kind == "reshape":
            numel = 1
            for size in shape:
                numel *= size
            target = self.pick(shapes_with_numel(numel))
            return f"{inner}.reshape{target}", target
        if kind == "row":
            if not shape:
                return inner, shape
            return f"{inner}[{self.int_expr(scope, 0)} % {shape[0]}]", shape[1:]
        if kind == "transpose":
            if len(shape) != 2:
                return inner, shape
            return f"{inner}.T", shape[::-1]
        if kind == "stack":
            if len(shape) > 1:
                return inner, shape
            other, _ = self.tensor_var(scope, shape)
            return f"torch.stack([{inner}, {other or inner}])", (2,) + shape
        # cat along dim 0 with a same-shape operand
        if not shape or shape[0] * 2 > MAX_FIRST_DIM:
            return inner, shape
        other, _ = self.tensor_var(scope, shape)
        return f"torch.cat([{inner}, {other or inner}])", (shape[0] * 2,) + shape[1:]

    # ------------------------------------------------------------ statements

    def assign(self, scope, kind_name, pool, src):
        """Target for a new value: a fresh name or an existing name of the same type."""
        if pool and self.pick(["new", "existing"]) == "existing":
            return self.pick(pool)
        return self.fresh(kind_name)

    def statement(self, scope, depth, out, indent):
        kinds = self.SIMPLE_STATEMENTS + (self.BLOCK_STATEMENTS if depth < MAX_BLOCK_DEPTH else ())
        if self.small(0, self.BREAK_ODDS) == self.BREAK_ODDS:
            kinds = self.BREAKING_STATEMENTS
        kind = self.pick(kinds)
        pad = "    " * indent
        if kind == "assign_tensor":
            src, shape = self.tensor_expr(scope)
            same = sorted(n for n, s in scope.tensors.items() if s == shape)
            name = self.assign(scope, "t", same, src)
            scope.tensors[name] = shape
            out.append(f"{pad}{name} = {src}")
        elif kind == "assign_int":
            src = self.int_expr(scope)
            name = self.assign(scope, "k", scope.ints, src)
            if name not in scope.ints:
                scope.ints.append(name)
            out.append(f"{pad}{name} = {src}")
        elif kind in ("append", "pop", "index"):
            self.list_statement(kind, scope, out, pad)
        elif kind == "print_int":
            out.append(f"{pad}print({self.int_expr(scope)}, len({self.pick(sorted(scope.tensor_lists))}))")
        elif kind == "item_to_int":
            name, _ = self.tensor_var(scope)
            target = self.fresh("k")
            out.append(f"{pad}{target} = int({name}.tanh().sum().item() * 3) % 7")
            scope.ints.append(target)
        elif kind == "new_list":
            self.new_list(scope, out, pad)
        elif kind == "slice_list":
            lists = sorted(scope.tensor_lists) + scope.int_lists
            name = self.pick(lists)
            target = self.fresh("L")
            out.append(f"{pad}{target} = {name}{self.pick(['[1:]', '[::-1]', '[:2]', '[:]'])}")
            if name in scope.tensor_lists:
                scope.tensor_lists[target] = scope.tensor_lists[name]
            else:
                scope.int_lists.append(target)
        elif kind == "reorder_list":
            self.reorder_list(scope, out, pad)
        elif kind == "unpack":
            name = self.pick(sorted(scope.tensor_lists) + scope.int_lists)
            first, rest = self.fresh("u"), self.fresh("L")
            if name in scope.tensor_lists:
                shape = scope.tensor_lists[name]
                out.append(f"{pad}{first}, *{rest} = {name} + [torch.zeros{shape}]")
                scope.tensors[first] = shape
                scope.tensor_lists[rest] = shape
            else:
                out.append(f"{pad}{first}, *{rest} = {name} + [0]")
                scope.ints.append(first)
                scope.int_lists.append(rest)
        elif kind == "inplace":
            name, shape = self.tensor_var(scope)
            other, _ = self.tensor_var(scope, shape)
            out.append(f"{pad}{name}.{self.pick([f'add_({other})', 'mul_(0.5)', f'sub_({other})'])}")
        elif kind in ("if_int", "if_shape", "if_tensor"):
            if kind == "if_int":
                cond = self.int_condition(scope)
            elif kind == "if_shape":
                cond = self.shape_condition(scope)
            else:
                name, _ = self.tensor_var(scope)
                cond = f"{name}.sum() > 0"
            out.append(f"{pad}if {cond}:")
            self.block(scope.child(), depth + 1, out, indent + 1)
            ending = self.pick(["none", "return", "break", "continue"] if scope.in_loop
                               else ["none", "return"])
            if ending == "return":
                out.append(f"{pad}    return {scope.result()}")
            elif ending != "none":
                out.append(f"{pad}    {ending}")
            if self.pick(["else", "no else"]) == "else":
                out.append(f"{pad}else:")
                self.block(scope.child(), depth + 1, out, indent + 1)
        elif kind in ("for_range", "for_range_of_int"):
            inner = scope.child()
            inner.in_loop = True
            var = self.fresh("i")
            inner.ints.append(var)
            count = self.small(1, 3) if kind == "for_range" else f"{self.pick(scope.ints)} % 4"
            out.append(f"{pad}for {var} in range({count}):")
            self.block(inner, depth + 1, out, indent + 1)
        else:
            self.for_list(scope, depth, out, indent, enumerate_it=kind == "for_enumerate")

    def reorder_list(self, scope, out, pad):
        """In-place list methods other than append/pop: extend, insert, reverse, sort, del."""
        lists = [n for n in sorted(scope.tensor_lists) + scope.int_lists if n not in scope.frozen]
        if not lists:
            out.append(f"{pad}pass")
            return
        name = self.pick(lists)
        if name in scope.tensor_lists:
            item, _ = self.tensor_var(scope, scope.tensor_lists[name])
            item = item or f"torch.zeros{scope.tensor_lists[name]}"
        else:
            item = self.int_expr(scope)
        methods = [f"{name}.extend([{item}])", f"{name}.insert(1, {item})", f"{name}.reverse()",
                   f"del {name}[:1]"]
        if name not in scope.tensor_lists:
            methods.append(f"{name}.sort()")
        out.append(f"{pad}{self.pick(methods)}")

    def new_list(self, scope, out, pad):
        target = self.fresh("L")
        if self.pick(["tensors", "ints"]) == "ints":
            items = [self.int_expr(scope) for _ in range(self.small(0, 3))]
            scope.int_lists.append(target)
        else:
            first, shape = self.tensor_expr(scope)
            items = [first]
            for _ in range(self.small(0, 2)):
                other, _ = self.tensor_var(scope, shape)
                items.append(other or first)
            scope.tensor_lists[target] = shape
        out.append(f"{pad}{target} = [{', '.join(items)}]")

    def list_statement(self, kind, scope, out, pad):
        lists = [(name, shape) for name, shape in sorted(scope.tensor_lists.items())]
        lists += [(name, None) for name in scope.int_lists]
        if kind != "index":
            lists = [(name, shape) for name, shape in lists if name not in scope.frozen]
        if not lists:
            out.append(f"{pad}pass")
            return
        name, shape = self.pick(lists)
        is_tensor = shape is not None
        if kind == "append":
            if is_tensor:
                src, got = self.tensor_expr(scope)
                if got != shape:
                    src, _ = self.tensor_var(scope, shape)
                    src = src or f"torch.zeros{shape}"
            else:
                src = self.int_expr(scope)
            out.append(f"{pad}{name}.append({src})")
            return
        fallback = f"torch.zeros{shape}" if is_tensor else "0"
        if kind == "pop":
            value = f"{name}.pop() if {name} else {fallback}"
        else:
            value = f"{name}[{self.int_expr(scope)} % len({name})] if {name} else {fallback}"
        if is_tensor:
            same = sorted(n for n, s in scope.tensors.items() if s == shape)
            target = self.assign(scope, "t", same, value)
            scope.tensors[target] = shape
        else:
            target = self.assign(scope, "k", scope.ints, value)
            if target not in scope.ints:
                scope.ints.append(target)
        out.append(f"{pad}{target} = {value}")

    def for_list(self, scope, depth, out, indent, enumerate_it=False):
        pad = "    " * indent
        inner = scope.child()
        inner.in_loop = True
        lists = sorted(scope.tensor_lists) + scope.int_lists
        name = self.pick(lists)
        var = self.fresh("e")
        if name in scope.tensor_lists:
            inner.tensors[var] = scope.tensor_lists[name]
        else:
            inner.ints.append(var)
        inner.frozen.add(name)
        if enumerate_it:
            index = self.fresh("i")
            inner.ints.append(index)
            out.append(f"{pad}for {index}, {var} in enumerate({name}):")
        else:
            out.append(f"{pad}for {var} in {name}:")
        self.block(inner, depth + 1, out, indent + 1)

    def block(self, scope, depth, out, indent):
        for _ in range(self.small(1, 3)):
            self.statement(scope, depth, out, indent)

    # ------------------------------------------------------------ whole programs

    def program(self):
        scope = Scope()
        body = []
        for _ in range(self.small(1, 6)):
            self.statement(scope, 0, body, 1)
        body.append(f"    return {scope.result()}")
        return f"def program({', '.join(PARAMS)}):\n" + "\n".join(body) + "\n"


@st.composite
def programs(draw):
    return ProgramWriter(draw).program()


_SOURCES = [0]


def function_from_source(source):
    """Exec the program; its source is registered with linecache so tracebacks show lines."""
    _SOURCES[0] += 1
    filename = f"<framejit-property-{_SOURCES[0]}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = {"torch": torch}
    exec(compile(source, filename, "exec"), namespace)
    return namespace["program"]


def check_program(source):
    fn = function_from_source(source)
    try:
        check(fn, *make_inputs())
    except Exception as exc:
        raise AssertionError(f"compiled != eager for this program:\n{source}\n{type(exc).__name__}: "
                             f"{exc}") from exc


@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(programs())
def test_random_programs_match_eager(source):
    note(source)
    check_program(source)


def check_program_on_two_inputs(source):
    """One compiled function called on variant 0 then variant 1 inputs; each call matches eager."""
    fn = function_from_source(source)
    framejit.reset()
    compiled = framejit.compile(fn, backend=framejit.backends.CompileCounter())
    watch = differential._StateWatch(fn)
    state = differential._TorchState()
    for variant in (0, 1):
        eager = differential._run(fn, make_inputs(variant), {}, watch, False, state)
        got = differential._run(compiled, make_inputs(variant), {}, watch, False, state)
        try:
            differential._compare_outcomes(eager, got, 1e-6, f"inputs variant {variant}: ")
        except Exception as exc:
            raise AssertionError(f"compiled != eager on the variant {variant} call of this "
                                 f"program:\n{source}\n{type(exc).__name__}: {exc}") from exc


@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(programs())
def test_random_programs_reused_on_other_inputs(source):
    note(source)
    check_program_on_two_inputs(source)


@settings(max_examples=200, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(programs())
def test_drawn_programs_run_eagerly(source):
    """The grammar itself: every drawn program is valid Python that runs without raising."""
    function_from_source(source)(*make_inputs(0))
    function_from_source(source)(*make_inputs(1))


def test_program_rendering_example():
    source = textwrap.dedent("""\
        def program(a, b, w, v, ts, ints, n):
            t1 = (a @ w).sum(1)
            ints.append(len(ts))
            for e2 in ts:
                print(e2.shape[0], len(ts))
            if t1.sum() > 0:
                k3 = int(a.tanh().sum().item() * 3) % 7
            return (a, b, t1, v, w,), (n,), (ts, ints,)
    """)
    check_program(source)
