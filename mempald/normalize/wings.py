"""Wing names from working directories, and the one form every wing name takes (pure).

``normal_wing``: a wing name as it is stored and matched. NFKC (an NFD ``café`` and fullwidth ``ａｌｐｈａ``
become ``café`` and ``alpha``), without format characters (zero-width spaces and joiners, bidi marks and
overrides, the BOM, soft hyphens: Unicode category Cf) and without surrounding or repeated whitespace.
Applied wherever a wing name enters: derived from a cwd or folder (``slug``), named in a request (the
dispatcher's ``wing`` parameters: save, ingest, watch add, mine, init and the filters of search, forget,
export...), in ``config.toml`` or a project's ``mempal.toml``. Wings stored before this under another form are
renamed to theirs once at start (``mempald.features.layout.Layout.normalize_stored``).
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import PurePath

_WORKTREE_PARENTS = ("worktrees", ".worktrees", "worktree")


def wing_from_cwd(cwd: str | None, default: str = "general") -> str:
    """The project a cwd belongs to: its folder name, or the repo's name for a git worktree
    (``~/projects/spotter/worktrees/spotter-4te`` -> ``spotter``)."""
    if not cwd:
        return default
    parts = [p for p in PurePath(cwd.replace("\\", "/")).parts if p not in ("/", "")]
    if not parts:
        return default
    for i in range(len(parts) - 1, 0, -1):
        if parts[i - 1] in _WORKTREE_PARENTS and i >= 2:
            base = parts[i - 2]
            if base == ".claude" and i >= 3:
                base = parts[i - 3]
            return slug(base)
    if len(parts) >= 2 and parts[-2].endswith("-worktrees") and len(parts[-2]) > len("-worktrees"):
        return slug(parts[-2][: -len("-worktrees")])
    return slug(parts[-1])


def normal_wing(name: str) -> str:
    """The one form of a wing name (module docstring); "" stays ""."""
    text = unicodedata.normalize("NFKC", name)
    text = "".join(c for c in text if unicodedata.category(c) != "Cf")
    return " ".join(text.split())


def slug(name: str) -> str:
    s = re.sub(r"[^\w.-]+", "-", normal_wing(name)).strip("-")
    return s or "general"
