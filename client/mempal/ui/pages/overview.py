"""Overview: what the palace holds and how far behind the daemon is, from one ``status`` call.

Rates and ETAs: the daemon reports its embedding rate; how fast each source is read comes from the change in
its figures between two looks (``Rates`` keeps a minute of ``status`` samples), and the page reloads itself
every few seconds while anything is behind.
"""

from __future__ import annotations

import time
from collections import deque
from typing import Any

from starlette.requests import Request

from mempal.ui.frame import (
    Ctx,
    count,
    duration,
    facts,
    message,
    number,
    page,
    section,
    size,
    table,
    tag,
    timeline_href,
    when,
)
from mempal.ui.html import Markup, el, link

REFRESH_S = 5
WINDOW_S = 60.0


class Rates:
    """Recent ``status`` samples, for per-source read rates (exchanges/s, bytes/s) and ETAs."""

    def __init__(self) -> None:
        self.samples: deque[tuple[float, dict[str, Any]]] = deque()

    def add(self, status: dict[str, Any], now: float | None = None) -> None:
        t = time.monotonic() if now is None else now
        self.samples.append((t, status))
        while self.samples and t - self.samples[0][0] > WINDOW_S:
            self.samples.popleft()

    def of(self, key: str) -> tuple[float | None, float | None, float | None]:
        """(exchanges/s, backlog bytes/s drained, seconds left) for source ``key``; None where unknown."""
        if len(self.samples) < 2:
            return None, None, None
        (t0, old), (t1, new) = self.samples[0], self.samples[-1]
        a, b = _source(old, key), _source(new, key)
        dt = t1 - t0
        if a is None or b is None or dt < 1.0:
            return None, None, None
        ex_rate = max(0.0, (b["exchanges"] - a["exchanges"]) / dt)
        drained = max(0.0, (a["backlog_bytes"] - b["backlog_bytes"]) / dt)
        eta = b["backlog_bytes"] / drained if drained > 0 and b["backlog_bytes"] else None
        return ex_rate, drained, eta


def _source(st: dict[str, Any], key: str) -> dict[str, Any] | None:
    return next((s for s in st.get("sources", []) if s.get("key") == key), None)


def behind(st: dict[str, Any]) -> bool:
    return bool(st.get("file_backlog") or st.get("dense_backlog")
                or any(s.get("backlog_files") for s in st.get("sources", [])))


def _index(st: dict[str, Any]) -> Markup:
    index = st.get("index") or {}
    last = index.get("last") or {}
    state = "building in a separate process (search stays available)" if index.get("state") == "building" \
        else "idle"
    return facts([
        ("Index", state), ("Builds", number(index.get("builds", 0))),
        ("Last build", f"{last.get('build_s')} s" if last.get("build_s") is not None else ""),
        ("Last error", index.get("last_error") or ""),
    ])


def _progress(st: dict[str, Any]) -> Markup:
    dense, rate = int(st.get("dense_backlog") or 0), float(st.get("dense_rate") or 0)
    eta = dense / rate if dense and rate > 0 else None
    embedding = f"{number(dense)} drawers"
    if not dense:
        embedding += " (caught up)"
    elif rate > 0:
        embedding += f" at {rate:.1f}/s, about {duration(eta)} left"
    return facts([
        ("Drawers", number(st.get("drawers"))),
        ("Embedding backlog", embedding),
        ("Files queued", number(st.get("file_backlog"))),
        ("Reconcile scans", number(st.get("scans"))),
        ("Model", st.get("model")), ("Store", st.get("store")), ("Machine", st.get("machine")),
        ("Daemon", f"mempald {st.get('version')}, pid {st.get('pid')}, up {duration(st.get('uptime_s'))}"
                   + ("" if st.get("ready") else " (starting)")),
    ])


def _counts(counts: dict[str, int], *, wings: bool) -> Markup:
    top = max(counts.values(), default=0)
    rows = []
    for name, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        label = el("a", name, href=timeline_href(name)) if wings else el("a", name, href=link(
            "/search", {"room": name}))
        rows.append((label, number(n), el("meter", value=n, min=0, max=max(top, 1))))
    return table(("wing" if wings else "room", "drawers", ""), rows, class_="grid counts",
                 empty="No drawers yet: the daemon files them as it reads your sources.")


def _sources(st: dict[str, Any], rates: Rates) -> Markup:
    rows = []
    for s in st.get("sources", []):
        ex_rate, drained, eta = rates.of(str(s.get("key")))
        backlog = (f"{number(s.get('backlog_files'))} files, {size(s.get('backlog_bytes'))}"
                   if s.get("backlog_files") or s.get("backlog_bytes") else "up to date")
        rate = f"{ex_rate:.1f} exchanges/s" if ex_rate else ("" if ex_rate is None else "0/s")
        if drained:
            rate += f", {size(drained)}/s"
        rows.append((
            el("code", s.get("path")), s.get("mode"), s.get("format"), s.get("wing") or "(from each file)",
            number(s.get("files")), number(s.get("exchanges")), backlog, rate,
            duration(eta) if eta is not None else "",
            [tag(f"{s.get('errors')} errors", "bad") if s.get("errors") else None,
             el("div", s.get("last_error"), class_="muted") if s.get("last_error") else None,
             tag("missing", "bad") if not s.get("exists", True) else None],
        ))
    return table(("path", "mode", "format", "wing", "files", "exchanges", "backlog", "rate", "ETA", "problems"),
                 rows, empty="No sources are watched.")


def _filtered(st: dict[str, Any]) -> Markup:
    rows = []
    for s in st.get("sources", []):
        if s.get("redactions"):
            rows.append((el("code", s.get("path")), "secrets redacted", number(s["redactions"])))
        for reason, n in sorted((s.get("skipped") or {}).items()):
            rows.append((el("code", s.get("path")), f"skipped: {reason}", number(n)))
    return table(("source", "what", "count"), rows, empty="No secrets redacted and no files skipped.")


async def render(request: Request, ctx: Ctx, rates: Rates) -> str:
    st: dict[str, Any] = await ctx.daemon.call("status")
    rates.add(st)
    busy = behind(st)
    warnings = [message(w, "bad") for w in st.get("warnings", [])]
    return page(
        "Overview",
        warnings,
        el("p", f"{count(st.get('drawers'), 'drawer')} in {count(len(st.get('wings') or {}), 'wing')}, "
                f"as of {when(time.time())}" + (" · reloading every 5 s while the daemon catches up" if busy else ""),
           class_="lead"),
        el("div", section("Progress", _progress(st)), section("Index", _index(st)), class_="cols"),
        el("div", section("Wings", _counts(st.get("wings") or {}, wings=True)),
           section("Rooms", _counts(st.get("rooms") or {}, wings=False)), class_="cols"),
        section("Sources", _sources(st, rates)),
        section("Redactions and skipped files", _filtered(st)),
        active="/", refresh=REFRESH_S if busy else None,
    )
