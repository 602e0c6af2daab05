"""The Unix socket server: newline-delimited JSON-RPC, many clients at once, owner-only.

The connection handler only moves bytes: the app (``mempald.rpc.dispatch.Dispatcher``) turns a request line
into a reply line. Nothing a client sends may end or stall the server:

- lines are read with a cap (``receive_until``, plus an exact length check: anyio may hand back a line up to one
  read longer than asked); a line over the cap gets its error, the rest of that line is read and thrown away
  (bounded) so a client still sending it can read the error, and the connection goes on after its newline;
- a client idle longer than the idle timeout (or sending a byte a second) is dropped;
- at ``max_clients``, a new client takes the place of the one that has waited longest without a request
  (so idle connections cannot lock out ``status`` and the hooks); only when every client is mid-request is a
  newcomer refused;
- a failing ``accept`` (out of file descriptors, memory) is logged and retried after a pause instead of ending
  the listener, and the soft file-descriptor limit is raised to the hard one at start;
- a handler crash becomes an internal-error reply and a logged traceback; any other failure of one
  connection is logged and closes that connection only.
"""

from __future__ import annotations

import errno
import itertools
import os
import resource
import socket
import stat
import struct
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
from anyio.abc import SocketAttribute, SocketListener, SocketStream, TaskGroup, TaskStatus
from anyio.streams.buffered import BufferedByteReceiveStream

from mempal.protocol import FORBIDDEN, INTERNAL_ERROR, INVALID_REQUEST, LIMIT_EXCEEDED, encode_error
from mempald import logs
from mempald.config import DaemonSettings

log = logs.get("server")

# accept() failures that pass (descriptors or memory run out, a client gone before it was accepted).
_TRANSIENT_ACCEPT = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM, errno.ECONNABORTED,
                               errno.EINTR, errno.EAGAIN})
ACCEPT_PAUSE_S = 0.1
FD_RESERVE = 128  # descriptors kept for the store, the state database, watches and files being read
NOTICE_TIMEOUT_S = 1.0  # a parting error line to a client being dropped is not waited on longer
DRAIN_BYTES = 64 << 20  # after an over-long line, at most this much (or 16 lines' worth) is read away to its end


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


