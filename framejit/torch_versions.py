"""The torch releases framejit supports, and every difference between them in torch internals it reads.

framejit reads some of torch's private state (a flag here, a module's layout there). Those can move
between releases; each such difference is answered here, once, so the rest of framejit asks this module
and never compares versions itself. Supported: torch >= 2.13 and < 2.16 (pyproject.toml says the same);
tested: 2.13.0 (`make test`) and 2.14.1 (`make test-torch TORCH=2.14.1`). 2.15 is planned: it installs,
and a release outside the tested ones gets one warning at import naming the tested ones.

Differences handled:
- torch.fx's "is fx tracing?" flag: a module global `_is_fx_tracing_flag` up to 2.13, a thread-local
  read by `_get_is_fx_tracing()` from 2.14.
A leaf: it imports nothing of framejit.
"""
import re
import warnings

import torch

SUPPORTED = ((2, 13), (2, 16))          # [lowest, highest) major.minor, as in pyproject.toml
TESTED = ("2.13.0", "2.14.1")


def parse(version):
    """(major, minor, patch) of a torch version string ("2.14.1+cu130" -> (2, 14, 1))."""
    numbers = re.match(r"(\d+)\.(\d+)(?:\.(\d+))?", str(version))
    if numbers is None:
        return (0, 0, 0)
    return tuple(int(n or 0) for n in numbers.groups())


TORCH = parse(torch.__version__)


def check_supported(version=torch.__version__):
    """One warning when `version` is outside the tested releases: a RuntimeWarning outside the supported
    range (framejit may misread torch's internals there), a UserWarning for an untested one inside it."""
    release = parse(version)
    if SUPPORTED[0] <= release[:2] < SUPPORTED[1]:
        if ".".join(map(str, release)) not in TESTED:
            warnings.warn(f"framejit is tested with torch {' and '.join(TESTED)}; torch {version} is supported "
                          "but untested", UserWarning, stacklevel=2)
        return True
    warnings.warn(f"framejit supports torch >= {'.'.join(map(str, SUPPORTED[0]))} and < "
                  f"{'.'.join(map(str, SUPPORTED[1]))} (tested: {', '.join(TESTED)}); torch {version} is outside "
                  "that range and framejit may misread its internals", RuntimeWarning, stacklevel=2)
    return False


def fx_tracing_flag_reader():
    """A zero-argument function reading torch.fx's "symbolic tracing now?" flag without the warning
    `is_fx_tracing()` logs, or None when this torch has neither form."""
    import torch.fx._symbolic_trace as symbolic_trace
    getter = getattr(symbolic_trace, "_get_is_fx_tracing", None)
    if getter is not None:                       # 2.14 and later: a thread-local
        return getter
    if hasattr(symbolic_trace, "_is_fx_tracing_flag"):   # 2.13: a module global
        return lambda: symbolic_trace._is_fx_tracing_flag
    return None
