"""The cowork inbox of a project folder (read-only: ``cowork_status`` never drains) and the outputs of packs."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request

from mempal.methods.vocab import AGENTS
from mempal.ui.frame import Ctx, facts, message, number, page, section, size, table, when
from mempal.ui.html import Markup, el


def _inbox(agent: str, box: dict[str, Any], limits: dict[str, Any]) -> Markup:
    msgs = box.get("messages", [])
    items = [el("li", el("div", el("b", f"from {m.get('from')}"), el("span", when(m.get("created_at")),
                                                                     class_="muted"), class_="meta"),
                el("pre", m.get("text"), class_="text")) for m in msgs]
    return section(f"For {agent}",
                   el("p", f"{number(box.get('pending'))} waiting ({size(box.get('bytes'))}"
                           f" of {size(limits.get('inbox_bytes'))}; at most {limits.get('pending')} messages)",
                      class_="muted"),
                   el("ol", items, class_="messages") if items else message("Nothing waiting."))


async def cowork(request: Request, ctx: Ctx) -> str:
    cwd = request.query_params.get("cwd", "").strip() or ctx.cwd
    res: dict[str, Any] = await ctx.daemon.run(lambda c: c.cowork_status(cwd=cwd))
    inboxes = res.get("inboxes", {})
    limits = res.get("limits", {})
    return page(
        "Cowork inbox",
        el("form", el("label", "project folder ", el("input", type="text", name="cwd", value=cwd, size="70")),
           el("button", "Show", type="submit"), method="get", action="/cowork", class_="inline"),
        el("p", "Messages Claude Code and Codex leave each other in ", el("code", res.get("cwd")),
           ", delivered at the recipient's next prompt. Read-only here: looking does not take them.",
           class_="lead"),
        el("div", [_inbox(a, inboxes.get(a, {}), limits) for a in AGENTS], class_="cols"),
        active="/cowork",
    )


def _topic(t: dict[str, Any]) -> Markup:
    rows = [(f.get("text"), el("code", f"{f.get('file')}:{f.get('line')}")) for f in t.get("facts", [])]
    return el("article", el("h3", t.get("label"), el("span", f" importance {float(t.get('importance') or 0):.2f}",
                                                     class_="muted")),
              el("p", t.get("summary")),
              table(("fact", "where"), rows, empty="No facts kept for this topic."),
              el("p", "from ", ", ".join(t.get("sources", [])), class_="muted"), class_="topic")


def _pack(p: dict[str, Any]) -> Markup:
    title = p.get("root") or p.get("output")
    if not p.get("written"):
        return section(str(title), el("p", "Output folder ", el("code", p.get("output"))),
                       message(p.get("error") or "Not packed yet: the daemon packs the folder once it is quiet.",
                               "bad" if p.get("error") else "note"))
    h = p.get("header", {})
    return section(
        str(title),
        facts([("Output", el("code", p.get("output"))), ("Topic", h.get("topic")),
               ("Files read", number(h.get("files"))),
               ("Tokens", f"{number(h.get('tokens_in'))} in, {number(h.get('tokens_out'))} out "
                          f"(ratio {h.get('ratio')}, target {h.get('target')})"),
               ("Written", when(p.get("modified"))),
               ("Files", ", ".join(f"{f['name']} ({size(f['bytes'])})" for f in p.get("files", [])))]),
        [message(n) for n in p.get("notes", [])],
        el("h3", "Overview"), el("pre", p.get("overview"), class_="text"),
        [_topic(t) for t in p.get("topics", [])],
    )


async def packs(request: Request, ctx: Ctx) -> str:
    folder = request.query_params.get("dir", "").strip()
    res: dict[str, Any] = await ctx.daemon.run(lambda c: c.pack_outputs(dir=folder or None))
    found = res.get("packs", [])
    body: list[Any] = [
        el("form", el("label", "a pack folder ", el("input", type="text", name="dir", value=folder, size="70",
                                                    placeholder="default: every watched pack folder")),
           el("button", "Show", type="submit"), method="get", action="/packs", class_="inline"),
    ]
    if not found:
        body.append(message("No pack-mode sources are watched: `mempal watch add DIR --mode pack`, or name a "
                            "folder `mempal pack` wrote above."))
    body += [_pack(p) for p in found]
    return page("Packs", *body, active="/packs")
