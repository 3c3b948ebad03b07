"""len(), subscripts and `in` on nn.Modules whose own class defines __len__ / __getitem__ / __contains__
in Python (values/modules/module_dunders.py): the user's method is inlined -- on a plain nn.Module, and on a
torch container subclass whose override must win over the container's own rule."""
import torch
import torch.nn as nn

from tests.differential import check, randn


class IndexedLayers(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 4)])

    def __getitem__(self, idx):
        return self.layers[idx]

    def __len__(self):
        return len(self.layers)

    def __contains__(self, name):
        return name == "relu"

    def forward(self, x):
        for i in range(len(self)):
            x = self[i](x)
        if "relu" in self:
            x = x + 1
        if "gelu" in self:
            x = x - 100
        return x


class KeyedParams(nn.Module):
    def __init__(self):
        super().__init__()
        self.table = nn.ParameterDict({"w": nn.Parameter(torch.randn(4, 4))})

    def __getitem__(self, key):
        return self.table[key]

    def forward(self, x):
        return self["w"].mm(x)


class ShiftedList(nn.ModuleList):
    """A container subclass whose __getitem__ remaps indices: its override, not ModuleList's, decides."""

    def __getitem__(self, idx):
        return super().__getitem__((idx + 1) % 3)


class UsesShifted(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = ShiftedList([nn.Linear(4, 4), nn.Tanh(), nn.Linear(4, 4)])

    def forward(self, x):
        for i in range(2):
            x = self.blocks[i](x)
        return x


def test_user_getitem_and_len_on_a_module_in_one_graph():
    torch.manual_seed(0)
    check(IndexedLayers(), randn(2, 4), fullgraph=True, graphs=1)


def test_user_getitem_returning_a_parameter():
    torch.manual_seed(0)
    check(KeyedParams(), randn(4, 4), fullgraph=True, graphs=1)


def test_container_subclass_override_wins():
    torch.manual_seed(0)
    check(UsesShifted(), randn(2, 4), fullgraph=True, graphs=1)
