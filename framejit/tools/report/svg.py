"""Inline SVG drawings for the HTML report: a graph's node DAG and the conversion-time chart.

Why this exists: the report must be one self-contained file that any browser shows without
scripts or downloads, so the pictures are plain SVG text built here. The DAG layout is simple on
purpose: each node sits one layer below the deepest node it reads, nodes keep graph order within
a layer, and edges are straight lines with arrowheads.
"""
from html import escape

NODE_W, NODE_H, GAP_X, GAP_Y, PAD = 150, 34, 24, 46, 16
MAX_DRAWN_NODES = 300
OP_COLOURS = {"placeholder": "#dbeafe", "output": "#fde68a", "call_function": "#dcfce7", "call_method": "#fce7f3",
              "call_module": "#ede9fe", "get_attr": "#e5e7eb"}
PART_COLOURS = {"bytecode_analysis": "#94a3b8", "translate (symbolic)": "#3b82f6", "fake_propagation": "#06b6d4",
                "backend_compile": "#f97316", "codegen": "#22c55e", "guard_build": "#a855f7", "setup & other": "#d1d5db"}
# "setup & other": conversion time outside the timed phases (setting up the fake tensor mode -- slow the first
# time, as torch imports its internals then --, binding arguments, records and metrics).


def _clip(text, limit):
    return text if len(text) <= limit else text[:limit - 1] + "…"


def graph_svg(graph):
    """An SVG drawing of a GraphInfo's nodes (layered top to bottom), or None if it is too large."""
    nodes = graph.nodes
    if not nodes or len(nodes) > MAX_DRAWN_NODES:
        return None
    layer = {}
    for n in nodes:
        layer[n.name] = 1 + max((layer[i] for i in n.inputs if i in layer), default=-1)
    rows = {}
    for n in nodes:
        rows.setdefault(layer[n.name], []).append(n)
    pos = {}
    width = max(len(r) for r in rows.values()) * (NODE_W + GAP_X) - GAP_X + 2 * PAD
    for depth, row in rows.items():
        row_w = len(row) * (NODE_W + GAP_X) - GAP_X
        x0 = (width - row_w) / 2
        for k, n in enumerate(row):
            pos[n.name] = (x0 + k * (NODE_W + GAP_X), PAD + depth * (NODE_H + GAP_Y))
    height = PAD * 2 + (max(rows) + 1) * (NODE_H + GAP_Y) - GAP_Y
    parts = [f'<svg class="dag" xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
             f'viewBox="0 0 {width:.0f} {height:.0f}" role="img" aria-label="graph with {len(nodes)} nodes">',
             '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" '
             'orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="#64748b"/></marker></defs>']
    for n in nodes:
        x2, y2 = pos[n.name]
        for i in n.inputs:
            if i not in pos:
                continue
            x1, y1 = pos[i]
            parts.append(f'<line x1="{x1 + NODE_W / 2:.0f}" y1="{y1 + NODE_H:.0f}" x2="{x2 + NODE_W / 2:.0f}" '
                         f'y2="{y2:.0f}" stroke="#64748b" stroke-width="1.2" marker-end="url(#arrow)"/>')
    for n in nodes:
        x, y = pos[n.name]
        fill = OP_COLOURS.get(n.op, "#f3f4f6")
        parts.append(f'<g class="node" data-op="{escape(n.op)}"><title>{escape(n.name)}: {escape(n.label)}</title>'
                     f'<rect x="{x:.0f}" y="{y:.0f}" width="{NODE_W}" height="{NODE_H}" rx="6" fill="{fill}" '
                     f'stroke="#475569"/>'
                     f'<text x="{x + NODE_W / 2:.0f}" y="{y + 14:.0f}" text-anchor="middle" font-size="11" '
                     f'font-family="monospace" font-weight="bold">{escape(_clip(n.name, 20))}</text>'
                     f'<text x="{x + NODE_W / 2:.0f}" y="{y + 27:.0f}" text-anchor="middle" font-size="10" '
                     f'font-family="monospace">{escape(_clip(n.label, 22))}</text></g>')
    parts.append("</svg>")
    return "".join(parts)


def time_chart_svg(rows, bar_width=640):
    """Horizontal stacked bars, one per frame (TimeRow), of where its conversion time went."""
    if not rows:
        return None
    label_w, bar_h, gap, top = 300, 20, 10, 34
    longest = max(r.total for r in rows) or 1.0
    height = top + len(rows) * (bar_h + gap) + 10
    width = label_w + bar_width + 110
    out = [f'<svg class="timechart" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" role="img" aria-label="conversion time per frame">']
    x = 8
    for name, colour in PART_COLOURS.items():           # legend
        out.append(f'<rect x="{x}" y="6" width="12" height="12" fill="{colour}"/>'
                   f'<text x="{x + 16}" y="16" font-size="11" font-family="sans-serif">{escape(name)}</text>')
        x += 16 + 7 * len(name) + 14
    for k, r in enumerate(rows):
        y = top + k * (bar_h + gap)
        out.append(f'<text x="{label_w - 8}" y="{y + 14}" text-anchor="end" font-size="11" font-family="monospace">'
                   f'{escape(_clip(r.frame_key.split(" (")[0], 38))}</text>')
        x = float(label_w)
        for name, seconds in r.parts.items():
            w = bar_width * seconds / longest
            if w <= 0:
                continue
            out.append(f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{bar_h}" '
                       f'fill="{PART_COLOURS.get(name, "#999")}"><title>{escape(name)}: {seconds * 1000:.2f} ms'
                       f'</title></rect>')
            x += w
        out.append(f'<text x="{x + 6:.1f}" y="{y + 14}" font-size="11" font-family="sans-serif">'
                   f'{r.total * 1000:.1f} ms ({r.conversions}x)</text>')
    out.append("</svg>")
    return "".join(out)
