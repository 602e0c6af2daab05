"""The transcript archive: its compression ratio on the real transcripts and its CPU beside the backfill's.

    python bench/archive.py [--n 8] [--smoke] [--json PATH]

1. Copies every real Claude Code and Codex transcript of ``../shared/fixtures/formats`` (sub-agent files
   included) into a temp agent store.
2. Backfill: the daemon's own components (the composition root over an in-process embedded store, the archive
   off) read them all and embed every drawer (``ingest_path`` then the dense pass drained); this process's CPU
   time (``time.process_time``: every thread, the model's included) is the backfill's.
3. Archive, whole: each file archived at once (``Archive.keep_file``, as the first read of a backfill does).
4. Archive, live: each file archived as a live session grows, in ``--n`` appends of whole lines each (default
   8: a read every few exchanges), small chunks merged as the daemon merges them.
The ratio is the transcripts' bytes over the chunks' bytes on disk; the CPU share is the archive's CPU time over
the backfill's. Targets (issue 45): ratio at least 4x, CPU under 5% of the backfill.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO))

from _harness import parser, report, size  # noqa: E402

from mempald.archive import views  # noqa: E402
from mempald.archive.keeper import Archive  # noqa: E402
from mempald.config import Settings, SettingsRef, StoreSettings, parse_settings  # noqa: E402
from mempald.embed.embedder import Embedder  # noqa: E402
from mempald.ingest.queues import BACKFILL  # noqa: E402
from mempald.runtime.root import Backends, Daemon  # noqa: E402
from mempald.search import ranking  # noqa: E402
from mempald.state.db import State  # noqa: E402
from mempald.store.edge import EdgeStore  # noqa: E402

FIXTURES = REPO.parent / "shared" / "fixtures" / "formats"


def transcripts(dst: Path) -> list[Path]:
    """The real Claude Code and Codex transcripts, copied under ``dst`` (claude/, codex/)."""
    out = []
    for agent in ("claude_code", "codex"):
        for p in sorted((FIXTURES / agent).rglob("*.jsonl")):
            if "reference" in p.parts:
                continue
            target = dst / agent / p.relative_to(FIXTURES / agent)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(p, target)
            out.append(target)
    return out


async def backfill(work: Path, store_root: Path, files: list[Path]) -> float:
    """CPU seconds for the daemon's components to read and embed every transcript under ``store_root``."""
    embedder = Embedder(models_dir=work / "models")
    store = EdgeStore(work / "store", embedder.dim, ranker=ranking.rank)
    state = State(work / "state.sqlite3")
    raw = {"store": {"machine": "bench", "min_free_mb": 0}, "archive": {"enabled": False},
           "sources": {"claude_projects": str(store_root / "claude_code"), "codex_sessions": str(store_root / "codex")}}
    daemon = Daemon(parse_settings(raw, env={}), Backends(embedder, store, None, state))
    try:
        t0 = time.process_time()
        for path in files:
            src = daemon.sources.source_for(path)
            if src is not None:
                await daemon.ingestor.ingest_path(path, src, BACKFILL)
        await daemon.densifier.drain()
        return time.process_time() - t0
    finally:
        store.close()
        state.close()


def archive_whole(folder: Path, files: list[Path], root: Path) -> tuple[float, dict[str, Any]]:
    archive = Archive(folder, SettingsRef(Settings(store=StoreSettings(min_free_mb=0))))
    t0 = time.process_time()
    for f in files:
        archive.keep_file(f, root, f.stem, "bench", "bench")
    cpu = time.process_time() - t0
    st = views.status(archive)
    archive.close()
    return cpu, st


def archive_live(folder: Path, files: list[Path], root: Path, steps: int, grow: Path) -> tuple[float, dict[str, Any]]:
    """Each file written in ``steps`` appends of whole lines, archived after each."""
    archive = Archive(folder, SettingsRef(Settings(store=StoreSettings(min_free_mb=0))))
    cpu = 0.0
    for f in files:
        lines = f.read_bytes().splitlines(keepends=True)
        target = grow / f.relative_to(root)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(b"")
        per = max(1, -(-len(lines) // steps))
        for i in range(0, len(lines), per):
            with target.open("ab") as fh:
                fh.write(b"".join(lines[i : i + per]))
            t0 = time.process_time()
            archive.keep_file(target, grow, f.stem, "bench", "bench")
            cpu += time.process_time() - t0
    st = {**views.status(archive), "chunks": len(archive.index.all_chunks())}
    archive.close()
    return cpu, st


def main() -> None:
    ap = parser(__doc__ or "", 8, 2)
    args = ap.parse_args()
    steps = size(args)
    with tempfile.TemporaryDirectory(prefix="mempal-archive-bench-") as tmp:
        work = Path(tmp)
        files = transcripts(work / "agents")
        raw_bytes = sum(f.stat().st_size for f in files)
        whole_cpu, whole = archive_whole(work / "archive-whole", files, work / "agents")
        live_cpu, live = archive_live(work / "archive-live", files, work / "agents", steps, work / "grown")
        backfill_cpu = anyio.run(backfill, work / "palace", work / "agents", files)
    result = {"files": len(files), "bytes": raw_bytes, "appends_per_file": steps,
              "ratio_whole": round(raw_bytes / whole["compressed_bytes"], 2),
              "ratio_live": round(raw_bytes / live["compressed_bytes"], 2),
              "chunks_live": live["chunks"], "archive_cpu_whole_s": round(whole_cpu, 3),
              "archive_cpu_live_s": round(live_cpu, 3), "backfill_cpu_s": round(backfill_cpu, 2),
              "cpu_share_whole_pct": round(100 * whole_cpu / backfill_cpu, 2),
              "cpu_share_live_pct": round(100 * live_cpu / backfill_cpu, 2)}
    report("archive", [
        ("transcripts (files / MB)", f"{len(files)} / {raw_bytes / 1e6:.2f}"),
        ("ratio, archived whole", result["ratio_whole"]),
        (f"ratio, archived live ({steps} appends a file)", result["ratio_live"]),
        ("archive CPU whole / live (s)", f"{whole_cpu:.3f} / {live_cpu:.3f}"),
        ("backfill CPU, read + embed (s)", result["backfill_cpu_s"]),
        ("archive CPU share whole / live (% of backfill)",
         f"{result['cpu_share_whole_pct']} / {result['cpu_share_live_pct']}"),
    ], result, args.json)


if __name__ == "__main__":
    main()
