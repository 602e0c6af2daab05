"""The 4-layer wake-up stack.

- L0 identity: the file the user writes (``wakeup.identity_path``; ``mempal identity edit`` opens it).
- L1 essential story of a wing: drawers chosen by importance, memory type and recency within a token
  budget (counted with the model's own tokenizer), grouped by room, each line citing its drawer.
- L2 room recall: the drawers of one room, newest and most important first.
- L3 deep search: ``search``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TYPE_WEIGHT = {"decision": 3.0, "milestone": 2.5, "preference": 2.0, "problem": 1.5, "emotional": 1.0}
HALF_LIFE_DAYS = 30.0
LINE_CHARS = 220


@dataclass(frozen=True, slots=True)
class Story:
    text: str
    tokens: int
    drawers: tuple[str, ...]


def story_score(payload: Mapping[str, Any], now: float) -> float:
    """Importance first, then memory type, then recency (half-life 30 days)."""
    imp = float(payload.get("importance") or 0)
    tw = TYPE_WEIGHT.get(str(payload.get("memory_type") or ""), 0.0)
    ts = float(payload.get("ts") or 0)
    age_days = max(0.0, (now - ts) / 86400) if ts else 365.0
    recency = math.pow(0.5, age_days / HALF_LIFE_DAYS)
    kind_penalty = 1.0 if payload.get("kind") == "summary" else 0.0
    return imp * 2 + tw + 2 * recency - kind_penalty


def one_line(text: str, limit: int = LINE_CHARS) -> str:
    """The first meaningful line of a drawer, user quote marks removed, cut on a word boundary."""
    for raw in text.splitlines():
        line = raw.lstrip("> ").strip().lstrip("#-*• ").strip()
        if len(line) >= 12 and not line.startswith(("[tool:", "->")):
            break
    else:
        line = " ".join(text.split())
    line = " ".join(line.split())
    if len(line) > limit:
        line = line[:limit].rsplit(" ", 1)[0] + "…"
    return line


def essential_story(
    wing: str,
    drawers: Sequence[tuple[str, Mapping[str, Any]]],
    budget: int,
    count_tokens: Callable[[str], int],
    now: float | None = None,
) -> Story:
    """L1: the best drawers of a wing that fit in ``budget`` tokens, grouped by room, with citations."""
    now = time.time() if now is None else now
    ranked = sorted(drawers, key=lambda d: (-story_score(d[1], now), d[0]))
    header = f"## L1: {wing}"
    used = count_tokens(header)
    chosen: dict[str, list[str]] = {}
    ids: list[str] = []
    seen_lines: set[str] = set()
    for did, p in ranked:
        if int(p.get("chunk_index") or 0) > 0:
            continue  # an exchange speaks through its first chunk (the prompt and the start of the answer)
        line = one_line(str(p.get("text", "")))
        if not line or line in seen_lines:
            continue
        mtype = p.get("memory_type")
        tag = f"[{mtype}] " if mtype and mtype != "none" else ""
        date = str(p.get("timestamp") or "")[:10]
        entry = f"- {tag}{line} ({date} · drawer {did[:8]})" if date else f"- {tag}{line} (drawer {did[:8]})"
        room = str(p.get("room") or "general")
        cost = count_tokens(entry) + (0 if room in chosen else count_tokens(f"### {room}"))
        if used + cost > budget:
            continue
        used += cost
        seen_lines.add(line)
        chosen.setdefault(room, []).append(entry)
        ids.append(did)
    parts = [header]
    for room in sorted(chosen, key=lambda r: -len(chosen[r])):
        parts.append(f"### {room}")
        parts.extend(chosen[room])
    text = "\n".join(parts) if ids else f"{header}\n(no memories yet)"
    return Story(text, count_tokens(text), tuple(ids))


def identity(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8").strip()
    except (FileNotFoundError, IsADirectoryError, PermissionError, UnicodeDecodeError):
        return ""
