"""framejit's settings as one immutable, hashable value.

Why this exists: the compile cache keys converted code on the settings it was
converted under, so settings must be a value (frozen, hashable, comparable),
not a bag of mutable module globals read at call time.

    Config()                      # the defaults (debug_dir honours $FRAMEJIT_DEBUG_DIR)
    Config.from_env()             # defaults overlaid with the FRAMEJIT_* variables
    Config.from_env(debug=True)   # ... and explicit overrides, which win over the environment
    dataclasses.replace(cfg, recompile_limit=2)

Environment variables read by `Config.from_env`:

    FRAMEJIT_DEBUG_DIR   debug_dir (records, logs, profiles); default ~/.cache/framejit
    FRAMEJIT_RECORD      record_all: 1 writes a record for every conversion, not just failures
    FRAMEJIT_DEBUG       debug: 1 writes <debug_dir>/framejit/debug.log and a compile-time report at exit
    FRAMEJIT_REPORT      report_path: the HTML report (framejit.report) written at exit; a path ending
                         in .jsonl or .json gets the compile metrics as JSON lines instead
    FRAMEJIT_CHECK_ACCURACY  check_accuracy: 1 checks each new graph's first call against eager
    FRAMEJIT_TIERED      tiered: 1 lets a graph's fx code answer while its library builds (backends/tiered.py)
    FRAMEJIT_COMPILE_BEHIND  compile_behind: 0 makes a graph's first call wait for inductor's compile

Every field is validated on construction; a wrong type raises TypeError and a
wrong value raises ValueError, both naming the field and what was given.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DEBUG_DIR_ENV = "FRAMEJIT_DEBUG_DIR"
RECORD_ENV = "FRAMEJIT_RECORD"
DEBUG_ENV = "FRAMEJIT_DEBUG"
REPORT_ENV = "FRAMEJIT_REPORT"
CHECK_ACCURACY_ENV = "FRAMEJIT_CHECK_ACCURACY"
TIERED_ENV = "FRAMEJIT_TIERED"
COMPILE_BEHIND_ENV = "FRAMEJIT_COMPILE_BEHIND"

_TRUE_WORDS = frozenset({"1", "true", "yes", "on"})
_FALSE_WORDS = frozenset({"0", "false", "no", "off", ""})


def _default_debug_dir() -> Path:
    configured = _env_path(DEBUG_DIR_ENV)
    if configured:
        return Path(configured).expanduser()
    return Path("~/.cache/framejit").expanduser()


def _env_path(name: str) -> str | None:
    """A path from the environment: None when unset or empty; a value of blanks is an error naming it."""
    raw = os.environ.get(name)
    if not raw:
        return None
    if not raw.strip() or "\0" in raw:
        raise ValueError(f"environment variable {name} must be a path (got {raw!r}); unset it for the default")
    return raw


def check_settings(caller: str, settings: dict[str, Any], also: tuple[str, ...] = ()) -> None:
    """Raise TypeError naming the keyword arguments of `caller` that are neither Config fields nor in
    `also` (the caller's own keywords), with the closest known name when one is close."""
    known = sorted({f.name for f in dataclasses.fields(Config)})
    unknown = [name for name in settings if name not in known]
    if not unknown:
        return
    name = unknown[0]
    close = difflib.get_close_matches(name, [*also, *known], n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    takes = f"{', '.join(also)} and the Config settings" if also else "the Config settings"
    raise TypeError(f"{caller}() got an unexpected keyword argument {name!r}{hint}; it takes {takes}: "
                    f"{', '.join(known)}")


@dataclass(frozen=True)
class Config:
    """Settings for one `framejit.compile` wrapper (hashable: the compile cache keys on it)."""

    recompile_limit: int = 8
    """How many converted versions one frame may accumulate before framejit stops converting it."""
    debug_dir: Path = field(default_factory=_default_debug_dir)
    """Where records (records/), the debug log (framejit/debug.log) and profiles (profiles/) go."""
    record_all: bool = False
    """Write an execution record for every conversion, successful or not."""
    record_on_failure: bool = True
    """Write an execution record when a conversion fails."""
    debug: bool = False
    """Log to <debug_dir>/framejit/debug.log and log compile times at exit."""
    profile_conversion: bool = False
    """Run each conversion under cProfile; stats (.prof) and a text summary (.txt) go to <debug_dir>/profiles/."""
    metrics_size: int = 64
    """How many CompilationMetrics entries the metrics store keeps (oldest dropped first)."""
    report_path: Path | None = None
    """If set, framejit.report's HTML page is written there at exit (JSON lines of the compile metrics
    if the path ends in .jsonl or .json)."""
    inline_depth: int = 16
    """How deep the translator inlines calls to user functions before giving up."""
    dynamic: bool | None = None
    """Symbolic sizes (framejit/shapes/): None starts static and, when a call misses because a size or a
    Python int changed, converts again with it symbolic (automatic dynamic); True makes every input
    dimension symbolic from the start; False never does (only framejit.mark_dynamic's dims)."""
    capture_data_dependent: bool = False
    """Keep ops whose output size or value depends on tensor data in the graph, as unbacked symbols of
    the ShapeEnv (torch.compile's capture_scalar_outputs and capture_dynamic_output_shape_ops together):
    `x.nonzero()`, `x[mask]`, `torch.unique`, `torch.where(mask)`, `.item()` and what it feeds (`torch.zeros(
    n.item())`, `x[:k.item()]`). A Python branch on such a value is still a graph break. False (the
    default): each of those ops is a graph break."""
    check_accuracy: bool = False
    """Run each new graph's first call against its fx code on cloned inputs (framejit/accuracy/): where
    they differ, warn (framejit.AccuracyWarning) naming the graph and the first differing output, shrink
    the graph to its smallest failing subgraph and write a record under <debug_dir>/accuracy/."""
    tiered: bool = False
    """Tiered first calls (backends/tiered.py): with backend="inductor" and AOTInductor libraries on, a graph
    whose library is to be built in the background runs its fx code (eager's ops) until the library is
    stored, then the library; its first call waits for no inductor compile. Off by default: the calls before
    the switch run at eager's speed. With another backend, or libraries off, it changes nothing."""
    compile_behind: bool = True
    """Compile behind the first call (backends/compile_behind.py): with backend="inductor", a static CPU graph
    (inference, or training: its first backward is eager's) answers its first call with its fx code (eager's
    ops) while inductor compiles it on a worker thread; its second call waits for that compile if it has not
    ended, and every later call runs the compiled code. False: the first call waits for the compile
    (torch.compile's way). Not under fullgraph=True or check_accuracy, and not for a graph converted under
    inference mode, autocast or a dispatch mode (those compile in the calling thread); tiered=True takes
    precedence."""

    def __post_init__(self) -> None:
        _check_int(self, "recompile_limit", minimum=1)
        _check_int(self, "metrics_size", minimum=0)
        _check_int(self, "inline_depth", minimum=0)
        for name in ("record_all", "record_on_failure", "debug", "profile_conversion", "capture_data_dependent",
                     "check_accuracy", "tiered", "compile_behind"):
            _check_bool(self, name)
        if self.dynamic is not None and not isinstance(self.dynamic, bool):
            raise TypeError(f"Config.dynamic must be None, True or False (got {type(self.dynamic).__name__} "
                            f"{self.dynamic!r})")
        object.__setattr__(self, "debug_dir", _as_path("debug_dir", self.debug_dir))
        if self.report_path is not None:
            object.__setattr__(self, "report_path", _as_path("report_path", self.report_path))

    @classmethod
    def from_env(cls, **overrides: Any) -> "Config":
        """The defaults, overlaid with the FRAMEJIT_* environment variables, then with `overrides`."""
        check_settings("Config.from_env", overrides)
        values: dict[str, Any] = {}
        debug_dir = _env_path(DEBUG_DIR_ENV)
        if debug_dir:
            values["debug_dir"] = debug_dir
        record = _env_flag(RECORD_ENV)
        if record is not None:
            values["record_all"] = record
        debug = _env_flag(DEBUG_ENV)
        if debug is not None:
            values["debug"] = debug
        check_accuracy = _env_flag(CHECK_ACCURACY_ENV)
        if check_accuracy is not None:
            values["check_accuracy"] = check_accuracy
        tiered = _env_flag(TIERED_ENV)
        if tiered is not None:
            values["tiered"] = tiered
        behind = _env_flag(COMPILE_BEHIND_ENV)
        if behind is not None:
            values["compile_behind"] = behind
        report = _env_path(REPORT_ENV)
        if report:
            values["report_path"] = report
        values.update(overrides)
        return cls(**values)

    @property
    def records_dir(self) -> Path:
        """The directory execution records are written to."""
        return self.debug_dir / "records"


def _env_flag(name: str) -> bool | None:
    raw = os.environ.get(name)
    if raw is None:
        return None
    word = raw.strip().lower()
    if word in _TRUE_WORDS:
        return True
    if word in _FALSE_WORDS:
        return False
    raise ValueError(f"environment variable {name} must be 0 or 1 (or false/true, no/yes, off/on; got {raw!r})")


def _check_int(config: Config, name: str, *, minimum: int) -> None:
    value = getattr(config, name)
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"Config.{name} must be an int (got {type(value).__name__} {value!r})")
    if value < minimum:
        raise ValueError(f"Config.{name} must be >= {minimum} (got {value})")


def _check_bool(config: Config, name: str) -> None:
    value = getattr(config, name)
    if not isinstance(value, bool):
        raise TypeError(f"Config.{name} must be True or False (got {type(value).__name__} {value!r})")


def _as_path(name: str, value: Any) -> Path:
    if not isinstance(value, (str, os.PathLike)):
        raise TypeError(f"Config.{name} must be a path (str or os.PathLike), got {type(value).__name__} {value!r}")
    text = os.fspath(value)
    if isinstance(text, bytes):
        raise TypeError(f"Config.{name} must be a text path, got bytes {value!r}")
    if not text.strip():
        raise ValueError(f"Config.{name} must not be empty")
    return Path(text).expanduser()
