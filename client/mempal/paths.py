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

import os
import stat
import sys
import time

from mempal import wirejson
from mempal.protocol import Record

TYPE_CHECKING = False  # not typing's: the hook imports this module, and typing costs it ~20 ms at start
if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path
    from typing import Any

SOCKET_NAME = "mempald.sock"
POINTER_NAME = "daemon.json"
LOCK_NAME = "mempald.lock"  # the daemon's instance lock in its data dir; it holds the pid of the one that took it
APP = "mempald"
RUN_USER = "/run/user"  # systemd-logind's per-user runtime dirs

# Every location is computed as a str (os.path); the functions without ``_str`` give it as a Path. pathlib is
# imported only then: with re and urllib.parse it costs a hook process ~25 ms at start.


def _path(value: str) -> Path:
    from pathlib import Path

    return Path(value)


def _env(environ: Mapping[str, str] | None) -> Mapping[str, str]:
    return os.environ if environ is None else environ


def _home(environ: Mapping[str, str]) -> str:
    home = environ.get("HOME", "")
    return home if os.path.isabs(home) else os.path.expanduser("~")


def _user_run_dir(run_user: str | os.PathLike[str]) -> str | None:
    """``/run/user/<uid>`` when it is a real directory of ours."""
    path = os.path.join(run_user, str(os.getuid()))
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return path if stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() else None


def runtime_dir_str(environ: Mapping[str, str] | None = None, *,
                    run_user: str | os.PathLike[str] = RUN_USER) -> str:
    """The socket's directory for this environment (``os.environ`` by default)."""
    environ = _env(environ)
    env = environ.get("MEMPAL_RUNTIME_DIR")
    if env:
        return os.path.expanduser(env)
    xdg = environ.get("XDG_RUNTIME_DIR")
    if xdg and os.path.isdir(xdg):
        return os.path.join(xdg, APP)
    systemd = _user_run_dir(run_user)
    if systemd is not None:
        return os.path.join(systemd, APP)
    if sys.platform == "darwin":
        return os.path.join(_home(environ), "Library", "Caches", APP, "run")
    return os.path.join("/tmp", f"mempald-{os.getuid()}")


def runtime_dir(environ: Mapping[str, str] | None = None, *, run_user: str | os.PathLike[str] = RUN_USER) -> Path:
    return _path(runtime_dir_str(environ, run_user=run_user))


def socket_path_str(environ: Mapping[str, str] | None = None, *,
                    run_user: str | os.PathLike[str] = RUN_USER) -> str:
    """Where the daemon listens in this environment (``os.environ`` by default)."""
    environ = _env(environ)
    env = environ.get("MEMPAL_SOCKET")
    if env:
        return os.path.expanduser(env)
    return os.path.join(runtime_dir_str(environ, run_user=run_user), SOCKET_NAME)


def socket_path(environ: Mapping[str, str] | None = None, *, run_user: str | os.PathLike[str] = RUN_USER) -> Path:
    return _path(socket_path_str(environ, run_user=run_user))


def _xdg(environ: Mapping[str, str], key: str) -> str | None:
    value = environ.get(key, "")
    return value if os.path.isabs(value) else None


def data_dir_str(environ: Mapping[str, str] | None = None) -> str:
    """The daemon's data directory for this environment: the same answer as ``mempald.config.data_dir``."""
    environ = _env(environ)
    env = environ.get("MEMPAL_DATA_DIR")
    if env:
        return os.path.expanduser(env)
    base = _xdg(environ, "XDG_DATA_HOME")
    if base is None:
        home = _home(environ)
        base = (os.path.join(home, "Library", "Application Support") if sys.platform == "darwin"
                else os.path.join(home, ".local", "share"))
    return os.path.join(base, APP)


def data_dir(environ: Mapping[str, str] | None = None) -> Path:
    return _path(data_dir_str(environ))


def config_dir(environ: Mapping[str, str] | None = None) -> Path:
    """The config directory for this environment: the same answer as ``mempald.config.config_dir``."""
    environ = _env(environ)
    env = environ.get("MEMPAL_CONFIG_DIR")
    if env:
        return _path(os.path.expanduser(env))
    base = _xdg(environ, "XDG_CONFIG_HOME")
    if base is None:
        home = _home(environ)
        base = (os.path.join(home, "Library", "Application Support") if sys.platform == "darwin"
                else os.path.join(home, ".config"))
    return _path(os.path.join(base, APP))


