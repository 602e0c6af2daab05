"""What the daemon creates or copies is the owner's only, and the paths it writes to are checked (issue 22,
point 5): a data dir that already exists as 0755 is tightened, the config dir and ``config.toml`` are 0700 and
0600, a migration's copy is 0700/0600, and ``migrate`` to an empty or relative name is refused without writing
anything in the daemon's working directory."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from mempal.connection import Connection
from mempal.protocol import INVALID_PARAMS, RpcError
from tests.conftest import Daemon
from tests.integration.test_socket_abuse import sock_path


def opened(root: Path) -> list[str]:
    """Everything under ``root`` (itself included) that group or others may use."""
    out = []
    for p in [root, *root.rglob("*")]:
        st = p.lstat()
        if not stat.S_ISLNK(st.st_mode) and st.st_mode & 0o077:
            out.append(f"{p.relative_to(root.parent)} {stat.S_IMODE(st.st_mode):o}")
    return out


@pytest.mark.timeout(240)
def test_everything_the_daemon_writes_is_owner_only(daemon: Daemon, home: Path, tmp_path: Path) -> None:
    data = Path(daemon.env["MEMPAL_DATA_DIR"])
    config = Path(daemon.env["MEMPAL_CONFIG_DIR"])
    data.mkdir(parents=True, mode=0o755)
    os.chmod(data, 0o755)  # as a user's own mkdir (or an older mempald) left it
    config.mkdir(parents=True, mode=0o755)
    os.chmod(config, 0o755)
    (config / "config.toml").write_text("[search]\nlimit = 10\n")
    os.chmod(config / "config.toml", 0o644)
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# a\n\nThe owner-only note.\n")
    daemon.start()
    daemon.call("watch_add", {"path": str(notes)})  # rewrites config.toml
    daemon.wait_for(lambda: daemon.call("search", {"query": "owner-only note"})["hits"], timeout=60)
    daemon.call("ingest", {"text": "A saved memory, so the store has written its files."})
    out = tmp_path / "copy"
    report = daemon.call("migrate", {"to": str(out)}, timeout=120)
    assert report["ok"] and report["copied"] >= 2
    assert opened(data) == [], opened(data)
    assert opened(config) == [], opened(config)
    assert opened(out) == [], opened(out)
    assert stat.S_IMODE((config / "config.toml").stat().st_mode) == 0o600

    # An existing target folder left open by the user is tightened too, by the offline command as well.
    daemon.stop()
    again = tmp_path / "copy2"
    again.mkdir(mode=0o755)
    os.chmod(again, 0o755)
    done = subprocess.run([sys.executable, "-m", "mempald", "migrate", "--to", str(again), "--json"],
                          env=daemon.env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert opened(again) == [], opened(again)


@pytest.mark.timeout(240)
def test_migrate_to_an_empty_or_relative_name_is_refused(daemon: Daemon, tmp_path: Path) -> None:
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    env = dict(daemon.env)
    with daemon.log_path.open("ab") as log:  # the daemon runs in a folder of its own: nothing may land there
        daemon.proc = subprocess.Popen([sys.executable, "-m", "mempald"], env=env, stdout=log,
                                       stderr=subprocess.STDOUT, cwd=cwd)
    daemon.wait_ready()
    with Connection(sock_path(daemon), timeout=60) as conn:
        for to in ("", "   ", "relative/store", "edge:relative", "path:relative", "./x"):
            with pytest.raises(RpcError) as err:
                conn.call("migrate", {"to": to})
            assert err.value.code == INVALID_PARAMS, (to, err.value.message)
    assert list(cwd.iterdir()) == []
    daemon.stop()
    for to in ("", "relative/store"):
        done = subprocess.run([sys.executable, "-m", "mempald", "migrate", "--to", to], env=env, cwd=cwd,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 2 and "migrate" in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert list(cwd.iterdir()) == []
