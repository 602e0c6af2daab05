"""The viewer's way to the daemon: ``mempal.Client`` over the Unix socket, like the CLI (it never opens the
store, so the daemon stays socket-only and owner-only).

``Client`` is blocking, so each page's calls run in a worker thread, on one connection per page.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio.to_thread

from mempal.api import Client

T = TypeVar("T")
AGENT = "user"  # who deletes or restores from the viewer: the person at the browser


class DaemonLink:
    def __init__(self, socket: Path | None = None, timeout: float = 30.0) -> None:
        self.socket = socket
        self.timeout = timeout

    async def run(self, job: Callable[[Client], T]) -> T:
        """``job(client)`` on a fresh connection, in a worker thread. Raises ``DaemonUnavailable`` / ``RpcError``."""
        def work() -> T:
            client = Client(self.socket, timeout=self.timeout, agent=AGENT)
            try:
                return job(client)
            finally:
                client.close()

        return await anyio.to_thread.run_sync(work)

    async def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        return await self.run(lambda c: c.call(method, params or {}))
