"""Which modules' attributes the frame reads without guards: a policy, not a rule of Python.

The frame may not change them (a write is a graph break), nor, by assumption, does anyone else between
calls: torch's own namespaces, the standard library's pure modules and numpy's. Read by
translate/context.py when it wraps a module attribute, and by objects/attribute_model.py.
"""
# modules whose attributes are read without guards (the frame may not change them, nor does anyone else)
TRUSTED_MODULES = {"torch", "torch.nn", "torch.nn.functional", "torch.nn.init", "torch.linalg", "torch.fft",
                   "torch.special", "torch.nn.modules", "math", "operator", "functools", "itertools",
                   "collections", "builtins", "typing", "warnings", "numbers", "enum", "dataclasses",
                   "numpy", "numpy.linalg", "numpy.fft"}
