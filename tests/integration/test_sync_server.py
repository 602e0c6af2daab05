"""Several daemons, one per machine, on one Qdrant collection (issue 44 part 2), tested through qdrant-client's
local mode (``store.url = path:...``): no Qdrant server can be installed here, so the two machines' daemons open
the one collection in turn, as two daemons would share a server."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import tomli_w

from tests.integration.test_sync import Machine


@pytest.fixture
def two(tmp_path: Path) -> Iterator[tuple[Machine, Machine, Path]]:
    runtime = Path(tempfile.mkdtemp(prefix="mp-"))
    project = tmp_path / "srv" / "orbit"  # the same path on both machines, other contents on each
    project.mkdir(parents=True)
    machines = Machine("laptop", tmp_path, runtime), Machine("desktop", tmp_path, runtime)
    for m in machines:
        m.env["MEMPAL_STORE_URL"] = f"path:{tmp_path / 'qdrant'}"
        cfg = m.home / ".config" / "mempald" / "config.toml"
        cfg.parent.mkdir(parents=True)
        cfg.write_text(tomli_w.dumps({"sources": {"watch": [{"path": str(project), "mode": "projects"}]}}))
    yield machines[0], machines[1], project
    for m in machines:
        m.daemon.kill()
    shutil.rmtree(runtime, ignore_errors=True)


def texts(d: Any, query: str, **kw: Any) -> dict[str, str]:
    return {h["text"]: h["machine"] for h in d.call("search", {"query": query, **kw})["hits"]}


@pytest.mark.timeout(300)
def test_two_machines_on_one_collection_keep_their_own_points(two: tuple[Machine, Machine, Path]) -> None:
    a, b, project = two
    notes = project / "NOTES.md"
    notes.write_text("# Orbit\n\nThe laptop decided: telemetry goes through NATS JetStream.\n")
    a.daemon.start()
    a.daemon.idle()
    mine_a = a.daemon.call("machines")["machines"]
    assert [m["drawers"] for m in mine_a if m["machine"] == "laptop"] == [1]
    a.daemon.stop()

    # the same path on the desktop holds something else: its drawer gets its own id, the laptop's stays
    notes.write_text("# Orbit\n\nThe desktop decided: telemetry goes through Kafka.\n")
    b.daemon.start()
    b.daemon.idle()
    found = texts(b.daemon, "where does orbit telemetry go")
    assert {v for k, v in found.items() if "NATS" in k} == {"laptop"}
    assert {v for k, v in found.items() if "Kafka" in k} == {"desktop"}
    # the desktop re-reads its file: only its own drawers of that path are replaced
    notes.write_text("# Orbit\n\nThe desktop decided: telemetry goes through Redpanda.\n")
    b.daemon.wait_for(lambda: any("Redpanda" in t for t in texts(b.daemon, "orbit telemetry redpanda")))
    found = texts(b.daemon, "where does orbit telemetry go")
    assert any("NATS" in t for t in found) and not any("Kafka" in t for t in found)
    # a forget asks for this machine's drawers, unless the user asks for every machine's
    mine = b.daemon.call("forget", {"wing": "orbit", "dry_run": True, "actor": "user"})
    every = b.daemon.call("forget", {"wing": "orbit", "dry_run": True, "all_machines": True, "actor": "user"})
    assert (mine["drawers"], every["drawers"]) == (1, 2)
    # a purge purges this machine's deleted drawers, not the laptop's
    hits = b.daemon.call("search", {"query": "where does orbit telemetry go"})["hits"]
    ids = {h["machine"]: h["drawer_id"] for h in hits}
    b.daemon.call("delete", {"drawer_id": [ids["laptop"], ids["desktop"]], "reason": "test", "actor": "user"})
    assert b.daemon.call("purge", {})["purged"] == 1
    b.daemon.stop()

    # the laptop starts again: the collection holds fewer points than when it stopped (the desktop purged its
    # own), but not fewer of the laptop's, so it is not refused as a store that lost drawers
    a.daemon.start()
    a.daemon.idle()
    assert a.daemon.call("purge", {"dry_run": True})["purged"] <= 1  # its own only (the desktop's are gone)
    # (its file changed while it was stopped: its own drawer of it re-read, the desktop's untouched)
    found = texts(a.daemon, "where does orbit telemetry go")
    assert set(found.values()) == {"laptop"} and any("Redpanda" in t for t in found)


@pytest.mark.anyio
async def test_the_ingest_goes_on_into_a_local_outbox_while_the_server_is_away(tmp_path: Path) -> None:
    """The writer over a real qdrant-client collection (local mode) whose client is, for the outage, a real
    client of a server URL on a closed port: exchanges written meanwhile wait in the outbox (a table of the state
    database), and are written once, in order, when the server answers again."""
    import socket

    from qdrant_client import QdrantClient

    from mempald.config import parse_settings
    from mempald.embed.embedder import Embedder
    from mempald.embed.sparse import Bm25Encoder
    from mempald.ingest.drawers import SourceInfo
    from mempald.ingest.queues import FRESH, DenseQueue
    from mempald.ingest.store_outbox import StoreOutbox
    from mempald.ingest.writer import DrawerWriter
    from mempald.normalize.claude_code import parse_lines
    from mempald.state.db import State
    from mempald.state.gateway import StateGateway
    from mempald.store.base import Filters, StoreError
    from mempald.store.gateway import StoreGateway
    from mempald.store.server import ServerStore
    from tests.conftest import lines_in
    from tests.integration.test_skeleton import assistant_line, user_line

    settings = parse_settings({"store": {"url": f"path:{tmp_path / 'qdrant'}", "machine": "laptop"}}, env={})
    embedder = Embedder(models_dir=tmp_path / "models")
    store = ServerStore.from_settings(settings, embedder.dim)
    db = State(tmp_path / "state.sqlite3")
    dense = DenseQueue()
    writer = DrawerWriter(state=StateGateway(db), store=StoreGateway(store, shared=True), embedder=embedder,
                          bm25=Bm25Encoder(), dense=dense, max_tokens=250)
    writer.outbox = StoreOutbox(db)
    rows = []
    for i in range(12):
        ts = f"2026-11-01T10:{i:02d}:00Z"
        rows += [user_line("s-out", "/home/dev/orbit", f"question {i} about the orbit outbox", f"u{i}", ts),
                 assistant_line("s-out", "/home/dev/orbit", f"answer {i}: drain it in order", f"a{i}", f"u{i}", ts)]
    exchanges = parse_lines(lines_in("\n".join(rows).encode()))
    info = SourceInfo(kind="claude_code", path="/home/dev/.claude/projects/o/s-out.jsonl", source_key="claude_code",
                      machine="laptop", user="dev")
    await writer.write(exchanges[:4], info, FRESH)  # the server answers: written at once
    assert store.count(Filters()) == 4 and writer.waiting == 0

    live = store._client
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    store._client = QdrantClient(url=f"http://127.0.0.1:{port}", timeout=1, check_compatibility=False)
    store._backoff_s = 0.01
    first = await writer.write(exchanges[:8], info, FRESH)  # (a growing file re-read: 4 already stored)
    again = await writer.write(exchanges, info, FRESH)
    assert first.written == 8 and again.written == 12  # nothing refused, nothing lost
    assert writer.waiting == 12 and len(StoreOutbox(State(tmp_path / "state.sqlite3"))) == 12  # on disk
    assert "outbox" in writer.warning
    with pytest.raises(StoreError):
        await writer.drain()
    assert writer.waiting == 12

    store._client = live  # the server answers again
    queued = len(dense)
    while await writer.drain():
        pass
    assert writer.waiting == 0 and writer.warning == ""
    assert store.count(Filters(include_deleted=True)) == 12  # nothing duplicated
    assert len(dense) - queued == 8  # the 4 already stored unchanged are not written nor embedded again
    assert (await writer.write(exchanges, info, FRESH)).written == 0
    store.close()
    db.close()
