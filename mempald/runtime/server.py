"""The Unix socket server: newline-delimited JSON-RPC, many clients at once, owner-only.

The connection handler only moves bytes: the app (``mempald.rpc.dispatch.Dispatcher``) turns a request line
into a reply line. Lines are read with a cap (``receive_until``); a client idle longer than the idle timeout (or
sending a byte a second) is dropped; a handler crash becomes an internal-error reply and a logged
traceback, and the server lives on.
"""

from __future__ import annotations

import errno
import os
import socket
import stat
import struct
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
from anyio.abc import SocketAttribute, SocketStream, TaskStatus
from anyio.streams.buffered import BufferedByteReceiveStream

from mempal.protocol import FORBIDDEN, INTERNAL_ERROR, INVALID_REQUEST, LIMIT_EXCEEDED, encode_error
from mempald import logs
from mempald.config import DaemonSettings

log = logs.get("server")


class SocketInUse(Exception):
    """Another live process answers on the socket path."""


def peer_uid(sock: socket.socket) -> int | None:
    """The connecting process's uid (SO_PEERCRED on Linux, LOCAL_PEERCRED on macOS)."""
    if hasattr(socket, "SO_PEERCRED"):
        creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        _pid, uid, _gid = struct.unpack("3i", creds)
        return int(uid)
    if sys.platform == "darwin":
        local_peercred = 0x001
        raw = sock.getsockopt(0, local_peercred, 76)
        return int(struct.unpack_from("I", raw, 4)[0])
    return None


def prepare_socket_dir(path: Path) -> None:
    """Create the socket's directory 0700 and make sure it is ours and not open to others."""
    d = path.parent
    d.mkdir(parents=True, exist_ok=True, mode=0o700)
    st = d.lstat()
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        raise PermissionError(f"{d} is not a directory")
    if st.st_uid != os.getuid():
        raise PermissionError(f"{d} belongs to uid {st.st_uid}, not to this user")
    if st.st_mode & 0o077:
        os.chmod(d, 0o700)


def clear_stale_socket(path: Path) -> None:
    """Remove a socket left by a crash; refuse if a live process still answers on it."""
    if not path.exists() and not path.is_symlink():
        return
    if not stat.S_ISSOCK(path.lstat().st_mode):
        raise SocketInUse(f"{path} exists and is not a socket; remove it by hand")
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(1.0)
    try:
        probe.connect(str(path))
    except OSError as exc:
        if exc.errno in (errno.ECONNREFUSED, errno.ENOENT):
            path.unlink(missing_ok=True)
            return
        raise
    else:
        raise SocketInUse(f"another mempald answers on {path}")
    finally:
        probe.close()


class ServerConfig:
    """Everything the server needs to know (it knows nothing of what the requests do)."""

    __slots__ = ("idle_timeout", "max_clients", "max_line", "path")

    def __init__(self, path: Path, *, max_line: int, idle_timeout: float, max_clients: int) -> None:
        self.path = path
        self.max_line = max_line
        self.idle_timeout = idle_timeout
        self.max_clients = max_clients

    @classmethod
    def from_settings(cls, daemon: DaemonSettings, path: Path) -> ServerConfig:
        return cls(path, max_line=daemon.max_line_bytes, idle_timeout=daemon.idle_timeout_s,
                   max_clients=daemon.max_clients)


# Turns one request line into its reply line (None: a notification, nothing to send). Never raises.
App = Callable[[bytes], Awaitable[bytes | None]]


class Server:
    def __init__(self, config: ServerConfig, app: App,
                 uid_of: Callable[[socket.socket], int | None] = peer_uid) -> None:
        self.config = config
        self.path = config.path
        self.app = app
        self.uid_of = uid_of
        self.allowed_uid = os.getuid()
        self.clients = 0
        self.requests = 0  # lines handed to the app

    async def serve(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        prepare_socket_dir(self.path)
        clear_stale_socket(self.path)
        listener = await anyio.create_unix_listener(self.path, mode=0o600)
        log.info("listening", socket=str(self.path))
        task_status.started()
        try:
            async with listener, anyio.create_task_group() as tg:
                await listener.serve(self._handle, task_group=tg)
        finally:
            self.path.unlink(missing_ok=True)

    async def _handle(self, stream: SocketStream) -> None:
        async with stream:
            try:
                raw = stream.extra(SocketAttribute.raw_socket)
                uid = self.uid_of(raw)
            except (OSError, struct.error):
                uid = None
            if uid != self.allowed_uid:
                log.warning("peer_refused", uid=uid)
                await self._send(
                    stream, encode_error(None, FORBIDDEN, "forbidden: this socket belongs to another user"))
                return
            if self.clients >= self.config.max_clients:
                await self._send(stream, encode_error(None, LIMIT_EXCEEDED, "too many clients; try again"))
                return
            self.clients += 1
            try:
                await self._conversation(stream)
            finally:
                self.clients -= 1

    async def _send(self, stream: SocketStream, data: bytes) -> bool:
        try:
            with anyio.fail_after(self.config.idle_timeout):
                await stream.send(data)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, TimeoutError, OSError):
            return False
        return True

    async def _conversation(self, stream: SocketStream) -> None:
        reader = BufferedByteReceiveStream(stream)
        max_line = self.config.max_line
        while True:
            try:
                with anyio.fail_after(self.config.idle_timeout):
                    line = await reader.receive_until(b"\n", max_line)
            except anyio.DelimiterNotFound:
                await self._send(stream, encode_error(
                    None, INVALID_REQUEST, f"invalid request: line longer than {max_line} bytes"))
                return
            except (anyio.IncompleteRead, anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError,
                    TimeoutError, OSError):
                return
            if not line.strip():
                continue
            self.requests += 1
            try:
                reply = await self.app(line)
            except Exception:  # the app never raises; if it did, this client gets an answer and the server lives
                log.exception("dispatch_crashed")
                reply = encode_error(None, INTERNAL_ERROR, "internal error: the request could not be answered")
            if reply is not None and not await self._send(stream, reply):
                return
