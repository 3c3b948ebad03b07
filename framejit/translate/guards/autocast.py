"""Does a captured graph compute differently under torch.autocast?

Autocast state at frame entry would have to be checked on every call (about 0.1 us) if every graph
depended on it. Most do not: for float32/float64 tensors autocast changes only the "lower precision"
ops (matmuls, convolutions, linear, attention), which run in bfloat16/float16 under it; the "float32"
ops only upcast low-precision inputs and the "promote" ops only matter for mixed dtypes. So a graph is
autocast-sensitive if it contains one of those ops, a low-precision tensor, an autocast region of its
own, or a callable framejit cannot see into (a Python function outside torch.nn.functional's simple
ones, autograd.Function.apply): then the entry guards the autocast state, otherwise it does not.
"""
import operator
import types

import torch

LOWER_PRECISION_OPS = {
    "conv1d", "conv2d", "conv3d", "conv_tbc", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
    "convolution", "_convolution", "cudnn_convolution", "cudnn_convolution_transpose", "prelu",
    "bmm", "mm", "mv", "dot", "vdot", "addmm", "addmv", "addr", "addbmm", "baddbmm", "matmul", "linear",
    "bilinear", "einsum", "tensordot", "chain_matmul", "multi_dot", "linalg_vecdot", "vecdot", "inner", "outer",
    "scaled_dot_product_attention", "_native_multi_head_attention", "multi_head_attention_forward",
    "_in_projection", "_in_projection_packed", "mkldnn_rnn_layer", "lstm", "gru", "rnn_tanh", "rnn_relu",
    "lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell", "_thnn_fused_lstm_cell", "_thnn_fused_gru_cell",
    "imatmul",
}
LOW_PRECISION = (torch.float16, torch.bfloat16)


def _name(target):
    if isinstance(target, str):
        return target.strip("_")
    return (getattr(target, "__name__", "") or "").strip("_")


def _opaque(target):
    if isinstance(target, str) or target in (operator.getitem, getattr):
        return False
    if isinstance(target, types.FunctionType):
        return (target.__module__ or "") not in ("torch.nn.functional", "torch.functional", "_operator")
    if isinstance(target, types.BuiltinFunctionType) or target in vars(operator).values():
        return False
    return not (getattr(target, "__module__", "") or "").startswith("torch")


def _low_precision(value):
    if isinstance(value, torch.Tensor):
        return value.dtype in LOW_PRECISION
    if isinstance(value, (tuple, list)):
        return any(_low_precision(v) for v in value)
    return False


def autocast_sensitive(graph, state_targets=()):
    for node in graph.nodes:
        if _low_precision(node.meta.get("example_value")):
            return True
        if node.op not in ("call_function", "call_method"):
            continue
        if node.target in state_targets or _name(node.target) in LOWER_PRECISION_OPS or _opaque(node.target):
            return True
    return False
