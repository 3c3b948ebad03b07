"""Differential tests: copy.copy / copy.deepcopy of plain Python values are new objects made in the frame
(translate/lookasides/copies.py), and a class's Python __getattribute__ runs on objects made in the frame.

The copy is a new object on every call (returned copies are distinct objects, writes to a copy never
reach the original), nested containers and objects are copied deeply with shared references kept
shared, the original's attributes are read through its own Source (a change between calls is noticed),
and transformers' `config.get_text_config(decoder=True)` (a deepcopy, then renames through the config's
attribute_map) stays in the graph.
"""
import copy

import pytest
import torch

import framejit
from tests.differential import CASE_FIELDS, case, randn, run_case

x3 = randn(3, seed=1)
ONE = dict(graphs=1, breaks=0)


class Settings:
    def __init__(self):
        self.scale = 2.0
        self.names = ["a", "b"]
        self.inner = Inner()
        self.shared = self.names              # deepcopy keeps this shared with .names


class Inner:
    def __init__(self):
        self.offset = 1


class Renaming:
    """A class whose Python __getattribute__ renames (transformers' attribute_map, written by hand)."""
    aliases = {"width": "size"}

    def __init__(self):
        self.size = 4

    def __getattribute__(self, name):
        if name != "aliases" and name in super().__getattribute__("aliases"):
            name = super().__getattribute__("aliases")[name]
        return super().__getattribute__(name)


def deep_copy_is_new_and_deep(x, s):
    c = copy.deepcopy(s)
    c.scale = 5.0
    c.names.append("c")
    c.inner.offset = 7
    return x * c.scale + c.inner.offset + len(c.shared), s.scale, list(s.names), s.inner.offset, c is s, \
        c.names is c.shared, c


def shallow_copy_shares_the_inside(x, s):
    c = copy.copy(s)
    c.scale = 3.0
    c.names.append("z")                       # the same list as the original's
    return x * c.scale, s.scale, list(s.names), c.inner is s.inner


def copies_of_containers(x, d):
    e = copy.deepcopy(d)
    e["k"].append(3)
    f = copy.copy(d)
    f["n"] = 1
    return x + len(e["k"]), d, f, e


def getattribute_of_an_object_made_here(x):
    r = Renaming()
    return x * r.width + r.size


def copy_of_renaming_object(x, r):
    return x * copy.deepcopy(r).width


def hf_text_config_of_an_encoder_decoder(x, config):
    text = config.get_text_config(decoder=True)
    return x * text.num_hidden_layers + text.num_attention_heads, text is config


def _t5_config():
    transformers = pytest.importorskip("transformers")
    return transformers.T5Config(d_model=8, num_layers=2, num_decoder_layers=3, num_heads=2)


@pytest.mark.parametrize(CASE_FIELDS, [
    case(deep_copy_is_new_and_deep, x3, Settings(), **ONE),
    case(shallow_copy_shares_the_inside, x3, Settings(), **ONE),
    case(copies_of_containers, x3, {"k": [1, 2], "m": "v"}, **ONE),
    case(getattribute_of_an_object_made_here, x3, **ONE),
    case(copy_of_renaming_object, x3, Renaming(), **ONE),
    case(hf_text_config_of_an_encoder_decoder, x3, _t5_config(), **ONE),
])
def test_copies(fn, args, kwargs, options):
    run_case(fn, args, kwargs, options)


def test_each_call_returns_a_new_copy_and_a_changed_original_is_noticed():
    s = Settings()
    compiled = framejit.compile(lambda x, s: copy.deepcopy(s))
    a, b = compiled(x3, s), compiled(x3, s)
    assert a is not b and a is not s and a.names is not s.names and a.names is a.shared
    s.scale = 9.0
    assert compiled(x3, s).scale == 9.0
