"""Lookasides: callables the translator runs symbolically instead of inlining or calling them.

Python builtins, the standard library, dict/str methods, the operator module, torch ops and state
queries, nn.Module calls, and the callables that make value kinds (itertools, deque, partial, object's
own protocol, context managers' clones). Each entry is `fn(tx, args, kwargs) -> Value`, registered in
dispatch.LOOKASIDES (or, for every function of one code object, dispatch.CODE_LOOKASIDES) by a module of
this package and only here; importing the package installs them all, in the order below (a later
module may wrap what an earlier one registered: lazy_iteration wraps builtins_table's any/all/next...,
dict_kind_calls wraps builtin_methods'). Imports values/, graph/, source.py, dispatch.py and the leaves.
"""
from . import builtins_table  # noqa: F401
from . import object_calls  # noqa: F401
from . import operator_calls  # noqa: F401
from . import torch_table  # noqa: F401
from . import autograd_functions  # noqa: F401
from . import modules  # noqa: F401
from . import builtin_methods  # noqa: F401
from . import weak_references  # noqa: F401
from . import numpy_calls  # noqa: F401
from . import stdlib  # noqa: F401
from . import profiler_blocks  # noqa: F401
from . import higher_order  # noqa: F401
from . import torch_checks  # noqa: F401
from . import torch_queries  # noqa: F401
from . import lru_cached_calls  # noqa: F401
from . import symbolic_factories  # noqa: F401
from . import optimizers  # noqa: F401
from . import disabled_wrappers  # noqa: F401
from . import process_state  # noqa: F401
from . import copies  # noqa: F401
from . import str_format  # noqa: F401
from . import tensor_subclass_calls  # noqa: F401
from . import torch_function_off  # noqa: F401
from . import backend_flags  # noqa: F401
from . import symbolic_helpers  # noqa: F401
from . import itertools_calls  # noqa: F401
from . import class_factories  # noqa: F401
from . import dict_kind_calls  # noqa: F401
from . import lazy_iteration  # noqa: F401
from . import manager_calls  # noqa: F401
from . import state_calls  # noqa: F401
from . import lazy_modules  # noqa: F401
from . import frame_state  # noqa: F401
from . import numpy_results  # noqa: F401
from . import exception_text  # noqa: F401
from . import random_seeding  # noqa: F401
