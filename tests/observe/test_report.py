"""framejit.report(path): the self-contained HTML page, checked as text and in a real headless browser.

The browser test needs Debian's chromium at /usr/bin/chromium (`make browser` installs it) and skips
with the reason otherwise. With FRAMEJIT_UPDATE_SCREENSHOT=1 it also refreshes docs/report.png.
"""

import html.parser
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import framejit
from framejit.observe.metrics import clear_metrics
from framejit.tools.report.collect import collect
from framejit.tools.report.svg import MAX_DRAWN_NODES, graph_svg

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin1 = torch.nn.Linear(8, 16)
        self.lin2 = torch.nn.Linear(16, 4)

    def forward(self, x):
        h = torch.relu(self.lin1(x))
        print("logging <in the middle> & more")
        return torch.softmax(self.lin2(h), dim=-1)


@pytest.fixture
def compiled_program(tmp_path):
    """A module with a graph break, run with two batch sizes (so it also recompiles)."""
    clear_metrics()
    torch.manual_seed(0)
    model = framejit.compile(Block(), debug_dir=tmp_path, dynamic=False)  # static sizes: each new size recompiles
    model(torch.randn(2, 8))
    model(torch.randn(5, 8))
    yield model
    clear_metrics()


class TextAndTags(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.text, self.ids = [], [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.ids.extend(v for k, v in attrs if k == "id")

    def handle_data(self, data):
        self.text.append(data)


def parse(text):
    parser = TextAndTags()
    parser.feed(text)
    return parser, "".join(parser.text)


def test_collect_has_frames_entries_and_times(compiled_program):
    data = collect()
    forward = next(f for f in data.frames if f.name == "Block.forward")
    resume = next(f for f in data.frames if f.origin == "Block.forward")
    assert len(forward.entries) == 2 and len(resume.entries) == 2
    assert forward.recompile_reasons == ["recompiled Block.forward: x.shape[0] changed 2 -> 5"]
    assert any("print(" in text for _, text in forward.source_lines)
    (break_line,) = forward.break_lines
    assert "print(" in dict(forward.source_lines)[break_line]
    assert data.graph_count == 4 and data.break_count == 2 and data.recompile_count == 2
    row = next(r for r in data.times if r.frame_key.startswith("Block.forward"))
    assert row.conversions == 2 and abs(sum(row.parts.values()) - row.total) < 1e-6


def test_report_page_content(compiled_program, tmp_path):
    path = framejit.report(tmp_path / "report.html")
    text = path.read_text(encoding="utf-8")
    parser, visible = parse(text)
    assert "<script" not in text and "http://" not in text.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "Block.forward" in visible and "resumes Block.forward after a graph break" in visible
    assert "h = torch.relu(self.lin1(x))" in visible                      # original source
    assert "def __fj_entry(self, x):" in visible                           # transformed code
    assert "print() writes to stdout" in visible and "^^^^" in visible     # the break, caret-marked
    assert 'print("logging <in the middle> & more")' in visible            # escaped, shown verbatim
    assert "recompiled Block.forward: x.shape[0] changed 2 -> 5" in visible
    assert "x: Tensor Tensor float32 cpu shape=[2, 8]" in visible          # guards
    assert "def forward(self" in visible and "torch.relu" in visible       # graph code
    assert parser.tags.count("svg") >= 5                                   # 4 graph drawings + the time chart
    assert "Where conversion time went" in visible and "fake_propagation" in visible
    assert "summary" in parser.ids and "frame-0" in parser.ids


def test_empty_report(tmp_path):
    framejit.reset()
    clear_metrics()
    text = framejit.report(tmp_path / "empty.html").read_text()
    assert "Nothing has been compiled in this process yet." in text


def test_large_graphs_are_not_drawn():
    from framejit.tools.report.collect import GraphInfo, GraphNode
    nodes = [GraphNode(f"n{i}", "call_function", "add", [f"n{i - 1}"] if i else []) for i in range(MAX_DRAWN_NODES + 1)]
    assert graph_svg(GraphInfo("", nodes, len(nodes))) is None
    assert graph_svg(GraphInfo("", nodes[:3], 3)).count("<rect") == 3


@pytest.mark.parametrize("name", ["report.html", "metrics.jsonl"])
def test_framejit_report_at_exit(tmp_path, name):
    script = """
import torch, framejit
def f(x):
    y = x.cos()
    print("break")
    return y + 1
framejit.compile(f)(torch.ones(2))
"""
    out = tmp_path / name
    env = dict(os.environ, PYTHONPATH=str(REPO), FRAMEJIT_REPORT=str(out), FRAMEJIT_DEBUG_DIR=str(tmp_path))
    result = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True,
                            timeout=240)
    assert result.returncode == 0, result.stderr
    text = out.read_text()
    if name.endswith(".html"):
        assert text.startswith("<!DOCTYPE html>") and "print() writes to stdout" in text
    else:
        kinds = [json.loads(line)["kind"] for line in text.splitlines()]
        assert kinds[0] == "compilation" and kinds[-1] == "compile_times"


def run_chromium(*args):
    return subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           "--disable-dev-shm-usage", *args], capture_output=True, text=True, timeout=180)


def test_report_in_a_headless_browser(compiled_program, tmp_path):
    if not os.access(CHROMIUM, os.X_OK):
        pytest.skip(f"{CHROMIUM} is not installed (run `make browser` to install Debian's chromium)")
    page = framejit.report(tmp_path / "report.html")
    dom = run_chromium("--dump-dom", page.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    parser, visible = parse(dom.stdout)                 # the DOM as the browser built it
    assert "Block.forward" in visible and "recompiled Block.forward: x.shape[0] changed 2 -> 5" in visible
    assert "def __fj_entry(self, x):" in visible and "print() writes to stdout" in visible
    assert parser.tags.count("svg") >= 5 and parser.tags.count("rect") >= 10
    if os.environ.get("FRAMEJIT_UPDATE_SCREENSHOT") == "1":
        shot = REPO / "docs" / "report.png"
    else:
        shot = tmp_path / "report.png"
    taken = run_chromium("--window-size=1280,1600", f"--screenshot={shot}", page.as_uri())
    assert taken.returncode == 0, taken.stderr[-2000:]
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000       # a real, non-blank picture



def test_bad_report_arguments_are_named_and_nothing_is_left_behind(tmp_path):
    with pytest.raises(TypeError, match=r"framejit.report\(path=...\) must be a file path"):
        framejit.report(3)
    with pytest.raises(IsADirectoryError, match=r"framejit.report\(path=...\): .* is a directory"):
        framejit.report(tmp_path)
    with pytest.raises(FileNotFoundError, match=r"the directory .*missing does not exist"):
        framejit.report(tmp_path / "missing" / "r.html")
    with pytest.raises(TypeError, match=r"framejit.report\(title=...\) must be a str"):
        framejit.report(tmp_path / "r.html", title=3)
    with pytest.raises(ValueError, match="must not be empty"):
        framejit.report("")
    assert list(tmp_path.iterdir()) == []
    # a file the user has next to the report, named like the old temporary file, is not touched
    (tmp_path / "r.html.tmp").write_text("mine")
    framejit.report(tmp_path / "r.html")
    assert (tmp_path / "r.html.tmp").read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.html", "r.html.tmp"]
    assert (tmp_path / "r.html").stat().st_mode & 0o777 == 0o644
