"""Replaying an execution record: rebuild the recorded function, convert it again, compare outcomes.

Why this exists: a record (framejit.observe.record) is only useful if a developer can
turn it back into the failing conversion, in a fresh process, and see whether it
still fails the same way (or, after a fix, that it no longer does).

`replay_record(record, run=False)` (and `replay(path_or_record, run=False, trust=False)`, which is
framejit.replay, loading the record file first):

1. rebuilds the function: types.FunctionType(code, recorded globals + a
   __builtins__ dict, name, defaults, closure cells), and fresh copies of the
   recorded arguments;
2. converts it with `framejit.runtime.compiled.replay_conversion(fn, args, kwargs)` when
   that hook exists (with backend= and fullgraph= as recorded, if the hook takes them). Its contract: run framejit's conversion of fn's frame for
   those arguments, raise what the conversion raises, and return a callable
   running the converted code (or None). Without the hook, replay falls back to
   `framejit.compile(fn, backend="eager")(*args, **kwargs)`, where conversion
   happens on that first call (and so the function also runs);
3. compares the outcome with the recorded one: the same exception type and
   message (hex addresses ignored) for a recorded failure, no exception for a
   recorded success;
4. with run=True and a successful conversion, also runs the converted function
   and the plain (eager) function on separate fresh copies of the arguments,
   from the same RNG state, and compares outputs and argument mutations.
"""

from __future__ import annotations

import importlib
import inspect
import random
import re
import traceback
import types
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from framejit.observe.global_state import applied_translation_state
from framejit.observe.record import Record, RecordError, exception_type_name
from framejit.observe.record_file import load_record
from framejit.observe.record_values import UnpicklableValue

HOOK_NAME = "framejit.runtime.compiled.replay_conversion"
FALLBACK_NAME = 'framejit.compile(fn, backend="eager")'
_MAX_MISMATCHES = 20
_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")


class _NotRun:
    def __repr__(self) -> str:
        return "<not run>"


_NOT_RUN = _NotRun()


class _HarnessError(Exception):
    """Replay could not be attempted (no converter available, or it failed to import)."""


def _normalise_message(message: str | None) -> str | None:
    return None if message is None else _ADDRESS.sub("0x?", message).strip()


@dataclass
class ReplayResult:
    """What happened when a record was replayed, next to what was recorded."""

    record: Record
    converter: str = ""
    """Which entry point converted the function (HOOK_NAME or FALLBACK_NAME)."""
    replay_exception_type: str | None = None
    replay_exception_message: str | None = None
    replay_traceback: str | None = None
    harness_error: str | None = None
    """Set when the replay could not be attempted at all; then nothing was reproduced."""
    ran: bool = False
    """True when run=True compared the converted function with eager."""
    outputs_match: bool | None = None
    mismatches: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    eager_run: str | None = None
    """With run=True after a conversion that failed: how the frame ran as plain Python (what the
    program did after the failure), in words."""

    @property
    def recorded_exception(self) -> tuple[str, str | None] | None:
        if self.record.exception_type is None:
            return None
        return self.record.exception_type, self.record.exception_message

    @property
    def replay_exception(self) -> tuple[str, str | None] | None:
        if self.replay_exception_type is None:
            return None
        return self.replay_exception_type, self.replay_exception_message

    @property
    def same_type(self) -> bool:
        return self.harness_error is None and self.record.exception_type == self.replay_exception_type

    @property
    def same_message(self) -> bool:
        return _normalise_message(self.record.exception_message) == _normalise_message(self.replay_exception_message)

    @property
    def reproduced(self) -> bool:
        """The replay ended like the recorded conversion (and, when run, matched eager)."""
        if self.harness_error is not None or not self.same_type:
            return False
        if self.record.failed:
            return self.same_message
        return self.outputs_match is not False

    def summary(self) -> str:
        record = self.record
        lines = [f"replayed {record.qualname} ({record.filename}:{record.firstlineno})"]
        if self.converter:
            lines.append(f"converter: {self.converter}")
        lines.append(f"recorded: {record.outcome()}")
        if self.harness_error is not None:
            lines.append(f"replay:   not attempted: {self.harness_error}")
        elif self.replay_exception_type is None:
            lines.append("replay:   conversion succeeded")
        else:
            lines.append(f"replay:   conversion failed with {self.replay_exception_type}: {self.replay_exception_message}")
        if self.ran:
            lines.append("run:      converted output matches eager" if self.outputs_match else "run:      converted output differs from eager")
            lines.extend(f"  - {m}" for m in self.mismatches)
        if self.eager_run is not None:
            lines.append(f"run:      {self.eager_run}")
        lines.extend(f"note: {n}" for n in record.notes + self.notes)
        lines.append(f"result: {self.verdict()}")
        return "\n".join(lines)

    def verdict(self) -> str:
        """One line: reproduced, or NOT reproduced and in which way."""
        record = self.record
        if self.reproduced:
            return "reproduced the recorded outcome"
        if self.harness_error is not None:
            return "NOT reproduced: the replay could not be attempted"
        if record.failed and self.replay_exception_type is None:
            return (f"NOT reproduced: the recorded conversion failed with {record.exception_type}, but the "
                    "replayed conversion succeeded (the failure depended on something the record does not "
                    "hold, such as a patch the program applied, or it has been fixed)")
        if record.failed and not self.same_type:
            return (f"NOT reproduced: the replayed conversion failed with {self.replay_exception_type} instead "
                    f"of {record.exception_type}")
        if record.failed:
            return "NOT reproduced: same exception type, different message"
        if self.replay_exception_type is not None:
            return (f"NOT reproduced: the recorded conversion succeeded, but the replayed one failed with "
                    f"{self.replay_exception_type}")
        return "NOT reproduced: the converted function does not behave like the plain function"


