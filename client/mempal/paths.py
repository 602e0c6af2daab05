"""Where the daemon's socket lives, and how a client finds the daemon of its own data directory (stdlib only).

The daemon listens on ``socket_path()``: ``MEMPAL_SOCKET``; else ``runtime_dir()/mempald.sock``, where the runtime
dir is ``MEMPAL_RUNTIME_DIR``; else ``$XDG_RUNTIME_DIR/mempald``; else ``/run/user/<uid>/mempald`` when the
systemd per-user runtime dir exists and is ours (it exists even when a host dropped ``XDG_RUNTIME_DIR`` from the
environment); else ``~/Library/Caches/mempald/run`` on macOS; else ``/tmp/mempald-<uid>`` (created 0700 and
checked for ownership by the daemon).

Once it listens, the daemon leaves a pointer in its data directory (``daemon.json``: socket, pid, uid, data dir),
where every client of the same user and data directory finds it whatever environment it was started with: MCP
hosts start servers with little more than HOME, USER and PATH. A client (``locate``) looks in this order:
``MEMPAL_SOCKET``, ``MEMPAL_RUNTIME_DIR`` (both explicit), the pointer of its data directory, the computed path.
The data directory is ``MEMPAL_DATA_DIR``, else the one ``mempald.config.data_dir`` computes (platformdirs:
``$XDG_DATA_HOME/mempald`` or ``~/.local/share/mempald``; ``~/Library/Application Support/mempald`` on macOS).
``mempal.connection`` then checks that the daemon it reached serves this user and this data directory.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

SOCKET_NAME = "mempald.sock"
POINTER_NAME = "daemon.json"
APP = "mempald"
RUN_USER = Path("/run/user")  # systemd-logind's per-user runtime dirs


def _env(environ: Mapping[str, str] | None) -> Mapping[str, str]:
    return os.environ if environ is None else environ


def _home(environ: Mapping[str, str]) -> Path:
    home = environ.get("HOME", "")
    return Path(home) if os.path.isabs(home) else Path.home()


def _user_run_dir(run_user: Path) -> Path | None:
    """``/run/user/<uid>`` when it is a real directory of ours."""
    path = run_user / str(os.getuid())
    try:
        st = path.lstat()
    except OSError:
        return None
    return path if path.is_dir() and not path.is_symlink() and st.st_uid == os.getuid() else None


def runtime_dir(environ: Mapping[str, str] | None = None, *, run_user: Path = RUN_USER) -> Path:
    """The socket's directory for this environment (``os.environ`` by default)."""
    environ = _env(environ)
    env = environ.get("MEMPAL_RUNTIME_DIR")
    if env:
        return Path(env).expanduser()
    xdg = environ.get("XDG_RUNTIME_DIR")
    if xdg and Path(xdg).is_dir():
        return Path(xdg) / APP
    systemd = _user_run_dir(run_user)
    if systemd is not None:
        return systemd / APP
    if sys.platform == "darwin":
        return _home(environ) / "Library" / "Caches" / APP / "run"
    return Path("/tmp") / f"mempald-{os.getuid()}"


def socket_path(environ: Mapping[str, str] | None = None, *, run_user: Path = RUN_USER) -> Path:
    """Where the daemon listens in this environment (``os.environ`` by default)."""
    environ = _env(environ)
    env = environ.get("MEMPAL_SOCKET")
    if env:
        return Path(env).expanduser()
    return runtime_dir(environ, run_user=run_user) / SOCKET_NAME


def _xdg(environ: Mapping[str, str], key: str) -> Path | None:
    value = environ.get(key, "")
    return Path(value) if os.path.isabs(value) else None


def data_dir(environ: Mapping[str, str] | None = None) -> Path:
    """The daemon's data directory for this environment: the same answer as ``mempald.config.data_dir``."""
    environ = _env(environ)
    env = environ.get("MEMPAL_DATA_DIR")
    if env:
        return Path(env).expanduser()
    base = _xdg(environ, "XDG_DATA_HOME")
    if base is None:
        home = _home(environ)
        base = home / "Library" / "Application Support" if sys.platform == "darwin" else home / ".local" / "share"
    return base / APP


def config_dir(environ: Mapping[str, str] | None = None) -> Path:
    """The config directory for this environment: the same answer as ``mempald.config.config_dir``."""
    environ = _env(environ)
    env = environ.get("MEMPAL_CONFIG_DIR")
    if env:
        return Path(env).expanduser()
    base = _xdg(environ, "XDG_CONFIG_HOME")
    if base is None:
        home = _home(environ)
        base = home / "Library" / "Application Support" if sys.platform == "darwin" else home / ".config"
    return base / APP


