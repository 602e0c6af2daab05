"""State.source_figures: status's per-source figures in one SQL aggregate give what the cursors say, one by one."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

from mempald.normalize.model import CursorContext
from mempald.state.db import Cursor, SourceFigures, State


def _by_hand(state: State) -> dict[str, SourceFigures]:
    out: dict[str, SourceFigures] = {}
    for c in state.all_cursors().values():
        f = out.get(c.source, SourceFigures())
        out[c.source] = SourceFigures(f.files + 1, f.exchanges + c.exchanges,
                                      f.backlog_bytes + max(0, c.size - (c.context.read_end or c.offset)))
    return out


def test_the_aggregate_equals_the_cursors_read_one_by_one(tmp_path: Path) -> None:
    state = State(tmp_path / "state.sqlite3")
    assert state.source_figures() == {}
    rnd = random.Random(5)
    for i in range(300):
        offset = rnd.randrange(0, 5000)
        read_end = rnd.choice([0, offset, offset + rnd.randrange(0, 3000)])
        state.put_cursor(Cursor(f"/w/{i}.jsonl", rnd.choice(["claude_code", "codex", "chats"]), i,
                                rnd.randrange(0, 9000), 1.0, offset, "h", CursorContext(read_end=read_end),
                                rnd.randrange(0, 40)))
    # contexts written by older versions: read_end as a string, and one that is not JSON at all
    with sqlite3.connect(tmp_path / "state.sqlite3") as db:
        db.execute("""UPDATE cursors SET context = '{"read_end": "7000"}' WHERE path = '/w/1.jsonl'""")
        db.execute("UPDATE cursors SET context = '{not json' WHERE path = '/w/2.jsonl'")
    state = State(tmp_path / "state.sqlite3")
    figures = state.source_figures()
    assert figures == _by_hand(state)
    assert sum(f.files for f in figures.values()) == 300