Converter = Callable[[types.FunctionType, tuple, dict], "tuple[Callable | None, Any]"]


def _backend_for(record: Record, notes: list[str]) -> Any:
    """The backend to replay with: the recorded name if registered here, else the recorded callable."""
    from framejit.backends import BACKENDS

    if record.backend_name is not None and record.backend_name in BACKENDS:
        return record.backend_name
    if callable(record.backend) and not isinstance(record.backend, UnpicklableValue):
        if record.backend_name is not None:
            notes.append(f"backend {record.backend_name!r} is not registered here; replayed with the recorded callable")
        return record.backend
    if record.backend_name is not None:
        raise _HarnessError(
            f"the record was compiled with backend {record.backend_name!r}, which is not registered in this "
            "process; register it first (e.g. `python -c \"import my_backends; from framejit.cli import main; "
            "main()\" replay PATH`)"
        )
    if record.backend is not None:
        notes.append(f"the recorded backend could not be restored ({record.backend!r}); replayed with 'eager'")
    return "eager"


def _hook_options(hook: Callable, record: Record, notes: list[str]) -> dict[str, Any]:
    """backend= and fullgraph= for a conversion hook that accepts them (older hooks take only fn, args, kwargs)."""
    try:
        parameters = inspect.signature(hook).parameters
    except (TypeError, ValueError):
        return {}
    if "backend" not in parameters:
        return {}
    options = {"backend": _backend_for(record, notes), "fullgraph": record.fullgraph}
    if "config" in parameters:
        options["config"] = record.config
    if "resume_of" in parameters:
        # a recorded resume function maps back to the code it continues, as it did when recorded (a break
        # in it is placed in the original code, and it is never routed as a plain copy: convert/resume.py)
        options["resume_of"] = record.resume_of
    elif record.resume_of is not None:
        notes.append("this converter cannot be told which code the recorded resume function continues")
    return options


