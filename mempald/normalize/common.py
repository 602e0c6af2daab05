"""Small text helpers every normalizer shares (pure, stdlib only)."""

from __future__ import annotations

import json
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
