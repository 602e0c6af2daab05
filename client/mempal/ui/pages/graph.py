"""Knowledge graph: entities and their relations as a picture, every fact with its validity interval, and one
entity's timeline."""

from __future__ import annotations

from datetime import date
from typing import Any

from starlette.requests import Request

from mempal.ui.frame import Ctx, drawer_href, entity_href, message, number, page, section, table, tag
from mempal.ui.html import Markup, el
from mempal.ui.svg import interval, picture

DEFAULT_LIMIT = 40  # entities drawn by default: past that a picture stops being readable
FACT_ROWS = 80  # rows of the facts table under the picture (the picture has them all)


def _fact_rows(edges: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    rows = []
    for e in edges:
        src = e.get("source_drawer")
        rows.append((
            el("a", e["subject"], href=entity_href(e["subject"])), el("code", e["predicate"]),
            el("a", e["object"], href=entity_href(e["object"])), interval(e),
            tag("valid", "ok") if e.get("current") else tag("expired", "bad"),
            f"{float(e.get('confidence') or 0):.2f}",
            el("a", "drawer", href=drawer_href(str(src))) if src and _is_id(str(src)) else (src or ""),
        ))
    return rows


def _is_id(value: str) -> bool:
    parts = value.split("-")
    return len(value) == 36 and [len(p) for p in parts] == [8, 4, 4, 4, 12]


def _form(entity: str, as_of: str, expired: bool, limit: int, names: list[str]) -> Markup:
    return el("form",
              el("label", "entity ", el("input", type="text", name="entity", value=entity, list="entities",
                                        placeholder="any")),
              el("datalist", [el("option", value=n) for n in names], id="entities"),
              el("label", "as of ", el("input", type="date", name="as_of", value=as_of)),
              el("label", el("input", type="checkbox", name="expired", value="1", checked=expired),
                 " include expired facts", class_="check"),
              el("label", "entities ", el("input", type="number", name="limit", value=str(limit), min="1",
                                          max="500")),
              el("button", "Show", type="submit"), method="get", action="/graph", class_="inline")


async def render(request: Request, ctx: Ctx) -> str:
    q = request.query_params
    entity = q.get("entity", "").strip()
    as_of = q.get("as_of", "").strip()
    expired = q.get("expired") == "1"
    try:
        limit = min(500, max(1, int(q.get("limit") or DEFAULT_LIMIT)))
    except ValueError:
        limit = DEFAULT_LIMIT

    def work(c: Any) -> tuple[dict[str, Any], dict[str, Any] | None]:
        graph = c.kg_graph(entity=entity or None, as_of=as_of or None, include_expired=expired, limit=limit)
        timeline = c.kg("timeline", entity=entity) if entity else None
        return graph, timeline

    graph, timeline = await ctx.daemon.run(work)
    nodes, edges = graph.get("nodes", []), graph.get("edges", [])
    body: list[Any] = [
        _form(entity, as_of, expired, limit, [n["name"] for n in nodes]),
        el("p", f"{number(graph.get('entities'))} entities and {number(graph.get('triples'))} facts"
                + (" valid" + (f" on {as_of}" if as_of else " now") if not expired else " (expired included)")
                + (f"; the {len(nodes)} most connected are drawn" if graph.get("truncated") else ""),
           class_="lead"),
    ]
    if entity and not nodes:
        body.append(message(f"No facts about {entity!r}" + ("" if expired else " valid now: try including "
                                                             "expired facts") + "."))
    if nodes:
        body.append(el("div", picture(graph), class_="card picture"))
        body.append(el("p", el("span", "—", class_="key current"), " valid  ", el("span", "- -", class_="key expired"),
                       " expired · click an entity for its facts and timeline", class_="muted"))
    if timeline is not None:
        today = date.today().isoformat()
        rows = _fact_rows([{**t, "current": t.get("valid_to") is None or str(t["valid_to"]) > today}
                           for t in timeline.get("triples", [])])
        body.append(section(f"Timeline of {graph.get('entity') or entity}",
                            table(("subject", "predicate", "object", "valid", "", "confidence", "source"), rows,
                                  empty="No facts, valid or expired, name this entity.")))
    if not graph.get("triples") and not entity:
        body.append(message("The graph is empty. Agents add facts with the kg tool; people with "
                            "`mempal kg add SUBJECT PREDICATE OBJECT --valid-from DATE`."))
    shown = edges[:FACT_ROWS]
    body.append(section("Facts drawn", table(("subject", "predicate", "object", "valid", "", "confidence", "source"),
                                             _fact_rows(shown), empty="No facts to draw."),
                        el("p", f"and {number(len(edges) - len(shown))} more: choose an entity to see its own",
                           class_="muted") if len(edges) > len(shown) else None))
    return page("Knowledge graph", *body, active="/graph")
