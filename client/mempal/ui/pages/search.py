"""Search: the CLI's search with every one of its filters (the form is built from the method's declaration, so
a filter added to the table appears here: a list of choices as checkboxes, one choice (an ``enum``) as radio
buttons), hits with their citations, each opening its drawer. ``format=index`` hits are one line each (what the
daemon answers: title, wing/room, date, score, the drawer's size), without an excerpt or a source."""

from __future__ import annotations

import time
from typing import Any

from starlette.requests import Request

from mempal.methods import METHODS
from mempal.methods.spec import Param
from mempal.protocol import INVALID_PARAMS, RpcError
from mempal.ui.frame import Ctx, clip, drawer_href, message, number, page, session_href, stamp, tag, timeline_href
from mempal.ui.html import Markup, el, join

SEARCH = METHODS["search"]
FILTERS: tuple[Param, ...] = tuple(p for p in SEARCH.params if p.name not in ("query", "dense_weight"))
EXCERPT = 600
HINTS = {"since": "7d, 12h or 2026-01-31", "until": "1d or 2026-02-28", "limit": "10"}


class Names:
    """The wing, room and machine names the form offers as suggestions, from ``status``, at most ``TTL_S`` old
    (a search page then costs the search alone)."""

    TTL_S = 30.0

    def __init__(self) -> None:
        self._at = -self.TTL_S
        self._lists: dict[str, list[str]] = {}

    def get(self, client: Any) -> dict[str, list[str]]:
        if time.monotonic() - self._at >= self.TTL_S:
            st = client.status()
            self._lists = {"wing": sorted(st.get("wings") or {}), "room": sorted(st.get("rooms") or {}),
                           "machine": [str(st["machine"])] if st.get("machine") else []}
            self._at = time.monotonic()
        return self._lists


def _values(request: Request) -> dict[str, Any]:
    """The filters given in the query string, as the Python API takes them (lists for several values)."""
    q = request.query_params
    out: dict[str, Any] = {}
    for p in FILTERS:
        raw = [v.strip() for v in q.getlist(p.name) for v in v.split(",") if v.strip()]
        if not raw:
            continue
        if p.kind == "enum" and raw[0] == p.default:
            continue  # the choice made when none is: not a filter
        if p.kind == "int":
            try:
                out[p.name] = int(raw[0])
            except ValueError:
                raise RpcError(INVALID_PARAMS, f"{p.name}: {raw[0]!r} is not a whole number") from None
        elif p.kind == "strs":
            out[p.name] = raw if len(raw) > 1 else raw[0]
        else:
            out[p.name] = raw[0]
    return out


def _field(p: Param, given: dict[str, Any], lists: dict[str, list[str]]) -> Markup:
    value = given.get(p.name)
    shown = ", ".join(value) if isinstance(value, list) else ("" if value is None else str(value))
    label = p.name.replace("_", " ")
    if p.kind == "enum":  # one choice
        picked = value or p.default
        radios = [el("label", el("input", type="radio", name=p.name, value=c, checked=c == picked), c,
                     class_="check") for c in p.choices]
        return el("fieldset", el("legend", label), radios, title=p.help)
    if p.choices:
        chosen = set(value if isinstance(value, list) else [value] if value else [])
        boxes = [el("label", el("input", type="checkbox", name=p.name, value=c, checked=c in chosen), c,
                    class_="check") for c in p.choices]
        return el("fieldset", el("legend", label), boxes, title=p.help)
    options = lists.get(p.name)
    listed = el("datalist", [el("option", value=o) for o in options], id=f"list-{p.name}") if options else None
    return el("label", label,
              el("input", type="text", name=p.name, value=shown, placeholder=HINTS.get(p.name, "any"), title=p.help,
                 list=f"list-{p.name}" if options else None), listed, class_="field")


