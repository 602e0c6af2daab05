"""pack through the daemon: `mempal pack`, and a pack-mode watch that re-packs on change and serves as the
wing's wake-up story; the originals stay searchable."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import Daemon

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "pack_corpus" / "notes"


@pytest.mark.timeout(300)
def test_pack_cli_and_watch(daemon: Daemon, tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    shutil.copytree(CORPUS, kb)
    out_dir = tmp_path / "packed"
    daemon.start()
    run = subprocess.run([sys.executable, "-m", "mempal.cli.main", "pack", str(kb), "-o", str(out_dir)],
                         capture_output=True, text=True, env=daemon.env, timeout=240)
    assert run.returncode == 0, run.stderr
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
