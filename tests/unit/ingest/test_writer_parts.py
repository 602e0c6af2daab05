"""A long write goes in parts, two at a time (``mempald.ingest.writer.PART_EXCHANGES``): the same drawers, in the
same order, as one write would make; a part that fails fails the write with the store's own error."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mempald.embed.embedder import Embedder
from mempald.embed.sparse import Bm25Encoder
from mempald.ingest import writer as writer_mod
from mempald.ingest.drawers import SourceInfo
from mempald.ingest.queues import BACKFILL, DenseQueue
from mempald.ingest.writer import DrawerWriter
from mempald.normalize.claude_code import parse_lines
from mempald.normalize.model import Exchange
from mempald.state.db import State
from mempald.state.gateway import StateGateway
from mempald.store.base import Filters, StoreError
from mempald.store.edge import EdgeStore
from mempald.store.gateway import StoreGateway
from tests.conftest import lines_in
from tests.integration.test_skeleton import assistant_line, user_line

pytestmark = pytest.mark.anyio

INFO = SourceInfo(kind="claude_code", path="/home/dev/.claude/projects/o/s-parts.jsonl", source_key="claude_code",
                  machine="laptop", user="dev")


def _exchanges(n: int) -> list[Exchange]:
    rows = []
    for i in range(n):
        ts = f"2026-11-01T{10 + i // 60:02d}:{i % 60:02d}:00Z"
        rows += [user_line("s-parts", "/home/dev/orbit", f"question {i} about the orbit cache", f"u{i}", ts),
                 assistant_line("s-parts", "/home/dev/orbit", f"answer {i}: evict entry {i} first", f"a{i}", f"u{i}",
                                ts)]
    return parse_lines(lines_in("\n".join(rows).encode()))


def _writer(tmp_path: Path, name: str) -> tuple[DrawerWriter, EdgeStore]:
    embedder = Embedder(models_dir=tmp_path / "models")
    store = EdgeStore(tmp_path / name, embedder.dim)
    gateway = StoreGateway(store)
    writer = DrawerWriter(state=StateGateway(State(tmp_path / f"{name}.sqlite3")), store=gateway, embedder=embedder,
                          bm25=Bm25Encoder(), dense=DenseQueue(), max_tokens=250)
    return writer, store


async def test_a_long_write_in_parts_stores_what_one_write_stores(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    exchanges = _exchanges(70)
    whole, whole_store = _writer(tmp_path, "whole")
    one = await whole.write(exchanges, INFO, BACKFILL)  # 70 <= PART_EXCHANGES: one part
    monkeypatch.setattr(writer_mod, "PART_EXCHANGES", 16)  # 5 parts, two at a time
    parts, parts_store = _writer(tmp_path, "parts")
    split = await parts.write(exchanges, INFO, BACKFILL)
    assert split.ids == one.ids and len(split.ids) == 70  # every drawer, in the exchanges' order
    assert split.written == one.written == 70 and split.capped == one.capped == 0
    assert parts_store.count(Filters()) == whole_store.count(Filters()) == 70
    assert len(parts.dense) == 70  # every drawer queued for its dense vector
    again = await parts.write(exchanges, INFO, BACKFILL)
    assert again.ids == one.ids and again.written == 0  # read again: nothing rewritten


async def test_a_part_that_fails_fails_the_write_with_the_stores_error(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(writer_mod, "PART_EXCHANGES", 16)
    writer, store = _writer(tmp_path, "failing")
    real = writer._changed
    calls = 0

    async def changed_fails_once(drawers: Any, *rest: Any) -> Any:  # the store stops answering during the third part
        nonlocal calls
        calls += 1
        if calls == 3:
            raise StoreError("the store process died")
        return await real(drawers, *rest)

    monkeypatch.setattr(writer, "_changed", changed_fails_once)
    with pytest.raises(StoreError, match="died"):  # not a group of errors: the file is retried as for one write
        await writer.write(_exchanges(64), INFO, BACKFILL)
    done = await writer.write(_exchanges(64), INFO, BACKFILL)  # read again once the store answers: all of it
    assert len(done.ids) == 64 and done.written >= 16 and store.count(Filters()) == 64
