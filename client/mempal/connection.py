"""A small blocking socket client for the daemon (stdlib only, short timeouts)."""

from __future__ import annotations

import itertools
import socket
from pathlib import Path
from typing import Any

from mempal.paths import socket_path
from mempal.protocol import DEFAULT_MAX_LINE, RpcError, decode_response, encode_request

_ids = itertools.count(1)


class DaemonUnavailable(Exception):
    """The daemon is not running (no socket, or nothing answers on it)."""


START_HINT = "mempald is not running; start it with `mempald` (or `mempald install-service` to run it at login)"


class Connection:
    """One connection to the daemon; several calls may share it."""

    def __init__(self, path: Path | None = None, timeout: float = 30.0) -> None:
        self.path = path or socket_path()
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
            sock.connect(str(self.path))
        except (FileNotFoundError, ConnectionRefusedError) as exc:
            sock.close()
            raise DaemonUnavailable(START_HINT) from exc
        except OSError as exc:
            sock.close()
            raise DaemonUnavailable(f"cannot reach mempald at {self.path}: {exc}") from exc
        self._sock = sock

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
            raise DaemonUnavailable(f"connection to mempald lost: {exc}") from exc
        resp = decode_response(line)
        if resp.error is not None:
            raise RpcError(resp.error.code, resp.error.message, resp.error.data)
        return resp.result

    def _read_line(self) -> bytes:
        assert self._sock is not None
        while b"\n" not in self._buf:
            chunk = self._sock.recv(65536)
            if not chunk:
                raise DaemonUnavailable("mempald closed the connection")
            self._buf += chunk
            if len(self._buf) > 64 * DEFAULT_MAX_LINE:
                raise RpcError(-32600, "reply too large")
        line, _, self._buf = self._buf.partition(b"\n")
        return line


def call(method: str, params: dict[str, Any] | None = None, *, timeout: float = 30.0) -> Any:
    """Open a connection, make one call, close it."""
    with Connection(timeout=timeout) as conn:
        return conn.call(method, params)
