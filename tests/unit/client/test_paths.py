"""Finding the daemon: the data and config directories agree with the daemon's settings reader, the systemd
per-user runtime dir is used without XDG_RUNTIME_DIR, and a client looks in the documented order."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mempal import paths
from tests.conftest import REPO

LOCATION_VARS = ("MEMPAL_DATA_DIR", "MEMPAL_CONFIG_DIR", "MEMPAL_RUNTIME_DIR", "MEMPAL_SOCKET", "XDG_DATA_HOME",
                 "XDG_CONFIG_HOME", "XDG_RUNTIME_DIR")


def daemon_dirs(env: dict[str, str]) -> tuple[str, str]:
    """What mempald.config (platformdirs) computes in ``env``, in a fresh process."""
    code = "from mempald.config import config_dir, data_dir; print(data_dir()); print(config_dir())"
    out = subprocess.run([sys.executable, "-c", code], env={**env, "PYTHONPATH": str(REPO)}, capture_output=True,
                         text=True, timeout=60, check=True)
    data, config = out.stdout.splitlines()
    return data, config


@pytest.mark.parametrize("extra", [
    {},
    {"XDG_DATA_HOME": "/srv/xdg-data", "XDG_CONFIG_HOME": "/srv/xdg-config"},
    {"XDG_DATA_HOME": "relative/ignored"},
    {"MEMPAL_DATA_DIR": "/srv/palace", "MEMPAL_CONFIG_DIR": "/srv/palace-config"},
])
def test_client_and_daemon_compute_the_same_directories(tmp_path: Path, extra: dict[str, str]) -> None:
    base = {k: v for k, v in os.environ.items() if k not in LOCATION_VARS}
    env = {**base, "HOME": str(tmp_path), **extra}
    data, config = daemon_dirs(env)
    assert str(paths.data_dir(env)) == data
    assert str(paths.config_dir(env)) == config


@pytest.mark.skipif(sys.platform == "darwin", reason="macOS has no /run/user; its fallback is ~/Library/Caches")
def test_the_systemd_runtime_dir_is_used_without_xdg_runtime_dir(tmp_path: Path) -> None:
    run_user = tmp_path / "run-user"
    env = {"HOME": str(tmp_path)}
    assert paths.runtime_dir(env, run_user=run_user) == Path("/tmp") / f"mempald-{os.getuid()}"
    mine = run_user / str(os.getuid())
    mine.mkdir(parents=True)
    assert paths.runtime_dir(env, run_user=run_user) == mine / "mempald"
    assert paths.socket_path(env, run_user=run_user) == mine / "mempald" / "mempald.sock"
    xdg = tmp_path / "xdg"
    xdg.mkdir()
    assert paths.runtime_dir({**env, "XDG_RUNTIME_DIR": str(xdg)}, run_user=run_user) == xdg / "mempald"
    mine.rmdir()
    (run_user / str(os.getuid())).symlink_to(tmp_path)  # a symlink is not the real runtime dir
    assert paths.runtime_dir(env, run_user=run_user) == Path("/tmp") / f"mempald-{os.getuid()}"


def test_the_pointer_is_found_by_a_bare_environment_and_only_its_writer_withdraws_it(tmp_path: Path) -> None:
    home = tmp_path / "home"
    ddir = home / ".local" / "share" / "mempald"
    sock = tmp_path / "rt" / "mempald.sock"
    sock.parent.mkdir()
    written = paths.publish_pointer(ddir, sock, version="9")
    assert written is not None and (written.stat().st_mode & 0o777) == 0o600
    body = json.loads(written.read_text())
    assert body["pid"] == os.getpid() and body["socket"] == str(sock) and body["data_dir"] == str(ddir)

    bare = {"HOME": str(home), "USER": "u", "PATH": "/usr/bin"}
    # the pointer names a socket that does not exist (a daemon killed, its socket gone): the computed path
    assert paths.locate(bare).how == "default"
    sock.touch()
    found = paths.locate(bare)
    assert (found.socket, found.how, found.data_dir) == (str(sock), "pointer", str(ddir))
    assert found.pointer is not None and found.pointer.pid == os.getpid()
    # explicit settings come first; the pointer is still attached when it names the same socket
    assert paths.locate({**bare, "MEMPAL_RUNTIME_DIR": str(sock.parent)}).pointer == found.pointer
    other = paths.locate({**bare, "MEMPAL_SOCKET": str(tmp_path / "other.sock")})
    assert (other.how, other.pointer) == ("MEMPAL_SOCKET", None)

    # another user's pointer is not trusted
    written.write_text(json.dumps({**body, "uid": os.getuid() + 1}))
    assert paths.read_pointer(ddir) is None
    written.write_text(json.dumps(body))
    # only the process that wrote it removes it
    written.write_text(json.dumps({**body, "pid": os.getpid() + 1}))
    paths.withdraw_pointer(ddir)
    assert written.exists()
    written.write_text(json.dumps(body))
    paths.withdraw_pointer(ddir)
    assert not written.exists()


def test_a_pointer_that_cannot_be_written_costs_nothing(tmp_path: Path) -> None:
    blocked = tmp_path / "file-not-dir"
    blocked.write_text("x")
    assert paths.publish_pointer(blocked / "data", tmp_path / "s.sock") is None
