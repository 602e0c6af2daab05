"""The viewer's way to the daemon: ``mempal.Client`` over the Unix socket, like the CLI (it never opens the
store, so the daemon stays socket-only and owner-only).

``Client`` is blocking, so each page's calls run in a worker thread. Connections are kept in a small pool and
reused page after page (a new one costs a connect and the daemon's identity check); one that failed is
dropped, and the next page opens a new one.
"""

from __future__ import annotations

import queue
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio.to_thread

from mempal.api import Client

T = TypeVar("T")
AGENT = "user"  # who deletes or restores from the viewer: the person at the browser
POOL = 4  # idle connections kept


class DaemonLink:
    def __init__(self, socket: Path | None = None, timeout: float = 30.0) -> None:
        self.socket = socket
        self.timeout = timeout
        self._idle: queue.SimpleQueue[Client] = queue.SimpleQueue()

    def _take(self) -> tuple[Client, bool]:
        """A connection, and whether it was kept from an earlier page."""
        try:
            return self._idle.get_nowait(), True
        except queue.Empty:
            return Client(self.socket, timeout=self.timeout, agent=AGENT), False

    async def run(self, job: Callable[[Client], T]) -> T:
        """``job(client)`` on a pooled connection, in a worker thread. Raises ``DaemonUnavailable`` /
        ``RpcError``. A kept connection the daemon closed (it restarted) is replaced once; the viewer's jobs
        are reads, or deletes and restores, which are idempotent."""
        from mempal.connection import DaemonUnavailable
        from mempal.protocol import INTERNAL_ERROR, RpcError

        def attempt() -> T:
            client, kept = self._take()
            try:
                result = job(client)
            except RpcError as exc:
                if exc.code == INTERNAL_ERROR:  # a timeout may leave a late answer in the connection
                    client.close()
                else:  # a refusal leaves it usable
                    self._give_back(client)
                raise
            except DaemonUnavailable:
                client.close()
                if kept:
                    return attempt()
                raise
            except BaseException:
                client.close()
                raise
            self._give_back(client)
            return result

        return await anyio.to_thread.run_sync(attempt)

    def _give_back(self, client: Client) -> None:
        if self._idle.qsize() < POOL:
            self._idle.put(client)
        else:
            client.close()

    async def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        return await self.run(lambda c: c.call(method, params or {}))

    def close(self) -> None:
        while True:
            try:
                self._idle.get_nowait().close()
            except queue.Empty:
                return
