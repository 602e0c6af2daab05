"""The backfill's drawer building in worker processes (mempald.ingest.build_pool), for real: a spawned worker
builds exactly what the daemon's thread builds from real transcripts, a killed worker costs nothing, idle
workers go away, and a real daemon backfills the same palace with workers as without."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from mempald.embed.embedder import Embedder
from mempald.embed.sparse import Bm25Encoder
from mempald.ingest import build_pool
from mempald.ingest.build_pool import BuildPool, BuildSpec, build
from mempald.ingest.drawers import Drawer, SourceInfo, index_text
from mempald.normalize import claude_code, codex
from mempald.normalize.model import Exchange
from tests.conftest import Daemon, copy_tree, lines_of

pytestmark = pytest.mark.anyio

CC = "claude_code/real2/projects"


@pytest.fixture(scope="module")
def embedder(tmp_path_factory: pytest.TempPathFactory) -> Embedder:
    return Embedder(models_dir=tmp_path_factory.mktemp("models"), threads=1)


def _exchanges(formats: Path) -> list[Exchange]:
    out: list[Exchange] = []
    for path in sorted((formats / CC).rglob("*.jsonl")):
        out += claude_code.parse_lines(lines_of(path))
    for path in sorted((formats / "codex" / "real2").glob("*.jsonl")):
        out += codex.parse_lines(lines_of(path))
    return out


def _info() -> SourceInfo:
    return SourceInfo(kind="claude_code", path="/x/session.jsonl", source_key="claude_code", machine="m", user="u")


def _comparable(drawers: list[Drawer]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(d.id, d.text, {k: v for k, v in d.payload.items() if k != "filed_at"}) for d in drawers]


def _pids(pool: BuildPool) -> list[int]:
    executor: Any = pool._pool
    return [p.pid for p in (executor._processes or {}).values()] if executor is not None else []


async def test_a_worker_builds_what_the_daemon_builds_from_real_transcripts(formats_dir: Path,
                                                                             embedder: Embedder) -> None:
    exchanges = _exchanges(formats_dir)
    assert len(exchanges) > 40
    assert embedder.counter_file is not None
    bm25 = Bm25Encoder()
    spec = BuildSpec(str(embedder.counter_file), bm25.tokenizer, 250)
    previous = {exchanges[0].session_id: "the drawer before, from an earlier read"}
    here = build(exchanges, _info(), embedder.count_tokens, 250, previous, None)
    pool = BuildPool(spec, 1)
    try:
        there = await pool.build(exchanges, _info(), previous)
    finally:
        pool.close()
    assert there is not None and pool.builds == 1
    assert _comparable(there.drawers) == _comparable(here.drawers)
    assert there.redactions == here.redactions
    assert len(there.drawers) > len(exchanges)  # long exchanges were chunked the same way
    for d in there.drawers:  # each keyword vector is the one the daemon would encode, for the same text
        text, vec = there.sparse[d.id]
        assert text == index_text(d.payload)
        assert vec == bm25.document(text)


async def test_a_killed_worker_costs_nothing_and_the_next_build_starts_another(formats_dir: Path,
                                                                               embedder: Embedder) -> None:
    exchanges = _exchanges(formats_dir)[:12]
    spec = BuildSpec(str(embedder.counter_file), Bm25Encoder().tokenizer, 250)
    pool = BuildPool(spec, 1)
    try:
        assert await pool.build(exchanges, _info(), {}) is not None
        (pid,) = _pids(pool)
        os.kill(pid, signal.SIGKILL)
        # the pool notices the dead worker: this build is handed back (None: the writer builds it in a thread)
        assert await pool.build(exchanges, _info(), {}) is None
        assert pool.fallbacks == 1 and not pool.started
        again = await pool.build(exchanges, _info(), {})
        assert again is not None and _pids(pool) and _pids(pool) != [pid]
    finally:
        pool.close()


async def test_idle_workers_are_stopped(formats_dir: Path, embedder: Embedder,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    import anyio
    import anyio.to_thread

    monkeypatch.setattr(build_pool, "IDLE_S", 0.4)
    spec = BuildSpec(str(embedder.counter_file), Bm25Encoder().tokenizer, 250)
    pool = BuildPool(spec, 1)
    try:
        assert await pool.build(_exchanges(formats_dir)[:6], _info(), {}) is not None
        (pid,) = _pids(pool)

        def gone() -> bool:  # the pool let its workers go, and the worker process has exited
            deadline = time.monotonic() + 30
            while pool.started and time.monotonic() < deadline:
                time.sleep(0.05)
            while time.monotonic() < deadline:
                try:
                    os.kill(pid, 0)
                except ProcessLookupError:
                    return True
                time.sleep(0.05)
            return False

        async with anyio.create_task_group() as tg:
            tg.start_soon(pool.run)
            assert await anyio.to_thread.run_sync(gone)
            tg.cancel_scope.cancel()
    finally:
        pool.close()


def _palace(d: Daemon) -> list[tuple[str, str, str, str, str]]:
    out: list[tuple[str, str, str, str, str]] = []
    offset = None
    while True:
        page = d.call("drawers", {"limit": 500, "offset": offset,
                                  "fields": ["text", "context", "room", "memory_type", "wing"]})
        out += [(r["drawer_id"], r["text"], str(r.get("context") or ""), r["room"], r["memory_type"])
                for r in page["drawers"]]
        offset = page["next"]
        if offset is None:
            return sorted(out)


@pytest.mark.timeout(300)
def test_a_daemon_backfills_the_same_palace_with_workers_as_without(home: Path, tmp_path: Path,
                                                                    formats_dir: Path) -> None:
    copy_tree(formats_dir / CC, home / ".claude" / "projects")
    palaces, hits = [], []
    for workers in ("1", "0"):
        d = Daemon(dict(os.environ), tmp_path / f"mempald-{workers}.log")
        d.start(extra_env={"MEMPAL_INGEST_BUILD_WORKERS": workers,
                           "MEMPAL_DATA_DIR": str(tmp_path / f"data-{workers}")})
        try:
            d.idle(timeout=240)
            palaces.append(_palace(d))
            hits.append([h["drawer_id"] for h in d.call("search", {"query": "plan mode", "limit": 10})["hits"]])
            logs = d.logs()
        finally:
            d.stop()
        assert ('"build_workers_started"' in logs) == (workers == "1")
        assert '"build_worker_failed"' not in logs
    assert len(palaces[0]) > 100
    assert palaces[0] == palaces[1]
    assert hits[0] == hits[1] and hits[0]


def test_workers_do_not_outlive_a_killed_daemon(tmp_path: Path, embedder: Embedder) -> None:
    """A daemon killed with SIGKILL (no close): its worker notices and exits."""
    import subprocess
    import sys

    script = f"""
import anyio, sys
from mempald.ingest.build_pool import BuildPool, BuildSpec
from mempald.ingest.drawers import SourceInfo
from mempald.normalize.model import Exchange

async def main():
    pool = BuildPool(BuildSpec({str(embedder.counter_file)!r}, "mixed", 250), 1)
    exchanges = [Exchange(source_kind="claude_code", session_id="s", key=f"k{{i}}", position=i,
                          user="why did the deploy fail",
                          assistant="the staging quota ran out") for i in range(8)]
    info = SourceInfo(kind="claude_code", path="/x", source_key="k", machine="m", user="u")
    assert await pool.build(exchanges, info, {{}}) is not None
    print("PIDS", *[p.pid for p in pool._pool._processes.values()], flush=True)
    await anyio.sleep(600)

anyio.run(main)
"""
    with subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True) as proc:
        try:
            assert proc.stdout is not None
            line = ""
            while not line.startswith("PIDS"):  # the pool's own log lines come first
                line = proc.stdout.readline()
                assert line, "the script ended early"
            worker = int(line.split()[1])
            os.kill(worker, 0)  # alive while its daemon is
        finally:
            proc.kill()
            proc.wait()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            os.kill(worker, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    raise AssertionError(f"worker {worker} outlived its daemon")
