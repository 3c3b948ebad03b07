"""What torch calls on tensor subclasses, called in the frame: `torch.Tensor.__torch_function__` (the default
a subclass's own one defers to) and `torch.Tensor._make_subclass` (values/tensors/).
"""
import torch

from ..dispatch import LOOKASIDES
from ..values.tensors.tensor_subclass_members import make_subclass
from ..values.tensors.tensor_subclasses import DEFAULT_TORCH_FUNCTION, default_torch_function

LOOKASIDES[DEFAULT_TORCH_FUNCTION] = default_torch_function
LOOKASIDES[torch.Tensor._make_subclass] = make_subclass
