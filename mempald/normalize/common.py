"""Small text helpers every normalizer shares (pure, stdlib only)."""

from __future__ import annotations

import json
import posixpath
from typing import Any

from mempald.normalize.model import NormalizeError

MAX_ARG = 120  # characters of a tool call's argument kept in its summary line
MAX_RESULT = 160  # characters of a tool result kept in its summary line


def one_line(value: Any, limit: int = MAX_RESULT) -> str:
    """``value`` (text, or anything JSON can show) on one line, cut to ``limit`` characters with an ellipsis."""
    if isinstance(value, str):
        text = value
    else:
        try:
            text = json.dumps(value, ensure_ascii=False)
        except (TypeError, ValueError, RecursionError):
            text = type(value).__name__
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def as_str(value: Any) -> str:
    """``value`` if it is a string, else the empty string (fields are optional and loosely typed)."""
    return value if isinstance(value, str) else ""


def conversation_array(data: bytes, name: str, *, label: str, marker: str, marker_type: type) -> list[dict[str, Any]]:
    """The conversations of an export file: a JSON array (or ``{"conversations": [...]}``, or one object),
    keeping the objects that carry ``marker`` of ``marker_type``; a NormalizeError when it is not that export."""
    where = name or "document"
    try:
        root = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise NormalizeError(f"{where}: not JSON ({type(exc).__name__})") from None
    if isinstance(root, dict) and isinstance(root.get("conversations"), list):
        root = root["conversations"]
    if isinstance(root, dict):
        root = [root]
    if not isinstance(root, list):
        raise NormalizeError(f"{where}: not a {label} export (root is {type(root).__name__})")
    convs = [c for c in root if isinstance(c, dict) and isinstance(c.get(marker), marker_type)]
    if root and not convs:
        raise NormalizeError(f"{where}: no {label} conversation (no {marker!r}) in the array")
    return convs


def touched_path(path: Any, cwd: str | None) -> str | None:
    """The path a tool call names, as stored in ``Exchange.files``: a relative POSIX path is joined to ``cwd``
    (when ``cwd`` is an absolute POSIX path) and normalised; Windows paths and absolute paths are kept as
    written. None for anything that is not a usable path (empty, a glob, a URL, several lines)."""
    if not isinstance(path, str):
        return None
    p = path.strip()
    if not p or len(p) > 4096 or "\n" in p or any(c in p for c in "*?") or "://" in p:
        return None
    if p.startswith("~") or (len(p) > 1 and p[1] == ":") or p.startswith("\\\\"):
        return p  # home-relative or a Windows path: as written
    if not p.startswith("/") and cwd and cwd.startswith("/"):
        p = posixpath.join(cwd, p)
    return posixpath.normpath(p) if p.startswith("/") else p


def add_unique(items: list[str], value: str | None) -> None:
    """Append ``value`` to ``items`` unless it is None or already there (first-touch order is kept)."""
    if value and value not in items:
        items.append(value)
