"""Render ReportData (tools/report/collect.py) as one self-contained HTML page: no scripts, no external files.

Layout: a summary with the conversion-time chart, a table of contents, then one section per
converted frame: its original source (graph-break lines marked) next to the generated entry code,
its graph breaks with the caret-marked source line, its recompile reasons, and per cache entry the
guards, the graph as readable code and as a drawing.
"""
import datetime
from html import escape

from .svg import graph_svg, time_chart_svg

CSS = """
body{font-family:system-ui,sans-serif;margin:24px;color:#111827;background:#fff}
h1{margin:0 0 4px}h2{margin:32px 0 6px;border-bottom:2px solid #e5e7eb;padding-bottom:4px}
h3{margin:18px 0 6px}h4{margin:12px 0 4px;color:#374151}
.muted{color:#6b7280;font-size:13px}
.summary{display:flex;gap:14px;flex-wrap:wrap;margin:14px 0}
.stat{background:#f3f4f6;border-radius:8px;padding:8px 14px}.stat b{display:block;font-size:22px}
pre{background:#f8fafc;border:1px solid #e5e7eb;border-radius:6px;padding:8px;overflow:auto;font-size:12px;margin:4px 0}
.side{display:grid;grid-template-columns:1fr 1fr;gap:12px}.side>div{min-width:0}
.src span.ln{color:#9ca3af;display:inline-block;width:3.5em}
.src .brk{background:#fee2e2}
.break{border-left:4px solid #ef4444;padding-left:8px;margin:8px 0}
.recompile{border-left:4px solid #f59e0b;padding-left:8px;list-style:none}
.badge{display:inline-block;border-radius:10px;padding:1px 8px;font-size:12px;margin-left:6px;background:#e0e7ff}
.badge.eager{background:#fee2e2}.badge.resume{background:#dcfce7}
ul.guards{font-family:monospace;font-size:12px}
.dagbox{overflow:auto;border:1px solid #e5e7eb;border-radius:6px;max-height:640px}
table.toc{border-collapse:collapse;font-size:13px}table.toc td,table.toc th{padding:3px 10px;border-bottom:1px solid #eee;text-align:left}
"""


def render(data, title="framejit report"):
    created = datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S")
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           f"<title>{escape(title)}</title><style>{CSS}</style></head><body>",
           f"<h1>{escape(title)}</h1><div class='muted'>written {created}</div>", _summary(data)]
    chart = time_chart_svg(data.times)
    out.append("<h2 id='time'>Where conversion time went</h2>")
    out.append(chart if chart else "<p class='muted'>No conversions were timed.</p>")
    out.append("<p class='muted'>Exclusive times per frame, summed over its conversions: symbolic translation "
               "excludes fake-tensor propagation, codegen excludes guard building; setup &amp; other is the rest (creating "
               "the fake tensor mode, slow on the first conversion as torch imports its compiler internals then; "
               "binding arguments; metrics and records).</p>")
    out.append(_toc(data))
    for frame in data.frames:
        out.append(_frame(frame))
    out.append("</body></html>")
    return "\n".join(out)


def _summary(data):
    stats = [("frames", len(data.frames)), ("graphs", data.graph_count), ("graph breaks", data.break_count),
             ("recompiles", data.recompile_count), ("conversion time", f"{data.total_seconds * 1000:.1f} ms")]
    cells = "".join(f"<div class='stat'><b>{escape(str(v))}</b>{escape(k)}</div>" for k, v in stats)
    return f"<div class='summary' id='summary'>{cells}</div>"


def _toc(data):
    if not data.frames:
        return "<p>Nothing has been compiled in this process yet.</p>"
    rows = ["<table class='toc'><tr><th>frame</th><th>where</th><th>cache entries</th><th>breaks</th>"
            "<th>recompiles</th></tr>"]
    for f in data.frames:
        rows.append(f"<tr><td><a href='#{f.anchor}'>{escape(f.name)}</a></td>"
                    f"<td>{escape(f.filename)}:{f.firstlineno}</td>"
                    f"<td>{sum(1 for e in f.entries if e.kind == 'entry')}</td>"
                    f"<td>{sum(len(e.breaks) for e in f.entries)}</td><td>{len(f.recompile_reasons)}</td></tr>")
    rows.append("</table>")
    return "".join(rows)


