"""Tensor kinds beyond the plain graph tensor (values/base.py's TensorValue): tensor subclasses with
__torch_function__ and what the frame does with them, a tensor's own instance attributes, `Tensor.type()`,
the known value of a tensor made from constants, and numpy arrays read as graph tensors.
"""
