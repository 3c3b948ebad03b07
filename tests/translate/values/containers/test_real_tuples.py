"""A real tuple reached at translation without being modelled item by item (a class's __mro__) is
immutable: len() and iteration answer from it (values/protocol.py, lookasides/builtins_table.py)."""
import torch

from tests.differential import check, randn


def mro_names(x):
    names = []
    input_type = type(torch.ones(2))
    for cls in input_type.__mro__:
        names.append(cls.__name__)
    return x + len(input_type.__mro__), input_type, names


class Base:
    pass


class Child(Base):
    pass


def user_mro(x):
    return x * len(Child.__mro__), [c.__name__ for c in Child.__mro__]


def test_mro_of_a_torch_class_in_one_graph():
    check(mro_names, randn(2), fullgraph=True, graphs=1)


def test_mro_of_a_user_class_in_one_graph():
    check(user_mro, randn(2), fullgraph=True, graphs=1)
