"""sd_notify against a real datagram socket the test owns."""

from __future__ import annotations

import os
import socket
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from mempald.runtime.sdnotify import Notifier

pytestmark = pytest.mark.skipif(not hasattr(socket, "AF_UNIX"), reason="needs Unix sockets")


@pytest.fixture
def listener(tmp_path: Path) -> Iterator[tuple[socket.socket, str]]:
    # AF_UNIX paths are limited to ~104 bytes; tmp_path can be longer on macOS.
    path = tmp_path / "notify.sock"
    if len(str(path)) > 100:
        path = Path("/tmp") / f"mempald-test-{uuid.uuid4().hex[:12]}.sock"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(path))
    sock.settimeout(5)
    try:
        yield sock, str(path)
    finally:
        sock.close()
        path.unlink(missing_ok=True)


def _recv(sock: socket.socket) -> str:
    return sock.recv(4096).decode()


def test_no_socket_means_no_op() -> None:
    n = Notifier({})
    assert not n.enabled
    assert n.ready() is False
    assert n.stopping() is False
    assert n.status("x") is False
    assert n.watchdog() is False
    assert n.watchdog_interval() is None


def test_ready_stopping_status_watchdog(listener: tuple[socket.socket, str]) -> None:
    sock, path = listener
    n = Notifier({"NOTIFY_SOCKET": path})
    assert n.enabled
    assert n.ready()
    assert _recv(sock) == "READY=1"
    assert n.ready("serving on /run/x.sock")
    assert _recv(sock) == "READY=1\nSTATUS=serving on /run/x.sock"
    assert n.status("ingesting\n3 files")
    assert _recv(sock) == "STATUS=ingesting 3 files"  # one line: a newline would start a new key
    assert n.watchdog()
    assert _recv(sock) == "WATCHDOG=1"
    assert n.stopping()
    assert _recv(sock) == "STOPPING=1"
    assert n.extend_timeout(2.5)
    assert _recv(sock) == "EXTEND_TIMEOUT_USEC=2500000"
    assert n.reloading()
    first, second = _recv(sock).split("\n")
    assert first == "RELOADING=1"
    assert second.startswith("MONOTONIC_USEC=")
    assert int(second.split("=", 1)[1]) > 0


def test_reads_os_environ_by_default(
    listener: tuple[socket.socket, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    sock, path = listener
    monkeypatch.setenv("NOTIFY_SOCKET", path)
    assert Notifier().ready()
    assert _recv(sock) == "READY=1"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="abstract sockets are Linux-only")
def test_abstract_namespace_socket() -> None:
    name = f"mempald-test-{uuid.uuid4().hex}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind("\0" + name)
        sock.settimeout(5)
        assert Notifier({"NOTIFY_SOCKET": "@" + name}).ready()
        assert _recv(sock) == "READY=1"


def test_nobody_listening_returns_false(tmp_path: Path) -> None:
    n = Notifier({"NOTIFY_SOCKET": str(tmp_path / "absent.sock")})
    assert n.enabled
    assert n.ready() is False  # never raises


@pytest.mark.parametrize("value", ["", "relative/path", "vsock:2:1234", "@"])
def test_unusable_addresses_disable(value: str) -> None:
    assert not Notifier({"NOTIFY_SOCKET": value}).enabled


def test_watchdog_interval_is_half(listener: tuple[socket.socket, str]) -> None:
    _, path = listener
    env = {"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "60000000"}
    assert Notifier(env).watchdog_interval() == 30.0
    assert Notifier({**env, "WATCHDOG_PID": str(os.getpid())}).watchdog_interval() == 30.0


@pytest.mark.parametrize(
    "extra",
    [
        {},  # no WATCHDOG_USEC
        {"WATCHDOG_USEC": "0"},
        {"WATCHDOG_USEC": "-5"},
        {"WATCHDOG_USEC": "soon"},
        {"WATCHDOG_USEC": "60000000", "WATCHDOG_PID": "1"},  # meant for another process
        {"WATCHDOG_USEC": "60000000", "WATCHDOG_PID": "x"},
    ],
)
def test_watchdog_interval_none(listener: tuple[socket.socket, str], extra: dict[str, str]) -> None:
    _, path = listener
    assert Notifier({"NOTIFY_SOCKET": path, **extra}).watchdog_interval() is None


def test_watchdog_interval_needs_socket() -> None:
    assert Notifier({"WATCHDOG_USEC": "60000000"}).watchdog_interval() is None


def test_watchdog_pid_compared_with_given_pid(listener: tuple[socket.socket, str]) -> None:
    _, path = listener
    env = {"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "10000000", "WATCHDOG_PID": "4242"}
    assert Notifier(env, pid=4242).watchdog_interval() == 5.0


def test_repr_mentions_address(listener: tuple[socket.socket, str]) -> None:
    _, path = listener
    assert path in repr(Notifier({"NOTIFY_SOCKET": path}))
