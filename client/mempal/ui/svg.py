"""The knowledge graph as a picture: an SVG drawn on the server (no script).

Layout is deterministic and linear in the graph's size, so the page stays fast: around a chosen entity, its
neighbours on a ring (two rings past ``RING``); otherwise every entity on a circle in breadth-first order from
the most connected one, so that related entities sit next to each other. Arrows go from subject to object,
labelled with the predicate and (in small graphs) the validity interval; facts no longer valid are dashed;
every node links to that entity's own picture and timeline.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

from mempal.ui.frame import clip, entity_href
from mempal.ui.html import Markup, el

WIDTH, HEIGHT = 960, 720
NODE_R = 9
RING = 18  # neighbours on one ring around a centre
DATED_EDGES = 30  # up to this many facts, each arrow also shows its validity interval


def _order(names: list[str], edges: list[dict[str, Any]]) -> list[str]:
    """Breadth-first from the most connected entity (``names`` is already most connected first)."""
    near: dict[str, list[str]] = defaultdict(list)
    for e in edges:
        s, o = e["subject"].casefold(), e["object"].casefold()
        near[s].append(o)
        near[o].append(s)
    rank = {n.casefold(): i for i, n in enumerate(names)}
    by_key = {n.casefold(): n for n in names}
    seen: set[str] = set()
    out: list[str] = []
    for start in names:
        queue = [start.casefold()]
        while queue:
            k = queue.pop(0)
            if k in seen or k not in by_key:
                continue
            seen.add(k)
            out.append(by_key[k])
            queue += sorted((n for n in near[k] if n not in seen), key=lambda n: rank.get(n, 1 << 30))
    return out


def layout(nodes: list[dict[str, Any]], edges: list[dict[str, Any]]) -> dict[str, tuple[float, float]]:
    """Name (case-folded) -> (x, y) in the picture."""
    cx, cy = WIDTH / 2, HEIGHT / 2
    centre = next((n["name"] for n in nodes if n.get("centre")), None)
    pos: dict[str, tuple[float, float]] = {}
    names = [n["name"] for n in nodes]
    if centre is not None:
        pos[centre.casefold()] = (cx, cy)
        rest = [n for n in names if n != centre]
        rings = [rest[:RING], rest[RING:]] if len(rest) > RING else [rest]
        for depth, ring in enumerate(rings, 1):
            r = min(cx, cy) * (0.45 if depth == 1 and len(rings) > 1 else 0.78)
            for i, name in enumerate(ring):
                a = 2 * math.pi * i / max(1, len(ring)) - math.pi / 2 + depth * 0.2
                pos[name.casefold()] = (cx + r * math.cos(a), cy + r * math.sin(a))
        return pos
    ordered = _order(names, edges)
    r = min(cx, cy) * 0.8 if len(ordered) > 1 else 0.0
    for i, name in enumerate(ordered):
        a = 2 * math.pi * i / max(1, len(ordered)) - math.pi / 2
        pos[name.casefold()] = (cx + r * math.cos(a), cy + r * math.sin(a))
    return pos


def interval(e: dict[str, Any]) -> str:
    start, end = e.get("valid_from"), e.get("valid_to")
    return f"{start or 'always'} → {end or 'now'}"


def _edge(e: dict[str, Any], pos: dict[str, tuple[float, float]], offset: int, dated: bool) -> Markup | None:
    a, b = pos.get(e["subject"].casefold()), pos.get(e["object"].casefold())
    if a is None or b is None or a == b:
        return None
    (x1, y1), (x2, y2) = a, b
    d = math.hypot(x2 - x1, y2 - y1) or 1.0
    ux, uy = (x2 - x1) / d, (y2 - y1) / d
    sx, sy, tx, ty = x1 + ux * NODE_R, y1 + uy * NODE_R, x2 - ux * (NODE_R + 4), y2 - uy * (NODE_R + 4)
    mx, my = (x1 + x2) / 2 - uy * 12 * offset, (y1 + y2) / 2 + ux * 12 * offset
    kind = "current" if e.get("current") else "expired"
    tip = f"{e['subject']} {e['predicate']} {e['object']} ({interval(e)})"
    return el("g", el("title", tip),
              el("line", x1=f"{sx:.1f}", y1=f"{sy:.1f}", x2=f"{tx:.1f}", y2=f"{ty:.1f}", class_=f"edge {kind}",
                 marker_end="url(#arrow)"),
              el("text", clip(e["predicate"], 28), x=f"{mx:.1f}", y=f"{my - 3:.1f}", class_="pred",
                 text_anchor="middle"),
              el("text", interval(e), x=f"{mx:.1f}", y=f"{my + 9:.1f}", class_="when", text_anchor="middle")
              if dated else None,
              class_="fact")


def picture(graph: dict[str, Any]) -> Markup:
    nodes, edges = graph.get("nodes", []), graph.get("edges", [])
    pos = layout(nodes, edges)
    seen: dict[tuple[str, str], int] = defaultdict(int)
    lines = []
    for e in edges:
        pair = (e["subject"].casefold(), e["object"].casefold())
        key = (min(pair), max(pair))
        lines.append(_edge(e, pos, seen[key], len(edges) <= DATED_EDGES))
        seen[key] += 1
    top = max((int(n.get("degree") or 1) for n in nodes), default=1)
    dots = []
    for n in nodes:
        x, y = pos[n["name"].casefold()]
        r = NODE_R + 6 * math.sqrt(int(n.get("degree") or 1) / top)
        right = x >= WIDTH / 2
        dots.append(el("a", el("title", f"{n['name']}: {n.get('degree')} facts"),
                       el("circle", cx=f"{x:.1f}", cy=f"{y:.1f}", r=f"{r:.1f}",
                          class_="node centre" if n.get("centre") else "node"),
                       el("text", clip(n["name"], 32), x=f"{x + (r + 4 if right else -r - 4):.1f}", y=f"{y + 4:.1f}",
                          text_anchor="start" if right else "end", class_="label"),
                       href=entity_href(n["name"]), class_="entity"))
    arrow = el("marker", el("path", d="M0,0 L10,5 L0,10 z"), id="arrow", viewBox="0 0 10 10", refX="9", refY="5",
               markerWidth="7", markerHeight="7", orient="auto-start-reverse")
    return el("svg", el("defs", arrow), el("g", lines, class_="edges"), el("g", dots, class_="nodes"),
              viewBox=f"0 0 {WIDTH} {HEIGHT}", role="img", aria_label="knowledge graph", class_="graph",
              xmlns="http://www.w3.org/2000/svg")
