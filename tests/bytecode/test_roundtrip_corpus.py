"""decode -> assemble round trip over every code object in real modules.

Each module's source is compiled (the same bytecode the imported module holds) and
every nested code object is checked: the rebuilt code must give the same dis listing
(opname, argrepr, line starts, jump targets, positions), the same exception table and
positions, the same stack size, and in fact the same bytes.  Decoding is also checked
against dis itself, so a decode bug cannot hide behind a matching encode bug.
"""

import dis
import importlib.util
import os
import types

import pytest

from framejit.bytecode import assemble, decode

STDLIB_MODULES = [
    "json.encoder", "json.decoder", "textwrap", "string", "functools", "collections",
    "copy", "dataclasses", "enum", "argparse", "ast", "inspect", "pathlib", "re._parser",
    "re._compiler", "shutil", "tempfile", "typing", "heapq", "bisect", "csv", "fractions",
    "_pydecimal", "statistics", "difflib", "pprint", "calendar", "contextlib",
    "asyncio.tasks", "traceback", "tokenize", "zipfile",
]


def _torch_nn_files():
    spec = importlib.util.find_spec("torch")
    root = os.path.join(spec.submodule_search_locations[0], "nn")
    files = [os.path.join(root, "functional.py")]
    modules_dir = os.path.join(root, "modules")
    files += sorted(os.path.join(modules_dir, f) for f in os.listdir(modules_dir)
                    if f.endswith(".py"))
    return files


def _stdlib_file(name):
    return importlib.util.find_spec(name).origin


def _walk(code):
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _walk(const)


def _codes_of(path):
    with open(path, encoding="utf-8") as f:
        source = f.read()
    return list(_walk(compile(source, path, "exec")))


def _listing(code):
    """What a person reads in dis output, per instruction."""
    return [(ins.offset, ins.opname, ins.arg, ins.argrepr, ins.starts_line,
             ins.is_jump_target, ins.positions)
            for ins in dis.get_instructions(code)]


def _check_decode_matches_dis(code, instrs):
    ref = []
    prefix = None
    for ins in dis.get_instructions(code):
        if ins.opname == "EXTENDED_ARG":
            prefix = prefix or ins
            continue
        first = prefix or ins
        prefix = None
        ref.append((first.offset, ins.opname, ins.arg, first.starts_line, ins.positions, ins))
    assert len(ref) == len(instrs)
    for (offset, opname, arg, starts_line, positions, d), mine in zip(ref, instrs):
        assert (mine.offset, mine.opname, mine.arg, mine.starts_line, mine.positions) == \
            (offset, opname, arg, starts_line, positions)
        if mine.target is not None:
            assert mine.target.offset == d.argval
        elif opname == "KW_NAMES":  # 3.11's dis does not resolve KW_NAMES
            assert mine.argval is code.co_consts[arg]
        elif opname == "FORMAT_VALUE":  # dis shows (converter, with_format)
            assert mine.argval == arg
        elif opname == "LOAD_GLOBAL":
            assert (mine.argval, mine.push_null) == (d.argval, bool(arg & 1))
        else:
            assert mine.argval is d.argval or mine.argval == d.argval or \
                (mine.argval != mine.argval and d.argval != d.argval)


def _check_roundtrip(code):
    instrs = decode(code)
    _check_decode_matches_dis(code, instrs)
    new = assemble(instrs, code)
    assert _listing(new) == _listing(code)
    assert dis._parse_exception_table(new) == dis._parse_exception_table(code)
    assert list(new.co_positions()) == list(code.co_positions())
    assert list(new.co_lines()) == list(code.co_lines())
    assert new.co_stacksize == code.co_stacksize
    # Stronger than the above: the same bytes everywhere.
    for attr in ("co_code", "co_linetable", "co_exceptiontable", "co_consts", "co_names",
                 "co_varnames", "co_cellvars", "co_freevars", "co_nlocals", "co_flags"):
        assert getattr(new, attr) == getattr(code, attr), attr
    assert new == code


@pytest.mark.parametrize("module", STDLIB_MODULES)
def test_stdlib_module_roundtrip(module):
    codes = _codes_of(_stdlib_file(module))
    assert len(codes) > 1
    for code in codes:
        _check_roundtrip(code)


def test_torch_nn_roundtrip():
    files = _torch_nn_files()
    assert len(files) > 20
    count = 0
    for path in files:
        for code in _codes_of(path):
            _check_roundtrip(code)
            count += 1
    assert count > 1000


def _live_code_objects(namespace, module_name, seen):
    """Code of functions, methods, static/class methods and properties as imported."""
    for value in list(vars(namespace).values()):
        if isinstance(value, (staticmethod, classmethod)):
            value = value.__func__
        if isinstance(value, property):
            for accessor in (value.fget, value.fset, value.fdel):
                if isinstance(accessor, types.FunctionType):
                    yield accessor.__code__
        elif isinstance(value, types.FunctionType):
            if value.__module__ == module_name:
                yield value.__code__
        elif isinstance(value, type) and value.__module__ == module_name and value not in seen:
            seen.add(value)
            yield from _live_code_objects(value, module_name, seen)


@pytest.mark.parametrize("module", ["json", "textwrap", "dataclasses", "enum", "argparse",
                                    "pathlib", "torch.nn.functional",
                                    "torch.nn.modules.linear", "torch.nn.modules.container"])
def test_live_functions_and_methods_roundtrip(module):
    mod = importlib.import_module(module)
    count = 0
    for top in _live_code_objects(mod, module, set()):
        for code in _walk(top):
            _check_roundtrip(code)
            count += 1
    assert count >= 3


def test_decodes_deoptimized_code_of_hot_function():
    def hot(xs):
        total = 0
        for x in xs:
            total = total + x * 2
        return total

    for _ in range(200):  # long enough for 3.11 to specialize the adaptive code
        hot(range(20))
    instrs = decode(hot.__code__)
    names = {ins.opname for ins in instrs}
    assert "BINARY_OP" in names and "FOR_ITER" in names
    _check_roundtrip(hot.__code__)
