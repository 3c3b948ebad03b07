"""str() / repr() of an exception raised in the frame (values/objects/exception_values.py): the real
exception's text; anything else goes to the builtins' own lookasides, which this wraps.
"""
from ..dispatch import LOOKASIDES
from ..values.base import Const
from ..values.objects.exception_values import ExceptionValue


def _install_exception_text(builtin):
    eager_impl = LOOKASIDES[builtin]

    def impl(tx, args, kwargs):
        if len(args) == 1 and not kwargs and isinstance(args[0], ExceptionValue):
            return Const(builtin(args[0].real()))
        return eager_impl(tx, args, kwargs)
    LOOKASIDES[builtin] = impl


_install_exception_text(str)
_install_exception_text(repr)