def _find_converter(record: Record, notes: list[str]) -> tuple[str, Converter]:
    try:
        convert_module = importlib.import_module("framejit.runtime.compiled")
    except ModuleNotFoundError as exc:
        if exc.name != "framejit.runtime.compiled":
            raise _HarnessError(f"importing framejit.runtime.compiled failed: {exc}") from None
        convert_module = None
    except Exception as exc:
        raise _HarnessError(f"importing framejit.runtime.compiled failed: {type(exc).__name__}: {exc}") from None
    hook = getattr(convert_module, "replay_conversion", None)
    if hook is not None:
        options = _hook_options(hook, record, notes)

        def via_hook(fn: types.FunctionType, args: tuple, kwargs: dict) -> tuple[Callable | None, Any]:
            converted = hook(fn, args, kwargs, **options)
            return (converted if callable(converted) else None), _NOT_RUN

        return HOOK_NAME, via_hook
    try:
        package = importlib.import_module("framejit")
    except Exception as exc:
        raise _HarnessError(f"importing framejit failed: {type(exc).__name__}: {exc}") from None
    compile_fn = getattr(package, "compile", None)
    if compile_fn is None:
        raise _HarnessError(
            "this framejit has neither framejit.runtime.compiled.replay_conversion nor framejit.compile, "
            "so nothing can convert the recorded function"
        )

    def via_compile(fn: types.FunctionType, args: tuple, kwargs: dict) -> tuple[Callable | None, Any]:
        compiled = compile_fn(fn, backend="eager")
        return compiled, compiled(*args, **kwargs)

    return FALLBACK_NAME, via_compile


def _rng_state() -> tuple[Any, torch.Tensor]:
    return random.getstate(), torch.get_rng_state()


def _set_rng_state(state: tuple[Any, torch.Tensor]) -> None:
    random.setstate(state[0])
    torch.set_rng_state(state[1])


def replay_record(record: Record, *, run: bool = False) -> ReplayResult:
    """Convert the recorded function again on the recorded arguments and compare (see module doc)."""
    result = ReplayResult(record=record)
    try:
        fn = record.build_function()
        args, kwargs = record.rebuild_args()
    except RecordError:
        raise
    except Exception as exc:                  # a record whose parts do not fit together
        raise RecordError(f"the record of {getattr(record, 'qualname', '?')} cannot be rebuilt "
                          f"({type(exc).__name__}: {exc}); the file may be damaged") from None
    try:
        result.converter, convert = _find_converter(record, result.notes)
    except _HarnessError as exc:
        result.harness_error = str(exc)
        return result
    rng = _rng_state()
    with applied_translation_state(record.torch_state):
        try:
            converted, outputs = convert(fn, args, kwargs)
        except Exception as exc:
            result.replay_exception_type = exception_type_name(type(exc))
            result.replay_exception_message = str(exc)
            result.replay_traceback = "".join(traceback.format_exception(exc))
            if run:
                _set_rng_state(rng)
                result.eager_run = _run_plainly(record, fn)
            return result
        if result.converter == FALLBACK_NAME:
            result.notes.append("the fallback converter converts on the first call, so the function also ran once")
        if run:
            _run_and_compare(result, fn, converted, outputs, (args, kwargs), rng)
    return result


def _run_plainly(record: Record, fn: types.FunctionType) -> str:
    """Run the recorded frame as plain Python on fresh arguments (as framejit's fallback did after the
    failure); what happened, in words."""
    args, kwargs = record.rebuild_args()
    try:
        out = fn(*args, **kwargs)
    except Exception as exc:
        return (f"as plain Python the frame raised {exception_type_name(type(exc))}: {exc} (if the program "
                "did not, the record lacks something the frame needs)")
    return f"as plain Python the frame ran and returned {_describe_value(out)}"


