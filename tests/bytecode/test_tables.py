"""The 3.11 location-table and exception-table codecs, property-tested against
CPython's own readers (co_positions() and dis's exception-table parser)."""

import dis
import types

from hypothesis import given, settings, strategies as st

from framejit.bytecode import assemble, make, py311


def _template():
    return None


TEMPLATE = _template.__code__


def _body():
    """Instructions of several sizes: 1 unit, 6 units (LOAD_GLOBAL) and 11 units
    (LOAD_METHOD, longer than one 8-unit location entry)."""
    return [make("RESUME", 0),
            make("LOAD_GLOBAL", "len", push_null=True), make("POP_TOP"), make("POP_TOP"),
            make("LOAD_CONST", "s"), make("LOAD_METHOD", "upper"), make("POP_TOP"),
            make("POP_TOP"), make("NOP"), make("NOP"),
            make("LOAD_CONST", None), make("RETURN_VALUE")]


lines = st.integers(min_value=0, max_value=100_000)
cols = st.integers(min_value=0, max_value=1_000)


@st.composite
def positions(draw):
    if draw(st.integers(0, 9)) == 0:
        return None
    line = draw(st.one_of(lines, st.integers(0, 30)))
    end = line + draw(st.one_of(st.just(0), st.integers(0, 3), st.integers(0, 5000)))
    if draw(st.integers(0, 5)) == 0:
        return dis.Positions(line, end, None, None)
    return dis.Positions(line, end, draw(st.one_of(cols, st.integers(0, 90))),
                         draw(st.one_of(cols, st.integers(0, 90))))


@settings(max_examples=150, deadline=None)
@given(st.lists(positions(), min_size=12, max_size=12), st.integers(1, 5000))
def test_location_table_roundtrip(pos_list, firstlineno):
    instrs = _body()
    for ins, pos in zip(instrs, pos_list):
        ins.positions = pos
    code = assemble(instrs, TEMPLATE, co_firstlineno=firstlineno)
    per_unit = list(code.co_positions())
    listing = list(dis.get_instructions(code, show_caches=True))
    assert len(per_unit) == len(listing)
    starts = [i.offset // 2 for i in dis.get_instructions(code)]
    ends = starts[1:] + [len(per_unit)]
    for ins, start, end in zip(instrs, starts, ends):
        want = (None, None, None, None) if ins.positions is None else tuple(ins.positions)
        for unit in range(start, end):  # the instruction and its caches
            assert per_unit[unit] == want


def test_location_forms_match_cpython_compiler_bytes():
    source = "def f(a, b):\n" + "".join(
        f"    x{i} = {'(' * (i % 3)}a{' ' * (i * 7)}+ b{')' * (i % 3)}\n" for i in range(40)
    ) + "    return (a,\n            b)\n"
    ns = {}
    exec(compile(source, "<gen>", "exec"), ns)
    from framejit.bytecode import decode
    code = ns["f"].__code__
    assert assemble(decode(code), code).co_linetable == code.co_linetable


exception_entries = st.lists(st.tuples(
    st.integers(0, 2**30 - 1), st.integers(0, 2**30 - 1), st.integers(0, 2**30 - 1),
    st.integers(0, 2**29 - 1), st.booleans()), max_size=6)


@settings(max_examples=300, deadline=None)
@given(exception_entries)
def test_exception_table_codec(entries):
    table = py311.encode_exception_table(entries)
    parsed = py311.parse_exception_table(table)
    assert parsed == [(s * 2, (s + n) * 2, t * 2, d, bool(lasti))
                      for s, n, t, d, lasti in entries]
    # and CPython's own reader agrees
    holder = types.SimpleNamespace(co_exceptiontable=table)
    assert [tuple(e) for e in dis._parse_exception_table(holder)] == parsed


def test_exception_table_varint_boundaries():
    for value in (0, 63, 64, 4095, 4096, 2**18 - 1, 2**18, 2**24 - 1, 2**24):
        table = py311.encode_exception_table([(value, 1, value, value, True)])
        assert py311.parse_exception_table(table) == [
            (2 * value, 2 * value + 2, 2 * value, value, True)]
        assert table[0] & 0x80 and not any(b & 0x80 for b in table[1:])


def test_localsplus_layout_matches_cpython():
    def outer(a, b):
        c = 1

        def inner():
            return a + c
        return inner, b

    code = outer.__code__
    names = py311.localsplus_names(code.co_varnames, code.co_cellvars, code.co_freevars)
    dmap = py311.deref_index_map(code.co_varnames, code.co_cellvars, code.co_freevars)
    for ins in dis.get_instructions(code):
        if ins.opname in ("MAKE_CELL", "LOAD_CLOSURE", "STORE_DEREF", "LOAD_DEREF"):
            assert names[ins.arg] == ins.argval
            assert dmap[ins.argval] == ins.arg
    assert dmap["a"] == 0  # the argument's own slot


def test_jump_helpers():
    from framejit import bytecode as bc
    assert bc.is_jump("FOR_ITER") and bc.is_jump("SEND") and not bc.is_jump("RETURN_VALUE")
    assert bc.is_conditional_jump("POP_JUMP_BACKWARD_IF_NONE")
    assert bc.is_conditional_jump("JUMP_IF_TRUE_OR_POP")
    assert not bc.is_conditional_jump("JUMP_FORWARD")
    assert bc.is_unconditional_jump("JUMP_BACKWARD_NO_INTERRUPT")
    assert bc.is_backward_jump("JUMP_BACKWARD") and not bc.is_backward_jump("JUMP_FORWARD")
    assert "RETURN_VALUE" in bc.RETURN_OPNAMES
    assert len(bc.JUMP_OPNAMES) == 15
    assert py311.forward_variant("POP_JUMP_BACKWARD_IF_TRUE") == "POP_JUMP_FORWARD_IF_TRUE"
    assert py311.backward_variant("JUMP_FORWARD") == "JUMP_BACKWARD"
    assert py311.forward_variant("JUMP_BACKWARD_NO_INTERRUPT") == "JUMP_FORWARD"
    assert py311.backward_variant("JUMP_BACKWARD_NO_INTERRUPT") == "JUMP_BACKWARD_NO_INTERRUPT"
    for name in ("FOR_ITER", "SEND", "JUMP_IF_FALSE_OR_POP"):
        assert py311.forward_variant(name) == name
        try:
            py311.backward_variant(name)
        except ValueError:
            pass
        else:
            raise AssertionError(name)
