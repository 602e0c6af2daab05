"""Every performance benchmark still runs: its smoke mode (tiny sizes, a real daemon) exits 0 and writes its
JSON with the expected keys. No timing assertions: speed is measured by the benchmarks, not by timed tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
COMMON = {"benchmark", "machine", "loadavg_end", "loadavg_start"}
EXPECTED = {
    "backfill": {"exchanges", "drawers", "exchanges_per_s", "drawers_per_s", "fastembed_drawers_per_s", "ratio",
                 "peak_rss_mb", "end_to_end_s", "texts_over_model_length"},
    "freshness": {"idle", "backfilling", "n", "backlog_exchanges"},
    "search_latency": {"sizes", "prefilled"},
    "hook_roundtrip": {"command", "hook_ms", "python_bare_ms"},
    "responsiveness": {"status_ms", "n_exchanges"},
    "footprint": {"startup_ms", "idle_rss_mb", "disk_total_mb", "drawers"},
}


@pytest.mark.timeout(240)
def test_benchmarks_smoke(tmp_path: Path) -> None:
    """All six in parallel pairs would fight over two cores; run them one after another (about a minute)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMPAL_", "XDG_"))}
    failures = []
    for name, keys in EXPECTED.items():
        out = tmp_path / f"{name}.json"
        proc = subprocess.run([sys.executable, str(REPO / "bench" / f"{name}.py"), "--smoke", "--json", str(out)],
                              capture_output=True, text=True, env=env, cwd=REPO, timeout=200)
        if proc.returncode != 0:
            failures.append(f"{name}: exit {proc.returncode}\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}")
            continue
        data = json.loads(out.read_text())
        missing = (keys | COMMON) - set(data)
        if missing:
            failures.append(f"{name}: JSON lacks {sorted(missing)}")
        if data.get("benchmark") != name:
            failures.append(f"{name}: JSON names benchmark {data.get('benchmark')!r}")
    assert not failures, "\n\n".join(failures)
