"""Debug outputs switched on by Config: the debug log, the reports written at exit, conversion profiles.

Why this exists: with Config.debug (FRAMEJIT_DEBUG=1) a user should get, without
touching their program, a log file of what framejit did and a table of where
conversion time went; with Config.report_path (FRAMEJIT_REPORT) the HTML report of
framejit.report (or a JSON-lines metrics report when the path ends in .jsonl or
.json); with Config.profile_conversion a cProfile dump per conversion plus a text
summary of it (the 30 most expensive functions by cumulative time).

    install(config)          # call once when a framejit.compile wrapper is created; cheap and idempotent
    with conversion_profile(config, frame_key):   # around one frame's conversion
        ...

Nothing here runs on the per-call fast path. Files: <debug_dir>/framejit/debug.log
(mode 0600) and <debug_dir>/profiles/*.prof (+ .txt), in directories created 0700.
"""

from __future__ import annotations

import atexit
import contextlib
import cProfile
import itertools
import logging
import io
import os
import pstats
import re
import threading
from pathlib import Path
from typing import Iterator

from framejit.config import Config
from framejit.observe.metrics import compile_times, write_report

LOGGER_NAME = "framejit"
log = logging.getLogger(LOGGER_NAME)

_lock = threading.Lock()
_log_files: set[Path] = set()
_exit_reports: set[tuple[bool, Path | None]] = set()
_profile_numbers = itertools.count()
JSON_SUFFIXES = (".jsonl", ".json")
PROFILE_SUMMARY_LINES = 30
# The HTML report's writer, handed over by tools/report/ when framejit is imported: the report reads
# the compile cache, so it sits above the runtime, and this module (which the runtime uses) cannot
# import it.
_html_report = []


def register_html_report(write_html_report) -> None:
    """tools/report/ registers `write_html_report(path)`, which exit_report calls for report_path."""
    _html_report[:] = [write_html_report]


def debug_log_path(config: Config) -> Path:
    return config.debug_dir / "framejit" / "debug.log"


def _private_dir(directory: Path) -> None:
    """Create `directory` and its parent (the debug dir) as 0700 when missing; existing ones are left alone."""
    directory.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    directory.mkdir(mode=0o700, exist_ok=True)


def _open_log_file(path: Path) -> None:
    _private_dir(path.parent)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.close(fd)
    handler = logging.FileHandler(path, mode="a", encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.setLevel(logging.DEBUG)
    log.addHandler(handler)
    log.setLevel(logging.DEBUG)


def install(config: Config) -> Path | None:
    """Set up what `config` asks for (debug log file, exit reports); returns the log path if debugging."""
    if not (config.debug or config.report_path is not None):
        return None
    path = debug_log_path(config) if config.debug else None
    with _lock:
        if path is not None and path not in _log_files:
            _open_log_file(path)
            _log_files.add(path)
        key = (config.debug, config.report_path)
        if key not in _exit_reports:
            _exit_reports.add(key)
            atexit.register(exit_report, config)
    return path


def exit_report(config: Config) -> None:
    """What runs at exit: log the compile times (debug) and write the metrics report (report_path)."""
    if config.debug:
        log.info("compile times at exit:\n%s", compile_times())
        log.info("compile time totals at exit:\n%s", compile_times(aggregate=True))
    if config.report_path is not None:
        try:
            if config.report_path.suffix in JSON_SUFFIXES:
                write_report(config.report_path)
            else:
                (write_html_report,) = _html_report
                write_html_report(config.report_path)
        except Exception as exc:       # at exit, a failed report must not hide the program's own outcome
            log.warning("framejit: could not write the report %s: %s", config.report_path, exc)


@contextlib.contextmanager
def conversion_profile(config: Config, frame_key: str) -> Iterator[Path | None]:
    """Profile the block with cProfile when config.profile_conversion; yields the .prof path (or None)."""
    if not config.profile_conversion:
        yield None
        return
    directory = config.debug_dir / "profiles"
    _private_dir(directory)
    stem = re.sub(r"[^A-Za-z0-9.-]+", "-", frame_key).strip(".-")[:80] or "frame"
    path = directory / f"{stem}-{os.getpid()}-{next(_profile_numbers)}.prof"
    profiler = cProfile.Profile()
    profiler.enable()
    try:
        yield path
    finally:
        profiler.disable()
        profiler.dump_stats(path)
        write_profile_summary(profiler, path.with_suffix(".txt"), frame_key)
        log.debug("framejit: conversion profile of %s written to %s", frame_key, path)


def write_profile_summary(profiler: cProfile.Profile, path: Path, frame_key: str) -> None:
    """A readable summary of a conversion profile: the most expensive functions by cumulative time."""
    out = io.StringIO()
    out.write(f"framejit conversion profile of {frame_key}\n")
    stats = pstats.Stats(profiler, stream=out)
    stats.strip_dirs().sort_stats("cumulative").print_stats(PROFILE_SUMMARY_LINES)
    path.write_text(out.getvalue(), encoding="utf-8")
