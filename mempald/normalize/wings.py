"""Wing names from working directories (pure)."""

from __future__ import annotations

import re
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


def slug(name: str) -> str:
    s = re.sub(r"[^\w.-]+", "-", name.strip()).strip("-")
    return s or "general"
