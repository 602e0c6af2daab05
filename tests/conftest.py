"""Shared test fixtures: isolated HOME/XDG dirs, the shared fixtures folder, and a real daemon process."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from mempald.normalize.model import Line

REPO = Path(__file__).resolve().parents[1]


def mempal_cli(env: dict[str, str], *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """The real ``mempal`` command line, run in a test's environment (this checkout first on the path)."""
    code = "import sys\nfrom mempal.cli.main import main\nsys.exit(main(sys.argv[1:]))\n"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          env={**env, "PYTHONPATH": str(REPO)}, cwd=REPO, timeout=timeout)
def lines_of(path: Path) -> list[Line]:
    """A transcript's non-blank lines with their byte offsets, as the reader hands them to a normalizer."""
    return lines_in(path.read_bytes())


def lines_in(data: bytes) -> list[Line]:
    """The non-blank lines of a transcript's bytes with their byte offsets (``lines_of`` for a file)."""
    from mempald.normalize.model import Line

    out, off = [], 0
    for raw in data.split(b"\n"):
        if raw.strip():
            out.append(Line(off, raw))
        off += len(raw) + 1
    return out


SHARED = REPO.parent / "shared"
FORMATS = SHARED / "fixtures" / "formats"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def formats_dir() -> Path:
    if not FORMATS.is_dir():
        pytest.skip(f"the shared format fixtures are not at {FORMATS} (they live beside the repo, not in it)")
    return FORMATS


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fake HOME with every mempald path pointed inside it; nothing touches the real home."""
    home = tmp_path / "home"
    home.mkdir()
    # Unix socket paths are limited to ~107 bytes: keep the runtime dir short.
    runtime = Path(tempfile.mkdtemp(prefix="mp-"))
    env = {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "MEMPAL_CONFIG_DIR": str(home / ".config" / "mempald"),
        "MEMPAL_DATA_DIR": str(home / ".local" / "share" / "mempald"),
        "MEMPAL_RUNTIME_DIR": str(runtime / "run"),
        "HF_HUB_OFFLINE": "1",
    }
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.delenv("NOTIFY_SOCKET", raising=False)
    (home / ".claude" / "projects").mkdir(parents=True)
    yield home
    shutil.rmtree(runtime, ignore_errors=True)


class Daemon:
    """A real ``mempald`` process with its own environment, talked to over its real socket."""

    def __init__(self, env: dict[str, str], log_path: Path) -> None:
        self.env = env
        self.log_path = log_path
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, wait: bool = True, extra_env: dict[str, str] | None = None) -> Daemon:
        env = dict(self.env)
        env.update(extra_env or {})
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen([sys.executable, "-m", "mempald"], env=env, stdout=log,
                                         stderr=subprocess.STDOUT)
        if wait:
            self.wait_ready()
        return self

    def wait_ready(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise AssertionError(f"mempald exited with {self.proc.returncode}:\n{self.logs()}")
            try:
                self.call("ping", timeout=2)
                return
            except Exception:
                time.sleep(0.1)
        raise AssertionError(f"mempald did not become ready:\n{self.logs()}")

    def call(self, method: str, params: dict[str, Any] | None = None, timeout: float = 30) -> Any:
        from mempal.connection import Connection
        from mempal.paths import socket_path

        path = socket_path(self.env)
        with Connection(path, timeout=timeout) as conn:
            return conn.call(method, params)

    def wait_for(self, predicate: Any, timeout: float = 60.0, interval: float = 0.2) -> Any:
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            last = predicate()
            if last:
                return last
            time.sleep(interval)
        raise AssertionError(f"condition not met within {timeout}s (last: {last!r})\n{self.logs()[-4000:]}")

    def idle(self, timeout: float = 120.0) -> dict[str, Any]:
        """Wait until nothing is queued: every file read, every drawer embedded."""
        def done() -> dict[str, Any] | None:
            st: dict[str, Any] = self.call("status")
            # (backlog_bytes is not required to be 0: a partial last line waits, by design)
            ok = st["scans"] >= 1 and st["file_backlog"] == 0 and st["dense_backlog"] == 0
            return st if ok and st.get("drawers", 0) >= 0 else None
        result: dict[str, Any] = self.wait_for(done, timeout)
        return result

    def logs(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30) -> int:
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else 0
        self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"mempald did not stop on signal {sig}:\n{self.logs()}") from None

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def daemon(home: Path, tmp_path: Path) -> Iterator[Daemon]:
    d = Daemon(dict(os.environ), tmp_path / "mempald.log")
    yield d
    d.kill()


def copy_tree(src: Path, dst: Path) -> None:
    shutil.copytree(src, dst, dirs_exist_ok=True)
    for p in [dst, *dst.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
