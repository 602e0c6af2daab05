"""Timeline of a wing: its rooms, then its sessions by day, newest first, a page at a time."""

from __future__ import annotations

from itertools import groupby
from typing import Any

from starlette.requests import Request

from mempal.ui.frame import (
    Ctx,
    clip,
    count,
    day,
    day_key,
    drawer_href,
    message,
    number,
    page,
    session_href,
    table,
    tag,
    timeline_href,
    when,
)
from mempal.ui.html import Markup, el, link

PAGE = 60  # sessions per page


def _session(s: dict[str, Any]) -> Markup:
    title = s.get("title") or clip(s.get("excerpt"), 120) or s.get("session_id")
    return el("li",
              el("div", el("span", when(s.get("ts"))[11:] or "?", class_="time"),
                  el("a", title, href=drawer_href(str(s.get("first_drawer"))), class_="title"),
                  class_="head"),
              el("div", tag(s.get("agent"), "agent") if s.get("agent") else None,
                 tag(s.get("source_kind")) if s.get("source_kind") else None,
                 el("a", count(s.get("drawers"), "drawer"), href=session_href(str(s["session_id"])))
                 if s.get("session_id") else count(s.get("drawers"), "drawer"),
                 tag(f"branch {s.get('git_branch')}") if s.get("git_branch") else None,
                 el("code", s.get("source_path")) if s.get("source_path") else None,
                 el("span", "(dated by a later exchange)", class_="muted") if not s.get("dated", True) else None,
                 class_="meta"),
              el("p", clip(s.get("excerpt"), 200), class_="excerpt") if s.get("title") and s.get("excerpt") else None,
              class_="session")


def _time(raw: str | None) -> float | str | None:
    """Epoch seconds (the pager's links), else the text as given (an ISO date or an age like 30d)."""
    if not raw:
        return None
    try:
        return float(raw)
    except ValueError:
        return raw.strip()


def days(sessions: list[dict[str, Any]]) -> list[Markup]:
    out = []
    for key, group in groupby(sessions, key=lambda s: day_key(float(s.get("ts") or 0))):
        items = list(group)
        out.append(el("section", el("h2", day(float(items[0].get("ts") or 0)) if key else "Undated",
                                    el("span", " " + count(len(items), "session"), class_="muted")),
                      el("ul", [_session(s) for s in items], class_="sessions"), class_="day"))
    return out


async def render(request: Request, ctx: Ctx) -> str:
    wing = request.query_params.get("wing", "").strip()
    until = _time(request.query_params.get("until"))
    if not wing:
        st: dict[str, Any] = await ctx.daemon.call("status")
        wings = sorted((st.get("wings") or {}).items(), key=lambda kv: (-kv[1], kv[0]))
        return page("Timelines", table(("wing", "drawers"), [(el("a", w, href=timeline_href(w)), number(n))
                                                             for w, n in wings]), active="/")

    res: dict[str, Any] = await ctx.daemon.run(lambda c: c.wing_sessions(wing, until=until, limit=PAGE))
    sessions = res.get("sessions", [])
    room_links = [el("a", tag(f"{r} {number(n)}", "room"), href=link("/search", {"wing": wing, "room": r}))
                  for r, n in sorted((res.get("rooms") or {}).items(), key=lambda kv: (-kv[1], kv[0]))]
    body: list[Any] = [
        el("p", count(res.get("total"), "session"), " · rooms: ", room_links, class_="lead"),
        el("form", el("input", type="hidden", name="wing", value=wing),
           el("input", type="search", name="q", placeholder=f"search in {wing}"), el("button", "Search"),
           method="get", action="/search", class_="searchbar small"),
    ]
    if res.get("undated"):
        body.append(message(f"{number(res['undated'])} sessions could not be dated and are not listed."))
    if not sessions:
        body.append(message(f"No sessions in wing {wing!r}" + (" before that date." if until else ".")))
    body += days(sessions)
    if res.get("more") and sessions:
        older = float(sessions[-1].get("ts") or 0) - 0.001
        body.append(el("p", el("a", "older sessions →", href=link("/timeline", {"wing": wing, "until": older})),
                       class_="pager"))
    return page(f"Timeline of {wing}", *body, active="/")

