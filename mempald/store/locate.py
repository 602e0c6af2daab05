"""Opening a store by name: a Qdrant server or in-process collection, or an embedded store folder.

Whoever opens a store says how it ranks searches (``ranker``: search code the store package does not import).
A store in a child process gets the ranker's ``module:function`` name and imports it there.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from mempald.config import Settings
from mempald.store.base import Ranker, Store


def ranker_ref(ranker: Ranker | None) -> str:
    """``module:function`` of a ranker, for a store process to import (empty: none)."""
    return f"{ranker.__module__}:{ranker.__qualname__}" if ranker is not None else ""


def open_store(settings: Settings, dim: int, *, daemon: bool = False, ranker: Ranker | None = None) -> Store:
    """The store the settings name: ``store.url`` when set, else the embedded store in ``store.path`` (for the
    daemon, in a child process unless ``store.process`` is off)."""
    if daemon and not settings.store.url and settings.store.process:
        from mempald.store.hosted import HostedEdgeStore

        return HostedEdgeStore(settings.store_path(), dim, ranker=ranker_ref(ranker))
    return open_location(settings.store.url or str(settings.store_path()), settings, dim, ranker=ranker,
                         wait_for_server=daemon)


def open_location(spec: str, settings: Settings, dim: int, *, ranker: Ranker | None = None,
                  wait_for_server: bool = False) -> Store:
    """Open the store named by a ``--to``/``--from`` argument: ``http(s)://...``, ``:memory:`` and ``path:/dir``
    name a server collection (``settings.store.collection``, the API key from the usual settings); anything
    else is a folder holding an embedded store (``edge:/dir`` is accepted too). ``wait_for_server``: a server
    that does not answer is reached for later instead of failing the open (the daemon's start)."""
    if spec.startswith(("http://", "https://", "path:")) or spec == ":memory:":
        from mempald.store.server import ServerStore

        store_settings = dataclasses.replace(settings.store, url=spec)
        return ServerStore.from_settings(dataclasses.replace(settings, store=store_settings), dim, ranker=ranker,
                                         wait_for_server=wait_for_server)
    from mempald.store.edge import EdgeStore

    folder = spec[len("edge:"):] if spec.startswith("edge:") else spec
    return EdgeStore(Path(folder).expanduser(), dim, ranker=ranker)
