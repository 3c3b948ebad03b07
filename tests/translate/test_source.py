"""Sources remember their hash (translate/source.py): equal Sources must still hash alike, different ones
apart, and a remembered hash must never travel with a pickled or copied Source (str hashes differ
between processes)."""
import copy
import os
import pickle
import subprocess
import sys
from pathlib import Path

from framejit.translate.guards.module_guards import CachedSource
from framejit.translate.source import AttrSource, ItemSource, LocalSource
from framejit.translate.values.modules.module_values import ModuleAttrSource

ROOT = Path(__file__).resolve().parents[2]


def _chain(depth, attr="w"):
    s = LocalSource("self")
    for i in range(depth):
        s = ItemSource(AttrSource(s, f"layer{i}"), i)
    return AttrSource(s, attr)


def test_equal_sources_hash_alike_and_find_each_other():
    a, b = _chain(6), _chain(6)
    hash(a)                                   # a remembers its hash, b does not yet
    assert a == b and hash(a) == hash(b)
    assert {a: 1}[b] == 1 and {b: 2}[a] == 2
    assert hash(a) == hash((a.base, a.attr))  # the dataclass's own hash of its fields


def test_sources_differing_anywhere_differ():
    assert _chain(6) != _chain(6, "v") and _chain(6) not in {_chain(6, "v"), _chain(5)}
    params = ModuleAttrSource(LocalSource("m"), "w", "_parameters")
    buffers = ModuleAttrSource(LocalSource("m"), "w", "_buffers")
    assert params != buffers and len({params, buffers}) == 2
    assert CachedSource(0, params) != CachedSource(1, params) and len({CachedSource(0, params), CachedSource(1, params)}) == 2


def test_copies_do_not_carry_the_remembered_hash():
    a = _chain(3)
    hash(a)
    for other in (copy.copy(a), copy.deepcopy(a), pickle.loads(pickle.dumps(a))):
        assert "_fj_hash" not in vars(other)
        assert other == a and hash(other) == hash(a)


_PICKLE = """
import pickle, sys
sys.path.insert(0, {root!r})
from framejit.translate.source import AttrSource, LocalSource
s = AttrSource(LocalSource("self"), "weight")
hash(s)
sys.stdout.buffer.write(pickle.dumps(s))
"""

_LOAD = """
import pickle, sys
sys.path.insert(0, {root!r})
from framejit.translate.source import AttrSource, LocalSource
s = pickle.loads(sys.stdin.buffer.read())
print(s in {{AttrSource(LocalSource("self"), "weight")}})
"""


def test_a_source_pickled_in_another_process_is_found_by_an_equal_one():
    """Hash seeds differ between the two processes: a hash pickled with the Source would be stale."""
    env = dict(os.environ, PYTHONHASHSEED="1")
    data = subprocess.run([sys.executable, "-c", _PICKLE.format(root=str(ROOT))], env=env, check=True,
                          capture_output=True).stdout
    env["PYTHONHASHSEED"] = "2"
    out = subprocess.run([sys.executable, "-c", _LOAD.format(root=str(ROOT))], env=env, check=True,
                         capture_output=True, input=data).stdout
    assert out.strip() == b"True"
