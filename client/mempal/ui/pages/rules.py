"""The user's rules (what the PreToolUse hook enforces) and the suggestions waiting for them (read-only here:
nothing is scanned, accepted or removed from the viewer; the ``mempal rule`` commands do that)."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request

from mempal.ui.frame import Ctx, drawer_href, page, section, table, when
from mempal.ui.html import el


def _source(r: dict[str, Any]) -> Any:
    did = str(r.get("drawer_id") or "")
    if did:
        return el("a", f"drawer {did[:8]}", href=drawer_href(did))
    return str(r.get("source") or "user")


async def render(_request: Request, ctx: Ctx) -> str:
    rules: dict[str, Any] = await ctx.daemon.run(lambda c: c.rule_list())
    pending: dict[str, Any] = await ctx.daemon.run(lambda c: c.rule_suggestions(scan=False, status="pending"))
    rows = [(el("code", r.get("id")), r.get("decision"), el("code", r.get("tool")), el("code", r.get("pattern")),
             f"wing {r['wing']}" if r.get("wing") else "every wing", r.get("text"), _source(r),
             when(r.get("created_at"))) for r in rules.get("rules", [])]
    waiting = [(el("code", s.get("id")), s.get("decision"), el("code", s.get("tool")), el("code", s.get("pattern")),
                s.get("wing") or "-", s.get("sentence"), _source(s)) for s in pending.get("suggestions", [])]
    return page(
        "Rules",
        el("p", "What the PreToolUse hook checks before a tool runs: when a call's input matches, the host asks you "
                "first (ask) or refuses it (deny). Added with ", el("code", "mempal rule add"), "; suggestions hold "
                "nothing until accepted with ", el("code", "mempal rule accept ID"), ".", class_="lead"),
        section("Rules in force", table(("id", "decision", "tool", "pattern", "scope", "rule", "source", "added"),
                                        rows, empty="No rules.")),
        section("Suggested, not enforced", table(("id", "decision", "tool", "draft", "wing", "the user wrote",
                                                  "cites"), waiting, empty="No suggestions waiting.")),
        active="/rules",
    )
