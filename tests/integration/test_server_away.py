"""A daemon whose Qdrant server does not answer when it starts (a laptop that boots before its network or VPN):
it starts anyway, answers status and hooks, reads its transcripts into the local outbox, and stores every drawer
once a server answers. No Qdrant server can be installed here: the server that answers is qdrant-client's local
mode (``store.url = path:...``), at the next start, as a daemon restarted once its server is back would see it."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO
from tests.integration.test_hooks import base, hook
from tests.integration.test_sync import Machine

PAIRS = [
    ("which queue did we pick for the orbit telemetry?", "NATS JetStream: it replays what a consumer missed."),
    ("and where do the orbit dashboards live?", "Grafana, provisioned from the ops repo."),
    ("what retention did we set on the telemetry stream?", "Seven days, then the archive bucket."),
]


def closed_port() -> int:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def laptop(tmp_path: Path) -> Iterator[Machine]:
    runtime = Path(tempfile.mkdtemp(prefix="mp-"))
    m = Machine("laptop", tmp_path, runtime)
    m.env["MEMPAL_STORE_URL"] = f"http://127.0.0.1:{closed_port()}"
    yield m
    m.daemon.kill()
    shutil.rmtree(runtime, ignore_errors=True)


def waiting(m: Machine) -> dict[str, Any] | None:
    """Status, once the transcript is read and its drawers wait in the outbox."""
    st: dict[str, Any] = m.daemon.call("status")
    ok = st["scans"] >= 1 and st["file_backlog"] == 0 and any("3 drawers wait in the local outbox" in w
                                                              for w in st["warnings"])
    return st if ok else None


def stored(m: Machine, n: int) -> dict[str, Any] | None:
    st = m.daemon.idle()
    return st if st["drawers"] == n else None


@pytest.mark.timeout(300)
def test_a_daemon_starts_while_its_server_is_away_and_stores_what_it_read_once_one_answers(
        laptop: Machine, tmp_path: Path) -> None:
    laptop.transcript("s-away", PAIRS)
    laptop.daemon.start()  # (it did not exit: ``start`` waits for its socket to answer)
    st = laptop.daemon.wait_for(lambda: waiting(laptop))
    assert st["drawers"] is None and st["wings"] == {}
    assert any("cannot reach the Qdrant server" in w for w in st["warnings"])
    # a search says why it cannot answer; a hook fails open, quickly and silently
    with pytest.raises(Exception, match="cannot reach the Qdrant server"):
        laptop.daemon.call("search", {"query": "orbit telemetry queue"})
    res, _ = hook(laptop.env, "prompt", base("UserPromptSubmit", prompt="which queue carries orbit telemetry?"))
    assert (res.returncode, res.stdout) == (0, "")
    doctor = subprocess.run([sys.executable, "-m", "mempal.cli.main", "doctor"], capture_output=True, text=True,
                            env={**laptop.env, "PYTHONPATH": str(REPO)}, timeout=60)
    assert "[warn] daemon: pid" in doctor.stdout and "running without its store" in doctor.stdout
    assert laptop.daemon.stop() == 0
    logged = laptop.daemon.logs()
    assert '"store.away_at_start"' in logged and '"level": "error"' not in logged and "Traceback" not in logged

    # the server answers at the next start: what waited in the outbox is stored once and found
    laptop.env["MEMPAL_STORE_URL"] = f"path:{tmp_path / 'qdrant'}"
    laptop.daemon.start()
    st = laptop.daemon.wait_for(lambda: stored(laptop, 3))
    assert not any("outbox" in w or "Qdrant" in w for w in st["warnings"])
    hits = laptop.daemon.call("search", {"query": "which queue carries the orbit telemetry?"})["hits"]
    assert "NATS JetStream" in hits[0]["text"]
    assert laptop.daemon.stop() == 0


@pytest.mark.parametrize("filled_by", ["", "someone/other-model"])
def test_the_start_up_checks_run_when_an_away_server_first_answers(home: Path, tmp_path: Path,
                                                                   filled_by: str) -> None:
    """The daemon's backends opened while the server is away: the model check (and the lost-drawer checks) wait
    for the server's first answer, and a collection another model filled is refused then, as it would have been
    at the start: no call goes through, none is taken for a passing outage."""
    from qdrant_client import QdrantClient

    from mempald.config import parse_settings
    from mempald.runtime.root import open_backends
    from mempald.store.base import Filters, StoreError, StoreRefused, StoreUnreachable
    from mempald.store.server import ServerStore
    from tests.unit.store.test_store_server import server_answers

    settings = parse_settings({"store": {"url": f"http://127.0.0.1:{closed_port()}", "timeout_s": 1}}, env={})
    backends = open_backends(settings)
    opened = backends.backend
    assert isinstance(opened, ServerStore) and not opened.connected
    try:
        with pytest.raises(StoreUnreachable):
            backends.store.count(Filters())
        there = tmp_path / "qdrant"
        if filled_by:
            other = ServerStore(f"path:{there}", backends.embedder.dim)
            other.set_meta({"model": filled_by})
            other.close()
        server_answers(opened, QdrantClient(path=str(there)))
        if filled_by:
            for _ in range(2):
                with pytest.raises(StoreError, match=f"filled by model '{filled_by}'") as err:
                    backends.store.count(Filters())
                assert isinstance(err.value, StoreRefused)  # (status shows it, drawers unknown; not an outage)
        else:
            assert backends.store.count(Filters()) == 0
            assert backends.store.get_meta()["model"] == backends.embedder.info.model_id  # marked as this model's
    finally:
        backends.store.close()
        backends.state.close()
