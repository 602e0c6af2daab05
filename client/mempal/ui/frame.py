"""The frame every page shares (head, navigation, footer) and the small formatters pages use.

Times are shown in the viewer's local time zone (the viewer runs on the user's machine); every page is complete
HTML with one stylesheet of its own (``/static/style.css``) and no script.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from mempal.ui.daemon import DaemonLink
from mempal.ui.html import Markup, el, join, link, segment

NAV: tuple[tuple[str, str], ...] = (
    ("/", "Overview"), ("/search", "Search"), ("/graph", "Knowledge graph"), ("/cowork", "Cowork inbox"),
    ("/packs", "Packs"), ("/rules", "Rules"),
)


@dataclass(frozen=True)
class Ctx:
    """What a page needs besides its request: the daemon, the CSRF token for its forms, the viewer's cwd."""

    daemon: DaemonLink
    csrf: str
    cwd: str


def page(title: str, *body: Any, active: str = "", refresh: int | None = None) -> str:
    head = el("head", el("meta", charset="utf-8"),
              el("meta", name="viewport", content="width=device-width, initial-scale=1"),
              el("meta", http_equiv="refresh", content=str(refresh)) if refresh else None,
              el("title", f"{title} · mempal"), el("link", rel="stylesheet", href="/static/style.css"))
    nav = el("nav", el("a", el("b", "mempal"), href="/", class_="brand"),
             [el("a", label, href=path, class_="on" if path == active else None) for path, label in NAV])
    main = el("main", el("h1", title), *body)
    foot = el("footer", "mempal viewer · read from your local mempald over its socket · nothing leaves this machine")
    return "<!doctype html>" + el("html", head, el("body", nav, main, foot), lang="en")


def when(ts: Any) -> str:
    """Epoch seconds as local date and time (``2026-02-10 21:11``); empty for none."""
    try:
        value = float(ts)
    except (TypeError, ValueError):
        return ""
    if value <= 0:
        return ""
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(value))


def stamp(iso: Any, ts: Any = None) -> str:
    """A drawer's time: its ISO ``timestamp`` (or epoch ``ts``) in local time; the raw text if unparsable."""
    text = str(iso or "").strip()
    if text:
        try:
            return when(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp())
        except ValueError:
            return text
    return when(ts)


def day(ts: float) -> str:
    return time.strftime("%A %d %B %Y", time.localtime(ts)) if ts > 0 else "Undated"


def day_key(ts: float) -> str:
    return time.strftime("%Y-%m-%d", time.localtime(ts)) if ts > 0 else ""


def size(n: Any) -> str:
    value = float(n or 0)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GB"


def duration(seconds: float | None) -> str:
    if seconds is None or seconds < 0:
        return "unknown"
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def clip(text: Any, limit: int) -> str:
    s = str(text or "").strip()
    return s if len(s) <= limit else s[: limit - 1].rstrip() + "…"


def count(n: Any, word: str) -> str:
    """``1 session``, ``3 sessions``, ``1,204 drawers``."""
    return f"{number(n)} {word}" + ("" if n == 1 else "s")


def number(n: Any) -> str:
    try:
        return f"{int(n):,}"
    except (TypeError, ValueError):
        return str(n)


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]], *, class_: str = "grid",
          empty: str = "Nothing here yet.") -> Markup:
    body = [el("tr", [el("td", c) for c in row]) for row in rows]
    if not body:
        return el("p", empty, class_="muted")
    return el("table", el("thead", el("tr", [el("th", h) for h in headers])), el("tbody", body), class_=class_)


def tag(text: Any, kind: str = "") -> Markup:
    return el("span", text, class_=f"tag {kind}".strip())


def section(title: str, *body: Any, id: str | None = None) -> Markup:
    return el("section", el("h2", title), *body, id=id)


def drawer_href(drawer_id: str) -> str:
    return "/drawer/" + segment(drawer_id)


def session_href(session_id: str, start: int = 0) -> str:
    return link("/session", {"id": session_id, "start": start or None})


def timeline_href(wing: str) -> str:
    return link("/timeline", {"wing": wing})


def entity_href(name: str) -> str:
    return link("/graph", {"entity": name})


def csrf_field(ctx: Ctx) -> Markup:
    return el("input", type="hidden", name="csrf", value=ctx.csrf)


def facts(pairs: Iterable[tuple[str, Any]]) -> Markup:
    """A definition list of the pairs whose value is not empty."""
    return el("dl", [join(el("dt", k), el("dd", v)) for k, v in pairs if v not in (None, "", [], ())],
              class_="facts")


def message(text: str, kind: str = "note") -> Markup:
    return el("p", text, class_=f"message {kind}")
