"""Paths named by a request: absolute, existing, readable, resolved once (symlinks followed here, never later
during a walk)."""

from __future__ import annotations

import os
from pathlib import Path

from mempald.errors import Forbidden, InvalidInput, NotFound


def checked_path(raw: str) -> Path:
    path = Path(raw).expanduser()
    if not path.is_absolute():
        raise InvalidInput(f"path must be absolute: {raw!r}")
    try:
        resolved = path.resolve(strict=True)
    except FileNotFoundError:
        raise NotFound(f"no such file or directory: {raw}") from None
    except (OSError, RuntimeError) as exc:
        raise InvalidInput(f"cannot resolve {raw}: {exc}") from None
    if not os.access(resolved, os.R_OK):
        raise Forbidden(f"{resolved} is not readable by the daemon's user")
    return resolved
