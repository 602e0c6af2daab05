"""Paths named by a request: absolute, existing, readable, resolved once (symlinks followed here, never later
during a walk), and a regular file or a folder outside the kernel's pseudo filesystems: ``watch add /dev/zero``
or ``mine /proc/self/environ`` are refused, as is a FIFO or a socket (reading one would block or never end)."""

from __future__ import annotations

import os
from pathlib import Path

from mempald.errors import Forbidden, InvalidInput, NotFound
from mempald.sources.reader import refusal


def checked_path(raw: str) -> Path:
    path = Path(raw).expanduser()
    if not path.is_absolute():
        raise InvalidInput(f"path must be absolute: {raw!r}")
    try:
        resolved = path.resolve(strict=True)
        st = resolved.stat()
    except FileNotFoundError:
        raise NotFound(f"no such file or directory: {raw}") from None
    except (OSError, RuntimeError) as exc:
        raise InvalidInput(f"cannot resolve {raw}: {exc}") from None
    why = refusal(st)
    if why is not None and why[0] == "directory":  # a folder may be named, unless it is /proc, /sys, /dev...
        why = refusal(st, pseudo_only=True)
    if why is not None:
        raise InvalidInput(f"{resolved}: {why[1]}: not read")
    if not os.access(resolved, os.R_OK):
        raise Forbidden(f"{resolved} is not readable by the daemon's user")
    return resolved
