"""What a Claude Code transcript needs from beside it (pure over a ``Look``): a sub-agent file's parent.

A sub-agent file (``agent-<id>.jsonl``, in ``<session>/subagents/`` or, before 2.1, beside the session file)
gets its parent exchange from the session file that started it, its type from ``agent-<id>.meta.json`` when
there is one, and the session's project (its first working directory): a session is one wing, whatever
sub-folder its sub-agents worked in.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import PurePath

from mempald.normalize.format import Look, loads
from mempald.normalize.model import CursorContext

PARENT_MAX = 64 * 1024 * 1024  # a session file read to find a sub-agent's parent (larger ones are not read)
SIDE_MAX = 1024 * 1024  # a small file read beside a unit (agent-<id>.meta.json), or a first line


def _agent_id(path: PurePath) -> str:
    stem = path.name[: -len(".jsonl")] if path.name.endswith(".jsonl") else path.stem
    return stem[len("agent-"):] if stem.startswith("agent-") else ""


def _first_record(head: bytes) -> dict[str, object]:
    rec = loads(head.split(b"\n", 1)[0]) if head else None
    return rec if isinstance(rec, dict) else {}


def _first_cwd(raws: list[bytes]) -> str:
    """The first working directory a Claude Code session's first lines name (its project), "" when none."""
    for raw in raws:
        rec = loads(raw) if raw.strip() else None
        cwd = rec.get("cwd") if isinstance(rec, dict) else None
        if isinstance(cwd, str) and cwd:
            return cwd
    return ""


def subagent_context(path: PurePath, ctx: CursorContext, look: Look) -> CursorContext:
    """``ctx`` with the parent exchange and type of a Claude Code sub-agent file (unchanged for other files,
    and while the parent cannot be found yet: it is looked for again on the next read)."""
    agent = _agent_id(path)
    if not agent or agent.startswith("acompact") or ctx.parent:
        return ctx
    meta = path.with_name(f"agent-{agent}.meta.json")
    agent_type = ctx.agent_type
    if not agent_type and look.is_file(meta):
        raw = loads(look.read(meta, SIDE_MAX) or b"")
        agent_type = raw.get("agentType", "") if isinstance(raw, dict) else ""
    if path.parent.name == "subagents":
        parent_file = path.parent.parent.with_suffix(".jsonl")
    else:
        session = _first_record(look.head(path, SIDE_MAX)).get("sessionId")
        parent_file = path.with_name(f"{session}.jsonl") if isinstance(session, str) and session else path
    ctx = replace(ctx, agent_type=agent_type if isinstance(agent_type, str) else "")
    if parent_file == path or not look.is_file(parent_file):
        return ctx
    lines = look.lines(parent_file, PARENT_MAX)  # ([] for a session file over the cap: its head names the cwd)
    first = [ln.raw for ln in lines[:200]] or look.head(parent_file, SIDE_MAX).split(b"\n")[:200]
    project = _first_cwd(first)
    if project:
        ctx = replace(ctx, cwd=project)  # the sub-agent's drawers go to its session's wing
    if not lines:
        return ctx
    from mempald.normalize.claude_code import agent_links  # (the format's own module declares this hook)

    parent, kind = agent_links(lines).get(agent, ("", ""))
    return replace(ctx, parent=parent, agent_type=ctx.agent_type or kind)


def beside(path: PurePath, ctx: CursorContext, look: Look) -> CursorContext:
    """The format's ``beside`` hook: only sub-agent files need anything from beside them."""
    return subagent_context(path, ctx, look) if path.name.startswith("agent-") else ctx

