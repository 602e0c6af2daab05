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
