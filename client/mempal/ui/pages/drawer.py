"""A drawer in its session (the exchanges before and after it), with where it came from; soft delete and
restore (POST forms with the CSRF token); and a session read as one page: every exchange in order, in full (no
inner scroll boxes), each part with a link to its drawer (a session of more than ``SESSION_PAGE`` exchanges
goes on on a next page)."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import RedirectResponse

from mempal.ui.frame import (
    Ctx,
    clip,
    count,
    csrf_field,
    drawer_href,
    facts,
    message,
    page,
    section,
    session_href,
    stamp,
    tag,
    timeline_href,
    when,
)
from mempal.ui.html import Markup, el, join

AROUND = 5  # exchanges shown before and after a drawer
SESSION_PAGE = 200  # exchanges per page of a session: the most one ``session_drawers`` call gives
ITEM_CHARS = 420


def _meta(d: dict[str, Any]) -> Markup:
    pos = d.get("position")
    chunk = d.get("chunk_index")
    chunks = d.get("chunk_count")
    where = join(el("code", d.get("source_path") or "?"),
                 f" · exchange #{pos}" if pos not in (None, "") else "",
                 f" · part {int(chunk) + 1} of {chunks}" if chunks and int(chunks) > 1 and chunk is not None else "")
    session = str(d.get("session_id") or "")
    return facts([
        ("Wing", el("a", d.get("wing"), href=timeline_href(str(d.get("wing") or ""))) if d.get("wing") else ""),
        ("Room", d.get("room")), ("Memory type", d.get("memory_type") if d.get("memory_type") != "none" else ""),
        ("Importance", d.get("importance")), ("Time", stamp(d.get("timestamp"), d.get("ts"))),
        ("Agent", d.get("agent")), ("Branch", d.get("git_branch")), ("Working directory", d.get("cwd")),
        ("Source", join(d.get("source_kind") or "", ": ", where)),
        ("Session", el("a", session, href=session_href(session, _page_of(pos)) + f"#x{pos}") if session else ""),
        ("Exchange key", el("code", d.get("exchange_key")) if d.get("exchange_key") else ""),
        ("Tools", ", ".join(d.get("tools") or [])), ("Filed", str(d.get("filed_at") or "")[:19].replace("T", " ")),
        ("Added by", d.get("added_by")), ("Machine", d.get("machine")),
        ("Drawer", el("code", d.get("drawer_id"))),
    ])


def _page_of(position: Any) -> int:
    """The first position of the session page that shows ``position``."""
    try:
        pos = int(position)
    except (TypeError, ValueError):
        return 0
    return pos - pos % SESSION_PAGE if pos > 0 else 0


def _deleted(d: dict[str, Any]) -> bool:
    return d.get("status") == "deleted" or d.get("deleted") is True


def _actions(d: dict[str, Any], ctx: Ctx) -> Markup:
    did = str(d["drawer_id"])
    if _deleted(d):
        return el("form", csrf_field(ctx),
                  message(f"Soft-deleted by {d.get('deleted_by') or '?'} on {when(d.get('deleted_at'))}"
                          + (f": {d['delete_reason']}" if d.get("delete_reason") else "")
                          + ". Hidden from search until restored; `mempal purge` removes it for good.", "bad"),
                  el("button", "Restore", type="submit"),
                  method="post", action=drawer_href(did) + "/restore", class_="actions")
    return el("form", csrf_field(ctx),
              el("label", "Why is it wrong or obsolete? ",
                 el("input", type="text", name="reason", maxlength="2000", placeholder="optional")),
              el("button", "Soft delete", type="submit", class_="danger"),
              el("span", "Hidden from search, kept until purged, audited.", class_="muted"),
              method="post", action=drawer_href(did) + "/delete", class_="actions")


def exchanges(drawers: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The drawers of a window grouped by exchange (a long exchange is several drawers, its parts), in order."""
    groups: dict[tuple[Any, Any], list[dict[str, Any]]] = {}
    for d in drawers:
        groups.setdefault((d.get("position"), d.get("exchange_key")), []).append(d)
    return list(groups.values())


def _item(parts: list[dict[str, Any]], current: str | None) -> Markup:
    here = next((p for p in parts if p["drawer_id"] == current), None)
    d = here or parts[0]
    did = str(d["drawer_id"])
    return el("li", el("div", el("a", f"#{d.get('position')}", href=drawer_href(did)),
                       el("span", stamp(d.get("timestamp"), d.get("ts")), class_="muted"),
                       tag(d.get("agent"), "agent") if d.get("agent") else None,
                       el("span", f"{len(parts)} parts", class_="muted") if len(parts) > 1 else None,
                       tag("deleted", "bad") if _deleted(d) else None,
                       tag("this drawer", "here") if here else None, class_="meta"),
              el("pre", clip(d.get("text"), ITEM_CHARS), class_="text short"),
              class_="current" if here else None)


