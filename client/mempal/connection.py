"""A small blocking socket client for the daemon (stdlib only, short timeouts).

``Connection()`` finds this client's daemon (``mempal.paths.locate``) and, once connected, checks that it is the
right one: the process on the socket must run as this user, and must serve this client's data directory (the
daemon that wrote the data directory's pointer, told by the socket's peer pid at no cost; otherwise asked with
``ping {identify: true}``). A wrong one is refused with a plain message (``WrongDaemon``); nothing answering
gives ``DaemonUnavailable`` with the socket path that was tried. ``Connection(path)`` talks to the socket given,
without the data-directory check (the caller chose it); ``Connection(environ=...)`` finds the daemon of that
environment (``mempal.Client(palace=DIR)`` passes one whose ``MEMPAL_DATA_DIR`` is DIR).
"""

from __future__ import annotations

# The C modules under ``socket`` and ``struct``: ``socket`` imports enum, selectors and collections, about 20 ms
# of a hook process's start (this module is the hooks' client). Everything used here is theirs.
import _socket as socket
import _struct as struct
import itertools
import os
import sys

from mempal.paths import locate, starting_daemon
from mempal.protocol import (
    DEFAULT_MAX_LINE,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    RpcError,
    decode_response,
    encode_request,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path
    from typing import Any

    from mempal.paths import Located

_ids = itertools.count(1)


class DaemonUnavailable(Exception):
    """The daemon is not running (no socket, or nothing answers on it), or the one answering is not ours."""


class DaemonStarting(DaemonUnavailable):
    """A mempald holds this data directory but its socket is not open yet (it is opening its model and store)."""

    def __init__(self, message: str, pid: int) -> None:
        super().__init__(message)
        self.pid = pid


class WrongDaemon(DaemonUnavailable):
    """Something answers on the socket, but it is not this user's daemon for this data directory."""


START = "start it with `mempald` (or `mempald install-service` to run it at login)"


def not_running(path: str | Path) -> str:
    """The one-line message for a socket nobody answers on (it names the socket tried)."""
    return f"mempald is not running (nothing answers on {path}); {START}"


def peer_ids(sock: socket.socket) -> tuple[int | None, int | None]:
    """(uid, pid) of the process on the other end of a connected Unix socket, None where the OS cannot say."""
    try:
        if hasattr(socket, "SO_PEERCRED"):
            pid, uid, _gid = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                                                 struct.calcsize("3i")))
            return int(uid), int(pid)
        if sys.platform == "darwin":  # LOCAL_PEERCRED (struct xucred: version, uid, ...) and LOCAL_PEERPID
            uid = int(struct.unpack_from("I", sock.getsockopt(0, 0x001, 76), 4)[0])
            return uid, int(struct.unpack("i", sock.getsockopt(0, 0x002, 4))[0])
    except Exception:  # OSError, or struct.error for a reply of another size: the OS cannot say
        pass
    return None, None


def _same_dir(a: str, b: str) -> bool:
    return os.path.realpath(a) == os.path.realpath(b)


