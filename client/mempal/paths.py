"""Where the daemon's socket lives. Stdlib only: the daemon and every client compute the same path.

Order: ``MEMPAL_RUNTIME_DIR``; else ``$XDG_RUNTIME_DIR/mempald``; else ``~/Library/Caches/mempald/run``
on macOS; else ``/tmp/mempald-<uid>`` (a fallback for machines without a runtime dir, created 0700 and
checked for ownership by the daemon).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

SOCKET_NAME = "mempald.sock"


def runtime_dir(environ: Mapping[str, str] | None = None) -> Path:
    """The socket's directory for this environment (``os.environ`` by default)."""
    environ = os.environ if environ is None else environ
    env = environ.get("MEMPAL_RUNTIME_DIR")
    if env:
        return Path(env).expanduser()
    xdg = environ.get("XDG_RUNTIME_DIR")
    if xdg and Path(xdg).is_dir():
        return Path(xdg) / "mempald"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "mempald" / "run"
    return Path("/tmp") / f"mempald-{os.getuid()}"


def socket_path(environ: Mapping[str, str] | None = None) -> Path:
    """Where the daemon listens in this environment (``os.environ`` by default)."""
    environ = os.environ if environ is None else environ
    env = environ.get("MEMPAL_SOCKET")
    if env:
        return Path(env).expanduser()
    return runtime_dir(environ) / SOCKET_NAME