# the pointer -------------------------------------------------------------------------------------------------
class Pointer(NamedTuple):
    """What a running daemon says about itself in its data directory."""

    socket: Path
    pid: int
    uid: int
    data_dir: str


def read_pointer(ddir: Path) -> Pointer | None:
    """The pointer in ``ddir`` (None when absent, unreadable or not ours)."""
    try:
        raw: Any = json.loads((ddir / POINTER_NAME).read_text(encoding="utf-8"))
        pointer = Pointer(Path(raw["socket"]), int(raw["pid"]), int(raw["uid"]), str(raw["data_dir"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return pointer if pointer.uid == os.getuid() and pointer.socket.is_absolute() else None


def publish_pointer(ddir: Path, socket: Path, *, version: str = "") -> Path | None:
    """Daemon side: write ``ddir/daemon.json`` (0600, atomically) once the socket listens. Never raises (a
    daemon that cannot write it still serves; clients then find it by the computed path): None on failure."""
    target = ddir / POINTER_NAME
    tmp = ddir / f".{POINTER_NAME}.{os.getpid()}"
    body = {"socket": str(socket.absolute()), "pid": os.getpid(), "uid": os.getuid(),
            "data_dir": str(ddir.absolute()), "version": version, "started_at": round(time.time(), 3)}
    try:
        ddir.mkdir(parents=True, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(body, fh)
        os.replace(tmp, target)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()
        return None
    return target


def withdraw_pointer(ddir: Path) -> None:
    """Daemon side, at shutdown: remove the pointer if this process wrote it."""
    pointer = read_pointer(ddir)
    if pointer is not None and pointer.pid == os.getpid():
        with contextlib.suppress(OSError):
            (ddir / POINTER_NAME).unlink()


# finding the daemon ----------------------------------------------------------------------------------------
class Located(NamedTuple):
    """Where a client will look for its daemon: the socket, how it was chosen, the data directory the daemon
    must serve, and the pointer of that directory when it named this socket."""

    socket: Path
    how: str  # MEMPAL_SOCKET | MEMPAL_RUNTIME_DIR | pointer | default
    data_dir: Path
    pointer: Pointer | None


def locate(environ: Mapping[str, str] | None = None, *, run_user: Path = RUN_USER) -> Located:
    """This client's daemon, in the order of the module docstring."""
    environ = _env(environ)
    ddir = data_dir(environ)
    pointer = read_pointer(ddir)
    explicit = environ.get("MEMPAL_SOCKET")
    if explicit:
        path, how = Path(explicit).expanduser(), "MEMPAL_SOCKET"
    elif environ.get("MEMPAL_RUNTIME_DIR"):
        path, how = runtime_dir(environ, run_user=run_user) / SOCKET_NAME, "MEMPAL_RUNTIME_DIR"
    elif pointer is not None and pointer.socket.exists():
        path, how = pointer.socket, "pointer"
    else:
        path, how = socket_path(environ, run_user=run_user), "default"
    same = pointer is not None and os.path.abspath(pointer.socket) == os.path.abspath(path)
    return Located(path, how, ddir, pointer if same else None)


PIN_KEYS = ("MEMPAL_DATA_DIR", "MEMPAL_CONFIG_DIR", "MEMPAL_RUNTIME_DIR", "MEMPAL_SOCKET")


def pinned_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The location variables to write into an MCP server's or a hook's environment so that it finds this
    palace even when its host passes only HOME, USER and PATH: the data and config directories where they differ
    from what such a bare environment computes, and the runtime dir or socket when they were set explicitly."""
    environ = _env(environ)
    bare = {k: environ[k] for k in ("HOME", "USER", "LOGNAME") if k in environ}
    out: dict[str, str] = {}
    if os.path.abspath(data_dir(environ)) != os.path.abspath(data_dir(bare)):
        out["MEMPAL_DATA_DIR"] = os.path.abspath(data_dir(environ))
    if os.path.abspath(config_dir(environ)) != os.path.abspath(config_dir(bare)):
        out["MEMPAL_CONFIG_DIR"] = os.path.abspath(config_dir(environ))
    for key in ("MEMPAL_RUNTIME_DIR", "MEMPAL_SOCKET"):
        if environ.get(key):
            out[key] = os.path.abspath(os.path.expanduser(environ[key]))
    return out
