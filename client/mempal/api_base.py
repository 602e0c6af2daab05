"""The plumbing under ``mempal.Client``: one socket connection, reused; parameters the caller leaves out are
filled the way the CLI fills them (the working directory, who is calling)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from mempal.connection import Connection
from mempal.methods import METHODS
from mempal.methods.vocab import AGENTS


class ClientBase:
    """A connection to the local mempald. ``agent`` is who this client speaks for (``user``, ``claude``,
    ``codex``, or a script's name): it signs saves and deletes and picks the partner agent for cowork calls.

    The daemon is found as every client finds it (``mempal.paths.locate``) and checked to serve this user and
    data directory; ``palace`` names another data directory (like ``mempal --palace DIR``); ``socket`` talks to
    that socket as it is, unchecked."""

    def __init__(self, socket: str | Path | None = None, *, timeout: float | None = None,
                 agent: str = "user", palace: str | Path | None = None) -> None:
        self.agent = agent
        self._timeout = timeout
        environ = None
        if palace is not None:
            environ = {**os.environ, "MEMPAL_DATA_DIR": os.path.abspath(os.path.expanduser(str(palace)))}
        self._conn = Connection(Path(socket) if socket is not None else None, timeout=timeout or 30.0,
                                environ=environ)

    def __enter__(self) -> ClientBase:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._conn.close()

    def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        """Call any socket method by name with raw parameters (the typed methods are nicer)."""
        spec = METHODS.get(method)
        self._conn.timeout = self._timeout or (spec.timeout if spec else 30.0)
        try:
            return self._conn.call(method, params or {})
        finally:
            self._conn.timeout = self._timeout or 30.0

    def _invoke(self, method: str, values: dict[str, Any]) -> dict[str, Any]:
        spec = METHODS[method]
        params: dict[str, Any] = {}
        for p in spec.params:
            value = values.get(p.name)
            if value is None and p.fill:
                value = self._fill(p.fill, p.choices)
            if value is None:
                continue
            if p.kind in ("strs", "paths", "ids") and not isinstance(value, str):
                value = list(value)
            if p.kind == "path":
                value = os.path.abspath(os.path.expanduser(str(value)))
            params[p.name] = value
        result: dict[str, Any] = self.call(method, params)
        return result

    def _fill(self, fill: str, choices: tuple[str, ...]) -> str | None:
        if fill == "cwd":
            return os.getcwd()
        value: str | None = self.agent
        if fill == "partner":
            value = next((a for a in AGENTS if a != self.agent), None) if self.agent in AGENTS else None
        return value if not choices or value in choices else None
