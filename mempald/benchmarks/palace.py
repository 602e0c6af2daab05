"""A palace for offline benchmarks: the daemon's own components, built by its composition root over an
in-process embedded store in a folder; no loops run. Used by ``mempald bench longmemeval`` and the scripts in
``bench/`` (LoCoMo, the keyword tokenizers), so each measures exactly what the daemon would do."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from mempald.config import parse_settings
from mempald.embed.embedder import Embedder
from mempald.runtime.root import Backends, Daemon
from mempald.search import ranking
from mempald.state.db import State
from mempald.store.edge import EdgeStore

# Benchmark text is not a user's: no redaction, no general-memory extraction; the store is one machine's.
SETTINGS = {"ingest": {"redact_secrets": False, "extract_general": False, "lock_timeout_s": 60},
            "store": {"machine": "bench"},
            "sources": {"claude_projects": "", "codex_sessions": ""}}


class BenchPalace(NamedTuple):
    daemon: Daemon
    embedder: Embedder
    store: EdgeStore
    state: State

    def close(self) -> None:
        self.store.close()
        self.state.close()


def open_bench_palace(work: Path, *, threads: int = 0, models_dir: Path | None = None) -> BenchPalace:
    embedder = Embedder(models_dir=models_dir or work / "models", threads=threads)
    store = EdgeStore(work / "store", embedder.dim, ranker=ranking.rank)
    state = State(work / "state.sqlite3")
    daemon = Daemon(parse_settings(SETTINGS, env={}), Backends(embedder, store, None, state))
    return BenchPalace(daemon, embedder, store, state)
