"""framejit.report(path): one self-contained HTML page of everything framejit compiled in this process.

Why this exists: explain() answers "what happened on this one call"; the report answers it for a
whole program run -- every converted frame with its source, graphs (code and drawing), guards,
graph breaks (caret-marked source line), recompile reasons, the generated entry code next to the
original source, and a chart of where conversion time went. Write it on demand with
`framejit.report("report.html")`, or at exit with FRAMEJIT_REPORT=report.html.

`framejit.report` is this function; its parts are framejit.tools.report.collect (the data), .html (the
page) and .svg (the drawings). It reads the compile cache, so it sits above the runtime; the debug log
writes it at exit through the writer registered below.
"""
import os
import tempfile
from pathlib import Path

from ...observe import debug_log
from .collect import collect
from .html import render


def report_html(title="framejit report"):
    """The report page as a string."""
    return render(collect(), title=title)


def write_html_report(path, title="framejit report"):
    """Write the report page to `path` (UTF-8, replacing the file); returns the Path. The page is written
    to a new temporary file next to it first, so an existing report is replaced whole or not at all."""
    path = _report_path(path)
    if not isinstance(title, str):
        raise TypeError(f"framejit.report(title=...) must be a str, got {type(title).__name__}")
    text = report_html(title)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.chmod(tmp, path.stat().st_mode & 0o777 if path.exists() else 0o644)   # mkstemp made it 0600
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def _report_path(path):
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"framejit.report(path=...) must be a file path (str or os.PathLike), got "
                        f"{type(path).__name__} {path!r:.60}")
    text = os.fspath(path)
    if isinstance(text, bytes):
        text = os.fsdecode(text)
    if not text.strip():
        raise ValueError("framejit.report(path=...) must not be empty")
    path = Path(text).expanduser()
    if path.is_dir():
        raise IsADirectoryError(f"framejit.report(path=...): {path} is a directory; give the file to write, "
                                f"e.g. {path / 'framejit-report.html'}")
    if not path.parent.is_dir():
        raise FileNotFoundError(f"framejit.report(path=...): the directory {path.parent} does not exist")
    return path


def report(path="framejit-report.html", title="framejit report"):
    """Write the HTML report of everything compiled so far to `path` and return its Path."""
    return write_html_report(path, title)


debug_log.register_html_report(write_html_report)      # for Config.report_path, at exit

__all__ = ["report", "report_html", "write_html_report", "collect"]