class Connection:
    """One connection to the daemon; several calls may share it."""

    def __init__(self, path: str | Path | None = None, timeout: float = 30.0, *,
                 environ: Mapping[str, str] | None = None) -> None:
        self.located: Located | None = None
        if path is None:
            self.located = locate(environ)
            path = self.located.socket
        self.path = os.fspath(path)
        self.timeout = timeout
        self._sock: socket.socket | None = None
        self._buf = b""

    def __enter__(self) -> Connection:
        self.connect()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            sock.connect(self.path)
        except (FileNotFoundError, ConnectionRefusedError, NotADirectoryError) as exc:
            sock.close()
            pid = starting_daemon(self.located.data_dir) if self.located is not None else None
            if pid is not None:
                raise DaemonStarting(f"mempald (pid {pid}) holds this data directory but does not serve on "
                                     f"{self.path} yet: it is starting (it opens its store before its socket), "
                                     "or an offline `mempald` command is running; try again in a few seconds",
                                     pid) from exc
            raise DaemonUnavailable(not_running(self.path)) from exc
        except OSError as exc:
            sock.close()
            raise DaemonUnavailable(f"cannot reach mempald at {self.path}: {exc}") from exc
        self._sock = sock
        self._buf = b""
        try:
            self._check(sock)
        except BaseException:
            self.close()
            raise

    def _check(self, sock: socket.socket) -> None:
        """Refuse a daemon of another user, or (when this connection found its own) of another data dir."""
        uid, pid = peer_ids(sock)
        if uid is not None and uid != os.getuid():
            raise WrongDaemon(f"the process answering on {self.path} runs as uid {uid}, not as this user "
                              f"(uid {os.getuid()}): refusing to talk to it")
        here = self.located
        if here is None or (here.pointer is not None and pid is not None and pid == here.pointer.pid):
            return
        try:
            who = self.call("ping", {"identify": True})
        except RpcError as exc:
            if exc.code in (INVALID_PARAMS, METHOD_NOT_FOUND):
                return  # a daemon from before identities: it cannot say, so it is taken at its word
            raise
        theirs = who.get("data_dir") if isinstance(who, dict) else None
        if isinstance(theirs, str) and not _same_dir(theirs, here.data_dir):
            raise WrongDaemon(
                f"the mempald answering on {self.path} (pid {who.get('pid')}) serves {theirs}, not this client's "
                f"data directory {here.data_dir}: start mempald for {here.data_dir}, or point this client at its "
                "daemon (MEMPAL_DATA_DIR, or MEMPAL_SOCKET)")

    def set_timeout(self, timeout: float) -> None:
        """How long the next calls wait (also on an open connection)."""
        self.timeout = timeout
        if self._sock is not None:
            self._sock.settimeout(timeout)

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        if self._sock is None:
            self.connect()
        assert self._sock is not None
        req_id = next(_ids)
        try:
            self._sock.sendall(encode_request(req_id, method, params))
            line = self._read_line()
        except TimeoutError as exc:
            raise RpcError(-32603, f"mempald did not answer {method!r} within {self.timeout:g}s") from exc
        except OSError as exc:
            raise DaemonUnavailable(f"connection to mempald at {self.path} lost: {exc}") from exc
        resp = decode_response(line)
        if resp.error is not None:
            raise RpcError(resp.error.code, resp.error.message, resp.error.data)
        return resp.result

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send a notification (no reply is read) on this connection, if it is open; never raises."""
        if self._sock is None:
            return
        try:
            self._sock.sendall(encode_request(None, method, params))
        except OSError:
            pass

    def _read_line(self) -> bytes:
        assert self._sock is not None
        while b"\n" not in self._buf:
            chunk = self._sock.recv(65536)
            if not chunk:
                raise DaemonUnavailable(f"mempald closed the connection on {self.path}")
            self._buf += chunk
            if len(self._buf) > 64 * DEFAULT_MAX_LINE:
                raise RpcError(-32600, "reply too large")
        line, _, self._buf = self._buf.partition(b"\n")
        return line


START_WAIT_S = 60.0  # the longest ``call`` waits for a daemon that is starting


def call(method: str, params: dict[str, Any] | None = None, *, timeout: float = 30.0) -> Any:
    """Open a connection, make one call, close it. A daemon that is starting is waited for, up to
    ``START_WAIT_S`` (or ``timeout`` when shorter): a command run just after ``mempald`` was started, or at login,
    gets its answer instead of "not running". (Hooks use ``Connection`` directly and never wait.)"""
    import time

    deadline = time.monotonic() + min(timeout, START_WAIT_S)
    while True:
        conn = Connection(timeout=timeout)
        try:
            conn.connect()
        except DaemonStarting:
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.2)
            continue
        with conn:
            return conn.call(method, params)