def form(query: str, given: dict[str, Any], lists: dict[str, list[str]]) -> Markup:
    return el("form", el("div", el("input", type="search", name="q", value=query, autofocus=True,
                                    placeholder="what are you looking for? e.g. why did the deploy fail",
                                    aria_label="query"),
                         el("button", "Search", type="submit"), class_="searchbar"),
              el("details", el("summary", "Filters"), el("div", [_field(p, given, lists) for p in FILTERS],
                                                         class_="filters"),
                 open=bool(given)),
              method="get", action="/search", class_="search")


def index_hit(n: int, h: dict[str, Any]) -> Markup:
    """A hit of ``format=index``: its one line, as links and tags."""
    did = str(h.get("drawer_id", ""))
    return el(
        "article",
        el("header", el("a", f"[{n}] ", h.get("title") or did, href=drawer_href(did), class_="title"),
           el("span", f"score {float(h.get('score') or 0):.3f}", class_="score")),
        el("div", el("a", tag(h.get("wing"), "wing"), href=timeline_href(str(h.get("wing") or ""))),
           tag(h.get("room"), "room"), el("span", h.get("date") or "", class_="muted"),
           el("span", f"{number(h.get('tokens'))} tokens in full", class_="muted") if h.get("tokens") else None,
           el("a", "drawer ", el("code", did), href=drawer_href(did)), class_="meta"),
        class_="hit index",
    )


def hit(n: int, h: dict[str, Any]) -> Markup:
    did = str(h.get("drawer_id", ""))
    pos = h.get("position")
    source = h.get("source_path")
    where = join(el("code", source), f" #{pos}" if pos not in (None, "") else "") if source else None
    session = str(h.get("session_id") or "")
    return el(
        "article",
        el("header", el("a", f"[{n}] ", h.get("title") or clip(h.get("text"), 80), href=drawer_href(did),
                        class_="title"),
           el("span", f"score {float(h.get('score') or 0):.3f}", class_="score")),
        el("div", el("a", tag(h.get("wing"), "wing"), href=timeline_href(str(h.get("wing") or ""))),
           tag(h.get("room"), "room"),
           tag(h.get("memory_type"), "type") if h.get("memory_type") not in (None, "", "none") else None,
           tag(h.get("agent"), "agent") if h.get("agent") else None,
           el("span", stamp(h.get("timestamp")), class_="muted"), class_="meta"),
        el("pre", clip(h.get("text"), EXCERPT), class_="text") if str(h.get("text") or "").strip() else None,
        el("p", ["from ", where, " · "] if where else None,
           ["session ", el("a", clip(session, 40), href=session_href(session)), " · "] if session else None,
           el("a", "drawer ", el("code", did), href=drawer_href(did)), class_="cite"),
        class_="hit",
    )


async def render(request: Request, ctx: Ctx, names: Names) -> str:
    query = request.query_params.get("q", "").strip()
    problem = None
    try:
        given = _values(request)
    except RpcError as exc:
        given, problem = {}, exc.message

    def work(c: Any) -> tuple[dict[str, list[str]], dict[str, Any] | None, str | None]:
        lists = names.get(c)
        if not query or problem:
            return lists, None, problem
        try:
            return lists, c.search(query, **given), None
        except RpcError as exc:
            if exc.code != INVALID_PARAMS:
                raise
            return lists, None, exc.message

    lists, result, problem = await ctx.daemon.run(work)
    body: list[Any] = [form(query, given, lists)]
    if problem:
        body.append(message(problem, "bad"))
    if result is not None:
        hits = result.get("hits", [])
        body.append(el("p", f"{number(len(hits))} hits for ", el("q", query), class_="lead") if hits else
                    message(f"No memories match {query!r} with these filters."))
        show = index_hit if result.get("format") == "index" else hit
        body += [show(i, h) for i, h in enumerate(hits, 1)]
        tunnels = result.get("tunnels") or {}
        if tunnels:
            body.append(el("p", "Related wings: ", [join(el("b", room), ": ", ", ".join(ws), "; ")
                                                    for room, ws in tunnels.items()], class_="muted"))
    return page("Search", *body, active="/search")
