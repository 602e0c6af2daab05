"""The daemon as a service: readiness and stopping over a real NOTIFY_SOCKET, clean SIGTERM, stale sockets
after kill -9, SIGHUP reload, bad config, and install-service --dry-run."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from mempal.connection import Connection, DaemonStarting
from mempal.paths import data_dir, socket_path
from tests.conftest import Daemon, mempal_cli
from tests.integration.test_skeleton import assistant_line, user_line


def _sock(d: Daemon) -> Path:
    return socket_path(d.env)


@pytest.mark.timeout(120)
def test_notify_ready_then_stopping_and_clean_exit(daemon: Daemon) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="ns-"))
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    notify.bind(str(tmp / "notify"))
    notify.settimeout(60)
    try:
        daemon.start(wait=False, extra_env={"NOTIFY_SOCKET": str(tmp / "notify")})
        before = []
        while "READY=1" not in (msg := notify.recv(4096).decode()):
            before.append(msg)
        # while it opened, the daemon asked for more start time (a large store may take longer than 90 s)
        assert before and before[0] == "EXTEND_TIMEOUT_USEC=60000000"
        assert daemon.call("ping") == {"pong": True}  # ready means the socket answers
        assert daemon.proc is not None
        daemon.proc.send_signal(signal.SIGTERM)
        seen = ""
        while "STOPPING=1" not in seen:
            seen += notify.recv(4096).decode()
        assert daemon.proc.wait(30) == 0
        assert not _sock(daemon).exists()
    finally:
        notify.close()
        shutil.rmtree(tmp, ignore_errors=True)


@pytest.mark.timeout(180)
def test_a_command_run_while_the_daemon_starts_waits_for_it_and_a_stopped_one_is_not_running(daemon: Daemon) -> None:
    """The daemon opens its model and store before its socket (seconds; more for a large store). A command run in
    that time (just after `mempald`, or at login) is told the daemon is starting and, from the CLI, waits for
    it instead of hearing "not running"; once the daemon has stopped, the pid left in its lock file is ignored."""
    lock = data_dir(daemon.env) / "mempald.lock"
    daemon.start(wait=False)
    assert daemon.proc is not None
    deadline = time.monotonic() + 60
    while not (lock.is_file() and lock.read_text().strip() == str(daemon.proc.pid)):  # taken first thing
        assert time.monotonic() < deadline and daemon.proc.poll() is None
        time.sleep(0.02)
    try:
        Connection(environ=daemon.env).connect()
    except DaemonStarting as exc:
        assert exc.pid == daemon.proc.pid and "is starting" in str(exc)
    else:
        pytest.skip("the daemon served before the client looked: no starting window to test on this machine")
    res = mempal_cli(daemon.env, "status", "--json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["pid"] == daemon.proc.pid
    assert daemon.stop() == 0
    assert lock.read_text().strip() == str(daemon.proc.pid)  # the lock file keeps the last daemon's pid
    t0 = time.monotonic()
    res = mempal_cli(daemon.env, "status")
    assert res.returncode != 0 and "mempald is not running" in res.stderr
    assert time.monotonic() - t0 < 20  # told at once, not after the wait for a starting daemon


@pytest.mark.timeout(120)
def test_stale_socket_after_kill_is_replaced(daemon: Daemon) -> None:
    daemon.start()
    daemon.kill()
    assert _sock(daemon).exists()  # left behind by kill -9
    daemon.start()
    assert daemon.call("ping") == {"pong": True}
    assert daemon.stop() == 0


@pytest.mark.timeout(180)
def test_sighup_picks_up_a_new_source(daemon: Daemon, home: Path, tmp_path: Path) -> None:
    daemon.start()
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "ideas.md").write_text("> Should we call the new service quokka?\n\nYes, quokka it is; it is friendly.\n")
    cfg = home / ".config" / "mempald" / "config.toml"
    cfg.parent.mkdir(parents=True, exist_ok=True)
    cfg.write_text(f'[[sources.watch]]\npath = "{notes}"\nmode = "convos"\nwing = "ideas"\n')
    assert daemon.proc is not None
    daemon.proc.send_signal(signal.SIGHUP)
    daemon.wait_for(lambda: daemon.call("search", {"query": "quokka service name", "wing": "ideas"})["hits"],
                    timeout=60)
    assert daemon.call("ping") == {"pong": True}


def test_bad_config_exits_2(home: Path) -> None:
    cfg = home / ".config" / "mempald" / "config.toml"
    cfg.parent.mkdir(parents=True, exist_ok=True)
    cfg.write_text("[embed]\nbatch_sise = 3\n")
    out = subprocess.run([sys.executable, "-m", "mempald"], capture_output=True, text=True, timeout=60,
                         env=dict(os.environ))
    assert out.returncode == 2
    assert "embed.batch_sise: unknown key" in out.stderr


def test_install_service_dry_run_prints_a_valid_unit(home: Path, tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "mempald", "install-service", "--dry-run"], capture_output=True,
                         text=True, timeout=60, env=dict(os.environ))
    assert out.returncode == 0, out.stderr
    assert "Type=notify" in out.stdout and "ExecStart=" in out.stdout
    assert not (home / ".config" / "systemd" / "user" / "mempald.service").exists()
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze not installed (Debian: apt-get install -y systemd)")
    start = out.stdout.index("[Unit]")
    end = out.stdout.index("\n\n", out.stdout.index("[Install]"))
    unit = tmp_path / "mempald.service"
    unit.write_text(out.stdout[start:end] + "\n")
    run_dir = tmp_path / "xdg-run"
    run_dir.mkdir()
    res = subprocess.run([analyze, "verify", str(unit)], capture_output=True, text=True, timeout=60,
                         env={**os.environ, "XDG_RUNTIME_DIR": str(run_dir)})
    assert res.returncode == 0, res.stderr
    assert "mempald.service" not in res.stderr, res.stderr


@pytest.mark.timeout(120)
def test_appends_are_caught_up_after_a_restart(daemon: Daemon, home: Path) -> None:
    proj = home / ".claude" / "projects" / "-home-u-kiwi"
    proj.mkdir(parents=True)
    sid = "22222222-2222-3333-4444-555555555555"
    f = proj / f"{sid}.jsonl"
    f.write_text(user_line(sid, "/home/u/kiwi", "first question about the kiwi app", "k-1", "2026-05-01T00:00:00Z")
                 + "\n")
    daemon.start()
    daemon.idle()
    assert daemon.stop() == 0
    with f.open("a") as fh:  # written while the daemon was down
        fh.write(assistant_line(sid, "/home/u/kiwi", "The kiwi app uses SQLite with WAL.", "k-a1", "k-1",
                                "2026-05-01T00:00:01Z") + "\n")
        fh.write(user_line(sid, "/home/u/kiwi", "does kiwi sync over bluetooth?", "k-2", "2026-05-02T00:00:00Z")
                 + "\n")
    daemon.start()
    st = daemon.idle()
    assert st["drawers"] == 2
    hits = daemon.call("search", {"query": "kiwi bluetooth sync"})["hits"]
    assert hits[0]["exchange_key"] == "k-2"
    first = [h for h in daemon.call("search", {"query": "kiwi SQLite WAL"})["hits"] if h["exchange_key"] == "k-1"]
    assert first and "SQLite with WAL" in first[0]["text"]