def raise_fd_limit() -> int:
    """Raise the soft limit on open files to the hard one (a daemon serving hundreds of clients needs more than
    the usual 1,024); returns the soft limit now in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
    if sys.platform == "darwin":
        target = min(target, 10_240)  # OPEN_MAX: macOS refuses more
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):
            pass
    return int(soft) if soft != resource.RLIM_INFINITY else 1 << 20


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
        self.max_clients = config.max_clients
        self.clients = 0
        self.requests = 0  # lines handed to the app
        self.evicted = 0  # idle clients dropped to make room for a new one
        self.refused = 0  # clients refused because every slot was mid-request
        self.accept_failures = 0
        self._ids = itertools.count()
        # Conversations waiting for their next request line: id -> (waiting since, the scope to cancel).
        self._waiting: dict[int, tuple[float, anyio.CancelScope]] = {}

    async def serve(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        prepare_socket_dir(self.path)
        clear_stale_socket(self.path)
        fds = raise_fd_limit()
        if self.max_clients > fds - FD_RESERVE:
            self.max_clients = max(8, fds - FD_RESERVE)
            log.warning("max_clients_lowered", max_clients=self.max_clients, open_files_limit=fds,
                        message="the open-files limit leaves room for fewer clients than daemon.max_clients")
        listener = await anyio.create_unix_listener(self.path, mode=0o600)
        log.info("listening", socket=str(self.path))
        task_status.started()
        try:
            async with listener, anyio.create_task_group() as tg:
                await self._accept_loop(listener, tg)
        finally:
            self.path.unlink(missing_ok=True)

    async def _accept_loop(self, listener: SocketListener, tg: TaskGroup) -> None:
        while True:
            try:
                stream = await listener.accept()
            except (anyio.BrokenResourceError, OSError) as exc:
                cause = exc if isinstance(exc, OSError) else exc.__cause__
                if not isinstance(cause, OSError) or cause.errno not in _TRANSIENT_ACCEPT:
                    raise
                self.accept_failures += 1
                if self.accept_failures == 1 or self.accept_failures % 100 == 0:
                    log.warning("accept_failed", error=str(cause), failures=self.accept_failures,
                                clients=self.clients, retry_in_s=ACCEPT_PAUSE_S)
                await anyio.sleep(ACCEPT_PAUSE_S)
                continue
            tg.start_soon(self._handle, stream)

    async def _handle(self, stream: SocketStream) -> None:
        try:
            async with stream:
                await self._admit(stream)
        except Exception:  # one connection's failure never ends the server
            log.exception("connection_failed")

    async def _admit(self, stream: SocketStream) -> None:
        try:
            raw = stream.extra(SocketAttribute.raw_socket)
            uid = self.uid_of(raw)
        except (OSError, struct.error):
            uid = None
        if uid != self.allowed_uid:
            log.warning("peer_refused", uid=uid)
            await self._send(stream, encode_error(None, FORBIDDEN, "forbidden: this socket belongs to another user"))
            return
        if self.clients >= self.max_clients and not self._evict_idlest():
            self.refused += 1
            await self._send(stream, encode_error(None, LIMIT_EXCEEDED, "too many clients; try again"))
            return
        self.clients += 1
        try:
            await self._conversation(stream)
        finally:
            self.clients -= 1

    def _evict_idlest(self) -> bool:
        """Drop the client that has waited longest without sending a request, to make room for a new one."""
        if not self._waiting:
            return False
        key = min(self._waiting, key=lambda k: self._waiting[k][0])
        _since, scope = self._waiting.pop(key)
        scope.cancel()
        self.evicted += 1
        if self.evicted == 1 or self.evicted % 100 == 0:
            log.warning("idle_client_dropped", clients=self.clients, evicted=self.evicted,
                        reason=f"{self.max_clients} clients connected (daemon.max_clients)")
        return True

    async def _send(self, stream: SocketStream, data: bytes, limit_s: float | None = None) -> bool:
        try:
            with anyio.fail_after(self.config.idle_timeout if limit_s is None else limit_s):
                await stream.send(data)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, TimeoutError, OSError):
            return False
        return True

    async def _conversation(self, stream: SocketStream) -> None:
        reader = BufferedByteReceiveStream(stream)
        max_line = self.config.max_line
        key = next(self._ids)
        while True:
            line: bytes | None = None
            overlong = False
            with anyio.CancelScope() as waiting:
                self._waiting[key] = (time.monotonic(), waiting)
                try:
                    with anyio.fail_after(self.config.idle_timeout):
                        # One byte more than the cap: a line of exactly the cap whose newline is still on its
                        # way is not refused; a longer one comes back and is refused below.
                        line = await reader.receive_until(b"\n", max_line + 1)
                except anyio.DelimiterNotFound:
                    overlong = True
                except (anyio.IncompleteRead, anyio.EndOfStream, anyio.BrokenResourceError,
                        anyio.ClosedResourceError, TimeoutError, OSError):
                    return
                finally:
                    self._waiting.pop(key, None)
            if waiting.cancelled_caught:  # dropped to make room for another client
                await self._send(stream, encode_error(None, LIMIT_EXCEEDED, "closed: too many clients connected, "
                                                      "and this one was the longest idle"), NOTICE_TIMEOUT_S)
                return
            if overlong or (line is not None and len(line) > max_line):
                if not await self._refuse_line(stream, reader, complete=not overlong):
                    return
                continue
            assert line is not None
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

    async def _refuse_line(self, stream: SocketStream, reader: BufferedByteReceiveStream, *, complete: bool) -> bool:
        """Answer a line over the cap. The error goes out first (it fits in the socket buffer), then the rest of
        the line is read and dropped, so a client still sending it is not reset before it reads the error; the
        conversation goes on after the line's newline. False: the connection is to be closed."""
        max_line = self.config.max_line
        if not await self._send(stream, encode_error(
                None, INVALID_REQUEST, f"invalid request: line longer than {max_line} bytes")):
            return False
        if complete:
            return True
        budget = max(DRAIN_BYTES, 16 * (max_line + 1))
        with anyio.move_on_after(self.config.idle_timeout):
            while budget > 0:
                try:  # all that is buffered at once, so what follows the newline can be put back in order
                    chunk = await reader.receive(max(65536, len(reader.buffer)))
                except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                    return False
                end = chunk.find(b"\n")
                if end >= 0:
                    reader.feed_data(chunk[end + 1 :])
                    return True
                budget -= len(chunk)
        return False
