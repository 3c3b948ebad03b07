"""assemble() on edited instruction lists: the translator's real use.

Inserted code forcing EXTENDED_ARG (on constants and on jumps, across the 255/256
boundary), jumps whose target moved to the other side, a prologue that jumps into
the middle of a function, and NOPs sprinkled through functions with exception
handlers, with-blocks, closures, generators and comprehensions.
"""

import dis
import types

import pytest

from framejit.bytecode import (AssemblyError, Instruction, assemble, copy_instructions,
                               decode, make)


def build(fn, instrs, **replace):
    code = assemble(instrs, fn.__code__, **replace)
    return types.FunctionType(code, fn.__globals__, fn.__name__, fn.__defaults__,
                              fn.__closure__)


def opnames(code):
    return [ins.opname for ins in dis.get_instructions(code)]


def first(instrs, opname, argval=None):
    for ins in instrs:
        if ins.opname == opname and (argval is None or ins.argval == argval):
            return ins
    raise LookupError(opname)


def shape(instrs):
    """Structure of an instruction list, independent of offsets and inserted NOPs."""
    kept = [ins for ins in instrs if ins.opname != "NOP"]
    index = {id(ins): i for i, ins in enumerate(kept)}

    def real(ins):  # a jump to an inserted NOP really lands on the next kept one
        pos = instrs.index(ins)
        while instrs[pos].opname == "NOP":
            pos += 1
        return index[id(instrs[pos])]

    out = []
    for ins in kept:
        target = real(ins.target) if ins.target is not None else None
        exn = (real(ins.exn.target), ins.exn.depth, ins.exn.lasti) if ins.exn else None
        arg = None if target is not None else (ins.argval, ins.push_null)
        out.append((ins.opname.replace("BACKWARD", "FORWARD"), arg, target, exn))
    return out


# --- EXTENDED_ARG -----------------------------------------------------------------

def test_more_than_256_constants_need_extended_arg():
    def base(x):
        return x

    instrs = decode(base.__code__)
    ret = first(instrs, "RETURN_VALUE")
    body = []
    for k in range(300):
        body += [make("LOAD_CONST", f"c{k}"), make("POP_TOP")]
    body += [make("LOAD_CONST", "c299"), make("LOAD_FAST", "x"), make("BUILD_TUPLE", 2)]
    pos = instrs.index(ret) - 1  # replaces LOAD_FAST x
    instrs[pos:pos + 1] = body
    fn = build(base, instrs)
    assert len(fn.__code__.co_consts) > 256
    assert "EXTENDED_ARG" in opnames(fn.__code__)
    assert fn(7) == ("c299", 7)
    again = assemble(decode(fn.__code__), fn.__code__)
    assert again == fn.__code__


def _branchy(x):
    if x:
        y = 1
    else:
        y = 2
    return y


def _looping(n):
    total = 0
    for i in range(n):
        total += i
    return total


@pytest.mark.parametrize("pad", [0, 100, 250, 252, 253, 254, 255, 256, 257, 300, 70000])
def test_long_forward_jump(pad):
    instrs = decode(_branchy.__code__)
    store = first(instrs, "STORE_FAST", "y")
    at = instrs.index(store) + 1
    instrs[at:at] = [make("NOP") for _ in range(pad)]
    fn = build(_branchy, instrs)
    assert fn(True) == 1 and fn(0) == 2
    names = opnames(fn.__code__)
    # The conditional jump skips LOAD_CONST, STORE_FAST, the NOPs and JUMP_FORWARD.
    assert ("EXTENDED_ARG" in names) == (pad + 3 >= 256)
    assert assemble(decode(fn.__code__), fn.__code__) == fn.__code__


@pytest.mark.parametrize("pad", [0, 250, 252, 253, 254, 255, 256, 300])
def test_long_backward_jump_and_for_iter(pad):
    instrs = decode(_looping.__code__)
    store = first(instrs, "STORE_FAST", "i")
    at = instrs.index(store) + 1
    instrs[at:at] = [make("NOP") for _ in range(pad)]
    fn = build(_looping, instrs)
    assert fn(10) == 45 and fn(0) == 0
    assert shape(decode(fn.__code__)) == shape(decode(_looping.__code__))