def _frame(f):
    badges = ""
    if f.origin:
        badges += f"<span class='badge resume'>resumes {escape(f.origin)} after a graph break</span>"
    if f.eager_reason:
        badges += "<span class='badge eager'>runs as plain Python</span>"
    out = [f"<section class='frame' id='{f.anchor}'>",
           f"<h2>{escape(f.name)}{badges}</h2>",
           f"<div class='muted'>{escape(f.filename)}:{f.firstlineno} &middot; {f.conversions} conversion(s)</div>"]
    if f.eager_reason:
        out.append(f"<p><b>Runs as plain Python:</b> {escape(f.eager_reason)}</p>")
    breaks = {}
    for b in (b for e in f.entries for b in e.breaks):      # the same break in several cache entries: once
        key = (b.reason, b.where)
        breaks[key] = (breaks[key][0] + 1, b) if key in breaks else (1, b)
    if breaks:
        out.append("<h3>Graph breaks</h3>")
        for count, b in breaks.values():
            hint = f"<div class='muted'>hint: {escape(b.hint)}</div>" if getattr(b, "hint", None) else ""
            times = f" <span class='muted'>(in {count} cache entries)</span>" if count > 1 else ""
            out.append(f"<div class='break'><b>{escape(b.reason)}</b>{times}<pre>{escape(b.where or '')}</pre>"
                       f"{hint}</div>")
    if f.recompile_reasons:
        out.append("<h3>Recompiles</h3><ul class='recompile'>")
        out.extend(f"<li>{escape(r)}</li>" for r in f.recompile_reasons)
        out.append("</ul>")
    for i, e in enumerate(f.entries, 1):
        out.append(_entry(f, e, i))
    out.append("</section>")
    return "\n".join(out)


def _source_html(f):
    marks = f.break_lines
    lines = []
    for lineno, text in f.source_lines:
        cls = " class='brk'" if lineno in marks else ""
        lines.append(f"<span{cls}><span class='ln'>{lineno}</span>{escape(text)}</span>")
    return "<pre class='src original'>" + "\n".join(lines) + "</pre>" if lines else \
        "<p class='muted'>(source not available)</p>"


def _entry(f, e, i):
    title = f"Cache entry {i}" if e.kind == "entry" else f"Conversion {i}: {e.kind}"
    out = [f"<h3>{escape(title)}</h3>"]
    if e.recompile_reason:
        out.append(f"<p class='recompile'>{escape(e.recompile_reason)}</p>")
    if e.kind != "entry" and e.reason:
        out.append(f"<p>{escape(e.reason)}</p>")
    if e.record_path:
        out.append(f"<p>Execution record: <code>{escape(e.record_path)}</code> (replay with "
                   f"<code>python -m framejit replay {escape(e.record_path)}</code>)</p>")
    transformed = escape(e.transformed_source) if e.transformed_source else "(no generated code)"
    out.append("<div class='side'><div><h4>Original source</h4>" + _source_html(f) + "</div>"
               f"<div><h4>Transformed code (generated entry)</h4><pre class='transformed'>{transformed}</pre>"
               "</div></div>")
    if e.guards:
        out.append(f"<h4>Guards ({len(e.guards)})</h4><ul class='guards'>")
        out.extend(f"<li>{escape(g)}</li>" for g in e.guards)
        out.append("</ul>")
    if e.graph is not None:
        out.append(f"<h4>Graph ({e.graph.op_count} ops, {len(e.graph.nodes)} nodes)</h4>")
        out.append(f"<pre class='graphcode'>{escape(e.graph.code)}</pre>")
        drawing = graph_svg(e.graph)
        out.append(f"<div class='dagbox'>{drawing}</div>" if drawing else
                   f"<p class='muted'>The graph has {len(e.graph.nodes)} nodes, too many to draw.</p>")
    return "\n".join(out)
