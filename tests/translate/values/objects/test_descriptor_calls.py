"""`descriptor.__get__(obj)` on C-level descriptors (values/objects/descriptor_calls.py): the attribute read
through the object, when the object's class resolves that name to that descriptor."""
import torch

from tests.differential import check, randn


class Slotted:
    __slots__ = ("scale",)

    def __init__(self, scale):
        self.scale = scale

    def __eq__(self, other):
        return type(other) is Slotted and other.scale == self.scale


def tensor_properties_by_descriptor(x):
    shape = torch.Tensor.shape.__get__(x)
    dtype = torch.Tensor.dtype.__get__(x, torch.Tensor)
    return x.sum() + shape[0], dtype, torch.Tensor.shape.__get__(None, torch.Tensor) is torch.Tensor.shape


SHAPE_GET = torch.Tensor.shape.__get__


def bound_descriptor_get_from_a_global(x):
    torch.sin(x)
    return SHAPE_GET(x)


def slot_by_descriptor(obj, x):
    return x * Slotted.scale.__get__(obj)


def test_tensor_properties_in_one_graph():
    check(tensor_properties_by_descriptor, randn(3, 2), fullgraph=True, graphs=1)


def test_bound_descriptor_get_from_a_global():
    check(bound_descriptor_get_from_a_global, randn(2, 2), fullgraph=True, graphs=1)


def test_slot_member_descriptor():
    check(slot_by_descriptor, Slotted(3.0), randn(2), fullgraph=True, graphs=1)


def test_descriptor_of_another_class_raises_type_error():
    def fn(x):
        return Slotted.scale.__get__(x)
    check(fn, randn(2))
