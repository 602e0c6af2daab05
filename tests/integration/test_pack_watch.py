"""pack through the daemon: `mempal pack`, and a pack-mode watch that re-packs on change and serves as the
wing's wake-up story; the originals stay searchable."""

from __future__ import annotations

import contextlib
import os
import pty
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Daemon

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "pack_corpus" / "notes"


@pytest.mark.timeout(300)
def test_pack_cli_and_watch(daemon: Daemon, tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    shutil.copytree(CORPUS, kb)
    out_dir = tmp_path / "packed"
    daemon.start()
    # `mempal pack` in a terminal (stderr a pty): a progress bar of the daemon's pack_progress while it runs
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "mempal.cli.main", "pack", str(kb), "-o", str(out_dir)],
                            stdout=subprocess.PIPE, stderr=slave, env=daemon.env)
    os.close(slave)
    terminal = bytearray()

    def read_terminal() -> None:
        with contextlib.suppress(OSError):  # EIO once the command closed the terminal
            while chunk := os.read(master, 65536):
                terminal.extend(chunk)

    reader = threading.Thread(target=read_terminal, daemon=True)
    reader.start()
    seen: list[dict[str, Any]] = []

    def finished() -> bool:
        seen.extend(daemon.call("pack_progress")["running"])
        return proc.poll() is not None

    daemon.wait_for(finished, timeout=240, interval=0.2)
    stdout = proc.communicate(timeout=30)[0].decode()
    reader.join(timeout=10)
    os.close(master)
    assert proc.returncode == 0, terminal.decode(errors="replace")
    assert "packed" in stdout and str(out_dir / "knowledge_base.md") in stdout
    shown = terminal.decode(errors="replace")
    assert "pack: embedding sections" in shown, shown[-2000:]
    embedding = [p for p in seen if p["stage"] == "embedding"]
    assert embedding and all(0 <= p["done"] <= p["total"] for p in embedding), seen
    assert [p["done"] for p in embedding] == sorted(p["done"] for p in embedding)  # it only moves on
    assert {p["dir"] for p in seen} == {str(kb.resolve())} and all(p["run_id"].startswith("cli-") for p in seen)
    assert daemon.call("pack_progress")["running"] == []  # gone once the pack is done
    text = (out_dir / "knowledge_base.md").read_text()
    assert text.startswith("# Knowledge Base") and "> Packed by mempal |" in text
    assert (out_dir / "knowledge_base.json").is_file()

    watch_out = tmp_path / "watched-pack"
    add = subprocess.run([sys.executable, "-m", "mempal.cli.main", "watch", "add", str(kb), "--mode", "pack", "--wing",
                          "kb", "-o", str(watch_out)], capture_output=True, text=True, env=daemon.env, timeout=60)
    assert add.returncode == 0, add.stderr
    packed = watch_out / "knowledge_base.md"
    daemon.wait_for(packed.is_file, timeout=240, interval=0.5)
    first = packed.stat().st_mtime
    some = sorted(kb.rglob("*.md"))[0]
    some.write_text(some.read_text() + "\n\nThe zebrafish aquarium needs its filter changed every Sunday.\n")
    daemon.wait_for(lambda: packed.stat().st_mtime > first, timeout=240, interval=0.5)
    hits = daemon.call("search", {"query": "zebrafish aquarium filter", "wing": "kb"})["hits"]
    assert hits and "zebrafish" in hits[0]["text"] and hits[0]["source_path"] == str(some)
    wake = daemon.call("wake_up", {"wing": "kb", "budget": 300})
    assert "Knowledge Base" in wake["text"] and wake["tokens"] <= 320
