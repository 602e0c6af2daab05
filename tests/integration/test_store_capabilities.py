"""A store backend that lacks a capability answers an error naming itself and the operation (issue #40, point 5):
``backup`` of a palace kept in a Qdrant server (local mode: no network), through the real daemon and CLI."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from mempal.protocol import STORE_UNAVAILABLE, RpcError
from tests.conftest import Daemon


@pytest.mark.timeout(300)
def test_a_backup_of_a_palace_in_a_qdrant_server_names_the_backend_and_the_operation(home: Path,
                                                                                      tmp_path: Path) -> None:
    config = home / ".config" / "mempald"
    config.mkdir(parents=True, exist_ok=True)
    (config / "config.toml").write_text(f'[store]\nurl = "path:{tmp_path / "qdrant"}"\n')
    d = Daemon(dict(os.environ), tmp_path / "mempald.log").start()
    try:
        target = tmp_path / "bk"
        with pytest.raises(RpcError) as err:
            d.call("backup", {"path": str(target)})
        assert err.value.code == STORE_UNAVAILABLE
        assert err.value.message.startswith("store backend 'qdrant-server' cannot snapshot: "), err.value.message
        assert "mempal export" in err.value.message
        assert err.value.data == {"backend": "qdrant-server", "operation": "snapshot"}
        assert not target.exists()  # refused before anything was made
        cli = subprocess.run([sys.executable, "-m", "mempal.cli.main", "backup", str(target)], capture_output=True,
                             text=True, env=d.env, timeout=120)
        assert cli.returncode != 0 and "store backend 'qdrant-server' cannot snapshot" in cli.stderr, cli.stderr
        # the daemon carries on: a memory saved after the refusal is there
        saved = d.call("ingest", {"text": "The backup of a server palace is Qdrant's own snapshot.", "wing": "ops"})
        assert saved["drawer_ids"]
        assert d.call("status")["drawers"] >= 1
    finally:
        d.stop()
