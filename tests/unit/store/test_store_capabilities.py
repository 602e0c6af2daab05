"""Store capabilities are declared (issue #40, point 5): each backend says what it can do beyond the ``Store``
contract by the protocols it implements; the daemon asks through one ``Capability``, and an operation a backend
lacks answers ``StoreLacks`` naming the backend and the operation, a stable wire code."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from mempal.protocol import STORE_UNAVAILABLE
from mempald.config import SettingsRef, parse_settings
from mempald.features.backup import Backup
from mempald.rpc.errors import to_wire
from mempald.state.db import State
from mempald.store.base import DAMAGE_REPORT, INDEX_REBUILD, SNAPSHOTS, Store, StoreLacks
from mempald.store.edge import EdgeStore
from mempald.store.gateway import StoreGateway
from mempald.store.hosted import HostedEdgeStore
from mempald.store.server import ServerStore
from mempald.store.space import GuardedStore, SpaceGuard

DIM = 8
pytestmark = pytest.mark.anyio


class ThirdStore(ServerStore):
    """A third backend, as minimal as one gets: the ``Store`` contract (qdrant-client's in-process mode) and no
    capability declared beyond it."""

    backend = "third"


def declared(store: Store) -> set[str]:
    return {c.operation for c in (SNAPSHOTS, INDEX_REBUILD, DAMAGE_REPORT) if c.of(store) is not None}


def test_each_backend_declares_what_it_can_do(tmp_path: Path) -> None:
    edge = EdgeStore(tmp_path / "edge", DIM)
    try:
        assert declared(edge) == {"snapshot"}
        assert SNAPSHOTS.required(edge) is edge
    finally:
        edge.close()
    hosted = HostedEdgeStore(tmp_path / "hosted", DIM)
    try:
        assert declared(hosted) == {"snapshot", "rebuild its index in the background", "report damaged files"}
        rebuild = INDEX_REBUILD.required(hosted)
        assert rebuild.pids and rebuild.index_state()[0] == 0
        assert DAMAGE_REPORT.required(hosted).damaged == ""
    finally:
        hosted.close()
    server = ServerStore(":memory:", DIM)
    try:
        assert declared(server) == set()
        with pytest.raises(StoreLacks) as err:
            SNAPSHOTS.required(server)
        assert str(err.value).startswith("store backend 'qdrant-server' cannot snapshot: ")
        assert err.value.data == {"backend": "qdrant-server", "operation": "snapshot"}
    finally:
        server.close()


def test_a_wrapper_is_not_the_backend(tmp_path: Path) -> None:
    """The disk guard passes calls on but declares nothing: capabilities are asked of the backend (the daemon's
    composition root keeps it beside the wrapped store), never found by probing a wrapper."""
    edge = EdgeStore(tmp_path / "edge", DIM)
    try:
        guarded = GuardedStore(edge, SpaceGuard(tmp_path / "edge", tmp_path, 0))
        assert SNAPSHOTS.of(guarded) is None
        assert SNAPSHOTS.of(edge) is edge
    finally:
        edge.close()


async def test_a_backend_without_snapshots_answers_a_clear_error_to_a_backup(tmp_path: Path) -> None:
    third = ThirdStore(":memory:", DIM)
    state = State(tmp_path / "state.sqlite3")
    try:
        backups = Backup(SettingsRef(parse_settings({}, env={})), StoreGateway(third), state, third)
        target = tmp_path / "bk"
        with pytest.raises(StoreLacks) as err:
            await backups.backup(str(target))
        assert not target.exists()  # refused before anything was made
        code, message, data = to_wire(err.value) or (0, "", None)
        assert code == STORE_UNAVAILABLE
        assert message.startswith("store backend 'third' cannot snapshot: ") and "mempal export" in message
        assert data == {"backend": "third", "operation": "snapshot"}
    finally:
        third.close()
        state.close()


STORE_CLASSES = {"EdgeStore", "HostedEdgeStore", "ServerStore"}
REPO = Path(__file__).resolve().parents[3]


def _probes(path: Path) -> list[str]:
    """``isinstance(x, <a store class>)`` and ``getattr`` / ``hasattr`` on a store: a capability found by probing."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and len(node.args) >= 2):
            continue
        first, second = ast.unparse(node.args[0]), ast.unparse(node.args[1])
        if node.func.id == "isinstance" and any(c in second for c in STORE_CLASSES):
            out.append(f"{path.relative_to(REPO)}:{node.lineno}: {ast.unparse(node)}")
        if node.func.id in {"getattr", "hasattr"} and any(w in first.lower() for w in ("store", "backend", "hosted")):
            out.append(f"{path.relative_to(REPO)}:{node.lineno}: {ast.unparse(node)}")
    return out


def test_no_capability_is_found_by_probing_the_store() -> None:
    found = [hit for f in sorted((REPO / "mempald").rglob("*.py")) if "store" not in f.relative_to(REPO).parts
             for hit in _probes(f)]
    assert not found, "ask a store's capability through its Capability (mempald.store.base):\n" + "\n".join(found)
