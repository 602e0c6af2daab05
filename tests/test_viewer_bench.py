"""The viewer benchmark still runs: its smoke mode (300 drawers, a real daemon and a real `mempal ui`) exits 0
and writes its JSON with a figure for every page. No timing assertions: speed is measured by the benchmark."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PAGES = {"overview", "search", "search, wing + since + type", "drawer in its session", "session page",
         "wing timeline", "wing timeline, first view after a write to another wing",
         "wing timeline, first view after a new session in this wing",
         "wing timeline, first view after an exchange appended to one of its sessions", "knowledge graph",
         "graph of an entity + its timeline", "cowork inbox", "packs"}


@pytest.mark.timeout(300)
def test_viewer_benchmark_smoke(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMPAL_", "XDG_"))}
    out = tmp_path / "viewer.json"
    proc = subprocess.run([sys.executable, str(REPO / "bench" / "viewer.py"), "--smoke", "--json", str(out)],
                          capture_output=True, text=True, env=env, cwd=REPO, timeout=280)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    data = json.loads(out.read_text())
    assert data["benchmark"] == "viewer" and data["drawers"] >= 300
    assert set(data["pages_ms"]) == PAGES
    for name, fig in data["pages_ms"].items():
        assert fig["n"] >= 3 and 0 < fig["p50"] <= fig["max"], name
