"""The Instruction API the translator relies on: make(), repr, copy_instructions(),
format_instructions(), and the capture-time budget of decode + assemble."""

import statistics
import time

import pytest

from framejit.bytecode import (ExceptionTarget, Instruction, assemble, copy_instructions,
                               decode, format_instructions, make)


def _sample(xs, key=None):
    total = 0
    try:
        for x in xs:
            if key is not None and x > key:
                total += x
    except TypeError:
        return None
    return total


def test_decoded_fields():
    instrs = decode(_sample.__code__)
    assert instrs[0].opname == "RESUME" and instrs[0].offset == 0
    assert all(ins.opname not in ("CACHE", "EXTENDED_ARG") for ins in instrs)
    for_iter = next(i for i in instrs if i.opname == "FOR_ITER")
    assert isinstance(for_iter.target, Instruction) and for_iter.target in instrs
    covered = [i for i in instrs if i.exn is not None]
    assert covered and all(isinstance(i.exn, ExceptionTarget) for i in covered)
    assert covered[0].exn.target.opname == "PUSH_EXC_INFO"
    first_line = next(i for i in instrs if i.starts_line is not None)
    assert first_line.positions.lineno == first_line.starts_line
    assert instrs[0].opcode == 151


def test_repr_is_short():
    instrs = decode(_sample.__code__)
    reprs = [repr(i) for i in instrs]
    assert "LOAD_FAST xs" in reprs
    jump = next(i for i in instrs if i.opname == "POP_JUMP_FORWARD_IF_NONE")
    assert repr(jump) == f"POP_JUMP_FORWARD_IF_NONE -> {jump.target.offset}"
    assert repr(make("LOAD_GLOBAL", "len", push_null=True)) == "LOAD_GLOBAL NULL + len"
    assert repr(make("RETURN_VALUE")) == "RETURN_VALUE"
    assert repr(make("LOAD_CONST", "x" * 200)).endswith("...'") is False
    assert len(repr(make("LOAD_CONST", "x" * 200))) < 80
    assert repr(make("JUMP_FORWARD", target=make("NOP"))) == "JUMP_FORWARD -> <new NOP>"
    assert repr(make("BINARY_OP", 0)) == "BINARY_OP +"


def test_make_validates():
    with pytest.raises(ValueError):
        make("NOT_AN_OP")
    with pytest.raises(ValueError):
        make("CACHE")
    with pytest.raises(ValueError):
        make("POP_TOP", 1)
    with pytest.raises(ValueError):
        make("LOAD_FAST", "x", target=make("NOP"))
    with pytest.raises(ValueError):
        make("LOAD_ATTR", "x", push_null=True)
    ins = make("LOAD_FAST", "x")
    assert (ins.arg, ins.offset, ins.exn, ins.positions) == (None, None, None, None)


def test_copy_instructions_keeps_references_inside_the_list():
    instrs = decode(_sample.__code__)
    outside = make("NOP")
    instrs[-1].exn = ExceptionTarget(outside, 0, False)
    copies = copy_instructions(instrs)
    assert len(copies) == len(instrs)
    ids = {id(i) for i in instrs}
    for old, new in zip(instrs, copies):
        assert new is not old
        assert (new.opname, new.argval, new.offset, new.positions) == \
            (old.opname, old.argval, old.offset, old.positions)
        if old.target is not None:
            assert id(new.target) not in ids
            assert copies[instrs.index(old.target)] is new.target
        if old.exn is not None and old.exn.target is not outside:
            assert new.exn is not old.exn
            assert copies[instrs.index(old.exn.target)] is new.exn.target
    assert copies[-1].exn.target is outside
    # instructions that shared one handler entry still share it
    shared = [i for i, ins in enumerate(instrs) if ins.exn is instrs[2].exn]
    assert len({id(copies[i].exn) for i in shared}) == 1
    copies[-1].exn = instrs[-1].exn = None
    assert assemble(copies, _sample.__code__) == _sample.__code__
    copies[1].opname = "NOP"
    assert instrs[1].opname == "LOAD_CONST"


def test_format_instructions():
    text = format_instructions(decode(_sample.__code__))
    lines = text.splitlines()
    assert any("RESUME" in line for line in lines)
    assert any(">>" in line for line in lines)
    assert any("-> #" in line for line in lines)
    assert any("[exc -> #" in line for line in lines)
    assert str(_sample.__code__.co_firstlineno + 2) in text


def test_decode_plus_assemble_is_fast():
    """Capture-time budget: a ~100-instruction function in well under 1 ms."""
    import difflib
    code = difflib.get_close_matches.__code__
    n = len(decode(code))
    assert 80 <= n <= 120
    samples = []
    for _ in range(30):
        t0 = time.perf_counter()
        assemble(decode(code), code)
        samples.append(time.perf_counter() - t0)
    per_100 = statistics.median(samples) * 100 / n
    print(f"decode+assemble: {per_100 * 1e6:.0f} us per 100 instructions")
    assert per_100 < 2e-3  # generous for loaded CI machines; typical is ~0.25 ms
