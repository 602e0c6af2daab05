"""What an exchange wrote into files, as line digests (pure): the lines an ``Edit`` / ``Write`` / ``MultiEdit`` or an
``apply_patch`` put into a file, so a memory shown later can be checked against the file as it is now
(``mempald.features.staleness``). Only digests are kept (never the text: it is in the drawer when it is there at
all, and a digest carries no secret); a few distinctive lines per file are enough to tell that the change is gone.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping

MAX_LINES = 4  # digests kept per file
MAX_FILES = 8  # files kept per exchange
MIN_CHARS = 12  # shorter lines ("}", "return x", "") say nothing about whether the change is still there
_WORDY = re.compile(r"[A-Za-z0-9_]{3}")
_PATCH_HEAD = re.compile(r"^\*\*\* (?:Add|Update) File: (.+?)\s*$")
_PATCH_OTHER = re.compile(r"^\*\*\* (?:Delete File|Move to|End Patch|Begin Patch)")
_FENCE = re.compile(r"^```[\w+#.-]*[ \t]+([\w./~-]+\.[A-Za-z0-9]{1,8})[ \t]*$")  # ```python src/app.py


def norm(line: str) -> str:
    """A line as compared: its words, whitespace collapsed (indentation and trailing spaces do not matter)."""
    return " ".join(line.split())


def digest(line: str) -> str:
    return hashlib.blake2b(norm(line).encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


def telling(lines: Iterable[str]) -> list[str]:
    """The digests of the lines that say something (long enough, with a word in them), longest first, at most
    ``MAX_LINES``, each once."""
    seen: dict[str, int] = {}
    for ln in lines:
        n = norm(ln)
        if len(n) >= MIN_CHARS and _WORDY.search(n):
            seen.setdefault(digest(n), len(n))
    return [d for d, _ in sorted(seen.items(), key=lambda kv: -kv[1])[:MAX_LINES]]


def add(quotes: dict[str, list[str]], path: str | None, text: object) -> None:
    """Record that ``text`` was written into ``path``."""
    if not path or not isinstance(text, str) or not text.strip():
        return
    if path not in quotes and len(quotes) >= MAX_FILES:
        return
    have = quotes.setdefault(path, [])
    for d in telling(text.splitlines()):
        if d not in have and len(have) < MAX_LINES:
            have.append(d)
    if not have:
        del quotes[path]


def add_written(quotes: dict[str, list[str]], path: str | None, tool_input: Mapping[str, object]) -> None:
    """Record what a file tool's input writes into ``path``: its new text (``new_string``, ``content``,
    ``new_source``) and each of its ``edits``' ``new_string``."""
    edits = tool_input.get("edits")
    written = [tool_input.get(k) for k in ("new_string", "content", "new_source")]
    written += [e.get("new_string") for e in edits if isinstance(e, dict)] if isinstance(edits, list) else []
    for text in written:
        add(quotes, path, text)


def patch_added(patch: object) -> dict[str, str]:
    """The lines an ``apply_patch`` body adds, per file as written in it (``+`` lines of Add/Update File)."""
    out: dict[str, list[str]] = {}
    if not isinstance(patch, str):
        return {}
    current: str | None = None
    for line in patch.splitlines():
        head = _PATCH_HEAD.match(line)
        if head:
            current = head.group(1)
            continue
        if _PATCH_OTHER.match(line):
            current = None
        elif current and line.startswith("+"):
            out.setdefault(current, []).append(line[1:])
    return {k: "\n".join(v) for k, v in out.items()}


def fenced(text: str) -> dict[str, str]:
    """The code blocks of a text whose opening fence names a file (```` ```python src/app.py ````): path -> code."""
    out: dict[str, str] = {}
    path: str | None = None
    body: list[str] = []
    for line in text.splitlines():
        if path is None:
            m = _FENCE.match(line.strip())
            if m:
                path, body = m.group(1), []
        elif line.strip().startswith("```"):
            out.setdefault(path, "\n".join(body))
            path = None
        else:
            body.append(line)
    return out


def encode(quotes: Mapping[str, list[str]]) -> str:
    return json.dumps(dict(quotes), separators=(",", ":"), sort_keys=True) if quotes else ""


def decode(raw: object) -> dict[str, list[str]]:
    """Stored quotes back (anything malformed reads as none)."""
    if isinstance(raw, str) and raw:
        try:
            raw = json.loads(raw)
        except ValueError:
            return {}
    if not isinstance(raw, dict):
        return {}
    return {k: [d for d in v if isinstance(d, str)] for k, v in raw.items()
            if isinstance(k, str) and isinstance(v, list)}