# --- jump direction ---------------------------------------------------------------

def _template(n):
    i = 0
    return i


def test_forward_opcode_with_backward_target_is_flipped():
    loop_head = make("LOAD_FAST", "i")
    instrs = [
        make("RESUME", 0),
        make("LOAD_CONST", 0), make("STORE_FAST", "i"),
        loop_head, make("LOAD_CONST", 1), make("BINARY_OP", "+"), make("STORE_FAST", "i"),
        make("LOAD_FAST", "i"), make("LOAD_FAST", "n"), make("COMPARE_OP", "<"),
        make("POP_JUMP_FORWARD_IF_TRUE", target=loop_head),
        make("LOAD_FAST", "i"), make("RETURN_VALUE"),
    ]
    fn = build(_template, instrs)
    assert "POP_JUMP_BACKWARD_IF_TRUE" in opnames(fn.__code__)
    assert "POP_JUMP_FORWARD_IF_TRUE" not in opnames(fn.__code__)
    assert fn(5) == 5 and fn(0) == 1
    assert instrs[10].opname == "POP_JUMP_FORWARD_IF_TRUE"  # input left untouched


def test_jump_forward_becomes_backward_and_back():
    head = make("LOAD_FAST", "i")
    exit_ = make("LOAD_FAST", "i")
    instrs = [
        make("RESUME", 0), make("LOAD_CONST", 0), make("STORE_FAST", "i"),
        head, make("LOAD_FAST", "n"), make("COMPARE_OP", "<"),
        make("POP_JUMP_BACKWARD_IF_FALSE", target=exit_),      # really forward
        make("LOAD_FAST", "i"), make("LOAD_CONST", 2), make("BINARY_OP", 0),
        make("STORE_FAST", "i"),
        make("JUMP_FORWARD", target=head),                     # really backward
        exit_, make("RETURN_VALUE"),
    ]
    fn = build(_template, instrs)
    names = opnames(fn.__code__)
    assert "POP_JUMP_FORWARD_IF_FALSE" in names and "JUMP_BACKWARD" in names
    assert "JUMP_FORWARD" not in names
    assert fn(7) == 8 and fn(0) == 0


def test_jump_to_itself_is_backward():
    loop = make("JUMP_FORWARD")
    loop.target = loop
    instrs = [make("RESUME", 0), make("LOAD_FAST", "n"),
              make("POP_JUMP_FORWARD_IF_TRUE", target=loop),
              make("LOAD_CONST", None), make("RETURN_VALUE"), loop]
    fn = build(_template, instrs)
    listing = list(dis.get_instructions(fn.__code__))
    assert listing[-1].opname == "JUMP_BACKWARD" and listing[-1].argval == listing[-1].offset
    assert fn(0) is None


def test_forward_only_jump_pointing_backward_is_rejected():
    instrs = decode(_looping.__code__)
    for_iter = first(instrs, "FOR_ITER")
    for_iter.target = instrs[1]
    with pytest.raises(AssemblyError, match="FOR_ITER cannot jump backward"):
        assemble(instrs, _looping.__code__)


# --- resume-style prologue --------------------------------------------------------

def _compute(a, b):
    x = a * 2
    y = x + b
    return y * 10


def test_prologue_jumps_into_the_middle():
    instrs = copy_instructions(decode(_compute.__code__))
    # Resume at "x + b": its operands are rebuilt from the new arguments.
    add = next(ins for ins in instrs if ins.opname == "BINARY_OP" and ins.argval == 0)
    prologue = [make("RESUME", 0), make("LOAD_FAST", "x"), make("LOAD_FAST", "b"),
                make("JUMP_FORWARD", target=add)]
    code = assemble(prologue + instrs[1:], _compute.__code__,
                    co_varnames=("x", "b"), co_argcount=2, co_name="resume_compute",
                    co_qualname="resume_compute")
    assert code.co_varnames[:2] == ("x", "b") and set(code.co_varnames) == {"x", "b", "a", "y"}
    resume = types.FunctionType(code, globals())
    assert resume(6, 1) == _compute(3, 1) == 70
    assert code.co_name == "resume_compute"


