"""framejit.report(path): one self-contained HTML page of everything framejit compiled in this process.

Why this exists: explain() answers "what happened on this one call"; the report answers it for a
whole program run -- every converted frame with its source, graphs (code and drawing), guards,
graph breaks (caret-marked source line), recompile reasons, the generated entry code next to the
original source, and a chart of where conversion time went. Write it on demand with
`framejit.report("report.html")`, or at exit with FRAMEJIT_REPORT=report.html.

Note: `framejit.report` is this function, which hides the package of the same name from
`import framejit.report.x as y`; import its parts with `from framejit.report.html import ...`.
"""
import os
from pathlib import Path

from .collect import collect
from .html import render


def report_html(title="framejit report"):
    """The report page as a string."""
    return render(collect(), title=title)


def write_html_report(path, title="framejit report"):
    """Write the report page to `path` (UTF-8, replacing the file); returns the Path."""
    path = Path(os.fspath(path)).expanduser()
    text = report_html(title)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
    return path


def report(path="framejit-report.html", title="framejit report"):
    """Write the HTML report of everything compiled so far to `path` and return its Path."""
    return write_html_report(path, title)


__all__ = ["report", "report_html", "write_html_report", "collect"]
