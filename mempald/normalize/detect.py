"""Format detection by name, for callers that want a format's name rather than the format (pure).

The decisions are the registry's (``mempald.normalize.registry``: each format declares its own ``detect``);
this module only answers with names. ``detect_bytes`` is None both for plain text and for JSON in no known
format; ``detect_dir`` recognises a Slack export folder from its entry names.
"""

from __future__ import annotations

from collections.abc import Iterable

from mempald.normalize.registry import TEXT, detect_file, detect_folder


def detect_bytes(head: bytes, name: str = "") -> str | None:
    """The name of a file's format from its first bytes (and name), or None when no format claims it."""
    fmt = detect_file(head, name)
    return None if fmt is None or fmt is TEXT else fmt.name


def detect_dir(names: Iterable[str]) -> str | None:
    """``slack`` for a Slack export folder given its entry names (relative paths or base names), else None."""
    fmt = detect_folder(names)
    return fmt.name if fmt is not None else None
