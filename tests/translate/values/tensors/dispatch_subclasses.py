"""Two small tensor subclasses written the way quantized / low-precision weight formats and torchao write
them (used by test_dispatch_subclasses.py and bench/zoo_ecosystem_models.py).

Int8Weight: a wrapper subclass (`torch.Tensor._make_wrapper_subclass`) holding int8 data and a per-row
float scale; its __torch_dispatch__ dequantizes for every op but a few it keeps quantized (detach, t,
clone). LoggedTensor: a wrapper subclass around one plain tensor that records the name of every aten op
it sees and re-wraps the results. Both implement __tensor_flatten__ / __tensor_unflatten__ (what
torch's tracing of subclasses needs).
"""
import copy

import torch
from torch.utils._pytree import tree_map

aten = torch.ops.aten


class Int8Weight(torch.Tensor):
    @staticmethod
    def __new__(cls, data, scale):
        return torch.Tensor._make_wrapper_subclass(cls, data.shape, dtype=scale.dtype, device=data.device,
                                                   requires_grad=False)

    def __init__(self, data, scale):
        self.data_int8 = data
        self.scale = scale

    @classmethod
    def quantize(cls, w):
        scale = w.abs().amax(dim=1, keepdim=True).clamp(min=1e-8) / 127
        return cls(torch.round(w / scale).to(torch.int8), scale)

    def dequantize(self):
        return self.data_int8.to(self.scale.dtype) * self.scale

    def __repr__(self):
        return f"Int8Weight(shape={tuple(self.shape)})"

    def __deepcopy__(self, memo):
        return Int8Weight(copy.deepcopy(self.data_int8, memo), copy.deepcopy(self.scale, memo))

    def __tensor_flatten__(self):
        return ["data_int8", "scale"], None

    @staticmethod
    def __tensor_unflatten__(inner, meta, outer_size, outer_stride):
        return Int8Weight(inner["data_int8"], inner["scale"])

    __torch_function__ = torch._C._disabled_torch_function_impl

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in (aten.detach.default, aten.clone.default, aten.alias.default):
            w = args[0]
            return Int8Weight(func(w.data_int8), func(w.scale))
        plain = tree_map(lambda a: a.dequantize() if isinstance(a, Int8Weight) else a, (args, kwargs))
        return func(*plain[0], **plain[1])


class LoggedTensor(torch.Tensor):
    log = []

    @staticmethod
    def __new__(cls, elem):
        return torch.Tensor._make_wrapper_subclass(cls, elem.shape, strides=elem.stride(), dtype=elem.dtype,
                                                   device=elem.device, requires_grad=elem.requires_grad)

    def __init__(self, elem):
        self.elem = elem

    def __repr__(self):
        return f"LoggedTensor({self.elem!r})"

    def __deepcopy__(self, memo):
        return LoggedTensor(copy.deepcopy(self.elem, memo))

    def __tensor_flatten__(self):
        return ["elem"], None

    @staticmethod
    def __tensor_unflatten__(inner, meta, outer_size, outer_stride):
        return LoggedTensor(inner["elem"])

    __torch_function__ = torch._C._disabled_torch_function_impl

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        LoggedTensor.log.append(func.__name__)
        unwrap = lambda a: a.elem if isinstance(a, LoggedTensor) else a      # noqa: E731
        out = func(*tree_map(unwrap, args), **tree_map(unwrap, kwargs or {}))
        return tree_map(lambda o: LoggedTensor(o) if isinstance(o, torch.Tensor) else o, out)
