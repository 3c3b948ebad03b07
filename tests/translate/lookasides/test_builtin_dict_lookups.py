"""Lookups in real dicts keyed by classes and typing forms, through the dict's bound builtin methods
(framejit/translate/lookasides/builtin_methods.py).

Why this exists: `TABLE.get(get_origin(tp))` over a dict keyed by typing forms is how
huggingface_hub's strict dataclasses validate every transformers config assignment
(`config.problem_type = ...` in each sequence-classification loss); it was a graph break, so a
classifier's train step took two graphs where torch.compile takes one. These are differential tests:
eager vs compiled on the same inputs, the graph count, and a change to the table between calls.
"""
import copyreg
import typing

import pytest
import torch
import transformers

import framejit
from tests.differential import check, randn

VALIDATORS = {typing.Union: "union", typing.Literal: "literal", list: "list", dict: "dict"}
# annotations as a class keeps them (check() deep-copies arguments, and a copied alias is a new object)
ANNOTATIONS = (typing.Optional[int], typing.Literal["a", "b"], list[int], dict[str, int], int)


def annotation(i):
    return ANNOTATIONS[i]


def kind_of(x, i):
    found = VALIDATORS.get(typing.get_origin(annotation(i)))
    return x * (2 if found is None else len(found))


def one_graph_no_break(fn, *args):
    """Eager and compiled agree on fresh inputs, and the first call is one graph without a break (the
    full differential check, which also demands a cache hit on the second call, is below)."""
    expected = fn(*args)
    framejit.reset()
    report = framejit.explain(fn)(*args)
    assert (report.graph_count, report.graph_break_count) == (1, 0), str(report)
    torch.testing.assert_close(report.result, expected)


def test_get_with_typing_form_and_class_keys_in_one_graph():
    for i in range(len(ANNOTATIONS)):
        one_graph_no_break(kind_of, randn(3), i)


ALIASES = (typing.Optional[int], typing.Literal["a", "b"])   # no plain classes: the harness snapshots globals


def kind_of_alias(x, i):
    found = VALIDATORS.get(typing.get_origin(ALIASES[i]))
    return x * len(found)


def test_get_with_typing_form_keys_differential():
    for i in range(len(ALIASES)):
        check(kind_of_alias, randn(3), i, graphs=1, breaks=0)


def test_bound_getitem_and_contains_and_default():
    table = {int: 3, str: 5}

    def f(x, key):
        size = table.__getitem__(key) if table.__contains__(key) else table.get(key, 7)
        return x + size
    for key in (int, str, float):
        one_graph_no_break(f, randn(2), key)


def test_table_changed_between_calls_is_noticed():
    table = {list: 2}

    def f(x):
        return x * table.get(list, 10)
    compiled = framejit.compile(f)
    x = torch.ones(2)
    assert torch.equal(compiled(x), x * 2)
    table[list] = 3
    assert torch.equal(compiled(x), x * 3)
    del table[list]
    assert torch.equal(compiled(x), x * 10)


def test_stdlib_dispatch_table_keyed_by_types():
    def reducer_known(x, obj):
        return x + (1 if copyreg.dispatch_table.get(type(obj)) is not None else 0)
    one_graph_no_break(reducer_known, randn(2), 1.5)
    one_graph_no_break(reducer_known, randn(2), 1j)          # complex has a registered reducer


def test_equality_hashed_key_is_not_looked_up_but_stays_correct():
    class Point:                       # hashes by value: a guard could not name "this key"
        def __init__(self, v):
            self.v = v

        def __eq__(self, other):
            return isinstance(other, Point) and other.v == self.v

        def __hash__(self):
            return hash(self.v)
    table = {Point(1): 4, int: 1}

    def f(x, p):
        return x * table.get(p, 9)
    check(f, randn(2), Point(1))


def test_transformers_config_assignment_in_one_graph():
    def classify_loss(logits, labels, config):
        if config.problem_type is None:
            config.problem_type = "single_label_classification"
        return torch.nn.functional.cross_entropy(logits, labels), config.problem_type
    logits, labels = randn(4, 3), torch.tensor([0, 2, 1, 1])
    eager_config, compiled_config = transformers.BertConfig(num_labels=3), transformers.BertConfig(num_labels=3)
    expected = classify_loss(logits, labels, eager_config)
    report = framejit.explain(classify_loss)(logits, labels, compiled_config)
    assert (report.graph_count, report.graph_break_count) == (1, 0), str(report)
    torch.testing.assert_close(report.result[0], expected[0])
    assert report.result[1] == expected[1]
    assert compiled_config.problem_type == eager_config.problem_type == "single_label_classification"