# the pointer -------------------------------------------------------------------------------------------------
class Pointer(Record):
    """What a running daemon says about itself in its data directory."""

    __slots__ = ("data_dir", "pid", "socket", "uid")

    def __init__(self, socket: str, pid: int, uid: int, data_dir: str) -> None:
        self.socket = socket
        self.pid = pid
        self.uid = uid
        self.data_dir = data_dir


def read_pointer(ddir: str | os.PathLike[str]) -> Pointer | None:
    """The pointer in ``ddir`` (None when absent, unreadable or not ours)."""
    try:
        with open(os.path.join(ddir, POINTER_NAME), encoding="utf-8") as fh:
            raw: Any = wirejson.loads(fh.read())
        pointer = Pointer(str(raw["socket"]), int(raw["pid"]), int(raw["uid"]), str(raw["data_dir"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return pointer if pointer.uid == os.getuid() and os.path.isabs(pointer.socket) else None


def starting_daemon(ddir: str | os.PathLike[str]) -> int | None:
    """The pid of a mempald that holds ``ddir`` but does not serve yet (it opens its model and store before its
    socket), from the lock file: None when that process is gone or is not a mempald. A check, not a lock: a
    client taking the lock, even shared, could make a daemon starting in that moment think another one runs."""
    try:
        with open(os.path.join(ddir, LOCK_NAME), encoding="utf-8") as fh:
            pid = int(fh.read().strip() or 0)
    except (OSError, ValueError):
        return None
    if pid <= 0 or pid == os.getpid():
        return None
    try:
        os.kill(pid, 0)
    except OSError:  # gone (the lock file keeps the pid of the last daemon), or not this user's
        return None
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            if b"mempald" not in fh.read():
                return None  # the pid was taken by another program since
    except OSError:
        pass  # no /proc (macOS): taken at the lock file's word
    return pid


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
            fh.write(wirejson.dumps(body))
        os.replace(tmp, target)
    except OSError:
        try:
            tmp.unlink()
        except OSError:
            pass
        return None
    return target


def withdraw_pointer(ddir: Path) -> None:
    """Daemon side, at shutdown: remove the pointer if this process wrote it."""
    pointer = read_pointer(ddir)
    if pointer is not None and pointer.pid == os.getpid():
        try:
            (ddir / POINTER_NAME).unlink()
        except OSError:
            pass


# finding the daemon ----------------------------------------------------------------------------------------
class Located(Record):
    """Where a client will look for its daemon: the socket, how it was chosen (MEMPAL_SOCKET |
    MEMPAL_RUNTIME_DIR | pointer | default), the data directory the daemon must serve, and the pointer of that
    directory when it named this socket. Paths as str (``socket_path``, ``data_dir`` give Paths)."""

    __slots__ = ("data_dir", "how", "pointer", "socket")

    def __init__(self, socket: str, how: str, data_dir: str, pointer: Pointer | None) -> None:
        self.socket = socket
        self.how = how
        self.data_dir = data_dir
        self.pointer = pointer


def locate(environ: Mapping[str, str] | None = None, *, run_user: str | os.PathLike[str] = RUN_USER) -> Located:
    """This client's daemon, in the order of the module docstring."""
    environ = _env(environ)
    ddir = data_dir_str(environ)
    pointer = read_pointer(ddir)
    explicit = environ.get("MEMPAL_SOCKET")
    if explicit:
        path, how = os.path.expanduser(explicit), "MEMPAL_SOCKET"
    elif environ.get("MEMPAL_RUNTIME_DIR"):
        path, how = os.path.join(runtime_dir_str(environ, run_user=run_user), SOCKET_NAME), "MEMPAL_RUNTIME_DIR"
    elif pointer is not None and os.path.exists(pointer.socket):
        path, how = pointer.socket, "pointer"
    else:
        path, how = socket_path_str(environ, run_user=run_user), "default"
    same = pointer is not None and os.path.abspath(pointer.socket) == os.path.abspath(path)
    return Located(path, how, ddir, pointer if same else None)


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