def test_inconsistent_stack_depth_is_reported():
    instrs = copy_instructions(decode(_compute.__code__))
    add = next(ins for ins in instrs if ins.opname == "BINARY_OP" and ins.argval == 0)
    # Only one operand pushed before jumping to a two-operand instruction, while
    # the original path (kept reachable here) arrives with two.
    prologue = [make("RESUME", 0), make("LOAD_FAST", "b"), make("LOAD_FAST", "a"),
                make("POP_JUMP_FORWARD_IF_TRUE", target=add)]
    with pytest.raises(AssemblyError, match="stack depth"):
        assemble(prologue + instrs[1:], _compute.__code__)


# --- structured code with NOPs sprinkled in ---------------------------------------

def _try_except_finally(xs):
    out = []
    for x in xs:
        try:
            try:
                out.append(10 // x)
            except ZeroDivisionError as e:
                out.append(type(e).__name__)
                continue
            finally:
                out.append("f")
            try:
                raise ExceptionGroup("g", [TypeError(x), KeyError(x)])
            except* TypeError:
                out.append("T")
        except ExceptionGroup as eg:
            out.append(len(eg.exceptions))
        except TypeError:
            out.append("plain")
    return out


def _with_blocks(path_factory):
    import contextlib
    log = []

    @contextlib.contextmanager
    def cm(tag):
        log.append("enter " + tag)
        try:
            yield tag
        finally:
            log.append("exit " + tag)

    with cm("a") as a, cm("b") as b:
        log.append(a + b)
    try:
        with cm("c"):
            raise KeyError("k")
    except KeyError:
        log.append("caught")
    return log


def _closures(a, *args, **kwargs):
    c = a + 1

    def inner(d=2):
        nonlocal c
        c += d
        return a + c + len(args) + len(kwargs)

    first_ = inner()
    return first_, inner(10), c, (lambda: c * 2)()


def _generator(n):
    total = 0
    for i in range(n):
        got = yield i * i
        if got:
            total += got
    yield from [total, -1]
    return "done"


def _comprehensions(rows):
    squares = [x * x for x in rows if x % 2]
    table = {k: [v for v in range(k)] for k in rows}
    uniq = {x // 2 for x in rows}
    gen = sum(x for x in rows)
    return squares, table, sorted(uniq), gen


def _match(value):
    match value:
        case [x, y, *rest]:
            return ("seq", x, y, len(rest))
        case {"k": v}:
            return ("map", v)
        case int(n) if n > 10:
            return ("big", n)
        case str() | bytes():
            return ("text",)
        case _:
            return ("other",)


def _run_generator(fn):
    g = fn(5)
    out = [next(g)]
    out.append(g.send(3))
    try:
        while True:
            out.append(next(g))
    except StopIteration as stop:
        out.append(stop.value)
    return out


STRUCTURED = [
    (_try_except_finally, lambda f: f([1, 0, 2, "x"])),
    (_with_blocks, lambda f: f(None)),
    (_closures, lambda f: f(1, 2, 3, k=4)),
    (_generator, _run_generator),
    (_comprehensions, lambda f: f([1, 2, 3, 4, 5])),
    (_match, lambda f: [f(v) for v in ([1, 2, 3], {"k": 5}, 42, 3, "s", b"b", None)]),
]


def _sprinkle_nops(instrs, every):
    out = []
    for i, ins in enumerate(instrs):
        out.append(ins)
        if i % every == 0:
            nop = make("NOP", positions=ins.positions)
            nop.exn = ins.exn
            out.append(nop)
    return out


@pytest.mark.parametrize("fn,run", STRUCTURED, ids=[f.__name__ for f, _ in STRUCTURED])
def test_structured_roundtrip_exact(fn, run):
    code = fn.__code__
    assert assemble(decode(code), code) == code
    assert run(build(fn, decode(code))) == run(fn)


@pytest.mark.parametrize("every", [1, 3, 7])
@pytest.mark.parametrize("fn,run", STRUCTURED, ids=[f.__name__ for f, _ in STRUCTURED])
def test_structured_with_inserted_nops(fn, run, every):
    instrs = _sprinkle_nops(decode(fn.__code__), every)
    new = build(fn, instrs)
    assert run(new) == run(fn)
    assert shape(decode(new.__code__)) == shape(decode(fn.__code__))
    assert new.__code__.co_stacksize == fn.__code__.co_stacksize


def test_nested_code_objects_can_be_rebuilt_too():
    outer = _closures.__code__
    inner = next(c for c in outer.co_consts if isinstance(c, types.CodeType))
    new_inner = assemble(_sprinkle_nops(decode(inner), 1), inner)
    instrs = decode(outer)
    for ins in instrs:
        if ins.opname == "LOAD_CONST" and ins.argval is inner:
            ins.argval = new_inner
    new = build(_closures, instrs)
    assert new(1, 2, 3, k=4) == _closures(1, 2, 3, k=4)
    assert new_inner in new.__code__.co_consts


# --- cells and localsplus ---------------------------------------------------------

def _cells(a):
    c = a + 1

    def inner():
        return a + c

    return inner()


def test_new_local_shifts_cell_slots():
    instrs = decode(_cells.__code__)
    assert [i.opname for i in instrs[:2]] == ["MAKE_CELL", "MAKE_CELL"]
    at = instrs.index(first(instrs, "RESUME")) + 1
    instrs[at:at] = [make("LOAD_CONST", 5), make("STORE_FAST", "extra1"),
                     make("LOAD_CONST", 6), make("STORE_FAST", "extra2")]
    fn = build(_cells, instrs)
    code = fn.__code__
    assert code.co_varnames == ("a", "inner", "extra1", "extra2")
    assert code.co_cellvars == ("a", "c")
    make_cells = [i for i in dis.get_instructions(code) if i.opname == "MAKE_CELL"]
    assert [(i.arg, i.argval) for i in make_cells] == [(0, "a"), (4, "c")]
    assert fn(2) == _cells(2) == 5


def test_unknown_deref_name_is_reported():
    instrs = decode(_cells.__code__)
    first(instrs, "LOAD_CLOSURE", "c").argval = "nope"
    with pytest.raises(AssemblyError, match="nope"):
        assemble(instrs, _cells.__code__)


def test_free_variable_function_with_new_freevars_order():
    def outer():
        p, q = 3, 4

        def inner():
            return p * 10 + q
        return inner

    inner = outer()
    code = inner.__code__
    assert code.co_freevars == ("p", "q")
    instrs = decode(code)
    new = assemble(instrs, code, co_freevars=("q", "p"))
    fn = types.FunctionType(new, globals(), "inner", None, tuple(reversed(inner.__closure__)))
    assert fn() == 34
    copy_free = first(decode(new), "COPY_FREE_VARS")
    assert copy_free.arg == 2


# --- constants, names, calls ------------------------------------------------------

def test_constants_stay_distinct_by_type_and_sign():
    values = [1, 1.0, True, 0, 0.0, -0.0, False, 0j, -0j, complex(0, -0.0), (1,), (1.0,),
              (True,), (0.0,), (-0.0,), frozenset({1}), frozenset({1.0}), "1", b"1", None,
              float("nan"), ..., (1, (2.0, -0.0))]
    instrs = [make("RESUME", 0)] + [make("LOAD_CONST", v) for v in values]
    instrs += [make("BUILD_TUPLE", len(values)), make("RETURN_VALUE")]
    fn = build(_template, instrs, co_consts=(None,))
    got = fn(0)
    assert len(got) == len(values)
    for want, have in zip(values, got):
        assert type(have) is type(want) and repr(have) == repr(want)
        if isinstance(want, tuple):
            assert [type(v) for v in have] == [type(v) for v in want]
    # equal values of the same type still share one slot
    again = build(_template, instrs + copy_instructions(instrs[1:3]), co_consts=(None,))
    assert len(again.__code__.co_consts) == len(fn.__code__.co_consts)


def test_unhashable_and_arbitrary_objects_as_constants_by_identity():
    box1, box2 = [1], [1]
    instrs = [make("RESUME", 0), make("LOAD_CONST", box1), make("LOAD_CONST", box2),
              make("LOAD_CONST", box1), make("BUILD_TUPLE", 3), make("RETURN_VALUE")]
    a, b, c = build(_template, instrs)(0)
    assert a is box1 and b is box2 and c is box1


def test_load_global_null_bit_and_kw_names():
    instrs = [make("RESUME", 0),
              make("LOAD_GLOBAL", "dict", push_null=True),
              make("LOAD_FAST", "n"), make("LOAD_CONST", "x"),
              make("KW_NAMES", ("a", "b")),
              make("PRECALL", 2), make("CALL", 2), make("RETURN_VALUE")]
    fn = build(_template, instrs)
    assert fn(3) == {"a": 3, "b": "x"}
    listing = list(dis.get_instructions(fn.__code__))
    assert listing[1].argrepr == "NULL + dict"


def test_new_instructions_without_positions_have_no_location():
    instrs = decode(_compute.__code__)
    ret = instrs[-1]
    instrs[-1:-1] = [make("NOP"), make("NOP")]
    code = assemble(instrs, _compute.__code__)
    by_offset = {i.offset: i.positions for i in dis.get_instructions(code)}
    nops = [i.offset for i in dis.get_instructions(code) if i.opname == "NOP"]
    assert all(tuple(by_offset[o]) == (None, None, None, None) for o in nops)
    last = list(dis.get_instructions(code))[-1]
    assert last.positions == ret.positions


def test_replaced_metadata_and_firstlineno():
    instrs = decode(_compute.__code__)
    code = assemble(instrs, _compute.__code__, co_firstlineno=1, co_name="renamed",
                    co_filename="<generated>", co_qualname="q.renamed")
    assert (code.co_firstlineno, code.co_name, code.co_filename, code.co_qualname) == \
        (1, "renamed", "<generated>", "q.renamed")
    assert list(code.co_positions()) == list(_compute.__code__.co_positions())
    with pytest.raises(TypeError):
        assemble(instrs, _compute.__code__, co_code=b"")


def test_jump_target_outside_list_is_reported():
    instrs = decode(_looping.__code__)
    first(instrs, "FOR_ITER").target = Instruction("NOP")
    with pytest.raises(AssemblyError, match="not in the list"):
        assemble(instrs, _looping.__code__)


def test_bad_arguments_are_reported():
    base = [make("RESUME", 0), make("LOAD_FAST", "n"), make("LOAD_FAST", "n")]
    tail = [make("RETURN_VALUE")]
    for bad in (make("COMPARE_OP", "<=>"), make("BINARY_OP", "+++"), make("BUILD_TUPLE", -1)):
        with pytest.raises(AssemblyError):
            assemble(base + [bad] + tail, _template.__code__)
    with pytest.raises(AssemblyError, match="empty stack"):
        assemble([make("RESUME", 0), make("POP_TOP"), make("LOAD_CONST", 1), make("RETURN_VALUE")],
                 _template.__code__)


def test_empty_consts_seed_never_makes_a_docstring():
    instrs = [make("RESUME", 0), make("LOAD_CONST", "not a doc"), make("RETURN_VALUE")]
    fn = build(_template, instrs, co_consts=())
    assert fn(0) == "not a doc" and fn.__doc__ is None


def test_same_instruction_twice_is_reported():
    ret = make("RETURN_VALUE")
    with pytest.raises(AssemblyError, match="more than once"):
        assemble([make("RESUME", 0), make("LOAD_FAST", "n"), ret, ret], _template.__code__)