def _describe_value(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        return f"a tensor {value.dtype}{list(value.shape)}"
    if isinstance(value, (tuple, list)):
        return f"a {type(value).__name__} of {len(value)}"
    return f"a {type(value).__name__}"


def _run_and_compare(
    result: ReplayResult,
    fn: types.FunctionType,
    converted: Callable | None,
    outputs: Any,
    first_args: tuple[tuple, dict],
    rng: tuple[Any, torch.Tensor],
) -> None:
    record = result.record
    if outputs is _NOT_RUN:
        if converted is None:
            result.notes.append("the conversion hook returned no callable, so the converted code could not be run")
            return
        args_c, kwargs_c = record.rebuild_args()
        _set_rng_state(rng)
        try:
            outputs = converted(*args_c, **kwargs_c)
        except Exception as exc:
            result.ran, result.outputs_match = True, False
            result.mismatches.append(f"the converted function raised {exception_type_name(type(exc))}: {exc}")
            return
    else:
        args_c, kwargs_c = first_args
    args_e, kwargs_e = record.rebuild_args()
    _set_rng_state(rng)
    result.ran = True
    try:
        expected = fn(*args_e, **kwargs_e)
    except Exception as exc:
        result.outputs_match = False
        result.mismatches.append(f"eager raised {exception_type_name(type(exc))}: {exc}, the converted function did not")
        return
    mismatches: list[str] = []
    compare_values(outputs, expected, "output", mismatches)
    compare_values(args_c, args_e, "argument", mismatches)
    compare_values(kwargs_c, kwargs_e, "keyword argument", mismatches)
    result.mismatches = mismatches[:_MAX_MISMATCHES]
    result.outputs_match = not mismatches


def compare_values(actual: Any, expected: Any, where: str, mismatches: list[str]) -> None:
    """Append to `mismatches` a line for each place where `actual` differs from `expected`."""
    if len(mismatches) >= _MAX_MISMATCHES:
        return
    if isinstance(expected, torch.Tensor) or isinstance(actual, torch.Tensor):
        _compare_tensors(actual, expected, where, mismatches)
    elif isinstance(expected, torch.nn.Module) and isinstance(actual, torch.nn.Module):
        compare_values(actual.state_dict(), expected.state_dict(), f"{where} state", mismatches)
    elif type(expected) in (tuple, list) and type(actual) is type(expected):
        if len(actual) != len(expected):
            mismatches.append(f"{where}: length {len(actual)} != {len(expected)}")
            return
        for i, (a, e) in enumerate(zip(actual, expected)):
            compare_values(a, e, f"{where}[{i}]", mismatches)
    elif isinstance(expected, dict) and isinstance(actual, dict):
        if list(actual) != list(expected):
            mismatches.append(f"{where}: keys {list(actual)} != {list(expected)}")
            return
        for key in expected:
            compare_values(actual[key], expected[key], f"{where}[{key!r}]", mismatches)
    else:
        try:
            equal = actual == expected
            same = equal if isinstance(equal, bool) else repr(actual) == repr(expected)
        except Exception:
            same = repr(actual) == repr(expected)
        if not same:
            mismatches.append(f"{where}: {actual!r} != {expected!r}"[:300])


def _compare_tensors(actual: Any, expected: Any, where: str, mismatches: list[str]) -> None:
    if not (isinstance(actual, torch.Tensor) and isinstance(expected, torch.Tensor)):
        mismatches.append(f"{where}: {type(actual).__name__} != {type(expected).__name__}")
        return
    if actual.shape != expected.shape or actual.dtype != expected.dtype:
        mismatches.append(
            f"{where}: {actual.dtype}{list(actual.shape)} != {expected.dtype}{list(expected.shape)}"
        )
        return
    a, e = actual.detach().cpu(), expected.detach().cpu()
    if a.is_floating_point() or a.is_complex():
        same = torch.allclose(a, e, rtol=1e-5, atol=1e-6, equal_nan=True)
    else:
        same = torch.equal(a, e)
    if not same:
        if a.is_floating_point() and a.numel():
            diff = (a.double() - e.double()).abs().nan_to_num(nan=float("inf")).max().item()
            mismatches.append(f"{where}: values differ (max abs difference {diff:.3g})")
        else:
            mismatches.append(f"{where}: values differ")


def replay(path_or_record: "Record | str | os.PathLike", *, run: bool = False, trust: bool = False,
           debug_dir: "str | os.PathLike | None" = None) -> ReplayResult:
    """framejit.replay(path, run=False, trust=False, debug_dir=None): load (if given a path: see
    record_file.load_record for trust and debug_dir) and replay a record in this process -- convert the
    recorded frame again and compare the outcome (see replay_record)."""
    for name, value in (("run", run), ("trust", trust)):
        if not isinstance(value, bool):
            raise TypeError(f"framejit.replay({name}=...) must be True or False, got {type(value).__name__} {value!r}")
    if isinstance(path_or_record, Record):
        record = path_or_record
    else:
        record = load_record(path_or_record, trust=trust, debug_dir=debug_dir)
    return replay_record(record, run=run)
