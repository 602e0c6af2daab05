"""The agents' own memories, read as rewritten documents (pure): what an agent already believes.

- Claude Code's auto-memory: ``~/.claude/projects/<project>/memory/MEMORY.md`` (the index, one line an entry:
  ``- [title](file.md) — what it says``) and one Markdown file a memory beside it, opening with a front matter
  (``name``, ``description``, and ``type`` user / feedback / project / reference, at the top level or, in newer
  releases, under ``metadata`` with ``node_type: memory`` and ``originSessionId``);
- the instructions the user keeps for the agents: ``~/.claude/CLAUDE.md``, ``~/.codex/AGENTS.md`` (and
  ``AGENTS.override.md``), and a project's ``CLAUDE.md`` / ``AGENTS.md`` / ``CLAUDE.local.md``;
- Codex's memories (off by default; ``~/.codex/memories/``: ``MEMORY.md``, ``memory_summary.md``,
  ``raw_memories.md``, ``rollout_summaries/*.md``).

A file is one exchange (key ``memory``, kind ``agent_memory``, no prompt: nobody typed it as one) whose answer is
its text; the drawer builder chunks it, and a rewritten file replaces its drawers (stale chunks dropped). Its room
is ``agent-memory`` (``Format.room``). The project a memory belongs to is the working directory of a transcript
beside it (``beside``: Claude Code's project folder holds the sessions whose memory it is), else the folder's name
decoded; a user-level file has none. mempald never writes these files.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import PurePath, PurePosixPath

from mempald.normalize.format import Format, Input, Look, Parsed, Place, Probe, loads
from mempald.normalize.ledger import Ledger
from mempald.normalize.model import CursorContext, Exchange, strip_injected

SOURCE_KIND = "agent_memory"
ROOM = "agent-memory"
NAMES = ("CLAUDE.md", "CLAUDE.local.md", "AGENTS.md", "AGENTS.override.md", "MEMORY.md", "memory_summary.md",
         "raw_memories.md")
TYPES = ("user", "feedback", "project", "reference")
_FRONT = re.compile(r"\A\ufeff?---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.S)
_OPEN_FRONT = re.compile(r"\A\ufeff?---[ \t]*\r?\n(.*)\Z", re.S)  # a front matter cut before its end
_FIELD = re.compile(r"^[ \t]*([A-Za-z_]+):[ \t]*(.*?)[ \t]*$", re.M)
HEAD_BYTES = 65536  # how much of a transcript beside a memory is read for its working directory


def front_matter(text: str) -> dict[str, str]:
    """The ``key: value`` lines of a memory file's front matter (nested keys flattened; {} when it has none; a
    file cut inside it, as detection may see its head or a half-written file: what it has so far)."""
    m = _FRONT.match(text) or _OPEN_FRONT.match(text)
    if not m:
        return {}
    return {k: v.strip("'\"") for k, v in _FIELD.findall(m.group(1))}


def body_of(text: str) -> str:
    """A memory file's text after its front matter."""
    m = _FRONT.match(text)
    return text[m.end():] if m else text


def is_memory_file(text: str) -> bool:
    """A Claude Code auto-memory file: a front matter with a name, a description and a memory type."""
    fm = front_matter(text)
    return bool(fm.get("name")) and "description" in fm and (fm.get("type") in TYPES or fm.get("node_type") == "memory")


def _parts(name: str) -> tuple[str, ...]:
    return PurePosixPath(name.replace("\\", "/")).parts


def agent_of(name: str) -> str:
    """Whose memory a file is, by where it lies (Claude Code, Codex) or its name."""
    parts = _parts(name)
    if ".codex" in parts or parts[-1:] in (("AGENTS.md",), ("AGENTS.override.md",)):
        return "codex"
    return "claude_code"


def project_folder(name: str) -> str:
    """A Claude Code project folder's name (``-home-u-proj``) when the file is its auto-memory, else ""."""
    parts = _parts(name)
    if len(parts) >= 3 and parts[-2] == "memory" and "projects" in parts[:-3]:
        return parts[-3]
    return ""


def _title(name: str, fm: dict[str, str]) -> str:
    parts = _parts(name)
    base = parts[-1] if parts else name
    if fm.get("name"):
        return f"auto-memory: {fm['name']}"[:200]
    if project_folder(name):
        return f"auto-memory index ({base})" if base == "MEMORY.md" else f"auto-memory: {base}"
    if ".codex" in parts and "memories" in parts:
        return f"Codex memories: {base}"
    scope = "user" if (".claude" in parts or ".codex" in parts) else "project"
    return f"{scope} instructions ({base})"


def parse(inp: Input) -> Parsed:
    """One exchange of the whole file (module docstring); an empty file stores nothing (skipped: ``empty``)."""
    ledger = Ledger()
    text = inp.data.decode("utf-8", errors="replace").lstrip("\ufeff")
    text = strip_injected(text).strip()
    ctx = replace(inp.context, format=SOURCE_KIND)
    if not text:
        ledger.skipped("file", "empty")
        return Parsed([], ledger, ctx)
    fm = front_matter(text)
    cwd = ctx.cwd or None
    ex = Exchange(source_kind=SOURCE_KIND, session_id=inp.name, key="memory", user="", assistant=text,
                  timestamp=fm.get("modified") or None, cwd=cwd, agent=agent_of(inp.name),
                  title=_title(inp.name, fm), kind=SOURCE_KIND, project=cwd)
    ledger.stored("file", ex.key, "memory")
    return Parsed([ex], ledger, ctx)


def detect(probe: Probe) -> bool:
    """A file named as the agents name their memories (by ``names``), or a Claude Code auto-memory file."""
    return probe.text.startswith("---") and is_memory_file(probe.text)


def beside(path: PurePath, ctx: CursorContext, look: Look) -> CursorContext:
    """The project of an auto-memory file: the working directory of a session transcript in the same Claude Code
    project folder, else the folder's name decoded (``-home-u-proj`` -> ``/home/u/proj``; a hyphen in a name is
    read as a slash then). A user-level file keeps no project."""
    folder_name = project_folder(str(path))
    if not folder_name or ctx.cwd:
        return ctx
    folder = path.parent.parent
    for entry in sorted(look.entries(folder)):
        if not entry.endswith(".jsonl"):
            continue
        for line in look.head(folder / entry, HEAD_BYTES).split(b"\n")[:50]:
            rec = loads(line) if line.startswith(b"{") else None
            if isinstance(rec, dict) and isinstance(rec.get("cwd"), str) and rec["cwd"]:
                return replace(ctx, cwd=rec["cwd"])
    return replace(ctx, cwd=folder_name.replace("-", "/")) if folder_name.startswith("-") else ctx


PLACES = (
    Place("Claude Code", linux=("~/.claude",), macos=("~/.claude",), windows=("%USERPROFILE%\\.claude",),
          globs=("/CLAUDE.md", "/projects/*/memory/*.md")),
    Place("Codex", linux=("~/.codex",), macos=("~/.codex",), windows=("%USERPROFILE%\\.codex",),
          globs=("/AGENTS.md", "/AGENTS.override.md", "/memories/*.md", "/memories/rollout_summaries/*.md")),
)

FORMAT = Format(SOURCE_KIND, "document", detect, parse, suffixes=(".md",), names=NAMES, places=PLACES, beside=beside,
                room=ROOM, summary="the agents' own memories: Claude Code's auto-memory and CLAUDE.md, AGENTS.md, "
                "Codex's memories (room agent-memory)")
