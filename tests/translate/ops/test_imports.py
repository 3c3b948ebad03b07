"""Imports inside a compiled function (ops/imports.py): the module is pushed with a fixed Source, so
`from mod import FLAG` and `mod.FLAG` are guarded reads of the module's attribute. Before, both were
folded in unguarded: a module-level flag or size changed between calls kept its first value."""
import sys
import types

import pytest
import torch

import framejit
from tests.differential import check, randn

_MODULE = "framejit_test_import_target"


@pytest.fixture()
def target():
    m = types.ModuleType(_MODULE)
    m.DEBUG, m.SCALE, m.TABLE = False, 2, {"a": 1, "b": 2}
    sys.modules[_MODULE] = m
    yield m
    del sys.modules[_MODULE]


def from_import(x):
    from framejit_test_import_target import DEBUG, SCALE
    if DEBUG:
        return x * 100
    return x * SCALE


def module_import(x):
    import framejit_test_import_target
    return x * framejit_test_import_target.SCALE


def imported_table(x):
    from framejit_test_import_target import TABLE
    return x * len(TABLE) + TABLE["a"]


@pytest.mark.parametrize("fn", [from_import, module_import, imported_table])
def test_module_attributes_changed_between_calls_are_seen(target, fn):
    framejit.reset()
    compiled = framejit.compile(fn)
    for debug, scale, extra in ((False, 2, None), (True, 3, "c"), (False, 5, None)):
        target.DEBUG, target.SCALE = debug, scale
        if extra:
            target.TABLE[extra] = 3
        x = randn(2)
        assert torch.equal(compiled(x), fn(x)), (debug, scale)


def test_imports_in_one_graph(target):
    check(from_import, randn(2), fullgraph=True, graphs=1)
    check(imported_table, randn(2), fullgraph=True, graphs=1)


_KEYED_BY_OBJECTS = {torch.add: 1, torch.sub: 2}


def len_of_a_table_keyed_by_functions(x):
    from tests.translate.ops.test_imports import _KEYED_BY_OBJECTS
    return x * len(_KEYED_BY_OBJECTS)


def test_len_of_an_imported_table_is_guarded():
    framejit.reset()
    compiled = framejit.compile(len_of_a_table_keyed_by_functions, fullgraph=True)
    try:
        for extra in (None, torch.mul, None):
            if extra is not None:
                _KEYED_BY_OBJECTS[extra] = 3
            x = randn(2)
            assert torch.equal(compiled(x), len_of_a_table_keyed_by_functions(x))
    finally:
        _KEYED_BY_OBJECTS.pop(torch.mul, None)