def _timeline(res: dict[str, Any], current: str | None) -> Markup:
    sid = str(res.get("session_id") or "")
    first, last = int(res.get("first") or 0), int(res.get("last") or 0)
    nav = el("p", el("a", "← earlier exchanges", href=session_href(sid, max(0, first - SESSION_PAGE)))
             if res.get("earlier") else None,
             el("a", "later exchanges →", href=session_href(sid, last + 1)) if res.get("later") else None,
             el("span", f"{count(res.get('total'), 'drawer')} in this session", class_="muted"), class_="pager")
    items = [_item(parts, current) for parts in exchanges(res.get("drawers", []))]
    return join(nav, el("ol", items, class_="timeline"), nav)


def _parts(d: dict[str, Any], res: dict[str, Any]) -> Markup | None:
    """Links to the other parts of a long exchange."""
    siblings = [x for x in res.get("drawers", []) if x.get("exchange_key") == d.get("exchange_key")
                and x.get("position") == d.get("position")]
    if len(siblings) < 2:
        return None
    return el("p", "Parts of this exchange: ",
              [el("a", f"{i}", href=drawer_href(str(x["drawer_id"])), class_="part here" if x is d or
                  x["drawer_id"] == d["drawer_id"] else "part") for i, x in enumerate(siblings, 1)], class_="parts")


async def render(request: Request, ctx: Ctx) -> str:
    did = request.path_params["drawer_id"]
    res: dict[str, Any] = await ctx.daemon.run(lambda c: c.session_drawers(
        drawer_id=did, before=AROUND, after=AROUND, include_deleted=True))
    d = res["anchor"]
    title = clip(d.get("title") or str(d.get("text") or "").strip().split("\n")[0], 90) or did
    body: list[Any] = [
        el("div", _meta(d), class_="card"),
        _actions(d, ctx),
        section("The exchange", _parts(d, res), el("pre", d.get("text"), class_="text full")),
    ]
    if res.get("session_id") and (len(exchanges(res.get("drawers", []))) > 1 or res.get("earlier")
                                  or res.get("later")):
        body.append(section("In its session", _timeline(res, did)))
    return page(title, *body)


def _exchange(parts: list[dict[str, Any]]) -> Markup:
    """One exchange of a session page, whole: each part's text and a link to its drawer."""
    d = parts[0]
    pos = d.get("position")
    many = len(parts) > 1
    texts = [join(el("pre", x.get("text"), class_="text full"),
                  el("p", f"part {i} of {len(parts)} · " if many else None,
                     el("a", "drawer ", el("code", x["drawer_id"]), href=drawer_href(str(x["drawer_id"]))),
                     class_="cite")) for i, x in enumerate(parts, 1)]
    return el("li", el("div", el("a", f"#{pos}", href=drawer_href(str(d["drawer_id"]))),
                       el("span", stamp(d.get("timestamp"), d.get("ts")), class_="muted"),
                       tag(d.get("agent"), "agent") if d.get("agent") else None,
                       el("span", f"{len(parts)} parts", class_="muted") if many else None,
                       tag("deleted", "bad") if _deleted(d) else None, class_="meta"),
              texts, id=f"x{pos}", class_="exchange")


async def session(request: Request, ctx: Ctx) -> str:
    sid = request.query_params.get("id", "")
    try:
        start = max(0, int(request.query_params.get("start", "0") or 0))
    except ValueError:
        start = 0
    res: dict[str, Any] = await ctx.daemon.run(lambda c: c.session_drawers(
        session_id=sid, start=start, after=SESSION_PAGE - 1))
    drawers = res.get("drawers", [])
    if not drawers:
        return page("Session", message(f"No drawers of session {sid!r} from exchange #{start} on."))
    d = drawers[0]
    first, last = int(res.get("first") or 0), int(res.get("last") or 0)
    nav = el("p", el("a", "← earlier exchanges", href=session_href(sid, max(0, first - SESSION_PAGE)))
             if res.get("earlier") else None,
             el("a", "later exchanges →", href=session_href(sid, last + 1)) if res.get("later") else None,
             class_="pager") if res.get("earlier") or res.get("later") else None
    groups = exchanges(drawers)
    return page(f"Session {clip(d.get('title') or sid, 60)}",
                el("div", facts([("Session", el("code", sid)), ("Wing", el("a", d.get("wing"), href=timeline_href(
                    str(d.get("wing") or "")))), ("Source", el("code", d.get("source_path"))),
                    ("Agent", d.get("agent")), ("Branch", d.get("git_branch")),
                    ("Exchanges", f"{count(len(groups), 'exchange')} (#{first} to #{last}), "
                                  f"{count(res.get('total'), 'drawer')} in the session")]), class_="card"),
                nav, el("ol", [_exchange(parts) for parts in groups], class_="exchanges"), nav)


async def delete(request: Request, ctx: Ctx) -> RedirectResponse:
    did = request.path_params["drawer_id"]
    form = await request.form()
    reason = str(form.get("reason") or "")[:2000]
    await ctx.daemon.run(lambda c: c.delete(did, reason=reason))
    return RedirectResponse(drawer_href(did), status_code=303)


async def restore(request: Request, ctx: Ctx) -> RedirectResponse:
    did = request.path_params["drawer_id"]
    await ctx.daemon.run(lambda c: c.restore(did))
    return RedirectResponse(drawer_href(did), status_code=303)
